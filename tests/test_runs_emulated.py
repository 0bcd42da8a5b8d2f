"""The pair rules of the run kernels (kernels/runs2d.cu, kernels/runs3d.cu
with its seam kernel), emulated on the CPU.

CI has no GPU, so the kernels themselves run only on the device machine.
The part of them that is easiest to get wrong, though, is not CUDA: it is
which neighbouring pairs the tile and border kernels unite and which they
skip because other pairs already join them (the twin / covered / same-run
rules, the straight-up pair going to its stretch's top, and in 3-D the
column rule, the suppression of a cell's other z pairs when its partner
straight down is equal, and the L0 / R0 rule).  Skip one pair too many and
two components stay apart on some image.  This file re-implements exactly
those decisions cell by cell (the kernels take them 32 cells at a time with
masks), unites the kept pairs in a plain union-find and checks that the
components are skimage's, on random images and adversarial patterns, at
every connectivity, with and without a background.
"""

import sys

import numpy as np
import pytest
from skimage.measure import label as sk_label

from meshccl import patterns

TILE = 32       # cells per tile row and rows per tile (both kernels)
PLANES = 8      # planes per brick (meshccl._tuning.RUNS_3D_PLANES: 16 at c1)


class Volume:
    """A (nz, ny, nx) array, its foreground and its tiles.  ``image_rows``
    (2-D): a stack of images of so many rows each, as runs2d.cu takes one
    (its `image_rows`): no pair joins rows of two images."""

    def __init__(self, a, background, image_rows=None):
        self.a = a if a.ndim == 3 else a[None]
        self.nz, self.ny, self.nx = self.a.shape
        self.fg = np.ones(self.a.shape, bool) if background is None else self.a != background
        self.image_rows = image_rows or self.ny

    def eq(self, p, q):
        """Both cells inside, p foreground and q equal to it (and in p's image)."""
        for c, n in zip(q, self.a.shape):
            if not 0 <= c < n:
                return False
        if p[1] // self.image_rows != q[1] // self.image_rows:
            return False
        return bool(self.fg[p] and self.a[p] == self.a[q])


def in_column(p, q):
    """q is in p's 32 x 32 column of tiles: p's brick, or (q one plane down,
    p on its brick's first plane) the brick below it, whose pairs with p
    runs3d.cu's z-face kernel unites by the tile kernel's z rules."""
    return p[1] // TILE == q[1] // TILE and p[2] // TILE == q[2] // TILE


def tile_pairs(v, c3d):
    """The pairs the tile kernels unite: runs (each cell with its left
    neighbour in the tile), the in-plane rules of tile_unions and, in 3-D,
    the z rules of runs3d.cu.  ``c3d``: the connectivity (in-plane diagonals
    at 2 and more)."""
    diag = c3d >= 2
    pairs = []

    def E(p):  # equal to its left neighbour inside the tile
        z, y, x = p
        return x % TILE > 0 and v.eq(p, (z, y, x - 1))

    def V(p, dx=0):  # equal to the cell above (dx: up-left / up-right), inside the tile
        z, y, x = p
        if y % TILE == 0 or not 0 <= x % TILE + dx <= TILE - 1:
            return False
        return v.eq(p, (z, y - 1, x + dx))

    def Z(p, dy, dx):  # equal to the partner (z - 1, y + dy, x + dx), inside the brick
        z, y, x = p
        if z == 0 or not 0 <= y % TILE + dy <= TILE - 1:
            return False
        if not 0 <= x % TILE + dx <= TILE - 1:
            return False
        return v.eq(p, (z - 1, y + dy, x + dx))

    for p in zip(*np.nonzero(v.fg)):
        p = tuple(int(c) for c in p)
        z, y, x = p
        e = E(p)
        left = (z, y, x - 1)
        if e:
            pairs.append((p, left))
        # in-plane: row_pairs, straight up to the stretch's top
        up = V(p)
        if not diag:
            u0, ul, ur = up and not (e and V(left)), False, False
        else:
            vl, vr = V(p, -1), V(p, 1)
            ul = vl and not up and not e
            u0 = up and not vr and not e
            ur = vr and not (e and up)
        if u0:
            t = y
            while V((z, t, x)):
                t -= 1
            pairs.append((p, (z, t, x)))
        if ul:
            pairs.append((p, (z, y - 1, x - 1)))
        if ur:
            pairs.append((p, (z, y - 1, x + 1)))
        if v.nz == 1 or z == 0:
            continue
        # z pairs (runs3d.cu)
        z0 = Z(p, 0, 0)

        def z0_of(q):
            return v.fg[q] and Z(q, 0, 0)

        u = z0 and not (e and z0_of(left))
        above = (z, y - 1, x)
        if y % TILE > 0 and up and Z(above, 0, 0) and v.eq((z - 1, y, x), (z - 1, y - 1, x)):
            u = False  # column rule
        if u:
            pairs.append((p, (z - 1, y, x)))
        if c3d < 2:
            continue

        def zmask(q, dy, dx):  # the kernel's masks: other z pairs only without Z0
            return v.fg[q] and Z(q, dy, dx) and not Z(q, 0, 0)

        L0 = R0 = False
        for dy in (0, -1, 1):
            zc = dy != 0 and zmask(p, dy, 0)
            zl = (c3d == 3 or dy == 0) and zmask(p, dy, -1)
            zr = (c3d == 3 or dy == 0) and zmask(p, dy, 1)
            if c3d == 3 or dy == 0:
                ul = zl and not zc and not e
                u0 = zc and not zr and not e
                ur = zr and not (e and zc)
            else:
                ul = ur = False
                u0 = zc and not (e and zmask(left, dy, 0))
            if dy == 0:
                L0, R0 = zl, zr
            else:
                u0 = u0 and not (L0 or R0)
                ul = ul and not L0
                ur = ur and not R0
            for keep, dx in ((ul, -1), (u0, 0), (ur, 1)):
                if keep:
                    pairs.append((p, (z - 1, y + dy, x + dx)))
    return pairs


def border_pairs_2d(v, c):
    """runs2d.cu's border kernel: a tile's top row against the row above,
    and its first column against the last column of the tile to its left."""
    pairs = []
    for p in zip(*np.nonzero(v.fg)):
        z, y, x = (int(t) for t in p)
        p = (z, y, x)
        eq = v.eq
        if y % TILE == 0 and y > 0:
            e = x > 0 and eq(p, (z, y, x - 1))
            up, vl, vr = eq(p, (z, y - 1, x)), eq(p, (z, y - 1, x - 1)), eq(p, (z, y - 1, x + 1))
            if c == 1:
                u0, ul, ur = up and not (e and vl), False, False
            else:
                ul = vl and not up and not e
                u0 = up and not vr and not e
                ur = vr and not (e and up)
            for keep, dx in ((ul, -1), (u0, 0), (ur, 1)):
                if keep:
                    pairs.append((p, (z, y - 1, x + dx)))
        if x % TILE == 0 and x > 0:
            square = y % TILE > 0 and eq(p, (z, y - 1, x)) and eq(p, (z, y - 1, x - 1))
            if eq(p, (z, y, x - 1)) and not square:
                pairs.append((p, (z, y, x - 1)))
            if c >= 2 and y % TILE > 0:
                if (eq(p, (z, y - 1, x - 1)) and not eq(p, (z, y - 1, x))
                        and not eq(p, (z, y, x - 1))):
                    pairs.append((p, (z, y - 1, x - 1)))
    # the up-right pair of a tile's last column (cells (y, x0 - 1), y not a
    # tile's first row), which the odd warps of the tile to its right take
    for p in zip(*np.nonzero(v.fg)):
        z, y, x = (int(t) for t in p)
        p = (z, y, x)
        if c >= 2 and x % TILE == TILE - 1 and x + 1 < v.nx and y % TILE > 0:
            twin = v.eq(p, (z, y, x - 1)) and v.eq(p, (z, y - 1, x))
            if v.eq(p, (z, y - 1, x + 1)) and not twin:
                pairs.append((p, (z, y - 1, x + 1)))
    return pairs


def _neighbour(dz, dy, dx, c):
    return (dz, dy, dx) != (0, 0, 0) and max(abs(dz), abs(dy), abs(dx)) <= 1 and \
        (dz != 0) + (dy != 0) + (dx != 0) <= c


def _half(dz, dy, dx, c):
    return _neighbour(dz, dy, dx, c) and (dz < 0 or (dz == 0 and dy < 0))


def border_pairs_3d(v, c):
    """runs3d.cu's seam kernel: every pair that leaves the brick's column of
    tiles, by the plain form's skipping rules (covered, twin, same run,
    square) and runs3d.cu's z rules."""
    pairs = []
    steps = [(dz, dy, dx) for dz in (-1, 0) for dy in (-1, 0, 1) for dx in (-1, 0, 1)
             if _half(dz, dy, dx, c)]
    for p in zip(*np.nonzero(v.fg)):
        z, y, x = (int(t) for t in p)
        p = (z, y, x)
        eq = v.eq
        eql = x > 0 and eq(p, (z, y, x - 1))
        square = (y % TILE > 0 and eq(p, (z, y - 1, x)) and eq(p, (z, y - 1, x - 1))) or \
            (z % PLANES > 0 and eq(p, (z - 1, y, x)) and eq(p, (z - 1, y, x - 1)))
        if x % TILE == 0 and eql and not square:
            pairs.append((p, (z, y, x - 1)))
        zeq = z > 0 and eq(p, (z - 1, y, x))
        for dz, dy, dx in steps:
            j = (z + dz, y + dy, x + dx)
            if in_column(p, j):
                continue  # the tile kernel's pair, or the z-face kernel's
            if not (0 <= j[0] and 0 <= j[1] < v.ny and 0 <= j[2] < v.nx):
                continue
            if dz < 0:
                if (dy, dx) == (0, 0):
                    if not zeq:
                        continue
                    if y > 0 and eq(p, (z, y - 1, x)) and eq(p, (z - 1, y - 1, x)):
                        continue  # column
                    if eql and (c >= 2 or eq(p, (z - 1, y, x - 1))):
                        continue  # covered / twin
                    pairs.append((p, j))
                    continue
                if zeq:
                    continue
            if not eq(p, j):
                continue
            if (dz, dy, dx) == (0, -1, 0) and z % PLANES > 0 and eq(p, (z - 1, y, x)) \
                    and eq(p, (z - 1, y - 1, x)):
                continue  # square rule along z
            if _half(dz, dy, dx + 1, c) and x + dx + 1 < v.nx and eq(p, (j[0], j[1], j[2] + 1)):
                continue  # same run
            if eql:
                if _neighbour(dz, dy, dx + 1, c):
                    continue  # covered
                if x + dx > 0 and eq(p, (j[0], j[1], j[2] - 1)):
                    continue  # twin
            pairs.append((p, j))
    return pairs


def emulated_labels(a, connectivity, background, image_rows=None):
    """Labels in skimage's numbering from the pairs the run kernels keep
    (``image_rows``: of a 2-D stack of images, see Volume)."""
    v = Volume(a, background, image_rows)
    if v.nz == 1:
        pairs = tile_pairs(v, connectivity) + border_pairs_2d(v, connectivity)
    else:
        pairs = tile_pairs(v, connectivity) + border_pairs_3d(v, connectivity)
    shape = v.a.shape
    parent = np.arange(v.a.size)

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for p, q in pairs:
        assert v.eq(p, q), (p, q)
        ri, rj = find(np.ravel_multi_index(p, shape)), find(np.ravel_multi_index(q, shape))
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)
    roots = np.array([find(i) for i in range(v.a.size)])
    out = np.zeros(v.a.size, np.int64)
    fg = v.fg.reshape(-1)
    rank = {}
    for i in np.nonzero(fg)[0]:  # roots are first cells: raster order of first cells
        out[i] = rank.setdefault(roots[i], len(rank) + 1)
    return out.reshape(a.shape)


def _blobs(rng, shape, scale, levels):
    small = tuple(-(-s // scale) for s in shape)
    b = rng.integers(0, levels, size=small)
    for axis in range(len(shape)):
        b = np.repeat(b, scale, axis=axis)
    return b[tuple(slice(0, s) for s in shape)].astype(np.uint8)


def _stripes(shape, period, direction):
    idx = np.indices(shape)
    s = idx[-1] + direction * idx[-2]
    if len(shape) == 3:
        s = s + idx[0]
    return ((s % period) == 0).astype(np.uint8)


def _images_2d():
    rng = np.random.default_rng(21)
    return [
        _blobs(rng, (70, 97), 1, 2),
        _blobs(rng, (65, 70), 3, 3),
        patterns.percolation((66, 80), 0.5927, seed=3),
        patterns.spiral(70),
        _stripes((64, 96), 3, 1),
        _stripes((65, 97), 4, -1),
        (np.indices((40, 70)).sum(0) % 2).astype(np.uint8),
    ]


def _images_3d():
    rng = np.random.default_rng(22)
    return [
        _blobs(rng, (18, 40, 45), 1, 2),
        _blobs(rng, (17, 36, 66), 4, 2),
        _blobs(rng, (10, 34, 40), 2, 3),
        patterns.percolation((17, 40, 40), 0.3116, seed=4),
        patterns.percolation((12, 35, 66), 0.1369, seed=5),
        _stripes((17, 35, 40), 3, 1),
        _stripes((12, 33, 65), 4, -1),
        (np.indices((10, 34, 34)).sum(0) % 2).astype(np.uint8),
    ]


@pytest.mark.parametrize("index", range(7))
def test_runs2d_rules_give_skimage_components(index):
    a = _images_2d()[index]
    for c in (1, 2):
        for bg in (0, None):
            want = sk_label(a, connectivity=c, background=bg if bg is not None else -1)
            np.testing.assert_array_equal(emulated_labels(a, c, bg), want,
                                          err_msg=f"{a.shape} c={c} bg={bg}")


@pytest.mark.parametrize("image_rows", [1, 3, 37])
def test_runs2d_rules_on_stacks_give_each_image_its_components(image_rows):
    """A stack of images as one tall image whose images join no pair across
    their borders (what runs2d.cu's `image_rows` does): the rules that skip
    a pair because others join it (the square rule at tile borders, twin,
    covered, the stretch's top) still give every image skimage's
    components, image heights under the tile height and across tiles."""
    rng = np.random.default_rng(image_rows)
    images = 70 // image_rows if image_rows < 32 else 2
    shape = (images * image_rows, 40)
    for a in (_blobs(rng, shape, 1, 2), _stripes(shape, 3, 1), np.ones(shape, np.uint8)):
        for c in (1, 2):
            for bg in (0, None):
                want, offset = np.zeros(a.shape, np.int64), 0
                for k in range(images):
                    rows = slice(k * image_rows, (k + 1) * image_rows)
                    lab = sk_label(a[rows], connectivity=c, background=bg if bg is not None else -1)
                    want[rows] = np.where(lab > 0, lab + offset, 0)
                    offset += lab.max()
                np.testing.assert_array_equal(emulated_labels(a, c, bg, image_rows), want,
                                              err_msg=f"{a.shape} c={c} bg={bg}")


@pytest.mark.parametrize("index", range(8))
def test_runs3d_rules_give_skimage_components(index, monkeypatch):
    a = _images_3d()[index]
    for c in (1, 2, 3):
        for planes in (8, 16) if c == 1 else (8,):
            monkeypatch.setattr(sys.modules[__name__], "PLANES", planes)
            for bg in (0, None):
                want = sk_label(a, connectivity=c, background=bg if bg is not None else -1)
                np.testing.assert_array_equal(emulated_labels(a, c, bg), want,
                                              err_msg=f"{a.shape} c={c} bg={bg} planes={planes}")


def test_emulation_catches_a_dropped_rule():
    """The emulation is strict enough to notice a wrong rule: dropping the
    z pairs' twin condition's partner test (skipping every Z0 whose left cell
    is equal, as if the left cell's own pair were always there) splits a
    component on this volume."""
    a = np.zeros((2, 3, 4), np.uint8)
    a[1, 0, :] = 1           # a run of 4 cells on plane 1
    a[0, 0, 3] = 1           # touching plane 0 only under its last cell
    a[0, 1, 3] = 1
    a[0, 2, 0:4] = 1         # ... which leads to a second run on plane 0
    want = sk_label(a, connectivity=1)
    assert want.max() == 1
    v = Volume(a, 0)
    pairs = [pq for pq in tile_pairs(v, 1)
             if not (pq[0][0] - pq[1][0] == 1 and v.eq(pq[0], (pq[0][0], pq[0][1], pq[0][2] - 1)))]
    parent = {}

    def find(p):
        while parent.get(p, p) != p:
            p = parent[p]
        return p

    for p, q in pairs:
        rp, rq = find(p), find(q)
        if rp != rq:
            parent[max(rp, rq)] = min(rp, rq)
    cells = [tuple(int(t) for t in p) for p in zip(*np.nonzero(a))]
    assert len({find(p) for p in cells}) == 2  # the broken rule splits the component
    np.testing.assert_array_equal(emulated_labels(a, 1, 0), want)  # the real rules do not
