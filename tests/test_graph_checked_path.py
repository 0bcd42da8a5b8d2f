"""The CPU's one-call path for the commonest graph inputs (a SciPy CSR, CSC
or COO matrix or array, NumPy ``(indptr, indices)``, ``Edges`` with a
vertex count; every option at its default): the labels of SciPy and of the
general path (reached here with ``return_info=True``), the same errors,
int32 and int64 indices, unsorted rows, and any input it does not take
falling through to the general path."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import connected_components as scipy_cc

from conftest import csr_as_drawn, drawn_graphs, examples, row_pointers
from meshccl._cpu import graph as cpu_graph
from meshccl._cpu import strong as cpu_strong
from meshccl.graph import Edges, _dispatch, _input, connected_components
from meshccl.graph_families import FAMILIES


def general(g, **options):
    """The general path's (count, labels): return_info takes it."""
    return connected_components(g, return_info=True, **options)[:2]


def same(got, want):
    assert got[0] == want[0]
    assert got[1].dtype == want[1].dtype
    np.testing.assert_array_equal(got[1], want[1])


def _csr(rng, n, m, dtype, index_dtype, unsorted, cls=sp.csr_matrix):
    """A CSR of m distinct random edges on n vertices (self-loops
    included), rows shuffled when ``unsorted``."""
    key = np.unique(rng.integers(0, n * n, m)) if n else np.zeros(0, np.int64)
    src, dst = np.divmod(key, max(n, 1))
    if unsorted:
        perm = rng.permutation(src.size)
        order = np.argsort(src[perm], kind="stable")
        src, dst = src[perm][order], dst[perm][order]
    indptr = row_pointers(src, n, index_dtype)
    data = rng.integers(1, 4, src.size).astype(dtype)
    g = cls((data, dst.astype(index_dtype), indptr), shape=(n, n))
    g.indptr, g.indices = indptr, dst.astype(index_dtype)  # (SciPy may narrow them)
    return g


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_, np.float32])
@pytest.mark.parametrize("cls", [sp.csr_matrix, sp.csr_array])
def test_random_csr_as_scipy_and_the_general_path(index_dtype, dtype, cls):
    rng = np.random.default_rng(np.dtype(dtype).num + 31 * np.dtype(index_dtype).itemsize)
    for n, m in ((0, 0), (1, 1), (5, 8), (40, 90), (300, 700), (2000, 3000)):
        for unsorted in (False, True):
            g = _csr(rng, n, m, dtype, index_dtype, unsorted, cls)
            assert g.indices.dtype == index_dtype
            for directed in (True, False):
                for connection in ("weak", "strong"):
                    got = connected_components(g, directed=directed, connection=connection)
                    same(got, scipy_cc(g, directed=directed, connection=connection))
                    same(got, general(g, directed=directed, connection=connection))
                    assert connected_components(g, directed, connection,
                                                return_labels=False) == got[0]
            t = (g.indptr, g.indices)  # read as stored, as SciPy reads a float64 CSR
            c = g.tocoo()
            e = Edges(c.row.astype(index_dtype), c.col.astype(index_dtype), n)
            for connection in ("weak", "strong"):
                same(connected_components(t, connection=connection),
                     general(t, connection=connection))
                same(connected_components(e, connection=connection),
                     general(e, connection=connection))
                same(connected_components(e, connection=connection),
                     scipy_cc(c, connection=connection))
                for h in (g.tocsc(), c, sp.coo_array(c)):
                    same(connected_components(h, connection=connection),
                         scipy_cc(h, connection=connection))
                    same(connected_components(h, connection=connection),
                         general(h, connection=connection))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_families(family):
    e = FAMILIES[family](3000, seed=2)
    g = sp.csr_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(e.n_vertices,) * 2)
    for connection in ("weak", "strong"):
        want = scipy_cc(g, connection=connection)
        for h in (g, g.tocsc(), g.tocoo()):
            same(connected_components(h, connection=connection), want)
        same(connected_components(e, connection=connection), general(e, connection=connection))


@settings(max_examples=examples(200))
@given(drawn_graphs(25, 70))
def test_both_row_orders_as_the_general_search(case):
    """Rows as drawn (unsorted, repeats anywhere): the one-call search reads
    each row forward or backward as :mod:`meshccl._cpu.strong` does, sorted
    first when asked; weak components as the union-find's."""
    n, edges = case
    _, _, indptr, indices = csr_as_drawn(n, edges)
    for dtype in (np.int32, np.int64):
        arrays = (indptr.astype(dtype), indices.astype(dtype))
        for backward, rows in ((False, "forward"), (True, "backward")):
            for sort_rows in (False, True):
                got = cpu_graph.checked_components("csr", *arrays, n, True, backward, sort_rows)
                same(got, cpu_strong.strong_components("csr", arrays, n, sort_rows, rows))
        same(cpu_graph.checked_components("csr", *arrays, n), general(arrays))


def _error(call):
    with pytest.raises(Exception) as info:
        call()
    return type(info.value), str(info.value)


BAD = [
    ("indptr not at 0", [1, 1, 2], [0, 1]),
    ("indptr decreasing", [0, 2, 1, 2], [0, 1]),
    ("indptr short of indices", [0, 1, 1], [0, 1]),
    ("indptr past indices", [0, 1, 3], [0, 1]),
    ("index too large", [0, 1, 2], [0, 2]),
    ("index negative", [0, 1, 2], [-1, 0]),
    # one cycle 0 -> 1 -> 2 -> 0: the search has found every vertex before
    # it reads row 0's last entry
    ("index past a whole cycle", [0, 2, 3, 4], [1, 3, 2, 0]),
    ("empty indptr", [], []),
]


BAD_EDGES = [
    ("vertex too large", [0, 1], [1, 3]),
    ("vertex negative", [0, -1], [1, 1]),
    ("lengths differ", [0, 1], [1]),
]


@pytest.mark.parametrize("name, src, dst", BAD_EDGES, ids=[b[0] for b in BAD_EDGES])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_invalid_edges_raise_the_general_error(name, src, dst, dtype):
    e = Edges(np.array(src, dtype), np.array(dst, dtype), 3)
    for connection in ("weak", "strong"):
        want = _error(lambda: general(e, connection=connection))
        assert want[0] is ValueError
        assert _error(lambda: connected_components(e, connection=connection)) == want
        if len(src) == len(dst):
            c = sp.coo_matrix((np.ones(len(src)), (np.zeros(len(src), dtype),) * 2), shape=(3, 3))
            c.row, c.col = e.src, e.dst
            assert _error(lambda: connected_components(c, connection=connection)) == \
                _error(lambda: general(c, connection=connection))


@pytest.mark.parametrize("name, indptr, indices", BAD, ids=[b[0] for b in BAD])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_invalid_input_raises_the_general_error(name, indptr, indices, dtype):
    """The one-call path finds the CSR invalid and leaves the message to the
    general path: the same error, whatever the options."""
    t = (np.array(indptr, dtype), np.array(indices, dtype))
    n = max(len(indptr) - 1, 0)
    for connection in ("weak", "strong"):
        want = _error(lambda: general(t, connection=connection))
        assert want[0] is ValueError
        assert _error(lambda: connected_components(t, connection=connection)) == want
        if len(indptr):
            for cls in (sp.csr_matrix, sp.csc_matrix):
                g = cls((n, n), dtype=np.float64)
                g.indptr, g.indices = t
                g.data = np.ones(len(indices))
                assert _error(lambda: connected_components(g, connection=connection)) == \
                    _error(lambda: general(g, connection=connection))


def test_inputs_it_does_not_take_go_the_general_way():
    """Other index types, mixed types, 2-D arrays, a non-square or 1-D
    sparse array, options: the general path's result or error."""
    g = _csr(np.random.default_rng(3), 50, 120, np.float64, np.int32, True)
    for indices in (g.indices.astype(np.int16), g.indices.astype(np.uint32),
                    g.indices.astype(np.int64)):
        t = (g.indptr, indices)
        for connection in ("weak", "strong"):
            same(connected_components(t, connection=connection),
                 general(t, connection=connection))
    for dtype in (">i4", ">i8"):  # non-native byte order: nanobind refuses them
        t = (g.indptr.astype(dtype), g.indices.astype(dtype))
        c = g.tocoo()
        for h in (t, Edges(c.row.astype(dtype), c.col.astype(dtype), 50)):
            for connection in ("weak", "strong"):
                same(connected_components(h, connection=connection),
                     general(h, connection=connection))
    for dtype in (np.float64, np.bool_, object):
        t = (g.indptr.astype(dtype), g.indices.astype(dtype))
        assert _error(lambda: connected_components(t)) == _error(lambda: general(t))
    strided = np.repeat(g.indices, 2)[::2]  # not contiguous: read through a copy
    same(connected_components((g.indptr, strided), connection="strong"),
         general((g.indptr, g.indices), connection="strong"))
    for bad in ((g.indptr[None], g.indices), (g.indptr, g.indices[None])):
        assert _error(lambda: connected_components(bad)) == _error(lambda: general(bad))
    e = g.tocoo()
    for edges in (Edges(e.row, e.col), Edges(e.row, e.col, np.int64(50)),
                  Edges(e.row.astype(np.int16), e.col.astype(np.int16), 50),
                  Edges(e.row, e.col.astype(np.int64), 50)):
        same(connected_components(edges, connection="strong"),
             general(edges, connection="strong"))
    for bad in (Edges(e.row, e.col, -1), Edges(e.row, e.col, True), Edges(e.row, e.col, 2**63)):
        assert _error(lambda: connected_components(bad)) == _error(lambda: general(bad))
    for bad in (sp.csr_array(np.ones(3)), sp.csr_matrix((3, 4)), sp.coo_array(np.ones(3)),
                sp.coo_matrix((3, 4))):
        assert _error(lambda: connected_components(bad)) == _error(lambda: general(bad))
    same(connected_components(g, connection="WEAK"), scipy_cc(g))
    same(connected_components(g, connection="Strong"), scipy_cc(g, connection="strong"))
    same(connected_components(g, method="unionfind", cpu_threads=0), scipy_cc(g))
    same(connected_components(g, directed=np.True_, connection="strong"),
         scipy_cc(g, connection="strong"))
    with pytest.raises(ValueError, match="connection must be 'weak' or 'strong'"):
        connected_components(g, connection="both")
    with pytest.raises(ValueError, match="cpu_threads must be an int >= 0"):
        connected_components(g, cpu_threads=True)


def test_takes_its_inputs_without_the_general_validation(monkeypatch):
    """The path runs without meshccl.graph._input: SciPy CSR, CSC and COO
    matrices and arrays, NumPy (indptr, indices) and Edges with a vertex
    count, int32 or int64, are checked in the compiled call."""
    g = _csr(np.random.default_rng(5), 30, 60, np.float64, np.int32, True)
    c = g.tocoo()
    want = {conn: scipy_cc(g, connection=conn) for conn in ("weak", "strong")}

    def refuse(*args, **kwargs):
        raise AssertionError("the general path ran")

    monkeypatch.setattr(_input, "as_graph", refuse)
    forms = [g, sp.csr_array(g), g.tocsc(), sp.csc_array(g), c, sp.coo_array(c)]
    for dtype in (np.int32, np.int64):
        forms += [(g.indptr.astype(dtype), g.indices.astype(dtype)),
                  Edges(c.row.astype(dtype), c.col.astype(dtype), 30)]
    for h in forms:
        for conn in ("weak", "strong"):
            if type(h) is tuple:  # (read as stored: SciPy's reading of a float64 CSR)
                same(connected_components(h, connection=conn), scipy_cc(g, connection=conn))
            else:
                same(connected_components(h, connection=conn), want[conn])
    assert _dispatch.cpu_checked(g.todense(), False) is None
    assert _dispatch.cpu_checked(g.tolil(), False) is None
    assert _dispatch.cpu_checked((g.indptr, g.indices, 1), False) is None
    assert _dispatch.cpu_checked(Edges(c.row, c.col), False) is None


@settings(max_examples=examples(300), deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([np.int32, np.int64]),
       st.sampled_from(["indptr", "index"]), st.booleans())
def test_strong_search_checks_the_csr_as_it_reads_it(seed, dtype, spoil, smallest):
    """Strong components of a CSR are checked by the search as it reads
    the rows (no pass of its own): one bad indptr entry or index anywhere
    -- in a row the search reaches late, or in the last row -- is found as
    the separate check finds it, in both row orders; a valid CSR gives the
    general path's labels (by smallest vertex with ``smallest``)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    g = _csr(rng, n, int(rng.integers(0, 3 * n)), np.float64, dtype, False)
    indptr, indices = g.indptr.copy(), g.indices.copy()
    if spoil == "indptr" and n > 1:
        indptr[rng.integers(1, n)] = rng.choice([-1, indices.size + 1, rng.integers(0, 2 * n)])
    elif spoil == "index" and indices.size:
        indices[rng.integers(0, indices.size)] = rng.choice([-1, n, n + 7, -2**30])
    valid = True
    try:
        _input.csr(indptr, indices)
    except ValueError:
        valid = False
    for backward in (False, True):
        out = cpu_graph.checked_components("csr", indptr, indices, n, True, backward, False,
                                           smallest)
        assert (out is not None) == valid
        if valid:
            want = cpu_strong.strong_components("csr", (indptr, indices), n,
                                                rows="backward" if backward else "forward")
            labels = want[1]
            if smallest:
                _, first = np.unique(labels, return_index=True)
                rank = np.empty(first.size, np.int64)
                rank[np.argsort(first)] = np.arange(first.size)
                labels = rank[labels]
            assert out[0] == want[0]
            np.testing.assert_array_equal(out[1], labels)


def _giant_with_unread_rows(shape):
    """A graph of one strong component on which the search stops early
    (every vertex visited, the last one reaching the root) with entries of
    rows on its path not read yet, and the positions of such entries:
    ``(indptr, indices, forward, backward)``, where ``forward`` lists
    entries the search reading rows forward never reads, ``backward``
    those it never reads reading them backward.  Every such entry is 0
    (an edge back to the root).

    - "star": 0 -> 1..k and back, row 0 = [0, 1..k, 1 x 300, 0]: the path
      at the stop is 0 alone, its unread entries many (the search checks
      them row by row);
    - "cycle": 0 -> 1 -> ... -> n - 1 -> 0, row v = [0, v + 1, 0]: the
      path at the stop holds every vertex, each row an unread entry (the
      search checks every entry in one sweep)."""
    if shape == "star":
        k = 50
        rows = [[0] + list(range(1, k + 1)) + [1] * 300 + [0]] + [[0]] * k
        forward, backward = [len(rows[0]) - 1], [0]
    else:
        n = 200
        rows = [[0, v + 1, 0] for v in range(n - 1)] + [[0]]
        forward, backward = list(range(2, 3 * (n - 1), 3)), list(range(0, 3 * (n - 1), 3))
    indptr = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=indptr[1:])
    indices = np.concatenate([np.array(r, np.int64) for r in rows])
    return indptr, indices, forward, backward


@pytest.mark.parametrize("shape", ["star", "cycle"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_strong_search_checks_rows_it_stops_in(shape, dtype):
    """When the search stops early (one component left, every vertex
    visited), the entries of the rows on its path not read yet are checked
    all the same -- row by row behind a short path, in one sweep over every
    entry behind a long one: an index out of range in any of them makes
    the CSR invalid, in both row orders; untouched, one component."""
    indptr, indices, forward, backward = _giant_with_unread_rows(shape)
    n = indptr.size - 1
    assert (indices[forward] == 0).all() and (indices[backward] == 0).all()
    for backward_rows in (False, True):
        out = cpu_graph.checked_components("csr", indptr.astype(dtype), indices.astype(dtype),
                                           n, True, backward_rows, False)
        assert out[0] == 1 and not out[1].any()
    rng = np.random.default_rng(len(indices))
    for backward_rows, unread in ((False, forward), (True, backward)):
        for at in rng.choice(unread, min(4, len(unread)), replace=False):
            for bad in (-1, n, np.iinfo(dtype).max):
                spoiled = indices.astype(dtype)
                spoiled[at] = bad
                out = cpu_graph.checked_components("csr", indptr.astype(dtype), spoiled, n, True,
                                                   backward_rows, False)
                assert out is None
    with pytest.raises(ValueError):
        spoiled = indices.astype(dtype)
        spoiled[forward[-1]] = n
        connected_components((indptr.astype(dtype), spoiled), connection="strong")


@pytest.mark.parametrize("family", ["rmat", "cycle", "small_sccs", "road_both", "multi"])
def test_strong_by_smallest_vertex_every_form(family):
    """``smallest`` (the GPU backend's numbering, for the small CuPy graphs
    solved on the host): SciPy's partition numbered by smallest vertex
    from a CSR, a CSC (searched as the transpose graph, unchanged) and an
    edge list, int32 and int64."""
    e = FAMILIES[family](3000, seed=4)
    n = e.n_vertices
    g = sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(n, n))
    _, labels = scipy_cc(g, directed=True, connection="strong")
    _, first = np.unique(labels, return_index=True)
    rank = np.empty(first.size, np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    want = rank[labels]
    csr, csc = g.tocsr(), g.tocsc()
    for dtype in (np.int32, np.int64):
        for kind, a, b in (("csr", csr.indptr, csr.indices), ("csc", csc.indptr, csc.indices),
                           ("edges", e.src, e.dst)):
            count, got = cpu_graph.checked_components(kind, a.astype(dtype), b.astype(dtype), n,
                                                      strong=True, smallest=True)
            assert count == want.max() + 1
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("family", ["chain", "cycle", "uniform", "small_sccs"])
def test_labels_in_mapped_memory_or_numpys(family):
    """Labels from ``_core.int32_array`` (large graphs) or ``np.empty``
    (small ones): the same components either way, weak and strong, and an
    array that stays valid, writable and of its own after the call."""
    from meshccl import _tuning

    e = FAMILIES[family](3000, seed=2)
    n = e.n_vertices
    g = sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(n, n)).tocsr()
    for connection in ("weak", "strong"):
        want = scipy_cc(g, directed=True, connection=connection)
        got = []
        for first in (0, 1 << 40):
            with _tuning.override(CPU_GRAPH_MAPPED_LABELS=first):
                got.append(connected_components(g, directed=True, connection=connection))
        for count, labels in got:
            same((count, labels), want)
            assert labels.flags.writeable and labels.flags.c_contiguous
        view = got[0][1][1:]
        del got
        np.testing.assert_array_equal(view, want[1][1:])


def test_int32_array():
    """An uninitialised int32 array of n entries: any n, written and read
    like any NumPy array, its memory kept while a view of it lives."""
    from meshccl._cpu.image import _core

    for n in (0, 1, 1000, (1 << 21) + 3):
        a = _core.int32_array(n)
        assert a.shape == (n,) and a.dtype == np.int32
        a[:] = np.arange(n, dtype=np.int32)
        tail = a[n // 2:]
        del a
        np.testing.assert_array_equal(tail, np.arange(n // 2, n, dtype=np.int32))
