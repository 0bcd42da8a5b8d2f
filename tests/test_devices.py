"""A CuPy array is labelled on its own GPU, whichever device is current."""

import numpy as np
import pytest
from skimage.measure import label as sk_label

import meshccl
from conftest import HAVE_GPU


def _two_gpus():
    if not HAVE_GPU:
        pytest.skip("no GPU")
    import cupy

    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    return cupy


@pytest.mark.gpu
@pytest.mark.parametrize("kw", [{}, {"return_info": True}, {"periodic": True},
                                {"connectivity": 1, "return_num": True}, {"method": "D"}])
def test_label_runs_on_the_inputs_gpu(kw):
    """The input lives on GPU 1 while GPU 0 is current: the plain chain (a
    launch plan), the general entry, a lattice feature and an iterative
    method all run there, and the labels come back on GPU 1."""
    cupy = _two_gpus()
    a = np.random.default_rng(1).random((300, 400)) < 0.5
    with cupy.cuda.Device(1):
        x = cupy.asarray(a)
    with cupy.cuda.Device(0):
        for _ in range(3):  # the second and later calls reuse the launch plan
            out = meshccl.label(x, **kw)
            labels = out[0] if isinstance(out, tuple) else out
            assert labels.device.id == 1
            assert cupy.cuda.runtime.getDevice() == 0
            want = meshccl.label(a, **kw)
            want = want[0] if isinstance(want, tuple) else want
            np.testing.assert_array_equal(labels.get(), want)
    if not kw:
        np.testing.assert_array_equal(labels.get(), sk_label(a))
