"""Hawick et al.'s iterative methods give exactly the default method's labels."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import meshccl
from meshccl import patterns
from conftest import HAVE_GPU
from test_lattice import lattices

ITERATIVE = ["A", "B", "C", "D", "cpu1", "cpu2"]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=lattices(), method=st.sampled_from(ITERATIVE))
def test_methods_match_default(case, method):
    a, kw = case
    np.testing.assert_array_equal(meshccl.label(a, method=method, **kw), meshccl.label(a, **kw))


@pytest.mark.parametrize("method", ITERATIVE)
def test_methods_on_patterns(method):
    cases = [(patterns.spiral(48), 1), (patterns.spiral(48), 2),
             (patterns.blobs((40, 50), seed=1), 2), (patterns.potts((12, 13, 14), seed=2), 1),
             (patterns.percolation((30, 30), 0.59, seed=3), 1)]
    for a, c in cases:
        for periodic in (False, True):
            want = meshccl.label(a, connectivity=c, periodic=periodic)
            got, info = meshccl.label(a, connectivity=c, periodic=periodic, method=method,
                                      return_info=True)
            np.testing.assert_array_equal(got, want)
            assert info["method"] == method and info["iterations"] >= 1


def test_iteration_counts_follow_the_paper():
    """On the spiral, A moves labels one cell per iteration (about the length
    of the spiral), C a line per sweep, D needs a handful (Hawick et al. 6.3.2)."""
    s = patterns.spiral(64)
    its = {m: meshccl.label(s, connectivity=1, method=m, return_info=True)[1]["iterations"]
           for m in ITERATIVE}
    assert its["A"] > 1000 > its["B"] > its["C"]
    assert its["D"] == its["cpu2"] <= 5
    assert its["cpu1"] < its["A"]


def test_return_info_shapes():
    a = np.array([[1, 0, 1]])
    labels, info = meshccl.label(a, return_info=True)
    assert set(info) == {"method", "backend", "iterations", "seconds"}
    assert info["method"] == "unionfind" and info["iterations"] == 1 and info["backend"] == "cpu"
    labels, num, info = meshccl.label(a, return_num=True, return_info=True, method="D")
    assert num == 2 and info["method"] == "D"
    assert set(info["seconds"]) == {"prepare", "label"}
    empty, info = meshccl.label(np.zeros((0, 3), np.uint8), return_info=True)
    assert empty.shape == (0, 3) and set(info["seconds"]) == {"prepare", "label"}


@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.gpu
def test_gpu_methods_not_yet():
    import cupy
    a = cupy.ones((4, 4), cupy.uint8)
    with pytest.raises(NotImplementedError, match="runs on the CPU in this release"):
        meshccl.label(a, method="A")
    np.testing.assert_array_equal(meshccl.label(a, method="D", device="cpu").get(), np.ones((4, 4)))


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=lattices(), threads=st.sampled_from([0, 2, 3, 7]))
def test_parallel_cpu_matches_serial(case, threads):
    a, kw = case
    np.testing.assert_array_equal(meshccl.label(a, cpu_threads=threads, **kw), meshccl.label(a, **kw))


@pytest.mark.parametrize("shape, conn", [((301, 257), 1), ((301, 257), 2), ((37, 41, 43), 1),
                                         ((37, 41, 43), 3), ((100000,), 1), ((9, 8, 7, 6), 4)])
def test_parallel_cpu_large(shape, conn):
    rng = np.random.default_rng(sum(shape))
    for a in [(rng.random(shape) < 0.55).astype(np.uint8),
              patterns.potts(shape, seed=1) if len(shape) > 1 else rng.integers(0, 3, shape)]:
        want = meshccl.label(a, connectivity=conn)
        for threads in (0, 2, 5):
            np.testing.assert_array_equal(meshccl.label(a, connectivity=conn, cpu_threads=threads), want)
    spiral = patterns.spiral(257)
    np.testing.assert_array_equal(meshccl.label(spiral, connectivity=1, cpu_threads=4),
                                  meshccl.label(spiral, connectivity=1))


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_cpu_threads_validation(bad):
    with pytest.raises(ValueError, match="cpu_threads must be an int >= 0"):
        meshccl.label(np.ones((3, 3), np.uint8), cpu_threads=bad)
