"""measure.contacts / contact_pairs / region_graph against cc3d and a
brute-force count, on every backend (CPU always; GPU where available)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import meshccl
from meshccl import measure
from meshccl.graph import Edges, connected_components
from conftest import examples, to_backend, to_host

CC3D_NAMES = {2: (4, 8), 3: (6, 18, 26)}


def brute(labels, hops, anisotropy=None, surface_area=False):
    """Each pair of neighbouring cells once, cell by cell."""
    out = {}
    shape = labels.shape
    ndim = labels.ndim
    for here in np.ndindex(*shape):
        for delta in itertools.product((-1, 0, 1), repeat=ndim):
            moved = [d for d in range(ndim) if delta[d]]
            if not moved or len(moved) > hops or delta[moved[0]] < 0:
                continue  # (each pair once: first moved step +1)
            there = tuple(i + s for i, s in zip(here, delta))
            if not all(0 <= i < n for i, n in zip(there, shape)):
                continue
            a, b = int(labels[here]), int(labels[there])
            if a == 0 or b == 0 or a == b:
                continue
            if surface_area:
                w = (np.prod([anisotropy[e] for e in range(ndim) if e != moved[0]])
                     if len(moved) == 1 else 0.0)
            else:
                w = 1
            key = (min(a, b), max(a, b))
            out[key] = out.get(key, 0) + w
    return out


@st.composite
def label_images(draw, ndims=(2, 3)):
    ndim = draw(st.sampled_from(ndims))
    side = {1: 12, 2: 8, 3: 5, 4: 3}[ndim]
    shape = tuple(draw(st.lists(st.integers(1, side), min_size=ndim, max_size=ndim)))
    values = draw(st.lists(st.integers(0, 300), min_size=1, max_size=6, unique=True))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return rng.choice(values, size=shape).astype(draw(st.sampled_from(
        [np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]))
        if max(values) < 256 else draw(st.sampled_from([np.int32, np.uint64])))


def as_dict(pairs, values):
    return {(a, b): v for (a, b), v in zip(to_host(pairs).tolist(), to_host(values).tolist())}


@settings(max_examples=examples(150), deadline=None)
@given(labels=label_images(), data=st.data())
def test_contacts_match_cc3d(backend, labels, data):
    cc3d = pytest.importorskip("cc3d")
    ndim = labels.ndim
    dev = to_backend(labels, backend)
    for hops, name in enumerate(CC3D_NAMES[ndim], start=1):
        weights = tuple(data.draw(st.sampled_from([1.0, 0.5, 2.0, 3.0])) for _ in range(ndim))
        cc_weights = weights + (1.0,) * (3 - ndim)
        # surface areas: cc3d's values, pair for pair (its sums are float32)
        want = cc3d.contacts(labels, connectivity=name, surface_area=True,
                             anisotropy=cc_weights)
        for spelling in (hops, name):
            got = measure.contacts(dev, connectivity=spelling, anisotropy=weights)
            assert list(got) == sorted(want)
            np.testing.assert_allclose([got[k] for k in sorted(want)],
                                       [want[k] for k in sorted(want)], rtol=1e-6)
        # counts: cc3d's on a zero border (cc3d 4.1 counts some border pairs
        # twice at 8 / 26), the brute force everywhere
        padded = np.pad(labels, 1)
        want = cc3d.contacts(padded, connectivity=name, surface_area=False)
        assert measure.contacts(to_backend(padded, backend), name, surface_area=False) == want
        got = measure.contacts(dev, hops, surface_area=False)
        assert got == {k: float(v) for k, v in brute(labels, hops).items()}
        assert measure.region_graph(dev, name) == cc3d.region_graph(labels, connectivity=name)
        pairs, counts = measure.contact_pairs(dev, hops)
        assert isinstance(pairs, np.ndarray) == (backend == "cpu")
        assert to_host(pairs).dtype == np.int64 and to_host(counts).dtype == np.int64
        assert as_dict(pairs, counts) == brute(labels, hops)


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_contact_pairs_match_brute_force(backend, ndim):
    rng = np.random.default_rng(ndim)
    side = {1: 40, 2: 9, 3: 5, 4: 4}[ndim]
    for trial in range(6):
        shape = tuple(int(s) for s in rng.integers(1, side + 1, size=ndim))
        labels = rng.integers(0, 7, size=shape).astype(np.uint16)
        anisotropy = tuple(float(w) for w in rng.uniform(0.5, 2, ndim))
        for hops in range(1, ndim + 1):
            pairs, counts = measure.contact_pairs(to_backend(labels, backend), hops)
            assert as_dict(pairs, counts) == brute(labels, hops)
            p = to_host(pairs)
            assert np.all(p[:, 0] < p[:, 1]) and np.all(np.diff(p[:, 0] * 8 + p[:, 1]) > 0)
            pairs, area = measure.contact_pairs(to_backend(labels, backend), hops,
                                                surface_area=True, anisotropy=anisotropy)
            want = brute(labels, hops, anisotropy, surface_area=True)
            got = as_dict(pairs, area)
            assert list(got) == sorted(want)
            np.testing.assert_allclose([got[k] for k in sorted(want)],
                                       [want[k] for k in sorted(want)], rtol=1e-12)


def test_cc3d_three_weights_for_2d_and_1d():
    cc3d = pytest.importorskip("cc3d")
    labels = np.array([[1, 1, 2], [3, 2, 2]], np.uint32)
    for c in (4, 8):
        assert measure.contacts(labels, c, anisotropy=(2, 3, 5)) == cc3d.contacts(
            labels, connectivity=c, anisotropy=(2, 3, 5))
    line = np.array([1, 2, 2, 3, 0, 3, 1], np.uint8)
    assert measure.contacts(line, anisotropy=(2, 3, 5)) == cc3d.contacts(line, anisotropy=(2, 3, 5))
    assert measure.contacts(line, surface_area=False) == cc3d.contacts(line, surface_area=False)


def test_large_labels(backend):
    """Labels past 2**32: the pair keys are built on numbers of the labels
    present."""
    labels = np.array([[0, 5, 5], [2**40, 2**40 + 1, 0], [7, 2**40, 5]], np.uint64)
    pairs, counts = measure.contact_pairs(to_backend(labels, backend), 1)
    assert as_dict(pairs, counts) == brute(labels, 1)
    pairs, counts = measure.contact_pairs(to_backend(labels + 1, backend), 2)  # no background
    assert as_dict(pairs, counts) == brute(labels + 1, 2)


def test_region_graph_joins_what_label_joins(backend):
    """Components of the region graph of connected labels are the
    components of their union: the labelling of the non-zero cells."""
    rng = np.random.default_rng(7)
    for ndim, shape in ((2, (30, 30)), (3, (9, 10, 11))):
        image = rng.integers(0, 4, size=shape).astype(np.uint8)
        for hops in range(1, ndim + 1):
            labels, n = meshccl.label(image, connectivity=hops, return_num=True)
            pairs, _ = measure.contact_pairs(to_backend(labels, backend), hops)
            pairs = to_host(pairs)
            _, group = connected_components(Edges(pairs[:, 0], pairs[:, 1], n + 1))
            merged = np.where(labels > 0, group[labels] + 1, 0)
            want = meshccl.label((image > 0).astype(np.uint8), connectivity=hops)
            # the same partition of the non-zero cells
            both = np.stack([merged[labels > 0], want[labels > 0]], axis=1)
            assert len(np.unique(both, axis=0)) == len(np.unique(want[labels > 0]))
            assert len(np.unique(merged[labels > 0])) == len(np.unique(want[labels > 0]))


def test_no_contacts(backend):
    for labels in (np.zeros((0, 3), np.int32), np.zeros((3, 4), np.uint8), np.array(5),
                   np.ones((4, 4), bool), np.array([[1, 0, 2]], np.int64)):
        pairs, counts = measure.contact_pairs(to_backend(labels, backend))
        assert to_host(pairs).shape == (0, 2) and to_host(counts).shape == (0,)
        assert to_host(counts).dtype == np.int64
        assert measure.contacts(to_backend(labels, backend)) == {}
        assert measure.region_graph(to_backend(labels, backend)) == set()
    _, area = measure.contact_pairs(to_backend(np.zeros((2, 2), np.int32), backend),
                                    surface_area=True)
    assert to_host(area).dtype == np.float64


def test_bad_input(backend):
    x = to_backend(np.array([[1, 0], [2, 2]], np.int32), backend)
    for bad in (0, 3, 5, 6, 26, -1):
        with pytest.raises(ValueError, match=r"connectivity for a 2-D labels must be 1..2 "
                                             r"\(orthogonal hops, as meshccl.label\) or cc3d's "
                                             rf"4, 8; got {bad}"):
            measure.contacts(x, bad)
    x3 = to_backend(np.ones((2, 2, 2), np.int32), backend)
    with pytest.raises(ValueError, match=r"or cc3d's 6, 18, 26; got 8"):
        measure.contact_pairs(x3, 8)
    for bad in (True, 1.5, "6"):
        with pytest.raises(TypeError, match=r"connectivity must be an int"):
            measure.region_graph(x, bad)
    with pytest.raises(ValueError, match=r"anisotropy must hold one weight per axis"):
        measure.contacts(x3, anisotropy=(1, 2))
    with pytest.raises(ValueError, match=r"anisotropy must be finite and > 0"):
        measure.contacts(x, anisotropy=(1, -2))
    with pytest.raises(TypeError, match=r"anisotropy must hold real numbers"):
        measure.contacts(x, anisotropy=(1, "a"))
    with pytest.raises(ValueError, match=r"labels must be non-negative"):
        measure.contacts(to_backend(np.array([[1, -1]]), backend))
    with pytest.raises(TypeError, match=r"labels must be an integer array"):
        measure.contact_pairs(to_backend(np.array([[1.0, 2.0]]), backend))


def test_pair_table_uses_only_what_cupy_has():
    """numpy under a module with only the names (of CuPy's too) that the
    GPU path may call."""
    import types

    from meshccl import _contacts

    xp = types.ModuleType("strict_xp")
    for name in ("zeros", "unique", "concatenate", "bincount", "stack", "minimum", "maximum",
                 "searchsorted"):
        setattr(xp, name, getattr(np, name))
    rng = np.random.default_rng(4)
    for labels in (rng.integers(0, 6, size=(9, 8)), rng.integers(0, 6, size=(5, 4, 6)) + 2**33):
        top = int(labels.max())
        for surface_area in (False, True):
            offsets, weights = _contacts.areas(labels.ndim, labels.ndim, surface_area, None)
            got = _contacts.pair_table(xp, labels, top, offsets, weights, not surface_area)
            want = _contacts.pair_table(np, labels, top, offsets, weights, not surface_area)
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)
            assert got[0].shape[0] > 0
