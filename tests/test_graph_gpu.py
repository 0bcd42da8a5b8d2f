"""meshccl.graph on each backend (``backend`` fixture of conftest.py: the GPU
cases are skipped where CuPy sees no GPU), every method against
scipy.sparse.csgraph.connected_components."""

import re

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import connected_components as scipy_cc

from meshccl import _tuning
from meshccl import graph_generators as gen
from meshccl.errors import NotConverged
# (imported here, not inside a test: importing that module inside a @given test
# runs its own @given decorators there, which Hypothesis reports as nested)
from test_graph_gpu_emulated import BAD_CSR, BAD_EDGES, mix64  # noqa: E402
from meshccl.graph import (COMPRESSION, CPU_METHODS, GPU_METHODS, Edges, connected_components,
                           release_plans, spanning_forest)

from conftest import HAVE_GPU, small_graphs, to_host

METHODS = {"cpu": [m for m in CPU_METHODS if m != "auto"],
           "gpu": [m for m in GPU_METHODS if m != "auto"]}


def on(backend, a):
    """A NumPy array or SciPy matrix moved to the backend's side."""
    if backend == "cpu":
        return a
    import cupy
    import cupyx.scipy.sparse as csp

    if sp.issparse(a):
        return {"csr": csp.csr_matrix, "csc": csp.csc_matrix, "coo": csp.coo_matrix}[a.format](a)
    return cupy.asarray(a)


def forms(backend, n, src, dst):
    """The graph in every form the backend takes (GPU: cupyx sparse, CuPy arrays)."""
    coo = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n))
    csr = coo.tocsr()
    yield "coo", on(backend, coo)
    yield "csr", on(backend, csr)
    yield "csc", on(backend, coo.tocsc())
    yield "tuple", (on(backend, csr.indptr), on(backend, csr.indices))
    yield "tuple int64", (on(backend, csr.indptr.astype(np.int64)), on(backend, csr.indices.astype(np.int64)))
    yield "tuple uint16", (on(backend, csr.indptr), on(backend, csr.indices.astype(np.uint16)))
    yield "edges", Edges(on(backend, src), on(backend, dst), n)
    yield "edges int32", Edges(on(backend, src.astype(np.int32)), on(backend, dst.astype(np.int32)), n)
    if n <= 40:
        yield "dense", on(backend, csr.toarray())


def scipy_answer(n, src, dst):
    return scipy_cc(sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)))


def check(backend, form, want_n, want, method, name="", **kw):
    got_n, got = connected_components(form, method=method, **kw)
    if backend == "gpu":
        import cupy
        assert isinstance(got, cupy.ndarray), name
    else:
        assert isinstance(got, np.ndarray), name
    assert isinstance(got_n, int), name
    assert got_n == want_n, (method, name)
    assert got.dtype == np.int32, name
    np.testing.assert_array_equal(to_host(got), want, err_msg=f"{method} {name}")


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(g=small_graphs(60, 120), data=st.data())
def test_every_method_every_form_matches_scipy(backend, g, data):
    n, src, dst = g
    method = data.draw(st.sampled_from(["auto"] + METHODS[backend]))
    want_n, want = scipy_answer(n, src, dst)
    for name, form in forms(backend, n, src, dst):
        check(backend, form, want_n, want, method, name)


#: every (method, compression) pair the API accepts (None: the default)
COMBOS = [(m, c) for m in CPU_METHODS for c in (None,) + COMPRESSION[m]]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(g=small_graphs(60, 120), mc=st.sampled_from(COMBOS), symmetric=st.booleans())
def test_every_compression_matches_scipy(backend, g, mc, symmetric):
    n, src, dst = g
    if symmetric:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    method, compression = mc
    want_n, want = scipy_answer(n, src, dst)
    for name, form in forms(backend, n, src, dst):
        check(backend, form, want_n, want, method, name, compression=compression,
              symmetric=symmetric)


@pytest.mark.parametrize("method, compression", [mc for mc in COMBOS if mc[1] is not None])
def test_every_compression_on_rmat(backend, method, compression):
    e = gen.rmat(12, 8, seed=11)
    want_n, want = scipy_answer(e.n_vertices, e.src, e.dst)
    csr = sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(e.n_vertices,) * 2).tocsr()
    check(backend, Edges(on(backend, e.src), on(backend, e.dst), e.n_vertices), want_n, want,
          method, "edges", compression=compression)
    check(backend, on(backend, csr), want_n, want, method, "csr", compression=compression)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(g=small_graphs(60, 120), method=st.sampled_from(["auto"] + METHODS["cpu"]))
def test_symmetric_promise(backend, g, method):
    n, src, dst = g
    s, d = np.concatenate([src, dst]), np.concatenate([dst, src])
    want_n, want = scipy_answer(n, s, d)
    for name, form in forms(backend, n, s, d):
        check(backend, form, want_n, want, method, name, symmetric=True)


def degree_classes(seed=0, symmetric=False):
    """Vertices of every ECL-CC class: degree <= 16 (thread), 17..352 (warp),
    > 352 (block), hubs in several components, edges stored at the hub or at
    the leaf, plus a random sprinkle and isolated vertices."""
    rng = np.random.default_rng(seed)
    n = 20000
    src, dst = [], []
    hubs = [(5, 1000), (17000, 3000), (2, 100), (9000, 17), (9001, 352), (9002, 353), (12000, 200)]
    for h, deg in hubs:
        leaves = rng.choice(n, deg, replace=False)
        at_hub = rng.random(deg) < 0.5
        src.append(np.where(at_hub, h, leaves))
        dst.append(np.where(at_hub, leaves, h))
    src.append(rng.integers(0, n, 3000))
    dst.append(rng.integers(0, n, 3000))
    src, dst = np.concatenate(src), np.concatenate(dst)
    if symmetric:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    return n, src, dst


@pytest.mark.parametrize("symmetric", [False, True])
def test_thread_warp_and_block_kernels(backend, symmetric):
    n, src, dst = degree_classes(symmetric=symmetric)
    want_n, want = scipy_answer(n, src, dst)
    for method in ["auto"] + METHODS[backend]:
        for name, form in forms(backend, n, src, dst):
            check(backend, form, want_n, want, method, name, symmetric=symmetric)


@pytest.mark.parametrize("make", [lambda: gen.rmat(14, 16, seed=1), lambda: gen.grid((80, 90), keep=0.55, seed=2),
                                  lambda: gen.line(20000), lambda: gen.disjoint(9, 700, seed=3),
                                  lambda: gen.watts_strogatz(5000, 6, 0.1, seed=4),
                                  lambda: gen.barabasi_albert(4000, 5, seed=5),
                                  lambda: gen.hawick_disjoint(20000, 60000, 30, seed=6)],
                         ids=["rmat14", "road-like", "line", "disjoint", "watts-strogatz", "barabasi-albert",
                              "hawick-disjoint"])
def test_generated_graphs(backend, make):
    e = make()
    want_n, want = scipy_answer(e.n_vertices, e.src, e.dst)
    csr = sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(e.n_vertices,) * 2).tocsr()
    for method in ["auto"] + METHODS[backend]:
        check(backend, Edges(on(backend, e.src), on(backend, e.dst), e.n_vertices), want_n, want, method, "edges")
        check(backend, on(backend, csr), want_n, want, method, "csr")


def test_small_and_empty(backend):
    for method in ["auto"] + METHODS[backend]:
        empty = Edges(on(backend, np.array([], np.int64)), on(backend, np.array([], np.int64)))
        n, lab = connected_components(empty, method=method)
        assert n == 0 and to_host(lab).shape == (0,)
        one = (on(backend, np.array([0, 0])), on(backend, np.array([], np.int32)))
        n, lab = connected_components(one, method=method)
        assert n == 1 and to_host(lab).tolist() == [0]
        loop = Edges(on(backend, np.array([2])), on(backend, np.array([2])))
        assert to_host(connected_components(loop, method=method)[1]).tolist() == [0, 1, 2]
        assert connected_components(on(backend, sp.eye(4).tocsr()), return_labels=False, method=method) == 4


def test_kout_with_edges_stored_only_in_the_giant_component(backend):
    n = 3000
    ring = np.arange(2000)
    src = np.concatenate([ring, ring, np.arange(2000, 3000) % 2000])
    dst = np.concatenate([(ring + 1) % 2000, (ring + 2) % 2000, np.arange(2000, 3000)])
    want_n, want = scipy_answer(n, src, dst)
    for name, form in forms(backend, n, src, dst):
        check(backend, form, want_n, want, "kout", name)


def _both_ways(src, dst):
    return np.concatenate([src, dst]), np.concatenate([dst, src])


def _planted_dense(seed=0):
    """Three dense random blocks (about 48 entries per vertex once stored both
    ways: k-out's one-kernel path) with shuffled vertex numbers, plus
    isolated vertices and one pair."""
    rng = np.random.default_rng(seed)
    n = 2000
    perm = rng.permutation(n)
    src, dst = [], []
    for lo, hi in [(0, 900), (900, 1500), (1500, 1800)]:
        m = (hi - lo) * 24
        src.append(rng.integers(lo, hi, m))
        dst.append(rng.integers(lo, hi, m))
    src.append(np.array([1900]))
    dst.append(np.array([1901]))
    src, dst = _both_ways(perm[np.concatenate(src)], perm[np.concatenate(dst)])
    return n, src, dst


@pytest.mark.parametrize("case", ["dense", "grid-giant", "grid-pieces", "grid-and-dust"])
def test_kout_sampling_paths(backend, case):
    """k-out's two ways of sampling (kernels/graph.cu): one guarded kernel on
    dense graphs; Afforest's rounds with the frequent root's vertices
    skipping entry 1 (a grid whose giant component L holds most vertices),
    or not skipping (a grid cut into pieces, where L holds few)."""
    if case == "dense":
        n, src, dst = _planted_dense()
    else:
        keep = {"grid-giant": 0.8, "grid-pieces": 0.45, "grid-and-dust": 0.7}[case]
        e = gen.grid((150, 160), keep=keep, seed=7)
        src, dst, n = e.src, e.dst, e.n_vertices
        if case == "grid-and-dust":  # many small components numbered after the grid
            rng = np.random.default_rng(3)
            extra = n + rng.integers(0, 5000, 3000)
            src, dst, n = np.concatenate([src, extra]), np.concatenate([dst, extra[::-1]]), n + 5000
        src, dst = _both_ways(src, dst)
    want_n, want = scipy_answer(n, src, dst)
    csr = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr()
    for symmetric in (True, False):
        check(backend, on(backend, csr), want_n, want, "kout", case, symmetric=symmetric)
        check(backend, on(backend, csr), want_n, want, "auto", case, symmetric=symmetric)


@pytest.mark.parametrize("case", ["kronecker", "kronecker-dust", "ba", "grid", "random"])
def test_hb_sampling_graphs(backend, case):
    """HB sampling ('hb') on the graph kinds it meets: Kronecker (a giant
    component, many roots after the first step), with dust numbered first,
    Barabasi-Albert, a grid with deleted edges, a random sparse graph;
    promised symmetric or not (on the GPU: the 'link' and the CAS form of
    the hook step).  Labels equal SciPy's."""
    if case.startswith("kronecker"):
        e = gen.rmat(13, 24, seed=5)
        src, dst, n = e.src, e.dst, e.n_vertices
        if case == "kronecker-dust":  # isolated vertices and pairs numbered first
            src, dst, n = src + 3000, dst + 3000, n + 3000
            src, dst = np.concatenate([src, np.arange(0, 3000, 2)]), np.concatenate([dst, np.arange(1, 3000, 2)])
    elif case == "ba":
        e = gen.barabasi_albert(20000, 6, seed=4)
        src, dst, n = e.src, e.dst, e.n_vertices
    elif case == "grid":
        e = gen.grid((120, 130), keep=0.7, seed=2)
        src, dst, n = e.src, e.dst, e.n_vertices
    else:
        rng = np.random.default_rng(8)
        n = 30000
        src, dst = rng.integers(0, n, 90000), rng.integers(0, n, 90000)
    src, dst = _both_ways(np.asarray(src), np.asarray(dst))
    want_n, want = scipy_answer(n, src, dst)
    csr = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr()
    for symmetric in (True, False):
        check(backend, on(backend, csr), want_n, want, "hb", case, symmetric=symmetric)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="needs a GPU")
@pytest.mark.parametrize("symmetric", [True, False], ids=["link", "cas"])
def test_hb_sampling_joins_the_giant_component(symmetric):
    """After HB sampling of a Kronecker graph (scale 14, 24 entries per
    vertex) the frequent root L must be the root of most of the 1024
    sampled vertices, with either form of the hook step; a hook step that
    leaves the giant component in pieces fails this and slows the finish
    pass 50-fold."""
    import cupy

    from meshccl._gpu import graph as gg

    e = gen.rmat(14, 24, seed=7)
    src, dst = _both_ways(np.asarray(e.src), np.asarray(e.dst))
    n = e.n_vertices
    csr = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr()
    want_n, want = scipy_answer(n, src, dst)
    giant = np.bincount(want).max() / n
    arrays = (cupy.asarray(csr.indptr), cupy.asarray(csr.indices))
    steps, state = gg.graph_steps("csr", arrays, n, "hb", symmetric=symmetric)
    for name, launch in steps:
        if name == "finish":
            break
        launch()
    L, hits = (int(x) for x in state["big"].get())
    assert want[L] == np.argmax(np.bincount(want)), "L is not in the giant component"
    assert hits >= 0.9 * giant * gg.SAMPLES, (hits, giant)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="needs a GPU")
@pytest.mark.parametrize("itype", ["int32", "int64"])
@given(data=st.data())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_mode_kernel(itype, data):
    """meshccl_graph_mode: the most frequent value of samples[:count] (the
    smallest on a tie) and its count, against np.unique, on few distinct
    values (ties), many, a short count and the largest values."""
    import cupy

    from meshccl._gpu import graph as gg
    from meshccl._gpu.loader import kernels

    count = data.draw(st.sampled_from([1, 2, 3, 511, 1000, gg.SAMPLES]), label="count")
    distinct = data.draw(st.sampled_from([1, 2, 7, 100, 5000]), label="distinct")
    top = np.iinfo(itype).max
    base = data.draw(st.sampled_from([0, top - 6000]), label="base")
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    vals = (base + np.random.default_rng(seed).integers(0, distinct, gg.SAMPLES)).astype(itype)
    (mode,) = kernels("graph.cu", f"meshccl_graph_mode<{'int' if itype == 'int32' else 'long long'}>")
    big = cupy.full(2, -1, dtype=itype)
    mode((1,), (gg.SAMPLES,), (cupy.asarray(vals), np.int32(count), big))
    u, c = np.unique(vals[:count], return_counts=True)
    assert big.get().tolist() == [u[np.argmax(c)], c.max()]


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="needs a GPU")
@pytest.mark.parametrize("walk", ["true", "false"])
@pytest.mark.parametrize("itype", ["int32", "int64"])
@given(data=st.data())
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_compress_kernel(itype, walk, data):
    """meshccl_graph_compress points every vertex at its root, both forms
    (Walk: a read-only walk from every vertex; else CAS halving), on
    forests whose parents point lower: single chains of length n, chains
    broken into runs, and shallow random trees.  (A chain costs the walk
    O(n^2) loads at worst, hence n <= 5000 here.)"""
    import cupy

    from meshccl._gpu import graph as gg
    from meshccl._gpu.loader import kernels

    n = data.draw(st.sampled_from([1, 2, 31, 33, 100, 5000]), label="n")
    shape = data.draw(st.sampled_from(["chain", "runs", "shallow"]), label="shape")
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    rng = np.random.default_rng(seed)
    v = np.arange(n)
    if shape == "chain":
        P = np.maximum(v - 1, 0)
    elif shape == "runs":  # chains of about 100 hops, each starting at a root
        P = np.maximum(v - 1, 0)
        starts = rng.random(n) < 1 / 100
        P[starts] = v[starts]
    else:
        P = np.where(rng.random(n) < 0.1, v, np.maximum(0, v - rng.integers(1, 41, n)))
    P[0] = 0
    P = P.astype(itype)
    want = P.copy()
    for x in range(n):  # parents are lower: their roots are known already
        want[x] = want[P[x]] if P[x] != x else x
    ti = "int" if itype == "int32" else "long long"
    (compress,) = kernels("graph.cu", f"meshccl_graph_compress<{ti}, {walk}>")
    dP = cupy.asarray(P)
    compress(gg._grid(n, gg.BLOCK, 32), (gg.BLOCK,), (dP, np.dtype(itype).type(n)))
    np.testing.assert_array_equal(dP.get(), want)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="needs a GPU")
@pytest.mark.parametrize("itype", ["int32", "int64"])
@given(data=st.data())
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_sample_mode_kernel(itype, data):
    """meshccl_graph_sample_mode: the most frequent root among the roots of
    the vertices mix64(seed + t) % n, t < count (the smallest on a tie), and
    how many of them it was, against a host computation on random forests
    (one to many trees, chains of depth up to 40, n from 1 up)."""
    import cupy

    from meshccl._gpu import graph as gg
    from meshccl._gpu.loader import kernels

    n = data.draw(st.sampled_from([1, 2, 5, 1000, 70_000]), label="n")
    trees = data.draw(st.sampled_from([1, 2, 3, 50, n]), label="trees")
    count = data.draw(st.sampled_from([1, 3, 600, gg.SAMPLES]), label="count")
    seed = data.draw(st.integers(0, 2**63), label="seed")
    rng = np.random.default_rng(seed % 2**32)
    # parents point lower (roots are the smallest of their trees); chains via runs
    is_root = np.zeros(n, bool)
    is_root[rng.choice(n, size=min(trees, n), replace=False)] = True
    is_root[0] = True
    v = np.arange(n)
    P = np.where(is_root, v, np.maximum(0, v - rng.integers(1, 41, n))).astype(itype)
    host = P.copy()
    for x in range(n):  # parents are lower: their roots are known already
        host[x] = host[P[x]] if P[x] != x else x
    picks = mix64(np.uint64(seed) + np.arange(count, dtype=np.uint64)) % np.uint64(n)
    u, c = np.unique(host[picks.astype(np.int64)], return_counts=True)
    (kern,) = kernels("graph.cu", f"meshccl_graph_sample_mode<{'int' if itype == 'int32' else 'long long'}>")
    big = cupy.full(2, -1, dtype=itype)
    dP = cupy.asarray(P)
    kern((1,), (gg.SAMPLES,), (dP, np.dtype(itype).type(n), np.int32(count), np.uint64(seed), big))
    assert big.get().tolist() == [u[np.argmax(c)], c.max()]
    # the finds only shortened paths: every vertex keeps its root
    got = dP.get()
    assert (got <= P).all() and (got[is_root] == v[is_root]).all()
    mine = got.copy()
    for x in range(n):
        mine[x] = mine[got[x]] if got[x] != x else x
    np.testing.assert_array_equal(mine, host)


def test_labels_are_deterministic(backend):
    e = gen.rmat(12, 8, seed=9)
    g = Edges(on(backend, e.src), on(backend, e.dst), e.n_vertices)
    for method in METHODS[backend]:
        first = to_host(connected_components(g, method=method)[1])
        for _ in range(3):
            np.testing.assert_array_equal(to_host(connected_components(g, method=method)[1]), first)


BAD = [
    (lambda b: on(b, sp.csr_matrix(np.ones((2, 3)))), ValueError, r"square \(N, N\) matrix, got shape \(2, 3\)"),
    (lambda b: (on(b, np.array([0, 2, 1])), on(b, np.array([0, 1]))), ValueError,
     "indptr must not decrease, got 2 then 1 at position 1"),
    (lambda b: (on(b, np.array([1, 2])), on(b, np.array([0, 1]))), ValueError, "indptr must start at 0, got 1"),
    (lambda b: (on(b, np.array([0, 1, 3])), on(b, np.array([0, 1]))), ValueError,
     r"indptr must end at len\(indices\) = 2, got 3"),
    (lambda b: (on(b, np.array([], np.int64)), on(b, np.array([0]))), ValueError, "indptr must have n_vertices"),
    (lambda b: (on(b, np.array([0, 1, 2])), on(b, np.array([0, 7]))), ValueError,
     r"indices must lie in \[0, 2\), got 7 at position 1"),
    (lambda b: (on(b, np.array([0, 1, 2])), on(b, np.array([0, -1]))), ValueError, r"got -1 at position 1"),
    (lambda b: (on(b, np.array([0, 1, 2])), on(b, np.array([0, 2**40]))), ValueError,
     rf"got {2**40} at position 1"),
    (lambda b: (on(b, np.array([0, 1, 2], np.uint64)), on(b, np.array([0, 2**64 - 1], np.uint64))), ValueError,
     rf"got {2**64 - 1} at position 1"),
    (lambda b: (on(b, np.array([0, 1, 2])), on(b, np.array([0.0, 1.0]))), TypeError,
     "indices must hold integers, got dtype float64"),
    (lambda b: (on(b, np.array([0.0, 1.0])), on(b, np.array([0]))), TypeError, "indptr must hold integers"),
    (lambda b: (on(b, np.array([[0, 1]])), on(b, np.array([0]))), ValueError, "indptr must be 1-D"),
    (lambda b: Edges(on(b, np.array([0, 1])), on(b, np.array([1]))), ValueError,
     "src and dst must have the same length"),
    (lambda b: Edges(on(b, np.array([0, 5])), on(b, np.array([1, 1])), 3), ValueError,
     r"src must lie in \[0, 3\), got 5 at position 1"),
    (lambda b: Edges(on(b, np.array([0, 1])), on(b, np.array([1, -3])), 3), ValueError,
     r"dst must lie in \[0, 3\), got -3 at position 1"),
    (lambda b: Edges(on(b, np.array([0])), on(b, np.array([1])), -2), ValueError,
     "n_vertices must be a non-negative int"),
    (lambda b: on(b, np.ones((3, 3, 3))), ValueError, r"square \(N, N\) matrix, got shape \(3, 3, 3\)"),
    (lambda b: on(b, np.ones((3, 4))), ValueError, r"square \(N, N\) matrix"),
]


@pytest.mark.parametrize("make, err, msg", BAD)
def test_bad_input_gives_clear_errors(backend, make, err, msg):
    with pytest.raises(err, match=msg):
        connected_components(make(backend))


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_gpu_specifics():
    import cupy

    e = gen.rmat(10, 4, seed=3)
    g = Edges(cupy.asarray(e.src), cupy.asarray(e.dst), e.n_vertices)
    with pytest.raises(TypeError, match="all NumPy or all CuPy"):
        connected_components(Edges(cupy.asarray(e.src), e.dst, e.n_vertices))
    # the device's result equals the host's
    want = connected_components(e)
    got = connected_components(g)
    assert got[0] == want[0]
    np.testing.assert_array_equal(got[1].get(), want[1])


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(g=small_graphs(60, 120))
def test_spanning_forest_per_backend(backend, g):
    """Input edges, n - c of them, acyclic, spanning every component."""
    n, src, dst = g
    want_n, want = scipy_answer(n, src, dst)
    edges = set(zip(src.tolist(), dst.tolist()))
    for name, form in forms(backend, n, src, dst):
        f = spanning_forest(form)
        fs, fd = to_host(f.src), to_host(f.dst)
        assert f.n_vertices == n and fs.dtype == np.int64 and fs.size == n - want_n, name
        got_n, got = connected_components(Edges(fs, fd, n))  # n - c edges spanning c: no cycle
        assert got_n == want_n, name
        np.testing.assert_array_equal(got, want, err_msg=name)
        assert all(e in edges for e in zip(fs.tolist(), fd.tolist())), name


def test_spanning_forest_large_per_backend(backend):
    e = gen.rmat(14, 8, seed=5)
    f = spanning_forest(Edges(on(backend, e.src), on(backend, e.dst), e.n_vertices))
    c, lab = connected_components(e)
    assert to_host(f.src).size == e.n_vertices - c
    np.testing.assert_array_equal(connected_components(Edges(to_host(f.src), to_host(f.dst),
                                                             e.n_vertices))[1], lab)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="needs a GPU")
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("method", ["hb", "unionfind"])
def test_long_relabel_scan_on_gpu(method, index_dtype):
    """2 500 001 vertices: more than ROOTS_ONE_BLOCK_SCAN_WORDS words of root
    bits, so the numbering scans in three launches (77 blocks of 1024 words,
    the last one partial); labels as SciPy's."""
    import cupy

    from meshccl import _tuning

    n = 2_500_001
    assert (n + 31) // 32 > _tuning.ROOTS_ONE_BLOCK_SCAN_WORDS
    rng = np.random.default_rng(8)
    src, dst = rng.integers(0, n, n // 2), rng.integers(0, n, n // 2)
    want_n, want = scipy_answer(n, src, dst)
    s, d = _both_ways(src, dst)
    csr = sp.coo_matrix((np.ones(s.size), (s, d)), shape=(n, n)).tocsr()
    got_n, got = connected_components((cupy.asarray(csr.indptr), cupy.asarray(csr.indices)),
                                      method=method, symmetric=True)
    assert got_n == want_n
    np.testing.assert_array_equal(got.get(), want)
    from meshccl._gpu import graph as gg

    count, labels = gg.components("csr", (cupy.asarray(csr.indptr), cupy.asarray(csr.indices)), n,
                                  method, symmetric=True, index_dtype=index_dtype)
    assert labels.dtype == index_dtype and int(count) == want_n
    np.testing.assert_array_equal(labels.get(), want)


def test_max_iterations(backend):
    e = gen.line(500)
    g = Edges(on(backend, e.src), on(backend, e.dst), e.n_vertices)
    for method in ("edge-lp", "vertex-lp", "sv") + (("bfs-cc",) if backend == "gpu" else ()):
        with pytest.raises(NotConverged, match=f"method='{method}' did not converge"):
            connected_components(g, method=method, max_iterations=1)
        assert connected_components(g, method=method, max_iterations=10**6)[0] == 1
    # ignored by the non-iterative methods
    assert connected_components(g, method="ecl", max_iterations=1)[0] == 1


def test_bad_method_options(backend):
    g = Edges(on(backend, np.array([0, 1])), on(backend, np.array([1, 2])))
    with pytest.raises(ValueError, match="method must be one of"):
        connected_components(g, method="afforest")
    with pytest.raises(ValueError, match=r"method='rem-cas' takes compression in \('splicing'"):
        connected_components(g, method="rem-cas", compression="full")
    with pytest.raises(ValueError, match=r"method='jtb' takes compression in \('splitting', 'none'\)"):
        connected_components(g, method="jtb", compression="halving")
    with pytest.raises(ValueError, match=r"method='ecl' takes compression in \('halving',\)"):
        connected_components(g, method="ecl", compression="none")
    with pytest.raises(ValueError, match="method='sv' uses no union-find"):
        connected_components(g, method="sv", compression="halving")
    with pytest.raises(ValueError, match="compression must be None or one of"):
        connected_components(g, method="unionfind", compression="zip")
    with pytest.raises(ValueError, match="max_iterations must be None or an int >= 1"):
        connected_components(g, method="sv", max_iterations=0)
    assert connected_components(g, method="bfs")[0] == connected_components(g, method="bfs-cc")[0] == 1
    assert connected_components(g, method="async", compression="full")[0] == 1


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("method, compression", [mc for mc in COMBOS if mc[0] not in ("auto", "bfs", "async")])
@pytest.mark.parametrize("kind", ["edges", "csr"])
def test_int64_kernels(method, compression, kind):
    """The long long instantiations (used from 2**31 vertices) on a small graph."""
    import cupy

    from meshccl._gpu import graph as gpu

    n, src, dst = degree_classes(seed=4)
    want_n, want = scipy_answer(n, src, dst)
    if kind == "edges":
        arrays = (cupy.asarray(src), cupy.asarray(dst))
    else:
        csr = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr()
        arrays = (cupy.asarray(csr.indptr), cupy.asarray(csr.indices))
    count, labels = gpu.components(kind, arrays, n, method, index_dtype=np.int64,
                                   compression=compression)
    assert labels.dtype == np.int64 and int(count) == want_n
    np.testing.assert_array_equal(labels.get(), want)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_generators_cupy_output_equals_numpy():
    """xp='cupy' gives CuPy int64 arrays holding the NumPy graph of the same seed."""
    import cupy

    from test_graph import GENERATORS

    for name, make in GENERATORS.items():
        want = make("numpy")
        for xp in ("cupy", cupy):
            got = make(xp)
            assert isinstance(got.src, cupy.ndarray) and isinstance(got.dst, cupy.ndarray), name
            assert got.src.dtype == got.dst.dtype == np.int64 and got.n_vertices == want.n_vertices
            np.testing.assert_array_equal(got.src.get(), want.src, err_msg=name)
            np.testing.assert_array_equal(got.dst.get(), want.dst, err_msg=name)
        assert connected_components(got)[0] == connected_components(want)[0], name


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_auto_tile_probe_on_gpu():
    """The probe kernel of 'auto' on CSR input counts what its host mirror
    counts (sampled entries whose column lies in their row's tile), and
    'auto' picks 'tiles' on graphs numbered in order (a path, a grid row by
    row), 'ecl' on a shuffled path and on a graph of one tile, whose probe
    does not run (int32 and int64 index arrays); on edge lists 'early' for a
    path in order, else 'unionfind'."""
    import cupy
    import cupyx.scipy.sparse as csp

    from meshccl._gpu.graph import _SEED, chain_probe_edges, tile_probe, tile_shift
    from meshccl.graph import _auto_method

    line = gen.line(100_000)
    perm = np.random.default_rng(5).permutation(line.n_vertices).astype(np.int64)
    shuffled = Edges(perm[line.src], perm[line.dst], line.n_vertices)
    # (graph, 'auto' on its CSR, 'auto' on its edge list)
    cases = [(line, "tiles", "early"), (gen.grid((300, 300)), "tiles", "unionfind"),
             (shuffled, "ecl", "unionfind"), (gen.line(7), "ecl", "early")]
    shift = tile_shift()
    for e, expect, expect_edges in cases:
        n = e.n_vertices
        csr = sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(n, n)).tocsr()
        assert _auto_method(csp.csr_matrix(csr)) == expect
        for ip, ind in ((csr.indptr, csr.indices), (csr.indptr.astype(np.int64), csr.indices),
                        (csr.indptr, csr.indices.astype(np.int64))):
            probed = tile_probe(cupy.asarray(ip), cupy.asarray(ind), n)
            if n <= 1 << shift:
                assert probed is None
                continue
            hits, s = probed
            m = ind.size
            k = (mix64(np.uint64(_SEED) + np.arange(s, dtype=np.uint64)) % np.uint64(m)).astype(np.int64)
            rows = np.searchsorted(ip, k, side="right") - 1
            assert int(hits) == np.count_nonzero((ind[k].astype(np.int64) >> shift) == (rows >> shift))
        n_got, lab = connected_components(csp.csr_matrix(csr))
        want_n, want = scipy_cc(csr)
        assert n_got == want_n
        np.testing.assert_array_equal(lab.get(), want)
        for dt in (np.int32, np.int64):
            edges = Edges(cupy.asarray(e.src.astype(dt)), cupy.asarray(e.dst.astype(dt)), n)
            assert _auto_method(edges) == expect_edges
            hits, s = chain_probe_edges(edges.src, edges.dst)
            k = (mix64(np.uint64(_SEED) + np.arange(s, dtype=np.uint64)) %
                 np.uint64(e.src.size)).astype(np.int64)
            assert int(hits) == np.count_nonzero(np.abs(e.dst[k].astype(np.int64) - e.src[k]) == 1)
            n_got, lab = connected_components(edges)
            assert n_got == want_n
            np.testing.assert_array_equal(lab.get(), want)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("method", ["auto", "ecl", "unionfind", "early", "kout", "sv"])
def test_return_info_on_gpu(method):
    """return_info=True on the GPU: the labels as without it, CUDA-event
    seconds for validation, each step of the method and the relabel."""
    import cupyx.scipy.sparse as csp

    e = gen.rmat(12, 8, seed=1)
    n = e.n_vertices
    csr = sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(n, n)).tocsr()
    want_n, want = scipy_cc(csr)
    got_n, got, info = connected_components(csp.csr_matrix(csr), method=method, return_info=True)
    assert got_n == want_n
    np.testing.assert_array_equal(got.get(), want)
    assert info["backend"] == "gpu" and info["method"] == ("ecl" if method == "auto" else method)
    assert info["method_phases"] and {"validate", "flatten", "scan", "relabel", "prepare",
                                      "label", *info["method_phases"]} == set(info["seconds"])
    assert all(t >= 0 for t in info["seconds"].values())


CHECK_DTYPES = [np.int32, np.int64, np.uint32, np.uint64]


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("ptype", CHECK_DTYPES)
@pytest.mark.parametrize("jtype", CHECK_DTYPES)
def test_fused_check_on_gpu(ptype, jtype):
    """meshccl._gpu.graph.check (the fused validation kernels) equals NumPy's
    reductions: m = 0, 1, 5, 3_000_001 and 5_000_003 (more than 4 x the
    grid's threads, also if a load took 16 bytes: the unrolled grid-stride
    steps and their tails), the extremes of the type among the first
    values, in the middle and at the very end, a decrease only at the very
    end of indptr, edge lists of one and of two dtypes, and arrays that are
    views one element into an allocation, whose element before the view
    must not count."""
    import cupy

    from meshccl._gpu import graph as gpu

    big = 2**63 - 1
    rng = np.random.default_rng(11)
    top, bottom = np.iinfo(jtype).max, np.iinfo(jtype).min
    threads = gpu._grid(5_000_003, gpu.BLOCK * gpu.CHECK_UNROLL,
                        _tuning.GRAPH_CHECK_BLOCKS_PER_SM)[0] * gpu.BLOCK
    assert 5_000_003 > 4 * threads * (16 // np.dtype(jtype).itemsize)

    def dev(x, offset):
        """x on the GPU, as a view `offset` elements into its allocation
        (the element before it: the type's largest value)."""
        if not offset:
            return cupy.asarray(x)
        return cupy.asarray(np.concatenate([np.array([np.iinfo(x.dtype).max], x.dtype), x]))[1:]

    for m in (0, 1, 5, 3_000_001, 5_000_003):
        a = rng.integers(0, min(top, 2**40), m, dtype=jtype, endpoint=True)
        b = rng.integers(0, min(top, 2**40), m, dtype=jtype, endpoint=True)
        if m > 3:
            a[m // 2], a[-1], b[-1] = top, bottom, bottom
        if m > 5:
            a[2], b[1] = bottom, top
        indptr = np.sort(rng.integers(0, 1000, m + 1)).astype(ptype)
        for offset in (0, 1):
            for end_drop in (False, True):
                ip = indptr.copy()
                if end_drop and m > 3:
                    ip[-1] = ip[-2] - 1 if ip[-2] else 0
                    assert ip[-1] < ip[-2] or ip[-2] == 0
                got = gpu.check(dev(ip, offset), dev(a, offset)).get()
                dec = bool(np.any(ip[1:] < ip[:-1]))
                lo, hi = (min(int(a.min()), big), min(int(a.max()), big)) if m else (big, -big - 1)
                want = [min(int(ip[0]), big), min(int(ip[-1]), big), -dec, lo, hi]
                assert got[:5].tolist() == want, (m, offset, end_drop)
            for other in (jtype, np.int64 if jtype != np.int64 else np.uint32):
                bo = b.astype(other)
                for oa, ob in ((offset, offset), (0, offset)):
                    got = gpu.check(None, dev(a, oa), dev(bo, ob)).get()
                    lo = min(int(a.min()), int(bo.min())) if m else big
                    hi = min(max(int(a.max()), int(bo.max())), big) if m else -big - 1
                    assert got[:5].tolist() == [0, 0, 0, lo, hi], (m, other, oa, ob)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_fused_validation_errors_on_gpu():
    """Invalid input of the types the fused kernel reads gets the CPU's exact
    messages: the small cases of test_graph_gpu_emulated.py, then large
    arrays (3_000_001 entries) with the bad value at the first and at the
    last position, in indices, src or only dst, indptr decreasing only at
    its very end, and indptr with a wild value in the middle (the methods
    that run beside the check read rows through a clamped copy: rows up to
    the end of indices, and a decreasing pair)."""
    import cupy


    def same_error(host):
        with pytest.raises(ValueError) as want:
            connected_components(host)
        if isinstance(host, Edges):
            dev = Edges(cupy.asarray(host.src), cupy.asarray(host.dst), host.n_vertices)
        else:
            dev = tuple(cupy.asarray(x) for x in host)
        # CSR for 'ecl', 'kout' and 'hb' (and 'auto' above 2 entries per
        # vertex) is checked beside the method: the kernels run on clamped
        # rows, skip values outside [0, n), and the error comes with the count
        for method in ("auto",) if isinstance(host, Edges) else ("auto", "ecl", "tiles", "kout", "hb"):
            with pytest.raises(ValueError, match=f"^{re.escape(str(want.value))}$"):
                connected_components(dev, method=method)
        cupy.cuda.Device().synchronize()  # no fault was left behind

    for indptr, indices in BAD_CSR:
        same_error((indptr, indices))
    for src, dst, n in BAD_EDGES:
        same_error(Edges(src, dst, n))
    m = 3_000_001
    rng = np.random.default_rng(3)
    for dtype in CHECK_DTYPES:
        n = 1000
        indptr = np.linspace(0, m, n + 1).astype(np.int64).astype(dtype)
        good = rng.integers(0, n, m).astype(dtype)
        for pos in (0, m - 1):
            for value in (n, np.iinfo(dtype).max) + ((-1,) if np.iinfo(dtype).min < 0 else ()):
                bad = good.copy()
                bad[pos] = value
                same_error((indptr, bad))
                same_error(Edges(bad, good, n))
                same_error(Edges(good, bad, n))       # only dst bad
        drop = indptr.copy()
        drop[-1] = drop[-2] - 1
        same_error((drop, good))
        for value in (np.iinfo(dtype).max, m + 7) + ((-5,) if np.iinfo(dtype).min < 0 else ()):
            wild = indptr.copy()
            wild[n // 2] = value
            same_error((wild, good))
        # the valid arrays pass and give SciPy's components
        got_n, got = connected_components((cupy.asarray(indptr), cupy.asarray(good)))
        want_n, want = connected_components((indptr, good))
        assert got_n == want_n
        np.testing.assert_array_equal(got.get(), want)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_fused_validation_small_on_gpu():
    """m = 0 and n = 0 / 1 through the fused validation, every supported dtype."""
    import cupy

    from meshccl.graph._input import as_graph as _as_graph

    for dtype in CHECK_DTYPES:
        def dev(*values):
            return cupy.asarray(np.array(values, dtype))

        assert _as_graph((dev(0), dev()))[::2] == ("csr", 0)
        assert _as_graph((dev(0, 0), dev()))[::2] == ("csr", 1)
        assert _as_graph(Edges(dev(), dev()))[::2] == ("edges", 0)
        assert _as_graph(Edges(dev(), dev(), 1))[::2] == ("edges", 1)
        assert _as_graph(Edges(dev(0, 4), dev(2, 2)))[::2] == ("edges", 5)  # n = hi + 1
        n, lab = connected_components((dev(0, 0), dev()))
        assert n == 1 and lab.get().tolist() == [0]
        n, lab = connected_components(Edges(dev(), dev()))
        assert n == 0 and lab.size == 0
        with pytest.raises(ValueError, match=r"indptr must end at len\(indices\) = 0, got 1"):
            connected_components((dev(0, 1), dev()))
        with pytest.raises(ValueError, match=r"src must lie in \[0, 0\), got 0 at position 0"):
            connected_components(Edges(dev(0), dev(0), 0))


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_fused_validation_carries_the_tile_count():
    """'auto' gets the tile probe's count from the fused validation's
    facts[5]: 'tiles' on an in-order path, int32 and int64 index arrays, the
    same count as a probe of its own; 'ecl' on the path shuffled."""
    import cupy
    import cupyx.scipy.sparse as csp

    from meshccl._gpu import graph as gpu
    from meshccl.graph import _auto_method

    e = gen.line(200_000)
    n = e.n_vertices
    csr = sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(n, n)).tocsr()
    for ip, ind in ((csr.indptr, csr.indices), (csr.indptr.astype(np.int64), csr.indices.astype(np.int64))):
        ip, ind = cupy.asarray(ip), cupy.asarray(ind)
        assert _auto_method((ip, ind)) == "tiles"
        facts = gpu.check(ip, ind)
        hits, s = gpu.tile_probe(ip, ind, n, out=facts[5:])
        alone, s2 = gpu.tile_probe(ip, ind, n)
        got = facts.get()
        assert s == s2 == 1024 and int(got[5]) == int(alone) == int(hits) >= 768
        assert got[:5].tolist() == [0, ind.size, 0, int(ind.min()), int(ind.max())]
    assert _auto_method(csp.csr_matrix(csr)) == "tiles"
    perm = np.random.default_rng(2).permutation(n)
    mixed = sp.coo_matrix((np.ones(e.src.size), (perm[e.src], perm[e.dst])), shape=(n, n)).tocsr()
    assert _auto_method(csp.csr_matrix(mixed)) == "ecl"


def _skewed_pair(n, seed):
    """Two symmetric CSR graphs (SciPy) with n vertices and the same number
    of stored entries, with rows for each of ECL-CC's thread, warp and block
    kernels: the second is the first with its vertices renumbered."""
    rng = np.random.default_rng(seed)
    hubs = rng.integers(0, n, 40)
    src = np.r_[rng.integers(0, n, 2 * n), np.repeat(hubs, rng.integers(20, 600, hubs.size))]
    dst = rng.integers(0, n, src.size)
    keep = rng.random(src.size) < 0.97
    src, dst = src[keep], dst[keep]
    perm = rng.permutation(n)

    def sym(s, d):
        g = sp.coo_matrix((np.ones(2 * s.size), (np.r_[s, d], np.r_[d, s])), shape=(n, n)).tocsr()
        g.sum_duplicates()
        return g

    a, b = sym(src, dst), sym(perm[src], perm[dst])
    assert a.nnz == b.nnz
    return a, b


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("method", ["auto", "ecl", "tiles", "kout", "hb"])
@pytest.mark.parametrize("itype", [np.int32, np.int64])
def test_graph_plans_on_gpu(method, itype):
    """Repeated calls on the same CuPy buffers replay a recorded CUDA graph
    (meshccl._gpu.graph_plan): SciPy's labels on every call, a fresh labels
    array each time; another graph written into the buffers in place is
    labelled as itself; invalid values written in place give the direct
    path's exact error (the graph's check runs on every replay and its
    kernels read through the clamped copy); calls on another stream get a
    plan of their own."""
    import cupy

    from meshccl._gpu import graph_plan
    from meshccl.graph import release_plans

    release_plans()
    a, b = _skewed_pair(60_000, 11)
    ip, ix = cupy.asarray(a.indptr.astype(itype)), cupy.asarray(a.indices.astype(itype))
    want_a, want_b = scipy_cc(a), scipy_cc(b)
    plans, _ = graph_plan._tables()
    outs = []
    for call in range(4):
        got_n, got = connected_components((ip, ix), method=method, symmetric=True)
        assert got_n == want_a[0]
        np.testing.assert_array_equal(got.get(), want_a[1])
        outs.append(got)
        assert len(plans) == (0 if call == 0 else 1)
    (plan,) = plans.values()
    assert plan, "recording the CUDA graph failed"
    outs[-1][:] = -7  # the caller's labels are its own
    got_n, got = connected_components((ip, ix), method=method, symmetric=True)
    np.testing.assert_array_equal(got.get(), want_a[1])
    np.testing.assert_array_equal(outs[1].get(), want_a[1])
    # another graph, written into the same buffers
    ip[...] = cupy.asarray(b.indptr.astype(itype))
    ix[...] = cupy.asarray(b.indices.astype(itype))
    got_n, got = connected_components((ip, ix), method=method, symmetric=True)
    assert got_n == want_b[0]
    np.testing.assert_array_equal(got.get(), want_b[1])
    # invalid values in place: the error of a first call, and no fault
    m = b.nnz
    edits = [("ix", 0, -1), ("ix", m - 1, 60_000), ("ip", 30_000, m + 5), ("ip", 60_000, m - 1)]
    if itype == np.int64:
        edits.append(("ip", 17, np.iinfo(np.int64).max))
    for arr, pos, value in edits:
        target = ix if arr == "ix" else ip
        old = target[pos].copy()
        target[pos] = value
        with pytest.raises(ValueError) as want_err:
            connected_components((ip.get(), ix.get()))
        with pytest.raises(ValueError, match=f"^{re.escape(str(want_err.value))}$"):
            connected_components((ip, ix), method=method, symmetric=True)
        cupy.cuda.Device().synchronize()
        target[pos] = old
    assert len(plans) == 1
    got_n, got = connected_components((ip, ix), method=method, symmetric=True)
    assert got_n == want_b[0]
    np.testing.assert_array_equal(got.get(), want_b[1])
    # another stream: another plan, the same labels
    with cupy.cuda.Stream(non_blocking=True) as s:
        for _ in range(3):
            got_n, got = connected_components((ip, ix), method=method, symmetric=True)
        s.synchronize()
    assert got_n == want_b[0] and len(plans) == 2
    np.testing.assert_array_equal(got.get(), want_b[1])
    release_plans()
    assert not plans


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_graph_plans_match_direct_path_on_generated_graphs():
    """Plans on (default) and off give the same labels on generated graphs,
    the first call (direct), the recording and the replays alike."""
    import cupy
    import cupyx.scipy.sparse as csp

    from meshccl._gpu import graph_plan
    from meshccl.graph import release_plans

    for e in (gen.rmat(14, 16, seed=5), gen.grid((300, 300)), gen.barabasi_albert(20_000, 6, seed=2),
              gen.disjoint(3, 5000, seed=1), gen.road_grid(400, seed=4)):
        n = e.n_vertices
        csr = sp.coo_matrix((np.ones(2 * e.src.size), (np.r_[e.src, e.dst], np.r_[e.dst, e.src])),
                            shape=(n, n)).tocsr()
        want_n, want = scipy_cc(csr)
        g = csp.csr_matrix(csr)
        for method in ("auto", "ecl", "tiles", "kout", "hb"):
            release_plans()
            for plans_on in (0, 2):
                with _tuning.override(GRAPH_PLAN_AFTER=plans_on):
                    for _ in range(3):
                        got_n, got = connected_components(g, method=method, symmetric=True)
                        assert got_n == want_n, (method, plans_on)
                        np.testing.assert_array_equal(got.get(), want,
                                                      err_msg=f"{method} {plans_on}")
                    if plans_on:
                        assert all(graph_plan._tables()[0].values())
    release_plans()
    cupy.get_default_memory_pool().free_all_blocks()


def test_dense_special_values(backend):
    """Dense input with inf, NaN, |a| <= 1e-8 and complex entries: the edges
    SciPy reads, on either backend (CuPy has no long double)."""
    import warnings

    from test_graph import _dense_cases

    for name, a in _dense_cases():
        if backend == "gpu" and a.dtype == np.longdouble:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            want_n, want = scipy_cc(a)
        check(backend, on(backend, a), want_n, want, "auto", name)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_input_on_a_second_gpu():
    """CuPy input on GPU 1 while GPU 0 is current runs on GPU 1 (labels
    there), leaves GPU 0 current, and gives the host's labels."""
    import cupy
    import cupyx.scipy.sparse as csp

    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    e = gen.rmat(12, 8, seed=3)
    n = e.n_vertices
    src, dst = _both_ways(np.asarray(e.src), np.asarray(e.dst))
    csr = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr()
    want_n, want = scipy_cc(csr)
    with cupy.cuda.Device(1):
        forms = {"csr": csp.csr_matrix(csr), "tuple": (cupy.asarray(csr.indptr), cupy.asarray(csr.indices)),
                 "edges": Edges(cupy.asarray(src), cupy.asarray(dst), n),
                 "dense": cupy.asarray(csr[:300, :300].toarray())}
    with cupy.cuda.Device(0):
        for name, g in forms.items():
            w_n, w = (want_n, want) if name != "dense" else scipy_cc(csr[:300, :300])
            for method in ("auto", "ecl", "tiles", "kout", "hb", "unionfind", "bfs-sample", "sv"):
                # timed once, then three calls: the third replays a recorded plan where one applies
                for info in (True, False, False, False):
                    got_n, got, *_ = connected_components(g, method=method, symmetric=True,
                                                          return_info=info)
                    assert cupy.cuda.Device().id == 0
                    assert got.device.id == 1, (name, method)
                    assert got_n == w_n, (name, method)
                    np.testing.assert_array_equal(got.get(), w, err_msg=f"{name} {method}")
            f = spanning_forest(g)
            assert f.src.device.id == 1 and f.src.size == (n if name != "dense" else 300) - w_n
    release_plans()


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("family", ["mesh2d_both", "road_both", "cycle", "chain", "mesh3d_both",
                                    "mesh2d_both_shuffled", "road_both_shuffled",
                                    "cycle_shuffled", "chain_shuffled", "rmat", "small_sccs"])
def test_tiles_on_long_diameter_families(family):
    """'tiles' and 'auto' on the long-diameter families of the graph
    benchmark (in order and shuffled) and two without locality, across many
    tiles (the default 8192 vertices and tiles of 32, so that most entries
    cross), stored one way and promised symmetric: SciPy's labels; 'auto'
    runs 'tiles' on the in-order families and not on the shuffled ones."""
    import cupyx.scipy.sparse as csp

    from meshccl import graph_families
    from meshccl.graph import _auto_method

    e = graph_families.FAMILIES[family](200_000, seed=2)
    n = e.n_vertices
    g = sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(n, n)).tocsr()
    sym = (g + g.T).tocsr()
    for graph, symmetric in ((g, False), (sym, True)):
        want_n, want = scipy_cc(graph)
        dev = csp.csr_matrix(graph)
        for shift in (13, 5):
            with _tuning.override(GRAPH_TILE_SHIFT=shift):
                for method in ("tiles", "auto"):
                    got_n, got = connected_components(dev, method=method, symmetric=symmetric)
                    assert got_n == want_n, (family, symmetric, shift, method)
                    np.testing.assert_array_equal(got.get(), want)
        auto = _auto_method(dev, symmetric=symmetric)
        if family in ("mesh2d_both", "road_both", "cycle", "chain"):
            assert auto == "tiles", (family, auto)
        elif family.endswith("_shuffled") or family in ("rmat", "small_sccs"):
            assert auto != "tiles", (family, auto)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_tiles_hub_rows_and_int64():
    """'tiles' with rows longer than a warp's 32 entries inside a tile
    (spread over the lanes), a hub whose row crosses every tile, self-loops
    and repeats, invalid-free int64 parents: SciPy's labels."""
    import cupy

    rng = np.random.default_rng(11)
    n = 40_000
    src = np.concatenate([np.zeros(5000, np.int64), rng.integers(0, n, 20_000),
                          np.arange(100, 140).repeat(50), np.arange(0, n, 7)])
    dst = np.concatenate([rng.integers(0, n, 5000), rng.integers(0, n, 20_000) // 3,
                          np.arange(140, 180).repeat(50) + rng.integers(0, 40, 2000),
                          np.arange(0, n, 7)])
    g = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr()
    want_n, want = scipy_cc(g)
    for shift in (13, 9, 5):
        with _tuning.override(GRAPH_TILE_SHIFT=shift):
            form = (cupy.asarray(g.indptr), cupy.asarray(g.indices))
            got_n, got = connected_components(form, method="tiles")
            assert got_n == want_n
            np.testing.assert_array_equal(got.get(), want)
            from meshccl._gpu.graph import components
            count, labels = components("csr", (cupy.asarray(g.indptr.astype(np.int64)),
                                               cupy.asarray(g.indices.astype(np.int64))), n,
                                       method="tiles", index_dtype=cupy.int64)
            assert int(count) == want_n and labels.dtype == cupy.int64
            np.testing.assert_array_equal(labels.get(), want)
