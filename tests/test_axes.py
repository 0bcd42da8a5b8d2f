"""label(..., axes=...): batches of images / volumes labelled in one call,
each slice on its own, numbered in raster order over the whole array."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import meshccl
from meshccl import patterns
from conftest import HAVE_GPU, examples, run_label, to_backend, to_host
from reference import reference_lattice


def first_cell_order(labels):
    """Renumber labels 1..N in raster order of each label's first cell."""
    flat = labels.reshape(-1)
    ids, first = np.unique(flat, return_index=True)
    keep = ids != 0
    ids, first = ids[keep], first[keep]
    new = np.zeros(int(flat.max(initial=0)) + 1, dtype=np.int64)
    new[ids[np.argsort(first)]] = np.arange(1, ids.size + 1)
    return new[labels]


def reference_axes(a, axes, connectivity=None, periodic=False, **kw):
    """Label every slice across the other axes with the reference, then
    number the whole array in raster order of first cells."""
    axes = tuple(sorted(k % a.ndim for k in axes))
    other = [k for k in range(a.ndim) if k not in axes]
    if not isinstance(periodic, bool):
        periodic = tuple(periodic[k] for k in axes)
    out = np.zeros(a.shape, dtype=np.int64)
    offset = 0
    for idx in np.ndindex(*[a.shape[k] for k in other]):
        sl = [slice(None)] * a.ndim
        for k, i in zip(other, idx):
            sl[k] = i
        sl = tuple(sl)
        sub_kw = {key: (v[sl] if isinstance(v, np.ndarray) else v) for key, v in kw.items()}
        lab = reference_lattice(a[sl], connectivity=connectivity, periodic=periodic, **sub_kw)
        lab = np.where(lab > 0, lab + offset, 0)
        offset = max(offset, int(lab.max(initial=0)))
        out[sl] = lab
    return first_cell_order(out)


@st.composite
def batches(draw):
    ndim = draw(st.integers(2, 4))
    side = {2: 14, 3: 7, 4: 4}[ndim]
    shape = tuple(draw(st.lists(st.integers(1, side), min_size=ndim, max_size=ndim)))
    a = draw(hnp.arrays(np.uint8, shape, elements=st.integers(0, 2)))
    axes = tuple(draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim - 1,
                               unique=True)))
    kw = {"connectivity": draw(st.integers(1, len(axes)))}
    if draw(st.booleans()):
        kw["periodic"] = draw(st.booleans())
    if draw(st.booleans()):
        kw["mask"] = draw(hnp.arrays(np.bool_, shape))
    if draw(st.booleans()):
        kw["tolerance"] = 1.0
    kw["background"] = draw(st.sampled_from([0, 1]))
    return a, axes, kw


@settings(max_examples=examples(200))
@given(case=batches(), method=st.sampled_from(["auto", "auto", "D", "B"]))
def test_axes_match_reference(backend, case, method):
    a, axes, kw = case
    got = run_label(a, backend, axes=axes, method=method, **kw)
    np.testing.assert_array_equal(got, reference_axes(a, axes, **kw))


@pytest.mark.parametrize("shape, axes", [((16, 70, 90), (1, 2)), ((70, 90, 3), (0, 1)),
                                         ((9, 40, 5, 30), (1, 3)), ((6, 33, 35), (0, 2)),
                                         ((50, 300), (1,)), ((300, 50), (0,))])
def test_axes_larger_than_tiles(backend, shape, axes):
    rng = np.random.default_rng(sum(shape))
    a = (rng.random(shape) < 0.6).astype(np.uint8)
    for conn in range(1, len(axes) + 1):
        want = reference_axes(a, axes, connectivity=conn)
        np.testing.assert_array_equal(run_label(a, backend, axes=axes, connectivity=conn), want)
        got, num = run_label(a, backend, axes=axes, connectivity=conn, return_num=True)
        assert num == want.max()


def test_batch_of_images_equals_separate_calls(backend):
    """A stack labelled with axes=(1, 2) equals each image labelled alone,
    offset by the labels of the images before it."""
    stack = np.stack([patterns.blobs((64, 80), seed=s) for s in range(5)])
    got = run_label(stack, backend, axes=(1, 2))
    offset = 0
    for k in range(5):
        alone = meshccl.label(stack[k])
        np.testing.assert_array_equal(got[k], np.where(alone > 0, alone + offset, 0))
        offset += alone.max()


def test_all_axes_is_the_default(backend):
    a = patterns.potts((20, 21, 22), seed=3)
    np.testing.assert_array_equal(run_label(a, backend, axes=(0, 1, 2)), run_label(a, backend))
    # skimage's (a, b, 1) column-order quirk still applies when every axis is labelled
    col = patterns.potts((5, 6, 1), seed=1)
    np.testing.assert_array_equal(run_label(col, backend, axes=(-3, -2, -1)), run_label(col, backend))


def test_axes_with_iterative_methods(backend):
    a = patterns.percolation((4, 40, 30), 0.6, seed=2)
    want = reference_axes(a, (1, 2), connectivity=1)
    for method in ("A", "B", "C", "D", "cpu1", "cpu2"):
        np.testing.assert_array_equal(
            run_label(a, backend, axes=(1, 2), connectivity=1, method=method), want)
    want = reference_axes(a, (0, 1), connectivity=2)
    for method in ("A", "C", "D"):
        np.testing.assert_array_equal(
            run_label(a, backend, axes=(0, 1), connectivity=2, method=method), want)


def test_axes_parallel_cpu(monkeypatch):
    from meshccl import _tuning

    a = (np.random.default_rng(1).random((40, 50, 3)) < 0.5).astype(np.uint8)
    want = reference_axes(a, (0, 1), connectivity=2)
    # small: serially at the default CPU_CHUNK_MIN_CELLS, in chunks on threads at 1
    np.testing.assert_array_equal(meshccl.label(a, axes=(0, 1), cpu_threads=3), want)
    with _tuning.override(CPU_CHUNK_MIN_CELLS=1):
        np.testing.assert_array_equal(meshccl.label(a, axes=(0, 1), cpu_threads=3), want)


@pytest.mark.parametrize("axes, err, msg", [
    ((), ValueError, r"axes must name at least one axis"),
    ((0, 0), ValueError, "must not repeat"),
    ((3,), ValueError, "axes entry 3 is out of range for a 2-D label_image"),
    ((-3,), ValueError, "axes entry -3 is out of range"),
    ((0.5,), TypeError, "axes must be None, an int or a sequence of ints"),
    ("x", TypeError, "axes must be None, an int or a sequence of ints"),
    (1.0, TypeError, "axes must be None, an int or a sequence of ints")])
def test_bad_axes(axes, err, msg):
    with pytest.raises(err, match=msg):
        meshccl.label(np.ones((3, 4), np.uint8), axes=axes)


def test_axes_connectivity_and_bonds_errors():
    with pytest.raises(ValueError, match=r"connectivity for labelling along axes=\(1,\) must be in \[1, ..., 1\], got 2"):
        meshccl.label(np.ones((3, 4), np.uint8), axes=1, connectivity=2)
    with pytest.raises(ValueError, match="bonds cannot be combined with axes"):
        meshccl.label(np.ones((3, 4), np.uint8), axes=(1,), bonds=np.ones((4, 3, 4), bool))


def test_stack_view():
    """Which ``axes`` calls the 2-D chains take as one tall image
    (image_plain.stack_view): the labelled axes are the last one or two of
    the squeezed shape, and there are others."""
    from meshccl._gpu.image_plain import stack_view

    assert stack_view((4, 5, 6), 0b110) == ((20, 6), 5, 0)
    assert stack_view((4, 5, 6), 0b100) == ((20, 6), 1, 0)
    assert stack_view((2, 3, 5, 6), 0b1100, periodic=0b1111) == ((30, 6), 5, 3)
    assert stack_view((4, 5, 6), 0b110, periodic=0b010) == ((20, 6), 5, 1)
    assert stack_view((4, 6), 0b10, periodic=0b11) == ((4, 6), 1, 2)  # (1-D images: x only)
    for shape, axes in (((4, 5, 6), 0b011), ((4, 5, 6), 0b101), ((4, 5, 6), 0b111),
                        ((5, 6), 0b11), ((5, 6), 0b01), ((6,), 0b1), ((4, 5, 6), None)):
        assert stack_view(shape, axes) is None


def _stacks(rng):
    """Stacks of images, (array, axes), for the GPU's 2-D chains: image
    heights that are multiples of 32 and not, fewer rows than a tile,
    one-row images, many images, bands (binary, connectivity 2) cut at even
    and odd rows, vertical stripes (every column one component in each
    image, joined across images if a cut were missed), several batch axes,
    one-byte and wider cells."""
    yy, xx = np.mgrid[:300, :100]
    stripes = ((xx // 3) % 2).astype(np.uint8)
    return [
        (patterns.percolation((4, 64, 100), 0.5927, seed=1), (1, 2)),
        (patterns.percolation((7, 37, 90), 0.5, seed=2), (1, 2)),
        (patterns.percolation((5, 50, 33), 0.5927, seed=3).astype(bool), (1, 2)),
        (np.ones((13, 5, 70), np.uint8), (1, 2)),
        (stripes.reshape(100, 3, 100), (1, 2)),
        (stripes.reshape(150, 2, 100), (1, 2)),
        (stripes.reshape(60, 5, 100)[:, :, :97], (1, 2)),
        (stripes.reshape(300, 100), (1,)),
        (patterns.percolation((1000, 7, 40), 0.5927, seed=4), (1, 2)),
        (rng.integers(0, 3, (7, 5, 300)).astype(np.uint8), (2,)),
        (rng.integers(0, 3, (2, 3, 37, 50)).astype(np.uint8), (2, 3)),
        (patterns.blobs((3, 96, 130), seed=5).astype(np.uint16), (1, 2)),
        (rng.integers(-2, 2, (6, 45, 70)).astype(np.int32), (1, 2)),
        (np.repeat(rng.integers(0, 3, (9, 20, 30)), 3, axis=1).astype(np.float32), (1, 2)),
        (rng.integers(0, 3, (40, 1, 300)).astype(np.uint8), (1, 2)),  # (squeezed: 1-D images)
    ]


def _stack_phases(x, **kw):
    """The kernels a CuPy call ran (return_info's phases)."""
    return set(meshccl.label(x, return_info=True, **kw)[-1]["seconds"])


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_gpu_stacks_take_the_2d_chain():
    """Stacks of 1-D and 2-D images (the last one or two axes labelled) on
    the GPU's 2-D chains equal the CPU backend value for value: both
    connectivities, backgrounds, raster and first-cell numbering, counts,
    64-bit labels; and the general chain ran for none of them."""
    rng = np.random.default_rng(31)
    for a, axes in _stacks(rng):
        x = to_backend(a, "gpu")
        for c in range(1, len(axes) + 1):
            for bg in (0, 1):
                kw = dict(axes=axes, connectivity=c, background=bg)
                msg = f"{a.dtype} {a.shape} {kw}"
                want, n = meshccl.label(a, return_num=True, **kw)
                got, m = meshccl.label(x, return_num=True, **kw)
                np.testing.assert_array_equal(to_host(got), want, err_msg=msg)
                assert m == n, msg
                np.testing.assert_array_equal(
                    to_host(meshccl.label(x, numbering="first-cell", **kw)),
                    meshccl.label(a, numbering="first-cell", **kw), err_msg=msg)
                got, m, counts = meshccl.label(x, return_num=True, return_counts=True, **kw)
                np.testing.assert_array_equal(to_host(got), want, err_msg=msg)
                np.testing.assert_array_equal(to_host(counts),
                                              np.bincount(want.ravel(), minlength=n + 1))
        np.testing.assert_array_equal(to_host(meshccl.label(x, axes=axes, dtype=np.int64)),
                                      meshccl.label(a, axes=axes))
        phases = _stack_phases(x, axes=axes)
        assert "border" in phases and "union" not in phases, (a.shape, axes, phases)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_gpu_stacks_with_lattice_features():
    """Stacks on the lattice form of the 2-D chain: each image wrapping on
    its own (rows, columns, both), a mask, a tolerance, and them together,
    equal to the CPU backend, raster and first-cell."""
    rng = np.random.default_rng(32)
    cases = [(a, axes) for a, axes in _stacks(rng)]
    for a, axes in cases:
        n = len(axes)
        pers = [True, False] if n == 1 else [True, (False,) * (a.ndim - 2) + (True, False),
                                               (False,) * (a.ndim - 2) + (False, True)]
        feats = [dict(periodic=p) for p in pers] + [
            dict(mask=rng.random(a.shape) < 0.8),
            dict(tolerance=1.0) if a.dtype != np.bool_ else dict(mask=np.ones(a.shape, bool)),
            dict(periodic=True, mask=rng.random(a.shape) < 0.9)]
        for feat in feats:
            for c in range(1, n + 1):
                kw = dict(axes=axes, connectivity=c, **feat)
                msg = f"{a.dtype} {a.shape} axes={axes} c={c} {sorted(feat)} {feat.get('periodic')}"
                gkw = {k: (to_backend(v, "gpu") if isinstance(v, np.ndarray) else v)
                       for k, v in kw.items()}
                x = to_backend(a, "gpu")
                np.testing.assert_array_equal(to_host(meshccl.label(x, **gkw)),
                                              meshccl.label(a, **kw), err_msg=msg)
                np.testing.assert_array_equal(
                    to_host(meshccl.label(x, numbering="first-cell", **gkw)),
                    meshccl.label(a, numbering="first-cell", **kw), err_msg=msg)
                phases = _stack_phases(x, **gkw)
                assert "union" not in phases, (msg, phases)
