"""The serial CPU plain path (provisional labels per run, ``_label_prov``)
against skimage and against the per-cell union pass of the lattice path."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from skimage.measure import label as sk_label

import meshccl
from meshccl import patterns


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_serial_matches_skimage(data):
    ndim = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 7), min_size=ndim, max_size=ndim)))
    a = data.draw(arrays(np.int8, shape, elements=st.integers(0, data.draw(st.integers(1, 3)))))
    conn = data.draw(st.integers(1, ndim))
    bg = data.draw(st.sampled_from([0, 1, -1]))
    got = meshccl.label(a, connectivity=conn, background=bg)
    np.testing.assert_array_equal(got, sk_label(a, connectivity=conn, background=bg))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_serial_matches_lattice_path(data):
    """4-D / 5-D: the plain path against the per-cell path (a mask of ones
    sends the same image through ``_rows``)."""
    ndim = data.draw(st.integers(4, 5))
    shape = tuple(data.draw(st.lists(st.integers(2, 4), min_size=ndim, max_size=ndim)))
    a = data.draw(arrays(np.uint8, shape, elements=st.integers(0, 2)))
    conn = data.draw(st.integers(1, ndim))
    got = meshccl.label(a, connectivity=conn)
    want = meshccl.label(a, connectivity=conn, mask=np.ones(shape, dtype=bool))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("conn", [1, 2, 3])
def test_serial_patterns(conn):
    """Many provisional labels (the equivalence table grows) and long runs."""
    for a in (patterns.percolation((40, 50, 60), 0.3, seed=5), patterns.blobs((33, 70, 41), seed=6),
              patterns.potts((30, 31, 32), seed=7)):
        bg = -1 if a.min() > 0 else 0
        np.testing.assert_array_equal(meshccl.label(a, connectivity=conn, background=bg),
                                      sk_label(a, connectivity=conn, background=bg))
    a = patterns.percolation((300, 400), 0.59, seed=8)
    np.testing.assert_array_equal(meshccl.label(a, connectivity=min(conn, 2)),
                                  sk_label(a, connectivity=min(conn, 2)))
