// strong_peel_host.cpp -- the peel of strong.cu (meshccl_scc_peel_init,
// meshccl_scc_peel) run on the CPU through cuda_on_host.h, against the trim
// it stands for: repeated passes that give every vertex without a remaining
// in- or out-neighbour (itself excepted) a component of its own, until
// nothing changes.  Graphs: one-way 2-D and 3-D meshes, a chain with side
// edges, random graphs with cycles, repeated entries, self-loops, hubs whose
// rows the warp releases, and vertices that have a component before the
// peel; grids of one to three blocks of one to four warps.  Exit status 0
// when every vertex's component and the peel's counters are right
// (tests/test_strong_peel_emulated.py builds and runs it).
#include "cuda_on_host.h"
#include "strong.cu"

#include <cstdio>
#include <random>
#include <utility>
#include <vector>

namespace {

struct Graph {
    int n = 0;
    std::vector<long long> fptr, rptr;
    std::vector<int> fidx, ridx;
};

Graph csr(int n, const std::vector<std::pair<int, int>>& edges) {
    Graph g;
    g.n = n;
    g.fptr.assign(n + 1, 0);
    g.rptr.assign(n + 1, 0);
    for (const auto& e : edges) {
        ++g.fptr[e.first + 1];
        ++g.rptr[e.second + 1];
    }
    for (int v = 0; v < n; ++v) {
        g.fptr[v + 1] += g.fptr[v];
        g.rptr[v + 1] += g.rptr[v];
    }
    g.fidx.resize(edges.size());
    g.ridx.resize(edges.size());
    std::vector<long long> f(g.fptr.begin(), g.fptr.end() - 1), r(g.rptr.begin(), g.rptr.end() - 1);
    for (const auto& e : edges) {
        g.fidx[f[e.first]++] = e.second;
        g.ridx[r[e.second]++] = e.first;
    }
    return g;
}

bool live_neighbour(const std::vector<long long>& ptr, const std::vector<int>& idx, int v,
                    const std::vector<int>& rep) {
    for (long long e = ptr[v]; e < ptr[v + 1]; ++e)
        if (idx[e] != v && rep[idx[e]] < 0) return true;
    return false;
}

// 0 when the peel leaves every vertex as the trim's passes would.
int check(const Graph& g, const std::vector<int>& before, unsigned blocks, unsigned threads,
          const char* what) {
    const int n = g.n;
    std::vector<int> want = before;
    for (bool changed = true; changed;) {
        changed = false;
        for (int v = 0; v < n; ++v)
            if (want[v] < 0 && !(live_neighbour(g.fptr, g.fidx, v, want) &&
                                 live_neighbour(g.rptr, g.ridx, v, want))) {
                want[v] = v;
                changed = true;
            }
    }
    std::vector<int> rep = before;
    std::vector<unsigned long long> word(n), ctl(64, 0);
    std::vector<long long> queue(n, -1);
    const long long *fp = g.fptr.data(), *rp = g.rptr.data();
    const int *fi = g.fidx.data(), *ri = g.ridx.data();
    int* r = rep.data();
    int nn = n;
    unsigned long long *w = word.data(), *c = ctl.data();
    long long* q = queue.data();
    long long capacity = n;
    void* init_args[] = {&fp, &fi, &rp, &ri, &r, &nn, &w, &q, &c};
    void* peel_args[] = {&fp, &fi, &rp, &ri, &r, &w, &q, &capacity, &c};
    const unsigned g1[3] = {2, 1, 1}, b1[3] = {64, 1, 1};
    const unsigned g2[3] = {blocks, 1, 1}, b2[3] = {threads, 1, 1};
    if (emu::launch(&meshccl_scc_peel_init<int, int>, g1, b1, 0, init_args) ||
        emu::launch(&meshccl_scc_peel<int, int>, g2, b2, 0, peel_args)) {
        std::printf("%s: the launch failed: %s\n", what, emu::failure);
        return 1;
    }
    unsigned long long peeled = 0;
    for (int v = 0; v < n; ++v) {
        if (rep[v] != want[v]) {
            std::printf("%s: vertex %d has %d, the trim gives %d\n", what, v, rep[v], want[v]);
            return 1;
        }
        peeled += before[v] < 0 && want[v] >= 0;
    }
    if (ctl[PEEL_DONE] != peeled || ctl[PEEL_PENDING] != 0 || ctl[PEEL_LENGTH] > peeled) {
        std::printf("%s: finished %llu of %llu, pending %llu, queued %llu\n", what,
                    ctl[PEEL_DONE], peeled, ctl[PEEL_PENDING], ctl[PEEL_LENGTH]);
        return 1;
    }
    return 0;
}

std::vector<std::pair<int, int>> mesh(int side, int dims) {
    std::vector<std::pair<int, int>> e;
    const int n = dims == 2 ? side * side : side * side * side;
    for (int v = 0; v < n; ++v) {
        int stride = 1;
        for (int d = 0; d < dims; ++d, stride *= side)
            if ((v / stride) % side + 1 < side) e.push_back({v, v + stride});
    }
    return e;
}

}  // namespace

int main() {
    std::mt19937 rng(7);
    int bad = 0;
    bad |= check(csr(900, mesh(30, 2)), std::vector<int>(900, -1), 2, 64, "2-D mesh");
    bad |= check(csr(512, mesh(8, 3)), std::vector<int>(512, -1), 3, 128, "3-D mesh");
    {  // a chain with edges back along it every so often: peeled from both ends up to a cycle
        std::vector<std::pair<int, int>> e;
        for (int v = 0; v + 1 < 600; ++v) e.push_back({v, v + 1});
        e.push_back({400, 300});
        e.push_back({250, 250});
        bad |= check(csr(600, e), std::vector<int>(600, -1), 1, 32, "chain");
    }
    for (int t = 0; t < 24; ++t) {
        const int n = 40 + (int)(rng() % 300), m = (int)(rng() % (3 * n));
        std::vector<std::pair<int, int>> e;
        for (int k = 0; k < m; ++k) {
            int a = (int)(rng() % n), b = (int)(rng() % n);
            if (t % 2 && a > b) std::swap(a, b);  // mostly a DAG
            e.push_back({a, b});
            if (rng() % 7 == 0) e.push_back({a, b});  // a repeated entry
        }
        if (t % 3 == 0)  // an out-hub and an in-hub: rows the warp releases
            for (int k = 0; k < 100; ++k) {
                e.push_back({0, (int)(rng() % n)});
                e.push_back({(int)(rng() % n), 1});
            }
        std::vector<int> before(n, -1);
        for (int v = 0; v < n; ++v)
            if (rng() % 10 == 0) before[v] = v;
        char what[32];
        std::snprintf(what, sizeof what, "random graph %d", t);
        bad |= check(csr(n, e), before, 1 + (unsigned)(rng() % 3), 32 * (1 + (unsigned)(rng() % 4)),
                     what);
    }
    return bad;
}
