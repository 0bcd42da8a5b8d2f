"""Shared fixtures: every labelling test runs on each available backend.

``backend`` is "cpu" (NumPy in, the compiled CPU backend) everywhere and "gpu" (CuPy in,
CUDA kernels) where CuPy sees a GPU; GPU cases are skipped, not failed,
elsewhere.

Hypothesis profiles, chosen by the environment:

- ``ci`` (when ``CI`` is set, as on CI services): a quarter of each test's
  examples, no deadline (the first example of a test may compile kernels);
- ``thorough`` (``MESHCCL_HYPOTHESIS=thorough``): every test's full count;
- ``dev`` otherwise: half of them.

Property tests ask for their examples through :func:`examples`, which scales
the full count by the profile (a count in a test's ``@settings`` would
override the profile's).
"""

import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import meshccl

_QUIET = list(HealthCheck)
settings.register_profile("ci", deadline=None, suppress_health_check=_QUIET, max_examples=25,
                          print_blob=True)
settings.register_profile("dev", deadline=None, suppress_health_check=_QUIET, max_examples=50)
settings.register_profile("thorough", deadline=None, suppress_health_check=_QUIET,
                          max_examples=100)
PROFILE = os.environ.get("MESHCCL_HYPOTHESIS") or ("ci" if os.environ.get("CI") else "dev")
settings.load_profile(PROFILE)
_SCALE = {"ci": 0.25, "dev": 0.5, "thorough": 1.0}.get(PROFILE, 1.0)


def examples(full):
    """The number of examples a property test runs under this profile,
    ``full`` being its count in a thorough run (at least 10)."""
    return max(10, int(full * _SCALE))

def row_pointers(src, n, dtype=np.int64):
    """CSR row pointers of ``n`` rows whose stored entries, in row order,
    have the rows ``src``: ``indptr[v]`` entries lie in rows before v."""
    indptr = np.zeros(n + 1, dtype)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return indptr


def drawn_graphs(max_n, max_edges):
    """A hypothesis strategy of directed graphs ``(n, edges)``: 1..max_n
    vertices and up to ``max_edges`` (source, target) pairs, loops and
    repeats included."""
    return st.integers(1, max_n).flatmap(lambda n: st.tuples(
        st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                             max_size=max_edges)))


def csr_as_drawn(n, edges):
    """A graph of :func:`drawn_graphs` as int64 ``src, dst, indptr,
    indices``: the edges in the order drawn, and the CSR whose rows keep
    that order (unsorted, repeats anywhere)."""
    src = np.array([e[0] for e in edges], np.int64)
    dst = np.array([e[1] for e in edges], np.int64)
    return src, dst, row_pointers(src, n), dst[np.argsort(src, kind="stable")]


@st.composite
def small_graphs(draw, max_n, max_edges):
    """A hypothesis strategy of graphs ``(n, src, dst)`` (int64 ends) of
    0..max_n vertices and, when n > 0, up to ``max_edges`` edges:
    self-loops, duplicates, isolated vertices, one-way edges."""
    n = draw(st.integers(0, max_n))
    m = draw(st.integers(0, max_edges)) if n else 0
    ends = st.lists(st.integers(0, max(n - 1, 0)), min_size=m, max_size=m)
    src = np.array(draw(ends) if n else [], np.int64)
    dst = np.array(draw(ends) if n else [], np.int64)
    return n, src, dst


def random_chunks(shape, rng):
    """A random dask chunking of ``shape``: each axis cut at up to four
    random places (every chunk at least 1 long)."""
    out = []
    for s in shape:
        k = int(rng.integers(0, min(s - 1, 4) + 1)) if s > 1 else 0
        cuts = np.sort(rng.choice(np.arange(1, s), size=k, replace=False)) if k else []
        edges = [0, *cuts, s]
        out.append(tuple(int(b - a) for a, b in zip(edges[:-1], edges[1:])))
    return tuple(out)


HAVE_GPU = meshccl.gpu_available()
BACKENDS = ["cpu", pytest.param("gpu", marks=[pytest.mark.gpu, pytest.mark.skipif(
    not HAVE_GPU, reason="no CUDA GPU / CuPy")])]


def to_backend(a, backend):
    if backend == "gpu":
        import cupy
        return cupy.asarray(a)
    return a


def to_host(a):
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


def run_label(a, backend, **kw):
    """Label a NumPy array on ``backend``; return NumPy results."""
    out = meshccl.label(to_backend(a, backend), **kw)
    if isinstance(out, tuple):
        return to_host(out[0]), out[1]
    return to_host(out)


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


def host_library(tmp_path_factory, name, source, flags=("-std=c++17",), skip_if=None):
    """C++ ``source`` (which includes the kernel headers of meshccl/_kernels)
    compiled by the host compiler into a shared library and loaded with
    ctypes: how the emulation tests run kernel code on the CPU.  Skips
    without a compiler, or when the compiler's message holds ``skip_if``."""
    from meshccl._gpu import loader

    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    tmp = tmp_path_factory.mktemp(name)
    src, lib = tmp / f"{name}.cpp", tmp / f"{name}.so"
    src.write_text(source)
    out = subprocess.run([cxx, *flags, "-O1", "-shared", "-fPIC", f"-I{loader.kernel_dir()}",
                          "-o", str(lib), str(src)], capture_output=True, text=True)
    if out.returncode and skip_if is not None and skip_if in out.stderr:
        pytest.skip(f"the C++ compiler cannot build {name} ({skip_if})")
    assert out.returncode == 0, out.stderr
    return ctypes.CDLL(str(lib))


@pytest.fixture
def local_cluster():
    """A client of a ``distributed.LocalCluster`` in this process (two
    workers of one thread), the default scheduler while the test runs."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(processes=False, n_workers=2, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


@pytest.fixture
def cuda_cluster():
    """A client of a ``dask_cuda.LocalCUDACluster`` (a worker a GPU), the
    default scheduler while the test runs."""
    dask_cuda = pytest.importorskip("dask_cuda")
    distributed = pytest.importorskip("distributed")
    with dask_cuda.LocalCUDACluster(dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client
