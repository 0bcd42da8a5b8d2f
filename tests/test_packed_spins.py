"""A phase of packed Ising spins labelled from the packed words
(meshccl/_kernels/packed_spins.cuh and runs2d.cu's packed chain), as the
labelling hooks of meshccl.sim.Ising do after Metropolis sweeps.

On the CPU: packed_spins.cuh itself, compiled by a C++ compiler, reads
rows (masks and one-byte rows) and cells of spins packed by hand from the
layout of ising.cu, and must give the phase image's bits, odd widths and
3-D rows included; and the validation of the input.  On the GPU: the labels,
N and counts of ``label(PackedSpins(...), periodic=True)`` equal those of
the unpacked phase image, and the hooks label the packed words.
"""

import ctypes

import numpy as np
import pytest

import meshccl
from meshccl._validate import PackedSpins
from conftest import HAVE_GPU, host_library

needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")

HARNESS = r"""
#define __device__
#define __forceinline__ inline
#include "packed_spins.cuh"
extern "C" void read_phase(const unsigned long long* words, long long rows, long long W,
                           long long ny, long long nx, unsigned flip, unsigned* masks,
                           unsigned* bytes, unsigned char* cells) {
    const meshccl::PackedPhase<long long> v = {words, rows * W, W, ny, nx, flip};
    for (long long r = 0; r <= rows; ++r)  // (one row past the end: all 0)
        for (long long k = 0; k < W; ++k) {
            if (r < rows) masks[r * W + k] = v.row_mask(r, k);
            unsigned w[8];
            v.row_bytes(r, rows, k, w);
            for (int j = 0; j < 8; ++j) bytes[(r * W + k) * 8 + j] = w[j];
        }
    for (long long i = 0; i < rows * nx; ++i) cells[i] = v[i];
}
"""


@pytest.fixture(scope="module")
def header(tmp_path_factory):
    return host_library(tmp_path_factory, "packed_spins", HARNESS)


def packed_by_hand(s):
    """The packed colours of +-1 spins by the layout of ising.cu: colour c of row r =
    (z, y) holds x = 2 i + (c ^ (y + z) & 1), cell i in nibble i % 16 of word i // 16, bit 0
    of the nibble 1 for +1."""
    nx, ny = s.shape[-1], s.shape[-2]
    rows = s.size // nx
    W = -(-nx // 32)
    out = np.zeros((2, rows, W), dtype=np.uint64)
    grid = s.reshape(rows, nx)
    r = np.arange(rows)[:, None]
    x = np.arange(nx)[None, :]
    colour = (x & 1) ^ ((r % ny + r // ny) & 1)
    i = x // 2
    bit = (grid > 0).astype(np.uint64) << (4 * (i % 16)).astype(np.uint64)
    rr, ww = np.broadcast_to(r, grid.shape), np.broadcast_to(i // 16, grid.shape)
    np.bitwise_or.at(out, (colour.ravel(), rr.ravel(), ww.ravel()), bit.ravel())
    return out


def _random_spins(shape, seed, up=0.5):
    rng = np.random.default_rng(seed)
    return np.where(rng.random(shape) < up, 1, -1).astype(np.int8)


# sides: one word or several; the last word full (nx a multiple of 32), or holding
# 1..15 cells of a colour (nx not a multiple of 32 or of 64); 3-D rows take the
# parity of y + z
SHAPES = [(2, 2), (4, 6), (6, 34), (2, 64), (8, 66), (10, 98), (4, 126), (6, 130), (2, 2, 2),
          (4, 6, 34), (2, 4, 66)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("phase", ["up", "down"])
def test_header_reads_the_phase_image(header, shape, phase):
    """row_mask, row_bytes and cell reads of packed_spins.cuh equal the bits
    of the phase image (s > 0 or s < 0), 0 past the row's width and past the
    last row."""
    s = _random_spins(shape, seed=sum(shape))
    words = packed_by_hand(s)
    nx, ny = shape[-1], shape[-2]
    rows, W = s.size // nx, words.shape[2]
    masks = np.zeros(rows * W, np.uint32)
    byte_words = np.zeros(((rows + 1) * W, 8), np.uint32)
    cells = np.zeros(rows * nx, np.uint8)
    header.read_phase(ctypes.c_void_p(words.ctypes.data), ctypes.c_longlong(rows),
                      ctypes.c_longlong(W), ctypes.c_longlong(ny), ctypes.c_longlong(nx),
                      ctypes.c_uint(phase == "down"), ctypes.c_void_p(masks.ctypes.data),
                      ctypes.c_void_p(byte_words.ctypes.data), ctypes.c_void_p(cells.ctypes.data))
    image = (s > 0 if phase == "up" else s < 0).reshape(rows, nx)
    padded = np.zeros((rows, 32 * W), np.uint8)
    padded[:, :nx] = image
    want_masks = (padded.reshape(rows, W, 32).astype(np.uint64)
                  << np.arange(32, dtype=np.uint64)).sum(axis=2).astype(np.uint32)
    np.testing.assert_array_equal(masks.reshape(rows, W), want_masks)
    got_bytes = byte_words.view(np.uint8).reshape(rows + 1, W * 32)
    np.testing.assert_array_equal(got_bytes[:rows], padded)
    assert not got_bytes[rows].any()
    np.testing.assert_array_equal(cells, image.ravel().astype(np.uint8))


def test_packed_input_is_checked():
    """Packed spins must be CuPy words (the chain reads them on the GPU)."""
    with pytest.raises(TypeError, match="packed spins must be a CuPy"):
        meshccl.label(PackedSpins(np.zeros((2, 4, 1), np.uint64), (4, 4), "up"),
                      connectivity=1, periodic=True)


# ----------------------------------------------------------------------------- GPU

def _pair(words, s, phase, connectivity):
    """label() of the packed phase and of its image, with N and counts."""
    import cupy

    image = cupy.asarray(s > 0 if phase == "up" else s < 0)
    kw = dict(connectivity=connectivity, periodic=True, return_num=True, return_counts=True)
    got = meshccl.label(PackedSpins(words, s.shape, phase), **kw)
    want = meshccl.label(image, **kw)
    return got, want


GPU_SHAPES = [(2, 2), (4, 6), (34, 66), (64, 64), (30, 98), (100, 130), (130, 34), (66, 2),
              (258, 1030), (1024, 1024)]


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("shape", GPU_SHAPES)
@pytest.mark.parametrize("phase", ["up", "down"])
@pytest.mark.parametrize("connectivity", [1, 2])
@pytest.mark.parametrize("up", [0.5, 0.62])
def test_gpu_packed_labels_equal_image_labels(shape, phase, connectivity, up):
    """Random spins (half up, and 62 % up: the phase 'up' percolates and
    wraps at connectivity 1, 'down' then does at 2): labels, N and counts of
    the packed words equal those of the bool image."""
    import cupy

    from meshccl.sim.ising import _pack

    s = _random_spins(shape, seed=shape[0] * 7 + shape[1], up=up)
    words = _pack(cupy.asarray(s))
    assert np.array_equal(words.get(), packed_by_hand(s))
    (lab, n, counts), (want, n_want, counts_want) = _pair(words, s, phase, connectivity)
    assert lab.dtype == want.dtype and lab.shape == want.shape
    assert n == n_want
    assert np.array_equal(lab.get(), want.get())
    assert np.array_equal(counts.get(), counts_want.get())
    # (the call above and the next two take a cached plan; return_info the general path)
    again = meshccl.label(PackedSpins(words, s.shape, phase), connectivity=connectivity,
                          periodic=True)
    general, info = meshccl.label(PackedSpins(words, s.shape, phase), connectivity=connectivity,
                                  periodic=True, return_info=True)
    assert np.array_equal(again.get(), want.get()) and np.array_equal(general.get(), want.get())



@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("shape", [(66, 130), (256, 256), (34, 1026)])
@pytest.mark.parametrize("temperature", [1.8, 2.269185, 3.0])
def test_gpu_hooks_label_the_packed_words(shape, temperature):
    """After Metropolis sweeps the hooks' 'up' and 'down' are labelled from
    the packed words (no spins unpacked on the way), equal to label() of the
    state's phase images, for domains and for noise."""
    import cupy

    from meshccl.sim import Ising

    sim = Ising(shape, temperature=temperature, seed=5, xp=cupy)
    sim.run(20, progress=False)
    for phase in ("up", "down"):
        for c in (1, 2):
            assert sim._s is None
            assert isinstance(sim._phase_image(phase), PackedSpins)
            got = sim.labels(phase, connectivity=c)
            image = sim.state > 0 if phase == "up" else sim.state < 0
            want = meshccl.label(image, connectivity=c, periodic=True)
            sim._s = None  # (the state unpacked for the check only)
            assert np.array_equal(got.labels.get(), want.get()), (phase, c)
            assert got.n == int(want.max())



@pytest.mark.gpu
@needs_gpu
def test_gpu_packed_bad_input():
    """Wrong words, shape, phase, arguments or device: errors naming them."""
    import cupy

    words = cupy.zeros((2, 6, 1), dtype=cupy.uint64)
    with pytest.raises(ValueError, match="shape"):
        meshccl.label(PackedSpins(words, (6, 40), "up"), periodic=True)
    with pytest.raises(ValueError, match="even sides"):
        meshccl.label(PackedSpins(words, (6, 5), "up"), periodic=True)
    with pytest.raises(ValueError, match="phase"):
        meshccl.label(PackedSpins(words, (6, 6), "left"), periodic=True)
    with pytest.raises(ValueError, match="periodic"):
        meshccl.label(PackedSpins(words, (6, 6), "up"), periodic=False)
    with pytest.raises(ValueError, match="background"):
        meshccl.label(PackedSpins(words, (6, 6), "up"), background=1, periodic=True)
    with pytest.raises(ValueError, match="mask"):
        meshccl.label(PackedSpins(words, (6, 6), "up"), periodic=True,
                      mask=cupy.ones((6, 6), bool))
    with pytest.raises(ValueError, match="device"):
        meshccl.label(PackedSpins(words, (6, 6), "up"), periodic=True, device="cpu")
    with pytest.raises(ValueError, match="connectivity"):
        meshccl.label(PackedSpins(words, (6, 6), "up"), periodic=True, connectivity=3)

