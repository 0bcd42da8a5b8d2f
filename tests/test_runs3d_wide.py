"""Plain 3-D volumes of 2-, 4- and 8-byte cells (integers and floats) on the
GPU's runs3d chain (row masks by ballots over columns, float keys as
truncated floats), against the CPU backend value for value: every
connectivity, shapes that are no multiple of a brick (32 x 32 x 8 or 16),
thin axes, backgrounds, NaN / inf / huge floats, periodic axes, counts,
first-cell labels and int64 labels.  GPU only (skipped elsewhere)."""

import numpy as np
import pytest

import meshccl
from meshccl import patterns
from conftest import to_backend, to_host

pytestmark = pytest.mark.gpu

WIDE = (np.uint16, np.int16, np.uint32, np.int32, np.uint64, np.int64, np.float32, np.float64)


def _need_gpu():
    pytest.importorskip("cupy")
    from conftest import HAVE_GPU

    if not HAVE_GPU:
        pytest.skip("no GPU")


def _levels(shape, levels, scale, seed):
    """A few values, upscaled so that components are long and cross bricks."""
    rng = np.random.default_rng(seed)
    small = tuple(-(-s // scale) for s in shape)
    a = rng.integers(0, levels, small)
    for axis in range(3):
        a = np.repeat(a, scale, axis=axis)
    return a[tuple(slice(0, s) for s in shape)]


def _volumes(dtype, seed=0):
    """Volumes of ``dtype``: blocky levels at aligned and odd shapes, thin
    axes (one plane, one row, a column of bricks), site percolation, and
    one with values that only their full width tells apart."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    out = [_levels((24, 64, 64), 3, 4, seed),        # aligned rows, 1-3 bricks deep
           _levels((19, 45, 70), 4, 3, seed + 1),    # odd sizes everywhere
           _levels((40, 33, 97), 2, 5, seed + 2),    # 3 bricks of 16 deep
           _levels((1, 70, 90), 3, 2, seed + 3),     # one plane
           _levels((37, 1, 65), 3, 2, seed + 4),     # one row per plane
           _levels((50, 40, 1), 3, 2, seed + 5),     # one column
           patterns.percolation((18, 66, 97), 0.3116, seed=seed + 6).astype(np.int64)]
    wide = rng.integers(0, 2, (17, 40, 45))  # neighbours differing in their high bits only
    if dt.kind in "iu" and dt.itemsize >= 2:
        hi = np.int64(1) << (8 * dt.itemsize - 2)
        out.append(wide * hi + 1)
    out = [a.astype(dt) for a in out]
    if dt.kind == "f":
        f = _levels((21, 38, 70), 5, 3, seed + 7).astype(dt) * dt.type(0.75) - dt.type(1.2)
        f[rng.random(f.shape) < 0.05] = np.nan        # NaN, inf, beyond int64: one key
        f[rng.random(f.shape) < 0.03] = np.inf
        f[rng.random(f.shape) < 0.03] = -np.inf
        f[rng.random(f.shape) < 0.03] = dt.type(1e30)
        f[rng.random(f.shape) < 0.03] = dt.type(-0.0)
        out.append(f)
    return out


def _same(a, **kw):
    want = meshccl.label(a, **kw)
    got = meshccl.label(to_backend(a, "gpu"), **kw)
    if isinstance(want, tuple):
        for w, g in zip(want, got):
            np.testing.assert_array_equal(to_host(g), w)
    else:
        np.testing.assert_array_equal(to_host(got), want)


@pytest.mark.parametrize("dtype", WIDE)
def test_gpu_runs3d_wide_against_cpu(dtype):
    """Every connectivity, with and without a background (0, a value that
    occurs, none), against the CPU backend."""
    _need_gpu()
    for a in _volumes(dtype):
        for c in (1, 2, 3):
            for bg in (None, 1, -1):
                _same(a, connectivity=c, background=bg)


@pytest.mark.parametrize("dtype", (np.uint16, np.int32, np.float32, np.float64))
def test_gpu_runs3d_wide_options(dtype):
    """Periodic axes (wrap3d.cu with run nodes), counts, first-cell labels
    and int64 labels on the wider-cell runs3d chain."""
    _need_gpu()
    for a in _volumes(dtype, seed=7)[:3]:
        for c in (1, 3):
            _same(a, connectivity=c, periodic=True)
            _same(a, connectivity=c, periodic=(False, True, False), background=-1)
            _same(a, connectivity=c, return_counts=True)
            _same(a, connectivity=c, numbering="first-cell")
            _same(a, connectivity=c, dtype=np.int64)


def test_gpu_runs3d_float_keys_at_the_edges():
    """Floats whose truncations are equal or not at the edges of float and
    int64: -0.0 and 0.0 with a background of 0, values just inside and
    beyond +-2^63, a background no float truncates to (2^62 + 1: it then
    matches nothing), and subnormals."""
    _need_gpu()
    edge = np.array([-0.0, 0.0, 0.99, -0.99, 2.0**63, -(2.0**63), 2.0**62, np.nan,
                     np.finfo(np.float32).tiny / 4, 1.5, -1.5, 2.0**63 * 4], np.float64)
    rng = np.random.default_rng(3)
    for dt in (np.float32, np.float64):
        a = edge[rng.integers(0, edge.size, (13, 35, 67))].astype(dt)
        for c in (1, 2, 3):
            for bg in (None, 0, -(2**63), 2**62 + 1):
                _same(a, connectivity=c, background=bg)


@pytest.mark.parametrize("dtype", (np.uint16, np.float64))
def test_gpu_runs3d_wide_lattice_against_cpu(dtype):
    """The lattice form of the wider cells (the row and z masks it shares
    with the plain form, rows taken 4 at a time): a mask, a tolerance and
    periodic axes at connectivities 1 and 3, on volumes whose tiles end at
    every row count modulo 4 and 32, against the CPU backend."""
    _need_gpu()
    rng = np.random.default_rng(11)
    for a in _volumes(dtype, seed=5)[:3]:
        mask = rng.random(a.shape) < 0.85
        for c in (1, 3):
            _same(a, connectivity=c, mask=mask)
            _same(a, connectivity=c, mask=mask, background=-1, periodic=(True, False, True))
            _same(a, connectivity=c, tolerance=1)
    for shape in ((9, 37, 41), (5, 66, 35), (3, 31, 70)):  # heights 37, 66, 31 (mod 32: 5, 2, 31)
        a = rng.integers(0, 3, shape).astype(dtype)
        for c in (1, 3):
            _same(a, connectivity=c, mask=rng.random(shape) < 0.9)
