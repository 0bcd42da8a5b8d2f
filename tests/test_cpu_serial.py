"""The serial CPU plain path (provisional labels per run, the compiled core of
``_cpu/image.py``: ``_cpu/core/image.hpp``) against skimage and against the
per-cell union pass of the lattice path."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from skimage.measure import label as sk_label

import meshccl
from conftest import examples
from meshccl import patterns


@settings(max_examples=examples(200))
@given(data=st.data())
def test_serial_matches_skimage(data):
    ndim = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 7), min_size=ndim, max_size=ndim)))
    a = data.draw(arrays(np.int8, shape, elements=st.integers(0, data.draw(st.integers(1, 3)))))
    conn = data.draw(st.integers(1, ndim))
    bg = data.draw(st.sampled_from([0, 1, -1]))
    got = meshccl.label(a, connectivity=conn, background=bg)
    np.testing.assert_array_equal(got, sk_label(a, connectivity=conn, background=bg))


@settings(max_examples=examples(60))
@given(data=st.data())
def test_serial_matches_lattice_path(data):
    """4-D / 5-D: the plain path against the per-cell path (a mask of ones
    sends the same image through ``_rows``)."""
    ndim = data.draw(st.integers(4, 5))
    shape = tuple(data.draw(st.lists(st.integers(2, 4), min_size=ndim, max_size=ndim)))
    a = data.draw(arrays(np.uint8, shape, elements=st.integers(0, 2)))
    conn = data.draw(st.integers(1, ndim))
    got = meshccl.label(a, connectivity=conn)
    want = meshccl.label(a, connectivity=conn, mask=np.ones(shape, dtype=bool))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("conn", [1, 2, 3])
def test_serial_patterns(conn):
    """Many provisional labels (the equivalence table grows) and long runs."""
    for a in (patterns.percolation((40, 50, 60), 0.3, seed=5), patterns.blobs((33, 70, 41), seed=6),
              patterns.potts((30, 31, 32), seed=7)):
        bg = -1 if a.min() > 0 else 0
        np.testing.assert_array_equal(meshccl.label(a, connectivity=conn, background=bg),
                                      sk_label(a, connectivity=conn, background=bg))
    a = patterns.percolation((300, 400), 0.59, seed=8)
    np.testing.assert_array_equal(meshccl.label(a, connectivity=min(conn, 2)),
                                  sk_label(a, connectivity=min(conn, 2)))


# --- the binary fast path (``bits_into``: rows packed into 64-bit words) ---

BIN_DTYPES = [np.bool_, np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32,
              np.uint64, np.int64, np.float32, np.float64]


def _binary(data, shape, dtype):
    """A background/foreground image of ``dtype``: (background, one value)."""
    if dtype is np.bool_:
        bg, fg = False, True
    else:
        bg = data.draw(st.sampled_from([0, 1] + ([-1] if np.dtype(dtype).kind != "u" else [])))
        fg = data.draw(st.sampled_from([v for v in (0, 1, 2, 7) if v != bg]))
    kind = data.draw(st.sampled_from(["random", "dense", "sparse", "all_fg", "all_bg"]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    p = {"random": 0.5, "dense": 0.9, "sparse": 0.1, "all_fg": 1.0, "all_bg": 0.0}[kind]
    m = rng.random(shape) < p
    if kind == "random" and len(shape) > 1 and shape[0] > 2:
        m[rng.integers(0, shape[0])] = False  # an empty row (or plane)
    return np.where(m, fg, bg).astype(dtype), bg


@settings(max_examples=examples(250))
@given(data=st.data())
def test_bits_matches_skimage(data):
    """1-D to 3-D binary images (widths around the 64-bit word size) against skimage."""
    ndim = data.draw(st.integers(1, 3))
    side = {1: 300, 2: 12, 3: 5}[ndim]
    width = data.draw(st.sampled_from([1, 2, 3, 63, 64, 65, 127, 128, 129, 200]))
    shape = tuple(data.draw(st.lists(st.integers(1, side), min_size=ndim - 1,
                                     max_size=ndim - 1))) + (width,)
    if ndim == 1:
        shape = (data.draw(st.integers(1, side)),)
    dtype = data.draw(st.sampled_from(BIN_DTYPES))
    a, bg = _binary(data, shape, dtype)
    conn = data.draw(st.integers(1, ndim))
    got = meshccl.label(a, connectivity=conn, background=bg)
    np.testing.assert_array_equal(got, sk_label(a, connectivity=conn, background=bg))
    # and the fast path did run (it declines only images with two foreground values)
    keys, shape_sq, conn_sq, n, P = _bits_path(a, conn, bg)
    assert n == got.max()
    if not (ndim == 3 and width == 1 and dtype is not np.bool_):
        # (skimage, and so label(), numbers a non-bool (a, b, 1) array with
        # axes 0 and 2 swapped: the same regions, another order)
        np.testing.assert_array_equal(P.reshape(shape), got)


def _bits_path(a, conn, bg):
    """Label ``a`` through the bit-packed scan alone (asserting that the
    image packs): (keys, shape, connectivity, count, labels)."""
    from meshccl import _validate
    from meshccl._cpu.keys import kernel_keys
    from meshccl._cpu import _core
    from meshccl.neighbourhood import offset_table

    prob = _validate.prepare(a, bg, conn, None)
    keys, has_bg, key, _, _ = kernel_keys(prob.values, prob.has_bg, prob.bgkey, None)
    assert has_bg
    W = prob.shape[-1]
    M = np.empty((a.size // W) * ((W + 63) // 64), dtype=np.uint64)
    assert not _core.pack_rows(keys, M, W, int(key))
    P = np.empty(a.size, dtype=np.int32)
    n = _core.label_bits(M, P, np.asarray(prob.shape, dtype=np.int64),
                         offset_table(prob.shape, prob.connectivity, None))
    return keys, prob.shape, prob.connectivity, n, P


@settings(max_examples=examples(60))
@given(data=st.data())
def test_bits_4d_matches_lattice_path(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=3, max_size=3)))
    shape += (data.draw(st.sampled_from([1, 2, 5, 64, 70])),)
    a, bg = _binary(data, shape, data.draw(st.sampled_from([np.bool_, np.uint8, np.float32])))
    conn = data.draw(st.integers(1, 4))
    got = meshccl.label(a, connectivity=conn, background=bg)
    want = meshccl.label(a, connectivity=conn, background=bg, mask=np.ones(shape, dtype=bool))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("width", [70, 64, 72, 128])
@pytest.mark.parametrize("third", [(0, 0), (4, 63), (2, 5)])
def test_bits_declines_two_foreground_values(width, third):
    """A third value anywhere (first cell, last cell, a middle row) makes the
    fast path decline, also where rows go 8 one-byte cells per load (widths
    that are multiples of 8): 2 and 3 against the foreground 1, whose
    lowest set bit 3 shares."""
    from meshccl._cpu._core import pack_rows

    for value in (2, 3):
        a = np.zeros((5, width), dtype=np.uint8)
        a[4, width - 1] = 1
        a[1, 3] = 1
        a[third[0], min(third[1], width - 1)] = value
        M = np.zeros(5 * ((width + 63) // 64), dtype=np.uint64)
        assert pack_rows(a.ravel(), M, width, 0)
        np.testing.assert_array_equal(meshccl.label(a), sk_label(a))


@settings(max_examples=examples(300))
@given(data=st.data())
def test_pack_rows_matches_cell_by_cell(data):
    """pack_rows (8 one-byte cells per load where the width allows) against
    a cell-by-cell reference: the bits of every row before the first row
    with a third value, and whether there is one."""
    from meshccl._cpu._core import pack_rows

    dtype = data.draw(st.sampled_from([np.bool_, np.uint8, np.int8, np.int16]))
    width = data.draw(st.sampled_from([7, 8, 13, 16, 64, 72, 128, 136, 200]))
    rows = data.draw(st.integers(1, 5))
    if dtype is np.bool_:
        bg = data.draw(st.booleans())
        fg = not bg
    else:
        info = np.iinfo(dtype)
        bg, fg = (data.draw(st.integers(int(info.min), int(info.max))) for _ in range(2))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = np.where(rng.random(rows * width) < rng.random(), fg, bg).astype(dtype)
    if dtype is not np.bool_ and data.draw(st.booleans()):
        a[rng.integers(0, a.size)] = data.draw(st.integers(int(info.min), int(info.max)))
    bgkey = a.dtype.type(bg)
    fv = next((v for v in a if v != bgkey), bgkey)
    nw = (width + 63) // 64
    M = np.zeros(rows * nw, dtype=np.uint64)
    keys = a.view(np.uint8) if a.dtype.itemsize == 1 else a.view(f"u{a.dtype.itemsize}")
    bad = pack_rows(keys, M, width, int(np.asarray(bgkey).astype(keys.dtype)))
    want_bad, done = False, rows
    want = np.zeros(rows * nw, dtype=np.uint64)
    for r in range(rows):
        cells = a[r * width:(r + 1) * width]
        for c in np.flatnonzero(cells != bgkey):
            want[r * nw + c // 64] |= np.uint64(1) << np.uint64(c % 64)
        if ((cells != bgkey) & (cells != fv)).any():
            want_bad, done = True, r  # that row's bits are not used
            break
    assert bad == want_bad
    np.testing.assert_array_equal(M[:done * nw], want[:done * nw])


@pytest.mark.parametrize("conn", [1, 2])
def test_bits_large_percolation(conn):
    """Many provisional labels (the table grows), runs across word borders."""
    for shape, p in (((500, 700), 0.5927), ((300, 1000), 0.4073), ((40, 60, 130), 0.3116)):
        a = patterns.percolation(shape, p, seed=9).astype(bool)
        c = min(conn + (len(shape) == 3), len(shape))
        np.testing.assert_array_equal(meshccl.label(a, connectivity=c), sk_label(a, connectivity=c))


@settings(max_examples=examples(200))
@given(data=st.data())
def test_bits_repeated_rows(data):
    """Rows that mostly repeat the previous row (or plane): packed words equal
    to the neighbour line's word copy its labels, only runs reaching past
    the word merge (word borders, diagonal steps, a changed row above)."""
    ndim = data.draw(st.integers(2, 3))
    width = data.draw(st.sampled_from([63, 64, 65, 127, 128, 130, 192, 200]))
    lead = tuple(data.draw(st.lists(st.integers(1, 6), min_size=ndim - 1, max_size=ndim - 1)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    p = data.draw(st.sampled_from([0.3, 0.5, 0.8, 0.97]))
    first = rng.random(width) < p
    a = np.empty(lead + (width,), dtype=bool)
    flat = a.reshape(-1, width)
    flat[0] = first
    flips = data.draw(st.sampled_from([0.0, 0.005, 0.02, 0.1]))
    for r in range(1, flat.shape[0]):
        src = flat[r - 1] if ndim == 2 or rng.random() < 0.5 else flat[max(r - lead[-1], 0)]
        flat[r] = src ^ (rng.random(width) < flips)
        if rng.random() < 0.1:
            flat[r] = np.roll(flat[r], rng.integers(-2, 3))  # a diagonal shift
    conn = data.draw(st.integers(1, ndim))
    np.testing.assert_array_equal(meshccl.label(a, connectivity=conn),
                                  sk_label(a, connectivity=conn))


@pytest.mark.parametrize("n", [63, 64, 65, 130, 257])
def test_bits_spiral(n):
    """Hawick's spiral: wall rows repeat the row above word for word."""
    a = patterns.spiral(n)
    for conn in (1, 2):
        np.testing.assert_array_equal(meshccl.label(a, connectivity=conn),
                                      sk_label(a, connectivity=conn))
    for conn in (1, 2, 3):  # planes repeating the plane above
        b = np.stack([a, a, a ^ (np.arange(n) % 7 == 0), a])
        np.testing.assert_array_equal(meshccl.label(b, connectivity=conn),
                                      sk_label(b, connectivity=conn))


@pytest.mark.parametrize("shape", [(3000,), (3, 2500), (200, 300), (2, 3, 1500), (40, 45, 50)])
@pytest.mark.parametrize("first_table", [None, 2])
def test_prov_table_growth(shape, first_table):
    """Noise of three values labelled without a background: far more
    provisional labels than the first table of ``prov_into`` (by default
    1024 or n / 32 entries; or 2), so the table grows mid-row, many times."""
    from meshccl import _tuning

    a = np.random.default_rng(len(shape) * 7 + shape[-1]).integers(1, 4, shape).astype(np.uint8)
    table = {} if first_table is None else dict(CPU_PROV_TABLE_MIN=first_table,
                                                CPU_PROV_TABLE_CELLS_PER_LABEL=1 << 40)
    with _tuning.override(**table):
        for conn in range(1, len(shape) + 1):
            np.testing.assert_array_equal(meshccl.label(a, connectivity=conn, background=-1),
                                          sk_label(a, connectivity=conn, background=-1))


@pytest.mark.parametrize("shape", [(2, 3, 5), (3, 4, 7), (5, 2, 9), (6, 40, 33), (9, 10),
                                   (3, 2, 4, 6)])
@pytest.mark.parametrize("runs", [1, 3, 12])
def test_prov_short_windows(shape, runs):
    """``prov_into`` reads neighbour-line windows as bit masks (vector loads
    past the window when the array allows, else cell by cell): runs of about ``runs`` cells of several values, rows shorter and
    longer than 8, the last rows of the array, with and without background,
    all connectivities, against skimage (4-D: against the per-cell path)."""
    rng = np.random.default_rng(sum(shape) * 31 + runs)
    n = int(np.prod(shape))
    cuts = rng.random(n) < 1.0 / runs
    a = (np.cumsum(cuts) * 7 + rng.integers(0, 3, n) * cuts.cumsum().clip(0, 1)) % 4
    a = a.reshape(shape).astype(np.int16)
    for conn in range(1, len(shape) + 1):
        for bg in (-1, 0):
            if len(shape) > 3:  # skimage stops at 3-D: the per-cell path
                want = meshccl.label(a, connectivity=conn, background=bg,
                                     mask=np.ones(shape, dtype=bool))
            else:
                want = sk_label(a, connectivity=conn, background=bg)
            np.testing.assert_array_equal(meshccl.label(a, connectivity=conn, background=bg),
                                          want)


@pytest.mark.parametrize("isa", ["baseline", "x86-64-v3"])
def test_every_instruction_set_matches_skimage(isa):
    """The compiled core is built once per instruction set (kernels.hpp):
    each copy, forced, labels as skimage does (binary and multi-valued,
    serial and in slabs, 2-D and 3-D, every connectivity)."""
    from meshccl import _tuning
    from meshccl._cpu import _core

    before = _core.isa()
    try:
        try:
            _core.use_isa(isa)
        except ValueError:
            pytest.skip(f"{isa} not built for or not on this CPU")
        rng = np.random.default_rng(11)
        with _tuning.override(CPU_SLAB_MIN_CELLS=1):
            for shape in ((61, 130), (9, 13, 70)):
                for a in (rng.random(shape) < 0.55, rng.integers(0, 4, shape).astype(np.int16),
                          patterns.potts(shape, q=3, seed=2)):
                    for conn in range(1, len(shape) + 1):
                        want = sk_label(a, connectivity=conn)
                        for threads in (1, 3):
                            np.testing.assert_array_equal(
                                meshccl.label(a, connectivity=conn, cpu_threads=threads), want)
    finally:
        _core.use_isa(before)
