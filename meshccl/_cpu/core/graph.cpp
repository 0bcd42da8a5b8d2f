// meshccl._cpu._core's weak components and incremental connectivity
// (graph.hpp), bound with nanobind: meshccl/_cpu/graph.py and
// meshccl/_cpu/incremental.py pass validated int64 graphs and an int32 or
// int64 forest P; these functions check types and sizes, pick P's index
// type and release the GIL.  The values themselves (indices in range,
// indptr increasing) are the Python side's validation.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "graph.hpp"

namespace nb = nanobind;
namespace g = meshccl::graph;
using i64 = std::int64_t;

namespace {

using meshccl::bindings::Array;
using meshccl::bindings::Input;

// Is a a flat array of T?
template <class T, class A>
bool is_flat(const A& a) {
    return meshccl::bindings::is<T>(a) && a.ndim() == 1;
}

template <class A>
const i64* int64s(const A& a, const char* who, const char* name) {
    if (!is_flat<i64>(a))
        throw std::invalid_argument(std::string(who) + ": " + name + " must be a 1-D int64 array");
    return static_cast<const i64*>(a.data());
}

// The graph of (x, y): a CSR (indptr, indices) when csr, else an edge list.
g::Graph as_graph(bool csr, const Input& x, const Input& y, i64 n, const char* who) {
    g::Graph gr;
    gr.n = n;
    if (n < 0) throw std::invalid_argument(std::string(who) + ": n must be >= 0");
    if (csr) {
        gr.indptr = int64s(x, who, "indptr");
        gr.a = int64s(y, who, "indices");
        if (i64(x.size()) != n + 1)
            throw std::invalid_argument(std::string(who) + ": indptr must have n + 1 entries");
        gr.m = i64(y.size());
    } else {
        gr.a = int64s(x, who, "src");
        gr.b = int64s(y, who, "dst");
        if (x.size() != y.size())
            throw std::invalid_argument(std::string(who) + ": src and dst must be of one length");
        gr.m = i64(x.size());
    }
    return gr;
}

// P's index type: f(pointer) with int32 or int64 P of n entries.
template <class F>
auto with_forest(Array& P, i64 n, const char* who, F&& f) {
    if (P.ndim() != 1 || i64(P.size()) != n)
        throw std::invalid_argument(std::string(who) + ": P must be 1-D with n entries");
    if (is_flat<std::int32_t>(P)) {
        if (n >= (i64(1) << 31))
            throw std::invalid_argument(std::string(who) + ": int32 P needs n < 2**31");
        return f(static_cast<std::int32_t*>(P.data()));
    }
    if (is_flat<i64>(P)) return f(static_cast<i64*>(P.data()));
    throw std::invalid_argument(std::string(who) + ": P must be int32 or int64");
}

// The weak components of one graph by `method` into P, numbered from 0.
// Returns (count, passes): passes are the iterative methods' rounds, sweeps,
// steps or searches (1 for the others); (-1, -1) when `cap` passes of an
// iterative method did not reach its fixed point.
nb::tuple components(const std::string& method, bool csr, const Input& x, const Input& y, i64 n,
                     Array P, int rule, int comp, i64 k, std::optional<Input> picks, i64 levels,
                     bool symmetric, i64 cap) {
    const char* who = "graph_components";
    const g::Graph gr = as_graph(csr, x, y, n, who);
    const i64* pk = nullptr;
    i64 npicks = 0;
    const bool sampler = method == "kout" || method == "hb" || method == "bfs-sample";
    if (sampler && n) {
        if (!picks) throw std::invalid_argument("graph_components: the samplers need picks");
        pk = int64s(*picks, who, "picks");
        npicks = i64(picks->size());
        if (npicks < 1) throw std::invalid_argument("graph_components: picks is empty");
        for (i64 i = 0; i < npicks; ++i)
            if (pk[i] < 0 || pk[i] >= n)
                throw std::invalid_argument("graph_components: picks must be vertices");
    }
    if (!(method == "union" || method == "rule" || sampler || method == "sv" ||
          method == "edge-lp" || method == "vertex-lp" || method == "bfs-cc"))
        throw std::invalid_argument("graph_components: unknown method '" + method + "'");
    if (method == "rule" && (rule < 0 || rule > 4 || comp < 0 || comp > 4))
        throw std::invalid_argument("graph_components: rule and comp must be in 0..4");
    return with_forest(P, n, who, [&](auto* p) {
        i64 passes = 1;
        {
            nb::gil_scoped_release release;
            if (method == "union") {
                if (csr) g::union_csr(gr.indptr, gr.a, p, n, (i64*)nullptr, (i64*)nullptr);
                else g::union_edges(gr.a, gr.b, gr.m, p, n, (i64*)nullptr, (i64*)nullptr);
            } else if (method == "rule") {
                g::union_rule(gr, p, rule, comp);
            } else if (sampler) {
                if (n) {
                    const i64 *indptr = gr.indptr, *indices = gr.a;
                    std::vector<i64> ip, ix;
                    if (!csr) {
                        ip.resize(std::size_t(n + 1));
                        ix.resize(std::size_t(gr.m));
                        g::edges_to_csr(gr.a, gr.b, gr.m, n, ip.data(), ix.data());
                        indptr = ip.data();
                        indices = ix.data();
                    }
                    if (method == "kout") g::kout(indptr, indices, p, n, k, pk, npicks, symmetric);
                    else if (method == "hb") g::hb(indptr, indices, p, n, k, pk, npicks, symmetric);
                    else g::bfs_sample(indptr, indices, p, n, pk, npicks, levels, symmetric);
                }
            } else if (method == "sv") {
                passes = g::shiloach_vishkin(gr, p, cap);
            } else if (method == "edge-lp") {
                passes = g::edge_propagation(gr, p, cap);
            } else {
                std::vector<i64> ip, ix;
                g::undirected_csr(gr, ip, ix);
                if (method == "vertex-lp")
                    passes = g::vertex_propagation(ip.data(), ix.data(), p, n, cap);
                else
                    passes = g::bfs_components(ip.data(), ix.data(), p, n);
            }
        }
        if (passes < 0) return nb::make_tuple(i64(-1), i64(-1));
        return nb::make_tuple(g::number(p, n), passes);
    });
}

// The serial union-find recording the edges that merged two sets into
// fsrc / fdst (int64, at least n - 1 entries); returns how many.
i64 forest(bool csr, const Input& x, const Input& y, i64 n, Array P, Array fsrc, Array fdst) {
    const char* who = "graph_forest";
    const g::Graph gr = as_graph(csr, x, y, n, who);
    if (!is_flat<i64>(fsrc) || !is_flat<i64>(fdst) || i64(fsrc.size()) < n - 1 ||
        i64(fdst.size()) < n - 1)
        throw std::invalid_argument("graph_forest: fsrc and fdst must be int64 of n - 1 entries");
    i64* fs = static_cast<i64*>(fsrc.data());
    i64* fd = static_cast<i64*>(fdst.data());
    return with_forest(P, n, who, [&](auto* p) {
        nb::gil_scoped_release release;
        return csr ? g::union_csr(gr.indptr, gr.a, p, n, fs, fd)
                   : g::union_edges(gr.a, gr.b, gr.m, p, n, fs, fd);
    });
}

// The threaded union-find (graph.hpp: parallel) into P, numbered; returns
// (count, scheme: 1 'local' or 2 'cas', cross edges, stopped ranges).
nb::tuple parallel(bool csr, const Input& x, const Input& y, i64 n, Array P, const Input& picks,
                   int threads, i64 chunks_per_thread, double local_cross, i64 serial_cross,
                   i64 buffer_div, i64 buffer_min) {
    const char* who = "graph_parallel";
    const g::Graph gr = as_graph(csr, x, y, n, who);
    const i64* pk = int64s(picks, who, "picks");
    const i64 npicks = i64(picks.size()), range = csr ? n : gr.m;
    if (n < 2 || threads < 2 || chunks_per_thread < 1 || buffer_div < 1 || buffer_min < 0)
        throw std::invalid_argument("graph_parallel: needs n >= 2, threads >= 2, "
                                    "chunks_per_thread >= 1, buffer_div >= 1, buffer_min >= 0");
    if (range && npicks < 1) throw std::invalid_argument("graph_parallel: picks is empty");
    for (i64 i = 0; i < npicks; ++i)
        if (pk[i] < 0 || pk[i] >= range)
            throw std::invalid_argument("graph_parallel: picks out of range");
    g::Settings s;
    s.threads = threads;
    s.chunks_per_thread = chunks_per_thread;
    s.local_cross = local_cross;
    s.serial_cross = serial_cross;
    s.buffer_div = buffer_div;
    s.buffer_min = buffer_min;
    g::Stats st;
    const i64 count = with_forest(P, n, who, [&](auto* p) {
        nb::gil_scoped_release release;
        return g::parallel(gr, p, pk, npicks, s, st);
    });
    return nb::make_tuple(count, st.scheme, st.cross, st.stopped);
}

// One batch of incremental connectivity (graph.hpp: batch) on the int64
// forest P of capacity >= n; returns the inserts that joined two sets.
i64 incremental_batch(Array P, i64 n, std::optional<Input> kinds, int only, const Input& src,
                      const Input& dst, int rule, int comp, int qcomp, std::optional<Array> FS,
                      std::optional<Array> FD, std::optional<Array> out) {
    const char* who = "incremental_batch";
    if (!is_flat<i64>(P) || i64(P.size()) < n || n < 0)
        throw std::invalid_argument("incremental_batch: P must be int64 with n entries or more");
    const i64* s = int64s(src, who, "src");
    const i64* d = int64s(dst, who, "dst");
    const i64 m = i64(src.size());
    if (i64(dst.size()) != m) throw std::invalid_argument("incremental_batch: src and dst differ");
    const std::uint8_t* kd = nullptr;
    if (kinds) {
        if (!is_flat<std::uint8_t>(*kinds) || i64(kinds->size()) != m)
            throw std::invalid_argument(
                "incremental_batch: kinds must be uint8, one per operation");
        kd = static_cast<const std::uint8_t*>(kinds->data());
    }
    if (rule < 0 || rule > 4 || comp < 0 || comp > 4 || qcomp < 0 || qcomp > 4)
        throw std::invalid_argument("incremental_batch: rule, comp, qcomp must be in 0..4");
    i64 *fs = nullptr, *fd = nullptr;
    if (FS || FD) {
        if (!FS || !FD || !is_flat<i64>(*FS) || !is_flat<i64>(*FD) || i64(FS->size()) < n ||
            i64(FD->size()) < n)
            throw std::invalid_argument("incremental_batch: FS and FD must be int64 of n entries");
        fs = static_cast<i64*>(FS->data());
        fd = static_cast<i64*>(FD->data());
    }
    bool* o = nullptr;
    if (out) {
        if (!is_flat<bool>(*out) || i64(out->size()) != m)
            throw std::invalid_argument("incremental_batch: out must be bool, one per operation");
        o = static_cast<bool*>(out->data());
    } else if (kd || only != 0) {
        for (i64 e = 0; e < m; ++e)
            if (kd ? kd[e] != 0 : true)
                throw std::invalid_argument("incremental_batch: queries need out");
    }
    nb::gil_scoped_release release;
    return g::batch(static_cast<i64*>(P.data()), n, kd, only, s, d, m, rule, comp, qcomp, fs, fd,
                    o);
}

// Number a forest whose parents are smaller (JTB's: any members, when jtb)
// in place from 0; returns the count.
i64 number_forest(Array P, bool jtb) {
    return with_forest(P, i64(P.size()), "number_forest", [&](auto* p) {
        nb::gil_scoped_release release;
        if (jtb) g::jtb_smallest(p, i64(P.size()));
        return g::number(p, i64(P.size()));
    });
}

}  // namespace

void register_graph(nb::module_& m) {
    m.def("graph_components", &components, nb::arg("method"), nb::arg("csr"), nb::arg("x"),
          nb::arg("y"), nb::arg("n"), nb::arg("P"), nb::arg("rule") = 0, nb::arg("comp") = 1,
          nb::arg("k") = 0, nb::arg("picks").none() = nb::none(), nb::arg("levels") = 0,
          nb::arg("symmetric") = false, nb::arg("cap") = -1,
          "Weak components of a CSR (csr) or edge list by 'union', 'rule', 'kout', 'hb', "
          "'bfs-sample', 'sv', 'edge-lp', 'vertex-lp' or 'bfs-cc' into P, numbered from 0; "
          "(count, passes), (-1, -1) when cap passes did not converge.");
    m.def("graph_forest", &forest, nb::arg("csr"), nb::arg("x"), nb::arg("y"), nb::arg("n"),
          nb::arg("P"), nb::arg("fsrc"), nb::arg("fdst"),
          "The serial union-find recording the edges that merged two sets; how many.");
    m.def("graph_parallel", &parallel, nb::arg("csr"), nb::arg("x"), nb::arg("y"), nb::arg("n"),
          nb::arg("P"), nb::arg("picks"), nb::arg("threads"), nb::arg("chunks_per_thread"),
          nb::arg("local_cross"), nb::arg("serial_cross"), nb::arg("buffer_div"),
          nb::arg("buffer_min"),
          "The threaded union-find into P, numbered; (count, scheme, cross, stopped).");
    m.def("incremental_batch", &incremental_batch, nb::arg("P"), nb::arg("n"),
          nb::arg("kinds").none(), nb::arg("only"), nb::arg("src"), nb::arg("dst"),
          nb::arg("rule"), nb::arg("comp"), nb::arg("qcomp"), nb::arg("FS").none(),
          nb::arg("FD").none(), nb::arg("out").none(),
          "One batch of incremental connectivity in order; the inserts that joined two sets.");
    m.def("number_forest", &number_forest, nb::arg("P"), nb::arg("jtb"),
          "Number a forest in place from 0 (JTB's roots first moved to the smallest member).");
}
