"""meshccl.ndimage.label with every structure scipy.ndimage.label takes:
random centrosymmetric 3 x ... x 3 structures (centre True or False,
disconnected patterns, with and without the left neighbour) against SciPy
on the CPU and on the GPU (there against cupyx too), the explicit offset
tables they become, and the structures both refuse."""

import numpy as np
import pytest
import scipy.ndimage as ndi
from hypothesis import given, settings
from hypothesis import strategies as st

from meshccl import errors, ndimage, neighbourhood
from conftest import BACKENDS, HAVE_GPU, examples, to_backend, to_host


def _symmetric(half, centre):
    """The centrosymmetric structure whose entries before the centre (in
    raster order) are ``half``."""
    half = np.asarray(half, dtype=bool)
    ndim = round(np.log(2 * half.size + 1) / np.log(3))
    flat = np.concatenate([half, [centre], half[::-1]])
    return flat.reshape((3,) * ndim)


@st.composite
def structures(draw, ndim):
    half = draw(st.lists(st.booleans(), min_size=3**ndim // 2, max_size=3**ndim // 2))
    return _symmetric(half, draw(st.booleans()))


@st.composite
def cases(draw):
    ndim = draw(st.integers(1, 4))
    top = {1: 70, 2: 24, 3: 10, 4: 6}[ndim]
    shape = tuple(draw(st.lists(st.integers(1, top), min_size=ndim, max_size=ndim)))
    density = draw(st.sampled_from([0.2, 0.45, 0.7, 0.95]))
    seed = draw(st.integers(0, 2**32 - 1))
    values = np.random.default_rng(seed).random(shape)
    a = np.where(values < density, np.round(values * 7 - 3), 0)  # several non-zero values
    return a.astype(draw(st.sampled_from([np.bool_, np.int16, np.float32]))), \
        draw(structures(ndim))


def _same(got, want):
    (labels, n), (ref, ref_n) = got, want
    assert n == ref_n
    assert labels.dtype == ref.dtype
    np.testing.assert_array_equal(to_host(labels), ref)


def _check(a, s, backend):
    """meshccl on ``backend`` equals SciPy on the host."""
    _same(ndimage.label(to_backend(a, backend), s), ndi.label(a, s))


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=examples(300))
@given(case=cases())
def test_random_structures_equal_scipy(backend, case):
    a, s = case
    _check(a, s, backend)


def _named(ndim):
    """Structures of every kind: the minimal, the full, the empty one,
    hollow ones, single directions, lines that skip the left neighbour, and
    disconnected patterns."""
    out = {}
    for c in range(ndim + 1):
        out[f"c={c}"] = ndi.generate_binary_structure(ndim, c)
        hollow = ndi.generate_binary_structure(ndim, c)
        hollow[(1,) * ndim] = False
        out[f"c={c}, centre False"] = hollow
    corners = np.zeros((3,) * ndim, bool)
    corners[(slice(None, None, 2),) * ndim] = True
    out["corners only"] = corners
    diagonal = np.zeros((3,) * ndim, bool)
    for k in range(3):
        diagonal[(k,) * ndim] = True
    out["main diagonal"] = diagonal
    out["parity"] = np.indices((3,) * ndim).sum(0) % 2 == 0  # (the centre: even)
    out["odd parity"] = np.indices((3,) * ndim).sum(0) % 2 == 1
    last = np.zeros((3,) * ndim, bool)
    last[(1,) * (ndim - 1)] = True
    out["last axis only"] = last
    if ndim >= 2:
        first = np.zeros((3,) * ndim, bool)
        first[(slice(None),) + (1,) * (ndim - 1)] = True
        out["first axis only (no left neighbour)"] = first
        knight = np.zeros((3,) * ndim, bool)
        knight[(0,) * (ndim - 1) + (1,)] = knight[(2,) * (ndim - 1) + (1,)] = True
        knight[(1,) * (ndim - 1) + (0,)] = knight[(1,) * (ndim - 1) + (2,)] = True
        knight[(0,) * (ndim - 1) + (2,)] = knight[(2,) * (ndim - 1) + (0,)] = True
        out["left and two offsets"] = knight
    return out


NAMED_SHAPES = {1: [(97,), (1,)], 2: [(37, 29), (1, 31), (23, 1)],
                3: [(9, 11, 13), (1, 9, 10), (8, 1, 9)], 4: [(5, 6, 4, 7), (3, 1, 5, 4)]}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_named_structures_equal_scipy(backend, ndim):
    rng = np.random.default_rng(40 + ndim)
    for name, s in _named(ndim).items():
        for shape in NAMED_SHAPES[ndim]:
            for density in (0.3, 0.6, 0.9):
                a = rng.random(shape) < density
                try:
                    _check(a, s, backend)
                except AssertionError as exc:
                    raise AssertionError(f"{name}, shape {shape}, density {density}") from exc


@pytest.mark.parametrize("backend", BACKENDS)
def test_structures_on_tiles_and_output_forms(backend):
    """Arrays of many GPU tiles (and CPU rows): long chains along one
    diagonal, and the output forms of SciPy."""
    rng = np.random.default_rng(5)
    a = rng.random((300, 257)) < 0.55
    a[np.arange(300), np.arange(300) % 257] = True  # a diagonal through every tile row
    for s in (np.eye(3, dtype=bool), np.eye(3, dtype=bool)[::-1], _named(2)["corners only"],
              _named(2)["left and two offsets"]):
        _check(a, s, backend)
        want, n = ndi.label(a, s, output=np.uint16)
        labels, got = ndimage.label(to_backend(a, backend), s, output=np.uint16)
        assert got == n and labels.dtype == np.uint16
        np.testing.assert_array_equal(to_host(labels), want)
    v = rng.random((40, 33, 35)) < 0.4
    _check(v, _named(3)["parity"], backend)
    _check(v, _named(3)["odd parity"], backend)


def test_structure_offsets_are_the_half_neighbourhood():
    """A structure's offsets are its entries before the centre; those of
    generate_binary_structure are half_offsets, and their explicit table is
    the connectivity's, flags and all."""
    for ndim in range(1, 5):
        for c in range(1, ndim + 1):
            s = ndi.generate_binary_structure(ndim, c)
            offsets = neighbourhood.structure_offsets(s)
            assert offsets == neighbourhood.half_offsets(ndim, c)
            assert neighbourhood.as_connectivity(offsets, ndim) == (tuple(range(ndim)), c)
            shape = (4, 5, 6, 7)[:ndim]
            np.testing.assert_array_equal(
                neighbourhood.offset_table(shape, c, offsets=offsets),
                neighbourhood.offset_table(shape, c))
    assert neighbourhood.structure_offsets(np.zeros((3, 3))) == ()
    assert neighbourhood.as_connectivity((), 2) is None
    assert neighbourhood.as_connectivity(((-1, 0, 0),), 3) == ((0,), 1)
    assert neighbourhood.as_connectivity(((-1, -1), (0, -1)), 2) is None
    # the anti-diagonal (-1, 1) is covered: (-1, 1) + (0, 1) leaves {-1, 0, 1}
    table = neighbourhood.offset_table((5, 6), 2, offsets=((-1, -1), (-1, 1), (0, -1)))
    assert table[:, 3].tolist() == [neighbourhood.MOVES_LEFT, 0]
    table = neighbourhood.offset_table((5, 6), 2, offsets=((-1, -1), (-1, 0), (0, -1)))
    assert table[:, 3].tolist() == [neighbourhood.COVERED | neighbourhood.MOVES_LEFT, 0]
    with pytest.raises(ValueError, match="sides of length 3"):
        neighbourhood.structure_offsets(np.ones((3, 2)))


@st.composite
def asymmetric(draw):
    ndim = draw(st.integers(1, 4))
    s = np.asarray(draw(st.lists(st.booleans(), min_size=3**ndim, max_size=3**ndim)),
                   dtype=bool).reshape((3,) * ndim)
    if np.array_equal(s, s[(slice(None, None, -1),) * ndim]):
        s.flat[0] = not s.flat[0]  # (one entry changed breaks the symmetry)
    return s


@settings(max_examples=examples(100))
@given(s=asymmetric())
def test_asymmetric_structures_refused_as_scipy_refuses(s):
    a = np.ones((4,) * s.ndim, bool)
    with pytest.raises(AssertionError):
        ndi.label(a, s)
    with pytest.raises(errors.AsymmetricStructure, match="structure must be centrosymmetric"):
        ndimage.label(a, s)
    with pytest.raises(ValueError):  # (a ValueError too, as before)
        ndimage.label(a, s)


def test_refusals_match_scipy():
    a = np.ones((4, 5))
    asym = [[0, 1, 0], [1, 1, 0], [0, 0, 0]]
    for call in (ndi.label, ndimage.label):
        with pytest.raises(AssertionError):
            call(a, asym)
        with pytest.raises(RuntimeError, match="equal rank"):
            call(a, np.ones((3, 3, 3)))
        with pytest.raises(ValueError, match="structure dimensions must be equal to 3"):
            call(a, np.ones((3, 5)))
        # SciPy checks the symmetry only when there is something to label
        assert call(np.ones((0, 4)), asym)[1] == 0
        assert call(np.array(2.0), np.zeros(()))[1] == 1
    with pytest.raises(AssertionError, match=r"got \[\[0, 1, 0\], \[1, 1, 0\], \[0, 0, 0\]\]"):
        ndimage.label(a, asym)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("ndim", [2, 3, 4])
def test_gpu_named_structures_equal_cupyx(ndim):
    import cupy
    import cupyx.scipy.ndimage as cndi

    rng = np.random.default_rng(60 + ndim)
    shape = {2: (300, 270), 3: (40, 36, 70), 4: (9, 10, 11, 12)}[ndim]
    a = cupy.asarray(rng.random(shape) < 0.5)
    for name, s in _named(ndim).items():
        if not s.any() or not np.delete(s.ravel(), s.size // 2).any():
            continue  # (no neighbours: against SciPy in the tests above)
        labels, n = ndimage.label(a, cupy.asarray(s))
        ref, ref_n = cndi.label(a, s)
        assert n == ref_n, name
        cupy.testing.assert_array_equal(labels, ref)


def test_explicit_structures_take_the_runsnd_chain():
    """A structure no connectivity names becomes a problem with explicit
    offsets on the squeezed shape (axes of length 1 dropped with the steps
    along them), which the GPU sends to its runsnd chain (bool foreground,
    the neighbourhood from a row table)."""
    from meshccl import _validate
    from meshccl._gpu import chains

    s = np.zeros((3, 3, 3), bool)
    s[0, 0, 1] = s[2, 2, 1] = s[1, 1, 0] = s[1, 1, 2] = True
    offsets = neighbourhood.structure_offsets(s)
    assert offsets == ((-1, -1, 0), (0, 0, -1))
    prob = _validate.prepare(np.ones((5, 6, 1), bool), None, None, np.int32, offsets=offsets)
    assert prob.shape == (5, 6)
    assert prob.offsets == ((-1, -1),) and prob.no_left  # steps along axis 2 dropped
    assert chains.select(prob).chain.name == "runsnd"
    prob = _validate.prepare(np.ones((5, 1, 7), bool), None, None, np.int32, offsets=offsets)
    assert prob.offsets == ((0, -1),) and not prob.no_left
    with pytest.raises(ValueError, match="offsets cannot be combined"):
        _validate.prepare(np.ones((5, 7), bool), None, None, np.int32, offsets=offsets,
                          axes=(0,))


def test_volume_connectivities_along_some_axes_go_as_structures():
    """On the GPU, a connectivity along axes of a volume that meshccl.label
    would send to its per-cell general chain (any subset but all axes or
    the last one or two) is labelled as a structure, by the runs3d-structure
    chain; the subsets meshccl.label stacks, and volumes with an axis of
    length 1, stay with meshccl.label."""
    import itertools

    from meshccl import _tuning, _validate
    from meshccl._gpu import chains

    a = np.ones((5, 6, 7), bool)
    for k in (1, 2, 3):
        for axes in itertools.combinations(range(3), k):
            for conn in range(1, k + 1):
                mesh = _validate.prepare(a, None, conn, np.int32,
                                         axes=None if k == 3 else axes)
                general = chains.select(mesh).chain.name == "general"
                assert ndimage._some_axes_of_a_volume(axes, a.shape) == general, (axes, conn)
                if general:
                    offsets = tuple(o for o in neighbourhood.half_offsets(3, conn)
                                    if all(o[i] == 0 for i in range(3) if i not in axes))
                    assert neighbourhood.as_connectivity(offsets, 3) == (axes, conn)
                    prob = _validate.prepare(a, None, None, np.int32, offsets=offsets)
                    assert chains.select(prob).chain.name == "runs3d-structure"
    assert not ndimage._some_axes_of_a_volume((0,), (1, 6, 7))
    deepest = 65535 * _tuning.RUNS3D_STRUCTURE_PLANES  # (65535 bricks along z)
    assert ndimage._some_axes_of_a_volume((0,), (deepest, 2, 2))
    assert not ndimage._some_axes_of_a_volume((0,), (deepest + 1, 2, 2))
