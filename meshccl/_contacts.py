"""Which labels touch, and how much: the region adjacency of a label image.

For every offset of the half neighbourhood (``meshccl.neighbourhood``:
each neighbouring pair of cells seen once) the image is compared with its
shifted self; pairs of different non-zero labels are kept, encoded as one
uint64 key ``min * (N + 1) + max`` and counted with ``unique``.  The keys
of all offsets are then merged by one more ``unique`` and a weighted
``bincount``.  Written once over an array module ``xp`` (NumPy or CuPy), so
the table stays on the labels' device.
"""

from __future__ import annotations

import math
import numbers
from math import comb

import numpy as np

from .neighbourhood import half_offsets


def neighbour_count(ndim, hops):
    """Cells within ``hops`` orthogonal hops of a cell (4 / 8 in 2-D, 6 /
    18 / 26 in 3-D: cc3d's names for the connectivities)."""
    return sum(comb(ndim, j) << j for j in range(1, hops + 1))


def hops(connectivity, ndim):
    """meshccl's connectivity (orthogonal hops, 1..ndim) from either
    spelling: 1..ndim itself, or cc3d's neighbour count (4 / 8 in 2-D,
    6 / 18 / 26 in 3-D; in general :func:`neighbour_count`).  The two
    ranges never overlap (a count is at least 2 ndim > ndim)."""
    top = max(ndim, 1)
    if connectivity is None:
        return top
    counts = {neighbour_count(top, k): k for k in range(1, top + 1)}
    ok = f"1..{top} (orthogonal hops, as meshccl.label) or cc3d's " + ", ".join(map(str, counts))
    if isinstance(connectivity, (bool, np.bool_)) or not isinstance(connectivity,
                                                                   numbers.Integral):
        raise TypeError(f"connectivity must be an int, {ok}; got {connectivity!r}")
    c = int(connectivity)
    if 1 <= c <= top:
        return c
    if c in counts:
        return counts[c]
    raise ValueError(f"connectivity for a {ndim}-D labels must be {ok}; got {connectivity!r}")


def areas(ndim, k, surface_area, anisotropy):
    """Weight of one contact along each half offset: 1 (a count), or with
    ``surface_area`` the area of the shared face (the product of the other
    axes' ``anisotropy``; 0 for edge and corner contacts), as cc3d's."""
    offsets = half_offsets(ndim, k)
    if anisotropy is None:
        anisotropy = (1.0,) * ndim
    items = np.asarray(anisotropy, dtype=object).reshape(-1).tolist()
    extra = 1.0
    if len(items) == 3 and ndim < 3:
        # cc3d's (x, y, z): a 2-D image (at 4 / 8) ignores z; a 1-D one is an
        # (x, 1, 1) volume, its y and z weights in every area
        _check_weights(items, anisotropy)
        if ndim == 1:
            extra = float(items[1]) * float(items[2])
        items = items[:ndim]
    if len(items) != ndim:
        raise ValueError(f"anisotropy must hold one weight per axis ({ndim}; or cc3d's three "
                         f"for a 1-D or 2-D image), got {anisotropy!r}")
    _check_weights(items, anisotropy)
    if not surface_area:
        return offsets, [1.0] * len(offsets)
    weights = []
    for delta in offsets:
        moved = [d for d, step in enumerate(delta) if step]
        if len(moved) == 1:
            weights.append(extra * float(np.prod([float(items[e]) for e in range(ndim)
                                                   if e != moved[0]])))
        else:
            weights.append(0.0)
    return offsets, weights


def _check_weights(items, anisotropy):
    for w in items:
        if isinstance(w, (bool, np.bool_)) or not isinstance(w, numbers.Real):
            raise TypeError(f"anisotropy must hold real numbers, got {anisotropy!r}")
        if not (math.isfinite(w) and w > 0):
            raise ValueError(f"anisotropy must be finite and > 0, got {anisotropy!r}")


def _shifted(labels, delta):
    """The two views whose cells are neighbours along ``delta``."""
    here, there = [], []
    for step in delta:
        if step < 0:
            here.append(slice(1, None))
            there.append(slice(None, -1))
        elif step > 0:
            here.append(slice(None, -1))
            there.append(slice(1, None))
        else:
            here.append(slice(None))
            there.append(slice(None))
    return labels[tuple(here)], labels[tuple(there)]


def pair_table(xp, labels, top, offsets, weights, integer):
    """``(pairs, values)``: the touching pairs (int64 (m, 2), ``pairs[:, 0] <
    pairs[:, 1]``, ascending) and each pair's contacts weighted by its
    offset's weight (int64 counts where ``integer``, else float64)."""
    values_of = None
    if labels.dtype == np.bool_:
        labels = labels.view(np.uint8)
    if top >= 2**32:
        # keys would overflow: number the labels present 0..K-1 first
        values_of = xp.unique(labels)
        labels = xp.searchsorted(values_of, labels)
        top = int(values_of.shape[0]) - 1
        background = bool(values_of[0] == 0)  # (then number 0 stays 0)
    base = np.uint64(top + 1)
    keys, amounts = [], []
    for delta, weight in zip(offsets, weights):
        a, b = _shifted(labels, delta)
        if a.size == 0:
            continue
        keep = a != b
        if values_of is None or background:
            keep &= (a != 0) & (b != 0)
        a, b = a[keep].astype(np.uint64), b[keep].astype(np.uint64)
        if a.shape[0] == 0:
            continue
        key = xp.minimum(a, b) * base + xp.maximum(a, b)
        found, count = xp.unique(key, return_counts=True)
        keys.append(found)
        amounts.append(count.astype(np.float64) * weight)
    if not keys:
        pairs = xp.zeros((0, 2), dtype=np.int64)
        return pairs, xp.zeros(0, dtype=np.int64 if integer else np.float64)
    found, where = xp.unique(xp.concatenate(keys), return_inverse=True)
    total = xp.bincount(where.reshape(-1), weights=xp.concatenate(amounts),
                        minlength=found.shape[0])
    pairs = xp.stack([found // base, found % base], axis=1).astype(np.int64)
    if values_of is not None:
        pairs = values_of[pairs].astype(np.int64)
    return pairs, (total.astype(np.int64) if integer else total)
