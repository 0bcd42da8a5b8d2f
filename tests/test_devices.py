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


@pytest.mark.gpu
def test_measure_runs_on_the_inputs_gpu():
    """meshccl.measure's functions run on the GPU that holds their input."""
    cupy = _two_gpus()
    from meshccl import measure

    a = np.random.default_rng(2).random((200, 300)) < 0.55
    labels = meshccl.label(a, connectivity=1)
    with cupy.cuda.Device(1):
        x, lab = cupy.asarray(a), cupy.asarray(labels)
    with cupy.cuda.Device(0):
        got = measure.statistics(lab)
        want = measure.statistics(labels)
        for key in ("voxel_counts", "bounding_boxes", "centroids"):
            assert got[key].device.id == 1
            np.testing.assert_allclose(got[key].get(), want[key])
        assert measure.relabel_by_size(lab).device.id == 1
        np.testing.assert_array_equal(measure.dust(x, 5, connectivity=1).get(),
                                      measure.dust(a, 5, connectivity=1))
        assert measure.largest_fraction(x, connectivity=1) == \
            measure.largest_fraction(a, connectivity=1)
        table = measure.regionprops_table(lab, properties=("label", "area"))
        np.testing.assert_array_equal(table["area"].get(),
                                      measure.regionprops_table(labels,
                                                                properties=("label", "area"))["area"])
