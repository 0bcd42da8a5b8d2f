"""meshccl/_kernels/ising.cu on the CPU: the kernels of the CuPy Ising steps
compiled by a C++ compiler against a small stand-in for the CUDA runtime
(blocks and grids of 1 to 3 axes, a block up to 256 std::threads; a warp
shuffle or __syncwarp is a barrier of the block, stronger than the GPU's and
the same where every thread reaches it), and launched by the real Python launch code of meshccl/sim/ising.py
with NumPy standing in for CuPy.  Every kernel's spins and bonds must equal
the NumPy expressions of the same step, bit for bit: odd and small sides,
3-D, fields, several sweeps, and Metropolis uniforms that tie with a
threshold's high half.  (tests/test_sim.py compares the GPU itself.)
"""

import ctypes
import sys
import types

import numpy as np
import pytest

import meshccl._gpu.loader as loader
from conftest import host_library
from meshccl.sim import Ising
from meshccl.sim import ising as ising_mod

SHIM = r"""
#include <algorithm>
#include <barrier>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static
using std::min;
struct uint4 { unsigned int x, y, z, w; };
struct uint2 { unsigned int x, y; };
static uint2 make_uint2(unsigned int x, unsigned int y) { return uint2{x, y}; }
static uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) {
    return uint4{x, y, z, w};
}
struct Dim { unsigned int x = 1, y = 1, z = 1; };
thread_local Dim threadIdx, blockIdx;
Dim blockDim, gridDim;
static unsigned int __umulhi(unsigned int a, unsigned int b) {
    return (unsigned int)(((unsigned long long)a * b) >> 32);
}
static int __popc(unsigned int v) { return __builtin_popcount(v); }
static int __ffs(unsigned int v) { return __builtin_ffs((int)v); }
static std::barrier<>* block_barrier;
static unsigned long long exchange[1024];
static void __syncwarp() { block_barrier->arrive_and_wait(); }
static void __syncthreads() { block_barrier->arrive_and_wait(); }
template <typename T> static T exchanged(T v, unsigned int from) {
    exchange[threadIdx.x] = (unsigned long long)v;
    block_barrier->arrive_and_wait();
    const T got = (T)exchange[from];
    block_barrier->arrive_and_wait();
    return got;
}
template <typename T> static T __shfl_up_sync(unsigned int, T v, int delta) {
    const unsigned int lane = threadIdx.x & 31;
    const T got = exchanged(v, lane >= (unsigned int)delta ? threadIdx.x - delta : threadIdx.x);
    return got;
}
template <typename T> static T __shfl_sync(unsigned int, T v, int src) {
    return exchanged(v, (threadIdx.x & ~31u) + src);
}
"""

DRIVER = r"""
template <typename... A, std::size_t... I>
static void call(void (*f)(A...), void** args, std::index_sequence<I...>) {
    f(*reinterpret_cast<std::remove_reference_t<A>*>(args[I])...);
}
template <typename... A>
static void launch(void (*f)(A...), const unsigned int* grid, const unsigned int* block,
                   void** args) {
    gridDim = Dim{grid[0], grid[1], grid[2]};
    blockDim = Dim{block[0], block[1], block[2]};
    const unsigned int threads_per_block = block[0] * block[1] * block[2];
    std::barrier<> barrier(threads_per_block);
    block_barrier = &barrier;
    for (unsigned int bz = 0; bz < grid[2]; ++bz)
        for (unsigned int by = 0; by < grid[1]; ++by)
            for (unsigned int bx = 0; bx < grid[0]; ++bx) {
                std::vector<std::thread> threads;
                for (unsigned int t = 0; t < threads_per_block; ++t)
                    threads.emplace_back([=] {
                        blockIdx = Dim{bx, by, bz};
                        threadIdx = Dim{t % block[0], t / block[0] % block[1],
                                        t / (block[0] * block[1])};
                        call(f, args, std::index_sequence_for<A...>{});
                    });
                for (auto& th : threads) th.join();
            }
}
extern "C" int meshccl_launch(const char* name, const unsigned int* grid,
                              const unsigned int* block, void** args) {
    const std::string s(name);
    if (s == "meshccl_ising_multispin<2, 1>")
        launch(&meshccl_ising_multispin<2, 1>, grid, block, args);
    else if (s == "meshccl_ising_multispin<2, 2>")
        launch(&meshccl_ising_multispin<2, 2>, grid, block, args);
    else if (s == "meshccl_ising_multispin<3, 1>")
        launch(&meshccl_ising_multispin<3, 1>, grid, block, args);
    else if (s == "meshccl_ising_multispin<3, 2>")
        launch(&meshccl_ising_multispin<3, 2>, grid, block, args);
    else if (s == "meshccl_ising_pack") launch(&meshccl_ising_pack, grid, block, args);
    else if (s == "meshccl_ising_unpack") launch(&meshccl_ising_unpack, grid, block, args);
    else if (s == "meshccl_ising_bonds<2>") launch(&meshccl_ising_bonds<2>, grid, block, args);
    else if (s == "meshccl_ising_bonds<3>") launch(&meshccl_ising_bonds<3>, grid, block, args);
    else if (s == "meshccl_ising_flip<int>") launch(&meshccl_ising_flip<int>, grid, block, args);
    else if (s == "meshccl_ising_flip<unsigned int>")
        launch(&meshccl_ising_flip<unsigned int>, grid, block, args);
    else return 1;
    return 0;
}
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    kernel = (loader.kernel_dir() / "ising.cu").read_text()
    source = (SHIM + '#include "philox.cuh"\n' + kernel.replace('#include "philox.cuh"', "")
              + DRIVER)
    return host_library(tmp_path_factory, "ising_cpu", source,
                        flags=("-std=c++20", "-fno-strict-aliasing", "-pthread"),
                        skip_if="barrier")


class _Kernel:
    """A compiled kernel as CuPy's RawKernel is called: kernel(grid, block, args)."""

    def __init__(self, lib, name):
        self.lib, self.name = lib, name

    def __call__(self, grid, block, args):
        keep, slots = [], []
        for a in args:
            if isinstance(a, np.ndarray):
                assert a.flags.c_contiguous
                value = ctypes.c_void_p(a.ctypes.data)
            else:
                value = ctypes.create_string_buffer(np.asarray(a).tobytes())
            keep.append(value)
            slots.append(ctypes.cast(ctypes.pointer(value), ctypes.c_void_p)
                         if isinstance(value, ctypes.c_void_p) else ctypes.cast(value,
                                                                               ctypes.c_void_p))
        argv = (ctypes.c_void_p * len(slots))(*slots)
        dims = [(ctypes.c_uint * 3)(*(tuple(d) + (1, 1))[:3]) for d in (grid, block)]
        rc = self.lib.meshccl_launch(self.name.encode(), *dims, argv)
        assert rc == 0, self.name


@pytest.fixture
def device(library, monkeypatch):
    """Ising's CuPy steps on the CPU kernels: NumPy as ``cupy``, the library as the loader."""
    fake = types.ModuleType("cupy")
    fake.empty_like = np.empty_like
    fake.empty = np.empty
    monkeypatch.setitem(sys.modules, "cupy", fake)

    def kernels(filename, *names):
        assert filename == "ising.cu"
        return tuple(_Kernel(library, n) for n in names)

    monkeypatch.setattr(loader, "kernels", kernels)
    # NumPy arrays have no device pointer (x86 loads need no alignment)
    monkeypatch.setattr(ising_mod, "_aligned", lambda a, alignment: np.ascontiguousarray(a))
    monkeypatch.setattr(loader, "c_type", lambda dt: loader._C_TYPES[np.dtype(dt).name])
    return ising_mod


# rows of 2 .. 130 cells: a packed row of one word or several, its last word full (nx a
# multiple of 32) or holding 1 .. 15 cells, nx a multiple of 8 or not
METROPOLIS_SHAPES = [(2, 2), (4, 6), (6, 10), (10, 18), (16, 16), (8, 34), (4, 64), (6, 66),
                     (2, 96), (4, 130), (2, 2, 2), (4, 6, 10), (6, 4, 16), (4, 2, 34),
                     # blocks of 32 words and 8 rows, two blocks across a row (its last
                     # word full, or holding 1 or 15 cells)
                     (10, 1056), (4, 2050), (6, 2078), (4, 2, 1090)]


def _packed_by_hand(s):
    """The packed colours of int8 spins by the layout of ising._packed_geometry, cell by
    cell: colour c of row r holds x = 2 i + (c ^ (y + z) & 1), cell i in nibble i % 16 of
    word i // 16, 1 for +1."""
    shape = s.shape
    nx, ny = shape[-1], shape[-2]
    rows = s.size // nx
    words = -(-(nx // 2) // 16)
    out = np.zeros((2, rows, words), dtype=np.uint64)
    for r, row in enumerate(s.reshape(rows, nx)):
        q = (r % ny + r // ny) & 1
        for x in range(nx):
            c, i = (x & 1) ^ q, x // 2
            if row[x] > 0:
                out[c, r, i // 16] |= np.uint64(1) << np.uint64(4 * (i % 16))
    return out


@pytest.mark.parametrize("shape", METROPOLIS_SHAPES)
def test_pack_and_unpack(device, shape):
    rng = np.random.default_rng(sum(shape))
    s = np.where(rng.random(shape) < 0.5, 1, -1).astype(np.int8)
    packed = device._pack(s)
    assert packed.dtype == np.uint64 and np.array_equal(packed, _packed_by_hand(s))
    assert np.array_equal(device._unpack(packed, shape), s)
    for what, image in (("up", s > 0), ("down", s < 0)):
        got = device._unpack(packed, shape, what)
        assert got.dtype == bool and np.array_equal(got, image), what


@pytest.mark.parametrize("shape", METROPOLIS_SHAPES)
@pytest.mark.parametrize("field", [0.0, 0.7])
def test_metropolis_kernel_equals_numpy(device, shape, field):
    sim = Ising(shape, temperature=2.1, field=field, seed=5)
    packed = device._pack(sim.state)
    for step in range(4):
        device._metropolis_sweep_packed(packed, shape, sim._metropolis, sim.seed, sim.step)
        want = sim._metropolis_sweep()
        sim._s = want
        sim.step += 1
        # the padding nibbles stay 0: the packed words are those of the NumPy spins
        assert np.array_equal(packed, _packed_by_hand(want)), (shape, step)


@pytest.mark.parametrize("shape", [(4, 6), (16, 16), (8, 34), (6, 66), (4, 130), (10, 1056),
                                   (6, 2078), (4, 6, 10), (4, 2, 1090)])
def test_metropolis_kernel_two_words_a_thread(device, shape):
    """The variant with two packed words a thread (_tuning.METROPOLIS_WORDS = 2): rows
    of 1 to 65 words, an odd count of them, the last one partial; the same spins."""
    from meshccl import _tuning

    sim = Ising(shape, temperature=2.1, field=0.3, seed=6)
    packed = device._pack(sim.state)
    for step in range(3):
        with _tuning.override(METROPOLIS_WORDS=2):
            device._metropolis_sweep_packed(packed, shape, sim._metropolis, sim.seed,
                                            sim.step)
        want = sim._metropolis_sweep()
        sim._s = want
        sim.step += 1
        # the padding nibbles stay 0: the packed words are those of the NumPy spins
        assert np.array_equal(packed, _packed_by_hand(want)), (shape, step)


@pytest.mark.parametrize("shape", [(4, 6), (8, 34), (6, 66), (4, 6, 10), (6, 4, 16), (4, 2, 34),
                                   (2, 4, 64), (4, 2, 1090), (6, 2, 48)])
@pytest.mark.parametrize("words", [1, 2])
def test_metropolis_kernel_writes_the_phase_image(device, shape, words):
    """A sweep given an image (the one before a labelled 3-D step) writes the new spins'
    phase into it, 'up' (s > 0) or 'down' (s < 0), every cell of rows whose length is a
    multiple of 16 or not, of one or several words; its spins are those of a sweep
    without one."""
    from meshccl import _tuning

    sim = Ising(shape, temperature=2.1 if len(shape) == 2 else 4.0, field=0.2, seed=13)
    packed = device._pack(sim.state)
    for step, phase in enumerate(("up", "down", "up")):
        # an image holding the opposite of the answer: every cell must be written
        want = sim._metropolis_sweep()
        expected = want > 0 if phase == "up" else want < 0
        image = ~expected
        with _tuning.override(METROPOLIS_WORDS=words):
            device._metropolis_sweep_packed(packed, shape, sim._metropolis, sim.seed,
                                            sim.step, image=image, phase=phase)
        sim._s = want
        sim.step += 1
        assert np.array_equal(packed, _packed_by_hand(want)), (shape, step)
        assert np.array_equal(image, expected), (shape, step, phase)


@pytest.mark.parametrize("shape, planes", [((4, 6, 10), 1), ((6, 4, 16), 4), ((8, 4, 34), 3)])
def test_metropolis_kernel_in_launches_of_few_planes(device, shape, planes):
    """3-D lattices swept in several launches per colour (at most ``planes`` planes
    each, as lattices of more than 65,535 planes are): the NumPy sweep's spins."""
    sim = Ising(shape, temperature=4.0, field=0.2, seed=12)
    packed = device._pack(sim.state)
    for _ in range(3):
        device._MetropolisSweeps(packed, shape, sim._metropolis, sim.seed, planes)(sim.step)
        sim._s = sim._metropolis_sweep()
        sim.step += 1
        assert np.array_equal(packed, _packed_by_hand(sim._s))


def _sweep_with_uniform(shape, value):
    """(sim, step) of a sweep in which some colour-0 cell of ``shape`` draws the 16-bit
    uniform ``value``."""
    sim = Ising(shape, temperature=2.1, seed=21)
    colour0 = sum(np.indices(shape)) % 2 == 0
    for step in range(20000):
        sim.step = step
        if bool((colour0 & (sim._metropolis_uniforms() == value)).any()):
            return sim
    raise AssertionError("no such uniform in 20,000 sweeps")


@pytest.mark.parametrize("value, threshold", [(0xFFFF, 2**32), (0, 0)])
def test_metropolis_kernel_always_and_never_exactly(device, value, threshold):
    """Thresholds 2**32 (always) and 0 (never) where a cell's 16-bit uniform is 0xFFFF
    (it ties with the stored 0xFFFF: its 16 more bits must accept) or 0 (it ties with
    0: they must reject): every colour-0 cell flips, or none does."""
    shape = (16, 34)
    sim = _sweep_with_uniform(shape, value)
    table = np.full_like(sim._metropolis, threshold)
    before = sim.state.copy()
    packed = device._pack(before)
    device._metropolis_sweep_packed(packed, shape, table, sim.seed, sim.step)
    got = device._unpack(packed, shape)
    colour0 = sum(np.indices(shape)) % 2 == 0
    flipped = got != before
    assert np.array_equal(flipped[colour0], np.full(colour0.sum(), threshold > 0))
    sim._metropolis = table
    assert np.array_equal(got, sim._metropolis_sweep())


@pytest.mark.parametrize("shape", [(8, 34), (16, 16), (4, 6, 10)])
def test_metropolis_kernel_equals_numpy_on_ties(device, shape):
    """Thresholds whose high 16 bits equal the uniforms of chosen cells: the kernel's
    extra draws for the ties give the NumPy sweep's spins."""
    from test_sim import tie_table

    sim = Ising(shape, temperature=2.1, field=0.3, seed=8)
    sim.step = 2**33 + 3
    table, ties = tie_table(sim)
    assert ties > 0
    sim._metropolis = table
    packed = device._pack(sim.state)
    device._metropolis_sweep_packed(packed, shape, table, sim.seed, sim.step)
    assert np.array_equal(device._unpack(packed, shape), sim._metropolis_sweep())


@pytest.mark.parametrize("shape", [(2, 2), (3, 5), (7, 9), (16, 16), (5, 3, 7), (4, 4, 4),
                                   (2, 3, 2)])
def test_bonds_kernel_equals_numpy(device, shape):
    sim = Ising(shape, temperature=2.3, algorithm="swendsen-wang", seed=9)
    for step in (0, 1, 2**33 + 5):
        sim.step = step
        want = sim._sw_bonds()
        got = np.zeros_like(want)
        device._sw_bonds_fused(got, sim._bond, sim.seed, sim.step)
        assert np.array_equal(got, want), (shape, step)


@pytest.mark.parametrize("n", [1, 7, 8, 255, 256, 257, 2048, 2051, 5000])
@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_flip_kernel_equals_numpy(device, n, dtype):
    rng = np.random.default_rng(n)
    # runs of equal labels of random lengths, labels repeating far apart too
    runs = rng.integers(1, 12, size=n)
    labels = np.repeat(rng.integers(1, max(2, n // 3), size=n), runs)[:n].astype(dtype)
    sim = Ising((4, 4), temperature=2.3, algorithm="swendsen-wang", seed=13)
    sim.step = 3
    want = sim._sw_flip(labels)
    got = device._sw_flip_fused(labels, sim.seed, sim.step)
    assert got.dtype == np.int8 and np.array_equal(got, want), n


def test_swendsen_wang_steps_equal_numpy(device):
    """Whole steps, labels from meshccl.label in between: bonds, then flip."""
    for shape in [(12, 20), (6, 6, 10)]:
        a = Ising(shape, temperature=2.3 if len(shape) == 2 else 4.4,
                  algorithm="swendsen-wang", seed=2)
        b = Ising(shape, temperature=a.temperature, algorithm="swendsen-wang", seed=2)
        for _ in range(3):
            a.run(1)
            bonds = device._sw_bonds_fused(np.empty((b.state.ndim,) + shape, dtype=bool),
                                           b._bond, b.seed, b.step)
            labels = b._sw_labels(bonds).astype(np.int32)
            b._s = device._sw_flip_fused(labels, b.seed, b.step)
            b.step += 1
            assert np.array_equal(a.state, b.state), shape


DRAWN = r"""
#define __device__
#define __forceinline__ inline
#include "drawn_bonds.cuh"
extern "C" void drawn_rows(unsigned long long n, int nx, unsigned long long threshold,
                           const unsigned* words, unsigned char* up, unsigned char* left) {
    const meshccl::DrawnBonds ft = {threshold, words[0], words[1], words[2], words[3], words[4],
                                    0, 1, -1, -1, 0.0};
    // tile rows of up to 32 cells, as the tile kernel's lanes take them
    for (unsigned long long row = 0; row < n / nx; ++row)
        for (int x0 = 0; x0 < nx; x0 += 32) {
            const int width = nx - x0 < 32 ? nx - x0 : 32;
            unsigned bu, bl;
            ft.row((long long)(row * nx + x0), width, bu, bl);
            for (int c = 0; c < width; ++c) {
                up[row * nx + x0 + c] = (bu >> c) & 1u;
                left[row * nx + x0 + c] = (bl >> c) & 1u;
            }
        }
}
extern "C" int drawn_open(long long i, int plane, unsigned long long threshold,
                          const unsigned* words) {
    const meshccl::DrawnBonds ft = {threshold, words[0], words[1], words[2], words[3], words[4],
                                    0, 1, -1, -1, 0.0};
    return ft.open(plane, i);
}
"""


@pytest.fixture(scope="module")
def drawn_library(tmp_path_factory):
    return host_library(tmp_path_factory, "drawn_bonds", DRAWN)


@pytest.mark.parametrize("shape", [(2, 2), (3, 5), (7, 9), (5, 32), (4, 33), (3, 65), (9, 100)])
def test_drawn_bonds_equal_the_bond_planes(drawn_library, shape):
    """drawn_bonds.cuh (the labelling chain's Swendsen-Wang bonds, drawn where they are
    read) gives every bond the NumPy step draws: by rows of up to 32 cells that start at
    odd and even cells, and one bond at a time."""
    sim = Ising(shape, temperature=2.3, algorithm="swendsen-wang", seed=2**41 + 9)
    for step in (0, 5, 2**33 + 1):
        sim.step = step
        want = sim._sw_bonds()
        words = np.array(ising_mod._philox_words(step, sim.seed, ising_mod._random.TAG_BOND),
                         dtype=np.uint32)
        n, nx = want[0].size, shape[1]
        up, left = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
        drawn_library.drawn_rows(ctypes.c_ulonglong(n), ctypes.c_int(nx),
                                 ctypes.c_ulonglong(int(sim._bond)),
                                 ctypes.c_void_p(words.ctypes.data),
                                 ctypes.c_void_p(up.ctypes.data),
                                 ctypes.c_void_p(left.ctypes.data))
        assert np.array_equal(up.reshape(shape), want[0]), (shape, step)
        assert np.array_equal(left.reshape(shape), want[1]), (shape, step)
        for i in range(0, n, max(1, n // 17)):
            for plane in (0, 1):
                got = drawn_library.drawn_open(ctypes.c_longlong(i), ctypes.c_int(plane),
                                               ctypes.c_ulonglong(int(sim._bond)),
                                               ctypes.c_void_p(words.ctypes.data))
                assert got == int(want[plane].reshape(-1)[i]), (shape, step, i, plane)
        assert drawn_library.drawn_open(ctypes.c_longlong(3), ctypes.c_int(-1),
                                        ctypes.c_ulonglong(0),
                                        ctypes.c_void_p(words.ctypes.data)) == 1
