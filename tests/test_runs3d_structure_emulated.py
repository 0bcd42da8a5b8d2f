"""The pair rules of the runs3d-structure chain (kernels/runs3d_structure.cu)
on the CPU.

CI has no GPU.  This is the two kernels' choice of pairs written again in
Python on the same 32-bit masks: the tile kernel's pairs inside each brick
of 32 x 32 cells by NZ planes (in-plane with the row above, then the plane
below's rows r, r - 1, r + 1 with the stretch, centre, cover and column
rules) and the faces kernel's pairs that leave a brick (runsnd_pairs.cuh's
step_pairs on rows of another brick, with or without the row table's
covers; bits 0 and 31 on rows of the same one; the left neighbour across
a tile's side).  A plain union-find unites
the run starts; every cell's component is its run start's root.  The
partition must equal scipy.ndimage.label's for every single half offset,
every pair of them, the kinds of test_runsnd_emulated and random
structures, on volumes of partial bricks -- a rule that drops one pair too
many splits a feature.  (The labels' values come from the numbering the
other run chains share; tests/test_runs3d_structure.py runs the kernels.)"""

import itertools

import numpy as np
import pytest
import scipy.ndimage as ndi

from meshccl import neighbourhood
from meshccl._gpu.runs3d_structure import structure_bits
from meshccl._gpu.runs_nd import step_table
from reference import Forest

FULL = 0xFFFFFFFF


def _has(st, bit):
    return (st >> bit) & 1


def _in_plane(st, ddy, ddx):
    if ddy == 0:
        return ddx in (-1, 1) and _has(st, 12)
    if ddy == 1:
        ddy, ddx = -1, -ddx
    if ddy != -1 or not -1 <= ddx <= 1:
        return False
    return bool(_has(st, 10 + ddx))


def _row_rules(J, E, xjoin):
    U = [J[k] & ~((J[k] << 1) & E) & FULL for k in range(3)]
    if xjoin:
        U[0] &= ~J[1] & ~((J[1] << 1) & E) & FULL
        U[2] &= ~J[1] & ~((J[1] & E) >> 1) & FULL
    return U


def _start_at(s, b):
    m = s & ((2 << b) - 1)
    return m.bit_length() - 1


def _bits(m):
    while m:
        b = (m & -m).bit_length() - 1
        yield b
        m &= m - 1


#: the connectors (dz, dy, dx) of the tile kernel's connector rule
CONNECTORS = [(-2, 0, 0), (-2, 0, 2), (-2, 0, -2), (-2, 2, 0), (-2, -2, 0), (0, -2, 0), (0, 0, -2)]


def _connector_rule(st, Fm, z, y, bx, r, p, Jraw, kept):
    """The tile kernel's connector rule on row y's pairs with the plane
    below (kept[(k, e)], raw Jraw[(k, e)]): for each connector, those of
    the pairs whose partner neighbours it; a later one of them dropped
    where an earlier one exists and the connector is foreground (taken as
    background where the kernel does not see it: outside the tile's rows
    or columns, below the brick's first plane)."""
    order = [(k, e) for k in range(3) for e in range(3)]
    for cz, cy, cx in CONNECTORS:
        via = []
        for k, e in order:
            oy, ox = (0, -1, 1)[k] - cy, e - 1 - cx
            if cz == -2:
                oy, ox = -oy, -ox
            if -1 <= oy <= 1 and -1 <= ox <= 1 and _has(st, 3 * (oy + 1) + ox + 1):
                via.append((k, e))
        if len(via) < 2:
            continue
        C = 0
        if cz == 0 or p > 1:
            C = Fm(z + cz, y + cy, bx) if 0 <= r + cy <= 31 else 0
            C = (C >> 2 if cx > 0 else (C << 2) & FULL if cx < 0 else C)
        through = 0
        for ke in via:
            kept[ke] &= ~(C & through)
            through |= Jraw[ke]


def emulate(fg, offsets, nzb=8, covers=True, connectors=True, tally=None):
    """The partition of the chain's unions: a root per foreground cell
    (``nzb`` planes a brick; ``covers``: the faces kernel's covers;
    ``connectors``: the tile kernel's connector rule).  ``tally``: a dict
    that gets the number of pairs united under "pairs"."""
    nz, ny, nx = fg.shape
    ntx = -(-nx // 32)
    st = structure_bits(offsets)
    xjoin = bool(_has(st, 12))
    F = np.zeros((nz, ny, ntx), np.int64)
    for bx in range(ntx):
        seg = fg[:, :, 32 * bx:32 * bx + 32]
        F[:, :, bx] = (seg.astype(np.int64) << np.arange(seg.shape[2])).sum(axis=2)
    Fm = lambda z, y, bx: int(F[z, y, bx]) if 0 <= z < nz and 0 <= y < ny and 0 <= bx < ntx \
        else 0  # noqa: E731
    Sm = lambda z, y, bx: (Fm(z, y, bx) & ~(Fm(z, y, bx) << 1)) & FULL if xjoin \
        else Fm(z, y, bx)  # noqa: E731
    forest = Forest()

    def node(z, y, x):  # the run start of a foreground cell
        bx = x >> 5
        s = Sm(z, y, bx)
        assert (Fm(z, y, bx) >> (x & 31)) & 1, (z, y, x)
        return forest.add((z * ny + y) * nx + 32 * bx + _start_at(s, x & 31))

    def pair(z, y, x, z2, y2, x2):
        if tally is not None:
            tally["pairs"] = tally.get("pairs", 0) + 1
        forest.unite(node(z, y, x), node(z2, y2, x2))

    # the tile kernel: each brick's own pairs
    for z, y, bx in itertools.product(range(nz), range(ny), range(ntx)):
        mF = Fm(z, y, bx)
        if not mF:
            continue
        E = mF & (mF << 1) & FULL if xjoin else 0
        x0, r, p = 32 * bx, y % 32, z % nzb
        if r > 0:
            pF = Fm(z, y - 1, bx)
            J = [mF & (pF << 1) & FULL if _has(st, 9) else 0, mF & pF if _has(st, 10) else 0,
                 mF & (pF >> 1) if _has(st, 11) else 0]
            for k, U in enumerate(_row_rules(J, E, xjoin)):
                for b in _bits(U):
                    pair(z, y, x0 + b, z, y - 1, x0 + b + k - 1)
        if p == 0:
            continue
        bF = Fm(z - 1, y, bx)
        Jraw, kept = {}, {}
        for k, dy in enumerate((0, -1, 1)):
            f = Fm(z - 1, y + dy, bx) if 0 <= r + dy <= 31 else 0
            base = 3 * (dy + 1)
            J = [mF & (f << 1) & FULL if _has(st, base) else 0,
                 mF & f if _has(st, base + 1) else 0,
                 mF & (f >> 1) if _has(st, base + 2) else 0]
            U = _row_rules(J, E, xjoin)
            if k == 0 and _has(st, 10) and r > 0:
                pZ = Fm(z, y - 1, bx) & Fm(z - 1, y - 1, bx) if _has(st, 4) else 0
                pbF = Fm(z - 1, y - 1, bx)
                U[1] &= ~(mF & Fm(z, y - 1, bx) & pZ & bF & pbF) & FULL
            for e in range(3):
                cover = 0
                for k2, dy2 in enumerate((0, -1)[:k]):
                    for e2 in range(3):
                        if _in_plane(st, dy - dy2, e - e2):
                            cover |= Jraw[(k2, e2)]
                Jraw[(k, e)] = J[e]
                kept[(k, e)] = U[e] & ~cover
        if connectors and not xjoin:
            _connector_rule(st, Fm, z, y, bx, r, p, Jraw, kept)
        for (k, e), U in kept.items():
            for b in _bits(U):
                pair(z, y, x0 + b, z - 1, y + (0, -1, 1)[k], x0 + b + e - 1)
    # the faces kernel: the pairs that leave a brick
    _, table = step_table(fg.shape, offsets)
    for z, y, bx in itertools.product(range(nz), range(ny), range(ntx)):
        m = Fm(z, y, bx)
        if not m:
            continue
        x0 = 32 * bx
        if xjoin and bx > 0 and (m & 1) and (Fm(z, y, bx - 1) >> 31):
            pair(z, y, x0, z, y, x0 - 1)
        E = m & (m << 1) & FULL if xjoin else 0
        held = {}  # (entry, k): the raw pairs of entries that leave the brick
        for e, stp in enumerate(table):
            down, up, dxm = int(stp["down"]), int(stp["up"]), int(stp["dx"])
            dz, dy = -(down & 1), (-1 if down & 2 else (1 if up & 2 else 0))
            z2, y2 = z + dz, y + dy
            if not (0 <= z2 < nz and 0 <= y2 < ny):
                continue
            cross = (dz == -1 and z % nzb == 0) or (dy == -1 and y % 32 == 0) \
                or (dy == 1 and y % 32 == 31)
            nm, np_, nn = Fm(z2, y2, bx), Fm(z2, y2, bx - 1), Fm(z2, y2, bx + 1)
            if cross:
                J = [m & ((nm << 1) | (np_ >> 31)) & FULL if dxm & 1 else 0,
                     m & nm if dxm & 2 else 0,
                     m & ((nm >> 1) | (nn << 31)) & FULL if dxm & 4 else 0]
                for k, U in enumerate(_row_rules(J, E, xjoin)):
                    cover = 0
                    for (e2, k2), J2 in held.items():
                        if covers and (int(stp["cover"][k]) >> (3 * e2 + k2)) & 1:
                            cover |= J2
                    for b in _bits(U & ~cover):
                        pair(z, y, x0 + b, z2, y2, x0 + b + k - 1)
                held.update({(e, k): J[k] for k in range(3)})
                continue
            if (dxm & 1) and bx > 0 and (m & 1) and (np_ >> 31) and \
                    not (xjoin and (dxm & 2) and (nm & 1)):
                pair(z, y, x0, z2, y2, x0 - 1)
            if (dxm & 4) and bx + 1 < ntx and (m >> 31) and (nn & 1) and \
                    not (xjoin and (dxm & 2) and (nm >> 31)):
                pair(z, y, x0 + 31, z2, y2, x0 + 32)
    roots = np.zeros(fg.shape, np.int64)
    for z, y, x in zip(*(c.tolist() for c in np.nonzero(fg))):
        roots[z, y, x] = forest.find(node(z, y, x)) + 1
    return roots


def _from_half(half):
    half = np.asarray(half, bool)
    return np.concatenate([half, [True], half[::-1]]).reshape(3, 3, 3)


def _check(fg, s, name="", nzb=8, covers=True, connectors=True, tally=None):
    roots = emulate(fg, neighbourhood.structure_offsets(s), nzb, covers, connectors, tally)
    want, n = ndi.label(fg, s)
    # the same partition: each label one root, each root one label
    pairs = np.unique(np.stack([want[fg], roots[fg]]), axis=1)
    assert pairs.shape[1] == n == len(np.unique(roots[fg])), f"{name} {fg.shape}"


SHAPES = [(5, 35, 40), (4, 33, 64), (6, 3, 70)]


@pytest.mark.parametrize("nzb, covers", [(2, True), (3, True), (2, False)])
def test_one_and_two_offsets(nzb, covers):
    rng = np.random.default_rng(nzb)
    vols = [rng.random(shape) < p for shape, p in zip(SHAPES, (0.35, 0.6, 0.5))]
    for ks in itertools.chain(itertools.combinations(range(13), 1),
                              itertools.combinations(range(13), 2)):
        half = np.zeros(13, bool)
        half[list(ks)] = True
        for fg in vols:
            _check(fg, _from_half(half), str(ks), nzb, covers)


def test_kinds_and_random_structures():
    from test_runsnd_emulated import _kinds

    rng = np.random.default_rng(11)
    named = dict(_kinds(3))
    for k in range(40):
        named[f"random #{k}"] = _from_half(rng.random(13) < rng.choice([0.3, 0.5, 0.8]))
    for name, s in named.items():
        for shape in SHAPES:
            for p in (0.2, 0.5, 0.9):
                _check(rng.random(shape) < p, s, name, nzb=int(rng.choice([2, 3, 8])))


def test_connector_rule_on_deep_bricks():
    """Structures without the left neighbour whose pairs with the plane
    below share the cell two planes down (the corners, the box without the
    x neighbours, two diagonals; and the 12 edges, whose cover rule comes
    first), on volumes of whole and partial bricks of 8 and 16 planes: the
    same partition as SciPy's, with fewer pairs united than without the
    rule."""
    rng = np.random.default_rng(12)
    corners = np.zeros((3, 3, 3), bool)
    corners[::2, ::2, ::2] = True
    box = np.ones((3, 3, 3), bool)
    box[1, 1, 0] = box[1, 1, 2] = False
    edges = np.indices((3, 3, 3)).sum(0) % 2 == 0
    diagonals = np.zeros((3, 3, 3), bool)
    diagonals[0, 0, 0] = diagonals[2, 2, 2] = diagonals[0, 2, 2] = diagonals[2, 0, 0] = True
    for name, s in {"corners": corners, "box without x": box, "edges": edges,
                    "two diagonals": diagonals}.items():
        for shape, nzb in (((19, 33, 40), 8), ((35, 31, 33), 16), ((17, 64, 32), 16)):
            fg = rng.random(shape) < 0.6
            with_rule, without = {}, {}
            _check(fg, s, name, nzb, tally=with_rule)
            _check(fg, s, name, nzb, connectors=False, tally=without)
            # (the edges' partners that share that cell are in-plane
            # neighbours already: the cover rule drops those pairs first)
            assert with_rule["pairs"] < without["pairs"] or name == "edges", name


def test_structure_bits():
    assert structure_bits(neighbourhood.half_offsets(3, 3)) == (1 << 13) - 1
    assert structure_bits(((0, 0, -1),)) == 1 << 12
    assert structure_bits(((-1, -1, -1), (-1, 1, 1), (0, -1, 1))) == 1 | 1 << 8 | 1 << 11
    with pytest.raises(ValueError, match="earlier cells"):
        structure_bits(((0, 0, 1),))
