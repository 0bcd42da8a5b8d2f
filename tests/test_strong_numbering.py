"""Strong components numbered as the installed SciPy numbers them, for every
input form: data types, rows sorted or not, duplicates, BSR blocks with
zeros -- compared with the SciPy that is installed, whichever version it is
(SciPy 1.18 changed both its search and its reading of non-float64
matrices: meshccl.graph._scipy) -- and both row orders of the CPU search
against a plain recursive Tarjan search."""

import sys

import numpy as np
import pytest
import scipy
import scipy.sparse as sp
from hypothesis import given, settings
from scipy.sparse.csgraph import connected_components as scipy_cc

from conftest import csr_as_drawn, drawn_graphs, examples, row_pointers
from meshccl._cpu import graph as cpu_graph
from meshccl._cpu import strong as cpu_strong
from meshccl.graph import Edges, _scipy, connected_components

DTYPES = [np.bool_, np.int8, np.uint16, np.int32, np.int64, np.float32, np.float64]


def strong(g):
    return connected_components(g, directed=True, connection="strong")


def scipy_reference(g):
    """A matrix SciPy labels right with meshccl's labels: ``g`` itself, but
    up to SciPy 1.17 the CSR SciPy reads of a float64 matrix with only the
    last of each repeated entry of a row kept.  SciPy 1.17's search
    mislabels, or never finishes, when a row names a neighbour it has just
    pushed on its stack (it links that vertex to itself); otherwise a
    repeat moves the neighbour to the top of its stack, as the last entry
    alone puts it there -- which is what meshccl does."""
    if _scipy.version() >= (1, 18) or not sp.issparse(g) or g.dtype != np.float64:
        return g
    g = g.tocsr()  # (as SciPy reads it: a CSC's repeats stay, next to each other)
    n = g.shape[0]
    rows = np.repeat(np.arange(n), np.diff(g.indptr))
    key = (rows * n + g.indices)[::-1]
    _, last = np.unique(key, return_index=True)  # (the first in reverse: the last)
    keep = np.zeros(g.nnz, bool)
    keep[g.nnz - 1 - last] = True
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(rows[keep], minlength=n), out=indptr[1:])
    return type(g)((g.data[keep], g.indices[keep], indptr), shape=g.shape)


def same_as_scipy(g):
    want = scipy_cc(scipy_reference(g), directed=True, connection="strong")
    got = strong(g)
    assert got[0] == want[0]
    assert got[1].dtype == want[1].dtype
    np.testing.assert_array_equal(got[1], want[1])


def test_issue_example():
    """An int32 CSR whose one row is stored unsorted."""
    g = sp.csr_matrix((np.ones(2, np.int32), [2, 1], [0, 2, 2, 2]), shape=(3, 3))
    same_as_scipy(g)
    # 1.17 sorts the row to [1, 2] and visits the last successor first; 1.18
    # reads [2, 1] as stored and visits the first first: 2 first either way
    assert strong(g)[1].tolist() == [2, 1, 0]
    f = sp.csr_matrix((np.ones(2), [2, 1], [0, 2, 2, 2]), shape=(3, 3))
    same_as_scipy(f)
    # float64: [2, 1] as stored in both; 1.17 visits 1 first, 1.18 visits 2 first
    assert strong(f)[1].tolist() == ([2, 0, 1] if _scipy.version() < (1, 18) else [2, 1, 0])


def _unsorted_csr(rng, n, m, dtype, duplicates):
    """A CSR with rows in random order (and repeated entries when asked)."""
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    if not duplicates:
        key = np.unique(src * n + dst)
        src, dst = np.divmod(key, n)
    perm = rng.permutation(src.size)
    src, dst = src[perm], dst[perm]
    order = np.argsort(src, kind="stable")
    indptr = row_pointers(src, n)
    data = (rng.integers(1, 4, src.size)).astype(dtype)
    return sp.csr_matrix((data, dst[order], indptr), shape=(n, n))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("duplicates", [False, True])
def test_every_dtype_sorted_or_not(dtype, duplicates):
    rng = np.random.default_rng(int(np.dtype(dtype).num) + 7 * duplicates)
    for n, m in ((6, 12), (40, 90), (300, 700)):
        g = _unsorted_csr(rng, n, m, dtype, duplicates)
        assert not g.has_sorted_indices
        same_as_scipy(g)
        same_as_scipy(sp.csr_array(g))
        s = g.copy()
        s.sort_indices()  # (keeps duplicates apart from summing them)
        same_as_scipy(s)
        for fmt in ("csc", "coo", "lil", "dok"):
            same_as_scipy(g.asformat(fmt))
        same_as_scipy(g.toarray())


@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_bsr_blocks_with_zeros(dtype):
    """BSR blocks hold zeros that are edges up to SciPy 1.17 and none from
    1.18 (weak components too); blocks stored in any column order."""
    rng = np.random.default_rng(4)
    for blocksize in ((1, 1), (2, 2), (3, 3)):
        n = 12 * blocksize[0]
        dense = (rng.random((n, n)) < 0.08) * rng.integers(1, 3, (n, n))
        g = sp.bsr_matrix(dense.astype(dtype), blocksize=blocksize)
        perm = []  # each block row's blocks in reverse column order
        for r in range(g.indptr.size - 1):
            perm.extend(range(g.indptr[r + 1] - 1, g.indptr[r] - 1, -1))
        shuffled = sp.bsr_matrix((g.data[perm], g.indices[perm], g.indptr), shape=g.shape)
        for h in (g, shuffled):
            same_as_scipy(h)
            want = scipy_cc(h, directed=True, connection="weak")
            got = connected_components(h, directed=True, connection="weak")
            assert got[0] == want[0]
            np.testing.assert_array_equal(got[1], want[1])


def test_tuple_and_edges_read_as_scipy_reads_float64():
    """A CSR tuple is read as stored (as SciPy reads a float64 CSR), an edge
    list as a COO matrix."""
    rng = np.random.default_rng(9)
    g = _unsorted_csr(rng, 200, 500, np.float64, True)
    want = scipy_cc(scipy_reference(g), directed=True, connection="strong")
    got = strong((g.indptr, g.indices))
    assert got[0] == want[0]
    np.testing.assert_array_equal(got[1], want[1])
    c = g.tocoo()
    want = scipy_cc(sp.coo_matrix((np.ones(c.nnz), (c.row, c.col)), shape=g.shape),
                    directed=True, connection="strong")
    got = strong(Edges(c.row, c.col, 200))
    np.testing.assert_array_equal(got[1], want[1])


def test_the_installed_scipy_picks_the_row_order():
    """Out-trees whose leaves the two searches number in opposite orders:
    meshccl's choice for the installed SciPy gives SciPy's labels, the other
    one does not."""
    g = sp.csr_matrix((np.ones(3), [1, 2, 3], [0, 3, 3, 3, 3]), shape=(4, 4))
    want = scipy_cc(g, directed=True, connection="strong")[1]
    arrays = (g.indptr.astype(np.int64), g.indices.astype(np.int64))
    mine = _scipy.strong_rows()
    other = ({"forward", "backward"} - {mine}).pop()
    np.testing.assert_array_equal(cpu_strong.strong_components("csr", arrays, 4)[1], want)
    np.testing.assert_array_equal(cpu_strong.strong_components("csr", arrays, 4, rows=mine)[1],
                                  want)
    assert cpu_strong.strong_components("csr", arrays, 4, rows=other)[1].tolist() != \
        want.tolist()
    assert scipy.__version__.startswith(f"{_scipy.version()[0]}.{_scipy.version()[1]}")
    with pytest.raises(ValueError, match="rows must be one of .*got 'sideways'"):
        cpu_strong.strong_components("csr", arrays, 4, rows="sideways")


def tarjan_reference(indptr, indices, backward):
    """Recursive Tarjan: roots 0, 1, ..., successors in row order (reversed
    when ``backward``), components numbered as they complete."""
    n = indptr.size - 1
    index, low, on_stack = [-1] * n, [0] * n, [False] * n
    stack, labels, counter = [], [-1] * n, [0, 0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack[v] = True
        row = indices[indptr[v]:indptr[v + 1]]
        for w in (row[::-1] if backward else row):
            if index[w] < 0:
                visit(w)
                low[v] = min(low[v], low[w])
            elif on_stack[w]:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            while True:
                w = stack.pop()
                on_stack[w] = False
                labels[w] = counter[1]
                if w == v:
                    break
            counter[1] += 1

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * n + 100))
    try:
        for v in range(n):
            if index[v] < 0:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return counter[1], np.asarray(labels)


@settings(max_examples=examples(200))
@given(drawn_graphs(30, 90))
def test_both_row_orders_against_recursive_tarjan(case):
    """Rows as drawn (unsorted, repeats anywhere): both orders give the
    recursive search's labels, and every edge runs from a component to one
    completed no later (labels never rise along an edge)."""
    n, edges = case
    src, dst, indptr, indices = csr_as_drawn(n, edges)
    for rows in ("forward", "backward"):
        count, labels = cpu_strong.strong_components("csr", (indptr, indices), n, rows=rows)
        want_count, want = tarjan_reference(indptr, indices, rows == "backward")
        assert count == want_count
        np.testing.assert_array_equal(labels, want)
        assert (labels[src] >= labels[dst]).all()


@pytest.mark.parametrize("per_vertex", [0.5, 1.0, 1.5, 1.6, 3.0])
def test_both_loop_shapes(per_vertex):
    """Random graphs either side of the mean row length (1.5) at which the
    search changes the shape of its loops: the recursive search's labels in
    both row orders, checked and not."""
    rng = np.random.default_rng(int(per_vertex * 10))
    n = 400
    m = int(per_vertex * n)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    order = np.argsort(src, kind="stable")
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    indices = dst[order]
    for rows in ("forward", "backward"):
        want_count, want = tarjan_reference(indptr, indices, rows == "backward")
        count, labels = cpu_strong.strong_components("csr", (indptr, indices), n, rows=rows)
        assert count == want_count
        np.testing.assert_array_equal(labels, want)
        got = cpu_graph.checked_components("csr", indptr, indices, n, True, rows == "backward")
        assert got[0] == want_count
        np.testing.assert_array_equal(got[1], want)


def test_deep_graphs_both_orders():
    """A path and a cycle of 300 000 vertices, no recursion in either order."""
    n = 300_000
    v = np.arange(n, dtype=np.int64)
    for dst in (v + 1, (v + 1) % n, v - 1):
        keep = (dst >= 0) & (dst < n)
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(v[keep], minlength=n), out=indptr[1:])
        for rows in ("forward", "backward"):
            count, labels = cpu_strong.strong_components("csr", (indptr, dst[keep]), n,
                                                         rows=rows)
            if keep.all() and dst[-1] == 0:
                assert count == 1 and not labels.any()
            else:
                assert count == n
                assert (labels[v[keep]] >= labels[dst[keep]]).all()


@pytest.mark.parametrize("shape", ["chain", "ring", "2-cycles in a row", "big ring"])
def test_deep_graphs_as_scipy(shape):
    """Graphs a million vertices deep through the public call, labelled as
    the installed SciPy labels them: a path, a ring (one component, the
    search stopping early), 2-cycles in a row (each linked back to the one
    before), and a ring of over 2**22 vertices (the search's stacks then
    take over 32 MiB)."""
    n = 2**22 + 2**16 if shape == "big ring" else 10**6
    v = np.arange(n, dtype=np.int64)
    if shape == "chain":
        src, dst = v[:-1], v[1:]
    elif shape in ("ring", "big ring"):
        src, dst = v, (v + 1) % n
    else:
        src = np.concatenate([v, v[2::2]])
        dst = np.concatenate([v ^ 1, v[2::2] - 1])
    g = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr()
    same_as_scipy(g)


@pytest.mark.parametrize("version", [(1, 17), (1, 18)])
def test_each_scipy_versions_rules(monkeypatch, version):
    """Whichever SciPy is installed, meshccl follows the rules of the one
    it finds: with the version read as ``version``, labels equal the
    recursive search's on the rows that version reads (sorted for a
    non-float64 matrix up to 1.17, as stored from 1.18; read backwards up
    to 1.17), and a BSR's block zeros are edges up to 1.17 only."""
    monkeypatch.setattr(_scipy, "version", lambda: version)
    old = version < (1, 18)
    issue = sp.csr_matrix((np.ones(2, np.int32), [2, 1], [0, 2, 2, 2]), shape=(3, 3))
    assert strong(issue)[1].tolist() == [2, 1, 0]
    ordered = sp.csr_matrix((np.ones(2), [1, 2], [0, 2, 2, 2]), shape=(3, 3))  # (sorted)
    assert strong(ordered)[1].tolist() == ([2, 1, 0] if old else [2, 0, 1])
    f = sp.csr_matrix((np.ones(2), [2, 1], [0, 2, 2, 2]), shape=(3, 3))
    assert strong(f)[1].tolist() == ([2, 0, 1] if old else [2, 1, 0])
    rng = np.random.default_rng(21)
    for dtype in (np.int32, np.float32, np.float64, np.bool_):
        for _ in range(5):
            g = _unsorted_csr(rng, 50, 140, dtype, True)
            indices = g.indices.copy()
            if old and dtype != np.float64:
                for v in range(50):
                    indices[g.indptr[v]:g.indptr[v + 1]].sort()
            want = tarjan_reference(g.indptr, indices, backward=old)
            got = strong(g)
            assert got[0] == want[0]
            np.testing.assert_array_equal(got[1], want[1])
    dense = np.zeros((8, 8))
    dense[0:2, 2:4] = [[0, 1], [0, 0]]  # a block holding one edge (0 -> 3) and three zeros
    dense[2:4, 0:2] = [[1, 0], [0, 0]]  # and one holding 2 -> 0
    g = sp.bsr_matrix(dense, blocksize=(2, 2))
    assert g.nnz == 8  # (the zeros are stored)
    n, labels = connected_components(g, directed=True, connection="weak")
    # block zeros as edges join 0..3 (and 1 -> 2, ...); without them 1 stays alone
    assert n == (5 if old else 6)
    assert (labels[1] == labels[0]) == old


@pytest.mark.parametrize("types", [(np.int32, np.int32), (np.int64, np.int64),
                                   (np.int32, np.int64), (np.uint16, np.uint16)])
def test_forward_csr_builds_sorted_rows(types):
    """The rows the search reads, against a sort by (source, target): edge
    lists in random order and already in order, a CSC, a CSR whose rows need
    sorting (and one whose rows do not) -- rows of no entry,
    one, a few and hundreds (a hub), repeats kept; int32 results and, from
    the compiled builders themselves, int64 ones."""
    rng = np.random.default_rng(11)
    n = 300
    src = np.concatenate([rng.integers(0, n, 2000), np.full(400, 7), [n - 1]])
    dst = rng.integers(0, n, src.size)
    src[:50] = 0  # (vertex n - 2 and others keep empty rows)
    order = np.lexsort((dst, src))
    indptr = row_pointers(src, n)
    want = (indptr, dst[order])

    def same(got, dtype=np.int32):
        assert got[0].dtype == got[1].dtype == dtype
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])

    s, d = src.astype(types[0]), dst.astype(types[1])
    same(cpu_strong.forward_csr("edges", (s, d), n))
    same(cpu_strong.forward_csr("edges", (s[order], d[order]), n))
    by_target = np.argsort(dst, kind="stable")
    tptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=tptr[1:])
    same(cpu_strong.forward_csr("csc", (tptr.astype(types[0]), s[by_target]), n))
    by_source = np.argsort(src, kind="stable")
    unsorted = d[by_source].copy()
    same(cpu_strong.forward_csr("csr", (indptr.astype(types[0]), unsorted), n, sort_rows=True))
    np.testing.assert_array_equal(unsorted, dst[by_source])  # (the caller's array untouched)
    sorted_rows = d[order]
    got = cpu_strong.forward_csr("csr", (indptr, sorted_rows), n, sort_rows=True)
    same(got)
    for x in (src, dst), (src[order], dst[order]):
        wide = (np.empty(n + 1, np.int64), np.empty(src.size, np.int64))
        cpu_strong._core.rows_of_edges(*x, *wide)
        same(wide, np.int64)
