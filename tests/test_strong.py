"""Strongly connected components (connection='strong'): the CPU against
SciPy -- the same labels, value for value, for every input format -- and
the GPU against SciPy's partition (marked gpu)."""

import contextlib
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import connected_components as scipy_cc

from conftest import HAVE_GPU, examples
from test_graph_gpu_emulated import emulated, tune  # noqa: F401  (fixtures: the stand-in cupy, overrides)
from meshccl import _tuning, graph_families, graph_generators as gen
from meshccl.graph import Edges, connected_components


@pytest.fixture(autouse=True)
def _gpu_steps_on_small_graphs():
    """The GPU's own steps on these tests' small graphs (the route of small
    graphs to the host is tested by its own tests, which set it back)."""
    with _tuning.override(STRONG_HOST_SMALL=0, STRONG_HOST_SPARSE=0):
        yield


def strong(g, **kw):
    return connected_components(g, directed=True, connection="strong", **kw)


def scipy_strong(g):
    return scipy_cc(g, directed=True, connection="strong")


def coo(src, dst, n):
    return sp.coo_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))


def canonical(labels):
    """Labels renumbered 0.. in order of each component's smallest vertex."""
    labels = np.asarray(labels)
    if not labels.size:
        return labels
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[inverse.ravel()]


def check_exact(g, want=None):
    """meshccl's CPU result is SciPy's, value for value (want: SciPy's
    result on ``g`` when SciPy cannot take ``g`` itself)."""
    want = scipy_strong(g) if want is None else want
    got = strong(g)
    assert got[0] == want[0]
    assert got[1].dtype == np.int32
    np.testing.assert_array_equal(got[1], want[1])
    return got


def random_graph(n, m, rng, loops=True):
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    if not loops:
        keep = src != dst
        src, dst = src[keep], dst[keep]
    return src, dst


FORMATS = ["csr", "csc", "coo", "lil", "dok", "bsr", "dia", "csr_array", "coo_array",
           "dense", "matrix"]


def as_format(m, fmt):
    if fmt == "dense":
        return m.toarray()
    if fmt == "matrix":
        return m.todense()
    if fmt.endswith("_array"):
        return getattr(sp, fmt)(m)
    return m.asformat(fmt)


@pytest.mark.filterwarnings("ignore:Constructing a DIA matrix")
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_scipy_format_exact(fmt):
    rng = np.random.default_rng(11)
    for n, m in ((1, 1), (7, 12), (60, 90), (200, 500)):
        src, dst = random_graph(n, m, rng)
        check_exact(as_format(coo(src, dst, n).tocsr(), fmt))


def test_random_graphs_exact():
    """Sparse and dense random graphs, with self-loops and duplicates."""
    rng = np.random.default_rng(5)
    for n, deg in ((50, 0.5), (50, 1.0), (300, 1.5), (300, 3), (2000, 1.2), (2000, 8), (40, 30)):
        src, dst = random_graph(n, int(deg * n), rng)
        g = coo(src, dst, n)
        check_exact(g)        # duplicates summed by SciPy
        check_exact(g.tocsr())
        check_exact(g.tocsc())
        # the same graph as an edge list and as a CSR tuple
        want = scipy_strong(g)
        check_exact(Edges(src, dst, n), want)
        c = g.tocsr()
        check_exact((c.indptr, c.indices), want)


def test_unsorted_csr_rows_exact():
    """SciPy walks a CSR's rows as stored: so does meshccl."""
    rng = np.random.default_rng(8)
    for n in (30, 400):
        src, dst = random_graph(n, 3 * n, rng)
        key = np.unique(src * n + dst)
        key = key[rng.permutation(key.size)]   # no duplicates, rows in random order
        s, d = np.divmod(key, n)
        order = np.argsort(s, kind="stable")
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(s, minlength=n), out=indptr[1:])
        g = sp.csr_matrix((np.ones(key.size), d[order], indptr), shape=(n, n))
        assert not g.has_sorted_indices
        check_exact(g)


def _unsorted_csr(n, m, rng, dtype):
    """A random CSR of ``dtype`` with every row's entries shuffled (self-loops
    kept; no repeats, on which SciPy 1.17's search may never return)."""
    src, dst = np.divmod(np.unique(np.ravel_multi_index(random_graph(n, m, rng), (n, n))), n)
    order = np.lexsort((rng.random(src.size), src))
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return sp.csr_matrix((np.ones(src.size, dtype), dst[order], indptr), shape=(n, n))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64, np.int8, bool])
def test_unsorted_rows_every_dtype_exact(dtype):
    """Issue 57's example and random CSRs with unsorted rows, of every data
    type, as CSR, CSC, COO, a CSR array and an (indptr, indices) tuple:
    SciPy's labels value for value (the tuple as SciPy numbers a float64
    CSR of the same arrays)."""
    example = sp.csr_matrix((np.ones(2, dtype), [2, 1], [0, 2, 2, 2]), shape=(3, 3))
    rng = np.random.default_rng(17)
    for g in [example] + [_unsorted_csr(n, m, rng, dtype) for n, m in ((8, 20), (300, 700))]:
        for form in (g, g.tocsc(), g.tocoo(), sp.csr_array(g)):
            check_exact(form)
        as_float = sp.csr_matrix((np.ones(g.indices.size), g.indices, g.indptr), shape=g.shape)
        check_exact((g.indptr, g.indices), scipy_strong(as_float))
        check_exact((g.indptr.astype(np.int32), g.indices.astype(np.int64)),
                    scipy_strong(as_float))


def test_duplicate_entries_in_a_csr_row():
    """A neighbour stored twice, apart (0 -> [1, 2, 1]): moved to the top of
    the search stack as SciPy moves it.  Stored twice in a row, SciPy 1.17
    never returns (its stack links the vertex to itself); meshccl reads it
    as stored once, which gives SciPy's labels for that CSR."""
    apart = sp.csr_matrix((np.ones(5), [1, 2, 1, 0, 0], [0, 3, 4, 5]), shape=(3, 3))
    check_exact(apart)
    twice = sp.csr_matrix((np.ones(5), [2, 1, 1, 0, 0], [0, 3, 4, 5]), shape=(3, 3))
    once = sp.csr_matrix((np.ones(4), [2, 1, 0, 0], [0, 2, 3, 4]), shape=(3, 3))
    check_exact(twice, scipy_strong(once))
    check_exact((twice.indptr, twice.indices), scipy_strong(once))


def test_small_cases():
    n, labels = strong(sp.csr_matrix((0, 0)))
    assert n == 0 and labels.shape == (0,) and labels.dtype == np.int32
    for g in (np.zeros((1, 1)), np.ones((1, 1)), np.zeros((4, 4)), np.eye(4), np.ones((4, 4))):
        check_exact(g)
    assert strong(Edges(np.zeros(0, int), np.zeros(0, int), 3))[1].tolist() == [0, 1, 2]
    assert strong(np.ones((3, 3)), return_labels=False) == 1


def test_long_cycle_path_and_chain_of_components():
    """No recursion: a cycle and a path of 200 000 vertices; components in
    a chain (each a cycle, linked one way), numbered forwards and backwards."""
    n = 200_000
    v = np.arange(n)
    check_exact(coo(v, (v + 1) % n, n))                 # one cycle
    check_exact(coo(v[:-1], v[1:], n))                  # a path: a DAG of n components
    check_exact(coo(v[1:], v[:-1], n))                  # the path against the numbering
    size, k = 5, 2000
    src, dst = [], []
    for c in range(k):
        base = c * size
        ring = base + np.arange(size)
        src += [ring, [base]]
        dst += [np.roll(ring, -1), [(base + size) % (size * k)] if c + 1 < k else [base]]
    src, dst = np.concatenate(src), np.concatenate(dst)
    check_exact(coo(src, dst, size * k))
    perm = np.random.default_rng(1).permutation(size * k)   # the same, shuffled
    got = check_exact(coo(perm[src], perm[dst], size * k))
    assert got[0] == k


def test_dag_and_generated_graphs():
    rng = np.random.default_rng(3)
    n = 3000
    src, dst = random_graph(n, 4 * n, rng, loops=False)
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    got = check_exact(coo(lo, hi, n))                   # a DAG: every vertex alone
    assert got[0] == n
    for e in (gen.rmat(10, seed=2), gen.road_directed(40, seed=3), gen.random_edges(2000, 6000)):
        check_exact(e, scipy_strong(coo(e.src, e.dst, e.n_vertices)))


@settings(max_examples=examples(200))
@given(st.integers(1, 14).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=40))))
def test_hypothesis_small_graphs(case):
    n, edges = case
    src = np.array([e[0] for e in edges], np.int64)
    dst = np.array([e[1] for e in edges], np.int64)
    g = coo(src, dst, n)
    want = check_exact(g)
    check_exact(Edges(src, dst, n), want)
    check_exact(g.toarray(), want)
    check_exact(g.tocsc(), want)


def test_undirected_and_symmetric_give_weak():
    rng = np.random.default_rng(2)
    n = 500
    src, dst = random_graph(n, 600, rng)
    g = coo(src, dst, n).tocsr()
    weak = connected_components(g)
    for got in (connected_components(g, directed=False, connection="strong"),
                scipy_cc(g, directed=False, connection="strong")):
        assert got[0] == weak[0]
        np.testing.assert_array_equal(got[1], weak[1])
    sym = (g + g.T).tocsr()   # strong = weak there, with SciPy's strong numbering
    check_exact(sym)
    got = strong(sym, symmetric=True, method="ecl")
    want = scipy_strong(sym)
    assert got[0] == want[0]
    np.testing.assert_array_equal(got[1], want[1])


def test_options_and_errors():
    g = sp.csr_matrix(np.array([[0, 1], [1, 0]]))
    for name, value in (("method", "ecl"), ("compression", "halving"), ("max_iterations", 3)):
        with pytest.raises(ValueError, match=f"{name} applies to weak components only.*"
                                             f"got {name}={value!r}"):
            strong(g, **{name: value})
    assert strong(g, method="auto", cpu_threads=0)[0] == 1
    n, labels, info = strong(g, return_info=True)
    assert (n, info["method"], info["backend"]) == (1, "tarjan", "cpu")
    with pytest.raises(ValueError, match="indices must lie in \\[0, 2\\), got 5"):
        strong((np.array([0, 1, 1]), np.array([5])))
    with pytest.raises(ValueError, match="csgraph must be a square"):
        strong(np.zeros((2, 3)))


# ---------------------------------------------------------------------------
# GPU: the partition of SciPy, numbered by each component's smallest vertex

def check_gpu(g_host, g_dev=None):
    """The GPU's strong components of g_dev (default: g_host on the device
    as a cupyx CSR) against SciPy's on g_host."""
    import cupy
    import cupyx.scipy.sparse as csp

    want = scipy_strong(g_host)
    if g_dev is None:
        g_dev = csp.csr_matrix(sp.csr_matrix(g_host))
    n, labels = strong(g_dev)
    assert isinstance(labels, cupy.ndarray) and labels.dtype == cupy.int32
    assert n == want[0]
    np.testing.assert_array_equal(labels.get(), canonical(want[1]))
    return n


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "dense", "edges", "tuple", "int64"])
def test_gpu_every_input(fmt):
    import cupy
    import cupyx.scipy.sparse as csp

    rng = np.random.default_rng(4)
    for n, m in ((1, 0), (1, 1), (9, 14), (300, 450), (3000, 9000)):
        src, dst = random_graph(n, m, rng)
        h = coo(src, dst, n).tocsr()
        dev = {"csr": lambda: csp.csr_matrix(h), "csc": lambda: csp.csc_matrix(h.tocsc()),
               "coo": lambda: csp.coo_matrix(coo(src, dst, n)),
               "dense": lambda: cupy.asarray(h.toarray()),
               "edges": lambda: Edges(cupy.asarray(src), cupy.asarray(dst), n),
               "tuple": lambda: (cupy.asarray(h.indptr), cupy.asarray(h.indices)),
               "int64": lambda: (cupy.asarray(h.indptr, cupy.int64),
                                 cupy.asarray(h.indices, cupy.int64))}[fmt]()
        check_gpu(h, dev)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_gpu_unsorted_rows():
    """CuPy CSRs with unsorted rows (float32 and float64) and (indptr,
    indices) tuples of int32 and int64 on the device: SciPy's partition,
    numbered by smallest vertex."""
    import cupy
    import cupyx.scipy.sparse as csp

    rng = np.random.default_rng(18)
    for dtype in (np.float32, np.float64):
        example = sp.csr_matrix((np.ones(2, dtype), [2, 1], [0, 2, 2, 2]), shape=(3, 3))
        for g in [example] + [_unsorted_csr(n, m, rng, dtype) for n, m in ((8, 20), (3000, 7000))]:
            check_gpu(g, csp.csr_matrix(g))
            for t in (np.int32, np.int64):
                check_gpu(g, (cupy.asarray(g.indptr, t), cupy.asarray(g.indices, t)))


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_gpu_generated_graphs():
    """R-MAT (skewed, a giant component and many single vertices), road-like
    grids with one-way streets (long searches), a random graph that is one
    giant component, DAGs, long cycles and chains of components."""
    for scale in (8, 12, 16):
        e = gen.rmat(scale, seed=scale)
        check_gpu(coo(e.src, e.dst, e.n_vertices))
    for side, one_way in ((30, 0.1), (200, 0.1), (200, 0.5), (300, 0.02)):
        e = gen.road_directed(side, one_way=one_way, seed=side)
        check_gpu(coo(e.src, e.dst, e.n_vertices))
    e = gen.random_edges(1 << 16, 16 << 16, seed=9)
    assert check_gpu(coo(e.src, e.dst, e.n_vertices)) < 10   # one giant component
    n = 20_000
    v = np.arange(n)
    check_gpu(coo(v, (v + 1) % n, n))
    check_gpu(coo(v[:-1], v[1:], n))
    check_gpu(coo(v[1:], v[:-1], n))
    rng = np.random.default_rng(6)
    src, dst = random_graph(n, 3 * n, rng, loops=False)
    check_gpu(coo(np.minimum(src, dst), np.maximum(src, dst), n))
    size, k = 4, 500
    ring = np.arange(size * k)
    nxt = np.where(ring % size == size - 1, ring - size + 1, ring + 1)
    links = np.arange(0, size * (k - 1), size)
    for perm in (np.arange(size * k), np.random.default_rng(2).permutation(size * k)):
        src = perm[np.concatenate([ring, links])]
        dst = perm[np.concatenate([nxt, links + size])]
        assert check_gpu(coo(src, dst, size * k)) == k


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_gpu_adversarial_graphs():
    """Hubs whose rows span many search chunks (both ways, as pivot and as
    reached vertices), many 2-cycles, self-loops, isolated vertices, a big
    cycle, long chains both ways, a large road-like grid, R-MAT 18."""
    rng = np.random.default_rng(44)
    # a star of 2-cycles through hub 0 (100k spokes: 391 chunks each way),
    # second-level hubs reached from it, a hub that only reaches out
    n = 100_001
    spokes = np.arange(1, n)
    sub = rng.choice(spokes, 3000, replace=False)
    src = np.concatenate([np.zeros(n - 1, int), spokes, np.repeat(sub[:3], 1000),
                          np.full(n - 1, n)])
    dst = np.concatenate([spokes, np.zeros(n - 1, int), sub, spokes])
    check_gpu(coo(src, dst, n + 1))
    # hubs linked one-way in a chain (several giant-ish pivots' components)
    hubs = 6
    size = 20_000
    v = np.arange(hubs * size)
    centre = v - v % size
    src = np.concatenate([centre, v, centre[size::size][:-1]])
    dst = np.concatenate([v, centre, centre[2 * size::size]])
    check_gpu(coo(src, dst, hubs * size))
    # many 2-cycles, each pair linked to the next one way; every vertex a self-loop
    n = 200_000
    v = np.arange(n)
    pair = v ^ 1
    nxt = np.arange(0, n - 2, 2)
    src = np.concatenate([v, v, nxt])
    dst = np.concatenate([pair, v, nxt + 2])
    assert check_gpu(coo(src, dst, n)) == n // 2
    # self-loops and 2-cycles among isolated vertices, numbered at random
    n = 300_000
    perm = rng.permutation(n)
    k = 50_000
    src = perm[np.concatenate([np.arange(k), np.arange(0, k, 2), np.arange(1, k, 2)])]
    dst = perm[np.concatenate([np.arange(k), np.arange(1, k, 2), np.arange(0, k, 2)])]
    check_gpu(coo(src, dst, n))
    # one big cycle, and chains both ways
    n = 50_000
    v = rng.permutation(n)
    assert check_gpu(coo(v, np.roll(v, -1), n)) == 1
    check_gpu(coo(v[:-1], v[1:], n))
    check_gpu(coo(np.arange(1, n), np.arange(n - 1), n))
    # a road-like grid large enough for thousands of search levels
    e = gen.road_directed(700, one_way=0.1, seed=3)
    check_gpu(coo(e.src, e.dst, e.n_vertices))
    # R-MAT 18: hubs of thousands of entries, most vertices trimmed
    e = gen.rmat(18, seed=18)
    check_gpu(coo(e.src, e.dst, e.n_vertices))
    # int64 neighbours and an edge list of the same R-MAT
    import cupy

    h = coo(e.src, e.dst, e.n_vertices).tocsr()
    check_gpu(h, (cupy.asarray(h.indptr, cupy.int64), cupy.asarray(h.indices, cupy.int64)))
    check_gpu(h, Edges(cupy.asarray(e.src), cupy.asarray(e.dst), e.n_vertices))


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@settings(max_examples=examples(200))
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=120))))
def test_gpu_hypothesis_small_graphs(case):
    """Small graphs of every shape, as an edge list and as a CSR: SciPy's
    partition (the in-place kernels race most on few vertices)."""
    import cupy

    n, edges = case
    src = np.array([e[0] for e in edges], np.int64)
    dst = np.array([e[1] for e in edges], np.int64)
    h = coo(src, dst, n).tocsr()
    check_gpu(h)
    check_gpu(h, Edges(cupy.asarray(src), cupy.asarray(dst), n))
    assert strong(Edges(cupy.asarray(src), cupy.asarray(dst), n),
                  return_labels=False) == scipy_strong(h)[0]


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_gpu_info_and_symmetric():
    import cupyx.scipy.sparse as csp

    e = gen.rmat(10, seed=1)
    h = coo(e.src, e.dst, e.n_vertices).tocsr()
    n, labels, info = strong(csp.csr_matrix(h), return_info=True)
    assert info["method"] == "fwbw-colour" and info["backend"] == "gpu"
    # (colouring runs only where vertices are left after the first steps)
    assert {"transpose", "trim", "fwbw", "flatten"} <= set(info["seconds"])
    assert set(info["method_phases"]) <= set(info["seconds"]) | {"smallest"}
    sym = (h + h.T).tocsr()
    got = strong(csp.csr_matrix(sym), symmetric=True)
    want = scipy_strong(sym)
    assert got[0] == want[0]
    np.testing.assert_array_equal(got[1].get(), want[1])


@pytest.mark.parametrize("family", sorted(graph_families.FAMILIES))
def test_families_exact(family):
    """Every family of the graph benchmark, small: SciPy's labels."""
    for m, seed in ((50, 1), (3000, 2)):
        e = graph_families.FAMILIES[family](m, seed=seed)
        check_exact(coo(e.src, e.dst, e.n_vertices).tocsr())


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("family", sorted(graph_families.FAMILIES))
@pytest.mark.parametrize("setting", ["default", "gpu only", "long rows", "hand over", "no paths",
                                     "peel"])
def test_gpu_families(family, setting):
    """Every family of the graph benchmark on the GPU against SciPy's
    partition: as 'auto' runs, with the GPU's steps to the end, with short
    rows taken as long ones, handed to the host at the first check,
    without the contraction of paths, and with every trim finished by the
    peel after its first pass; a larger size as 'auto' runs and peeled."""
    from meshccl import _tuning

    values = {"default": {}, "gpu only": {"STRONG_HOST_MIN_PASSES": 10**9},
              "long rows": {"STRONG_HOST_MIN_PASSES": 10**9, "STRONG_LONG_ROW": 4},
              "hand over": {"STRONG_HOST_MIN_PASSES": 0, "STRONG_HOST_RATE": 10**9},
              "no paths": {"STRONG_PATH_SHARE": 0, "STRONG_HOST_MIN_PASSES": 10**9},
              "peel": {"STRONG_PEEL_AFTER": 0, "STRONG_PATH_SHARE": 0,
                       "STRONG_HOST_MIN_PASSES": 10**9}}[setting]
    sizes = ((60, 1), (5000, 2)) + (((200_000, 3),) if setting in ("default", "peel") else ())
    with _tuning.override(**values):
        for m, seed in sizes:
            e = graph_families.FAMILIES[family](m, seed=seed)
            check_gpu(coo(e.src, e.dst, e.n_vertices))


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("family", ["rmat", "cycle", "small_sccs", "multi", "road_both"])
def test_gpu_small_graphs_on_host(family):
    """Graphs of at most STRONG_HOST_SMALL vertices + edges, as CuPy CSR,
    CSC, COO, (indptr, indices) of two integer types and edge lists, are
    solved whole by the host's search: SciPy's partition, a CuPy result of
    the GPU's label type, the one step 'host'; an index out of range is
    the GPU path's error."""
    import cupy
    import cupyx.scipy.sparse as csp

    for m, seed in ((60, 1), (5000, 2), (40_000, 3)):
        e = graph_families.FAMILIES[family](m, seed=seed)
        g = coo(e.src, e.dst, e.n_vertices).tocsr()
        want = canonical(scipy_strong(g)[1])
        d = cupy.asarray(g.indices)
        with _tuning.override(STRONG_HOST_SMALL=1 << 17):
            for x in (csp.csr_matrix(g), csp.csc_matrix(g), csp.coo_matrix(g.tocoo()),
                      (cupy.asarray(g.indptr, np.int64), d.astype(np.uint16)),
                      Edges(cupy.asarray(e.src), cupy.asarray(e.dst), e.n_vertices)):
                count, labels, info = strong(x, return_info=True)
                assert isinstance(labels, cupy.ndarray) and labels.dtype == np.int32
                assert info["method_phases"] == ["host"]
                assert info["host_vertices"] == e.n_vertices
                assert count == want.max() + 1
                np.testing.assert_array_equal(labels.get(), want)
            bad = d.copy()
            bad[-1] = e.n_vertices  # out of range: the GPU path's error, naming the array
            with pytest.raises(ValueError, match="indices"):
                strong((cupy.asarray(g.indptr), bad))


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_gpu_paths():
    """Graphs of (1,1) paths (pure cycles, a path back to its start, paths
    between hubs both ways, shuffled, reversed) against SciPy's partition,
    with the GPU's steps to the end and with the contraction off."""
    from meshccl import _tuning

    for src, dst, n in _path_cases(np.random.default_rng(5)):
        for values in ({"STRONG_HOST_MIN_PASSES": 10**9}, {"STRONG_PATH_SHARE": 0}):
            with _tuning.override(**values):
                check_gpu(coo(src, dst, n))


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("family", ["chain", "chain_shuffled", "cycle", "cycle_shuffled"])
def test_gpu_long_paths_contracted(family):
    """A chain of 10**6 vertices (sorted or shuffled, either direction) is
    contracted to its two ends and finished in a few passes without the
    host; a cycle with chords numbered along it solved as the quotient by
    the cycles of first out-neighbours, reversed or shuffled contracted to
    its chords' ends.  SciPy's partition."""
    import cupyx.scipy.sparse as csp

    e = graph_families.FAMILIES[family](1_000_000, seed=6)
    g = coo(e.src, e.dst, e.n_vertices).tocsr()
    for graph in (g, g.T.tocsr()):
        want = scipy_strong(graph)
        count, labels, info = strong(csp.csr_matrix(graph), return_info=True)
        assert count == want[0]
        np.testing.assert_array_equal(labels.get(), canonical(want[1]))
        assert "paths" in info["method_phases"]
        if family.startswith("chain"):
            assert info["path_vertices"] == e.n_vertices - 2
            assert info["passes"] <= 8 and info["host_vertices"] == 0
        elif family == "cycle" and graph is g:
            # numbered along the cycle, each vertex's first out-neighbour its
            # next: the cycles of those make a few pieces, and nothing is
            # contracted (reversed or shuffled, most vertices stay off them)
            assert "pieces" in info["method_phases"] and info["pieces"] < 1000
            assert info["path_vertices"] < 1000
        else:
            assert info["path_vertices"] > e.n_vertices // 2


def _mutual_cases(rng):
    """Graphs with edges stored both ways among one-way ones: road-like
    grids (sorted and shuffled, most streets two-way), a mesh stored both
    ways with some edges dropped one way, a chain of 2-cycles, pairs of
    2-cycles joined one way, repeated edges and self-loops, hubs; and
    graphs of long cycles (a cycle with chords, sorted and shuffled, a
    one-way grid) for the pieces made of cycles."""
    cases = []
    for name in ("road_both", "road_both_shuffled", "chain_of_cycles", "multi", "hubs_out",
                 "small_sccs", "cycle", "cycle_shuffled", "road_one_way"):
        e = graph_families.FAMILIES[name](2000, seed=4)
        cases.append((e.src, e.dst, e.n_vertices))
    e = graph_families.FAMILIES["mesh2d_both"](2000, seed=4)
    keep = rng.random(e.src.size) > 0.15
    cases.append((e.src[keep], e.dst[keep], e.n_vertices))
    e = gen.road_directed(20, one_way=0.3, seed=2)
    cases.append((e.src, e.dst, e.n_vertices))
    # 2-cycles a -> b -> a, each joined one way to the next, and back from
    # the last to the first: one component of pieces
    k = 40
    a, b = np.arange(0, 2 * k, 2), np.arange(1, 2 * k, 2)
    ring = np.roll(a, -1)
    cases.append((np.r_[a, b, b], np.r_[b, a, ring], 2 * k))
    cases.append((np.r_[a, b, b[:-1]], np.r_[b, a, ring[:-1]], 2 * k))
    return cases


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_gpu_mutual_pieces():
    """The quotient by the pieces of mutual edges or of cycles, taken at
    the first read of the search (and with rows of more than 2 entries
    skipped): SciPy's partition; a road-like grid and a cycle with chords
    of 10**6 edges take it as 'auto' runs, with far fewer pieces than
    vertices and no host."""
    import cupyx.scipy.sparse as csp

    from meshccl import _tuning

    rng = np.random.default_rng(9)
    for values in ({"STRONG_MUTUAL_LEVELS": 0},
                   {"STRONG_MUTUAL_LEVELS": 0, "STRONG_SYMMETRIC_MAX_ROW": 2},
                   {"STRONG_MUTUAL_LEVELS": 0, "STRONG_PATH_SHARE": 0,
                    "STRONG_HOST_MIN_PASSES": 10**9}):
        with _tuning.override(**values):
            for src, dst, n in _mutual_cases(rng):
                check_gpu(coo(src, dst, n))
    for name in ("road_both", "road_both_shuffled", "cycle", "cycle_shuffled"):
        e = graph_families.FAMILIES[name](1_000_000, seed=8)
        g = coo(e.src, e.dst, e.n_vertices).tocsr()
        want = scipy_strong(g)
        count, labels, info = strong(csp.csr_matrix(g), return_info=True)
        assert count == want[0]
        np.testing.assert_array_equal(labels.get(), canonical(want[1]))
        if name != "cycle_shuffled":  # (its first entries scatter: not one cycle)
            assert "pieces" in info["method_phases"] and info["host_vertices"] == 0
            assert info["pieces"] * 10 < e.n_vertices


# ---------------------------------------------------------------------------
# The GPU path's host side without a GPU: tests/test_graph_gpu_emulated.py's
# stand-in cupy, and serial emulations of kernels/strong.cu (one valid
# interleaving of each kernel; the real ones run in the gpu tests above).
# Every launch is checked against the kernel's C signature.

PEELED = [0]  # launches of the emulated peel


def _scc_emulation(expr):
    from meshccl._gpu.strong import CHUNK
    from test_graph_gpu_emulated import check_args, parse

    name, t = parse(expr)
    I, J = ("ptr", t[0]), ("ptr", t[-1])
    L, U = ("ptr", "long long"), ("ptr", "unsigned")
    n_ = ("val", t[0])
    flag = ("ptr", "int")

    def live(rep, w):
        return rep[w] < 0

    u64 = ("val", "unsigned long long")

    def enqueue(v, deg, qv, qk, cnt, d):
        for k in range(-(-int(deg) // CHUNK)):
            at = int(cnt[d])
            assert at < len(qv), "a search queue overflows"
            qv[at], qk[at] = v, k
            cnt[d] += 1

    def prio(v, a, b, n):
        return (int(a) * v + int(b)) % n

    u64p = ("ptr", "unsigned long long")
    u8p = ("ptr", "unsigned char")
    i64 = ("val", "long long")

    if name == "meshccl_scc_trim":
        sig = [L, J, L, J, I, n_, flag, u64p]

        def run(fp, fi, rp, ri, rep, n, changed, removed):
            for v in range(n):
                if rep[v] >= 0:
                    continue
                out = any(w != v and live(rep, w) for w in fi[fp[v]:fp[v + 1]])
                inn = any(w != v and live(rep, w) for w in ri[rp[v]:rp[v + 1]])
                if not out or not inn:
                    rep[v] = v
                    changed[0] = 1
                    removed[0] += 1
    elif name == "meshccl_scc_peel_init":
        sig = [L, J, L, J, I, n_, u64p, ("ptr", "long long"), u64p]

        def run(fp, fi, rp, ri, rep, n, word, queue, ctl):
            for v in range(n):
                if rep[v] >= 0:
                    word[v] = (1 << 63) | (1 << 31)  # never counted down to 0
                    continue
                out = sum(w != v and live(rep, w) for w in fi[fp[v]:fp[v + 1]])
                inn = sum(w != v and live(rep, w) for w in ri[rp[v]:rp[v + 1]])
                word[v] = (inn << 32) | out
                if out == 0 or inn == 0:
                    queue[int(ctl[0])] = 2 * v + (0 if inn == 0 else 1)
                    ctl[0] += 1
                    ctl[32] += 1
    elif name == "meshccl_scc_peel":
        sig = [L, J, L, J, I, u64p, ("ptr", "long long"), i64, u64p]

        def release(word, w, side):
            d = 1 if side else 1 << 32
            old = int(word[w])
            assert old & (0xffffffff if side else 0xffffffff << 32), "a count goes below 0"
            now = old - d
            word[w] = now
            was_free = (old >> 32) == 0 or (old & 0xffffffff) == 0
            is_free = (now & 0xffffffff) == 0 if side else (now >> 32) == 0
            return 2 * w + side if not was_free and is_free else -1

        def run(fp, fi, rp, ri, rep, word, queue, capacity, ctl):
            PEELED[0] += 1
            assert len(ctl) == 64, "the peel's counters are words 0, 16, 32 and 48 of 64"
            assert capacity == len(queue) == len(rep)
            assert (np.asarray(queue)[int(ctl[0]):] == -1).all(), "the queue is not filled with -1"
            # one valid interleaving: one thread, first queued first taken,
            # following the first vertex each one claims
            while ctl[16] < ctl[0]:
                x = int(queue[int(ctl[16])])
                ctl[16] += 1
                while x >= 0:
                    v, side = x >> 1, x & 1
                    assert rep[v] < 0, "a vertex with a component peeled"
                    rep[v] = v
                    ctl[48] += 1
                    ptr, idx = (rp, ri) if side else (fp, fi)
                    x = -1
                    for w in idx[ptr[v]:ptr[v + 1]]:
                        if w == v:
                            continue
                        got = release(word, int(w), side)
                        if got < 0:
                            continue
                        if x < 0 and ptr[v + 1] - ptr[v] <= 32:
                            x = got
                        else:
                            assert queue[int(ctl[0])] == -1, "a queue slot written twice"
                            queue[int(ctl[0])] = got
                            ctl[0] += 1
                            ctl[32] += 1
                    if x < 0:
                        ctl[32] -= 1
            assert ctl[32] == 0, "vertices left pending"
    elif name == "meshccl_scc_score":
        sig = [L, L, I, n_, L, U]

        def run(fp, rp, rep, n, score, mark):
            for v in range(n):
                score[v] = -1 if rep[v] >= 0 else (fp[v + 1] - fp[v] + 1) * (rp[v + 1] - rp[v] + 1)
                mark[v] = 0 if rep[v] < 0 else 3
    elif name == "meshccl_scc_seed":
        sig = [L, L, L, I, U, I, U, I, U, ("ptr", "unsigned long long")]

        def run(fp, rp, pivot, rep, mark, qfv, qfk, qbv, qbk, counts):
            p = int(pivot[0])
            counts[0] = counts[1] = 0
            if rep[p] < 0:
                mark[p] = 3
                enqueue(p, fp[p + 1] - fp[p], qfv, qfk, counts, 0)
                enqueue(p, rp[p + 1] - rp[p], qbv, qbk, counts, 1)
    elif name == "meshccl_scc_expand":
        sig = [L, J, L, J, U, I, U, I, U, u64p, I, U, I, U, u64p, u64p, u64p]

        def run(fp, fi, rp, ri, mark, qifv, qifk, qibv, qibk, nin, qofv, qofk, qobv, qobk, nout,
                nzero, reached):
            assert not np.asarray(nout).any(), "counting into a slot that is not zero"
            nzero[:] = 0
            sides = ((fp, fi, qifv, qifk, qofv, qofk, 1), (rp, ri, qibv, qibk, qobv, qobk, 2))
            for d, (ptr, idx, qiv, qik, qov, qok, bit) in enumerate(sides):
                for i in range(int(nin[d])):
                    v, k = int(qiv[i]), int(qik[i])
                    b = ptr[v] + k * CHUNK
                    assert b < ptr[v + 1], "an empty chunk in the queue"
                    for w in idx[b:min(b + CHUNK, ptr[v + 1])]:
                        if not mark[w] & bit:
                            mark[w] |= bit
                            reached[d] += 1
                            enqueue(w, ptr[w + 1] - ptr[w], qov, qok, nout, d)
    elif name == "meshccl_scc_fwbw":
        sig = [U, L, I, n_]

        def run(mark, pivot, rep, n):
            for v in range(n):
                if rep[v] < 0 and mark[v] == 3:
                    rep[v] = pivot[0]
    elif name == "meshccl_scc_colour_init":
        sig = [I, I, ("ptr", "unsigned char"), U, n_, u64, u64]

        def run(rep, colour, active, mark, n, a, b):
            colour[:] = [prio(v, a, b, n) for v in range(n)]
            active[:] = np.asarray(rep) < 0
            mark[:] = 0
    elif name == "meshccl_scc_colour_push":
        sig = [L, J, I, I, u8p, n_, i64, flag]

        def run(fp, fi, rep, colour, active, n, heavy, changed):
            for v in range(n):
                if not active[v] or fp[v + 1] - fp[v] > heavy:
                    continue
                active[v] = 0
                c = colour[v]
                for w in fi[fp[v]:fp[v + 1]]:
                    if rep[w] < 0 and colour[w] < c:
                        colour[w] = c
                        active[w] = 1
                        changed[0] = 1
    elif name == "meshccl_scc_colour_roots":
        sig = [I, I, U, n_, u64, u64]

        def run(rep, colour, mark, n, a, b):
            mark[:] = [rep[v] < 0 and colour[v] == prio(v, a, b, n) for v in range(n)]
    elif name == "meshccl_scc_colour_back":
        sig = [L, J, I, I, U, n_, i64, flag]

        def run(rp, ri, rep, colour, mark, n, heavy, changed):
            for v in range(n):
                if mark[v] != 1 or rp[v + 1] - rp[v] > heavy:
                    continue
                mark[v] = 2
                for w in ri[rp[v]:rp[v + 1]]:
                    if mark[w] == 0 and rep[w] < 0 and colour[w] == colour[v]:
                        mark[w] = 1
                        changed[0] = 1
    elif name == "meshccl_scc_push_snap":
        sig = [I, i64, I, I, I, I, u8p]

        def run(hv, nh, rep, colour, snap, last, go):
            for h in range(nh):
                v = hv[h]
                c = colour[v]
                go[h] = rep[v] < 0 and c != last[h]
                if go[h]:
                    last[h] = c
                snap[h] = c
    elif name == "meshccl_scc_push_rows":
        sig = [L, J, I, I, u8p, I, I, U, i64, I, u8p, flag]

        def run(fp, fi, rep, colour, active, hv, ch, ck, chunks, snap, go, changed):
            assert chunks == len(ch)
            for i in range(chunks):
                h = ch[i]
                if not go[h]:
                    continue
                v, c = hv[h], snap[h]
                b = fp[v] + ck[i] * CHUNK
                assert b < fp[v + 1], "an empty chunk of a long row"
                for w in fi[b:min(b + CHUNK, fp[v + 1])]:
                    if rep[w] < 0 and colour[w] < c:
                        colour[w] = c
                        active[w] = 1
                        changed[0] = 1
    elif name == "meshccl_scc_back_snap":
        sig = [I, i64, U, u8p]

        def run(hv, nh, mark, go):
            for h in range(nh):
                go[h] = mark[hv[h]] == 1
                if go[h]:
                    mark[hv[h]] = 2
    elif name == "meshccl_scc_back_rows":
        sig = [L, J, I, I, U, I, I, U, i64, u8p, flag]

        def run(rp, ri, rep, colour, mark, hv, ch, ck, chunks, go, changed):
            for i in range(chunks):
                h = ch[i]
                if not go[h]:
                    continue
                v = hv[h]
                b = rp[v] + ck[i] * CHUNK
                assert b < rp[v + 1], "an empty chunk of a long row"
                for w in ri[b:min(b + CHUNK, rp[v + 1])]:
                    if mark[w] == 0 and rep[w] < 0 and colour[w] == colour[v]:
                        mark[w] = 1
                        changed[0] = 1
    elif name == "meshccl_scc_colour_done":
        sig = [U, I, I, n_, u64, u64, ("ptr", "unsigned long long")]

        def run(mark, colour, rep, n, a_inv, b, remaining):
            for v in range(n):
                if rep[v] < 0:
                    if mark[v]:
                        rep[v] = (int(colour[v]) - int(b)) % n * int(a_inv) % n
                    else:
                        remaining[0] += 1
    elif name == "meshccl_scc_symmetric":
        sig = [L, J, L, J, i64, i64, U]

        def run(fp, fi, rp, ri, n, max_row, sym):
            for u in range(n):
                out, inn = fi[fp[u]:fp[u + 1]], ri[rp[u]:rp[u + 1]]
                if len(out) != len(inn) or len(out) > max_row or not set(inn) <= set(out):
                    sym[0] = 0
    elif name == "meshccl_scc_path_links":
        sig = [L, J, L, J, n_, I, I]

        def only(ptr, idx, v):
            row = {int(w) for w in idx[ptr[v]:ptr[v + 1]]} - {v}
            return row.pop() if len(row) == 1 else -1 if not row else -2

        def run(fp, fi, rp, ri, n, succ, pred):
            for v in range(n):
                succ[v], pred[v] = only(fp, fi, v), only(rp, ri, v)
    elif name == "meshccl_scc_cycle_init":
        sig = [L, J, i64, I]

        def run(fp, fi, n, pair):
            assert len(pair) == 2 * n
            for v in range(n):
                s_ = int(fi[fp[v]]) if fp[v + 1] > fp[v] else v
                pair[2 * v], pair[2 * v + 1] = s_, min(s_, v)
    elif name == "meshccl_scc_cycle_jump":
        sig = [I, I, i64]

        def run(a, b, n):
            for v in range(n):
                t_ = int(a[2 * v])
                b[2 * v], b[2 * v + 1] = a[2 * t_], min(a[2 * t_ + 1], a[2 * v + 1])
    elif name == "meshccl_scc_path_jump":
        T = ("ptr", t[0])
        sig = [L, i64, T, T, T, T, T, u8p, u64p]

        def run(act, na, after, last_a, low_a, last_b, low_b, more, n_arrived):
            # one valid interleaving: in order, each place reading the
            # buffers as they stand (arrived places write both)
            for j in range(na):
                i = int(act[j])
                t_ = int(last_a[i])
                to, lo = int(last_a[t_]), min(int(low_a[i]), int(low_a[t_]))
                last_b[i], low_b[i] = to, lo
                arrived = after[to] < 0
                if arrived:
                    last_a[i], low_a[i] = to, lo
                more[j] = 0 if arrived else 1
                n_arrived[0] += int(arrived)
    elif name in ("meshccl_scc_path_degree", "meshccl_scc_path_fill"):
        fill = name.endswith("fill")
        sig = [L, J, L, i64, L] + ([L, L, J] if fill else [L])

        def entries(fp, fi, v, end):
            ends = [int(end[w]) for w in fi[fp[v]:fp[v + 1]]]
            return [t for t in ends if t >= 0 and t != v]

        if fill:
            def run(fp, fi, kept, q, end, at, indptr, out):
                assert indptr[0] == 0 and len(out) == indptr[q]
                for i in range(q):
                    row = [int(at[t]) for t in entries(fp, fi, int(kept[i]), end)]
                    assert all(x >= 0 for x in row), "an entry's end is not kept"
                    assert indptr[i + 1] - indptr[i] == len(row)
                    out[indptr[i]:indptr[i + 1]] = row
        else:
            def run(fp, fi, kept, q, end, deg):
                assert len(deg) == q + 1
                for i in range(q):
                    deg[i + 1] = len(entries(fp, fi, int(kept[i]), end))
    elif name in ("meshccl_scc_mutual", "meshccl_scc_mutual_fill"):
        sig = [L, J, i64, i64, L] + ([J] if name.endswith("fill") else [])

        def mutual(fp, fi, u, max_row):
            if fp[u + 1] - fp[u] > max_row:
                return []
            return [w for w in fi[fp[u]:fp[u + 1]]
                    if w != u and fp[w + 1] - fp[w] <= max_row and u in fi[fp[w]:fp[w + 1]]]

        def run(fp, fi, n, max_row, ptr, out=None):
            for u in range(n):
                found = mutual(fp, fi, u, max_row)
                if out is None:
                    ptr[u] = len(found)
                else:
                    out[ptr[u]:ptr[u] + len(found)] = found
    elif name == "meshccl_scc_quotient_degree":
        sig = [L, J, I, i64, u64p]

        def run(fp, fi, piece, n, deg):
            for u in range(n):
                deg[piece[u] + 1] += sum(piece[w] != piece[u] for w in fi[fp[u]:fp[u + 1]])
    elif name == "meshccl_scc_quotient_scatter":
        sig = [L, J, I, i64, u64p, J]

        def run(fp, fi, piece, n, cursor, out):
            for u in range(n):
                p = piece[u]
                for w in fi[fp[u]:fp[u + 1]]:
                    if piece[w] != p:
                        out[cursor[p]] = piece[w]
                        cursor[p] += 1
    elif name == "meshccl_scc_min":
        sig = [I, I, n_]

        def run(rep, low, n):
            for v in range(n):
                assert rep[v] >= 0, "a vertex left without a component"
                low[rep[v]] = min(low[rep[v]], v)
    elif name == "meshccl_scc_point":
        sig = [I, I, n_]

        def run(rep, low, n):
            rep[:] = np.asarray(low)[np.asarray(rep)]
    else:
        raise AssertionError(f"no emulation for {expr}")

    def launch(grid, block, args, shared_mem=0):
        from test_graph_gpu_emulated import CAPTURE, CAPTURING

        check_args(expr, args, sig)
        assert all(isinstance(g, int) and 0 < g < 2**31 for g in grid), f"{expr}: grid {grid}"
        assert len(grid) == (2 if name == "meshccl_scc_expand" else 1), f"{expr}: grid {grid}"
        if name == "meshccl_scc_expand":
            assert grid[1] == 2
        if name == "meshccl_scc_seed":
            assert grid == (1,) and block == (32,)
        if CAPTURING[0]:  # recorded into a graph: runs when the graph is launched
            CAPTURE.append(lambda: run(*args))
        else:
            run(*args)

    return launch


@pytest.fixture
def scc_emulated(emulated, monkeypatch):  # noqa: F811  (the imported fixture)
    import sys

    from meshccl._gpu import strong as gpu_strong
    from meshccl._gpu import strong_paths
    from test_graph_gpu_emulated import _wrap

    for name in ("argmax", "flatnonzero", "bincount", "where"):
        monkeypatch.setattr(sys.modules["cupy"], name, _wrap(getattr(np, name)), raising=False)
    for module in (gpu_strong, strong_paths):
        monkeypatch.setattr(module, "kernels",
                            lambda filename, *names: tuple(_scc_emulation(n) for n in names))
    yield




def _fake_forms(src, dst, n, rng):
    from test_graph_gpu_emulated import fake

    g = coo(src, dst, n).tocsr()
    c = coo(src, dst, n).tocsc()
    i64 = np.int64
    return [(fake(g.indptr.astype(i64)), fake(g.indices.astype(np.int32))),
            (fake(g.indptr.astype(i64)), fake(g.indices.astype(i64))),
            Edges(fake(src), fake(dst), n)], \
        [("csc", (fake(c.indptr.astype(i64)), fake(c.indices.astype(np.int32))))]


def _emulated_cases(rng):
    cases = [(np.zeros(0, int), np.zeros(0, int), 0), (np.zeros(0, int), np.zeros(0, int), 1),
             (np.array([0]), np.array([0]), 1)]
    for n, m in ((6, 9), (40, 60), (120, 400)):
        cases.append(random_graph(n, m, rng) + (n,))
    v = np.arange(30)
    cases += [(v, (v + 1) % 30, 30), (v[1:], v[:-1], 30), (v[:-1], v[1:], 30)]
    e = gen.road_directed(8, one_way=0.3, seed=1)
    cases.append((e.src, e.dst, e.n_vertices))
    # a chain of 2-cycles linked from larger to smaller numbers: no trim,
    # several colouring rounds
    k = 15
    pairs = np.arange(2 * k).reshape(k, 2)
    src = np.concatenate([pairs[:, 0], pairs[:, 1], pairs[1:, 0]])
    dst = np.concatenate([pairs[:, 1], pairs[:, 0], pairs[:-1, 1]])
    cases.append((src, dst, 2 * k))
    # hubs whose rows span several search chunks both ways (a star of
    # 2-cycles through vertex 0, and a hub that only reaches out)
    spokes = np.arange(1, 700)
    cases.append((np.concatenate([np.zeros(699, int), spokes, np.full(699, 700)]),
                  np.concatenate([spokes, np.zeros(699, int), spokes]), 701))
    for name in ("hubs_out", "hubs_in", "small_sccs", "multi", "chain_of_cycles", "cycle",
                 "chain_shuffled", "road_one_way"):
        e = graph_families.FAMILIES[name](300, seed=3)
        cases.append((e.src, e.dst, e.n_vertices))
    return cases + _path_cases(rng)


def _path_cases(rng):
    """Graphs made of paths of (1,1) vertices: pure cycles (one of them
    with a self-loop and a repeated edge), a path from a vertex back to
    itself, paths between hubs in both directions and between hubs of
    different components, paths hanging off a hub, all with their vertex
    numbers shuffled once."""
    edges = []

    def path(u, w, k, first):
        inner = list(range(first, first + k))
        chain = [u, *inner, w]
        edges.extend(zip(chain[:-1], chain[1:]))
        return first + k

    nxt = 6  # vertices 0..5 are hubs
    for c in (1, 2, 5):  # pure cycles
        ring = list(range(nxt, nxt + c))
        edges.extend(zip(ring, ring[1:] + ring[:1]))
        nxt += c
    edges += [(nxt - 1, nxt - 1), (nxt - 2, nxt - 1)]  # a self-loop, a repeat
    nxt = path(0, 0, 4, nxt)  # from hub 0 back to itself
    nxt = path(0, 1, 3, nxt)  # 0 <-> 1 by two paths: one component
    nxt = path(1, 0, 1, nxt)
    nxt = path(1, 2, 5, nxt)  # 1 -> 2 only: the path's vertices alone
    nxt = path(2, 3, 2, nxt)  # many paths from hub 2 to hub 3 and back
    for _ in range(4):
        nxt = path(2, 3, int(rng.integers(1, 6)), nxt)
    nxt = path(3, 2, 3, nxt)
    edges += [(4, 5), (5, 4)]  # hubs 4 and 5 joined by paths of length 0 and 1 one way
    nxt = path(4, 5, 1, nxt)
    src, dst = np.array(edges).T
    n = nxt
    perm = rng.permutation(n)
    return [(src, dst, n), (perm[src], perm[dst], n), (dst, src, n)]


STEPS = {"transpose", "paths", "symmetric", "trim", "fwbw", "colour", "host", "pieces", "smallest"}


@pytest.mark.parametrize("setting", ["default", "gpu only", "long rows", "hand over", "no paths",
                                     "peel"])
def test_gpu_path_emulated(scc_emulated, monkeypatch, setting, tune):
    """The GPU path's host side (kernels emulated) against SciPy: as it is,
    with the GPU's steps to the end (no hand-over), with every row of more
    than 2 entries taken as a long row of the colouring, with the
    hand-over to the host forced at the first check, and without the
    contraction of paths."""
    from meshccl._gpu.strong import strong_components as gpu_strong
    from test_graph_gpu_emulated import _fake_events

    _fake_events(monkeypatch)
    if setting != "default":  # the GPU's steps to the end ...
        tune(STRONG_HOST_MIN_PASSES=10**9)
    if setting == "long rows":
        tune(STRONG_LONG_ROW=2)
    if setting == "hand over":
        tune(STRONG_HOST_MIN_PASSES=0, STRONG_HOST_RATE=10**9)  # ... or the host's at once
    if setting == "no paths":
        tune(STRONG_PATH_SHARE=0)
    if setting == "peel":
        tune(STRONG_PEEL_AFTER=0, STRONG_PATH_SHARE=0)
    PEELED[0] = 0
    rng = np.random.default_rng(12)
    handed = contracted = 0
    for src, dst, n in _emulated_cases(rng):
        want = scipy_strong(coo(src, dst, n))
        forms, raw = _fake_forms(np.asarray(src, np.int64), np.asarray(dst, np.int64), n, rng)
        for g in forms:
            count, labels, info = strong(g, return_info=True)
            phases = info["method_phases"]
            assert info["backend"] == "gpu"
            pairs = set(zip(np.asarray(src).tolist(), np.asarray(dst).tolist()))
            if n and phases[-1] != "smallest":  # stored both ways: the weak path
                assert phases[:2] == ["transpose", "symmetric"] and "weak_method" in info
                assert pairs == {(b, a) for a, b in pairs}
            elif "paths" in phases and "symmetric" in phases:  # the contracted graph: weak
                assert phases[:2] == ["transpose", "paths"] and phases[-1] == "smallest"
            else:
                assert phases == [] if not n else (phases[0] == "transpose"
                                                   and phases[-1] == "smallest"
                                                   and set(phases) <= STEPS)
            contracted += info.get("path_vertices", 0)
            assert ("host" in phases) == (info["host_vertices"] > 0)
            handed += info["host_vertices"]
            if setting in ("gpu only", "long rows"):
                assert info["host_vertices"] == 0
            assert {"validate", "label"} | ({"relabel"} if n else set()) <= set(info["seconds"])
            assert count == want[0]
            np.testing.assert_array_equal(np.asarray(labels), canonical(want[1]))
        for kind, arrays in raw:
            count, labels = gpu_strong(kind, arrays, n)
            assert count == want[0]
            np.testing.assert_array_equal(np.asarray(labels), canonical(want[1]))
    if setting not in ("default", "no paths"):
        assert (handed > 0) == (setting == "hand over")
    assert (contracted > 0) == (setting not in ("no paths", "peel"))
    if setting == "peel":
        assert PEELED[0] > 0


def test_small_graphs_on_host_emulated(scc_emulated, monkeypatch, tune):
    """A graph of at most STRONG_HOST_SMALL vertices + stored edges goes to
    the host's search whole (CSR, CSC and edge-list input): SciPy's
    partition, the one step 'host', every vertex counted as the host's;
    with the limit below the vertex count the GPU's steps run."""
    from meshccl._gpu.strong import strong_components as gpu_strong
    from meshccl.graph._dispatch import strong as dispatch_strong
    from test_graph_gpu_emulated import _fake_events

    _fake_events(monkeypatch)
    rng = np.random.default_rng(13)
    for src, dst, n in _emulated_cases(rng):
        if not n:
            continue
        want = scipy_strong(coo(src, dst, n))
        forms, raw = _fake_forms(np.asarray(src, np.int64), np.asarray(dst, np.int64), n, rng)
        for limit, small in ((n + len(src), True), (n - 1, False)):
            with _tuning.override(STRONG_HOST_SMALL=limit):
                for g in forms:
                    count, labels, info = strong(g, return_info=True)
                    assert (info["method_phases"] == ["host"]) == small
                    if small:
                        assert info["host_vertices"] == n
                    assert count == want[0]
                    np.testing.assert_array_equal(np.asarray(labels), canonical(want[1]))
                for kind, arrays in raw:  # (a CSC: the transpose's rows)
                    count, labels = dispatch_strong(kind, arrays, n)
                    assert count == want[0]
                    np.testing.assert_array_equal(np.asarray(labels), canonical(want[1]))
                    count, labels = gpu_strong(kind, arrays, n)  # no host: the GPU's steps
                    np.testing.assert_array_equal(np.asarray(labels), canonical(want[1]))


def test_sparse_random_graphs_emulated(scc_emulated, monkeypatch):
    """Random graphs of about one edge a vertex (most vertices on (1,1)
    paths or cycles, paths meeting at the few vertices of larger degree),
    with self-loops and repeated edges: the GPU path's host side, kernels
    emulated, against SciPy's partition, with and without the
    contraction."""
    from test_graph_gpu_emulated import _fake_events

    _fake_events(monkeypatch)
    rng = np.random.default_rng(21)
    contracted = 0
    for _ in range(60):
        n = int(rng.integers(2, 40))
        perm = rng.permutation(n)
        src, dst = perm, np.roll(perm, -int(rng.integers(0, 2)))  # a cycle or self-loops
        extra = int(rng.integers(0, 1 + n // 4))
        src = np.r_[src, rng.integers(0, n, extra)]
        dst = np.r_[dst, rng.integers(0, n, extra)]
        cut = rng.random(src.size) < 0.2  # cut the cycle into paths
        src, dst = src[~cut], dst[~cut]
        want = scipy_strong(coo(src, dst, n))
        forms, _ = _fake_forms(src.astype(np.int64), dst.astype(np.int64), n, rng)
        for share in (4, 0):
            with _tuning.override(STRONG_PATH_SHARE=share, STRONG_HOST_MIN_PASSES=10**9):
                count, labels, info = strong(forms[0], return_info=True)
            contracted += info.get("path_vertices", 0)
            assert count == want[0]
            np.testing.assert_array_equal(np.asarray(labels), canonical(want[1]))
    assert contracted > 0


def test_every_kernel_asked_for_is_defined_and_instantiated():
    """Each ``meshccl_scc_*`` kernel that _gpu/strong.py and strong_paths.py
    launch is defined in strong.cu and instantiated for the offline build
    (the emulated tests replace the kernels, so a name missing from the
    file would otherwise show only on a GPU)."""
    import re
    from pathlib import Path

    import meshccl

    root = Path(meshccl.__file__).parent
    asked = set()
    for name in ("strong.py", "strong_paths.py"):
        asked |= set(re.findall(r"meshccl_scc_\w+", (root / "_gpu" / name).read_text()))
    source = (root / "_kernels" / "strong.cu").read_text()
    defined = set(re.findall(r"__global__ void (meshccl_scc_\w+)\(", source))
    instantiated = set(re.findall(r"template __global__ void (meshccl_scc_\w+)<", source))
    assert asked and asked <= defined, sorted(asked - defined)
    assert asked <= instantiated, sorted(asked - instantiated)


def _walk(after):
    """(last, cycle_low) of :func:`meshccl._gpu.strong_paths.jump` by walking
    each place's successors one by one (cycle_low: -1 off cycles)."""
    k = after.size
    last, low = np.empty(k, np.int64), np.full(k, -1, np.int64)
    for i in range(k):
        seen, j = [i], i
        while after[j] >= 0 and after[j] != i and len(seen) <= k:
            j = after[j]
            seen.append(j)
        last[i] = j
        if after[j] == i:  # back at the start: a cycle
            low[i] = min(seen)
    return last, low


@pytest.mark.parametrize("seed", range(6))
def test_path_jumping_exact(scc_emulated, seed):
    """The pointer jumping of the paths step, where places stop once they
    reach their path's end: every place's path end and every cycle's
    smallest place, against a walk, on disjoint paths and cycles of mixed
    lengths (single places, 2-cycles, paths and cycles longer than
    every power of two the jumping passes), places shuffled."""
    from meshccl._gpu.strong_paths import jump

    rng = np.random.default_rng(seed)
    lengths = list(rng.geometric(0.2, 40)) + [1, 1, 2, 257, 600] * (seed % 2 + 1)
    kinds = rng.random(len(lengths)) < (0.3 if seed < 4 else 1.0)  # True: a cycle
    k = int(sum(lengths))
    perm = rng.permutation(k)
    after = np.full(k, -1, np.int64)
    at = 0
    for length, ring in zip(lengths, kinds):
        run = perm[at:at + length]
        after[run[:-1]] = run[1:]
        if ring:
            after[run[-1]] = run[0]
        at += length
    import cupy  # (the stand-in: the kernel emulated)
    from test_graph_gpu_emulated import fake

    last, low = jump(cupy, fake(after), fake(np.arange(k, dtype=np.int64)), k)
    last, low = np.asarray(last), np.asarray(low)
    want_last, want_low = _walk(after)
    on_cycle = want_low >= 0
    np.testing.assert_array_equal(after[last] >= 0, on_cycle)
    np.testing.assert_array_equal(last[~on_cycle], want_last[~on_cycle])
    np.testing.assert_array_equal(low[on_cycle], want_low[on_cycle])


# (family, size, STRONG_PATH_SHARE): every step's loop runs batches that come
# again; the cycle without its paths contracted searches 700 levels
REPLAY_CASES = [("road_one_way", 1500, 4), ("dag", 1500, 4), ("mesh2d_one_way", 1500, 4),
                ("chain_of_cycles", 1500, 4), ("small_sccs", 1500, 4), ("hubs_in", 1500, 4),
                ("cycle", 6000, 0)]


def _replay_runs(run, graph_batches):
    """{setting: info} of ``run()`` with each STRONG_GRAPH_BATCH, checked
    to give the same labels, passes, colouring rounds and host vertices."""
    infos, first = {}, None
    for batch in graph_batches:
        with _tuning.override(STRONG_GRAPH_BATCH=batch):
            count, labels, info = run()
        labels = np.asarray(labels.get() if hasattr(labels, "get") else labels)
        if first is None:
            first = (count, labels)
        assert count == first[0]
        np.testing.assert_array_equal(labels, first[1])
        infos[batch] = info
    keys = ("passes", "iterations", "host_vertices", "path_vertices", "method_phases")
    for batch, info in infos.items():
        assert {k: info.get(k) for k in keys} == {k: infos[0].get(k) for k in keys}, batch
    assert infos[0]["replayed_passes"] == 0
    return infos


@pytest.mark.parametrize("family, size, share", REPLAY_CASES)
def test_replayed_batches_change_nothing_emulated(scc_emulated, monkeypatch, family, size, share):
    """Batches replayed from recorded graphs (every batch that comes again,
    or those of at least 16 passes) against direct launches (0): the same
    labels (SciPy's partition), passes, colouring rounds and host
    vertices, with the GPU's steps to the end and with the hand-over to
    the host as 'auto' judges it; with the GPU's steps to the end, some
    passes are replayed."""
    from test_graph_gpu_emulated import _fake_events

    _fake_events(monkeypatch)
    e = graph_families.FAMILIES[family](size, seed=3)
    want = scipy_strong(coo(e.src, e.dst, e.n_vertices))
    forms, _ = _fake_forms(np.asarray(e.src, np.int64), np.asarray(e.dst, np.int64),
                           e.n_vertices, np.random.default_rng(2))
    for host_min in (10**9, _tuning.STRONG_HOST_MIN_PASSES):
        # (no pieces: they would end the long searches whose replays this tests)
        with _tuning.override(STRONG_PATH_SHARE=share, STRONG_HOST_MIN_PASSES=host_min,
                              STRONG_MUTUAL_SHARE=0):
            infos = _replay_runs(lambda: strong(forms[0], return_info=True), (0, 1, 16))
            count, labels = strong(forms[0])
        assert count == want[0]
        np.testing.assert_array_equal(np.asarray(labels), canonical(want[1]))
        assert infos[16]["replayed_passes"] <= infos[1]["replayed_passes"] < infos[1]["passes"]
        if host_min == 10**9:
            assert infos[1]["replayed_passes"] > 0


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("family, size, share", [
    ("road_both", 1_000_000, 4), ("road_one_way", 200_000, 4), ("chain_of_cycles", 20_000, 4),
    ("small_sccs", 200_000, 4), ("dag", 200_000, 4), ("cycle", 100_000, 0)])
def test_gpu_replayed_batches(family, size, share):
    """On the GPU, batches replayed from CUDA graphs (every batch that comes
    again; from 16 passes, the default) against direct launches (0): the
    same labels (SciPy's partition), passes, colouring rounds and host
    vertices, as 'auto' runs and with the GPU's steps to the end, where
    some passes are replayed."""
    import cupyx.scipy.sparse as csp

    e = graph_families.FAMILIES[family](size, seed=5)
    g = coo(e.src, e.dst, e.n_vertices).tocsr()
    want = scipy_strong(g)
    d = csp.csr_matrix(g)
    for host_min in (_tuning.STRONG_HOST_MIN_PASSES, 10**9):
        # (no pieces: they would end the long searches whose replays this tests)
        with _tuning.override(STRONG_PATH_SHARE=share, STRONG_HOST_MIN_PASSES=host_min,
                              STRONG_MUTUAL_SHARE=0):
            infos = _replay_runs(lambda: strong(d, return_info=True), (0, 1, 16))
            count, labels = strong(d)
        assert count == want[0]
        np.testing.assert_array_equal(labels.get(), canonical(want[1]))
        if host_min == 10**9:
            assert infos[1]["replayed_passes"] > 0, infos[1]


def test_batch_graphs_record_the_second_time(emulated):
    """BatchGraphs launches a key's first batch directly, records the
    second (nothing runs while recording) and replays it from then on;
    batches below the smallest size, or with recording off, launch
    directly."""
    from meshccl._gpu.passes import BatchGraphs
    from test_graph_gpu_emulated import CAPTURE, CAPTURING

    ran = []

    def launch(tag):
        def go():
            if CAPTURING[0]:
                CAPTURE.append(lambda: ran.append(tag))
            else:
                ran.append(tag)
        return go

    g = BatchGraphs(4)
    for key, size in (("a", 4), ("a", 4), ("b", 2), ("b", 2), ("a", 4), ("c", 8)):
        g.run(key, size, launch(key))
    assert ran == ["a", "a", "b", "b", "a", "c"]
    assert set(g.graphs) == {"a"} and g.replayed == 8
    off = BatchGraphs(0)
    for _ in range(3):
        off.run("a", 64, launch("d"))
    assert ran[-3:] == ["d"] * 3 and not off.graphs and off.replayed == 0


def test_symmetric_graph_takes_the_weak_path_emulated(scc_emulated, monkeypatch):
    """A graph stored both ways (a mesh, a cycle stored both ways, with a
    self-loop) goes to the weak path after the symmetry test; one edge
    stored one way more, or a row longer than STRONG_SYMMETRIC_MAX_ROW,
    keeps the strong steps.  SciPy's partition either way."""
    from test_graph_gpu_emulated import _fake_events

    from meshccl import _tuning

    _fake_events(monkeypatch)
    e = graph_families.FAMILIES["mesh2d_both"](400, seed=1)
    ring = np.arange(50)
    cases = [(e.src, e.dst, e.n_vertices, True),
             (np.r_[ring, (ring + 1) % 50, 7], np.r_[(ring + 1) % 50, ring, 7], 50, True),
             (np.r_[e.src, 0], np.r_[e.dst, e.n_vertices - 1], e.n_vertices, False)]
    for src, dst, n, symmetric in cases:
        want = scipy_strong(coo(src, dst, n))
        forms, _ = _fake_forms(np.asarray(src, np.int64), np.asarray(dst, np.int64), n,
                               np.random.default_rng(1))
        for short_rows in (False, True):
            with _tuning.override(STRONG_SYMMETRIC_MAX_ROW=1 if short_rows else 32):
                for g in forms:
                    count, labels, info = strong(g, return_info=True)
                    weak = "symmetric" in info["method_phases"] and "trim" not in info["method_phases"]
                    assert weak == (symmetric and not short_rows), (n, info["method_phases"])
                    assert count == want[0]
                    np.testing.assert_array_equal(np.asarray(labels), canonical(want[1]))


def test_hand_over_rule(tune):
    """The narrow-frontier rule: judged only after the allowance of passes,
    then taken while fewer than STRONG_HOST_RATE vertices a pass moved."""
    from meshccl._gpu.strong import hand_over, pass_allowance

    tune(STRONG_HOST_MIN_PASSES=64, STRONG_HOST_ITEMS=16384, STRONG_HOST_RATE=512)
    assert pass_allowance(1000, 2000) == 64
    assert pass_allowance(10**7, 3 * 10**7) == 4 * 10**7 // 16384
    # a long cycle: two vertices a level
    assert not hand_over(63, 126, 300_000, 330_000)
    assert hand_over(64, 128, 300_000, 330_000)
    # a 2-D grid searched from its middle: 2 L^2 vertices after L levels
    assert not any(hand_over(L, 2 * L * L, 9 * 10**6, 2 * 10**7) for L in range(1, 5000))
    # a strip 100 wide: 100 vertices a level, handed over once judged
    L = pass_allowance(10**7, 2 * 10**7)
    assert not hand_over(L - 1, 100 * (L - 1), 10**7, 2 * 10**7)
    assert hand_over(L, 100 * L, 10**7, 2 * 10**7)


def test_remaining_subgraph_emulated(scc_emulated):
    """The subgraph cut out for the host: the remaining vertices renumbered
    in order, every edge between two of them, in row order."""
    from meshccl._gpu.strong import finish_on_host, remaining_subgraph
    from test_graph_gpu_emulated import fake

    rng = np.random.default_rng(4)
    for n, m in ((1, 0), (5, 12), (50, 200), (300, 900)):
        src, dst = random_graph(n, m, rng)
        g = coo(src, dst, n).tocsr()
        g.sort_indices()
        rep = np.where(rng.random(n) < 0.5, -1, np.arange(n)).astype(np.int32)
        fp, fi = fake(g.indptr.astype(np.int64)), fake(g.indices.astype(np.int32))
        live, indptr, indices = remaining_subgraph(fp, fi, fake(rep))
        keep = np.flatnonzero(rep < 0)
        np.testing.assert_array_equal(np.asarray(live), keep)
        sub = g[keep][:, keep].tocsr()
        sub.sort_indices()
        assert indptr.dtype == indices.dtype == np.int32
        np.testing.assert_array_equal(indptr, sub.indptr)
        np.testing.assert_array_equal(indices, sub.indices)
        # the host's labels become representatives inside each component
        out = fake(rep.copy())
        calls = []

        def host(ip, ix, k):
            calls.append(k)
            return scipy_strong(sp.csr_matrix((np.ones(ix.size), ix, ip), shape=(k, k)))[1]

        assert finish_on_host(fp, fi, out, host) == keep.size
        assert calls == ([keep.size] if keep.size else [])
        out = np.asarray(out)
        assert (out >= 0).all() and (out[rep >= 0] == rep[rep >= 0]).all()
        want = scipy_strong(sub)[1]
        np.testing.assert_array_equal(canonical(out[keep]), canonical(want))
        assert (want[np.searchsorted(keep, out[keep])] == want).all()


def test_families_bench_runs_on_the_cpu(tmp_path):
    """benchmarks/graph_bench.py --families on tiny graphs: checks every
    result, writes its table and json (and the plot with matplotlib)."""
    import importlib.util
    import json
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "benchmarks"
    sys.path.insert(0, str(root))
    try:
        spec = importlib.util.spec_from_file_location("graph_bench", root / "graph_bench.py")
        bench = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(bench)
        assert bench.main(["--families", "all", "--cpu", "--edges", "400", "--reps", "1",
                           "--out", str(tmp_path)]) == 0
    finally:
        sys.path.remove(str(root))
    data = json.loads((tmp_path / "families.json").read_text())
    rows = data["rows"]
    assert [(r["family"], r["connection"]) for r in rows] == [
        (f, c) for f in graph_families.FAMILIES for c in ("weak", "strong")]
    assert data["columns"] == ["scipy", "networkx", "cpu"]
    assert all(r["ok"] == {"networkx": True, "cpu": True} for r in rows)
    strong_rows = {r["family"]: r for r in rows if r["connection"] == "strong"}
    # the families are what they say
    assert strong_rows["cycle"]["components"] == strong_rows["mesh2d_both"]["components"] == 1
    assert strong_rows["dag"]["largest"] == strong_rows["chain"]["largest"] == 1
    assert strong_rows["mesh3d_one_way"]["largest"] == 1
    assert strong_rows["small_sccs"]["largest"] == 10
    assert strong_rows["chain_of_cycles"]["largest"] == 2
    text = (tmp_path / "families.md").read_text()
    for title in graph_families.TITLES.values():
        assert f"| {title} | strong |" in text


def test_colour_order_is_a_permutation():
    from meshccl._gpu.strong import colour_order

    for n in (1, 2, 3, 4, 10, 97, 1000, 4096, 65537, 10**6):
        a, b, a_inv = colour_order(n)
        v = np.arange(n, dtype=object)
        p = (a * v + b) % n
        assert sorted(p) == list(range(n)) if n <= 4096 else len(set(p[:5000])) == min(n, 5000)
        assert ((p - b) % n * a_inv % n == v).all()
        assert a * (n - 1) + b < 2**64
    assert colour_order(2**32) == (1, 0, 1)


def test_dense_special_values_and_explicit_zeros():
    """Dense entries read as SciPy reads them (|a| <= 1e-8, inf, nan: no
    edge); stored zeros of a sparse matrix are edges."""
    rng = np.random.default_rng(9)
    n = 60
    a = np.where(rng.random((n, n)) < 0.06, 1.0, 0.0)
    special = rng.random((n, n))
    a[special < 0.02] = np.inf
    a[(special >= 0.02) & (special < 0.04)] = np.nan
    a[(special >= 0.04) & (special < 0.06)] = 1e-9
    a[(special >= 0.06) & (special < 0.08)] = -3.0
    check_exact(a)
    check_exact(a.astype(np.float32))
    check_exact((a != 0).astype(np.int8) * np.isfinite(a))
    s = sp.csr_matrix(np.where(np.isfinite(a), a, 0))
    s.data[::3] = 0   # explicit zeros: still edges
    check_exact(s)


def test_road_directed():
    """Two-way streets stored both ways, a share of one-way streets once; the
    undirected graph is road_grid's; bad shares named."""
    base = gen.road_grid(20, seed=4)
    e = gen.road_directed(20, one_way=0.25, seed=4)
    und = {tuple(sorted(p)) for p in zip(base.src.tolist(), base.dst.tolist())}
    got = list(zip(e.src.tolist(), e.dst.tolist()))
    assert {tuple(sorted(p)) for p in got} == und
    pairs = set(got)
    one_way = sum((b, a) not in pairs for a, b in got)
    assert 0.15 * len(und) < one_way < 0.35 * len(und)
    assert len(got) == 2 * len(und) - one_way
    assert gen.road_directed(20, one_way=0, seed=4).src.size == 2 * len(und)
    with pytest.raises(ValueError, match="one_way must lie in \\[0, 1\\], got 1.5"):
        gen.road_directed(4, one_way=1.5)


def test_chunk_matches_the_kernel():
    """The host sizes the search queues by strong.cu's CHUNK."""
    import re
    from pathlib import Path

    from meshccl._gpu.strong import CHUNK

    text = (Path(__file__).resolve().parents[1] / "meshccl" / "_kernels" / "strong.cu").read_text()
    assert re.findall(r"constexpr long long CHUNK = (\d+);", text) == [str(CHUNK)]


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("family", ["mesh2d_both", "mesh3d_both", "mesh2d_both_shuffled",
                                    "road_both", "cycle"])
def test_gpu_symmetric_directed_graphs(family):
    """Strong components of directed graphs stored both ways (the family
    and the family plus its reverse) on the GPU: SciPy's partition, and
    the weak path ran exactly for the symmetric ones."""
    import cupyx.scipy.sparse as csp

    e = graph_families.FAMILIES[family](200_000, seed=2)
    g = coo(e.src, e.dst, e.n_vertices).tocsr()
    for graph in (g, (g + g.T).tocsr()):
        want = scipy_strong(graph)
        count, labels, info = strong(csp.csr_matrix(graph), return_info=True)
        assert count == want[0]
        np.testing.assert_array_equal(labels.get(), canonical(want[1]))
        symmetric = (graph != graph.T).nnz == 0
        assert ("weak_method" in info) == symmetric, (family, info["method_phases"])


@pytest.mark.parametrize("values", [
    {"STRONG_MUTUAL_LEVELS": 0},
    {"STRONG_MUTUAL_LEVELS": 0, "STRONG_SYMMETRIC_MAX_ROW": 2},
    {"STRONG_MUTUAL_LEVELS": 0, "STRONG_PATH_SHARE": 0},
    {"STRONG_MUTUAL_LEVELS": 0, "STRONG_MUTUAL_SHARE": 0}])
def test_mutual_pieces_emulated(scc_emulated, monkeypatch, values):
    """The quotient by the pieces of mutual edges, kernels emulated, taken
    at the first read of the search: SciPy's partition, every piece inside
    one component; with rows of more than 2 entries skipped, without the
    paths step, and never (share 0)."""
    from meshccl._gpu.strong import cycle_pieces, mutual_pieces
    from test_graph_gpu_emulated import _fake_events, fake

    _fake_events(monkeypatch)
    rng = np.random.default_rng(13)
    quotients = cycles = 0
    with _tuning.override(STRONG_HOST_MIN_PASSES=10**9, **values):
        for src, dst, n in _mutual_cases(rng):
            want = scipy_strong(coo(src, dst, n))
            forms, _ = _fake_forms(np.asarray(src, np.int64), np.asarray(dst, np.int64), n, rng)
            for g in forms[:2]:
                count, labels, info = strong(g, return_info=True)
                assert count == want[0]
                np.testing.assert_array_equal(np.asarray(labels), canonical(want[1]))
                if "pieces" in info["method_phases"]:
                    quotients += 1
                    assert 0 < info["pieces"] * _tuning.STRONG_MUTUAL_SHARE <= n
            h = coo(src, dst, n).tocsr()
            for find in (mutual_pieces, cycle_pieces):
                got = find(fake(h.indptr.astype(np.int64)), fake(h.indices.astype(np.int32)),
                           n, np.int32)
                if got is not None:  # each piece inside one strong component
                    k, piece = got
                    piece = np.asarray(piece)
                    assert piece.max() == k - 1 and k * _tuning.STRONG_MUTUAL_SHARE <= n
                    for p in range(k):
                        assert np.unique(want[1][piece == p]).size == 1
                    cycles += find is cycle_pieces
    assert (quotients > 0) == (values.get("STRONG_MUTUAL_SHARE") != 0)
    assert (cycles > 0) == (values.get("STRONG_MUTUAL_SHARE") != 0)


def test_host_index_pair():
    """The host route takes mixed and narrow index types as int64 (an int64
    indptr with uint16 indices among them), equal pairs of int32 or int64
    as they are, and leaves uint64 to the GPU path's checks."""
    from meshccl.graph._dispatch import host_index_pair

    for ta, tb in [(np.int64, np.uint16), (np.int32, np.int64), (np.uint32, np.uint32),
                   (np.int16, np.int16), (np.uint8, np.int32)]:
        a, b = host_index_pair(np.arange(3, dtype=ta), np.arange(2, dtype=tb))
        assert a.dtype == b.dtype == np.int64 and a.tolist() == [0, 1, 2] and b.tolist() == [0, 1]
    for t in (np.int32, np.int64):
        a0, b0 = np.arange(3, dtype=t), np.arange(2, dtype=t)
        a, b = host_index_pair(a0, b0)
        assert a is a0 and b is b0
    assert host_index_pair(np.arange(3, dtype=np.int64), np.arange(2, dtype=np.uint64)) is None
    assert host_index_pair(np.arange(3, dtype=np.uint64), np.arange(2, dtype=np.int32)) is None


def test_host_route_rule():
    """Which CuPy graphs go to the host's search: at most STRONG_HOST_SMALL
    vertices + edges, or at most STRONG_HOST_SPARSE with at most
    STRONG_HOST_SPARSE_DEGREE edges a vertex; never an empty graph, and
    neither rule when its limit is 0."""
    from meshccl.graph._dispatch import host_route

    with _tuning.override(STRONG_HOST_SMALL=100, STRONG_HOST_SPARSE=1000,
                          STRONG_HOST_SPARSE_DEGREE=1.5):
        assert host_route(40, 60) and not host_route(40, 61)
        assert host_route(400, 600) and not host_route(400, 601)  # 1.5 a vertex, 1000
        assert not host_route(100, 200) and not host_route(0, 0)
        assert not host_route(500, 501)  # sparse, but past 1000
    with _tuning.override(STRONG_HOST_SMALL=0, STRONG_HOST_SPARSE=0):
        assert not host_route(1, 0) and not host_route(10, 10)


def test_staging_round_trip_emulated(emulated):  # noqa: F811
    """The page-locked round trip of the host route: inputs of several
    types and layouts read back exactly, the output written in the buffer
    comes back (or an array of the work's own), a larger call replaces
    the buffer, and a later call's stream waits for the last upward copy
    before its copies overwrite the buffer."""
    from test_graph_gpu_emulated import FakeStream, fake

    from meshccl._gpu import staging

    reader = None
    for size, grows in ((3, True), (5000, True), (5000, False), (10, False), (0, False),
                        (40000, True), (7, False)):
        a = fake(np.arange(size, dtype=np.int64) * 3)
        b = fake(np.arange(2 * size, dtype=np.uint16 if size < 30000 else np.int32))[::2]

        def work(views, out):
            ha, hb = views
            assert ha.dtype == np.int64 and hb.dtype == b.dtype and hb.flags.c_contiguous
            np.testing.assert_array_equal(ha, np.arange(size) * 3)
            np.testing.assert_array_equal(hb, np.arange(0, 2 * size, 2))
            np.add(ha, hb, out=out, casting="unsafe")
            return size + 1, out

        with FakeStream() if size in (10, 7) else contextlib.nullcontext():
            stream = FakeStream.current
            waited = len(stream.waited)
            before = staging._buffers[0].nbytes if staging._buffers else 0
            value, up = staging.round_trip([a, b], size, work)
        assert value == size + 1 and up.dtype == np.int32 and up.size == size
        np.testing.assert_array_equal(np.asarray(up), np.arange(size) * 5)
        # the buffer large enough, copies on another stream than the last
        # reader's wait for its event; on the same stream they need not
        assert (staging._buffers[0].nbytes > before) == grows
        assert len(stream.waited) - waited == (not grows and reader not in (None, stream))
        reader = stream if size else reader
    assert staging.round_trip([a], 2, lambda views, out: None) is None
    value, up = staging.round_trip([a], None, lambda views, out: (9, np.full(4, 2, np.int32)))
    assert value == 9 and np.asarray(up).tolist() == [2, 2, 2, 2]


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_gpu_host_route_threads_and_streams():
    """Small CuPy graphs on the host route from four threads at once, each
    on a stream of its own, sizes up and down (the one page-locked buffer
    of the device is shared, waited for and grown):
    every result SciPy's partition, read after its own stream's work."""
    import threading

    import cupy
    import cupyx.scipy.sparse as csp

    graphs = []
    for k, m in enumerate((50, 400, 3000, 20_000, 60_000, 100, 9000, 30)):
        e = graph_families.FAMILIES[("cycle", "rmat", "small_sccs", "multi")[k % 4]](m, seed=k)
        g = coo(e.src, e.dst, e.n_vertices).tocsr()
        graphs.append((csp.csr_matrix(g), canonical(scipy_strong(g)[1])))
    failures = []

    def run(offset):
        try:
            with cupy.cuda.Stream(non_blocking=True) as stream:
                for r in range(3):
                    for d, want in graphs[offset:] + graphs[:offset]:
                        count, labels = connected_components(d, connection="strong")
                        stream.synchronize()
                        if count != want.max() + 1 or not np.array_equal(labels.get(), want):
                            failures.append((offset, r, d.shape))
        except Exception as exc:  # noqa: BLE001  (reported below)
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
