"""Statistics of labelled components and operations on them.

What users do right after labelling -- count the cells of each component,
find where it is, keep the largest, remove the small ones, look at the size
distribution -- on the array's own device: NumPy in, NumPy out (the CPU,
through one pass of the compiled core, ``_cpu/core/measure.hpp``, on
``cpu_threads`` threads); CuPy in, CuPy out (the GPU, through
``_kernels/measure.cu``; the label image never leaves the device).  Every
function validates, picks the backend by the array's kind and leaves the
arithmetic to it; the tables come back indexed by label.

See ``docs/measure.md`` for the conventions (boxes, labels without cells,
periodic lattices) and how they map onto cc3d, scikit-image and SciPy.
"""

from __future__ import annotations

import functools
import numbers

import numpy as np

from . import _regionprops, _validate

__all__ = ["statistics", "regionprops_table", "find_objects", "largest_k", "dust",
           "relabel_by_size", "size_histogram", "largest_fraction", "contacts", "contact_pairs",
           "region_graph"]

#: regionprops_table properties this module computes (scikit-image's names)
PROPERTIES = ("label", "area", "bbox", "centroid", "intensity_mean", "intensity_min",
              "intensity_max", "coords", "coords_scaled") + _regionprops.MORE
#: bounding box layouts of :func:`statistics`
BBOX_LAYOUTS = ("cc3d", "skimage", "slices")
#: a circular mean is undefined (NaN) where the resultant of the unit
#: vectors is at most this fraction of their total weight
CIRCULAR_EPS = 1e-9
#: circular means within this fraction of n below n are reported as 0
CIRCULAR_SEAM = 1e-12


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------

def _on_its_gpu(fn):
    """Run ``fn`` on the GPU that holds its first argument when that is a
    CuPy array on a device other than the current one."""
    @functools.wraps(fn)
    def call(first, *args, **kwargs):
        device = getattr(getattr(first, "data", None), "device_id", None)  # (CuPy arrays)
        if device is not None:
            import cupy

            if device != cupy.cuda.runtime.getDevice():
                with cupy.cuda.Device(device):
                    return fn(first, *args, **kwargs)
        return fn(first, *args, **kwargs)
    return call


def _backend(xp):
    if xp is np:
        from ._cpu import measure
    else:
        from ._gpu import measure
    return measure


def _labels(labels, name="labels", allow_bool=True):
    """(xp, array, backend, largest label) for a label image; errors name ``name``."""
    if not (isinstance(labels, np.ndarray) or type(labels).__module__.startswith("cupy")):
        if isinstance(labels, (list, tuple)) or np.isscalar(labels):
            labels = np.asarray(labels)
        else:
            raise TypeError(f"{name} must be a NumPy or CuPy array, got "
                            f"{type(labels).__module__}.{type(labels).__name__}")
    xp, labels = _validate.array_module(labels)
    kind = labels.dtype.kind
    if kind == "b" and not allow_bool:
        raise TypeError(f"{name} must be an integer array, got bool (label it first, or "
                        "use .astype(np.uint8) to make the True cells one label)")
    if kind not in "biu":
        raise TypeError(f"{name} must be an integer array of non-negative labels, got dtype "
                        f"{labels.dtype}")
    backend = _backend(xp)
    top, negative = backend.max_label(labels)
    if negative:
        raise ValueError(f"{name} must be non-negative, found the label {int(labels.min())}")
    if top >= 2**62:
        raise ValueError(f"{name} holds the label {top}; tables are indexed by label, so "
                         "labels must be below 2**62")
    return xp, labels, backend, top


def _intensity(intensity, xp, shape, name="intensity"):
    if intensity is None:
        return None
    if xp is np:
        if type(intensity).__module__.startswith("cupy"):
            raise TypeError(f"{name} is a CuPy array but the labels are a NumPy array")
        intensity = np.asarray(intensity)
    elif not type(intensity).__module__.startswith("cupy"):
        raise TypeError(f"{name} must be a CuPy array like the labels, got "
                        f"{type(intensity).__module__}.{type(intensity).__name__}")
    if tuple(intensity.shape) != tuple(shape):
        raise ValueError(f"{name} must have the labels' shape {tuple(shape)}, got shape "
                         f"{tuple(intensity.shape)}")
    if intensity.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a bool, integer or float array, got dtype "
                        f"{intensity.dtype}")
    return intensity


def _periodic_axes(periodic, ndim):
    flags = _validate._periodic(periodic, ndim)
    return tuple(d for d in range(ndim) if flags[d])


def _count(value, name, low=0):
    """An integer argument >= ``low``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int >= {low}, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return int(value)


def _cpu_threads(cpu_threads):
    """Threads for the CPU tables from ``cpu_threads`` (0: every core this
    process may run on), validated as :func:`meshccl.label` does."""
    if (isinstance(cpu_threads, (bool, np.bool_))
            or not isinstance(cpu_threads, (int, np.integer)) or cpu_threads < 0):
        raise ValueError(f"cpu_threads must be an int >= 0 (0: all cores), got {cpu_threads!r}")
    if cpu_threads == 0:
        from ._cpu.image import cpu_count

        return cpu_count()
    return int(cpu_threads)


def _label(image, connectivity, periodic):
    from .labelling import label

    return label(image, connectivity=connectivity, periodic=periodic, return_num=True)


# ---------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------

def _circular(xp, c, s, weight, n):
    """Circular mean, in [0, n), of coordinates whose unit vectors sum to (c, s)."""
    angle = xp.arctan2(s, c) * (n / (2 * np.pi))
    angle = xp.where(angle < 0, angle + n, angle)
    # just below n is 0 within rounding: report 0, so that backends that add
    # in other orders agree on the seam too
    angle = xp.where(angle >= n * (1 - CIRCULAR_SEAM), 0.0, angle)
    return xp.where(xp.hypot(c, s) <= CIRCULAR_EPS * weight, xp.nan, angle)


def _table(checked, intensity, per, first=False, boxes=True, sums=True, threads=1):
    """The finished per-label table of ``checked`` (what :func:`_labels`
    returns; the keys of ``_gpu.measure.table``): counts, boxes (inclusive
    lo/hi with the periodic convention, lo = 0 and hi = -1 for labels
    without cells), centroids and the intensity statistics.  ``per``: the
    periodic axes, whose boxes and centroids are finished here;
    ``threads``: for the CPU table (the GPU's takes none)."""
    xp, labels, backend, top = checked
    shape = tuple(labels.shape)
    rows = top + 1
    extra = {"threads": threads} if xp is np else {}
    t = backend.table(labels, shape, rows, first=first, boxes=boxes, sums=sums,
                      periodic=per if sums else (), intensity=intensity, **extra)
    if not per:
        return t
    count = t["count"]
    empty = count == 0
    if boxes:
        lo, hi = t["lo"], t["hi"]
        for d in per:
            if rows * shape[d] >= 2**63:  # the sort keys label * n + coordinate
                raise ValueError(f"labels up to {top} on an axis of {shape[d]} cells are too "
                                 "many for periodic boxes (label * size must stay below 2**63)")
            start, extent = backend.periodic_box(labels, shape, d, lo[:, d], hi[:, d], rows)
            lo[:, d] = xp.where(empty, 0, start)
            hi[:, d] = xp.where(empty, -1, start + extent - 1)
    if sums:
        cf = count.astype(np.float64)
        for j, d in enumerate(per):
            t["centroid"][:, d] = _circular(xp, t["cos"][:, j], t["sin"][:, j], cf, shape[d])
    if intensity is not None:
        for j, d in enumerate(per):
            t["wcentroid"][:, d] = _circular(xp, t["wcos"][:, j], t["wsin"][:, j], t["iabs"],
                                             shape[d])
    return t


def _slices(lo, hi, count):
    """Host list of slice tuples (None for labels without cells)."""
    lo, hi, count = (a.get() if hasattr(a, "get") else a for a in (lo, hi, count))
    return [tuple(slice(int(a), int(b) + 1) for a, b in zip(l_, h_)) if c else None
            for l_, h_, c in zip(lo.tolist(), hi.tolist(), count.tolist())]


@_on_its_gpu
def statistics(labels, intensity=None, *, periodic=False, bbox_layout="cc3d", cpu_threads=1):
    """Cell counts, bounding boxes and centroids of every label (cc3d's ``statistics``).

    Parameters
    ----------
    labels : numpy.ndarray or cupy.ndarray
        Non-negative integer (or bool) labels, any shape.  Labels need not
        be consecutive nor connected; 0 is a label like the others (the
        background row).
    intensity : array, optional
        Same shape and array kind as ``labels`` (bool, integer or float):
        adds the intensity statistics below.
    periodic : bool or sequence of bool, optional
        Axes that wrap around (as in :func:`meshccl.label`): centroids along
        them are circular means and boxes the smallest arcs (see Notes).
    bbox_layout : {'cc3d', 'skimage', 'slices'}, optional
        'cc3d' (default): int64 array ``(N + 1, 2 * ndim)`` of
        ``[min_0, max_0, min_1, max_1, ...]`` with inclusive maxima, the
        values of ``cc3d.statistics(..., no_slice_conversion=True)``;
        'skimage': ``[min_0, ..., min_{d-1}, stop_0, ..., stop_{d-1}]``
        with exclusive stops, skimage's ``bbox`` order; 'slices': a host
        list of tuples of slices (None for labels without cells), cc3d's
        default and :func:`scipy.ndimage.find_objects`'s form.
    cpu_threads : int, optional
        Threads for NumPy input, as :func:`meshccl.label`'s: 1 (default)
        one, 0 every core this process may run on, N at most N.  Fewer run
        on small images (under ``CPU_MEASURE_MIN_CELLS`` = 65 536 cells a
        thread) and on images of fewer rows than threads (the rows of the
        last axis are split; a 1-D array is one row).  Labels numbered in
        raster order (:func:`meshccl.label`'s) run on every thread however
        many they are; labels in no such order, when so many that the
        threads' private tables would hold more than one row per 16 cells
        of the image (``CPU_MEASURE_CELLS_PER_ENTRY``), run on fewer.
        Ignored for CuPy input.

    Returns
    -------
    dict
        Arrays indexed by label (row 0: label 0), N = the largest label:
        ``voxel_counts`` (int64, N + 1), ``bounding_boxes`` (see
        ``bbox_layout``), ``centroids`` (float64, (N + 1, ndim)); with
        ``intensity`` also ``intensity_sum``, ``intensity_mean``,
        ``intensity_min``, ``intensity_max`` (float64, N + 1) and
        ``weighted_centroids`` (float64, (N + 1, ndim): coordinates
        weighted by intensity).  CuPy arrays for CuPy input.

    Notes
    -----
    A label with no cells (a gap in the numbering) gets count 0, NaN
    centroids and intensity mean / min / max, intensity sum 0, and the
    empty box: min 0 and max -1 in 'cc3d' (extent 0), zeros in 'skimage',
    None in 'slices'.  Weighted centroids are NaN where the intensity sums
    to 0.

    On a periodic axis of length n the centroid is the circular mean
    n / (2 pi) * arg(sum exp(2 pi i c / n)), in [0, n); NaN where the unit
    vectors cancel (a ring that goes all around evenly).  The box is the
    smallest arc that covers the label's coordinates: min is its first
    coordinate, in [0, n), and max = min + extent - 1, which may reach past
    n - 1 when the label wraps (index with ``np.take(..., mode='wrap')``).
    Of equally small arcs the one with the smaller min is taken, so a label
    that does not wrap gets its plain box.  Finding the arcs sorts the
    occupied (label, coordinate) pairs of each periodic axis.

    Counts, boxes, intensity min / max and non-periodic centroids are the
    same on both backends, bit for bit, and for any ``cpu_threads``;
    circular means and intensity sums, means and weighted centroids of
    non-integer intensities agree to floating-point rounding (the GPU adds
    in another order, and so does each number of CPU threads; one number
    of threads always gives the same values).  On CuPy the
    call waits for the device to read the largest label (and in the sort of
    each periodic axis; the 'slices' layout copies the box table).

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.measure import statistics
    >>> labels = np.array([[1, 1, 0],
    ...                    [0, 3, 3]])
    >>> s = statistics(labels)
    >>> s["voxel_counts"]
    array([2, 2, 0, 2])
    >>> s["bounding_boxes"]
    array([[ 0,  1,  0,  2],
           [ 0,  0,  0,  1],
           [ 0, -1,  0, -1],
           [ 1,  1,  1,  2]])
    >>> s["centroids"][3]
    array([1. , 1.5])
    >>> statistics(np.array([1, 0, 0, 1]), periodic=True)["centroids"][1]
    array([3.5])
    """
    if bbox_layout not in BBOX_LAYOUTS:
        raise ValueError(f"bbox_layout must be one of {BBOX_LAYOUTS}, got {bbox_layout!r}")
    threads = _cpu_threads(cpu_threads)
    checked = _labels(labels)
    xp, labels = checked[:2]
    intensity = _intensity(intensity, xp, labels.shape)
    t = _table(checked, intensity, _periodic_axes(periodic, labels.ndim), threads=threads)
    lo, hi, count = t["lo"], t["hi"], t["count"]
    if bbox_layout == "cc3d":
        boxes = t["box"]
    elif bbox_layout == "skimage":
        boxes = xp.concatenate([lo, hi + 1], axis=1)
    else:
        boxes = _slices(lo, hi, count)
    out = {"voxel_counts": count, "bounding_boxes": boxes, "centroids": t["centroid"]}
    if intensity is not None:
        out.update(intensity_sum=t["isum"], intensity_mean=t["imean"],
                   intensity_min=t["imin"], intensity_max=t["imax"],
                   weighted_centroids=t["wcentroid"])
    return out


@_on_its_gpu
def regionprops_table(label_image, intensity_image=None, properties=("label", "bbox"), *,
                      separator="-", spacing=None, cpu_threads=1):
    """``skimage.measure.regionprops_table`` for the properties both have.

    Parameters
    ----------
    label_image : numpy.ndarray or cupy.ndarray
        Non-negative integer labels, any ndim (bool is refused, as skimage
        does).
    intensity_image : array, optional
        Same shape and array kind (no channel axis); needed by the
        ``intensity_*`` and weighted properties.
    properties : sequence of str, optional
        Any of :data:`PROPERTIES`, skimage's names: ``label``, ``area``,
        ``num_pixels``, ``bbox``, ``area_bbox``, ``extent``,
        ``equivalent_diameter_area``, ``centroid``, ``centroid_local``,
        ``coords``, ``coords_scaled``, ``moments``, ``moments_central``,
        ``moments_normalized``, ``moments_hu``, ``inertia_tensor``,
        ``inertia_tensor_eigvals``, ``eccentricity``, ``orientation``,
        ``axis_major_length``, ``axis_minor_length``, ``intensity_mean``,
        ``intensity_min``, ``intensity_max``, ``intensity_std``,
        ``centroid_weighted``, ``centroid_weighted_local``,
        ``moments_weighted``, ``moments_weighted_central``,
        ``moments_weighted_normalized``, ``moments_weighted_hu``.
    separator : str, optional
        Between a property's name and its column, as skimage's.
    spacing : float or sequence of float, optional
        The cells' size along each axis (default 1), as skimage's: it
        scales ``area``, the centroids, the moments and everything derived
        from them (``bbox`` and ``coords`` stay in cells).
    cpu_threads : int, optional
        Threads for NumPy input, as :func:`statistics`'s (1 by default, 0
        every core); ignored for CuPy input.  The values do not depend on
        it but for the rounding of intensity means of float images.

    Returns
    -------
    dict
        One entry per column, one row per label present (ascending), with
        skimage's keys (``bbox-0``, ``centroid-1``, ``moments-0-2``,
        ``inertia_tensor-1-1``, ...) and dtypes (``label``, ``bbox`` and
        ``num_pixels`` int64, the rest float64; ``coords`` an object array
        of ``(area, ndim)`` int64 coordinate arrays in raster order,
        ``coords_scaled`` the same in float64 times ``spacing``).  CuPy
        arrays for CuPy input.

    Raises
    ------
    ValueError
        For properties that need more than a per-label sum (``perimeter``,
        ``solidity``, ``euler_number``, ``feret_diameter_max``, ``image``,
        ...: use skimage for those), and a multi-channel intensity image.
    NotImplementedError
        ``eccentricity``, ``orientation`` and the Hu moments outside 2-D,
        and the Hu moments with a spacing other than 1 (as skimage).

    Notes
    -----
    Values equal skimage's to rounding (tested on random 2-D and 3-D label
    images with gaps, anisotropic spacing, integer and float intensities;
    skimage's regionprops is 2-D / 3-D only, here the moments, inertia
    tensor and its eigenvalues work in any ndim, and the axis lengths in
    2-D and 3-D, as skimage's).  Moments are those of each region's box
    (skimage's local coordinates), of order 3 on each axis.  Every moment,
    weighted moment and ``intensity_std`` comes from one pass over the
    image after the count / box table: per-label sums of the powers of the
    cells' box-local coordinates (weighted by the intensity for the
    weighted ones); central moments follow by the binomial expansion
    about the centroid.  Values that are 0 in exact arithmetic (the
    cross moments of a symmetric region, the minor axis of a line) come
    out as rounding noise, as skimage's do, possibly of another size; the
    orientation of a region without a major axis is as undefined here as
    there.  Where the intensity of a label sums to 0, its weighted
    centroids are inf / NaN and its weighted central moments NaN, as in
    skimage.  ``intensity_mean`` and ``intensity_std`` of a float32 image
    agree to float32 rounding (skimage sums in float32, this function in
    float64).  Negative labels raise ``ValueError`` (skimage ignores
    them).

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.measure import regionprops_table
    >>> labels = np.array([[0, 2, 2],
    ...                    [5, 0, 2]])
    >>> t = regionprops_table(labels, properties=("label", "area", "centroid"))
    >>> t["label"], t["area"]
    (array([2, 5]), array([3., 1.]))
    >>> t["centroid-1"]
    array([1.66666667, 0.        ])
    >>> bar = np.zeros((5, 7), np.uint8)
    >>> bar[1:3, 1:6] = 1
    >>> t = regionprops_table(bar, properties=("moments_central", "orientation",
    ...                                        "axis_major_length", "extent"))
    >>> t["moments_central-2-0"], t["moments_central-0-2"], t["moments_central-1-1"]
    (array([2.5]), array([20.]), array([0.]))
    >>> t["orientation"], t["axis_major_length"], t["extent"]
    (array([1.57079633]), array([5.65685425]), array([1.]))
    >>> regionprops_table(bar, properties=("area", "centroid"), spacing=(2.0, 0.5))
    {'area': array([10.]), 'centroid-0': array([3.]), 'centroid-1': array([1.5])}
    """
    if isinstance(properties, str):
        properties = (properties,)
    properties = tuple(properties)
    _regionprops.check_names(properties, PROPERTIES)
    wants_intensity = [p for p in properties if p in _regionprops.NEEDS_INTENSITY]
    if wants_intensity and intensity_image is None:
        raise ValueError(f"properties {wants_intensity} need an intensity_image")
    threads = _cpu_threads(cpu_threads)
    checked = _labels(label_image, "label_image", allow_bool=False)
    xp, labels, backend = checked[:3]
    if labels.ndim == 0:  # (skimage refuses it with a TypeError too)
        raise TypeError(f"label_image must have at least one axis, got a 0-d array "
                        f"({labels.item()!r})")
    _regionprops.check_intensity(intensity_image, labels.ndim)
    intensity_image = _intensity(intensity_image, xp, labels.shape, "intensity_image")
    spacing = _regionprops.spacing(spacing, labels.ndim)
    _regionprops.check_ndim(properties, labels.ndim, spacing)
    t = _table(checked, intensity_image if wants_intensity else None, (), threads=threads)
    present = xp.nonzero(t["count"][1:])[0] + 1
    more = _regionprops.columns(xp, properties, t, labels, intensity_image, present, spacing,
                                separator)
    out = {}
    for p in properties:
        if p in more:
            out.update(more[p])
        elif p == "label":
            out["label"] = present.astype(np.int64)
        elif p == "area":
            out["area"] = t["count"][present].astype(np.float64) * float(np.prod(spacing))
        elif p == "bbox":
            ndim = labels.ndim
            for d in range(ndim):
                out[f"bbox{separator}{d}"] = t["lo"][present, d]
            for d in range(ndim):
                out[f"bbox{separator}{ndim + d}"] = t["hi"][present, d] + 1
        elif p == "centroid":
            for d in range(labels.ndim):
                out[f"centroid{separator}{d}"] = t["centroid"][present, d] * spacing[d]
        elif p in ("coords", "coords_scaled"):
            out[p] = backend.coords(labels, t["count"], present)
            if p == "coords_scaled":
                out[p] = _regionprops.scaled(xp, out[p], spacing)
        else:
            out[p] = t[{"intensity_mean": "imean", "intensity_min": "imin",
                        "intensity_max": "imax"}[p]][present]
    return out


@_on_its_gpu
def find_objects(labels, max_label=0):
    """``scipy.ndimage.find_objects``: each label's bounding box as slices.

    Parameters
    ----------
    labels : numpy.ndarray or cupy.ndarray
        Non-negative integer (or bool) labels.
    max_label : int, optional
        Boxes for labels 1..max_label (larger labels are ignored); 0 (the
        default): up to the largest label.

    Returns
    -------
    list
        Entry ``i`` is a tuple of slices (one per axis) for label ``i + 1``,
        or None where that label has no cells.  Always a host list; on CuPy
        the boxes are computed on the device and one small table is copied.

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.measure import find_objects
    >>> find_objects(np.array([[0, 2],
    ...                        [2, 2]]))
    [None, (slice(0, 2, None), slice(0, 2, None))]
    """
    max_label = _count(max_label, "max_label")
    xp, labels, backend, top = _labels(labels)
    if max_label == 0:
        max_label = top
    elif max_label < top:
        labels = labels * (labels <= max_label)  # larger labels ignored (row 0)
    if labels.size == 0:  # (no cells: no label has a box)
        return [None] * max_label
    if max_label == 0:
        return []
    t = backend.table(labels, tuple(labels.shape), max_label + 1, boxes=True)
    return _slices(t["lo"][1:], t["hi"][1:], t["count"][1:])


# ---------------------------------------------------------------------------
# operations on components
# ---------------------------------------------------------------------------

def _size_order(xp, count, first):
    """Rank (1 = largest) of rows 1.. by (count descending, first ascending);
    rows without cells rank after every present one.  Returns the lookup
    table old label -> rank, 0 for label 0 and labels without cells."""
    rows = count.shape[0]
    lut = xp.zeros(rows, dtype=np.int64)
    if rows > 1:
        order = xp.lexsort(xp.stack([first[1:], -count[1:]]))
        lut[order + 1] = xp.arange(1, rows, dtype=np.int64)
        lut = xp.where(count > 0, lut, 0)
        lut[0] = 0
    return lut


def _lookup(lut, labels):
    """``lut[labels]`` as an array of the labels' shape (0-d arrays too)."""
    flat = labels.reshape(-1)
    if flat.dtype == np.bool_:
        flat = flat.view(np.uint8)
    return lut[flat].reshape(labels.shape)


@_on_its_gpu
def relabel_by_size(labels):
    """Renumber labels by size: 1 = the largest component, 2 the next, ...

    Parameters
    ----------
    labels : numpy.ndarray or cupy.ndarray
        Non-negative integer labels (0 is background and stays 0).

    Returns
    -------
    ndarray
        Same shape and dtype, labels 1..M for the M labels present (gaps
        close).  Of equal sizes, the label whose first cell comes first in
        raster (C) order comes first -- for labels from
        :func:`meshccl.label` that is the smaller label.

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.measure import relabel_by_size
    >>> relabel_by_size(np.array([1, 0, 7, 7, 0, 4, 4]))
    array([3, 0, 1, 1, 0, 2, 2])
    """
    xp, labels, backend, top = _labels(labels)
    t = backend.table(labels, tuple(labels.shape), top + 1, first=True)
    lut = _size_order(xp, t["count"], t["first"]).astype(labels.dtype)
    return _lookup(lut, labels)


@_on_its_gpu
def largest_k(image, k, connectivity=None, *, periodic=False):
    """Keep the ``k`` largest connected components, numbered by size.

    Parameters
    ----------
    image : numpy.ndarray or cupy.ndarray
        Image labelled with :func:`meshccl.label` (equal-valued neighbours
        join; 0 is background).
    k : int
        Components to keep, >= 0.
    connectivity : int, optional
        Orthogonal hops, 1..ndim (default ndim), as :func:`meshccl.label`:
        cc3d's 4 / 8 are 1 / 2 in 2-D, its 6 / 18 / 26 are 1 / 2 / 3 in 3-D.
    periodic : bool or sequence of bool, optional
        Wrap-around axes, as :func:`meshccl.label`.

    Returns
    -------
    ndarray
        The labels of :func:`meshccl.label`'s dtype: 1 = the largest
        component, ..., min(k, N); every other cell 0.  Ties are broken by
        the first cell in raster (C) order.

    Notes
    -----
    cc3d's ``largest_k`` keeps the same components but numbers them
    differently (ascending size, raster order with fastremap, a bool mask
    for k = 1) and breaks ties arbitrarily; here the numbering is always
    by size, as :func:`relabel_by_size`.

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.measure import largest_k
    >>> largest_k(np.array([1, 0, 1, 1, 0, 2, 2, 0, 1], dtype=np.uint8), 2)
    array([0, 0, 1, 1, 0, 2, 2, 0, 0])
    """
    k = _count(k, "k")
    labels, n = _label(image, connectivity, periodic)
    xp, _ = _validate.array_module(labels)
    t = _backend(xp).table(labels, tuple(labels.shape), n + 1, first=True)
    lut = _size_order(xp, t["count"], t["first"])
    lut = xp.where(lut > k, 0, lut).astype(labels.dtype)
    return _lookup(lut, labels)


def _threshold(threshold):
    """(lower, upper) of the sizes kept, from dust's threshold."""
    def number(v):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise TypeError(f"threshold must be a number >= 0 or a pair (lower, upper), "
                            f"got {threshold!r}")
        if not (v >= 0 and np.isfinite(v)):
            raise ValueError(f"threshold must be finite and >= 0, got {threshold!r}")
        return v

    if isinstance(threshold, (tuple, list)):
        if len(threshold) != 2:
            raise ValueError(f"threshold must be a number or a pair (lower, upper), got "
                             f"{threshold!r}")
        lower, upper = number(threshold[0]), number(threshold[1])
        if lower > upper:
            raise ValueError(f"threshold's lower bound must not exceed its upper one, got "
                             f"{threshold!r}")
        return lower, upper
    return number(threshold), None


@_on_its_gpu
def dust(image, threshold, connectivity=None, in_place=False, *, invert=False, periodic=False):
    """Remove the connected components smaller than ``threshold`` (cc3d's ``dust``).

    Parameters
    ----------
    image : numpy.ndarray or cupy.ndarray
        Image labelled with :func:`meshccl.label` (equal-valued neighbours
        join; 0 is background).
    threshold : number or (lower, upper)
        A number: components of fewer cells are removed.  A pair: those
        whose size is outside [lower, upper) are removed.
    connectivity : int, optional
        Orthogonal hops, 1..ndim (default ndim, cc3d's default 26 in 3-D).
    in_place : bool, optional
        Write into ``image`` instead of a copy.
    invert : bool, optional
        Remove the other components instead (size >= threshold, or inside
        [lower, upper)), as cc3d's ``invert``.
    periodic : bool or sequence of bool, optional
        Wrap-around axes, as :func:`meshccl.label`.

    Returns
    -------
    ndarray
        ``image`` (or its copy) with the removed components' cells set to 0;
        the rest keep their values.

    Notes
    -----
    ``skimage.morphology.remove_small_objects(ar, max_size=t - 1,
    connectivity=c)`` of a bool image equals ``dust(ar, t, c)``; skimage
    removes sizes up to ``max_size`` (its older ``min_size`` removed sizes
    below it, like ``threshold`` here), labels only bool input (integer
    input is taken as labels already), and defaults to connectivity 1
    where this function, like cc3d, joins all ndim hops.

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.measure import dust
    >>> dust(np.array([3, 0, 5, 5, 5, 0, 3, 3], dtype=np.uint8), 2)
    array([0, 0, 5, 5, 5, 0, 3, 3], dtype=uint8)
    """
    lower, upper = _threshold(threshold)
    if not isinstance(in_place, (bool, np.bool_)):
        raise TypeError(f"in_place must be a bool, got {in_place!r}")
    _, image = _validate.array_module(image)
    labels, n = _label(image, connectivity, periodic)
    xp, _ = _validate.array_module(labels)
    count = _backend(xp).table(labels, tuple(labels.shape), n + 1)["count"]
    keep = count >= lower
    if upper is not None:
        keep &= count < upper
    if invert:
        keep = ~keep
    keep[0] = True
    out = image if in_place else image.copy()
    out[~_lookup(keep, labels)] = 0
    return out


@_on_its_gpu
def size_histogram(labels, log_bins=False):
    """How many components have each size (the cluster-size distribution).

    Parameters
    ----------
    labels : numpy.ndarray or cupy.ndarray
        Non-negative integer labels (0: background, not counted; labels
        without cells are not components).
    log_bins : bool, optional
        Bins [1, 2), [2, 4), [4, 8), ... instead of one per size.

    Returns
    -------
    hist : ndarray
        int64: components per bin.
    edges : ndarray
        int64, ``len(hist) + 1`` bin edges as ``numpy.histogram``'s: bin i
        holds sizes in [edges[i], edges[i + 1]).  Without components,
        ``hist`` is empty and ``edges`` is ``[1]``.

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.measure import size_histogram
    >>> labels = np.array([1, 0, 2, 2, 0, 3, 3, 3, 0, 4, 4, 4])
    >>> size_histogram(labels)
    (array([1, 1, 2]), array([1, 2, 3, 4]))
    >>> size_histogram(labels, log_bins=True)
    (array([1, 3]), array([1, 2, 4]))
    """
    xp, labels, backend, top = _labels(labels)
    sizes = backend.table(labels, tuple(labels.shape), top + 1)["count"][1:]
    if sizes.shape[0] == 0:  # no label but 0
        return xp.zeros(0, dtype=np.int64), xp.ones(1, dtype=np.int64)
    if log_bins:
        # frexp's exponent e: 2**(e - 1) <= s < 2**e, exactly (sizes < 2**53)
        e = xp.frexp(sizes.astype(np.float64))[1].astype(np.int64)
        hist = xp.bincount(e, minlength=1)[1:]  # e = 0: labels without cells
        edges = 2 ** xp.arange(hist.shape[0] + 1, dtype=np.int64)
    else:
        hist = xp.bincount(sizes, minlength=1)[1:]
        edges = xp.arange(1, hist.shape[0] + 2, dtype=np.int64)
    return hist.astype(np.int64), edges


@_on_its_gpu
def largest_fraction(image, connectivity=None, *, phase=None, periodic=False, labelled=False):
    """The largest component's share of its phase's cells (the percolation order parameter).

    Parameters
    ----------
    image : numpy.ndarray or cupy.ndarray
        Image labelled with :func:`meshccl.label`, or labels already
        (``labelled=True``).
    connectivity : int, optional
        Orthogonal hops, 1..ndim (default ndim), as :func:`meshccl.label`.
    phase : scalar, optional
        Only the cells equal to ``phase`` count (a Potts state, say): the
        fraction is the largest component of that value over all cells of
        that value.  Default: every non-zero cell (every non-zero label).
    periodic : bool or sequence of bool, optional
        Wrap-around axes, as :func:`meshccl.label`.
    labelled : bool, optional
        ``image`` holds labels (non-negative integers) and is not labelled
        again; ``connectivity``, ``periodic`` and ``phase`` are then not
        allowed.

    Returns
    -------
    float
        Cells of the largest component over cells of all components; 0.0
        when there are none.  On CuPy the call waits for the device.

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.measure import largest_fraction
    >>> image = np.array([1, 1, 1, 0, 1, 0, 2, 2], dtype=np.uint8)
    >>> largest_fraction(image)
    0.5
    >>> largest_fraction(image, phase=1)
    0.75
    """
    if labelled:
        if connectivity is not None or phase is not None or periodic is not False:
            raise ValueError("labelled=True takes labels as they are: connectivity, phase and "
                             "periodic must be left out")
        xp, labels, backend, top = _labels(image)
    else:
        if phase is not None:
            if not np.isscalar(phase):
                raise TypeError(f"phase must be a scalar, got {phase!r}")
            xp, image = _validate.array_module(image)
            image = (image == phase).view(np.uint8)  # labelled as bool is
        labels, top = _label(image, connectivity, periodic)
        xp, _ = _validate.array_module(labels)
        backend = _backend(xp)
    sizes = backend.table(labels, tuple(labels.shape), top + 1)["count"][1:]
    if sizes.shape[0] == 0:
        return 0.0
    biggest, total = (int(v) for v in xp.stack([sizes.max(), sizes.sum()]).tolist())
    return biggest / total if total else 0.0


# ---------------------------------------------------------------------------
# region adjacency
# ---------------------------------------------------------------------------

def _contact_table(labels, connectivity, surface_area, anisotropy):
    from . import _contacts

    xp, labels, _, top = _labels(labels)
    k = _contacts.hops(connectivity, labels.ndim)
    offsets, weights = _contacts.areas(labels.ndim, k, bool(surface_area), anisotropy)
    return _contacts.pair_table(xp, labels, top, offsets, weights, not surface_area)


@_on_its_gpu
def contact_pairs(labels, connectivity=None, *, surface_area=False, anisotropy=None):
    """Every pair of touching labels and its contacts, as arrays (a graph's edges).

    Parameters
    ----------
    labels : numpy.ndarray or cupy.ndarray
        Non-negative integer (or bool) labels, any ndim; 0 is background
        and touches nothing.
    connectivity : int, optional
        Which cells touch: orthogonal hops, 1..ndim, as
        :func:`meshccl.label` (default ndim: faces, edges and corners), or
        cc3d's spelling, the number of neighbours (4 / 8 in 2-D, 6 / 18 /
        26 in 3-D).
    surface_area : bool, optional
        Weigh each contact by the area of the face two cells share (the
        product of the other axes' ``anisotropy``); edge and corner
        contacts weigh 0 (their pairs are still listed), as cc3d's.
        Default False: count the neighbouring cell pairs.
    anisotropy : sequence of float, optional
        The cell's size along each axis (default all 1).  cc3d's three
        weights (x, y, z) are taken for a 1-D or 2-D image too, with
        cc3d's meaning: a 2-D image ignores z, a 1-D one is a volume of
        one row, its y and z weights multiplying every area.

    Returns
    -------
    pairs : ndarray
        int64 ``(m, 2)``, ``pairs[:, 0] < pairs[:, 1]``, in ascending order.
    values : ndarray
        ``(m,)``: int64 numbers of neighbouring cell pairs, or float64 areas
        with ``surface_area``.  Both on the labels' device.

    See Also
    --------
    contacts : the same as cc3d's dict.

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.measure import contact_pairs
    >>> from meshccl.graph import Edges, connected_components
    >>> labels = np.array([[1, 1, 2],
    ...                    [0, 3, 2]])
    >>> pairs, counts = contact_pairs(labels, connectivity=1)
    >>> pairs, counts
    (array([[1, 2],
           [1, 3],
           [2, 3]]), array([1, 1, 1]))
    >>> connected_components(Edges(pairs[:, 0], pairs[:, 1], 4))[0]  # 0 alone, 1-2-3
    2
    """
    return _contact_table(labels, connectivity, surface_area, anisotropy)


@_on_its_gpu
def contacts(labels, connectivity=None, surface_area=True, anisotropy=None):
    """Touching labels and their contact, as cc3d's ``contacts``.

    Parameters
    ----------
    labels : numpy.ndarray or cupy.ndarray
        Non-negative integer (or bool) labels, any ndim; 0 is background.
    connectivity : int, optional
        Orthogonal hops, 1..ndim (default ndim), or cc3d's 4 / 8 (2-D),
        6 / 18 / 26 (3-D); see :func:`contact_pairs`.
    surface_area : bool, optional
        True (cc3d's default): the area of the shared faces (edge and
        corner contacts add 0); False: the number of neighbouring cell
        pairs.
    anisotropy : sequence of float, optional
        Cell size per axis, for the areas (see :func:`contact_pairs`).

    Returns
    -------
    dict
        ``{(a, b): value}`` with ``a < b`` Python ints and float values, in
        ascending order of the pairs.  A host dict on either backend (CuPy
        input: the table is made on the device and copied once).

    Notes
    -----
    Equal to ``cc3d.contacts`` with its connectivity (cc3d 4.1 counts some
    neighbour pairs twice on the image's border at connectivity 8 / 26
    with ``surface_area=False``; here each pair of cells counts once).
    Values are sums in float64 (cc3d's in float32).

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.measure import contacts, region_graph
    >>> labels = np.array([[1, 1, 2],
    ...                    [0, 3, 2]])
    >>> contacts(labels)
    {(1, 2): 1.0, (1, 3): 1.0, (2, 3): 1.0}
    >>> contacts(labels, surface_area=False, connectivity=8)
    {(1, 2): 2.0, (1, 3): 2.0, (2, 3): 2.0}
    >>> region_graph(labels, connectivity=1) == {(1, 2), (1, 3), (2, 3)}
    True
    """
    pairs, values = _contact_table(labels, connectivity, surface_area, anisotropy)
    pairs, values = (a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else a
                     for a in (pairs, values))
    return {(a, b): float(v) for (a, b), v in zip(pairs.tolist(), values.tolist())}


@_on_its_gpu
def region_graph(labels, connectivity=None):
    """The set of touching label pairs ``(a, b)``, ``a < b``, as cc3d's ``region_graph``.

    Parameters
    ----------
    labels : numpy.ndarray or cupy.ndarray
        Non-negative integer (or bool) labels; 0 is background.
    connectivity : int, optional
        Orthogonal hops, 1..ndim (default ndim), or cc3d's 4 / 8 / 6 / 18 / 26.

    Returns
    -------
    set of tuple of int

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.measure import region_graph
    >>> sorted(region_graph(np.array([[1, 0, 2],
    ...                               [1, 3, 2]]), connectivity=2))
    [(1, 3), (2, 3)]
    """
    pairs, _ = _contact_table(labels, connectivity, False, None)
    pairs = pairs.get() if hasattr(pairs, "get") and not isinstance(pairs, np.ndarray) else pairs
    return {(a, b) for a, b in pairs.tolist()}
