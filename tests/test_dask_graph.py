"""meshccl.dask.connected_components against scipy.sparse.csgraph on graphs
that fit (CPU partitions; skipped without Dask)."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components as scipy_cc

da = pytest.importorskip("dask.array")
import dask  # noqa: E402

import meshccl.dask as mdask  # noqa: E402
from meshccl import _tuning  # noqa: E402

from conftest import HAVE_GPU  # noqa: E402


def _want(src, dst, n):
    g = sp.coo_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    return scipy_cc(g, directed=True, connection="weak")


def _random_chunks(rng, m):
    """A random partition of m rows, empty partitions included."""
    cuts = np.sort(rng.integers(0, m + 1, rng.integers(0, 6)))
    sizes = np.diff(np.concatenate([[0], cuts, [m]]))
    return tuple(int(s) for s in sizes)


def _edges(rng, n, m, loops=True):
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    if loops and m:
        k = rng.integers(0, m, max(1, m // 10))
        dst[k] = src[k]                                   # self-loops
        src = np.concatenate([src, dst[: m // 5]])        # repeated edges, reversed
        dst = np.concatenate([dst, src[: m // 5]])
    return src, dst


def _check(src, dst, n, rows, given_n=True, scheduler="sync", **kw):
    n_want, want = _want(src, dst, n)
    e = da.from_array(np.stack([src, dst], axis=1), chunks=(rows, 2))
    count, labels = mdask.connected_components(e, n=n if given_n else None, **kw)
    count, got = dask.compute(count, labels, scheduler=scheduler)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert int(count) == n_want


@pytest.mark.parametrize("seed", range(12))
def test_random_partitionings(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    m = int(rng.integers(0, 3 * n))
    src, dst = _edges(rng, n, m)
    _check(src, dst, n, _random_chunks(rng, src.size) or 1)
    if src.size:  # n from the edges: the largest vertex + 1
        _check(src, dst, int(max(src.max(), dst.max())) + 1, _random_chunks(rng, src.size),
               given_n=False)


def test_tree_of_several_levels():
    rng = np.random.default_rng(1)
    n = 500
    src, dst = _edges(rng, n, 400)
    with _tuning.override(DASK_FAN_IN=2):
        _check(src, dst, n, 17, chunks=64)
        # a path cut into many partitions in shuffled order: one component
        perm = rng.permutation(n - 1)
        _check(perm, perm + 1, n, 5, scheduler="threads")


def test_isolated_vertices_and_no_edges():
    _check(np.array([3]), np.array([7]), 12, 1)
    _check(np.array([], np.int64), np.array([], np.int64), 5, 1)
    count, labels = mdask.connected_components(da.zeros((0, 2), dtype=np.int32, chunks=1))
    assert int(count) == 0 and labels.compute().shape == (0,)
    # chunks of the labels do not change them
    src = np.array([9, 0, 4])
    dst = np.array([2, 9, 4])
    count, labels = mdask.connected_components(da.from_array(np.stack([src, dst], 1), chunks=1),
                                               n=11, chunks=3)
    assert labels.chunks == ((3, 3, 3, 2),)
    np.testing.assert_array_equal(labels.compute(), _want(src, dst, 11)[1])


def test_dataframe_and_unknown_chunks():
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    rng = np.random.default_rng(3)
    src, dst = _edges(rng, 80, 90)
    df = dd.from_pandas(pd.DataFrame({"src": src, "dst": dst.astype(np.uint16), "w": 1.0}),
                        npartitions=4)
    count, labels = mdask.connected_components(df, n=80)
    n_want, want = _want(src, dst, 80)
    np.testing.assert_array_equal(labels.compute(), want)
    assert int(count) == n_want
    # a Dask array whose row chunks are unknown (from a DataFrame, filtered)
    arr = df[["src", "dst"]].to_dask_array()
    assert np.isnan(arr.shape[0])
    count, labels = mdask.connected_components(arr, n=80)
    np.testing.assert_array_equal(labels.compute(), want)


def test_numpy_input_and_split_columns():
    rng = np.random.default_rng(4)
    src, dst = _edges(rng, 30, 20)
    e = np.stack([src, dst], 1)
    count, labels = mdask.connected_components(e, n=30)
    np.testing.assert_array_equal(labels.compute(), _want(src, dst, 30)[1])
    # the two columns in two chunks are put back into one
    count, labels = mdask.connected_components(da.from_array(e, chunks=(7, 1)), n=30)
    np.testing.assert_array_equal(labels.compute(), _want(src, dst, 30)[1])


def test_local_cluster(local_cluster):
    rng = np.random.default_rng(5)
    src, dst = _edges(rng, 300, 250)
    _check(src, dst, 300, 23, scheduler=None, chunks=50)


def test_bad_input():
    good = da.from_array(np.array([[0, 1]]), chunks=1)
    with pytest.raises(ValueError, match=r"edges must have shape \(m, 2\), got \(4, 3\)"):
        mdask.connected_components(da.zeros((4, 3), dtype=int, chunks=2))
    with pytest.raises(ValueError, match="shape"):
        mdask.connected_components(da.zeros(4, dtype=int, chunks=2))
    with pytest.raises(TypeError, match="edges must be of an integer dtype, got float64"):
        mdask.connected_components(da.zeros((4, 2), chunks=2))
    with pytest.raises(TypeError, match="edges must be"):
        mdask.connected_components([[0, 1]])
    for bad in (-1, 2.0, True, "3"):
        with pytest.raises(ValueError, match=f"n must be None or an int >= 0, got {bad!r}"):
            mdask.connected_components(good, n=bad)
    with pytest.raises(ValueError, match="connection"):
        mdask.connected_components(good, connection="both")
    with pytest.raises(NotImplementedError, match="strong"):
        mdask.connected_components(good, connection="strong")
    with pytest.raises(ValueError, match="vertices < n = 1, got 1"):
        dask.compute(*mdask.connected_components(good, n=1), scheduler="sync")
    neg = da.from_array(np.array([[0, 1], [2, -3]]), chunks=1)
    with pytest.raises(ValueError, match="vertices >= 0, got -3"):
        dask.compute(*mdask.connected_components(neg, n=5), scheduler="sync")
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    df = dd.from_pandas(pd.DataFrame({"u": [0], "v": [1]}), npartitions=1)
    with pytest.raises(ValueError, match=r"columns 'src' and 'dst', got \['u', 'v'\]"):
        mdask.connected_components(df)
    df = dd.from_pandas(pd.DataFrame({"src": [0.0], "dst": [1]}), npartitions=1)
    with pytest.raises(TypeError, match=r"edges\['src'\] must be of an integer dtype"):
        mdask.connected_components(df)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_cupy_partitions():
    import cupy as cp

    rng = np.random.default_rng(6)
    n = 400
    src, dst = _edges(rng, n, 500)
    e = da.from_array(np.stack([src, dst], 1), chunks=(_random_chunks(rng, src.size), 2))
    count, labels = mdask.connected_components(e.map_blocks(cp.asarray), n=n, chunks=100)
    count, got = dask.compute(count, labels, scheduler="sync")
    assert type(got).__module__.startswith("cupy")
    n_want, want = _want(src, dst, n)
    np.testing.assert_array_equal(got.get(), want)
    assert int(count) == n_want


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_dask_cuda_cluster_graph(cuda_cluster):
    import cupy as cp

    rng = np.random.default_rng(7)
    n = 1000
    src, dst = _edges(rng, n, 900)
    e = da.from_array(np.stack([src, dst], 1), chunks=(97, 2)).map_blocks(cp.asarray)
    count, labels = dask.compute(*mdask.connected_components(e, n=n, chunks=300))
    n_want, want = _want(src, dst, n)
    np.testing.assert_array_equal(cp.asnumpy(labels), want)
    assert int(count) == n_want
