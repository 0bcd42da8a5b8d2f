"""The one neighbourhood-offset table, shared by every backend and method.

For an array of shape ``shape`` (C order) and a connectivity ``k`` (the
number of orthogonal hops, as in skimage), the *half neighbourhood* holds the
offsets ``delta`` in {-1, 0, 1}^ndim with 1..k non-zero entries that point to
cells earlier in raster order (lexicographically negative).  Every
neighbouring pair of cells is seen exactly once from its later cell.

The left neighbour (``-1`` on the last axis) is not in the table: both
backends treat it through runs along the contiguous axis.  The table rows,
in order of increasing linear offset, are four int64 words each::

    [linear offset, axes moved -1 (bit mask), axes moved +1 (bit mask), flags]

with flags bit 0 "covered" (the target is also a neighbour of the left cell)
and bit 1 "moves -1 on the last axis".  ``kernels/mesh.cu`` explains how the
flags remove redundant unions.
"""

from __future__ import annotations

import functools
import itertools
import math
from math import comb

import numpy as np

#: Largest number of table rows we build (e.g. 11-D at full connectivity).
MAX_OFFSETS = 100_000
#: Boundary masks are 32-bit words: one bit per (non-singleton) axis.
MAX_NDIM = 32

COVERED = 1
MOVES_LEFT = 2


def half_neighbourhood_size(ndim: int, connectivity: int) -> int:
    """Number of offsets in the half neighbourhood (left neighbour included).

    Parameters
    ----------
    ndim : int
        Number of axes.
    connectivity : int
        Orthogonal hops, 1..ndim.

    Returns
    -------
    int
        ``len(half_offsets(ndim, connectivity))``, without building it.

    Examples
    --------
    >>> half_neighbourhood_size(2, 2), half_neighbourhood_size(3, 3)
    (4, 13)
    """
    return sum(comb(ndim, h) * 2**h for h in range(1, connectivity + 1)) // 2


def _within(m: int, hops: int) -> int:
    """Number of vectors in {-1, 0, 1}**m with at most ``hops`` non-zero entries."""
    return sum(comb(m, j) << j for j in range(min(hops, m) + 1)) if hops >= 0 else 0


def half_offset_index(delta: tuple, connectivity: int) -> int:
    """Where ``delta`` stands in ``half_offsets(len(delta), connectivity)``.

    Counted without building the table (which has 3**ndim / 2 rows at full
    connectivity): the offsets before ``delta`` in lexicographic order are
    counted digit by digit, each earlier digit followed by every suffix
    that keeps the offset in the half neighbourhood.

    Parameters
    ----------
    delta : tuple of int
        An offset of the half neighbourhood (entries -1, 0, 1; 1..connectivity
        of them non-zero; the first non-zero one is -1).
    connectivity : int
        Orthogonal hops, 1..ndim.

    Returns
    -------
    int
        ``half_offsets(len(delta), connectivity).index(delta)``.

    Examples
    --------
    >>> half_offset_index((0, -1), 1), half_offset_index((-1, 1), 2)
    (1, 2)
    """
    delta = tuple(int(d) for d in delta)
    first = next((d for d in delta if d), 0)
    if first != -1 or not _is_offset(delta, connectivity):
        raise ValueError(f"{delta} is not in the half neighbourhood of connectivity "
                         f"{connectivity}")
    index, hops = 0, 0
    for i, d in enumerate(delta):
        rest = len(delta) - i - 1
        for v in range(-1, d):  # earlier digits at this place, then any valid suffix
            if hops == 0 and v == -1:  # the first non-zero digit: any suffix
                index += _within(rest, connectivity - 1)
            elif hops == 0:  # still all zero: the suffix is a half offset itself
                index += half_neighbourhood_size(rest, connectivity)
            else:
                index += _within(rest, connectivity - hops - (v != 0))
        hops += d != 0
    return index


def _is_offset(delta, connectivity: int) -> bool:
    hops = sum(d != 0 for d in delta)
    return 0 < hops <= connectivity and all(-1 <= d <= 1 for d in delta)


@functools.lru_cache(maxsize=256)
def half_offsets(ndim: int, connectivity: int) -> tuple:
    """The half neighbourhood, in the order of the ``bonds=`` layout.

    All offsets in {-1, 0, 1}**ndim with 1..connectivity non-zero entries
    that point to earlier cells in raster order (lexicographically negative),
    in increasing lexicographic order; the left neighbour (0, ..., 0, -1) is
    the last one.  ``bonds[k][x]`` is the bond between cell ``x`` and cell
    ``x + half_offsets(...)[k]``.

    Examples
    --------
    >>> half_offsets(2, 1)
    ((-1, 0), (0, -1))
    >>> len(half_offsets(3, 3))
    13
    """
    # built from the non-zero places and their signs (the first one -1), so
    # the cost follows the table's size, not 3**ndim
    out = []
    for hops in range(1, min(connectivity, ndim) + 1):
        for places in itertools.combinations(range(ndim), hops):
            for signs in itertools.product((-1, 1), repeat=hops - 1):
                delta = [0] * ndim
                for place, sign in zip(places, (-1,) + signs):
                    delta[place] = sign
                out.append(tuple(delta))
    return tuple(sorted(out))


def structure_offsets(structure) -> tuple:
    """The half neighbourhood of a structuring element.

    The one place where a structure (as ``scipy.ndimage.label`` takes it)
    becomes neighbour offsets: the offsets of its non-zero entries that
    point to earlier cells (lexicographically negative), in increasing
    lexicographic order, as :func:`half_offsets` orders them.  The centre
    is ignored, as SciPy ignores it.  Only this half is read: for a
    centrosymmetric structure the other half is its mirror image (the
    caller checks that).

    Parameters
    ----------
    structure : numpy.ndarray
        A 3 x ... x 3 array; non-zero entries are neighbours.

    Returns
    -------
    tuple of tuple of int
        The half offsets, each a tuple of ``structure.ndim`` steps in
        {-1, 0, 1}.

    Examples
    --------
    >>> import numpy as np
    >>> structure_offsets(np.ones((3, 3)))
    ((-1, -1), (-1, 0), (-1, 1), (0, -1))
    >>> structure_offsets(np.eye(3))
    ((-1, -1),)
    """
    s = np.asarray(structure)
    if any(k != 3 for k in s.shape):
        raise ValueError(f"structure must have sides of length 3, got shape {s.shape}")
    # raster order of the 3**ndim entries is lexicographic order of the
    # offsets, and the entries before the centre are the negative half
    before = np.flatnonzero(s.reshape(-1)[: s.size // 2])
    steps = np.stack(np.unravel_index(before, s.shape), axis=1) - 1 if before.size else ()
    return tuple(tuple(int(d) for d in row) for row in steps)


def as_connectivity(offsets: tuple, ndim: int):
    """``(axes, connectivity)`` whose neighbourhood is ``offsets``, or None.

    The half neighbourhoods that :func:`half_offsets` (and ``label(...,
    axes=...)``) name: those of at most ``connectivity`` orthogonal hops
    along the axes ``axes``, the other axes' steps zero.  Such a
    neighbourhood can take the fixed-geometry labellers; any other set
    of offsets is labelled from its offset table (:func:`offset_table`
    with ``offsets``).

    Parameters
    ----------
    offsets : tuple of tuple of int
        Half offsets, as :func:`structure_offsets` gives them.
    ndim : int
        Number of axes.

    Returns
    -------
    (tuple of int, int) or None
        The sorted axes and the connectivity (1..len(axes)); None when no
        such pair gives ``offsets``, and for the empty neighbourhood.

    Examples
    --------
    >>> as_connectivity(((-1, 0), (0, -1)), 2)
    ((0, 1), 1)
    >>> as_connectivity(((-1, 0),), 2)
    ((0,), 1)
    >>> as_connectivity(((-1, -1),), 2) is None
    True
    """
    if not offsets:
        return None
    used = np.asarray(offsets, dtype=np.int64).reshape(len(offsets), ndim)
    axes = tuple(int(k) for k in np.flatnonzero((used != 0).any(axis=0)))
    conn = int((used != 0).sum(axis=1).max())
    expected = []
    for delta in half_offsets(len(axes), conn):
        full = [0] * ndim
        for axis, step in zip(axes, delta):
            full[axis] = step
        expected.append(tuple(full))
    return (axes, conn) if sorted(expected) == sorted(offsets) else None


def bond_rows(shape: tuple, kept: tuple, ndim: int, connectivity: int) -> np.ndarray:
    """For the table of the squeezed ``shape`` (axes ``kept`` of an original
    ``ndim``-D array), the index in ``half_offsets(ndim, connectivity)`` of each
    table row, then of the left offset: where each row finds its bonds."""
    conn = min(connectivity, len(shape))
    out = []
    for d in half_offsets(len(shape), conn):  # table rows, then the left offset
        orig = [0] * ndim
        for axis, step in zip(kept, d):
            orig[axis] = step
        out.append(half_offset_index(tuple(orig), connectivity))
    return np.asarray(out, dtype=np.int32)


def bond_planes(steps, ndim: int, connectivity: int, rows) -> np.ndarray:
    """The row of the bonds array that holds the bond of each of ``steps``.

    ``rows``: :func:`bond_rows` of a squeezed ``ndim``-D shape (one per
    offset of ``half_offsets(ndim, connectivity)``); ``steps``: offsets of
    that shape (tuples of ``ndim`` steps), in the order a kernel reads its
    bond planes.  Returns an int32 array, -1 where a step is no offset of
    the half neighbourhood.  The one place a kernel's order of bond planes
    is matched to the bonds array's layout.
    """
    rows = [int(r) for r in np.asarray(rows).reshape(-1)]
    offsets = half_offsets(ndim, connectivity)
    if len(rows) != len(offsets):
        raise ValueError(f"{len(rows)} bond rows for {len(offsets)} half offsets")
    plane = dict(zip(offsets, rows))
    return np.asarray([plane.get(tuple(step), -1) for step in steps], dtype=np.int32)


@functools.lru_cache(maxsize=256)
def offset_table(shape: tuple, connectivity: int, label_axes: int | None = None,
                 offsets: tuple | None = None) -> np.ndarray:
    """Return the ``(noff, 4)`` int64 table for a C-ordered array of ``shape``.

    ``shape`` must have no singleton axes and at most ``MAX_NDIM`` axes.
    ``label_axes`` (bit k: axis k), for ``label(..., axes=...)``: keep only
    the offsets that move along these axes; ``connectivity`` then counts hops
    along them.  ``offsets``: an explicit half neighbourhood of ``shape``
    (lexicographically negative steps, as :func:`structure_offsets` gives
    them) instead of ``connectivity`` and ``label_axes``, for any
    centrosymmetric neighbourhood.  (Whether the left neighbour exists is
    the caller's to say: it does when the last axis is labelled along, or
    when ``offsets`` holds it.)
    """
    if offsets is not None:
        return _explicit_table(shape, offsets)
    ndim = len(shape)
    if ndim > MAX_NDIM:
        raise ValueError(
            f"label_image has {ndim} axes longer than 1; meshccl supports at most {MAX_NDIM}"
        )
    size = half_neighbourhood_size(ndim, connectivity)  # (an upper bound with label_axes)
    if size > MAX_OFFSETS:
        raise ValueError(
            f"connectivity={connectivity} on {ndim} axes longer than 1 gives {size} "
            f"neighbour offsets per cell; meshccl supports at most {MAX_OFFSETS}"
        )
    deltas = [delta for delta in half_offsets(ndim, connectivity)[:-1]  # all but the left one
              if label_axes is None or not any(d and not (label_axes >> k) & 1
                                               for k, d in enumerate(delta))]
    return _table_rows(shape, deltas, lambda step: _is_offset(step, connectivity))


def _table_rows(shape: tuple, deltas, is_offset) -> np.ndarray:
    """The rows of an offset table: each step of ``deltas`` as (linear
    offset, axes it steps back along, axes it steps forward along, flags),
    COVERED where ``is_offset`` says the step plus one along the last axis
    is an offset too."""
    ndim = len(shape)
    strides = np.ones(ndim, dtype=np.int64)
    for k in range(ndim - 2, -1, -1):
        strides[k] = strides[k + 1] * shape[k + 1]
    rows = []
    for delta in deltas:
        lin = int(np.dot(delta, strides))
        lo = sum(1 << k for k, d in enumerate(delta) if d == -1)
        hi = sum(1 << k for k, d in enumerate(delta) if d == 1)
        flags = 0
        if is_offset(tuple(delta[:-1]) + (delta[-1] + 1,)):
            flags |= COVERED
        if delta[-1] == -1:
            flags |= MOVES_LEFT
        rows.append((lin, lo, hi, flags))
    table = np.array(rows, dtype=np.int64).reshape(-1, 4)
    table.setflags(write=False)
    return table


def _explicit_table(shape: tuple, offsets: tuple) -> np.ndarray:
    """:func:`offset_table` of an explicit half neighbourhood ``offsets``.

    A row is "covered" when its offset plus one step along the last axis is
    in ``offsets`` too: its target is then a neighbour of the left cell as
    well, and the pair is implied when the cell joins its left neighbour
    (the left neighbour being in ``offsets`` then, or no cell joins it).
    """
    ndim = len(shape)
    if ndim > MAX_NDIM:
        raise ValueError(
            f"label_image has {ndim} axes longer than 1; meshccl supports at most {MAX_NDIM}")
    present = set(offsets)
    if any(len(d) != ndim for d in present):
        raise ValueError(f"offsets of {ndim}-D steps expected for shape {shape}, got {offsets}")
    left = (0,) * (ndim - 1) + (-1,)
    return _table_rows(shape, sorted(present - {left}), present.__contains__)


#: log2 of the largest tile: the cells of one thread block of the GPU mesh
#: kernels, and the tiles of method B on both backends.
TILE_LOG = 8


def tile_logs(shape: tuple) -> tuple:
    """log2 of the tile extent per axis: a power-of-two box of <= 2**TILE_LOG cells.

    The last axis gets up to 32 cells (all of them in 1-D), the second-last half
    of what is left in 3-D and more (all of it in 2-D), the axis before that
    the rest; leading axes get 1.  A short axis takes only what it needs, so
    (4096, 3) gets 64 x 4 tiles and 512**3 gets 2 x 4 x 32 (TILE_LOG = 8).
    """
    ndim = len(shape)
    logs = [0] * ndim
    budget = TILE_LOG
    for k in range(ndim - 1, -1, -1):
        want = max(0, math.ceil(math.log2(shape[k])))
        if k == ndim - 1:
            cap = TILE_LOG if ndim == 1 else 5
        elif k == ndim - 2 and ndim >= 3:
            cap = budget - budget // 2
        else:
            cap = budget
        logs[k] = min(want, cap, budget)
        budget -= logs[k]
    return tuple(logs)
