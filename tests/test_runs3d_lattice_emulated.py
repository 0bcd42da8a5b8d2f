"""The pair rules of runs3d.cu's lattice chain, emulated on the CPU.

CI has no GPU, so the kernels run only on the device machine.  What is
easiest to get wrong in them is not CUDA but which joined pairs each kernel
takes: a pair no kernel takes splits a component, and a rule that skips a
pair must rest only on pairs that are joined themselves (a mask, a closed
bond or a tolerance can cut a pair of equal cells, so the plain form's
rules do not hold).  Here each kernel's choice is re-done on whole arrays:

- runs: a cell joined to its left neighbour in its 32-cell tile row is in
  that neighbour's run (one node);
- the tile kernel, in a plane: at connectivity 1 the straight-up pair
  unless the cell is joined to its left neighbour, that one to the cell
  above it, and the two cells above are joined (runs.cuh, row_pairs,
  Rules 2); every joined pair at 2 and 3; partners in the tile only;
- the tile and z-face kernels, to the plane below (partners in the tile
  column): every joined pair, except the straight-down one whose detour
  (left, down, right) is joined (runs3d::lattice_unions);
- the seam kernel: every joined pair whose partner is in another tile
  column;
- wrap3d.cu: every joined pair that meets only across a periodic face;

and the kept pairs' components, numbered in raster order of their first
cell, are compared with the CPU backend's labels, on random volumes with
masks, bonds and tolerances, every connectivity and periodic axes.  The
kernels take the same decisions 32 cells at a time with masks.
"""

import itertools

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

import meshccl
from meshccl.neighbourhood import half_offsets

TILE = 32


def _at(a, step, fill):
    """a[p + step] for every p (fill where p + step leaves the array)."""
    out = np.full_like(a, fill)
    src, dst = [], []
    for d, n in zip(step, a.shape):
        src.append(slice(max(d, 0), n + min(d, 0)))
        dst.append(slice(max(-d, 0), n - max(d, 0)))
    out[tuple(dst)] = a[tuple(src)]
    return out


class Lattice:
    """A volume with its features, and the joined pairs of each step."""

    def __init__(self, a, c, background=0, mask=None, bonds=None, tolerance=None,
                 periodic=(False, False, False)):
        self.a, self.c, self.periodic = a.astype(np.int64), c, periodic
        self.fg = np.ones(a.shape, bool) if background is None else a != background
        if mask is not None:
            self.fg &= mask
        self.bonds, self.tolerance = bonds, tolerance
        self.offsets = half_offsets(3, c)
        self.z, self.y, self.x = np.indices(a.shape)

    def _rule(self, other):
        if self.tolerance is None:
            return other == self.a
        return np.abs(other - self.a) <= self.tolerance

    def _open(self, step):
        if self.bonds is None:
            return np.ones(self.a.shape, bool)
        return self.bonds[self.offsets.index(step)]

    def joined(self, step):
        """Cell p joined to p + step (a step of the half neighbourhood),
        inside the volume."""
        return (self.fg & _at(self.fg, step, False) & self._open(step)
                & self._rule(_at(self.a, step, 0)))

    def wrapped(self, step):
        """Cell p joined to p + step where that neighbour is reached only
        across periodic faces."""
        axes = tuple(range(3))
        out = np.zeros(self.a.shape, bool)
        coords = (self.z, self.y, self.x)
        leaves = np.zeros(self.a.shape, bool)
        blocked = np.zeros(self.a.shape, bool)
        for k, (d, n) in enumerate(zip(step, self.a.shape)):
            off = (coords[k] + d < 0) | (coords[k] + d >= n)
            leaves |= off
            if not self.periodic[k]:
                blocked |= off
        rolled = tuple(-d for d in step)
        other_fg = np.roll(self.fg, rolled, axis=axes)
        other = np.roll(self.a, rolled, axis=axes)
        out = leaves & ~blocked & self.fg & other_fg & self._open(step) & self._rule(other)
        return out


def kept_pairs(lat, broken=None):
    """The pairs the lattice chain unites, as (cells, step) lists, and the
    cells joined to their left neighbour in the tile (runs).  Which kernel
    takes a pair in the tile column (the tile kernel inside a brick, the
    z-face kernel across its first plane) does not change the decision, so
    the brick depth does not enter.  ``broken`` ('up' or 'down'): that
    rule without the last pair of its detour, to see that the comparison
    notices."""
    z, y, x = lat.z, lat.y, lat.x
    left = (0, 0, -1)
    J = {s: lat.joined(s) for s in lat.offsets}
    E = J[left] & (x % TILE > 0)
    pairs = []
    for s in lat.offsets:
        dz, dy, dx = s
        col = ((y + dy) // TILE == y // TILE) & ((x + dx) // TILE == x // TILE)
        if s == left:
            pairs.append((J[s] & (x % TILE == 0), s))  # the seam kernel's (in a tile: runs)
            continue
        keep = J[s] & col
        # Rules 2 in a plane at connectivity 1, and the straight-down rule:
        # the detour left, the left cell's own pair, right again
        if (s == (0, -1, 0) and lat.c == 1) or s == (-1, 0, 0):
            detour = E & _at(J[s], left, False)
            if broken != ("up" if dz == 0 else "down"):
                detour &= _at(E, s, False)
            keep &= ~detour
        pairs.append((keep, s))
        pairs.append((J[s] & ~col, s))  # the seam kernel's
    for s in lat.offsets:
        pairs.append((lat.wrapped(s), s))
    return pairs, E


def emulated_labels(lat, broken=None):
    """The components of the kept pairs, numbered as label() does."""
    pairs, E = kept_pairs(lat, broken)
    shape, n = lat.a.shape, lat.a.size
    idx = np.arange(n).reshape(shape)
    rows, cols = [idx[E]], [_at(idx, (0, 0, -1), 0)[E]]
    for keep, s in pairs:
        partner = np.roll(idx, tuple(-d for d in s), axis=(0, 1, 2))
        rows.append(idx[keep])
        cols.append(partner[keep])
    r, c = np.concatenate(rows), np.concatenate(cols)
    _, comp = connected_components(coo_matrix((np.ones(r.size), (r, c)), shape=(n, n)),
                                   directed=False)
    fg = lat.fg.ravel()
    out = np.zeros(n, np.int64)
    first = {}
    for i in np.nonzero(fg)[0]:
        out[i] = first.setdefault(comp[i], len(first) + 1)
    return out.reshape(shape)


def _case(rng, shape, c, feature, periodic):
    a = rng.integers(0, 3, shape)
    kw = dict(background=0, connectivity=c, periodic=periodic)
    lat = dict(background=0, periodic=periodic)
    if "mask" in feature:
        kw["mask"] = lat["mask"] = rng.random(shape) < 0.8
    if "bonds" in feature:
        kw["bonds"] = lat["bonds"] = rng.random((len(half_offsets(3, c)),) + shape) < 0.6
    if "tolerance" in feature:
        a = rng.integers(0, 6, shape)
        kw["tolerance"] = lat["tolerance"] = 1
    return a, kw, Lattice(a, c, **lat)


FEATURES = ["mask", "bonds", "tolerance", "mask bonds tolerance"]


@pytest.mark.parametrize("c", [1, 2, 3])
@pytest.mark.parametrize("feature", FEATURES)
def test_lattice_pairs_give_the_cpu_labels(c, feature):
    """Across tile rows and tile columns, periodic on a different subset of
    axes each time."""
    rng = np.random.default_rng(c * 10 + FEATURES.index(feature))
    for k, shape in enumerate([(18, 40, 70), (5, 33, 65), (20, 3, 40)]):
        periodic = tuple(bool(b) for b in itertools.islice(
            itertools.cycle([(k + c) & 1, (k + c) >> 1 & 1, 1]), 3))
        a, kw, lat = _case(rng, shape, c, feature, periodic)
        np.testing.assert_array_equal(emulated_labels(lat), meshccl.label(a, **kw),
                                      err_msg=f"{shape} {periodic}")


@pytest.mark.parametrize("broken", ["up", "down"])
def test_emulation_notices_a_rule_without_its_detour(broken):
    """A skipping rule that does not ask for the last pair of its detour
    (the two cells above / below joined) splits components that closed
    bonds cut there: the comparison above would see it."""
    rng = np.random.default_rng(7)
    for _ in range(50):
        a, kw, lat = _case(rng, (6, 20, 20), 1, "bonds", (False, False, False))
        if not np.array_equal(emulated_labels(lat, broken), meshccl.label(a, **kw)):
            return
    pytest.fail("the broken rule went unnoticed")
