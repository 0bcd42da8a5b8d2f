"""The moment-based columns of :func:`meshccl.measure.regionprops_table`.

Which scikit-image properties are per-label reductions (and so computed
here from one pass of :func:`meshccl._moments.label_sums` after the
count / box table), which are refused (they need each region's image:
contours, hulls, fills, ...), and the columns of the former, built with
array code over the (labels x terms) table on the labels' device.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from . import _moments

#: properties computed here (scikit-image's names); label, area, bbox,
#: centroid, intensity_mean / _min / _max and coords are measure.py's own
MORE = ("num_pixels", "area_bbox", "extent", "equivalent_diameter_area", "centroid_local",
        "moments", "moments_central", "moments_normalized", "moments_hu", "inertia_tensor",
        "inertia_tensor_eigvals", "eccentricity", "orientation", "axis_major_length",
        "axis_minor_length", "intensity_std", "centroid_weighted", "centroid_weighted_local",
        "moments_weighted", "moments_weighted_central", "moments_weighted_normalized",
        "moments_weighted_hu")
#: scikit-image properties that need more than a per-label sum
REFUSED = ("area_convex", "area_filled", "euler_number", "feret_diameter_max", "image",
           "image_convex", "image_filled", "image_intensity", "intensity_median", "perimeter",
           "perimeter_crofton", "slice", "solidity")
#: properties that read the intensity image (as scikit-image's list)
NEEDS_INTENSITY = ("intensity_mean", "intensity_min", "intensity_max", "intensity_std",
                   "centroid_weighted", "centroid_weighted_local", "moments_weighted",
                   "moments_weighted_central", "moments_weighted_normalized",
                   "moments_weighted_hu")
#: defined for 2-D label images only (as in scikit-image)
ONLY_2D = ("eccentricity", "orientation", "moments_hu", "moments_weighted_hu")
#: defined for 2-D and 3-D label images only (as in scikit-image)
ONLY_2D_3D = ("axis_major_length", "axis_minor_length")
#: skimage's moment order
ORDER = 3

_RAW = ("moments", "moments_central", "moments_normalized")
_SECOND = ("inertia_tensor", "inertia_tensor_eigvals", "eccentricity", "orientation",
           "axis_major_length", "axis_minor_length")
_WRAW = ("moments_weighted", "moments_weighted_central", "moments_weighted_normalized")


def check_names(properties, known):
    """Refuse names that are not computed, saying which are skimage's."""
    refused = [p for p in properties if p in REFUSED]
    if refused:
        raise ValueError(
            f"properties {refused} are not computed here: they need each region's own image "
            "(contours, convex hulls, filled holes, medians), not a per-label sum; use "
            "skimage.measure.regionprops_table for them")
    unknown = [p for p in properties if p not in known]
    if unknown:
        raise ValueError(f"properties {unknown} are not computed here; choose from {known}")


def check_intensity(intensity, labels_ndim):
    """A clear refusal of a channel axis (skimage's multichannel intensity)."""
    if intensity is None or not hasattr(intensity, "ndim"):
        return
    if intensity.ndim == labels_ndim + 1:
        raise ValueError(
            f"intensity_image has one axis more than label_image ({intensity.ndim} vs "
            f"{labels_ndim}): multi-channel intensity is not supported; measure one channel "
            "at a time (intensity_image[..., c])")


def spacing(value, ndim):
    """skimage's ``spacing``: None (all 1), a number, or one per axis; each
    finite and, here, positive.  A tuple of floats."""
    if value is None:
        return (1.0,) * ndim
    arr = np.asarray(value)
    if arr.ndim == 0:
        items = [arr.item()] * ndim
    elif arr.shape == (ndim,):
        items = arr.tolist()
    else:
        raise ValueError(f"spacing must be a number or a sequence of {ndim} numbers (one per "
                         f"axis), got {value!r}")
    for s in items:
        if isinstance(s, bool) or not isinstance(s, numbers.Real):
            raise TypeError(f"spacing must hold real numbers, got {value!r}")
        if not (math.isfinite(s) and s > 0):
            raise ValueError(f"spacing must be finite and > 0, got {value!r}")
    return tuple(float(s) for s in items)


def check_ndim(properties, ndim, spacing_):
    """scikit-image's limits on some properties (same exception types)."""
    for p in properties:
        if p in ONLY_2D and ndim != 2:
            raise NotImplementedError(f"property {p} is defined for 2-D label images only, got "
                                      f"a {ndim}-D one")
        if p in ONLY_2D_3D and ndim not in (2, 3):
            raise ValueError(f"property {p} is defined for 2-D and 3-D label images only, got a "
                             f"{ndim}-D one")
        if p in ("moments_hu", "moments_weighted_hu") and any(s != 1.0 for s in spacing_):
            raise NotImplementedError(f"property {p} supports spacing 1 only (as in "
                                      f"scikit-image), got spacing {spacing_}")


def _names(prop, shape, sep):
    return [sep.join(map(str, (prop,) + ind)) for ind in np.ndindex(*shape)]


def _divide(xp, a, b):
    """a / b with IEEE results (inf, NaN) and no warnings, as skimage's."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return a / b


def wanted_sums(properties, ndim):
    """What the pass of :func:`meshccl._moments.label_sums` must give for
    ``properties``: (plain monomials, weighted monomials, whether the
    intensity's squared deviations), empty where none of :data:`MORE`
    needs it."""
    wanted = [p for p in dict.fromkeys(properties) if p in MORE]
    plain, weighted = set(), set()
    if any(p in _RAW for p in wanted):
        plain.update(_moments.exponents(ndim, ORDER))
    if "moments_hu" in wanted:
        plain.update(_moments.exponents(ndim, ORDER, total=True))
    if any(p in _SECOND for p in wanted):
        plain.update(_moments.exponents(ndim, 2, total=True))
    if "centroid_local" in wanted:
        plain.update(_moments.exponents(ndim, 1, total=True))
    if any(p in _WRAW for p in wanted):
        weighted.update(_moments.exponents(ndim, ORDER))
    if "moments_weighted_hu" in wanted:
        weighted.update(_moments.exponents(ndim, ORDER, total=True))
    if "centroid_weighted" in wanted or "centroid_weighted_local" in wanted:
        weighted.update(_moments.exponents(ndim, 1, total=True))
    return _moments.closure(plain), _moments.closure(weighted), "intensity_std" in wanted


def columns(xp, properties, t, labels, intensity, present, spacing_, sep, sums=None):
    """``{property: {column name: array}}`` for the properties of :data:`MORE`.

    ``t``: measure._table's per-label table (counts, boxes, intensity
    mean); ``present``: the labels with cells, ascending; ``spacing_``:
    from :func:`spacing`; ``sums``: the sums of :func:`wanted_sums` for the
    rows of ``present``, where already computed (chunk by chunk, by
    ``meshccl.dask``), else None: one pass over ``labels`` (and
    ``intensity``) gives them.
    """
    wanted = [p for p in dict.fromkeys(properties) if p in MORE]
    if not wanted:
        return {}
    ndim = t["lo"].shape[1]
    m = int(present.shape[0])
    s = spacing_
    count = t["count"][present]
    lo = t["lo"][present]
    area = count.astype(np.float64) * float(np.prod(s))

    plain, weighted, spread = wanted_sums(wanted, ndim)
    if sums is None:
        sums = {}
        if plain or weighted or spread:
            row_of = xp.full(t["count"].shape[0], -1, dtype=np.int64)
            row_of[present] = xp.arange(m, dtype=np.int64)
            sums = _moments.label_sums(xp, labels, row_of, lo, plain, weighted,
                                       intensity if (weighted or spread) else None,
                                       t["imean"][present] if spread else None)

    unit = [tuple(int(d == e) for e in range(ndim)) for d in range(ndim)]
    zero = (0,) * ndim
    full = _moments.exponents(ndim, ORDER)
    hu_terms = _moments.exponents(ndim, ORDER, total=True)

    def derived(table, terms):
        """Raw (spacing units), local centroid, central and normalised."""
        raw = _moments.scale(xp, table, terms, s)
        col = {p: j for j, p in enumerate(terms)}
        # (every set of terms asked for holds the first-order ones)
        centre = xp.stack([_divide(xp, raw[:, col[u]], raw[:, col[zero]]) for u in unit], axis=1)
        cache = {"raw": raw, "col": col, "centre": centre}

        def mu():
            if "mu" not in cache:
                with np.errstate(all="ignore"):
                    cache["mu"] = _moments.central(xp, raw, terms, centre)
            return cache["mu"]

        def nu():
            if "nu" not in cache:
                with np.errstate(all="ignore"):
                    cache["nu"] = _moments.normalized(xp, mu(), terms, s)
            return cache["nu"]
        return cache, mu, nu

    def pick(table, col, terms):
        return xp.stack([table[:, col[p]] for p in terms], axis=1)

    out = {}
    if plain:
        pc, pmu, pnu = derived(sums["plain"], plain)
    if weighted:
        wc, wmu, wnu = derived(sums["weighted"], weighted)
    tensor = ev = None
    if any(p in _SECOND for p in wanted):
        with np.errstate(all="ignore"):
            tensor = _moments.inertia_tensor(xp, pick(pmu(), pc["col"], _moments.exponents(
                ndim, 2, total=True)), _moments.exponents(ndim, 2, total=True))
        ev = _moments.eigenvalues(xp, tensor)

    def split(prop, table):
        """Columns of a (m, *shape) table, skimage's names."""
        shape = table.shape[1:]
        flat = table.reshape(m, int(np.prod(shape)))
        return dict(zip(_names(prop, shape, sep), (flat[:, j] for j in range(flat.shape[1]))))

    def grid(table, col):
        return pick(table, col, full).reshape((m,) + (ORDER + 1,) * ndim)

    for p in wanted:
        if p == "num_pixels":
            out[p] = {p: count.astype(np.int64)}
        elif p == "area_bbox":
            out[p] = {p: _area_bbox(xp, t, present, s)}
        elif p == "extent":
            out[p] = {p: _divide(xp, area, _area_bbox(xp, t, present, s))}
        elif p == "equivalent_diameter_area":
            out[p] = {p: (2 * ndim * area / np.pi) ** (1 / ndim)}
        elif p == "centroid_local":
            out[p] = split(p, pc["centre"])
        elif p == "moments":
            out[p] = split(p, grid(pc["raw"], pc["col"]))
        elif p == "moments_central":
            out[p] = split(p, grid(pmu(), pc["col"]))
        elif p == "moments_normalized":
            out[p] = split(p, grid(pnu(), pc["col"]))
        elif p == "moments_hu":
            with np.errstate(all="ignore"):
                out[p] = split(p, _moments.hu(xp, pick(pnu(), pc["col"], hu_terms), hu_terms))
        elif p == "inertia_tensor":
            out[p] = split(p, tensor)
        elif p == "inertia_tensor_eigvals":
            out[p] = split(p, ev)
        elif p == "eccentricity":
            with np.errstate(all="ignore"):
                e = xp.sqrt(1 - ev[:, 1] / xp.where(ev[:, 0] == 0, 1.0, ev[:, 0]))
            out[p] = {p: xp.where(ev[:, 0] == 0, 0.0, e)}
        elif p == "orientation":
            a, b, c = tensor[:, 0, 0], tensor[:, 0, 1], tensor[:, 1, 1]
            tie = xp.where(b < 0, np.pi / 4, -np.pi / 4)
            out[p] = {p: xp.where(a - c == 0, tie, 0.5 * xp.arctan2(-2 * b, c - a))}
        elif p in ("axis_major_length", "axis_minor_length"):
            major = p == "axis_major_length"
            if ndim == 2:
                value = 4 * xp.sqrt(ev[:, 0 if major else 1])
            else:
                w = ev[:, 0] + ev[:, 1] - ev[:, 2] if major else -ev[:, 0] + ev[:, 1] + ev[:, 2]
                value = xp.sqrt(10 * xp.maximum(w, 0.0))
            out[p] = {p: value}
        elif p == "intensity_std":
            out[p] = {p: xp.sqrt(_divide(xp, sums["spread"], count.astype(np.float64)))}
        elif p == "centroid_weighted_local":
            out[p] = split(p, wc["centre"])
        elif p == "centroid_weighted":
            out[p] = split(p, wc["centre"] + lo.astype(np.float64) * xp.asarray(s)[None, :])
        elif p == "moments_weighted":
            out[p] = split(p, grid(wc["raw"], wc["col"]))
        elif p == "moments_weighted_central":
            out[p] = split(p, grid(wmu(), wc["col"]))
        elif p == "moments_weighted_normalized":
            out[p] = split(p, grid(wnu(), wc["col"]))
        elif p == "moments_weighted_hu":
            with np.errstate(all="ignore"):
                out[p] = split(p, _moments.hu(xp, pick(wnu(), wc["col"], hu_terms), hu_terms))
    return out


def scaled(xp, cells, spacing_):
    """skimage's ``coords_scaled``: each label's coordinates (an object
    array of (count, ndim) int64 arrays) in float64 times the spacing."""
    factor = xp.asarray(spacing_, dtype=np.float64)
    out = np.empty(len(cells), dtype=object)
    for i, c in enumerate(cells):  # (an object column: one array per label)
        out[i] = c * factor
    return out


def _area_bbox(xp, t, present, s):
    size = (t["hi"][present] - t["lo"][present] + 1).astype(np.float64)
    return xp.prod(size, axis=1) * float(np.prod(s))
