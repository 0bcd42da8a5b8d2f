"""The runs3d-structure chain on the GPU (kernels/runs3d_structure.cu):
meshccl.ndimage.label of 3-D bool volumes under structures that no
connectivity names, against scipy.ndimage.label and cupyx.

Volumes of whole and partial bricks (x, y not multiples of 32, z not a
multiple of 8), rows of 2 to 100 cells, every one of the 13 half offsets
alone and every structure missing one, the kinds of test_runsnd_emulated,
random structures, sparse to full densities, repeated calls (launch plans)
and calls without a plan, counts, first-cell numbering, 64-bit labels,
bricks of 8 and 16 planes, bool bytes other than 1, structures without the
left neighbour (the connector rule) and connectivities along some axes of
a volume (taken as structures).  The pair rules are checked on the CPU in
tests/test_runs3d_structure_emulated.py."""

import itertools

import numpy as np
import pytest
import scipy.ndimage as ndi

from meshccl import ndimage, neighbourhood
from conftest import HAVE_GPU
from test_runsnd import _chain_of, _check  # noqa: F401  (the chain a case takes; labels against SciPy)

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")]

#: whole and partial bricks, thin and wide rows
SHAPES = [(9, 33, 40), (17, 64, 64), (8, 32, 100), (3, 70, 31), (20, 5, 2), (11, 2, 65)]


def _from_half(half):
    """The centrosymmetric 3x3x3 structure of 13 half-offset flags (the
    lexicographic order of the cells before the centre)."""
    half = np.asarray(half, bool)
    return np.concatenate([half, [True], half[::-1]]).reshape(3, 3, 3)


def _named(s):
    return neighbourhood.as_connectivity(neighbourhood.structure_offsets(s), 3) is not None


def test_single_offsets_and_all_but_one():
    rng = np.random.default_rng(1)
    for k in range(13):
        for half in (np.arange(13) == k, np.arange(13) != k):
            s = _from_half(half)
            for shape in SHAPES[:4]:
                for p in (0.3, 0.7):
                    a = rng.random(shape) < p
                    if not _named(s):
                        assert _chain_of(a, s) == "runs3d-structure"
                    _check(a, s, f"{half.astype(int).tolist()} p={p}")


def test_every_kind_of_structure():
    from test_runsnd_emulated import _kinds

    rng = np.random.default_rng(2)
    for name, s in _kinds(3).items():
        if name.startswith("c="):
            continue
        for shape in SHAPES:
            for p in (0.05, 0.3, 0.6, 0.95, 1.0):
                _check(rng.random(shape) < p, s, name)


def test_random_structures():
    rng = np.random.default_rng(3)
    for k in range(120):
        s = _from_half(rng.random(13) < rng.choice([0.2, 0.5, 0.8]))
        shape = SHAPES[k % len(SHAPES)]
        _check(rng.random(shape) < rng.choice([0.1, 0.3, 0.5, 0.8]), s,
               f"#{k} {s.astype(int).tolist()}")


def test_pairs_of_offsets_exhaustively():
    """Every structure of one or two half offsets (91 + 13), on a volume of
    partial bricks at two densities: each pair of rules meets."""
    rng = np.random.default_rng(4)
    a = [rng.random((10, 35, 37)) < p for p in (0.35, 0.65)]
    for ks in itertools.chain(itertools.combinations(range(13), 1),
                              itertools.combinations(range(13), 2)):
        half = np.zeros(13, bool)
        half[list(ks)] = True
        s = _from_half(half)
        for x in a:
            _check(x, s, str(ks))


def test_against_cupyx_and_every_output_form():
    import cupy
    import cupyx.scipy.ndimage as cndi

    from meshccl import _validate, labelling
    from meshccl._gpu import chains

    rng = np.random.default_rng(5)
    a = rng.random((40, 70, 96)) < 0.3
    x = cupy.asarray(a)
    for k in range(6):
        s = _from_half(rng.random(13) < 0.5)
        ref, rn = cndi.label(x, cupy.asarray(s))
        for _ in range(3):  # (a launch plan, made by the first call)
            labels, n = ndimage.label(x, cupy.asarray(s))
            assert int(n) == int(rn)
            cupy.testing.assert_array_equal(labels, ref)
        # a view that is not C-contiguous takes the call without a plan
        view = x[:, ::2]
        labels, n = ndimage.label(view, cupy.asarray(s))
        vref, vn = cndi.label(view, cupy.asarray(s))
        assert int(n) == int(vn)
        cupy.testing.assert_array_equal(labels, vref)
        want = ref.get()
        offsets = neighbourhood.structure_offsets(s)
        prob = _validate.prepare(x, None, None, np.int32, offsets=offsets, return_counts=True)
        if chains.select(prob).chain.name != "runs3d-structure":
            continue  # (a named structure)
        # counts (the counted label pass) and first-cell numbering, through
        # the labelling call's problem with explicit offsets
        got, n, counts = labelling._label_gpu(prob, "gpu", False, {"seconds": {}})[:3]
        np.testing.assert_array_equal(got.reshape(a.shape).get(), want)
        np.testing.assert_array_equal(counts.get(), np.bincount(want.ravel()))
        prob = _validate.prepare(x, None, None, np.int32, offsets=offsets,
                                 numbering="first-cell")
        first = labelling._label_gpu(prob, "gpu", False, {"seconds": {}})[0].reshape(a.shape)
        # first-cell labels: each component's first cell index + 1
        flat = np.flatnonzero(want)
        firsts = np.zeros(int(rn) + 1, np.int64)
        order = np.unique(want.ravel()[flat], return_index=True)
        firsts[order[0]] = flat[order[1]] + 1
        np.testing.assert_array_equal(first.get(), firsts[want])
        prob = _validate.prepare(x, None, None, np.int64, offsets=offsets)
        wide = labelling._label_gpu(prob, "gpu", False, {"seconds": {}})[0]
        assert wide.dtype == np.int64
        np.testing.assert_array_equal(wide.reshape(a.shape).get(), want)


def test_bool_bytes_other_than_one():
    import cupy

    rng = np.random.default_rng(7)
    raw = ((rng.random((9, 20, 45)) < 0.5) * rng.integers(1, 256, (9, 20, 45))).astype(np.uint8)
    s = _from_half(rng.random(13) < 0.5)
    s[0, 0, 0] = s[2, 2, 2] = not s[0, 0, 0]  # (never a connectivity's pattern)
    for x in (cupy.asarray(raw), cupy.asarray(raw).view(cupy.bool_)):
        labels, k = ndimage.label(x, cupy.asarray(s))
        want, wk = ndi.label(raw != 0, s)
        assert k == wk
        np.testing.assert_array_equal(labels.get(), want)


@pytest.mark.parametrize("planes, covers", [(8, False), (16, True), (16, False)])
def test_brick_depths_and_face_covers(planes, covers):
    """Bricks of 8 and 16 planes (_tuning.RUNS3D_STRUCTURE_PLANES), the faces
    kernel with and without its covers (RUNS3D_STRUCTURE_FACE_COVERS):
    volumes whose depth is not a multiple of either, random structures."""
    from meshccl import _tuning

    rng = np.random.default_rng(planes + covers)
    with _tuning.override(RUNS3D_STRUCTURE_PLANES=planes, RUNS3D_STRUCTURE_FACE_COVERS=covers):
        for k in range(12):
            s = _from_half(rng.random(13) < rng.choice([0.3, 0.6]))
            shape = ((37, 40, 70), (17, 33, 32), (50, 9, 100))[k % 3]
            _check(rng.random(shape) < rng.choice([0.3, 0.6]), s, f"#{k} {s.astype(int).tolist()}")


def _along(axes, conn):
    """generate_binary_structure(len(axes), conn) along ``axes`` of a volume."""
    s = np.zeros((3, 3, 3), bool)
    sub = ndi.generate_binary_structure(len(axes), conn)
    index = [1, 1, 1]
    for pos in itertools.product(range(3), repeat=len(axes)):
        for a, v in zip(axes, pos):
            index[a] = v
        s[tuple(index)] = sub[pos]
    return s


@pytest.mark.parametrize("planes", [8, 16])
def test_structures_without_the_left_neighbour(planes):
    """The structures the connector rule serves (corners, the box without
    the x neighbours, two diagonals) and connectivities along some axes of
    a volume (the first axis only, axes 0 and 1 or 0 and 2, axis 1: taken
    as structures on the GPU), on volumes of whole and partial bricks and
    tiles, 1 to 3 planes deep, sparse to dense."""
    from meshccl import _tuning

    corners = np.zeros((3, 3, 3), bool)
    corners[::2, ::2, ::2] = True
    box = np.ones((3, 3, 3), bool)
    box[1, 1, 0] = box[1, 1, 2] = False
    diagonals = np.zeros((3, 3, 3), bool)
    diagonals[0, 0, 0] = diagonals[2, 2, 2] = diagonals[0, 2, 2] = diagonals[2, 0, 0] = True
    kinds = {"corners": corners, "box without x": box, "two diagonals": diagonals}
    for axes, conn in (((0,), 1), ((0, 1), 1), ((0, 1), 2), ((0, 2), 1), ((0, 2), 2),
                       ((1,), 1)):
        kinds[f"axes {axes} c={conn}"] = _along(axes, conn)
    shapes = [(35, 33, 40), (16, 64, 64), (19, 31, 97), (1, 40, 33), (2, 33, 65), (3, 70, 31)]
    rng = np.random.default_rng(20 + planes)
    with _tuning.override(RUNS3D_STRUCTURE_PLANES=planes):
        for name, s in kinds.items():
            for shape in shapes:
                for p in (0.3, 0.6, 0.9):
                    _check(rng.random(shape) < p, s, f"{name} p={p}")
