"""Per-label tables on the CPU, for :mod:`meshccl.measure`.

Everything here is a handful of C-implemented NumPy reductions over the
flat label array -- ``np.bincount`` for counts and sums, ``np.minimum.at``
/ ``np.maximum.at`` (NumPy's fast unbuffered scatter) for first cells,
boxes and intensity extremes, ``np.unique`` for the occupied coordinates of
periodic axes -- so no code is compiled per dtype (numba would compile one
specialisation per label and intensity type).  The GPU twin is
``meshccl/_gpu/measure.py``; both return the same raw table, which
``meshccl/measure.py`` turns into statistics.
"""

from __future__ import annotations

import numpy as np


def flat_labels(labels):
    """``labels`` as a flat ``intp`` array (what ``np.bincount`` takes)."""
    flat = labels.reshape(-1)
    if flat.dtype == np.bool_:
        flat = flat.view(np.uint8)
    return flat.astype(np.intp, copy=False)


def max_label(labels):
    """The largest label (0 for an empty array), and whether any is negative."""
    if labels.size == 0:
        return 0, False
    lo, hi = labels.min(), labels.max()
    return int(hi), bool(lo < 0)


def coordinates(shape, axis):
    """Each cell's coordinate along ``axis``, flat in C order (int64)."""
    view = [1] * len(shape)
    view[axis] = shape[axis]
    return np.broadcast_to(np.arange(shape[axis], dtype=np.int64).reshape(view), shape).reshape(-1)


def table(labels, shape, rows, *, first=False, boxes=False, sums=False, periodic=(),
          intensity=None):
    """The finished per-label table of a label image (see ``_gpu.measure.table``).

    Parameters
    ----------
    labels : ndarray
        Non-negative integer labels, any shape equal to ``shape``.
    rows : int
        Rows of the table: the largest label + 1.
    first, boxes, sums : bool
        Also compute each label's first cell (flat index; ``n`` where it
        has none), its box (``lo``/``hi``, inclusive, per axis; ``lo`` = n
        and ``hi`` = -1 where it has no cells) and its coordinate sums.
    periodic : tuple of int
        Axes whose circular sums (``cos``, ``sin`` of 2 pi c / n) are wanted.
    intensity : ndarray, optional
        Same shape: its sum and the sum of its magnitudes, its extremes (in
        its own dtype; undefined where a label has no cells) and
        intensity-weighted coordinate and circular sums.

    Returns
    -------
    dict of ndarray
    """
    flat = flat_labels(labels)
    n = flat.size
    ndim = len(shape)
    out = {"count": np.bincount(flat, minlength=rows).astype(np.int64, copy=False)}
    if first:
        f = np.full(rows, n, dtype=np.int64)
        np.minimum.at(f, flat, np.arange(n, dtype=np.int64))
        out["first"] = f
    coords = [coordinates(shape, d) for d in range(ndim)] if (boxes or sums or periodic
                                                              or intensity is not None) else []
    if boxes:
        lo = np.full((rows, ndim), n, dtype=np.int64)
        hi = np.full((rows, ndim), -1, dtype=np.int64)
        for d in range(ndim):
            np.minimum.at(lo[:, d], flat, coords[d])
            np.maximum.at(hi[:, d], flat, coords[d])
        out["lo"], out["hi"] = lo, hi
    if sums:
        out["csum"] = _columns([np.bincount(flat, weights=c, minlength=rows) for c in coords], rows)
    angles = {d: coords[d] * (2 * np.pi / shape[d]) for d in periodic}
    if periodic:
        out["cos"] = _columns([np.bincount(flat, weights=np.cos(angles[d]), minlength=rows)
                               for d in periodic], rows)
        out["sin"] = _columns([np.bincount(flat, weights=np.sin(angles[d]), minlength=rows)
                               for d in periodic], rows)
    if intensity is not None:
        v = intensity.reshape(-1)
        w = v.astype(np.float64)
        out["isum"] = np.bincount(flat, weights=w, minlength=rows)
        out["iabs"] = np.bincount(flat, weights=np.abs(w), minlength=rows)
        lo_v = np.zeros(rows, dtype=v.dtype)
        hi_v = np.zeros(rows, dtype=v.dtype)
        present = out["count"] > 0
        # start every present label at one of its own values, so that the
        # scatter needs no sentinel that the dtype may not hold
        seed = np.empty(rows, dtype=v.dtype)
        seed[flat[::-1]] = v[::-1]  # some value of each present label
        lo_v[present] = seed[present]
        hi_v[present] = seed[present]
        np.minimum.at(lo_v, flat, v)
        np.maximum.at(hi_v, flat, v)
        out["imin"], out["imax"] = lo_v, hi_v
        out["wsum"] = _columns([np.bincount(flat, weights=w * c, minlength=rows) for c in coords],
                               rows)
        if periodic:
            out["wcos"] = _columns([np.bincount(flat, weights=w * np.cos(angles[d]), minlength=rows)
                                    for d in periodic], rows)
            out["wsin"] = _columns([np.bincount(flat, weights=w * np.sin(angles[d]), minlength=rows)
                                    for d in periodic], rows)
    return _finish(out, rows, ndim)


def _divide(a, b):
    """a / b, NaN where b == 0 (no warnings)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b == 0, np.nan, a / np.where(b == 0, 1, b))


def _finish(t, rows, ndim):
    """The raw sums of :func:`table` turned into what the GPU's finishing
    kernel gives: boxes as (rows, 2 * ndim) [lo_0, hi_0, ...] with (0, -1)
    for labels without cells (``lo``, ``hi``: views), centroids, intensity
    means and float64 extremes (NaN without cells), weighted centroids (NaN
    where the intensity sums to 0)."""
    count = t["count"]
    empty = count == 0
    cf = count.astype(np.float64)
    if "lo" in t:
        box = np.empty((rows, 2 * ndim), dtype=np.int64)
        box[:, 0::2] = np.where(empty[:, None], 0, t["lo"])
        box[:, 1::2] = np.where(empty[:, None], -1, t["hi"])
        t["box"], t["lo"], t["hi"] = box, box[:, 0::2], box[:, 1::2]
    if "csum" in t:
        t["centroid"] = _divide(t.pop("csum"), cf[:, None])
    t.setdefault("cos", np.zeros((rows, 0)))
    t.setdefault("sin", np.zeros((rows, 0)))
    if "isum" in t:
        t["imean"] = _divide(t["isum"], cf)
        for key in ("imin", "imax"):
            t[key] = np.where(empty, np.nan, t[key].astype(np.float64))
        t["wcentroid"] = _divide(t.pop("wsum"), t["isum"][:, None])
        t.setdefault("wcos", np.zeros((rows, 0)))
        t.setdefault("wsin", np.zeros((rows, 0)))
    return t


def _columns(cols, rows):
    return np.stack(cols, axis=1) if cols else np.zeros((rows, 0))


def periodic_box(labels, shape, axis, lo, hi, rows):
    """The smallest arc covering each label's coordinates along a periodic
    axis: ``(start, extent)`` per label, ``start`` in [0, n).

    The occupied (label, coordinate) pairs are sorted; the gap before each
    occupied coordinate is the run of empty coordinates back to the previous
    one (for a label's first coordinate, back around the ring to its last:
    ``lo + n - hi - 1``).  The arc starts after the largest gap; of equal
    gaps, the one whose arc starts at the smallest coordinate wins.
    ``lo``/``hi``: the label's plain extremes along the axis (from
    :func:`table`).  Labels with no cells get (0, 0).
    """
    n = shape[axis]
    flat = flat_labels(labels)
    keys = np.unique(flat.astype(np.int64) * n + coordinates(shape, axis))
    lab, c = np.divmod(keys, n)
    gap = np.empty(keys.size, dtype=np.int64)
    head = np.ones(keys.size, dtype=bool)
    head[1:] = lab[1:] != lab[:-1]
    gap[~head] = c[1:][~head[1:]] - c[:-1][~head[1:]] - 1
    gap[head] = lo[lab[head]] + n - hi[lab[head]] - 1
    biggest = np.full(rows, -1, dtype=np.int64)
    np.maximum.at(biggest, lab, gap)
    start = np.full(rows, n, dtype=np.int64)
    at = gap == biggest[lab]
    np.minimum.at(start, lab[at], c[at])
    extent = n - biggest
    empty = biggest < 0
    start[empty] = 0
    extent[empty] = 0
    return start, extent


def coords(labels, count, present):
    """Object array: for each label of ``present``, the (count, ndim) int64
    coordinates of its cells in raster order (skimage's ``coords``)."""
    flat = flat_labels(labels)
    order = np.argsort(flat, kind="stable")  # raster order within each label
    starts = np.concatenate([[0], np.cumsum(count)])
    cells = np.stack(np.unravel_index(order, labels.shape), axis=1).astype(np.int64)
    out = np.empty(len(present), dtype=object)
    for i, lab in enumerate(present.tolist()):
        out[i] = cells[starts[lab]:starts[lab + 1]]
    return out
