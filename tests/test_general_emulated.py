"""The pair rules of the GPU's general chain (kernels/general.cu: the tile
and union kernels) on the explicit offset tables of arbitrary structures,
emulated on the CPU.

CI has no GPU.  What an explicit neighbourhood changes in the general
chain is its offset table (meshccl.neighbourhood.offset_table with
``offsets``): which rows exist, their "covered" flag, and whether the left
neighbour exists at all.  The kernels skip a pair when the cell joins its
left neighbour and the pair is implied (covered, or its twin pair exists);
skip one pair too many and two features stay apart.  This file takes the
same decisions cell by cell -- which pairs the tile kernel unites inside a
tile, which the union kernel unites across tile borders, which each skips
-- unites the kept pairs in a plain union-find, and checks the partition
against scipy.ndimage.label for random centrosymmetric structures in 2-D,
3-D and 4-D."""

import itertools

import numpy as np
import scipy.ndimage as ndi
from hypothesis import given, settings
from hypothesis import strategies as st

from meshccl import neighbourhood
from conftest import examples
from reference import Forest

COVERED, MOVES_LEFT = neighbourhood.COVERED, neighbourhood.MOVES_LEFT


def _steps(row, ndim):
    """The per-axis steps of a table row (its lo / hi bit masks)."""
    return tuple(-1 if (row[1] >> k) & 1 else int((row[2] >> k) & 1) for k in range(ndim))


def emulate(fg, offsets):
    """Partition of bool ``fg`` (no axis of length 1) under the half
    neighbourhood ``offsets``, as general.cu's two kernels unite it: an
    int array, equal values for united cells, -1 for background."""
    shape = fg.shape
    ndim = len(shape)
    last = ndim - 1
    table = neighbourhood.offset_table(shape, ndim, offsets=tuple(offsets))
    left = (0,) * last + (-1,) in set(offsets)
    tiles = [1 << t for t in neighbourhood.tile_logs(shape)]
    flat = fg.reshape(-1)
    forest = Forest(range(fg.size))
    strides = [int(np.prod(shape[k + 1:])) for k in range(ndim)]

    def index(x):
        return sum(a * s for a, s in zip(x, strides))

    def is_fg(x):
        return all(0 <= a < s for a, s in zip(x, shape)) and flat[index(x)]

    rows = [(r, _steps(r, ndim)) for r in table]
    for x in itertools.product(*map(range, shape)):
        i = index(x)
        if not flat[i]:
            continue
        local = [a % t for a, t in zip(x, tiles)]
        # a step stays in the cell's tile (and in the array) when it leaves
        # neither end of the tile along any axis
        def in_tile(d):
            return all(0 <= lc + s < t and 0 <= a + s < n
                       for lc, s, t, a, n in zip(local, d, tiles, x, shape))

        lx = list(x)
        lx[last] -= 1
        has_left = left and x[last] > 0 and bool(flat[i - 1])
        # -- the tile kernel: the left pair, then every row inside the tile
        eqlx = has_left and local[last] > 0
        if eqlx:
            forest.unite(i, i - 1)
        for row, d in rows:
            if not in_tile(d):
                continue
            y = tuple(a + s for a, s in zip(x, d))
            if not flat[index(y)]:
                continue
            if eqlx:
                if row[3] & COVERED:
                    continue
                twin_in_tile = not ((row[3] & MOVES_LEFT) and local[last] < 2)
                twin = y[:-1] + (y[-1] - 1,)
                if twin_in_tile and is_fg(twin):
                    continue
            forest.unite(i, index(y))
        # -- the union kernel: the left pair across a tile border, then
        # every row whose neighbour lies in another tile
        if left and local[last] == 0 and x[last] > 0 and flat[i - 1]:
            forest.unite(i, i - 1)
        for row, d in rows:
            y = tuple(a + s for a, s in zip(x, d))
            if not all(0 <= a < n for a, n in zip(y, shape)) or in_tile(d):
                continue  # off the array (not periodic), or the tile kernel's
            if not flat[index(y)]:
                continue
            if has_left:
                if row[3] & COVERED:
                    continue
                twin_inside = not ((row[3] & MOVES_LEFT) and x[last] == 1)
                twin = y[:-1] + (y[-1] - 1,)
                if twin_inside and is_fg(twin):
                    continue
            forest.unite(i, index(y))
    roots = np.array([forest.find(i) for i in range(fg.size)])
    return np.where(flat, roots, -1).reshape(shape)


def same_partition(a, b):
    """Whether two labellings (background: a value of its own) group the
    cells alike."""
    pairs = np.unique(np.stack([a.ravel(), b.ravel()]), axis=1)
    return np.unique(pairs[0]).size == pairs.shape[1] == np.unique(pairs[1]).size


SHAPES = {2: (19, 70), 3: (5, 9, 40), 4: (3, 4, 5, 36)}


@st.composite
def cases(draw):
    ndim = draw(st.sampled_from([2, 3, 4]))
    half = np.asarray(draw(st.lists(st.booleans(), min_size=3**ndim // 2,
                                    max_size=3**ndim // 2)), dtype=bool)
    structure = np.concatenate([half, [True], half[::-1]]).reshape((3,) * ndim)
    seed = draw(st.integers(0, 2**32 - 1))
    density = draw(st.sampled_from([0.3, 0.55, 0.8]))
    fg = np.random.default_rng(seed).random(SHAPES[ndim]) < density
    return fg, structure


@settings(max_examples=examples(40))
@given(case=cases())
def test_general_chain_rules_give_scipys_features(case):
    fg, structure = case
    offsets = neighbourhood.structure_offsets(structure)
    want, _ = ndi.label(fg, structure)
    got = emulate(fg, offsets)
    assert same_partition(np.where(fg, got, -1), np.where(fg, want, -1))


def test_emulation_finds_a_wrong_flag():
    """The check can fail: with every row flagged "covered" the emulated
    kernels lose pairs that nothing else implies."""
    rng = np.random.default_rng(3)
    fg = rng.random(SHAPES[2]) < 0.55
    structure = np.array([[1, 0, 1], [1, 1, 1], [1, 0, 1]], bool)  # corners and left-right
    offsets = neighbourhood.structure_offsets(structure)
    want, _ = ndi.label(fg, structure)
    assert same_partition(emulate(fg, offsets), np.where(fg, want, -1))
    real = neighbourhood.offset_table
    try:
        def all_covered(shape, conn, label_axes=None, offsets=None):
            table = real(shape, conn, label_axes, offsets).copy()
            table[:, 3] |= COVERED
            return table

        neighbourhood.offset_table = all_covered
        assert not same_partition(emulate(fg, offsets), np.where(fg, want, -1))
    finally:
        neighbourhood.offset_table = real
