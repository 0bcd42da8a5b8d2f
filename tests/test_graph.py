"""meshccl.graph.connected_components against scipy.sparse.csgraph."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import connected_components as scipy_cc

from meshccl import graph_generators as gen
from meshccl.graph import Edges, _methods, connected_components, spanning_forest

from conftest import small_graphs


def forms(n, src, dst):
    """The same graph in every accepted input form."""
    coo = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n))
    csr = coo.tocsr()
    yield "coo", coo
    yield "csr", csr
    yield "csc", coo.tocsc()
    yield "csr_array", sp.csr_array(csr)
    yield "lil", coo.tolil()
    yield "tuple", (csr.indptr, csr.indices)
    yield "edges", Edges(src, dst, n)
    if n <= 64:
        yield "dense", csr.toarray()


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(g=small_graphs(40, 80), directed=st.booleans())
def test_matches_scipy(g, directed):
    n, src, dst = g
    want_n, want = scipy_cc(sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)),
                            directed=directed)
    for name, form in forms(n, src, dst):
        got_n, got = connected_components(form, directed=directed)
        assert got_n == want_n, name
        assert got.dtype == np.int32, name
        np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("edges", [gen.rmat(12, 8, seed=1), gen.grid((60, 70), keep=0.55, seed=2),
                                   gen.line(5000), gen.disjoint(7, 300, seed=3),
                                   gen.random_edges(20000, 9000, seed=4), gen.grid((9, 10, 11)),
                                   gen.hawick_disjoint(20000, 30000, 40, seed=5)],
                         ids=["rmat12", "road-like grid", "line", "disjoint", "random", "grid3d",
                              "hawick-disjoint"])
def test_generated_graphs(edges):
    n = edges.n_vertices
    m = sp.coo_matrix((np.ones(edges.src.size), (edges.src, edges.dst)), shape=(n, n))
    want_n, want = scipy_cc(m)
    got_n, got = connected_components(edges)
    assert got_n == want_n
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(connected_components(m.tocsr())[1], want)


def test_explicit_zero_is_an_edge_and_dense_zero_is_not():
    m = sp.csr_matrix((np.array([0.0, 1.0]), np.array([1, 2]), np.array([0, 1, 2, 2])), shape=(3, 3))
    assert connected_components(m)[0] == scipy_cc(m)[0] == 1
    d = np.array([[0, 1, 0], [0, 0, 0], [0, 0, 0]])
    assert connected_components(d)[0] == scipy_cc(d)[0] == 2


def test_small_and_empty():
    assert connected_components(sp.csr_matrix((0, 0))) == (0, pytest.approx(np.array([], np.int32)))
    n, lab = connected_components(sp.csr_matrix((1, 1)))
    assert n == 1 and lab.tolist() == [0]
    assert connected_components(Edges(np.array([], np.int64), np.array([], np.int64))) [0] == 0
    assert connected_components(Edges(np.array([2]), np.array([2])))[1].tolist() == [0, 1, 2]
    assert connected_components(sp.eye(4).tocsr(), return_labels=False) == 4


@pytest.mark.parametrize("graph, err, msg", [
    (sp.csr_matrix(np.ones((2, 3))), ValueError, r"square \(N, N\) matrix, got shape \(2, 3\)"),
    ((np.array([0, 2, 1]), np.array([0, 1])), ValueError, "indptr must not decrease"),
    ((np.array([1, 2]), np.array([0, 1])), ValueError, "indptr must start at 0, got 1"),
    ((np.array([0, 1, 3]), np.array([0, 1])), ValueError, r"indptr must end at len\(indices\) = 2, got 3"),
    ((np.array([0, 1, 2]), np.array([0, 7])), ValueError, r"indices must lie in \[0, 2\), got 7 at position 1"),
    ((np.array([0, 1, 2]), np.array([0, -1])), ValueError, r"got -1 at position 1"),
    ((np.array([0, 1, 2]), np.array([0.0, 1.0])), TypeError, "indices must hold integers, got dtype float64"),
    ((np.array([0.0, 1.0]), np.array([0])), TypeError, "indptr must hold integers"),
    (Edges(np.array([0, 1]), np.array([1])), ValueError, "src and dst must have the same length"),
    (Edges(np.array([0, 5]), np.array([1, 1]), 3), ValueError, r"src must lie in \[0, 3\), got 5"),
    (Edges(np.array([0]), np.array([1]), -2), ValueError, "n_vertices must be a non-negative int"),
    ((np.array([0, 1]),), TypeError, r"\(indptr, indices\)"),
    ("graph", TypeError, "csgraph must be"),
    (np.ones((3, 3), object), TypeError, "numeric adjacency matrix, got dtype object"),
    (np.ones((3, 3, 3)), ValueError, r"square \(N, N\) matrix, got shape \(3, 3, 3\)"),
    (Edges(np.array([0]), np.array([1]), True), ValueError, "n_vertices must be a non-negative int, got True"),
])
def test_bad_input(graph, err, msg):
    with pytest.raises(err, match=msg):
        connected_components(graph)


@pytest.mark.parametrize("src, dst, n, msg", [
    ([0, 2**63], [1, 2], None, f"src must hold vertex numbers below 2**63 - 1 (a graph has at "
                               f"most 2**63 - 1 vertices), got {2**63} at position 1"),
    ([1, 2], [2**64 - 1, 0], None, f"dst must hold vertex numbers below 2**63 - 1 (a graph has "
                                   f"at most 2**63 - 1 vertices), got {2**64 - 1} at position 0"),
    ([0], [1], 2**63, f"n_vertices must be at most 2**63 - 1, got {2**63}"),
    ([0, 2**63], [1, 2], 5, f"src must lie in [0, 5), got {2**63} at position 1"),
])
def test_vertex_numbers_no_graph_can_have(backend, src, dst, n, msg):
    """uint64 ids of 2**63 and up: an error naming the argument and the value."""
    import re

    from conftest import to_backend

    edges = Edges(to_backend(np.array(src, np.uint64), backend),
                  to_backend(np.array(dst, np.uint64), backend), n)
    with pytest.raises(ValueError, match=re.escape(msg)):
        connected_components(edges)


def test_bad_options():
    g = sp.eye(3).tocsr()
    with pytest.raises(ValueError, match="connection must be 'weak' or 'strong' .*got 'medium'"):
        connected_components(g, connection="medium")
    for bad in (" weak", "w", None, 1):  # SciPy refuses these too
        with pytest.raises(ValueError, match=f"connection must be .*got {bad!r}"):
            connected_components(g, connection=bad)
    for strong in ("strong", "Strong", "STRONG"):  # any case (tests/test_strong.py: the rest)
        assert connected_components(g, connection=strong)[0] == 3
    assert connected_components(g, directed=False, connection="strong")[0] == 3  # ignored, as SciPy
    with pytest.raises(ValueError, match="method must be one of .*got 'afforest'"):
        connected_components(g, method="afforest")
    with pytest.raises(ValueError, match="method='ecl' takes compression in .*got 'full'"):
        connected_components(g, method="ecl", compression="full")
    with pytest.raises(ValueError, match="max_iterations must be None or an int >= 1, got 0"):
        connected_components(g, method="sv", max_iterations=0)


@pytest.mark.parametrize("connection", ["weak", "Weak", "WEAK", "wEaK"])
@pytest.mark.parametrize("directed", [True, False])
def test_connection_in_any_case(connection, directed):
    """SciPy lower-cases ``connection``; so do we."""
    g = sp.csr_matrix(([1, 1], ([0, 2], [1, 3])), shape=(5, 5))
    want = scipy_cc(g, directed=directed, connection=connection)
    got = connected_components(g, directed=directed, connection=connection)
    assert got[0] == want[0]
    np.testing.assert_array_equal(got[1], want[1])


def _dense_cases():
    """Dense matrices with entries SciPy reads as no edge (zero, +-inf,
    NaN, |a| <= 1e-8 in floating point) beside ones it reads as edges."""
    rng = np.random.default_rng(11)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-9, 1e-8, -1e-8, 1.1e-8, -2e-8, 1e-300, 1.0,
                -3.5, 5e300]
    for dtype in (np.float64, np.float32, np.float16, np.longdouble):
        for _ in range(4):
            n = int(rng.integers(1, 12))
            with np.errstate(over="ignore"):  # 5e300 is inf in the narrow types
                a = rng.choice(np.array(specials), size=(n, n)).astype(dtype)
            a[rng.random((n, n)) < 0.6] = 0
            yield f"{np.dtype(dtype).name} {n}", a
    parts = [0.0, 1.0, 1e-9, 1e-300, -2.0, np.inf, -np.inf, np.nan]
    for dtype in (np.complex128, np.complex64):
        for _ in range(4):
            n = int(rng.integers(1, 12))
            a = np.empty((n, n), dtype)
            a.real, a.imag = (rng.choice(np.array(parts), size=(n, n)) for _ in range(2))
            a[rng.random((n, n)) < 0.6] = 0
            yield f"{np.dtype(dtype).name} {n}", a
    for dtype in (np.int8, np.uint64, np.bool_):
        a = (rng.random((9, 9)) < 0.2).astype(dtype)
        yield np.dtype(dtype).name, a


@pytest.mark.parametrize("directed", [True, False])
def test_dense_input_as_scipy_reads_it(directed):
    """inf, NaN, tiny and complex entries of dense input: SciPy's edges."""
    import warnings

    for name, a in _dense_cases():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            want = scipy_cc(a, directed=directed)
        got = connected_components(a, directed=directed)
        assert got[0] == want[0], name
        np.testing.assert_array_equal(got[1], want[1], err_msg=name)


def test_dense_special_values_spelled_out():
    inf, nan = np.inf, np.nan
    assert connected_components(np.array([[0, inf], [inf, 0]]))[0] == 2
    assert connected_components(np.array([[0, nan], [nan, 0]]))[0] == 2
    assert connected_components(np.array([[0, 1e-8], [0, 0]]))[0] == 2   # "zero" to SciPy
    assert connected_components(np.array([[0, 2e-8], [0, 0]]))[0] == 1
    assert connected_components(np.array([[0, 1j], [0, 0]]))[0] == 1     # complex: exact zero only
    assert connected_components(np.array([[0, 1e-300j], [0, 0]]))[0] == 1
    assert connected_components(np.array([[0, complex(1, inf)], [0, 0]]))[0] == 2
    assert connected_components(np.array([[0, complex(nan, 1)], [0, 0]]))[0] == 2


def test_masked_dense_entries_are_no_edges():
    """A masked entry of a NumPy masked array is no edge (SciPy 1.17 reads
    such input inconsistently, so the reference is the array with its
    masked entries set to zero)."""
    a = np.ma.masked_array([[0, 1, 0], [0, 0, 1], [1, 0, 0]],
                           mask=[[0, 1, 0], [0, 0, 0], [1, 0, 0]])
    want = scipy_cc(np.ma.filled(a, 0))
    got = connected_components(a)
    assert got[0] == want[0] == 2
    np.testing.assert_array_equal(got[1], want[1])


def test_sparse_stored_inf_nan_and_complex_are_edges():
    """Sparse input: every stored entry is an edge, whatever its value, as in SciPy."""
    import warnings

    vals = np.array([np.inf, np.nan, 0.0, -np.inf, 1e-12])
    rows, cols = np.array([0, 1, 3, 5, 6]), np.array([1, 2, 4, 6, 7])
    imaginary = np.zeros(vals.size, complex)
    imaginary.imag = vals[::-1]
    for data in (vals, vals.astype(complex), imaginary):
        for fmt in ("csr", "csc", "coo", "lil", "dok"):
            g = sp.coo_matrix((data, (rows, cols)), shape=(9, 9)).asformat(fmt)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
                want = scipy_cc(g)
            got = connected_components(g)
            assert got[0] == want[0] == 4, fmt
            np.testing.assert_array_equal(got[1], want[1], err_msg=fmt)


def test_labels_are_deterministic():
    e = gen.rmat(11, 4, seed=9)
    first = connected_components(e)[1]
    for _ in range(3):
        np.testing.assert_array_equal(connected_components(e)[1], first)


def test_mixing_numpy_and_cupy_is_refused_clearly():
    class FakeCupyArray:  # stands in for a CuPy array on machines without one
        pass
    FakeCupyArray.__module__ = "cupy._core.core"
    with pytest.raises(TypeError, match="indptr and indices must be all NumPy or all CuPy"):
        connected_components((FakeCupyArray(), np.array([0])))
    with pytest.raises(TypeError, match="src and dst must be all NumPy or all CuPy"):
        connected_components(Edges(np.array([0]), FakeCupyArray()))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(g=small_graphs(40, 80))
def test_spanning_forest(g):
    """A forest of input edges, acyclic, spanning every component."""
    n, src, dst = g
    m = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n))
    want_n, want = scipy_cc(m)
    for name, form in forms(n, src, dst):
        f = spanning_forest(form)
        assert f.n_vertices == n
        assert f.src.size == n - want_n, name          # n - c edges ...
        got_n, got = connected_components(f)
        assert got_n == want_n, name                   # ... spanning the same components: acyclic
        np.testing.assert_array_equal(got, want, err_msg=name)
        edges = set(zip(src.tolist(), dst.tolist()))
        assert all(e in edges for e in zip(f.src.tolist(), f.dst.tolist())), name


def test_spanning_forest_large():
    e = gen.rmat(14, 8, seed=5)
    f = spanning_forest(e)
    c, lab = connected_components(e)
    assert f.src.size == e.n_vertices - c
    np.testing.assert_array_equal(connected_components(f)[1], lab)


def test_more_generators():
    """Shapes the generators promise, and scipy-identical components."""
    ba = gen.barabasi_albert(2000, 3, seed=1)
    ws0 = gen.watts_strogatz(1000, 4, 0.0)
    ws1 = gen.watts_strogatz(1000, 4, 1.0, seed=2)
    rr = gen.random_regular(1001, 4, seed=3)
    de = gen.delaunay(3000, seed=4)
    for e in (ba, ws0, ws1, rr, de):
        n = e.n_vertices
        m = sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(n, n))
        want = scipy_cc(m)
        got = connected_components(e)
        assert got[0] == want[0]
        np.testing.assert_array_equal(got[1], want[1])
    assert connected_components(ba)[0] == 1 and connected_components(de)[0] == 1
    assert connected_components(ws0)[0] == 1 and ws0.src.size == 2000
    deg = np.bincount(np.concatenate([rr.src, rr.dst]), minlength=rr.n_vertices)
    assert (deg == 4).all()
    with pytest.raises(ValueError, match="n \\* d even"):
        gen.random_regular(5, 3)
    with pytest.raises(ValueError, match="even k"):
        gen.watts_strogatz(10, 3)


GRAPH_METHODS = ["unionfind", "ecl", "kout", "sv", "edge-lp", "vertex-lp", "bfs"]


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(g=small_graphs(40, 80), method=st.sampled_from(GRAPH_METHODS))
def test_every_method_matches_scipy(g, method):
    n, src, dst = g
    want_n, want = scipy_cc(sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)))
    for name, form in [("edges", Edges(src, dst, n)),
                       ("csr", sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr())]:
        got_n, got = connected_components(form, method=method)
        assert got_n == want_n, (method, name)
        np.testing.assert_array_equal(got, want, err_msg=f"{method} {name}")


@pytest.mark.parametrize("method", GRAPH_METHODS)
def test_every_method_on_generated_graphs(method):
    for e in (gen.rmat(11, 8, seed=1), gen.line(3000), gen.disjoint(5, 200, seed=2),
              gen.grid((40, 50), keep=0.5, seed=3)):
        np.testing.assert_array_equal(connected_components(e, method=method)[1],
                                      connected_components(e)[1])


#: every union rule with every compression it takes, and the samplers
#: test_every_method_matches_scipy leaves out
RULE_CASES = [(m.name, c) for m in _methods.TABLE if m.rule is not None for c in m.compression]
RULE_CASES += [("hb", None), ("bfs-sample", None)]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(g=small_graphs(40, 80), case=st.sampled_from(RULE_CASES))
def test_union_rules_and_samplers_match_scipy(g, case):
    method, compression = case
    n, src, dst = g
    want_n, want = scipy_cc(sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)))
    csr = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr()
    for name, form in [("edges", Edges(src, dst, n)), ("csr", csr)]:
        got_n, got = connected_components(form, method=method, compression=compression)
        assert got_n == want_n, (case, name)
        np.testing.assert_array_equal(got, want, err_msg=f"{case} {name}")


def _stored_edges(form):
    """(src, dst) of an Edges or CSR form, in storage order."""
    if isinstance(form, Edges):
        return form.src.tolist(), form.dst.tolist()
    rows = np.repeat(np.arange(form.shape[0]), np.diff(form.indptr))
    return rows.tolist(), form.indices.tolist()


def _passes_reference(method, n, src, dst):
    """The passes of an iterative method, from its definition (docs/graph.md),
    in plain Python on the stored edges in their order."""
    P = list(range(n))
    if method == "sv":  # hook roots under smaller roots, then jump to stars
        rounds = 0
        while True:
            rounds += 1
            hooked = False
            for v, u in zip(src, dst):
                a, b = P[v], P[u]
                hi, lo = max(a, b), min(a, b)
                if a != b and P[hi] == hi:
                    P[hi], hooked = lo, True
            jumping = True
            while jumping:
                jumping = False
                for v in range(n):
                    if P[P[v]] != P[v]:
                        P[v], jumping = P[P[v]], True
            if not hooked:
                return rounds
    if method == "edge-lp":  # sweeps until one changes nothing
        sweeps, changed = 0, True
        while changed:
            sweeps, changed = sweeps + 1, False
            for v, u in zip(src, dst):
                low = min(P[v], P[u])
                changed |= P[v] != low or P[u] != low
                P[v] = P[u] = low
        return sweeps
    # vertex-lp: each vertex's edges stored from it, then those stored to it
    adj = [[] for _ in range(n)]
    for v, u in zip(src, dst):
        adj[v].append(u)
    for v, u in zip(src, dst):
        adj[u].append(v)
    frontier, steps = list(range(n)), 0
    while frontier:
        steps += 1
        nxt = []
        for v in frontier:
            for u in adj[v]:
                if P[v] < P[u]:
                    P[u] = P[v]
                    if u not in nxt:
                        nxt.append(u)
        frontier = nxt
    return steps


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(g=small_graphs(40, 80), method=st.sampled_from(["sv", "edge-lp", "vertex-lp", "bfs"]))
def test_iterative_passes_and_cap(g, method):
    """The passes reported are the method's own (a BFS: one search per
    component), and max_iterations one below them raises NotConverged."""
    from meshccl.errors import NotConverged

    n, src, dst = g
    for form in (Edges(src, dst, n),
                 sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr()):
        count, _, info = connected_components(form, method=method, return_info=True)
        want = count if method == "bfs" else _passes_reference(method, n, *_stored_edges(form))
        assert info["iterations"] == want
        if method != "bfs":
            # (an empty graph takes no pass; max_iterations must still be >= 1)
            connected_components(form, method=method, max_iterations=max(want, 1))
            if want > 1:
                with pytest.raises(NotConverged, match=f"max_iterations={want - 1} passes"):
                    connected_components(form, method=method, max_iterations=want - 1)


def test_kout_finish_reads_edges_stored_only_in_the_giant_component():
    """Asymmetric input: an edge stored only at a vertex of the sampled giant
    component (beyond its first k entries) must still join its other end."""
    n = 3000
    ring = np.arange(2000)
    src = np.concatenate([ring, ring, np.arange(2000, 3000) % 2000])
    dst = np.concatenate([(ring + 1) % 2000, (ring + 2) % 2000, np.arange(2000, 3000)])
    want_n, want = scipy_cc(sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)))
    assert want_n == 1
    for form in (Edges(src, dst, n), sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr()):
        got_n, got = connected_components(form, method="kout")
        assert got_n == 1
        np.testing.assert_array_equal(got, want)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(g=small_graphs(40, 80), method=st.sampled_from(["unionfind", "ecl", "kout"]))
def test_symmetric_promise_on_symmetric_input(g, method):
    n, src, dst = g
    s, d = np.concatenate([src, dst]), np.concatenate([dst, src])
    m = sp.coo_matrix((np.ones(s.size), (s, d)), shape=(n, n)).tocsr()
    want_n, want = scipy_cc(m)
    got_n, got = connected_components(m, method=method, symmetric=True)
    assert got_n == want_n
    np.testing.assert_array_equal(got, want)


def test_auto_rule_on_the_gpu():
    """The GPU rule (pure Python, no GPU needed): sample CSR promised
    symmetric with more than 2.3 entries per vertex (hook-based sampling
    above 6)."""
    from meshccl._gpu.graph import choose_method
    assert choose_method("edges", 100, 10_000) == "unionfind"
    assert choose_method("edges", 100, 10_000, symmetric=True) == "unionfind"
    assert choose_method("csr", 100, 401, symmetric=True) == "kout"    # a grid: 4
    assert choose_method("csr", 100, 600, symmetric=True) == "kout"
    assert choose_method("csr", 100, 601, symmetric=True) == "hb"      # Kronecker, social
    assert choose_method("csr", 100, 241, symmetric=True) == "kout"    # road-like: 2.41
    assert choose_method("csr", 100, 401) == "ecl"       # no promise: sampling only adds a pass
    assert choose_method("csc", 100, 230, symmetric=True) == "ecl"     # trees, fragmented grids
    assert choose_method("csr", 100, 0, symmetric=True) == "ecl"


def test_auto_rule_picks_tiles_on_graphs_numbered_with_locality():
    """The locality test of the GPU rule for CSR: 'tiles' when at least
    GRAPH_AUTO_TILES_MIN_FRACTION of the sampled entries lie inside a tile
    and the graph stores at most GRAPH_AUTO_TILES_MAX_DEGREE entries per
    vertex, before the density rule; never unmeasured (None) or denser
    graphs.  Edge lists keep the chain test: 'early' for at most 2 edges
    per vertex of which at least 3/4 join consecutive vertices
    (docs/graph.md: "auto on the GPU")."""
    from meshccl._gpu.graph import choose_method
    from meshccl._tuning import GRAPH_AUTO_CHAIN_MIN_FRACTION, GRAPH_AUTO_TILES_MIN_FRACTION
    assert choose_method("csr", 100, 99, local=1.0) == "tiles"           # path, one direction
    assert choose_method("csr", 100, 198, symmetric=True, local=1.0) == "tiles"  # both ways
    assert choose_method("csc", 100, 400, local=GRAPH_AUTO_TILES_MIN_FRACTION) == "tiles"  # mesh
    assert choose_method("csr", 100, 400, symmetric=True, local=0.9) == "tiles"  # before kout
    assert choose_method("csr", 100, 99, local=None) == "ecl"
    assert choose_method("csr", 100, 400, local=0.4) == "ecl"            # little locality
    assert choose_method("csr", 100, 99, local=0.0) == "ecl"             # shuffled numbers
    assert choose_method("csr", 100, 601, local=1.0) == "ecl"            # denser than a mesh
    assert choose_method("csr", 100, 601, symmetric=True, local=1.0) == "hb"
    assert choose_method("csr", 100, 401, symmetric=True, local=0.1) == "kout"
    assert choose_method("csr", 100, 99, chain=1.0) == "ecl"             # the edge lists' test
    assert choose_method("edges", 100, 99, chain=1.0) == "early"         # an edge list in order
    assert choose_method("edges", 100, 198, chain=GRAPH_AUTO_CHAIN_MIN_FRACTION) == "early"
    assert choose_method("edges", 100, 201, chain=1.0) == "unionfind"    # denser than a path
    assert choose_method("edges", 100, 99, chain=0.5) == "unionfind"
    assert choose_method("edges", 100, 99, local=1.0) == "unionfind"     # tiles need rows
    assert choose_method("edges", 100, 99) == "unionfind"


def test_auto_method_helper_on_the_cpu():
    """_auto_method reports what 'auto' runs: the serial union-find on the CPU."""
    from meshccl.graph import _auto_method
    e = gen.rmat(8, 8, seed=1)
    csr = sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(256, 256)).tocsr()
    assert _auto_method(csr) == _auto_method(e) == _auto_method(csr, symmetric=True) == "unionfind"
    with pytest.raises(ValueError):
        _auto_method((np.array([0, 1]), np.array([3])))


#: every generator with small arguments (shared with test_graph_gpu.py and
#: the emulated GPU test)
GENERATORS = {
    "rmat": lambda xp: gen.rmat(6, 4, seed=1, xp=xp),
    "grid": lambda xp: gen.grid((5, 6), keep=0.7, seed=2, xp=xp),
    "grid3d": lambda xp: gen.grid((3, 4, 5), xp=xp),
    "road_grid": lambda xp: gen.road_grid(8, seed=2, xp=xp),
    "road_directed": lambda xp: gen.road_directed(8, one_way=0.3, seed=2, xp=xp),
    "line": lambda xp: gen.line(10, xp=xp),
    "disjoint": lambda xp: gen.disjoint(3, 5, seed=3, xp=xp),
    "hawick_disjoint": lambda xp: gen.hawick_disjoint(40, 60, 4, seed=3, xp=xp),
    "random_edges": lambda xp: gen.random_edges(20, 30, seed=4, xp=xp),
    "barabasi_albert": lambda xp: gen.barabasi_albert(30, 3, seed=5, xp=xp),
    "barabasi_albert_bb": lambda xp: gen.barabasi_albert_bb(30, 3, seed=5, xp=xp),
    "watts_strogatz": lambda xp: gen.watts_strogatz(30, 4, 0.2, seed=6, xp=xp),
    "random_regular": lambda xp: gen.random_regular(20, 3, seed=7, xp=xp),
    "delaunay": lambda xp: gen.delaunay(30, seed=8, xp=xp),
}


@pytest.mark.parametrize("name", GENERATORS)
def test_generators_numpy_output(name):
    """xp=None, 'numpy' and the numpy module give the same seeded int64 NumPy graph."""
    a, b, c = (GENERATORS[name](xp) for xp in (None, "numpy", np))
    for e in (a, b, c):
        assert isinstance(e, Edges) and type(e.src) is np.ndarray and type(e.dst) is np.ndarray
        assert e.src.dtype == e.dst.dtype == np.int64 and e.n_vertices == a.n_vertices
        np.testing.assert_array_equal(e.src, a.src)
        np.testing.assert_array_equal(e.dst, a.dst)
    assert a.src.size and 0 <= min(a.src.min(), a.dst.min()) and max(a.src.max(), a.dst.max()) < a.n_vertices


def test_generators_reachable_from_graph_and_checked_xp(monkeypatch):
    import sys

    import meshccl.graph

    assert meshccl.graph.generators is gen
    with pytest.raises(AttributeError):
        meshccl.graph.no_such_thing
    with pytest.raises(ValueError, match="xp must be None, 'numpy' or 'cupy'"):
        gen.line(4, xp="torch")
    monkeypatch.setitem(sys.modules, "cupy", None)  # CuPy missing, whatever this machine has
    for make in GENERATORS.values():
        with pytest.raises(ImportError, match="xp='cupy' needs CuPy"):
            make("cupy")


def test_hawick_disjoint():
    """Hawick's Disjoint graphs: edges stay inside their random groups, so a
    dense graph has exactly `sets` components and a sparse one at least
    `sets` (plus monomers); the paper's three series as parameters; bad
    arguments named."""
    from scipy.sparse.csgraph import connected_components as scipy_cc

    def components(e):
        return scipy_cc(sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)),
                                      shape=(e.n_vertices, e.n_vertices)))[0]

    for sets in (1, 7, 50):
        dense = gen.hawick_disjoint(3000, 60_000, sets, seed=sets)
        assert components(dense) == sets
        sparse = gen.hawick_disjoint(3000, 1500, sets, seed=sets)
        assert components(sparse) > sets
    e = gen.hawick_disjoint(500, 2000, 5, seed=9)
    assert e.src.size == e.dst.size == 2000 and e.n_vertices == 500
    assert 0 <= min(e.src.min(), e.dst.min()) and max(e.src.max(), e.dst.max()) < 500
    # a different seed, a different graph
    f = gen.hawick_disjoint(500, 2000, 5, seed=10)
    assert not np.array_equal(e.dst, f.dst)
    assert gen.hawick_disjoint(0, 0, 3).src.size == 0
    series = gen.HAWICK_DISJOINT_SERIES
    assert [p[0] for p in series[1]] == [2_000_000 * k for k in range(1, 9)]
    assert {p[1] for p in series[1]} == {50_000_000} and {p[2] for p in series[2]} == {100}
    assert [p[1] for p in series[2]] == [10_000_000 * k for k in range(1, 7)]
    assert [p[2] for p in series[3]] == [10 ** k for k in range(7)]
    with pytest.raises(ValueError, match="sets >= 1, got n=10, m=5, sets=0"):
        gen.hawick_disjoint(10, 5, 0)
    with pytest.raises(ValueError, match="need vertices, got n=0"):
        gen.hawick_disjoint(0, 5, 2)


def test_return_info_on_the_cpu():
    e = gen.line(50)
    n, lab, info = connected_components(e, return_info=True)
    assert n == 1 and lab.tolist() == [0] * 50
    assert info["method"] == "unionfind" and info["backend"] == "cpu" and info["iterations"] == 1
    assert set(info["seconds"]) == {"prepare", "label"} and min(info["seconds"].values()) >= 0
    n, info = connected_components(e, return_labels=False, return_info=True, method="bfs")
    assert n == 1 and info["method"] == "bfs-cc" and info["iterations"] >= 1
    assert connected_components(e, return_labels=False) == 1
    n, lab, info = connected_components(e, method="edge-lp", return_info=True)
    assert info["iterations"] >= 2  # passes until one changes nothing


def _python(code):
    """Run ``code`` in a fresh interpreter from the repository root."""
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_graph_imports_without_cupy():
    """``import meshccl.graph`` and a CPU call work where ``import cupy``
    fails, and importing it loads neither CuPy nor a backend."""
    out = _python(
        "import sys; sys.modules['cupy'] = None\n"
        "import numpy as np, meshccl.graph as g\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('meshccl._gpu', 'meshccl._cpu')))\n"
        "print(loaded, g.connected_components(np.eye(3))[0])\n")
    assert out.split() == ["[]", "3"]


def test_graph_calls_do_not_import_numba():
    """Weak components (every method, threaded too), spanning forests and
    incremental connectivity run on the compiled core: numba is not imported."""
    out = _python(
        "import sys, numpy as np\n"
        "from meshccl import graph_generators as gen\n"
        "from meshccl.graph import METHODS, IncrementalConnectivity, connected_components, "
        "spanning_forest\n"
        "e = gen.rmat(9, 4, seed=1)\n"
        "for m in METHODS: connected_components(e, method=m)\n"
        "connected_components(e, cpu_threads=2); spanning_forest(e)\n"
        "ic = IncrementalConnectivity(10); ic.insert(np.array([1]), np.array([2]))\n"
        "ic.connected(np.array([1]), np.array([2])); ic.labels()\n"
        "print('numba' in sys.modules)\n")
    assert out.split() == ["False"]


def test_backends_do_not_import_the_api():
    """The data flows one way: the backends import the method table, never
    the API (``meshccl.graph``'s functions) nor its validation or dispatch;
    each imports cleanly first, before anything else of meshccl.graph."""
    import ast
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1] / "meshccl"
    for path in ("_cpu/graph.py", "_gpu/graph.py", "_gpu/graph_plan.py"):
        tree = ast.parse((root / path).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and "graph" in node.module \
                    and node.level == 2:
                assert node.module == "graph._methods", (path, node.module)
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("meshccl.graph") for a in node.names), path
    for module in ("meshccl._cpu.graph", "meshccl._gpu.graph", "meshccl._gpu.graph_plan"):
        _python(f"import sys; sys.modules['cupy'] = None; import {module}; import meshccl.graph")


def test_one_method_table():
    """METHODS, COMPRESSION, ITERATIVE come from the one table; every name
    (aliases too) runs on the CPU and gives SciPy's labels."""
    from meshccl.graph import _methods

    assert set(_methods.METHODS) == {n for m in _methods.TABLE for n in (m.name, *m.aliases)}
    assert set(_methods.COMPRESSION) == set(_methods.METHODS)
    assert set(_methods.ITERATIVE) == {"sv", "edge-lp", "vertex-lp", "bfs-cc", "bfs"}
    assert _methods.DEFERRED_CHECK_METHODS == ("ecl", "tiles", "kout", "hb")
    e = gen.rmat(8, 4, seed=3)
    want = scipy_cc(sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(256, 256)))
    for name in _methods.METHODS:
        for compression in (None,) + _methods.COMPRESSION[name]:
            n, lab, info = connected_components(e, method=name, compression=compression,
                                                return_info=True)
            assert n == want[0], name
            np.testing.assert_array_equal(lab, want[1], err_msg=f"{name} {compression}")
            assert info["method"] == (_methods.canonical(name) if name != "auto" else "unionfind")


def test_docstring_examples_of_the_graph_modules():
    """The examples of every module of meshccl.graph run and print what they
    say (test_label.py runs the package's own, not those of Edges)."""
    import doctest

    import meshccl.graph
    from meshccl.graph import _input, _methods

    for module in (meshccl.graph, _input, _methods):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__
