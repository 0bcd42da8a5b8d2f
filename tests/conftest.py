"""Shared fixtures: every labelling test runs on each available backend.

``backend`` is "cpu" (NumPy in, numba backend) everywhere and "gpu" (CuPy in,
CUDA kernels) where CuPy sees a GPU; GPU cases are skipped, not failed,
elsewhere.
"""

import numpy as np
import pytest

import meshccl

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
