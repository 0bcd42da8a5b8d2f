"""meshccl.dask.label's GPU branch (meshccl/_gpu/chunks.py and the kernels of
_kernels/chunks.cu), run without a GPU.

The kernels of chunks.cu are grid-stride loops, so compiled for the host
with a grid of one thread (blockIdx 0, blockDim 1, gridDim 1) and plain
read-modify-write atomics they run serially over every item.  A stand-in
``cupy`` module (NumPy arrays whose type claims to be CuPy's, device
copies and memsets on their bytes) routes every launch of
``meshccl._gpu.chunks`` to them, and ``meshccl.label`` on a stand-in array
is the CPU's labels in CuPy's int32, so that ``meshccl.dask.label`` runs its
GPU branch end to end here: streams, the ids, the layers (strided values
included), the slabs stacked by device copies, the pairs gathered on the
device, the renumbering.  The labels must equal ``meshccl.label``'s on the
whole array.  The kernels themselves run on the GPU in test_dask.py's CuPy
tests; these emulations are the kernels' own code on one thread.
"""

import ctypes
import importlib.util
import sys
import types

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
import dask  # noqa: E402

import meshccl  # noqa: E402
from conftest import host_library  # noqa: E402

HARNESS = r"""
#define __global__
#define __device__
#define __forceinline__ inline
struct Dim3 { unsigned x, y, z; };
static const Dim3 blockIdx{0, 0, 0}, threadIdx{0, 0, 0}, blockDim{1, 1, 1}, gridDim{1, 1, 1};
static unsigned long long atomicMin(unsigned long long* p, unsigned long long v) {
    unsigned long long old = *p; if (v < old) *p = v; return old; }
static unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    unsigned long long old = *p; *p = old + v; return old; }
#include "chunks.cu"
#define L_WRAP(L, tag)                                                                      \
extern "C" void first_##tag(const L* a, long long b, int c, const long long* d,            \
                            unsigned long long* e) { meshccl_chunk_first<L>(a, b, c, d, e); } \
extern "C" void rep_##tag(const L* a, const long long* b, long long c, long long* d) {     \
    meshccl_slab_rep<L>(a, b, c, d); }                                                      \
extern "C" void pairs_##tag(const L* a, const long long* b, long long c, const long long* d, \
                            long long* e, unsigned long long* f) {                           \
    meshccl_slab_pairs<L>(a, b, c, d, e, f); }                                              \
extern "C" void renumber_##tag(const L* a, long long b, const long long* c, long long* d) { \
    meshccl_chunk_renumber<L>(a, b, c, d); }
L_WRAP(int, int)
L_WRAP(long long, ll)
#define VL_WRAP(V, L, tag)                                                                  \
extern "C" void layer_##tag(const V* a, const unsigned char* b, const L* c,                \
                            const long long* d, int e, const long long* f, int g,           \
                            long long h, long long i, V* j, long long* k, unsigned char* l) { \
    meshccl_chunk_layer<V, L>(a, b, c, d, e, f, g, h, i, j, k, l); }
VL_WRAP(unsigned char, int, u1_int) VL_WRAP(unsigned char, long long, u1_ll)
VL_WRAP(unsigned short, int, u2_int) VL_WRAP(unsigned short, long long, u2_ll)
VL_WRAP(unsigned int, int, u4_int) VL_WRAP(unsigned int, long long, u4_ll)
VL_WRAP(unsigned long long, int, u8_int) VL_WRAP(unsigned long long, long long, u8_ll)
"""


class FakeArray(np.ndarray):
    """A CuPy array as far as meshccl.dask's GPU branch uses one."""

    def get(self):
        return np.asarray(self).copy()

    @property
    def data(self):
        return FakeMemory(self, 0)

    @property
    def device(self):
        return types.SimpleNamespace(id=0)


FakeArray.__module__ = "cupy._core.core"


class FakeMemory:
    """cupy.cuda.MemoryPointer: a byte offset into an array's buffer."""

    def __init__(self, array, offset):
        self.array, self.offset = array, offset
        self.ptr = array.__array_interface__["data"][0] + offset

    def __add__(self, n):
        return FakeMemory(self.array, self.offset + n)

    def _bytes(self, size):
        base = np.asarray(self.array).reshape(-1).view(np.uint8)
        return base[self.offset:self.offset + size]

    def memset_async(self, value, size, stream=None):
        self._bytes(size)[:] = value

    def copy_from_device_async(self, src, size, stream=None):
        self._bytes(size)[:] = src._bytes(size)


class FakeStream:
    current = None
    synchronized = 0

    def __enter__(self):
        self.outer, FakeStream.current = FakeStream.current, self
        return self

    def __exit__(self, *exc):
        FakeStream.current = self.outer

    def synchronize(self):
        FakeStream.synchronized += 1


class FakeDevice:
    def __init__(self, device_id=None):
        self.id = 0 if device_id is None else device_id

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def fake(a):
    return np.ascontiguousarray(a).view(FakeArray) if isinstance(a, np.ndarray) else a


def _plain(a):
    return np.asarray(a) if isinstance(a, FakeArray) else a


def _wrap(f):
    return lambda *a, **k: fake(f(*[_plain(x) for x in a], **k))


def make_cupy():
    cp = types.ModuleType("cupy")
    cp.ndarray = FakeArray
    for name in ("asarray", "ascontiguousarray", "empty", "zeros"):
        setattr(cp, name, _wrap(getattr(np, name)))
    cp.empty = lambda *a, **k: fake(np.full(*a, 0x5A, **k)
                                    if np.dtype(k.get("dtype", float)).kind in "iub"
                                    else np.full(*a, np.nan, **k))  # junk, as fresh memory
    cp.concatenate = lambda parts, axis=0: fake(np.concatenate([_plain(p) for p in parts],
                                                               axis=axis))
    cp.cuda = types.SimpleNamespace(Device=FakeDevice, Stream=FakeStream,
                                    get_current_stream=lambda: FakeStream.current)
    # (what else Dask's own CuPy dispatch asks for: NumPy's, on stand-ins)
    cp.__getattr__ = lambda name: _wrap(getattr(np, name))
    return cp


def _emulated_kernels(lib):
    """The loader's ``kernels`` for chunks.cu: each name expression to the
    host library's function, called as a CuPy RawKernel is."""
    tags = {"int": "int", "long long": "ll"}
    words = {"unsigned char": "u1", "unsigned short": "u2", "unsigned int": "u4",
             "unsigned long long": "u8"}

    def arg(x):
        if isinstance(x, np.ndarray):
            return ctypes.c_void_p(x.__array_interface__["data"][0])
        if isinstance(x, np.uint64):  # chunks.NULL
            assert x == 0
            return ctypes.c_void_p(None)
        if isinstance(x, np.int64):
            return ctypes.c_longlong(int(x))
        if isinstance(x, np.int32):
            return ctypes.c_int(int(x))
        raise TypeError(f"a kernel argument of type {type(x).__name__}")

    def one(expr):
        name, types_ = expr[:-1].split("<")
        parts = [p.strip() for p in types_.split(",")]
        short = name.replace("meshccl_chunk_", "").replace("meshccl_slab_", "")
        tag = tags[parts[-1]] if len(parts) == 1 else f"{words[parts[0]]}_{tags[parts[1]]}"
        fn = getattr(lib, f"{short}_{tag}")
        fn.restype = None

        def launch(grid, block, args):
            fn(*[arg(a) for a in args])
        return launch

    return lambda filename, *names: tuple(one(n) for n in names)


@pytest.fixture()
def emulated(tmp_path_factory, monkeypatch):
    if importlib.util.find_spec("cupy") is not None:
        # (Dask registers its CuPy dispatch once a process, for whichever
        # module is "cupy" then: never the stand-in where the real one is)
        pytest.skip("CuPy is installed: test_dask.py's CuPy tests run this branch")
    lib = host_library(tmp_path_factory, "chunks_harness", HARNESS)
    monkeypatch.setitem(sys.modules, "cupy", make_cupy())
    import meshccl.dask as mdask
    from meshccl._gpu import chunks

    monkeypatch.setattr(chunks, "kernels", _emulated_kernels(lib))
    chunks._kernels.cache_clear()
    real = mdask._label

    def label(image, *args, **kw):
        if not isinstance(image, FakeArray):
            return real(image, *args, **kw)
        kw = {k: _plain(v) for k, v in kw.items()}
        out = real(np.asarray(image), *args, **kw)
        out = out if isinstance(out, tuple) else (out,)
        labels = fake(out[0].astype(np.int32))  # CuPy's labels: int32
        out = (labels,) + tuple(fake(x) for x in out[1:])
        return out if len(out) > 1 else labels

    monkeypatch.setattr(mdask, "_label", label)
    yield mdask
    chunks._kernels.cache_clear()


def _check(mdask, x, chunks, **opts):
    want, n_want, c_want = meshccl.label(x, return_num=True, return_counts=True, **opts)
    mask = opts.pop("mask", None)
    image = da.from_array(x, chunks=chunks).map_blocks(fake)
    if mask is not None:
        opts["mask"] = da.from_array(mask, chunks=chunks).map_blocks(fake)
    for low_memory in (False, True):
        got, n, counts = mdask.label(image, return_num=True, return_counts=True,
                                     low_memory=low_memory, **opts)
        got, n, counts = dask.compute(got, n, counts, scheduler="sync")
        assert isinstance(got, FakeArray)
        np.testing.assert_array_equal(np.asarray(got), want)
        assert int(n) == n_want
        np.testing.assert_array_equal(counts, c_want)


CASES = [((17,), 5), ((7, 9), (3, 4)), ((8, 8), ((1, 3, 4), (5, 2, 1))),
         ((6, 7, 5), (2, 3, 4)), ((5, 4, 3), ((1, 4), (2, 2), (1, 1, 1))),
         ((3, 4, 3, 4), (2, 3, 2, 3))]


@pytest.mark.parametrize("shape,chunks", CASES)
def test_gpu_branch_every_connectivity(emulated, shape, chunks):
    rng = np.random.default_rng(sum(shape))
    x = (rng.random(shape) < 0.5).astype(np.uint8)
    for c in range(1, len(shape) + 1):
        _check(emulated, x, chunks, connectivity=c)


@pytest.mark.parametrize("shape,chunks", CASES[:5])
def test_gpu_branch_values_mask_periodic_tolerance(emulated, shape, chunks):
    rng = np.random.default_rng(3 + sum(shape))
    x = rng.integers(-2, 3, shape).astype(np.int16)
    _check(emulated, x, chunks, background=-1, connectivity=1)
    _check(emulated, x, chunks, periodic=True)
    _check(emulated, x, chunks, mask=rng.random(shape) < 0.7)
    f = rng.random(shape) * 4
    _check(emulated, f, chunks, tolerance=0.5, connectivity=1)
    _check(emulated, f.astype(np.float32), chunks)
    _check(emulated, rng.random(shape) < 0.5, chunks, background=1)


def test_gpu_branch_strided_chunks(emulated):
    """Chunks that are views with other strides (a transposed array): the
    layer kernel reads values through their strides."""
    rng = np.random.default_rng(5)
    x = rng.integers(0, 3, (9, 8, 7)).astype(np.uint32)
    image = da.from_array(x, chunks=(4, 3, 5)).map_blocks(fake).transpose(2, 0, 1)
    image = image.map_blocks(lambda b: np.asarray(b).transpose(0, 1, 2).view(FakeArray))
    want = meshccl.label(x.transpose(2, 0, 1), connectivity=2)
    got = emulated.label(image, connectivity=2).compute(scheduler="sync")
    np.testing.assert_array_equal(np.asarray(got), want)


def test_gpu_tasks_wait_for_their_own_stream(emulated):
    """Every GPU task ends by waiting for its thread's own stream."""
    x = (np.random.default_rng(1).random((12, 10)) < 0.5).astype(np.uint8)
    image = da.from_array(x, chunks=(4, 5)).map_blocks(fake)
    before = FakeStream.synchronized
    emulated.label(image).compute(scheduler="sync")
    # 6 chunks: a summary and a renumbering each; faces for 5 of them
    assert FakeStream.synchronized - before == 6 + 6 + 5


@pytest.mark.parametrize("numbering", ["sequential", "first-cell"])
def test_gpu_branch_numberings(emulated, numbering):
    """The other numberings: the GPU branch's labels equal those of NumPy
    chunks, which test_dask.py checks against their definitions."""
    rng = np.random.default_rng(9)
    x = (rng.random((11, 9, 10)) < 0.5).astype(np.uint8)
    chunks = ((4, 7), (3, 6), (5, 5))
    for c in (1, 3):
        want = emulated.label(da.from_array(x, chunks=chunks), connectivity=c,
                              numbering=numbering).compute(scheduler="sync")
        image = da.from_array(x, chunks=chunks).map_blocks(fake)
        got = emulated.label(image, connectivity=c, numbering=numbering)
        np.testing.assert_array_equal(np.asarray(got.compute(scheduler="sync")), want)


@pytest.mark.parametrize("numbering", ["raster", "sequential"])
def test_gpu_branch_statistics(emulated, numbering):
    """return_statistics on the GPU branch (the numbering on the chunk's
    device): the statistics of the labels it gives."""
    from meshccl import measure

    rng = np.random.default_rng(12)
    x = (rng.random((11, 9, 10)) < 0.5).astype(np.uint8)
    image = da.from_array(x, chunks=((4, 7), (3, 6), (5, 5))).map_blocks(fake)
    for c in (1, 3):
        got, stats = dask.compute(*emulated.label(image, connectivity=c, numbering=numbering,
                                                  return_statistics=True, low_memory=True),
                                  scheduler="sync")
        want = measure.statistics(np.asarray(got))
        for k in want:
            np.testing.assert_array_equal(np.asarray(stats[k]), want[k], err_msg=k)
        if numbering == "raster":
            np.testing.assert_array_equal(np.asarray(got), meshccl.label(x, connectivity=c))
