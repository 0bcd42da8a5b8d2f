"""Per-label tables on the CPU, for :mod:`meshccl.measure`.

:func:`table` is one pass of the compiled core (``core/measure.hpp``, whose
top comment explains it): the image is cut into runs of equal labels along
its rows, each run updates its label's row of the table once, and every
column asked for -- counts, first cells, boxes, coordinate and circular
sums, the intensity's sums and extremes -- comes out of that one pass, on
``threads`` threads (slabs of rows, each writing the labels it owns into
the output and the others into a private table merged in slab order), and
the core finishes the table in place (means, boxes of labels without
cells).  The smallest arcs of periodic axes (:func:`periodic_box`) and the
cells of each label (:func:`coords`) sort in NumPy.  The GPU twin is
``meshccl/_gpu/measure.py``; both return the same finished table, which
``meshccl/measure.py`` turns into statistics.
"""

from __future__ import annotations

import numpy as np

from .. import _tuning
from .image import _core


def flat_labels(labels):
    """``labels`` as a flat ``intp`` array (what ``np.bincount`` takes)."""
    flat = labels.reshape(-1)
    if flat.dtype == np.bool_:
        flat = flat.view(np.uint8)
    return flat.astype(np.intp, copy=False)


def _native(a):
    """``a`` flat, C-contiguous and in this machine's byte order (a copy only
    where it is not)."""
    return np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("=")).reshape(-1)


def _unsigned(a):
    """Flat, C-contiguous view of ``a`` as unsigned integers of its size
    (bool as uint8; a copy only when ``a`` is not contiguous or not in this
    machine's byte order)."""
    flat = _native(a)
    return flat.view(np.dtype(f"u{flat.dtype.itemsize}"))


def max_label(labels):
    """The largest label (0 for an empty array), and whether any is negative:
    one pass over the unsigned view (a negative label is a large one there)."""
    if labels.size == 0:
        return 0, False
    top = int(_unsigned(labels).max())
    if labels.dtype.kind == "i" and top >= 1 << (8 * labels.dtype.itemsize - 1):
        return top, True
    return top, False


def coordinates(shape, axis):
    """Each cell's coordinate along ``axis``, flat in C order (int64)."""
    view = [1] * len(shape)
    view[axis] = shape[axis]
    return np.broadcast_to(np.arange(shape[axis], dtype=np.int64).reshape(view), shape).reshape(-1)


def table(labels, shape, rows, *, first=False, boxes=False, sums=False, periodic=(),
          intensity=None, threads=1):
    """The finished per-label table of a label image (see ``_gpu.measure.table``).

    Parameters
    ----------
    labels : ndarray
        Non-negative integer (or bool) labels below ``rows``, of shape
        ``shape``.
    shape : tuple of int
        The labels' shape.
    rows : int
        Rows of the table: the largest label + 1 (or more).
    first, boxes, sums : bool
        Also compute each label's first cell (flat index; ``n`` where it
        has none), its box (``lo``/``hi``, inclusive, per axis; 0 where it
        has no cells; views of ``box``, (rows, ndim, 2): both side by side)
        and its coordinate sums.
    periodic : tuple of int
        Increasing axes whose circular sums (``cos``, ``sin`` of
        2 pi c / n) are wanted.
    intensity : ndarray, optional
        Same shape (bool, integer or float): its sum and the sum of its
        magnitudes, its extremes (in its own dtype; 0 where a label has no
        cells; NaN wins, as in NumPy's min and max) and intensity-weighted
        coordinate and circular sums.
    threads : int, optional
        Threads to run on (>= 1); fewer run where the image is small, or
        the labels many and in no raster order (``core/measure.hpp``).

    Returns
    -------
    dict of ndarray
        The keys of ``_gpu.measure.table``: ``count`` (int64), ``first``,
        ``box``, ``lo``, ``hi`` (int64), ``centroid``, ``cos``, ``sin``
        (float64; coordinate sums exact below 2**53), and with
        ``intensity`` ``isum``, ``iabs``, ``imean``, ``imin``, ``imax``,
        ``wcentroid``, ``wcos``, ``wsin``, each where asked for.  Integer columns, and sums
        of integer intensities below 2**53, do not depend on ``threads``;
        float sums do in their rounding only.
    """
    ndim = len(shape)
    nper = len(periodic)
    out = {"count": np.zeros(rows, dtype=np.int64)}
    if first:
        out["first"] = np.full(rows, labels.size, dtype=np.int64)  # (n: no cell)
    if boxes:
        # lo and hi side by side: the cc3d layout, a view
        out["box"] = np.zeros((rows, ndim, 2), dtype=np.int64)
    if sums:
        out["csum"] = np.zeros((rows, ndim), dtype=np.float64)
    if nper:
        out["cos"] = np.zeros((rows, nper), dtype=np.float64)
        out["sin"] = np.zeros((rows, nper), dtype=np.float64)
    values = None
    if intensity is not None:
        dtype = intensity.dtype
        values = _native(intensity)
        if dtype == np.bool_:
            values = values.view(np.uint8)
        elif dtype == np.float16:  # (extremes stay exact: float32 holds every float16)
            values = values.astype(np.float32)
        for key in ("isum", "iabs"):
            out[key] = np.zeros(rows, dtype=np.float64)
        for key in ("imin", "imax"):
            out[key] = np.zeros(rows, dtype=values.dtype)
        out["wsum"] = np.zeros((rows, ndim), dtype=np.float64)
        if nper:
            out["wcos"] = np.zeros((rows, nper), dtype=np.float64)
            out["wsin"] = np.zeros((rows, nper), dtype=np.float64)
    # (zeroed: the core adds into them, and leaves labels without cells as
    # they are; np.zeros of a large array is fresh pages, zeroed by the
    # system as they are first written)
    cols = {k: (v.reshape(-1) if isinstance(v, np.ndarray) else v) for k, v in out.items()}
    _, empty = _core.measure_table(
        _unsigned(labels), np.array(shape, dtype=np.int64), rows,
        np.array(periodic, dtype=np.int64), values, threads, _tuning.CPU_MEASURE_MIN_CELLS,
        _tuning.CPU_MEASURE_CELLS_PER_ENTRY,
        *(cols.get(k) for k in ("count", "first", "box", "csum", "cos", "sin", "isum",
                                "iabs", "imin", "imax", "wsum", "wcos", "wsin")))
    return _finish(out, rows, ndim, nper, empty)


def _per_cell(a, count, out=None):
    """a / count: NaN where count is 0 (its sums are 0: 0 / 0), no warnings."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.divide(a, count, out=out)


def _finish(t, rows, ndim, nper, empty):
    """The core's finished columns (boxes with (0, -1) for labels without
    cells, coordinate means in ``csum``) and its intensity sums turned into
    what the GPU's finishing kernel gives (``_gpu.measure.table``): ``box``
    as (rows, 2 * ndim) [lo_0, hi_0, ...] (``lo``, ``hi``: views),
    ``centroid``, ``imean``, float64 ``imin`` / ``imax`` (NaN without
    cells), ``wcentroid`` (NaN where the intensity sums to 0).  ``empty``:
    how many labels have no cells."""
    count = t["count"]
    if "box" in t:
        box = t["box"]
        t["box"] = box.reshape(rows, 2 * ndim)
        t["lo"], t["hi"] = box[:, :, 0], box[:, :, 1]
    if "csum" in t:
        t["centroid"] = t.pop("csum")
    t.setdefault("cos", np.zeros((rows, nper)))
    t.setdefault("sin", np.zeros((rows, nper)))
    if "isum" in t:
        t["imean"] = _per_cell(t["isum"], count)
        for key in ("imin", "imax"):
            t[key] = t[key].astype(np.float64)
            if empty:
                t[key][count == 0] = np.nan
        wsum = t.pop("wsum")
        with np.errstate(invalid="ignore", divide="ignore"):
            t["wcentroid"] = np.where(t["isum"][:, None] == 0, np.nan,
                                      wsum / np.where(t["isum"] == 0, 1, t["isum"])[:, None])
        t.setdefault("wcos", np.zeros((rows, nper)))
        t.setdefault("wsin", np.zeros((rows, nper)))
    return t


def table_threads(shape, rows, threads):
    """The threads :func:`table` runs on for an image of ``shape`` and a
    table of ``rows`` rows when asked for ``threads`` and the slabs of rows
    do not own their labels (``core/measure.hpp``; labels in raster order
    may run on more): at most one per row of the last axis and per
    ``_tuning.CPU_MEASURE_MIN_CELLS`` cells, and no more than keep the
    private tables together within one row per
    ``_tuning.CPU_MEASURE_CELLS_PER_ENTRY`` cells."""
    n = int(np.prod(shape, dtype=np.int64))
    rows_of_cells = n // shape[-1] if len(shape) and shape[-1] else (1 if n else 0)
    return _core.measure_threads(threads, n, rows_of_cells, rows, _tuning.CPU_MEASURE_MIN_CELLS,
                                 _tuning.CPU_MEASURE_CELLS_PER_ENTRY)


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
