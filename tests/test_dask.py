"""meshccl.dask.label against meshccl.label on the whole array, value for
value (CPU chunks; skipped without Dask)."""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
import dask  # noqa: E402

import meshccl  # noqa: E402
import meshccl.dask as mdask  # noqa: E402
from meshccl import _tuning  # noqa: E402

from conftest import HAVE_GPU, random_chunks  # noqa: E402

# (shape, chunks): uneven chunks, one chunk, chunks of one cell
CASES = [
    ((17,), 5), ((9,), 1), ((12,), 12),
    ((7, 9), (3, 4)), ((8, 8), ((1, 3, 4), (5, 2, 1))), ((6, 5), 1), ((5, 7), (5, 7)),
    ((4, 5, 6), (2, 3, 4)), ((5, 4, 3), ((1, 4), (2, 2), (1, 1, 1))),
    ((3, 4, 3, 4), (2, 3, 2, 3)),
]


def _chunked(x, chunks, cupy, opts):
    """``x`` as a Dask array of ``chunks`` (CuPy chunks with ``cupy``), and
    ``opts['mask']`` likewise, in place."""
    mask = opts.pop("mask", None)
    image = da.from_array(x, chunks=chunks)
    if mask is not None:
        opts["mask"] = da.from_array(mask, chunks=chunks)
    if cupy:
        import cupy as cp

        image = image.map_blocks(cp.asarray)
        if mask is not None:
            opts["mask"] = opts["mask"].map_blocks(cp.asarray)
    return image


def _check(x, chunks, scheduler="sync", cupy=False, low_memory=False, **opts):
    want, n_want, c_want = meshccl.label(x, return_num=True, return_counts=True, **opts)
    image = _chunked(x, chunks, cupy, opts)
    got, n, counts = mdask.label(image, return_num=True, return_counts=True,
                                 low_memory=low_memory, **opts)
    assert got.chunks == image.chunks and got.dtype == np.int64
    got, n, counts = dask.compute(got, n, counts, scheduler=scheduler)
    if cupy:
        assert type(got).__module__.startswith("cupy")
        got = got.get()
    np.testing.assert_array_equal(got, want)
    assert int(n) == n_want
    np.testing.assert_array_equal(counts, c_want)


@pytest.mark.parametrize("shape,chunks", CASES)
def test_plain_every_connectivity(shape, chunks):
    rng = np.random.default_rng(sum(shape))
    x = (rng.random(shape) < 0.45).astype(np.uint8)
    for c in range(1, len(shape) + 1):
        _check(x, chunks, connectivity=c)


@pytest.mark.parametrize("shape,chunks", CASES)
def test_values_background(shape, chunks):
    rng = np.random.default_rng(7 + sum(shape))
    x = rng.integers(0, 3, shape)
    _check(x, chunks, background=-1)
    _check(x, chunks, background=2, connectivity=1)


@pytest.mark.parametrize("shape,chunks", CASES)
def test_periodic(shape, chunks):
    rng = np.random.default_rng(11 + sum(shape))
    x = (rng.random(shape) < 0.4).astype(np.int32)
    if len(shape) < 4:  # 4-D: the wrap at full connectivity is slow (3^4 halo pieces a chunk)
        _check(x, chunks, periodic=True)
    _check(x, chunks, periodic=True, connectivity=1)
    per = [i % 2 == 0 for i in range(len(shape))]
    _check(x, chunks, periodic=per)


@pytest.mark.parametrize("shape,chunks", CASES[::2])
def test_mask_tolerance(shape, chunks):
    rng = np.random.default_rng(13 + sum(shape))
    f = rng.random(shape).astype(np.float32)
    m = rng.random(shape) < 0.8
    _check(f, chunks, tolerance=0.3, background=-1)
    _check(f, chunks, tolerance=0.2, mask=m, background=-1, connectivity=1)
    _check((f < 0.5), chunks, mask=m, periodic=True)


def test_bool_background_and_floats():
    rng = np.random.default_rng(3)
    b = rng.random((9, 10)) < 0.5
    _check(b, (4, 3), background=1)
    f = rng.random((9, 10)) * 3
    _check(f, (2, 5))


def test_column_order_quirk():
    # non-bool (a, b, 1) volumes are numbered in column order, as skimage
    rng = np.random.default_rng(4)
    x = rng.integers(0, 3, (6, 5, 1))
    _check(x, (4, 2, 1))
    _check(x, (4, 2, 1), periodic=(False, True, False))
    _check(x > 0, (2, 3, 1))


def test_first_cell_in_later_chunk_earlier_row():
    # the component of the right chunk starts on row 0; the left chunk's
    # component starts on row 1: global order, not chunk order
    x = np.array([[0, 0, 0, 1],
                  [1, 0, 0, 1],
                  [1, 1, 1, 1]])
    got = mdask.label(da.from_array(x, chunks=(3, 2)), connectivity=1).compute()
    np.testing.assert_array_equal(got, meshccl.label(x, connectivity=1))
    x = np.array([[0, 0, 0, 1],
                  [1, 0, 0, 0],
                  [1, 0, 0, 1]])
    got = mdask.label(da.from_array(x, chunks=(2, 2)), connectivity=1).compute()
    np.testing.assert_array_equal(got, [[0, 0, 0, 1], [2, 0, 0, 0], [2, 0, 0, 3]])


def test_empty_and_unsupported():
    x = np.zeros((0, 4), np.uint8)
    got, n = mdask.label(da.from_array(x, chunks=2), return_num=True)
    assert got.compute().shape == (0, 4) and int(n) == 0
    assert mdask.label(da.from_array(x, chunks=2), return_counts=True)[1].compute().tolist() == [0]
    y = da.ones((4, 4), chunks=2)
    with pytest.raises(NotImplementedError, match="bonds"):
        mdask.label(y, bonds=np.ones((2, 4, 4), bool))
    with pytest.raises(NotImplementedError, match="axes"):
        mdask.label(y, axes=(1,))
    with pytest.raises(ValueError, match="periodic"):
        mdask.label(y, periodic=(True,))
    with pytest.raises(ValueError, match="connectivity"):
        mdask.label(y, connectivity=3)
    with pytest.raises(ValueError, match="tolerance"):
        mdask.label(y, tolerance=-1)
    with pytest.raises(TypeError):
        mdask.label(y.astype(complex))
    with pytest.raises(NotImplementedError, match="0-d"):
        mdask.label(da.ones((), chunks=()))


def test_many_faces_tree():
    # two children a node: a tree of several levels
    rng = np.random.default_rng(5)
    x = (rng.random((15, 16)) < 0.6).astype(np.uint8)
    with _tuning.override(DASK_FAN_IN=2):
        _check(x, (3, 4), periodic=True)
        _check(x, (2, 5), connectivity=1)


def test_distributed_local_cluster(local_cluster):
    rng = np.random.default_rng(9)
    x = (rng.random((20, 30)) < 0.5).astype(np.uint8)
    _check(x, (6, 7), scheduler=None, periodic=(True, False), connectivity=2)
    _check(x, (20, 4), scheduler=None, connectivity=1)
    # low_memory on an input persisted on the cluster: the bound copy of
    # its graph points at the same data
    image = da.from_array(x, chunks=(7, 8)).persist()
    got, n = mdask.label(image, return_num=True, low_memory=True)
    got, n = dask.compute(got, n)
    np.testing.assert_array_equal(got, meshccl.label(x))
    assert int(n) == meshccl.label(x, return_num=True)[1]


@pytest.mark.parametrize("shape,chunks", CASES[::3] + [((64, 48), (20, 16)), ((24, 20, 18), 8)])
@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_cupy_chunks(shape, chunks):
    rng = np.random.default_rng(17 + sum(shape))
    x = (rng.random(shape) < 0.5).astype(np.uint8)
    m = rng.random(shape) < 0.9
    f = rng.random(shape).astype(np.float32)
    for c in range(1, len(shape) + 1):
        _check(x, chunks, cupy=True, connectivity=c)
        _check(x, chunks, cupy=True, connectivity=c, periodic=True, mask=m)
    _check(f, chunks, cupy=True, tolerance=0.2, background=-1)
    _check(x, chunks, cupy=True, low_memory=True, mask=m)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_dask_cuda_cluster(cuda_cluster):
    rng = np.random.default_rng(19)
    x = (rng.random((96, 80)) < 0.5).astype(np.uint8)
    _check(x, (32, 20), scheduler=None, cupy=True, periodic=True)


def test_threaded_scheduler_and_low_memory():
    rng = np.random.default_rng(21)
    x = (rng.random((23, 19)) < 0.55).astype(np.uint8)
    m = rng.random((23, 19)) < 0.9
    _check(x, (5, 4), scheduler="threads", connectivity=2, periodic=(False, True))
    for chunks in ((5, 4), ((10, 13), (1, 18))):
        _check(x, chunks, scheduler="threads", low_memory=True, mask=m)
    _check(x[:8, :7], 1, scheduler="threads", low_memory=True, mask=m[:8, :7])
    _check(x.reshape(23, 19, 1), (4, 3, 1), low_memory=True)  # column-order quirk
    f = rng.random((6, 7, 8)).astype(np.float32)
    _check(f, (2, 3, 3), low_memory=True, tolerance=0.25, background=-1, periodic=True)


def test_spiral_across_many_chunks():
    # one wall and one corridor winding through every chunk
    from meshccl.patterns import spiral

    s = spiral(40)
    _check(s, (7, 6), connectivity=1)
    _check(s, (7, 6), connectivity=2, scheduler="threads")
    _check(s, (40, 3), connectivity=1, background=-1)
    _check(np.stack([s, s[::-1]]), (1, 9, 8), connectivity=1, low_memory=True)


def test_bad_input_named():
    y = da.ones((6, 6), chunks=3)
    with pytest.raises(ValueError, match=r"mask must have the image's shape \(6, 6\), got \(6, 5\)"):
        mdask.label(y, mask=np.ones((6, 5), bool))
    unknown = y[y[:, 0] > 0]
    with pytest.raises(ValueError, match="image has chunks of unknown size"):
        mdask.label(unknown)
    with pytest.raises(ValueError, match="mask has chunks of unknown size"):
        mdask.label(da.ones((6, 6), chunks=3), mask=unknown > 0)
    # a NumPy image and a mask chunked otherwise are accepted (asarray, rechunk)
    x = np.eye(6, dtype=np.uint8)
    got = mdask.label(x, mask=da.from_array(np.ones((6, 6), bool), chunks=(2, 5)))
    assert got.chunks == da.asarray(x).chunks
    np.testing.assert_array_equal(got.compute(), meshccl.label(x))


def test_zarr_round_trip(tmp_path):
    # the out-of-core recipe: zarr in, labels written back chunk by chunk
    zarr = pytest.importorskip("zarr")
    rng = np.random.default_rng(23)
    x = (rng.random((30, 26, 20)) < 0.4)
    src = str(tmp_path / "in.zarr")
    da.from_array(x, chunks=(8, 13, 7)).to_zarr(src)
    for low in (False, True):
        labels, n = mdask.label(da.from_zarr(src), connectivity=1, return_num=True,
                                low_memory=low)
        dst = str(tmp_path / f"out-{low}.zarr")
        _, n = dask.compute(labels.to_zarr(dst, compute=False), n, scheduler="threads")
        want, n_want = meshccl.label(x, connectivity=1, return_num=True)
        np.testing.assert_array_equal(zarr.open_array(dst, mode="r")[:], want)
        assert int(n) == n_want


def _check_numbering(x, chunks, scheduler="sync", cupy=False, **opts):
    """'sequential' labels are the whole-array labels under a bijection,
    1..N, with counts permuted alike; 'first-cell' labels equal
    meshccl.label's own 'first-cell' labels; 'raster' equal its labels."""
    want, n_want, c_want = meshccl.label(x, return_num=True, return_counts=True, **opts)
    first_want = meshccl.label(x, numbering="first-cell", **opts)
    image = _chunked(x, chunks, cupy, opts)
    seq, n, counts = mdask.label(image, return_num=True, return_counts=True,
                                 numbering="sequential", **opts)
    first, n_first = mdask.label(image, return_num=True, numbering="first-cell", **opts)
    raster = mdask.label(image, **opts)
    seq, n, counts, first, n_first, raster = dask.compute(seq, n, counts, first, n_first,
                                                          raster, scheduler=scheduler)
    if cupy:
        seq, first, raster = seq.get(), first.get(), raster.get()
    np.testing.assert_array_equal(raster, want)
    np.testing.assert_array_equal(first, first_want)
    assert int(n) == int(n_first) == n_want
    np.testing.assert_array_equal(seq == 0, want == 0)
    # a bijection of 1..N onto 1..N: each whole-array label meets one
    # sequential label and the reverse
    perm = np.zeros(n_want + 1, np.int64)
    perm[want.ravel()] = seq.ravel()
    np.testing.assert_array_equal(perm[want], seq)
    assert sorted(perm[1:].tolist()) == list(range(1, n_want + 1))
    assert counts[0] == c_want[0]
    np.testing.assert_array_equal(counts[perm[1:]], c_want[1:])


@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_numberings_random_chunkings(ndim):
    rng = np.random.default_rng(31 + ndim)
    side = {1: 40, 2: 19, 3: 9}[ndim]
    for trial in range(4):
        shape = tuple(int(s) for s in rng.integers(side // 2, side + 1, ndim))
        x = (rng.random(shape) < 0.5).astype(np.uint8)
        chunks = random_chunks(shape, rng)
        c = int(rng.integers(1, ndim + 1))
        _check_numbering(x, chunks, connectivity=c)
        per = tuple(bool(p) for p in rng.random(ndim) < 0.5)
        _check_numbering(x, chunks, connectivity=c, periodic=per, scheduler="threads")
        v = rng.integers(0, 3, shape)
        _check_numbering(v, chunks, background=-1)


def test_numberings_lattice_and_quirk():
    rng = np.random.default_rng(37)
    f = rng.random((11, 9, 7)).astype(np.float32)
    m = rng.random((11, 9, 7)) < 0.8
    _check_numbering(f, ((4, 7), (2, 3, 4), (7,)), tolerance=0.3, mask=m, background=-1)
    q = rng.integers(0, 3, (6, 5, 1))  # skimage's column order for (a, b, 1)
    _check_numbering(q, (4, 2, 1))
    _check_numbering(np.stack([q[..., 0]] * 3, axis=-1), ((1, 5), (2, 3), 1))


def test_sequential_numbering_is_deterministic_and_chunk_ordered():
    x = np.array([[0, 0, 0, 1],
                  [1, 0, 0, 0],
                  [1, 0, 0, 1]])
    image = da.from_array(x, chunks=(2, 2))
    got = mdask.label(image, connectivity=1, numbering="sequential")
    # chunks in C order, each chunk's components by first cell
    np.testing.assert_array_equal(got.compute(), [[0, 0, 0, 2], [1, 0, 0, 0], [1, 0, 0, 3]])
    np.testing.assert_array_equal(got.compute(scheduler="threads"), got.compute())


def test_numbering_refused_by_name():
    y = da.ones((4, 4), chunks=2)
    with pytest.raises(ValueError, match="numbering must be one of .* got 'dense'"):
        mdask.label(y, numbering="dense")
    with pytest.raises(ValueError, match="return_counts needs numbering"):
        mdask.label(y, numbering="first-cell", return_counts=True)


@pytest.mark.parametrize("shape,chunks", [((64, 48), (20, 16)), ((24, 20, 18), (8, 7, 9))])
@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_cupy_chunks_numberings(shape, chunks):
    rng = np.random.default_rng(41)
    x = (rng.random(shape) < 0.5).astype(np.uint8)
    for c in (1, len(shape)):
        _check_numbering(x, chunks, cupy=True, connectivity=c)
        _check_numbering(x, chunks, cupy=True, connectivity=c, periodic=True)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("dtype", [np.int16, np.float64])
def test_cupy_chunks_every_value_width_on_threads(dtype):
    """Values of the widths the GPU's layer kernel copies that other tests
    do not (2 and 8 bytes; 1 and 4 in test_cupy_chunks), on the threaded
    scheduler (each task on its thread's own stream, its results read by
    other threads' tasks), and chunks that are strided views (a transposed
    array)."""
    import cupy as cp

    rng = np.random.default_rng(43)
    x = rng.integers(0, 3, (40, 36, 30)).astype(dtype)
    chunks = ((7, 13, 20), (18, 18), (11, 19))
    _check(x, chunks, scheduler="threads", cupy=True, connectivity=1)
    _check(x, chunks, scheduler="threads", cupy=True, connectivity=3, periodic=True)
    image = da.from_array(x, chunks=chunks).map_blocks(cp.asarray).transpose(2, 0, 1)
    got = mdask.label(image, connectivity=1).compute(scheduler="threads")
    np.testing.assert_array_equal(got.get(), meshccl.label(x.transpose(2, 0, 1), connectivity=1))


def _first_cells_reference(labels):
    """The smallest flat index of each label 1..max (all cells scanned)."""
    flat = np.asarray(labels).ravel().astype(np.int64)
    n = int(flat.max()) if flat.size else 0
    out = np.full(n, flat.size, np.int64)
    np.minimum.at(out, flat[flat > 0] - 1, np.flatnonzero(flat > 0))
    return out


def _first_cells_inputs(rng):
    """Labelled chunks: random densities and connectivities, bool, a single
    label, all background, one cell, snakes whose first cell comes late in
    their bounding box, and labels not numbered in raster order."""
    out = []
    for shape in [(1,), (13,), (1, 9), (9, 1), (7, 11), (5, 6, 7), (4, 1, 6), (3, 4, 5, 2)]:
        for p in (0.0, 0.3, 0.6, 1.0):
            x = rng.random(shape) < p
            for c in range(1, len(shape) + 1):
                out.append(meshccl.label(x.astype(np.uint8), connectivity=c))
    snake = np.zeros((7, 9), np.uint8)
    snake[::2] = 1
    snake[1, -1] = snake[3, 0] = snake[5, -1] = 1
    comb = np.zeros((6, 9), np.uint8)
    comb[-1] = 1
    comb[2:, ::2] = 1  # every tooth's top is a candidate, the first one only is first
    for x in (snake, comb, comb[::-1], np.stack([comb, comb[::-1]], axis=2)):
        out.append(meshccl.label(x, connectivity=1))
    out.append(meshccl.label(rng.integers(0, 3, (6, 5, 1)).astype(np.uint8)))  # column order
    lab = meshccl.label((rng.random((9, 10)) < 0.5).astype(np.uint8), connectivity=1)
    perm = np.concatenate([[0], rng.permutation(int(lab.max())) + 1])
    out.append(perm[lab])  # labels in no particular order
    return out


def test_first_cells_against_a_scan_of_every_cell():
    rng = np.random.default_rng(2026)
    for lab in _first_cells_inputs(rng):
        np.testing.assert_array_equal(mdask._first_cells(lab), _first_cells_reference(lab))


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_first_cells_on_the_gpu():
    """The GPU's ids (chunks.cu's atomic minimum over the candidates) are
    the first cells' global flat indices, for a chunk at the origin and
    for one placed inside a larger array."""
    import cupy as cp

    from meshccl._gpu import chunks

    rng = np.random.default_rng(2027)
    for lab in _first_cells_inputs(rng):
        want = _first_cells_reference(lab)
        for label_type in (np.int32, np.int64):
            labels = cp.asarray(lab.astype(label_type))
            got = chunks.first_ids(labels, want.size, (0,) * lab.ndim, lab.shape, 1).get()
            np.testing.assert_array_equal(got, want)
            start = tuple(range(2, 2 + lab.ndim))
            shape = tuple(s + 3 + k for k, s in enumerate(lab.shape))
            got = chunks.first_ids(labels, want.size, start, shape, 1).get()
            coords = np.unravel_index(want, lab.shape)
            np.testing.assert_array_equal(
                got, np.ravel_multi_index(tuple(c + s for c, s in zip(coords, start)), shape))


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("connectivity", [1, 3])
def test_cupy_chunks_blobs_odd_chunks(connectivity):
    from meshccl import patterns

    x = patterns.blobs((96, 80, 70), seed=5).astype(np.uint8)
    chunks = ((21, 33, 42), (25, 55), (16, 31, 23))
    _check(x, chunks, scheduler="threads", cupy=True, connectivity=connectivity)
    _check(x, chunks, cupy=True, connectivity=connectivity, periodic=(True, False, True))


def test_distinct_pairs_one_key_and_rows():
    """The face pairs' deduplication: one int64 key below 2**31, rows of two
    ids above; both sorted as numpy.unique sorts rows."""
    rng = np.random.default_rng(47)
    for high in (3, 2**31 - 1, 2**31, 2**62):
        a, b = rng.integers(0, high, 4000), rng.integers(0, high, 4000)
        a, b = np.concatenate([a, a[:500]]), np.concatenate([b, b[:500]])
        got = mdask._distinct_pairs(a, b)
        want = np.unique(np.stack([a, b], axis=1), axis=0)
        np.testing.assert_array_equal(np.stack(got, axis=1), want)
    empty = mdask._distinct_pairs(np.empty(0, np.int64), np.empty(0, np.int64))
    assert [e.size for e in empty] == [0, 0]


def test_lookup_both_ways():
    """The numbering's search of a chunk's ids among sorted keys: sorted ids
    with few keys in their range search the keys instead; the same answer
    as a search of every id, in the order of the ids."""
    rng = np.random.default_rng(53)
    for n_keys, n_values, ordered in [(0, 10, True), (10, 0, True), (5, 1000, True),
                                      (3000, 1000, True), (50, 1000, False), (7, 1, True)]:
        keys = np.unique(rng.integers(0, 5000, n_keys)).astype(np.int64)
        values = rng.choice(5000, n_values, replace=False).astype(np.int64)
        values = np.sort(values) if ordered else values
        found, at = mdask._lookup(keys, values)
        want = np.isin(values, keys)
        np.testing.assert_array_equal(found, want)
        np.testing.assert_array_equal(keys[at], values[want])
