"""Per-label statistics of chunked label arrays: ``meshccl.dask.statistics``
and ``meshccl.dask.regionprops_table``.

Every statistic here is a per-label reduction whose partial results
combine: cell counts, coordinate sums, intensity sums and weighted
coordinate sums add; box corners and intensity extremes take the min or
max.  Centroids and means are divided out only at the end.  The moments
of ``regionprops_table`` (and what derives from them: local centroids,
inertia tensors, axis lengths, the intensity's standard deviation) are
sums too, of powers of each cell's coordinates relative to its label's
box corner and of the intensity's deviations from its label's mean, so
they take a second pass once the first has merged the boxes and means:
each chunk sums them with the whole label's corner and mean
(``_moments.label_sums``, as ``meshccl.measure`` does on the whole array)
and the partial sums add.

The data flow: one task a chunk measures its labels with
``meshccl.measure``'s own table (``_cpu.measure.table`` /
``_gpu.measure.table``) after renaming the labels present in the chunk to
0..m-1, so a chunk's table has a row per label it holds, keyed by label
value, whatever the largest label is; the tables are merged in a tree,
``_tuning.DASK_FAN_IN`` children a node (a node sorts its children's
keys and reduces each run of equal keys); the root's table, one row per
label present in the whole array, becomes ``meshccl.measure``'s output
(the columns of ``regionprops_table`` built by ``_regionprops.columns``,
the code ``meshccl.measure`` uses).
Work and memory grow with the labels each chunk holds, not with the
number of chunks times the largest label.
"""

from __future__ import annotations

import dask
import numpy as np

from . import _regionprops, _tuning
from . import measure as _measure

#: regionprops_table properties that meshccl.dask computes: all of
#: meshccl.measure's but ``coords`` and ``coords_scaled`` (each label's
#: cells, not a reduction)
PROPERTIES = tuple(p for p in _measure.PROPERTIES if p not in ("coords", "coords_scaled"))


def _xp(a):
    if type(a).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy
    return np


def _host(a):
    return a.get() if _xp(a) is not np else np.asarray(a)


def _compact(xp, labels, name):
    """(keys, inverse): the label values present in a chunk, ascending, and
    each cell's row among them.  A presence table over the chunk's range of
    labels where that range is at most a few times the chunk, a sort
    otherwise."""
    flat = labels.ravel()
    if flat.dtype.kind == "b":
        flat = flat.view(np.uint8)
    if flat.dtype.kind == "i" and flat.size and int(flat.min()) < 0:
        raise ValueError(f"{name} must be non-negative, found the label {int(flat.min())}")
    lo, hi = int(flat.min()), int(flat.max())
    if hi >= 2**62:
        raise ValueError(f"{name} holds the label {hi}; labels must be below 2**62")
    if hi - lo < 4 * flat.size + 1024:
        shifted = flat.astype(np.int64) - lo
        seen = xp.bincount(shifted, minlength=hi - lo + 1) > 0
        keys = xp.flatnonzero(seen).astype(np.int64)
        row = xp.cumsum(seen, dtype=np.int64) - 1
        return keys + lo, row[shifted]
    keys, inverse = xp.unique(flat, return_inverse=True)
    return keys.astype(np.int64), inverse.ravel().astype(np.int64)


def _chunk_table(labels, intensity, start, threads, name):
    """One chunk's table (host NumPy, one row per label it holds):
    ``key``, ``count``, ``lo``/``hi`` (global coordinates), ``csum``
    (global coordinate sums, int64, exact); with ``intensity`` ``isum``, ``imin``,
    ``imax``, ``wsum`` (intensity-weighted global coordinate sums)."""
    xp = _xp(labels)
    shape = tuple(labels.shape)
    ndim = len(shape)
    if labels.size == 0:
        return None
    keys, inverse = _compact(xp, labels, name)
    rows = int(keys.size)
    backend = _measure._backend(xp)
    extra = {"threads": threads} if xp is np else {}
    t = backend.table(inverse.reshape(shape), shape, rows, boxes=True, sums=True,
                      intensity=intensity, **extra)
    count = t["count"]
    at = xp.asarray(start, dtype=np.int64)
    # the table's centroid is its integer coordinate sum / count, correctly
    # rounded: times the count it is within far less than 0.5 of that sum
    # (sums below 2**52), so rounding gives the sum back exactly, and the
    # merged sums give the whole array's centroids bit for bit
    local = xp.rint(t["centroid"] * count[:, None]).astype(np.int64)
    out = {"key": keys, "count": count, "lo": t["lo"] + at, "hi": t["hi"] + at,
           "csum": local + at * count[:, None]}
    if intensity is not None:
        values = intensity.reshape(-1).astype(np.float64)
        out.update(isum=t["isum"], imin=t["imin"], imax=t["imax"])
        wsum = xp.empty((rows, ndim), np.float64)
        for d in range(ndim):
            along = [1] * ndim
            along[d] = shape[d]
            coord = xp.arange(start[d], start[d] + shape[d], dtype=np.float64).reshape(along)
            weighted = xp.broadcast_to(coord, shape).reshape(-1) * values
            wsum[:, d] = xp.bincount(inverse, weights=weighted, minlength=rows)
        out["wsum"] = wsum
    return {k: _host(v) for k, v in out.items()}


def _chunk_sums(labels, intensity, start, root, plain, weighted, spread, name):
    """The second pass, one chunk: ``_moments.label_sums`` of its labels
    (but 0) about each whole label's box corner (``root``: the merged
    first-pass table) and, with ``spread``, of the intensity's squared
    deviations from the whole label's mean; host NumPy, keyed by label."""
    from . import _moments

    xp = _xp(labels)
    if labels.size == 0:
        return None
    keys, inverse = _compact(xp, labels, name)
    keys_h = _host(keys)
    at = np.searchsorted(root["key"], keys_h)
    origin = root["lo"][at] - np.asarray(start, np.int64)
    row_of = np.where(keys_h == 0, -1, np.arange(keys_h.size, dtype=np.int64))
    mean = None
    if spread:
        mean = xp.asarray(root["isum"][at] / root["count"][at])
    sums = _moments.label_sums(xp, inverse.reshape(labels.shape), xp.asarray(row_of),
                               xp.asarray(origin), plain, weighted,
                               intensity if (weighted or spread) else None, mean)
    return {"key": keys_h, **{k: _host(v) for k, v in sums.items()}}


_ADD = ("count", "csum", "isum", "wsum", "plain", "weighted", "spread")


def _merge(*tables):
    """A node of the tree: its children's tables, one row per key."""
    tables = [t for t in tables if t is not None]
    if len(tables) <= 1:
        return tables[0] if tables else None
    cat = {k: np.concatenate([t[k] for t in tables]) for k in tables[0]}
    order = np.argsort(cat["key"], kind="stable")
    key = cat["key"][order]
    starts = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))
    out = {"key": key[starts]}
    for k, v in cat.items():
        if k == "key":
            continue
        v = v[order]
        if k in _ADD:
            out[k] = np.add.reduceat(v, starts, axis=0)
        elif k in ("lo", "imin"):
            out[k] = np.minimum.reduceat(v, starts, axis=0)
        else:  # hi, imax
            out[k] = np.maximum.reduceat(v, starts, axis=0)
    return out


def _tree(parts):
    level = list(parts)
    while len(level) > 1:
        fan_in = _tuning.DASK_FAN_IN
        level = [dask.delayed(_merge, pure=True)(*level[i:i + fan_in])
                 for i in range(0, len(level), fan_in)]
    return level[0]


def _prepare(labels, intensity, name, intensity_name):
    import dask.array as da

    labels = da.asarray(labels)
    if labels.dtype.kind not in "biu":
        raise TypeError(f"{name} must be an integer array of non-negative labels, got dtype "
                        f"{labels.dtype}")
    if intensity is not None:
        intensity = da.asarray(intensity)
        if intensity.shape != labels.shape:
            raise ValueError(f"{intensity_name} must have the labels' shape {labels.shape}, "
                             f"got shape {intensity.shape}")
        if intensity.dtype.kind not in "biuf":
            raise TypeError(f"{intensity_name} must be a bool, integer or float array, got "
                            f"dtype {intensity.dtype}")
        if intensity.chunks != labels.chunks:
            intensity = intensity.rechunk(labels.chunks)
    return labels, intensity


def _blocks(labels, intensity):
    """(label block, intensity block or None, global start) of each chunk, as
    Delayed objects."""
    starts = [np.concatenate([[0], np.cumsum(c)[:-1]]).astype(int) for c in labels.chunks]
    blocks = labels.to_delayed(optimize_graph=True).ravel()
    values = (intensity.to_delayed(optimize_graph=True).ravel() if intensity is not None
              else [None] * blocks.size)
    for i, (b, v) in enumerate(zip(blocks, values)):
        index = np.unravel_index(i, labels.numblocks)
        yield b, v, tuple(int(starts[d][index[d]]) for d in range(labels.ndim))


def _reduced(labels, intensity, threads, name):
    """The root of the tree of chunk tables (a Delayed), and whether the
    chunks are CuPy arrays."""
    parts = [dask.delayed(_chunk_table, pure=True)(b, v, start, threads, name)
             for b, v, start in _blocks(labels, intensity)]
    return _tree(parts), _xp(labels._meta) is not np


def _dense(t, ndim, with_intensity):
    """The root's table as measure's rows 0..largest label."""
    top = int(t["key"][-1]) if t is not None else 0
    rows = top + 1
    key = t["key"] if t is not None else np.empty(0, np.int64)
    count = np.zeros(rows, np.int64)
    lo = np.zeros((rows, ndim), np.int64)
    hi = np.full((rows, ndim), -1, np.int64)
    csum = np.zeros((rows, ndim), np.int64)
    out = {"count": count, "lo": lo, "hi": hi}
    if t is not None:
        count[key], lo[key], hi[key], csum[key] = t["count"], t["lo"], t["hi"], t["csum"]
    with np.errstate(invalid="ignore", divide="ignore"):
        out["centroid"] = csum / count[:, None]
        if with_intensity:
            isum = np.zeros(rows)
            imin = np.full(rows, np.nan)
            imax = np.full(rows, np.nan)
            wsum = np.zeros((rows, ndim))
            if t is not None:
                isum[key], imin[key], imax[key], wsum[key] = (t["isum"], t["imin"], t["imax"],
                                                              t["wsum"])
            out.update(isum=isum, imin=imin, imax=imax, imean=isum / count,
                       wcentroid=np.where(isum[:, None] == 0, np.nan,
                                          wsum / np.where(isum == 0, 1, isum)[:, None]))
    return out


def _statistics_result(t, ndim, with_intensity, bbox_layout, on_gpu):
    d = _dense(t, ndim, with_intensity)
    lo, hi, count = d["lo"], d["hi"], d["count"]
    if bbox_layout == "cc3d":
        boxes = np.stack([lo, hi], axis=2).reshape(lo.shape[0], 2 * ndim)
    elif bbox_layout == "skimage":
        boxes = np.concatenate([lo, hi + 1], axis=1)
    else:
        boxes = _measure._slices(lo, hi, count)
    out = {"voxel_counts": count, "bounding_boxes": boxes, "centroids": d["centroid"]}
    if with_intensity:
        out.update(intensity_sum=d["isum"], intensity_mean=d["imean"],
                   intensity_min=d["imin"], intensity_max=d["imax"],
                   weighted_centroids=d["wcentroid"])
    return _to_device(out, on_gpu)


def _to_device(out, on_gpu):
    if not on_gpu:
        return out
    import cupy

    return {k: cupy.asarray(v) if isinstance(v, np.ndarray) and v.dtype != object else v
            for k, v in out.items()}


def statistics(labels, intensity=None, *, periodic=False, bbox_layout="cc3d", cpu_threads=1,
               compute=True):
    """``meshccl.measure.statistics`` of a chunked label array.

    Parameters
    ----------
    labels : dask.array.Array
        Non-negative integer (or bool) labels, NumPy or CuPy chunks, any
        chunking; the labels need not be 1..N nor connected.  Other
        array-likes go through ``dask.array.asarray``.
    intensity : dask.array.Array, optional
        Same shape (rechunked to the labels' chunks if needed): adds the
        intensity statistics.
    periodic : bool or sequence of bool, optional
        Only False: periodic boxes and circular centroids do not combine
        across chunks as sums do (``NotImplementedError`` otherwise).
    bbox_layout : {'cc3d', 'skimage', 'slices'}, optional
        As in ``meshccl.measure.statistics``.
    cpu_threads : int, optional
        Threads for each NumPy chunk's table (as in ``meshccl.measure``).
    compute : bool, optional
        True (default): compute and return the dict.  False: a
        ``dask.delayed`` object that computes to it (to compute it together
        with other results, ``dask.compute(...)``).

    Returns
    -------
    dict
        The keys, rows (0 .. largest label) and values of
        ``meshccl.measure.statistics`` on the whole array: counts, boxes
        and intensity extremes equal, and centroids (integer sums); intensity
        sums and means to floating-point rounding (added in another order).
        CuPy arrays for CuPy chunks.

    Notes
    -----
    One task a chunk builds a table of the labels that chunk holds; the
    tables merge in a tree (``docs/dask.md``). The root holds one row per
    label present (about 100 bytes a row in 3-D with intensity), the dense
    result one per label value up to the largest.

    Examples
    --------
    >>> import numpy as np, dask.array as da, meshccl.dask
    >>> labels = da.from_array(np.array([[1, 1, 0, 5], [0, 3, 3, 5]]), chunks=2)
    >>> s = meshccl.dask.statistics(labels)
    >>> s["voxel_counts"]
    array([2, 2, 0, 2, 0, 2])
    >>> s["centroids"][3]
    array([1. , 1.5])
    """
    if bbox_layout not in _measure.BBOX_LAYOUTS:
        raise ValueError(f"bbox_layout must be one of {_measure.BBOX_LAYOUTS}, got "
                         f"{bbox_layout!r}")
    threads = _measure._cpu_threads(cpu_threads)
    labels, intensity = _prepare(labels, intensity, "labels", "intensity")
    if any(_measure._validate._periodic(periodic, labels.ndim)):
        raise NotImplementedError(
            "meshccl.dask.statistics does not take periodic axes (their arcs and circular "
            f"means do not add up across chunks); got periodic={periodic!r}: use "
            "meshccl.measure.statistics on the whole array")
    root, on_gpu = _reduced(labels, intensity, threads, "labels")
    out = dask.delayed(_statistics_result, pure=True)(root, labels.ndim, intensity is not None,
                                                      bbox_layout, on_gpu)
    return out.compute() if compute else out


def _regionprops_result(t, sums, ndim, properties, spacing, separator, on_gpu):
    d = _dense(t, ndim, any(p in _regionprops.NEEDS_INTENSITY for p in properties))
    count = d["count"]
    present = np.flatnonzero(count[1:]) + 1
    if sums is not None:  # (rows of present labels, from the second pass)
        at = np.searchsorted(sums["key"], present)
        sums = {k: v[at] for k, v in sums.items() if k != "key"}
    more = _regionprops.columns(np, properties, d, None, None, present, spacing, separator,
                                sums=sums if sums is not None else {})
    out = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for p in properties:
            if p in more:
                out.update(more[p])
            elif p == "label":
                out[p] = present.astype(np.int64)
            elif p == "area":
                out[p] = count[present].astype(np.float64) * float(np.prod(spacing))
            elif p == "bbox":
                for j in range(ndim):
                    out[f"bbox{separator}{j}"] = d["lo"][present, j]
                for j in range(ndim):
                    out[f"bbox{separator}{ndim + j}"] = d["hi"][present, j] + 1
            elif p == "centroid":
                for j in range(ndim):
                    out[f"centroid{separator}{j}"] = d["centroid"][present, j] * spacing[j]
            else:
                out[p] = d[{"intensity_mean": "imean", "intensity_min": "imin",
                            "intensity_max": "imax"}[p]][present]
    return _to_device(out, on_gpu)


def regionprops_table(label_image, intensity_image=None, properties=("label", "bbox"), *,
                      separator="-", spacing=None, cpu_threads=1, compute=True):
    """``meshccl.measure.regionprops_table`` of a chunked label array, for the
    properties that are per-label reductions.

    Parameters
    ----------
    label_image : dask.array.Array
        Non-negative integer labels (bool is refused, as skimage does),
        NumPy or CuPy chunks, any chunking.
    intensity_image : dask.array.Array, optional
        Same shape (no channel axis); rechunked to the labels' chunks if
        needed.  Needed by the ``intensity_*`` and weighted properties.
    properties : sequence of str, optional
        Any of :data:`PROPERTIES`: every property of
        ``meshccl.measure.regionprops_table`` (skimage's names: ``label``,
        ``area``, ``bbox``, ``centroid``, the moments, inertia tensor and
        axis lengths, the intensity statistics, ...) but ``coords`` and
        ``coords_scaled``, which raise ``NotImplementedError``; names that
        ``meshccl.measure.regionprops_table`` refuses raise its
        ``ValueError``.  The moments and what derives from them, the local
        centroids and ``intensity_std`` take a second pass over the chunks
        (sums about each label's box corner and mean, which the first pass
        gives).
    separator, spacing, cpu_threads
        As in ``meshccl.measure.regionprops_table``.
    compute : bool, optional
        True (default): the dict; False: a ``dask.delayed`` object that
        computes to it.

    Returns
    -------
    dict
        skimage's column names and dtypes, one row per label present
        (ascending), the values of ``meshccl.measure.regionprops_table`` on
        the whole array (floating-point columns to rounding).  CuPy arrays
        for CuPy chunks.

    Examples
    --------
    >>> import numpy as np, dask.array as da, meshccl.dask
    >>> labels = da.from_array(np.array([[0, 2, 2], [5, 0, 2]]), chunks=(1, 2))
    >>> t = meshccl.dask.regionprops_table(labels, properties=("label", "area", "centroid"))
    >>> t["label"], t["area"], t["centroid-1"]
    (array([2, 5]), array([3., 1.]), array([1.66666667, 0.        ]))
    """
    if isinstance(properties, str):
        properties = (properties,)
    properties = tuple(properties)
    _regionprops.check_names(properties, _measure.PROPERTIES)
    missing = [p for p in properties if p not in PROPERTIES]
    if missing:
        raise NotImplementedError(
            f"meshccl.dask.regionprops_table does not compute {missing} (each label's cells, "
            "not a reduction over them); use meshccl.measure.regionprops_table on the whole "
            f"array, or choose from {PROPERTIES}")
    wants_intensity = [p for p in properties if p in _regionprops.NEEDS_INTENSITY]
    if wants_intensity and intensity_image is None:
        raise ValueError(f"properties {wants_intensity} need an intensity_image")
    threads = _measure._cpu_threads(cpu_threads)
    if intensity_image is not None and hasattr(label_image, "ndim"):
        _regionprops.check_intensity(intensity_image, label_image.ndim)
    labels, intensity = _prepare(label_image, intensity_image if wants_intensity else None,
                                 "label_image", "intensity_image")
    if labels.dtype.kind == "b":
        raise TypeError("label_image must be an integer array, got bool (label it first, or "
                        "use .astype(np.uint8) to make the True cells one label)")
    if labels.ndim == 0:
        raise TypeError("label_image must have at least one axis, got a 0-d array")
    spacing = _regionprops.spacing(spacing, labels.ndim)
    _regionprops.check_ndim(properties, labels.ndim, spacing)
    root, on_gpu = _reduced(labels, intensity, threads, "label_image")
    plain, weighted, spread = _regionprops.wanted_sums(properties, labels.ndim)
    sums = None
    if plain or weighted or spread:
        # the second pass: moments about each label's box corner (known
        # once the first pass has merged the boxes), merged alike
        sums = _tree([dask.delayed(_chunk_sums, pure=True)(b, v, start, root, plain, weighted,
                                                           spread, "label_image")
                      for b, v, start in _blocks(labels, intensity)])
    out = dask.delayed(_regionprops_result, pure=True)(root, sums, labels.ndim, properties,
                                                       spacing, separator, on_gpu)
    return out.compute() if compute else out
