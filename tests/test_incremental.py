"""meshccl.graph.IncrementalConnectivity on each backend (``backend``
fixture of conftest.py: the GPU cases are skipped where CuPy sees no GPU):
every sequence of batches gives the components of a from-scratch SciPy run
on the edges so far, queries agree with them, mixed batches keep their
documented guarantee, the forest is a spanning forest, growth and errors."""

import doctest
import re

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import connected_components as scipy_cc

from meshccl import _tuning
from meshccl import graph_generators as gen
from meshccl.graph import (COMPRESSION, INCREMENTAL_METHODS, Edges, IncrementalConnectivity,
                           connected_components)
from meshccl.graph import _incremental

from conftest import HAVE_GPU, examples, to_host

GPU = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")]
#: every (method, compression) the structure takes
RULES = [(m, c) for m in INCREMENTAL_METHODS if m != "async" for c in COMPRESSION[m]]


def on(backend, a):
    if backend == "cpu":
        return np.asarray(a)
    import cupy

    return cupy.asarray(a)


def reference(n, src, dst):
    """SciPy's (count, labels) of the graph of the edges (src, dst)."""
    if n == 0:
        return 0, np.empty(0, np.int32)
    g = sp.coo_matrix((np.ones(len(src)), (np.asarray(src), np.asarray(dst))), shape=(n, n))
    return scipy_cc(g, directed=False)


def check_forest(cc, src, dst):
    """forest_edges() is a spanning forest of the inserted edges: inserted
    edges (as stored), n - components of them, the graph's components."""
    n = cc.n_vertices
    f = cc.forest_edges()
    fs, fd = to_host(f.src), to_host(f.dst)
    assert f.n_vertices == n and fs.dtype == np.int64
    count, labels = reference(n, src, dst)
    assert fs.size == n - count
    inserted = set(zip(np.asarray(src).tolist(), np.asarray(dst).tolist()))
    assert set(zip(fs.tolist(), fd.tolist())) <= inserted
    fcount, flabels = reference(n, fs, fd)  # n - count edges with count components: no cycle
    assert fcount == count and np.array_equal(flabels, labels)


def check_state(cc, src, dst):
    count, labels = reference(cc.n_vertices, src, dst)
    assert cc.n_components == count
    got = to_host(cc.labels())
    assert got.dtype == np.int32 and np.array_equal(got, labels)
    if cc.keeps_forest:  # (not with Rem's splicing: see the next test)
        check_forest(cc, src, dst)


class Sequential:
    """A plain union-find run one operation at a time: the CPU's semantics."""

    def __init__(self, n):
        self.p = list(range(n))

    def find(self, x):
        while self.p[x] != x:
            x = self.p[x]
        return x

    def run(self, kinds, src, dst):
        out = []
        for k, a, b in zip(kinds, src, dst):
            self.p.extend(range(len(self.p), max(a, b) + 1))
            ra, rb = self.find(a), self.find(b)
            if k:
                out.append(ra == rb)
            else:
                out.append(False)
                self.p[max(ra, rb)] = min(ra, rb)
        return out


# ------------------------------------------------------------------ batches


@pytest.mark.parametrize("method,compression", RULES)
def test_batches_give_scipy_components(backend, method, compression):
    rng = np.random.default_rng(7)
    n = 300
    cc = IncrementalConnectivity(n, method=method, compression=compression, device=backend)
    src, dst = np.empty(0, np.int64), np.empty(0, np.int64)
    for size in (0, 1, 40, 150, 400, 3):
        s, d = rng.integers(0, n, size), rng.integers(0, n, size)
        cc.insert(on(backend, s), on(backend, d))
        src, dst = np.concatenate([src, s]), np.concatenate([dst, d])
        check_state(cc, src, dst)
        u, v = rng.integers(0, n, 200), rng.integers(0, n, 200)
        ans = cc.connected(on(backend, u), on(backend, v))
        assert ans.dtype == bool and type(ans) is type(on(backend, u))
        labels = reference(n, src, dst)[1]
        assert np.array_equal(to_host(ans), labels[u] == labels[v])


@pytest.mark.parametrize("method", ["unionfind", "rem-cas", "jtb"])
def test_generated_graphs_in_batches(backend, method):
    """R-MAT (duplicates, self-loops), a grid and Barabási–Albert, fed in
    batches of growing size, end in SciPy's components."""
    for g in (gen.rmat(10, edge_factor=4, seed=3), gen.grid((30, 40), keep=0.45, seed=1),
              gen.barabasi_albert_bb(800, 3, seed=2)):
        cc = IncrementalConnectivity(g.n_vertices, method=method, device=backend)
        start = 0
        for size in (1, 10, 100, 1000, g.src.size):
            cc.insert(on(backend, g.src[start:start + size]), on(backend, g.dst[start:start + size]))
            start += size
        check_state(cc, g.src, g.dst)


def test_labels_and_reads_leave_the_structure(backend):
    """labels(), n_components and forest_edges() change nothing: JTB's roots
    stay random members, the forest stays unflattened, later batches agree."""
    rng = np.random.default_rng(3)
    for method in ("jtb", "unionfind"):
        cc = IncrementalConnectivity(100, method=method, device=backend)
        src, dst = rng.integers(0, 100, 60), rng.integers(0, 100, 60)
        cc.insert(on(backend, src[:30]), on(backend, dst[:30]))
        first = to_host(cc.labels())
        assert np.array_equal(to_host(cc.labels()), first)
        cc.forest_edges(), cc.n_components
        cc.insert(on(backend, src[30:]), on(backend, dst[30:]))
        check_state(cc, src, dst)


def test_mixed_batch_cpu_runs_in_order():
    """On the CPU each query of a mixed batch sees exactly the inserts
    before it in the batch."""
    rng = np.random.default_rng(11)
    cc = IncrementalConnectivity(50)
    ref = Sequential(50)
    for _ in range(5):
        kinds = rng.integers(0, 2, 80)
        src, dst = rng.integers(0, 60, 80), rng.integers(0, 60, 80)  # some beyond 50: growth
        got = cc.process((kinds, src, dst))
        assert got.tolist() == ref.run(kinds.tolist(), src.tolist(), dst.tolist())
    assert cc.n_vertices == len(ref.p)


def test_mixed_batch_bounds(backend):
    """Any backend: a query answers True if its ends were connected before
    the batch, False if they are apart after it (the guarantee of one
    order of the batch); inserts answer False; the state after the batch
    is every insert applied."""
    rng = np.random.default_rng(5)
    for method, compression in RULES:
        n = 120
        cc = IncrementalConnectivity(n, method=method, compression=compression, device=backend)
        src, dst = np.empty(0, np.int64), np.empty(0, np.int64)
        for _ in range(3):
            kinds = rng.random(300) < 0.5
            s, d = rng.integers(0, n, 300), rng.integers(0, n, 300)
            before = reference(n, src, dst)[1]
            got = to_host(cc.process((on(backend, kinds), on(backend, s), on(backend, d))))
            src, dst = np.concatenate([src, s[~kinds]]), np.concatenate([dst, d[~kinds]])
            after = reference(n, src, dst)[1]
            assert not got[~kinds].any()
            q = kinds
            assert got[q & (before[s] == before[d])].all(), method
            assert not got[q & (after[s] != after[d])].any(), method
            check_state(cc, src, dst)


batch_ops = st.lists(st.tuples(st.integers(0, 1), st.integers(0, 24), st.integers(0, 24)),
                     max_size=40)


@settings(max_examples=examples(100))
@given(st.integers(0, 12), st.lists(batch_ops, min_size=1, max_size=6),
       st.sampled_from(RULES))
def test_hypothesis_batch_sequences(n0, batches, rule):
    """Generated sequences of mixed batches (growth included) on the CPU:
    answers as in a one-at-a-time run, components as SciPy's."""
    cc = IncrementalConnectivity(n0, method=rule[0], compression=rule[1])
    ref = Sequential(n0)
    src, dst = [], []
    for ops in batches:
        kinds = np.array([o[0] for o in ops], np.int64)
        s = np.array([o[1] for o in ops], np.int64)
        d = np.array([o[2] for o in ops], np.int64)
        assert cc.process((kinds, s, d)).tolist() == ref.run(kinds.tolist(), s.tolist(), d.tolist())
        src += s[kinds == 0].tolist()
        dst += d[kinds == 0].tolist()
        assert cc.n_vertices == len(ref.p)
        check_state(cc, np.array(src, np.int64), np.array(dst, np.int64))


# ------------------------------------------------------------------ set-up


@pytest.mark.parametrize("form", ["csr", "csc", "coo", "lil", "dense", "tuple", "edges"])
def test_from_graph_every_input(backend, form):
    rng = np.random.default_rng(2)
    n = 60
    s, d = rng.integers(0, n, 50), rng.integers(0, n, 50)
    coo = sp.coo_matrix((np.ones(50), (s, d)), shape=(n, n))
    if form in ("csr", "csc", "coo", "lil"):
        g = coo.asformat(form)
    elif form == "dense":
        g = coo.toarray()
    elif form == "tuple":
        c = coo.tocsr()
        g = (c.indptr, c.indices)
    else:
        g = Edges(s, d, n)
    if backend == "gpu":
        import cupy

        if form == "lil":
            pytest.skip("CuPy has no LIL")
        if form in ("csr", "csc", "coo"):
            import cupyx.scipy.sparse as csp

            g = {"csr": csp.csr_matrix, "csc": csp.csc_matrix, "coo": csp.coo_matrix}[form](g)
        elif form == "dense":
            g = cupy.asarray(g)
        elif form == "tuple":
            g = tuple(cupy.asarray(a) for a in g)
        else:
            g = Edges(cupy.asarray(s), cupy.asarray(d), n)
    cc = IncrementalConnectivity.from_graph(g)
    assert cc.device == backend and cc.n_vertices == n
    c = coo.tocoo()
    check_state(cc, c.row.astype(np.int64), c.col.astype(np.int64))  # stored (row, col) edges
    more_s, more_d = rng.integers(0, n, 20), rng.integers(0, n, 20)
    cc.insert(on(backend, more_s), on(backend, more_d))
    check_state(cc, np.concatenate([c.row, more_s]), np.concatenate([c.col, more_d]))


def test_device_follows_the_first_input():
    cc = IncrementalConnectivity(4)
    assert cc.device is None
    cc.insert(np.array([0]), np.array([1]))
    assert cc.device == "cpu"
    lazy = IncrementalConnectivity(3)
    assert lazy.n_components == 3 and lazy.device == "cpu"  # a read commits to the CPU
    assert isinstance(IncrementalConnectivity(2, device="cpu").labels(), np.ndarray)


def test_growth(backend):
    cc = IncrementalConnectivity(0, device=backend)
    assert cc.n_components == 0 and to_host(cc.labels()).size == 0
    assert to_host(cc.forest_edges().src).size == 0
    assert cc.add_vertices(3) == 0 and cc.n_vertices == 3 and cc.n_components == 3
    cc.insert(on(backend, [0, 7]), on(backend, [2, 5]))  # grows to 8
    assert cc.n_vertices == 8
    check_state(cc, [0, 7], [2, 5])
    ans = to_host(cc.connected(on(backend, [9, 9, 2]), on(backend, [9, 0, 0])))  # grows to 10
    assert ans.tolist() == [True, False, True] and cc.n_vertices == 10
    assert cc.add_vertices(0) == 10
    # growth past the arrays' capacity several times, with the forest kept
    src, dst = [0, 7], [2, 5]
    for k in range(4):
        top = 20 * 4 ** k
        s, d = [top - 1, top - 2, 3], [3, top - 1, 0]
        cc.insert(on(backend, s), on(backend, d))
        src += s
        dst += d
        assert cc.n_vertices == top
        check_state(cc, src, dst)
    first = cc.add_vertices(1000)
    assert first == top and cc.n_components == reference(top, src, dst)[0] + 1000


def test_add_vertices_before_any_input():
    cc = IncrementalConnectivity(2)
    assert cc.add_vertices(3) == 2 and cc.n_vertices == 5
    cc.insert(np.array([4]), np.array([0]))
    assert cc.labels().tolist() == [0, 1, 2, 3, 0]


def test_check_false_skips_out_of_range_on_cpu():
    cc = IncrementalConnectivity(4, grow=False)
    cc.insert(np.array([0, 9, -1]), np.array([1, 2, 3]), check=False)
    assert cc.n_vertices == 4 and cc.labels().tolist() == [0, 0, 1, 2]
    assert cc.connected(np.array([0, 9]), np.array([1, 9]), check=False).tolist() == [True, False]


def test_dtypes(backend):
    """Any integer dtype, mixed between src and dst; bool or integer kinds."""
    for t1, t2 in ((np.int8, np.uint64), (np.uint16, np.int32), (np.int64, np.uint8)):
        cc = IncrementalConnectivity(10, device=backend)
        cc.insert(on(backend, np.array([1, 2], t1)), on(backend, np.array([2, 3], t2)))
        assert to_host(cc.labels()).tolist() == [0, 1, 1, 1, 2, 3, 4, 5, 6, 7]
    cc = IncrementalConnectivity(4, device=backend)
    got = to_host(cc.process((on(backend, np.array([True, False, True])),
                              on(backend, np.array([0, 0, 0])), on(backend, np.array([1, 1, 1])))))
    ops = on(backend, np.array([[0, 1], [2, 2], [3, 3]], np.uint16))  # a (3, m) array
    got2 = to_host(cc.process(ops))
    assert got.dtype == bool and got.shape == (3,) and not got[1] and not got2[0]
    if backend == "cpu":  # in batch order (on the GPU the order is the threads')
        assert got.tolist() == [False, False, True] and got2.tolist() == [False, True]
    assert to_host(cc.labels()).tolist() == [0, 0, 1, 1]
    rows = on(backend, np.array([[0, 1, 2], [1, 0, 3], [1, 1, 1], [0, 2, 2]]))  # (kind, src, dst)
    got3 = to_host(cc.process(rows.T))  # strided rows
    assert not got3[0] and got3[2] and not got3[3]
    assert to_host(cc.labels()).tolist() == [0, 0, 0, 0]
    if backend == "cpu":
        assert got3.tolist() == [False, True, True, False]


# ------------------------------------------------------------------ errors


def test_errors():
    cc = IncrementalConnectivity(5)
    with pytest.raises(ValueError, match=re.escape("src must hold vertex numbers >= 0, got -2 at position 1")):
        cc.insert(np.array([0, -2]), np.array([1, 1]))
    with pytest.raises(ValueError, match=re.escape("v must hold vertex numbers >= 0, got -1 at position 0")):
        cc.connected(np.array([0]), np.array([-1]))
    fixed = IncrementalConnectivity(5, grow=False)
    with pytest.raises(ValueError, match=re.escape("dst must lie in [0, n_vertices) = [0, 5), got 7 at position 2")):
        fixed.insert(np.array([0, 1, 2]), np.array([1, 2, 7]))
    with pytest.raises(ValueError, match=re.escape("u must lie in [0, n_vertices) = [0, 5), got 5")):
        fixed.connected(np.array([5]), np.array([0]))
    assert fixed.n_vertices == 5 and fixed.n_components == 5  # nothing applied
    with pytest.raises(ValueError, match="src and dst must have the same length, got 2 and 3"):
        cc.insert(np.array([0, 1]), np.array([1, 2, 3]))
    with pytest.raises(ValueError, match="u and v must have the same length, got 1 and 0"):
        cc.connected(np.array([0]), np.array([], np.int64))
    with pytest.raises(TypeError, match="src must hold integers, got dtype float64"):
        cc.insert(np.array([0.0]), np.array([1]))
    with pytest.raises(TypeError, match="dst must hold integers, got dtype bool"):
        cc.insert(np.array([0]), np.array([True]))
    with pytest.raises(ValueError, match=r"src must be 1-D, got shape \(1, 1\)"):
        cc.insert(np.array([[0]]), np.array([1]))
    with pytest.raises(ValueError, match=re.escape("kinds must be 0 (insert) or 1 (query), got 2 at position 1")):
        cc.process((np.array([0, 2]), np.array([0, 1]), np.array([1, 2])))
    with pytest.raises(TypeError, match="kinds must hold bool or integers"):
        cc.process((np.array([0.5]), np.array([0]), np.array([1])))
    with pytest.raises(ValueError, match="kinds, src and dst must have the same length, got 1, 2 and 2"):
        cc.process((np.array([0]), np.array([0, 1]), np.array([1, 2])))
    with pytest.raises(ValueError, match=re.escape("ops must be (kinds, src, dst)")):
        cc.process((np.array([0]), np.array([0])))
    with pytest.raises(ValueError, match=re.escape("(an (m, 3) array: pass ops.T)")):
        cc.process(np.zeros((4, 3), np.int64))
    with pytest.raises(ValueError, match="method must be one of .* got 'ecl'"):
        IncrementalConnectivity(3, method="ecl")
    with pytest.raises(ValueError, match="method='jtb' takes compression in .* got 'halving'"):
        IncrementalConnectivity(3, method="jtb", compression="halving")
    with pytest.raises(ValueError, match="device must be None, 'cpu' or 'gpu', got 'tpu'"):
        IncrementalConnectivity(3, device="tpu")
    with pytest.raises(ValueError, match="n_vertices must be a non-negative int, got -1"):
        IncrementalConnectivity(-1)
    with pytest.raises(ValueError, match="n_vertices must be a non-negative int, got 2.0"):
        IncrementalConnectivity(2.0)
    with pytest.raises(ValueError, match="k must be a non-negative int, got -3"):
        cc.add_vertices(-3)
    with pytest.raises(ValueError, match="grow must be True or False, got 'yes'"):
        IncrementalConnectivity(3, grow="yes")
    with pytest.raises(ValueError, match="check must be True or False, got 1"):
        cc.insert(np.array([0]), np.array([1]), check=1)
    with pytest.raises(ValueError, match=re.escape("keeps no spanning forest (made with forest=False)")):
        IncrementalConnectivity(3, forest=False).forest_edges()
    # Rem's splicing keeps no forest by default, and refuses to be asked for one
    assert not IncrementalConnectivity(3, method="rem-cas").keeps_forest
    assert IncrementalConnectivity(3, method="rem-cas", compression="splitting").keeps_forest
    with pytest.raises(ValueError, match="forest=True cannot be kept with method='rem-cas'"):
        IncrementalConnectivity(3, method="rem-cas", compression="splicing", forest=True)
    assert cc.n_components == 5  # none of the failed calls changed anything


def test_no_forest_still_labels(backend):
    cc = IncrementalConnectivity(6, forest=False, method="hooks", device=backend)
    cc.insert(on(backend, [0, 4, 5]), on(backend, [1, 5, 9]))
    assert cc.n_components == 7 and to_host(cc.labels()).tolist() == [0, 0, 1, 2, 3, 3, 4, 5, 6, 3]


def test_repr_and_properties():
    cc = IncrementalConnectivity(3, method="async")
    assert (cc.method, cc.compression) == ("unionfind", "halving")
    assert repr(cc) == ("IncrementalConnectivity(n_vertices=3, method='unionfind', "
                        "compression='halving', device=None)")


def test_examples_run():
    result = doctest.testmod(_incremental)
    assert result.attempted > 0 and result.failed == 0


# ------------------------------------------------------------------ GPU only


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("method,compression", RULES)
def test_gpu_equals_cpu_on_large_batches(method, compression):
    """Many threads on one batch: the GPU's components equal the CPU's
    (labels value for value) on R-MAT and a grid, and both forests are
    spanning forests."""
    import cupy

    for g in (gen.rmat(16, edge_factor=8, seed=4), gen.grid((300, 300), keep=0.5, seed=2)):
        cpu = IncrementalConnectivity(g.n_vertices, method=method, compression=compression)
        gpu = IncrementalConnectivity(g.n_vertices, method=method, compression=compression,
                                      device="gpu")
        for lo, hi in ((0, 1000), (1000, g.src.size // 2), (g.src.size // 2, g.src.size)):
            cpu.insert(g.src[lo:hi], g.dst[lo:hi])
            gpu.insert(cupy.asarray(g.src[lo:hi]), cupy.asarray(g.dst[lo:hi]), check=lo > 0)
            assert gpu.n_components == cpu.n_components
            assert np.array_equal(gpu.labels().get(), cpu.labels())
        if gpu.keeps_forest:  # (not with Rem's splicing)
            check_forest(gpu, g.src, g.dst)
            check_forest(cpu, g.src, g.dst)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("blocks", [1, 16, 64])
@pytest.mark.parametrize("method,compression", [("rem-cas", "splicing"), ("rem-cas", "splitting"),
                                                ("unionfind", "halving"), ("hooks", "full"),
                                                ("jtb", "splitting")])
def test_gpu_grid_sizes(method, compression, blocks):
    """The batch kernel's grid (``GRAPH_INCR_BLOCKS_PER_SM``: from 1 block a
    multiprocessor, each thread looping over hundreds of operations, to 64)
    on slices of every length, int32 and int64 endpoints: SciPy's
    components and queries after each batch, a spanning forest where one is
    kept, and GConn's guarantee for a mixed batch on top."""
    import cupy

    g = gen.rmat(15, edge_factor=12, seed=9)
    rng = np.random.default_rng(3)
    cuts = [0, 1, 6, 7, 1000, 1003, g.src.size // 2 + 1, g.src.size]
    with _tuning.override(GRAPH_INCR_BLOCKS_PER_SM=blocks):
        for dtype in (np.int32, np.int64) if blocks == 16 else (np.int32,):
            s, d = cupy.asarray(g.src.astype(dtype)), cupy.asarray(g.dst.astype(dtype))
            cc = IncrementalConnectivity(g.n_vertices, method=method, compression=compression,
                                         device="gpu")
            for lo, hi in zip(cuts, cuts[1:]):
                cc.insert(s[lo:hi], d[lo:hi], check=False)
                count, labels = scipy_cc(sp.coo_matrix((np.ones(hi), (g.src[:hi], g.dst[:hi])),
                                                       shape=(g.n_vertices,) * 2), directed=False)
                assert cc.n_components == count
                assert np.array_equal(cc.labels().get(), labels)
                u, v = rng.integers(0, g.n_vertices, (2, 5000))
                u[:50] = v[:50]
                got = cc.connected(cupy.asarray(u), cupy.asarray(v), check=False).get()
                assert np.array_equal(got, labels[u] == labels[v])
            if cc.keeps_forest:
                check_forest(cc, g.src, g.dst)
            # a mixed batch on top: new edges and queries, GConn's guarantee
            ks = rng.random(6000) < 0.5
            a, b = rng.integers(0, g.n_vertices, (2, 6000))
            before = labels
            got = cc.process((cupy.asarray(ks), cupy.asarray(a.astype(dtype)),
                              cupy.asarray(b.astype(dtype))), check=False).get()
            allsrc, alldst = np.concatenate([g.src, a[~ks]]), np.concatenate([g.dst, b[~ks]])
            after = scipy_cc(sp.coo_matrix((np.ones(allsrc.size), (allsrc, alldst)),
                                           shape=(g.n_vertices,) * 2), directed=False)[1]
            assert not got[~ks].any()
            assert got[ks][before[a[ks]] == before[b[ks]]].all()  # connected before: True
            assert not got[ks][after[a[ks]] != after[b[ks]]].any()  # apart after: False
            assert np.array_equal(cc.labels().get(), after)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_gpu_results_stay_on_the_device_and_inputs_move():
    import cupy

    cc = IncrementalConnectivity(5, device="gpu")
    cc.insert(np.array([0, 1]), np.array([1, 2]))  # NumPy in: copied to the GPU
    assert isinstance(cc.labels(), cupy.ndarray)
    assert isinstance(cc.connected(np.array([0]), np.array([2])), cupy.ndarray)
    f = cc.forest_edges()
    assert isinstance(f.src, cupy.ndarray) and f.src.dtype == cupy.int64
    follow = IncrementalConnectivity(5)
    follow.insert(cupy.asarray([0]), cupy.asarray([4]))
    assert follow.device == "gpu"
    follow.insert(np.array([1]), np.array([2]))  # NumPy into a GPU structure
    assert follow.labels().get().tolist() == [0, 1, 1, 2, 0]
    cpu = IncrementalConnectivity(5, device="cpu")
    cpu.insert(cupy.asarray([0]), cupy.asarray([4]))  # CuPy into a CPU structure
    assert isinstance(cpu.labels(), np.ndarray) and cpu.n_components == 4


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_gpu_errors_and_unchecked_input():
    import cupy

    cc = IncrementalConnectivity(5, device="gpu", grow=False)
    with pytest.raises(ValueError, match=re.escape("dst must lie in [0, n_vertices) = [0, 5), got 8 at position 1")):
        cc.insert(cupy.asarray([0, 1]), cupy.asarray([1, 8]))
    with pytest.raises(ValueError, match=re.escape("kinds must be 0 (insert) or 1 (query), got 3 at position 0")):
        cc.process((cupy.asarray([3]), cupy.asarray([0]), cupy.asarray([1])))
    # check=False: vertices outside are skipped, never read or written
    cc.insert(cupy.asarray([0, 9, -4, 2**40]), cupy.asarray([1, 2, 3, 0]), check=False)
    assert cc.labels().get().tolist() == [0, 0, 1, 2, 3]
    got = cc.connected(cupy.asarray([0, 7, 3]), cupy.asarray([1, 7, 3]), check=False)
    assert got.get().tolist() == [True, False, True]
    grow = IncrementalConnectivity(2, device="gpu")
    grow.insert(cupy.asarray([0], dtype=cupy.int8), cupy.asarray([100], dtype=cupy.uint16))
    assert grow.n_vertices == 101 and grow.n_components == 100


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_gpu_mixed_batch_large():
    """A large mixed batch on the GPU: the bounds of one order, and every
    insert applied (per method, including Rem's two launches)."""
    import cupy

    rng = np.random.default_rng(9)
    n, m = 1 << 16, 1 << 19
    for method in ("unionfind", "rem-cas", "hooks", "early", "jtb"):
        cc = IncrementalConnectivity(n, method=method, device="gpu")
        base_s, base_d = rng.integers(0, n, m // 4), rng.integers(0, n, m // 4)
        cc.insert(cupy.asarray(base_s), cupy.asarray(base_d))
        kinds = rng.random(m) < 0.5
        s, d = rng.integers(0, n, m), rng.integers(0, n, m)
        before = reference(n, base_s, base_d)[1]
        got = cc.process((cupy.asarray(kinds), cupy.asarray(s), cupy.asarray(d))).get()
        src = np.concatenate([base_s, s[~kinds]])
        dst = np.concatenate([base_d, d[~kinds]])
        after = reference(n, src, dst)[1]
        assert not got[~kinds].any()
        assert got[kinds & (before[s] == before[d])].all(), method
        assert not got[kinds & (after[s] != after[d])].any(), method
        check_state(cc, src, dst)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_gpu_from_graph_equals_connected_components():
    import cupy

    g = gen.rmat(14, edge_factor=6, seed=8, xp="cupy")
    cc = IncrementalConnectivity.from_graph(g)
    count, labels = connected_components(g)
    assert cc.device == "gpu" and cc.n_components == count
    assert cupy.array_equal(cc.labels(), labels)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("method,compression", [("unionfind", "halving"), ("rem-cas", "splicing"),
                                                ("hooks", "full"), ("jtb", "splitting")])
def test_gpu_int64_parents(method, compression):
    """The int64 kernels (parents of 2**31 vertices and more) on a small
    structure forced to int64, against SciPy."""
    import cupy

    from meshccl._gpu.incremental import State

    g = gen.rmat(12, edge_factor=4, seed=6)
    keep = not (method == "rem-cas" and compression == "splicing")  # (no forest: see above)
    st = State(g.n_vertices, method, compression, keep, index_dtype=np.int64)
    half = g.src.size // 2
    for lo, hi in ((0, half), (half, g.src.size)):
        st.batch(None, cupy.asarray(g.src[lo:hi]), cupy.asarray(g.dst[lo:hi]), 1, False)
    count, labels = st.labels()
    want_count, want = reference(g.n_vertices, g.src, g.dst)
    assert labels.dtype == cupy.int64 and count == want_count == st.count()
    assert np.array_equal(labels.get(), want)
    u, v = np.arange(100), np.arange(100, 200)
    ans = st.batch(None, cupy.asarray(u, dtype=cupy.int32), cupy.asarray(v, dtype=cupy.int32), 2, True)
    assert np.array_equal(ans.get(), want[u] == want[v])
    if keep:
        fs, fd = (a.get() for a in st.forest_edges())
        assert fs.size == g.n_vertices - want_count
        assert np.array_equal(reference(g.n_vertices, fs, fd)[1], want)


def test_vertex_numbers_no_graph_can_have(backend):
    """uint64 vertex numbers of 2**63 and up (and n_vertices beyond 2**63 - 1)
    are refused with the argument, the value and its position -- before
    anything is applied."""
    big = 2**63
    cc = IncrementalConnectivity(4)
    u64 = np.uint64
    with pytest.raises(ValueError, match=re.escape(f"src must hold vertex numbers below 2**63 - 1 "
                                                   f"(a graph has at most 2**63 - 1 vertices), "
                                                   f"got {big} at position 1")):
        cc.insert(on(backend, np.array([0, big], u64)), on(backend, np.array([1, 2], u64)))
    with pytest.raises(ValueError, match=f"v must hold vertex numbers below 2\\*\\*63 - 1 .* "
                                         f"got {2**64 - 1} at position 0"):
        cc.connected(on(backend, np.array([3], u64)), on(backend, np.array([2**64 - 1], u64)))
    with pytest.raises(ValueError, match=f"dst must hold .* got {big - 1} at position 2"):
        cc.process(on(backend, np.array([[0, 0, 0], [0, 1, 2], [1, 2, big - 1]], u64)))
    assert cc.n_vertices == 4 and cc.n_components == 4
    with pytest.raises(ValueError, match=f"n_vertices must be at most 2\\*\\*63 - 1, got {big}"):
        IncrementalConnectivity(big)
    with pytest.raises(ValueError, match=f"k must keep n_vertices at most 2\\*\\*63 - 1, got {big - 4} "
                                         "with 4 vertices already"):
        cc.add_vertices(big - 4)
    assert cc.n_vertices == 4
