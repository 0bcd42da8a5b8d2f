"""runs3d.cu's chain, plain and lattice forms, and wrap3d.cu run on the CPU.

The kernels are compiled by the host compiler against a stand-in for CUDA
(tests/cuda_on_host.h: a fiber per CUDA thread, warp collectives as
barriers of the warp that stop the run when the lanes of one collective are
at different call sites) and launched by the real launch code
(``chains.select`` and ``chains.program``, with NumPy as ``cupy``), from
the clearing memset to the last border kernel.  The forest they leave (run
starts through S, piece roots through P) must give the CPU backend's
components on volumes the GPU got wrong once: bricks of 8 planes with a
float tolerance, volumes smaller than a brick or a tile, axes of length 2,
rows shorter than 32 cells and not a multiple of it, periodic axes of
length 2.  The label array starts as parents that lead out of it
(``guarded_labels``), so that a find from a cell no kernel gave a parent
-- on a GPU a walk through old labels, possibly round a cycle -- fails the
test instead of passing unseen.

``build(folder, asan=True)`` makes the library with AddressSanitizer and
UBSan, for a run by hand under ``LD_PRELOAD=$(g++
-print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0`` (minutes: it
found no access outside a buffer on the shapes below).
"""

import ctypes
import dataclasses
import os
import subprocess
import sys
import types

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

import meshccl
from meshccl import _tuning, _validate
from meshccl._gpu import chains, image_plain, launch, loader
from meshccl.neighbourhood import half_offsets

HERE = os.path.dirname(os.path.abspath(__file__))

#: (cell type, with a tolerance) of the lattice forms the tests below run:
#: one-byte cells (byte-wise masks; bool input's bytes as they are,
#: meshccl::flag8, with a tolerance and without), and by ballots floats
#: with a tolerance (double keys), two-byte cells (keys shuffled as 32-bit
#: words) and 8-byte integers with an exact tolerance
TYPES = [("unsigned char", "false"), ("meshccl::flag8", "false"), ("meshccl::flag8", "true"),
         ("float", "true"), ("unsigned short", "false"), ("long long", "true")]
#: cell types of the plain form (byte-wise masks, bool bytes, ballots over
#: floats and two-byte cells)
PLAIN_TYPES = ["unsigned char", "meshccl::flag8", "float", "unsigned short"]
#: brick depths per connectivity: _tuning.RUNS_3D_PLANES's, and 8 at 1
DEPTHS = {1: (8, 16), 2: (8,), 3: (8,)}


def kernel_names():
    names = []
    for t, tol in TYPES:
        for c, depths in DEPTHS.items():
            for nz in depths:
                names.append(f"meshccl_runs3d_lattice_tile<{t}, int, {c}, {tol}, {nz}>")
                names.append(f"meshccl_runs3d_lattice_zface<{t}, int, {c}, {tol}, {nz}, 1>")
            names.append(f"meshccl_runs3d_lattice_seams<{t}, int, {c}, {tol}>")
            names.append(f"meshccl_wrap3d<{t}, int, {c}, {tol}>")
    # the plain form, at the tuning's geometry, and its wrap kernel
    nwz, nst = _tuning.RUNS_ZFACE_WARPS, _tuning.RUNS_SEAM_TILES
    for t in PLAIN_TYPES:
        for c in (1, 2, 3):
            nzb, pf = _tuning.RUNS_3D_PLANES[c], int(_tuning.RUNS_PREFETCH[(3, c)])
            names += [f"meshccl_runs3d_tile<{t}, int, {c}, {nzb}, {pf}>",
                      f"meshccl_runs3d_zface<{t}, int, {c}, {nzb}, {nwz}>",
                      f"meshccl_runs3d_seams<{t}, int, {c}, {nzb}, {nst}>",
                      f"meshccl_wrap3d<{t}, int, {c}, false>"]
    return sorted(set(names))


def host_source(names):
    """The kernels' translation unit: the CUDA stand-in, the two files, and
    a launcher by name."""
    lines = ['#include "cuda_on_host.h"', '#include "runs3d.cu"', '#include "wrap3d.cu"',
             'extern "C" int meshccl_launch(const char* name, const unsigned* grid, '
             'const unsigned* block, unsigned shared, void** args) {',
             '    const std::string s(name);']
    for n in names:
        lines.append(f'    if (s == "{n}") return emu::launch(&{n}, grid, block, shared, args);')
    lines += ['    return 1;', '}']
    return "\n".join(lines) + "\n"


def headers(folder):
    """The kernel sources, as the stand-in compiles them, in ``folder``:
    dynamic shared memory from the launch, inline PTX dropped."""
    for path in loader.kernel_dir().iterdir():
        if path.suffix not in (".cu", ".cuh"):
            continue
        text = path.read_text()
        text = text.replace("extern __shared__ int shared_words[];",
                            "int* shared_words = reinterpret_cast<int*>(emu::dynamic_shared);")
        text = text.replace("asm volatile(", "asm_volatile(")
        (folder / path.name).write_text(text)


def build(folder, asan=False):
    """Compile the library into ``folder``; its path."""
    import shutil

    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    headers(folder)
    src, lib = folder / "runs3d_host.cpp", folder / ("runs3d_asan.so" if asan else "runs3d.so")
    src.write_text(host_source(kernel_names()))
    flags = ["-std=c++20", "-O1", "-g", "-fno-strict-aliasing", "-shared", "-fPIC",
             "-w", f"-I{HERE}", f"-I{folder}"]
    if asan:
        flags += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    out = subprocess.run([cxx, *flags, "-o", str(lib), str(src)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-4000:]
    return lib


class Kernel:
    """A compiled kernel as CuPy's RawKernel is called."""

    def __init__(self, lib, name):
        self.lib, self.name = lib, name
        self.max_dynamic_shared_size_bytes = 48 * 1024

    def __call__(self, grid, block, args, shared_mem=0):
        keep, slots = [], []
        for a in args:
            if isinstance(a, np.ndarray):
                assert a.flags.c_contiguous
                value = ctypes.c_void_p(a.ctypes.data)
                keep.append(value)
                slots.append(ctypes.cast(ctypes.pointer(value), ctypes.c_void_p))
            else:
                value = ctypes.create_string_buffer(np.asarray(a).tobytes())
                keep.append(value)
                slots.append(ctypes.cast(value, ctypes.c_void_p))
        assert 0 < int(np.prod(grid)) and all(0 < g < 65536 for g in tuple(grid)[1:]), grid
        assert shared_mem <= max(48 * 1024, self.max_dynamic_shared_size_bytes), shared_mem
        argv = (ctypes.c_void_p * len(slots))(*slots)
        dims = [(ctypes.c_uint * 3)(*(tuple(d) + (1, 1))[:3]) for d in (grid, block)]
        rc = self.lib.meshccl_launch(self.name.encode(), dims[0], dims[1],
                                     ctypes.c_uint(shared_mem), argv)
        assert rc != 1, f"{self.name} is not in the emulated library"
        self.lib.meshccl_failure.restype = ctypes.c_char_p
        assert rc == 0, f"{self.name}: {self.lib.meshccl_failure().decode()}"


def fake_cupy():
    fake = types.ModuleType("cupy")
    fake.empty, fake.zeros, fake.asarray = np.empty, np.zeros, np.asarray
    fake.uint32, fake.int64, fake.uint16 = np.uint32, np.int64, np.uint16
    fake.cuda = types.SimpleNamespace(Device=lambda: types.SimpleNamespace(id=0),
                                      get_current_stream=lambda: types.SimpleNamespace(
                                          synchronize=lambda: None, is_capturing=lambda: False))
    return fake


def forest(x, **kw):
    """The chain's kernels up to the numbering on ``x`` (``kw``: label's
    arguments), launched as the GPU path launches them (the library must be
    the loader's, :func:`emulated`); returns the problem, P and S."""
    kw = dict(kw)
    prob = _validate.prepare(x, kw.pop("background", 0), kw.pop("connectivity", None), None,
                             **kw)
    # (int32 labels, as on the GPU below 2**31 cells)
    prob = dataclasses.replace(prob, work_dtype=np.dtype(np.int32))
    case = chains.select(prob)
    assert case.chain.name in ("runs3d", "runs3d-lattice"), case.chain.name
    if x.dtype == np.bool_:  # (the bytes as they are, as the GPU path leaves them)
        assert chains.reads_bool_bytes(case, prob)
        prob = dataclasses.replace(prob, values=np.ascontiguousarray(x).reshape(-1))
    buffers = image_plain.scratch(prob.size, prob.work_dtype, case.shape, slots=False)
    for b in buffers:
        b[...] = 0x5A  # (nothing is zeroed on a GPU unless a kernel or memset does it)
    buffers[0][-2:] = 0
    steps = chains.program(case, prob, buffers=buffers)
    P, guard = guarded_labels(prob.size)
    for name, step in steps:
        if name == "roots":
            break
        if isinstance(step, launch.Memset):
            step.array[...] = 0
        else:
            step(prob.values, P, prob.mask, prob.bonds)
        read = np.flatnonzero(guard != np.arange(prob.size, 3 * prob.size))
        assert read.size == 0, (f"{name}: a find walked from a cell the tile kernel set no "
                                f"parent for (slots {read[:4]})")
    rw = image_plain._runs_words(case.shape)
    return prob, case, P, buffers[4][rw:2 * rw]


def guarded_labels(n):
    """The label array P (n cells) as the kernels find it on a GPU, where
    it holds whatever the memory held (old labels, which can make a cycle
    of parents and a find that never ends), made visible instead: P[i] = n
    + i, and behind P 2n more slots that are their own roots (``guard``).
    A find from a cell whose parent no kernel set reaches the guard, and a
    union then hooks a guard slot, which :func:`forest` sees."""
    whole = np.arange(3 * n, dtype=np.int32)
    whole[:n] += n
    return whole[:n], whole[n:]


def components(prob, case, P, S, fg):
    """Each foreground cell's root (its run start's piece root, followed up
    P; ``fg``: the foreground, flat); other cells -1."""
    nz, ny, nx = (1,) * (3 - len(case.shape)) + tuple(case.shape)
    rows = nz * ny
    n = prob.size
    idx = np.arange(n, dtype=np.int64)
    row, x = idx // nx, idx % nx
    w = S[(x >> 5) * rows + row].astype(np.int64) & ((np.int64(2) << (x & 31)) - 1)
    assert (w[fg] != 0).all(), "a foreground cell without a run start"
    ok = fg
    hb = np.full(n, -1, np.int64)
    hb[ok] = np.floor(np.log2(w[ok].astype(np.float64))).astype(np.int64)
    r = (row * nx + (x & ~31) + hb)[ok]
    Pl = P.astype(np.int64)
    assert ((r >= 0) & (r < n)).all()
    for _ in range(200):
        nxt = Pl[r]
        assert ((nxt >= 0) & (nxt <= r)).all(), "a parent past its child, or unset"
        if np.array_equal(nxt, r):
            break
        r = nxt
    root = np.full(n, -1, np.int64)
    root[ok] = r
    return root


def same_partition(a, b):
    """Do two labelings (0 / -1 background) split the cells alike?"""
    fa, fb = a > 0, b >= 0
    if not np.array_equal(fa, fb):
        return False
    pa, pb = a[fa], b[fb]
    pairs = np.unique(np.stack([pa, pb]), axis=1)
    return len(np.unique(pairs[0])) == pairs.shape[1] == len(np.unique(pairs[1]))


@pytest.fixture(scope="module")
def emulated_library(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs3d_host")
    return ctypes.CDLL(str(build(folder)))


@pytest.fixture
def emulated(emulated_library, monkeypatch):
    """The GPU launch code on the emulated kernels, NumPy as ``cupy``."""
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())

    def kernels(filename, *names):
        # (the numbering's kernels are asked for, not run: forest() stops before them)
        assert filename in ("runs3d.cu", "wrap3d.cu", "number_pieces.cu"), filename
        return tuple(Kernel(emulated_library, n) for n in names)

    monkeypatch.setattr(image_plain, "kernels", kernels)
    image_plain._box_planes.cache_clear()
    yield emulated_library
    # (its NumPy stand-ins must not reach a GPU test that runs after this one)
    image_plain._box_planes.cache_clear()


def check(x, **kw):
    """The emulated forest's components against the CPU backend's labels."""
    want = meshccl.label(x, **kw)
    prob, case, P, S = forest(x, **kw)
    assert not prob.swapped
    got = components(prob, case, P, S, want.reshape(-1) > 0)
    assert same_partition(want.reshape(-1), got), kw


# volumes smaller than a tile or a brick, axes of 2 and 3 cells (what Dask
# chunks of a 4-D array squeeze to: test_dask.py's (3, 4, 3, 4) in chunks of
# (2, 3, 2, 3)), rows of 33 cells (a tile column of one cell), several
# tiles, two bricks of 16 planes (connectivity 1)
SMALL = [(2, 2, 3), (3, 2, 2), (2, 3, 2), (3, 2, 3), (2, 3, 3), (2, 33, 2), (5, 3, 33),
         (9, 33, 34), (18, 3, 33)]


@pytest.mark.parametrize("shape", SMALL)
def test_lattice_chain_on_small_volumes(emulated, shape):
    rng = np.random.default_rng(sum(shape))
    x = (rng.random(shape) < 0.5).astype(np.uint8)
    m = rng.random(shape) < 0.9
    f = rng.random(shape).astype(np.float32)
    for c in (1, 2, 3):
        bonds = rng.random((len(half_offsets(3, c)),) + shape) < 0.6
        check(x, connectivity=c, periodic=True, mask=m)
        check(x, connectivity=c, bonds=bonds, periodic=(True, False, True), background=None)
        check(f, connectivity=c, tolerance=0.2, background=-1)
        check(f, connectivity=c, tolerance=0.2, background=-1, periodic=(False, True, True),
              mask=m)
    # two-byte cells with a mask, 8-byte integers with an exact tolerance
    # (neighbours 2**40 + 1 apart: a tolerance of 2**40 keeps them apart)
    w = rng.integers(0, 3, shape).astype(np.uint16)
    big = (rng.integers(0, 3, shape) * (2**40 + 1)).astype(np.int64)
    for c in (1, 3):
        check(w, connectivity=c, mask=m, periodic=(True, True, False))
        check(big, connectivity=c, tolerance=2**40, background=None, periodic=True)


def test_lattice_chain_shapes_of_the_gpu_timeouts(emulated):
    """The volumes of the GPU tests that timed out on an H200 with this
    chain (test_lattice.py's float tolerance on 9 x 20 x 70, test_counts.py's
    two-byte cells on 7 x 9 x 40): rows of 70 and 40 cells (a last tile
    column of 6 and 8), fewer planes than a brick."""
    rng = np.random.default_rng(39)
    f = rng.random((9, 20, 70)).astype(np.float32) * 4
    for c in (1, 3):
        check(f, connectivity=c, tolerance=0.3)
    w = np.random.default_rng(56).integers(0, 4, (7, 9, 40)).astype(np.uint16)
    for c in (1, 2, 3):
        check(w, connectivity=c, background=1)
        check(w, connectivity=c, background=1, mask=rng.random(w.shape) < 0.8)


@pytest.mark.parametrize("shape", [(2, 2, 3), (3, 33, 2), (18, 3, 33), (9, 34, 35)])
def test_plain_chain_on_small_volumes(emulated, shape):
    """The plain form (one-byte cells; floats and two-byte cells, whose row
    masks come from ballots), periodic or not."""
    rng = np.random.default_rng(sum(shape) + 1)
    x = rng.integers(0, 3, shape).astype(np.uint8)
    f = (rng.random(shape) * 3).astype(np.float32)
    w = rng.integers(0, 3, shape).astype(np.uint16)
    for c in (1, 2, 3):
        for periodic in (False, (True, False, True)):
            check(x, connectivity=c, periodic=periodic)
            check(f, connectivity=c, periodic=periodic, background=None)
            check(w, connectivity=c, periodic=periodic, background=1)


@pytest.mark.parametrize("shape", [(2, 3, 2), (5, 3, 33), (9, 33, 34), (18, 3, 33)])
def test_bool_bytes_other_than_one(emulated, shape):
    """Bool input whose True bytes are 1, 2 or 255 (a view of other data),
    read as it is (meshccl::flag8): every non-zero byte True, as NumPy and
    the CPU backend read it, on the lattice form (mask, bonds, tolerance:
    the byte-wise masks, whole aligned rows and the byte-by-byte path) and
    the plain form's wrap kernel, background False and True."""
    rng = np.random.default_rng(sum(shape) + 2)
    raw = rng.choice(np.array([0, 1, 2, 255], np.uint8), size=shape, p=[0.45, 0.2, 0.2, 0.15])
    x = raw.view(np.bool_)
    m = rng.random(shape) < 0.9
    for c in (1, 2, 3):
        bonds = rng.random((len(half_offsets(3, c)),) + shape) < 0.7
        for background in (0, 1):
            check(x, connectivity=c, background=background, periodic=(True, False, True))
            check(x, connectivity=c, background=background, mask=m)
            check(x, connectivity=c, background=background, bonds=bonds, periodic=True)
            check(x, connectivity=c, background=background, tolerance=0,
                  periodic=(False, True, True))
        check(x, connectivity=c, background=None, tolerance=1, mask=m)


def test_lattice_chain_bricks_of_eight_planes(emulated):
    """Bricks of 8 planes at every connectivity (the z-face kernel between
    them), float tolerance and byte cells, a last tile column of 3 cells."""
    rng = np.random.default_rng(8)
    shape = (17, 33, 35)
    spins = (rng.random(shape) < 0.5).astype(np.uint8)
    field = rng.random(shape).astype(np.float32) * 4
    with _tuning.override(RUNS_3D_PLANES={1: 8, 2: 8, 3: 8}):
        for c in (1, 2, 3):
            bonds = rng.random((len(half_offsets(3, c)),) + shape) < 0.585
            check(spins, background=-1, connectivity=c, bonds=bonds)
            check(field, background=None, connectivity=c, tolerance=0.25)


DIVERGENT = r"""
#include "cuda_on_host.h"
__global__ void skips(int* out) {
    const int lane = threadIdx.x & 31;
    int v = lane;
    if (lane < 3) v = __shfl_sync(0xffffffffu, v, 5);  // lanes 3..31 skip it
    out[threadIdx.x] = __shfl_sync(0xffffffffu, v, 0);
}
extern "C" int meshccl_launch(const char*, const unsigned* grid, const unsigned* block,
                              unsigned shared, void** args) {
    return emu::launch(&skips, grid, block, shared, args);
}
"""


def test_stand_in_stops_at_a_collective_some_lanes_skip(tmp_path):
    """A shuffle that only some lanes of a warp reach (undefined on the GPU,
    the fault of this chain's wider cells once) ends the run with both call
    sites named."""
    import shutil

    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    src, lib = tmp_path / "divergent.cpp", tmp_path / "divergent.so"
    src.write_text(DIVERGENT)
    out = subprocess.run([cxx, "-std=c++20", "-O1", "-shared", "-fPIC", "-w",
                          f"-I{HERE}", "-o", str(lib), str(src)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    library = ctypes.CDLL(str(lib))
    out = np.zeros(32, np.int32)
    with pytest.raises(AssertionError, match="divergent warp collective") as info:
        Kernel(library, "skips")((1,), (32,), (out,))
    assert "divergent.cpp:6" in str(info.value) and "divergent.cpp:7" in str(info.value)
