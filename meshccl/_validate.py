"""Validate and normalise the arguments of :func:`meshccl.label`.

The result is a :class:`Problem`, made once and passed down to either
backend: a C-contiguous flat view of the values in a dtype the kernels know
(unsigned integers of 1, 2, 4 or 8 bytes, float32 or float64; the input's
own dtype with a tolerance), the squeezed shape the kernels see, the
background as the kernels' key, the connectivity, the lattice features,
the output dtype, and what the call asks for (numbering, counts, method).
Nothing here launches a kernel or waits for the GPU.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from . import neighbourhood

_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_TWO63 = 2**63
_TWO64 = 2**64


#: the ``method=`` values of :func:`meshccl.label`: 'auto' = 'unionfind' (one
#: pass); the rest are Hawick et al.'s iterative methods, kernels A-D (GPU
#: and CPU) and CPU I / CPU II (CPU only)
METHODS = ("auto", "unionfind", "A", "B", "C", "D", "cpu1", "cpu2")
ITERATIVE = ("A", "B", "C", "D", "cpu1", "cpu2")
CPU_ONLY = ("cpu1", "cpu2")


@dataclass
class Problem:
    """One labelling call, as both backends take it."""

    xp: object              # numpy or cupy
    values: object          # flat, C-contiguous array of the kernel dtype
    shape: tuple            # squeezed shape (no axis of length 1), at least 1-D
    out_shape: tuple        # the caller's shape
    connectivity: int       # connectivity on the squeezed shape
    has_bg: bool            # some value is the background
    # the background as the kernels compare it: a scalar of the values' dtype
    # (ints, and every dtype with a tolerance but floats), int64 for floats
    # without a tolerance (truncated keys), float64 for floats with one
    bgkey: object
    work_dtype: np.dtype    # int32 or int64: the parent / label array
    out_dtype: np.dtype     # what the caller gets
    swapped: bool = False   # labelled with axes 0 and 2 swapped (skimage's order)
    periodic: int = 0       # bit k: squeezed axis k wraps around
    mask: object = None     # flat uint8 array (0 = background) or None
    bonds: object = None    # (K, n) uint8 array (0 = closed) or None
    bond_rows: object = None  # table row -> row of bonds (neighbourhood.bond_rows)
    tolerance: object = None  # None: equal values join; float (float input), int (integers)
    label_axes: object = None  # bit k: squeezed axis k is labelled along (None: all)
    no_left: bool = False   # the last squeezed axis is not labelled along
    first: bool = False     # numbering='first-cell' (else 'raster': 1..N)
    counts: bool = False    # return_counts: cells per label too
    statistics: bool = False  # return_statistics: measure.statistics of the labels too
    method: str = "auto"    # one of METHODS
    max_iterations: object = None  # the iterative methods' cap on passes (None: none)
    # an explicit half neighbourhood on the squeezed shape (a structure of
    # meshccl.ndimage.label that no connectivity names), else None
    offsets: object = None
    # the values are packed Ising spins (:class:`PackedSpins`' words, flat):
    # 0 labels the +1 spins, 1 the -1 spins; None: the values are cells
    packed_flip: object = None
    # bool input: every foreground cell equals every other (the runsnd chain's case)
    binary: bool = False

    @property
    def size(self) -> int:
        return int(np.prod(self.out_shape, dtype=np.int64))


@dataclass(frozen=True)
class PackedSpins:
    """A phase of :class:`meshccl.sim.Ising`'s packed Metropolis spins, the
    input that the labelling hooks hand :func:`meshccl.label` in place of
    the phase's bool image: the GPU chains read the packed words
    (``_kernels/packed_spins.cuh``) and no pass writes the image.

    ``words``: the CuPy uint64 array (2, rows, W) of ``meshccl/_kernels/ising.cu``
    (one array per colour; rows = the product of all sides but the last,
    W = ceil(nx / 32)); ``shape``: the lattice, 2-D, even sides; ``phase``:
    ``'up'`` (the +1 spins) or ``'down'`` (the -1 spins).  Labelled as
    ``label(image, connectivity=c, periodic=True)`` of that image.
    """

    words: object
    shape: tuple
    phase: str


def prepare_packed(spins, connectivity, periodic=True, return_counts=False,
                   **others) -> Problem:
    """The :class:`Problem` of a :class:`PackedSpins` input: the lattice's
    shape, background 0 (cells outside the phase), every axis periodic,
    counts if asked.  ``others``: the rest of :func:`meshccl.label`'s
    arguments, which must keep their defaults (the packed chain takes none
    of them)."""
    words = spins.words
    if not type(words).__module__.startswith("cupy"):
        raise TypeError(f"packed spins must be a CuPy uint64 array, got "
                        f"{type(spins.words).__module__}.{type(spins.words).__name__}")
    import cupy

    shape = tuple(int(n) for n in spins.shape)
    if len(shape) != 2 or min(shape) < 2 or any(n % 2 for n in shape):
        raise ValueError(f"packed spins need a 2-D lattice with even sides >= 2, got shape "
                         f"{spins.shape!r}")
    ny, nx = shape
    expected = (2, ny, -(-nx // 32))
    if words.dtype != np.uint64 or tuple(words.shape) != expected or not words.flags.c_contiguous:
        raise ValueError(f"packed spins of a lattice of shape {shape} must be a C-contiguous "
                         f"uint64 array of shape {expected}, got {words.dtype} "
                         f"{tuple(words.shape)}")
    if spins.phase not in ("up", "down"):
        raise ValueError(f"phase of packed spins must be 'up' or 'down', got {spins.phase!r}")
    if _periodic(periodic, 2) != (True, True):
        raise ValueError(f"packed spins are labelled on their torus: periodic must be True, "
                         f"got {periodic!r}")
    changed = [k for k, v in others.items() if v is not None and v is not False
               and not (k == "numbering" and v == "raster") and not (k == "method" and v == "auto")]
    if changed:
        raise ValueError(f"packed spins take connectivity, periodic=True and return_counts "
                         f"only; got "
                         f"{', '.join(sorted(changed))}")
    conn = _connectivity(connectivity, 2)
    size = ny * nx
    work = np.dtype(np.int32) if size < 2**31 - 1 else np.dtype(np.int64)
    return Problem(cupy, words.reshape(-1), shape, shape, conn, True, np.uint8(0), work, work,
                   periodic=3, counts=_truth(return_counts, "return_counts"),
                   packed_flip=0 if spins.phase == "up" else 1)


def array_module(label_image):
    """Return (module, array) for NumPy or CuPy input; TypeError otherwise."""
    if isinstance(label_image, np.ndarray):
        return np, label_image
    mod = type(label_image).__module__
    if mod.startswith("cupy"):
        import cupy

        return cupy, label_image
    if np.isscalar(label_image) or isinstance(label_image, (list, tuple)):
        return np, np.asarray(label_image)
    raise TypeError(
        "label_image must be a NumPy or CuPy array, got "
        f"{type(label_image).__module__}.{type(label_image).__name__}"
    )


def _scalar(value):
    """A 0-d array as its Python scalar (skimage takes them as numbers)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value.item()
    return value


def _background_value(background):
    """The background of non-bool input as skimage reads it: an integer
    (floats truncated towards zero, as its cast to a C long does)."""
    if background is None:
        return 0
    b = _scalar(background)
    if isinstance(b, (bool, np.bool_)):
        return int(b)
    if isinstance(b, numbers.Integral):
        b = int(b)
        if not -_TWO63 <= b < _TWO63:
            raise OverflowError(f"background must fit in int64, got {background!r}")
        return b
    if isinstance(b, numbers.Real):
        f = float(b)
        if np.isnan(f):
            raise ValueError(f"background must be a number, got {background!r}")
        if not -_TWO63 <= f < _TWO63:
            raise OverflowError(f"background must fit in int64, got {background!r}")
        return int(f)
    raise TypeError(f"background must be an int, float or bool scalar, got {background!r}")


def _connectivity(connectivity, ndim: int, what: str = "") -> int:
    """skimage's rule: a real number in [1, ndim] (bool and 0-d arrays
    too); a neighbour counts when it is at most that many orthogonal hops
    away, so a fraction is floored (1.5 is 1)."""
    if connectivity is None:
        return ndim
    c = _scalar(connectivity)
    if not isinstance(c, numbers.Real):
        raise TypeError(f"connectivity must be a number in [1, ..., {max(ndim, 1)}], "
                        f"got {connectivity!r}")
    if not 1 <= c <= max(ndim, 1):
        what = what or f"a {ndim}-D label_image"
        raise ValueError(
            f"connectivity for {what} must be in [1, ..., {max(ndim, 1)}], got {connectivity!r}"
        )
    return int(c)


def _axes(axes, ndim):
    """The axes to label along, as a sorted tuple (None: all of them)."""
    if axes is None:
        return tuple(range(ndim))
    if isinstance(axes, (numbers.Integral,)) and not isinstance(axes, (bool, np.bool_)):
        axes = (axes,)
    try:
        items = tuple(axes)
    except TypeError:
        raise TypeError(f"axes must be None, an int or a sequence of ints, got {axes!r}") from None
    if not items:
        raise ValueError("axes must name at least one axis, got ()")
    out = []
    for a in items:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, numbers.Integral):
            raise TypeError(f"axes must be None, an int or a sequence of ints, got {axes!r}")
        if not -ndim <= int(a) < ndim:
            raise ValueError(f"axes entry {int(a)} is out of range for a {ndim}-D label_image")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"axes must not repeat an axis, got {axes!r}")
    return tuple(sorted(out))


def _warn_float_keys(x):
    """Float input without a tolerance is truncated to int64 keys, as
    skimage's cast does; NaN, inf and values beyond int64 have no integer,
    and both backends read them as that cast reads them on x86-64: the
    int64 minimum (one key for all of them, which the kernels map on the
    device, with no wait for it).  On NumPy input say so, as NumPy's cast
    does in skimage."""
    if x.size and not np.all((x >= -_TWO63) & (x < _TWO63)):
        import warnings

        warnings.warn("label_image contains NaN, inf or values beyond int64; they are "
                      "labelled as the int64 minimum, as skimage's cast to integers reads "
                      "them", RuntimeWarning, stacklevel=4)


def _periodic(periodic, ndim):
    if isinstance(periodic, (bool, np.bool_)):
        return (bool(periodic),) * ndim
    try:
        flags = tuple(periodic)
    except TypeError:
        raise TypeError(f"periodic must be a bool or a sequence of {ndim} bools, got {periodic!r}") from None
    if len(flags) != ndim or not all(isinstance(f, (bool, np.bool_)) for f in flags):
        raise ValueError(
            f"periodic must be a bool or a sequence of {ndim} bools (one per axis of "
            f"label_image), got {periodic!r}")
    return tuple(bool(f) for f in flags)


def _tolerance(tolerance, dt):
    """The tolerance in the domain of values of dtype ``dt``: a float for
    float input; for integer and bool input an exact int, floored
    (``|a - b| <= 1.5`` holds for integers exactly when ``|a - b| <= 1``)
    and saturated at 2**64 - 1, the largest difference of two 64-bit
    integers -- never through a double, which holds integers exactly only
    up to 2**53."""
    if tolerance is None:
        return None
    tolerance = _scalar(tolerance)
    if isinstance(tolerance, (bool, np.bool_)) or not isinstance(tolerance, numbers.Real):
        raise TypeError(f"tolerance must be a non-negative number or None, got {tolerance!r}")
    if isinstance(tolerance, numbers.Integral):
        t = int(tolerance)
        if t < 0:
            raise ValueError(f"tolerance must be a finite number >= 0, got {tolerance!r}")
    else:
        t = float(tolerance)
        if not np.isfinite(t) or t < 0:
            raise ValueError(f"tolerance must be a finite number >= 0, got {tolerance!r}")
    if dt.kind == "f":
        return float(t)
    return min(int(t), _TWO64 - 1)  # (int() of a float >= 0 floors it, exactly)


def _tolerance_background(value_dtype, background):
    """``(has_bg, key)`` with a tolerance: the background matched exactly, as
    a scalar of the values' own dtype for integer values (compared as
    integers, exactly past 2**53; a fraction or a value outside the dtype
    matches no cell) and as a float64 for float values."""
    b = 0 if background is None else _scalar(background)
    if isinstance(b, (bool, np.bool_)):
        b = int(b)
    if not isinstance(b, numbers.Real):
        raise TypeError(f"background must be an int, float or bool scalar, got {background!r}")
    if np.isnan(float(b)):
        raise ValueError(f"background must be a number, got {background!r}")
    dt = np.dtype(value_dtype)
    if dt.kind == "f":
        return True, np.float64(b)
    if not isinstance(b, numbers.Integral):
        if not float(b).is_integer():
            return False, dt.type(0)
        b = int(float(b))
    info = np.iinfo(dt)
    if not info.min <= int(b) <= info.max:
        return False, dt.type(0)
    return True, dt.type(int(b))


def _is_one(background):
    """skimage's test for bool input: ``background == 1`` labels the False
    cells (any value that is not equal to 1 labels the True cells)."""
    try:
        return bool(background == 1)
    except (TypeError, ValueError):
        return False


def _bool_bytes(xp, x):
    """Bool input as uint8 0 / 1.  A bool array may hold bytes other than 0
    and 1 (a view of other data); NumPy and skimage read every non-zero
    byte as True, so those are mapped to 1 (a copy only when there are
    some; on the GPU always, which needs no wait for the device)."""
    u8 = x.view(np.uint8)
    if xp is np and (u8.size == 0 or int(u8.max()) <= 1):
        return u8
    return (u8 != 0).view(np.uint8)


def _bool_array(xp, arr, name, shape):
    """A bool array of ``shape`` on the image's device, flat uint8, C order."""
    if arr is None:
        return None
    if xp is np and type(arr).__module__.startswith("cupy"):
        arr = arr.get()
    arr = xp.asarray(arr)
    if arr.dtype != np.bool_:
        raise TypeError(f"{name} must be a bool array, got dtype {arr.dtype}")
    if tuple(arr.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(arr.shape)}")
    return xp.ascontiguousarray(arr).view(np.uint8)


def _truth(value, name):
    """Any value read for its truth, as skimage reads ``return_num``."""
    try:
        return bool(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be true or false, got {value!r}") from exc


def request(numbering="raster", return_counts=False, method="auto", max_iterations=None):
    """The checked ``(first, counts, method, max_iterations)`` of a call."""
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if not isinstance(numbering, str) or numbering not in ("raster", "first-cell"):
        raise ValueError(f"numbering must be 'raster' or 'first-cell', got {numbering!r}")
    if max_iterations is not None and (
            isinstance(max_iterations, (bool, np.bool_))
            or not isinstance(max_iterations, (int, np.integer)) or max_iterations < 1):
        raise ValueError(f"max_iterations must be None or an int >= 1, got {max_iterations!r}")
    counts = _truth(return_counts, "return_counts")
    first = numbering == "first-cell"
    if counts and first:
        raise ValueError("return_counts needs numbering='raster' (counts are indexed by the "
                         "labels 1..N), got numbering='first-cell'")
    return first, counts, method, max_iterations


def prepare(label_image, background, connectivity, dtype, periodic=False, mask=None,
            tolerance=None, bonds=None, axes=None, numbering="raster", return_counts=False,
            method="auto", max_iterations=None, offsets=None,
            return_statistics=False) -> Problem:
    """Check every argument of :func:`meshccl.label` that describes the
    problem and make the :class:`Problem` both backends take.

    ``offsets`` (for :func:`meshccl.ndimage.label`): an explicit half
    neighbourhood of ``label_image``'s axes
    (:func:`meshccl.neighbourhood.structure_offsets`) in place of
    ``connectivity``; not with ``axes``, ``bonds`` or ``periodic``.
    """
    if isinstance(label_image, PackedSpins):
        return prepare_packed(label_image, connectivity, periodic, return_counts,
                              background=background, dtype=dtype, mask=mask,
                              tolerance=tolerance, bonds=bonds, axes=axes, numbering=numbering,
                              method=method,
                              max_iterations=max_iterations, offsets=offsets,
                              return_statistics=return_statistics)
    if offsets is not None and (axes is not None or bonds is not None or periodic is not False):
        raise ValueError("offsets cannot be combined with axes, bonds or periodic")
    first, counts, method, max_iterations = request(numbering, return_counts, method,
                                                    max_iterations)
    statistics = _truth(return_statistics, "return_statistics")
    if statistics and first:
        raise ValueError("return_statistics needs numbering='raster' (the table is indexed by "
                         "the labels 1..N), got numbering='first-cell'")
    raster = not first
    xp, x = array_module(label_image)
    dt = x.dtype
    if dt.kind in "cOSUVMm" or dt.kind not in "biuf":
        raise TypeError(
            f"label_image must have a bool, integer or float dtype, got {dt}"
        )
    if not dt.isnative:  # (big-endian on a little-endian host: the kernels read native words)
        x = x.astype(dt.newbyteorder("="))
        dt = x.dtype
    ndim = x.ndim
    label_axes = _axes(axes, ndim)
    batched = len(label_axes) < ndim
    if batched:
        conn = _connectivity(connectivity, len(label_axes),
                             f"labelling along axes={label_axes}")
        if bonds is not None:
            raise ValueError("bonds cannot be combined with axes (the bond layout covers every "
                             "axis); label the whole array, or close the bonds across slices")
    else:
        conn = _connectivity(connectivity, ndim)
    tol = _tolerance(tolerance, dt)
    # (bool input reads background as skimage does, by ``background == 1``;
    # with a tolerance it is matched exactly, see below)
    bg = 0 if dt.kind == "b" or tol is not None else _background_value(background)
    per = _periodic(periodic, ndim)
    mask_u8 = _bool_array(xp, mask, "mask", x.shape)
    # (counted, not enumerated: the table has 3**ndim / 2 rows at full connectivity)
    nbonds = neighbourhood.half_neighbourhood_size(ndim, conn) if ndim else 0
    bonds_u8 = _bool_array(xp, bonds, "bonds", (nbonds,) + tuple(x.shape))
    lattice = any(per) or mask_u8 is not None or tol is not None or bonds_u8 is not None

    # Values in a kernel dtype, and the background as the kernels' key.
    if dt.kind == "b":
        # skimage's bool path: background 1/True labels the False cells.
        # (CuPy: the raw bytes for now, made 0 / 1 at the end unless the
        # chain reads every non-zero byte as True: _gpu_bool_bytes)
        has_bg, bgval = True, (1 if (background is not None and _is_one(background)) else 0)
        values = _bool_bytes(xp, x) if xp is np else x
        bgkey = np.uint8(bgval)
    elif tol is not None:
        # |a - b| <= tolerance on the values themselves: keep the dtype (signed
        # stays signed, floats are not truncated); the background matches exactly.
        values = x.astype(np.float32) if dt.kind == "f" and dt.itemsize < 4 else x
        has_bg, bgkey = _tolerance_background(values.dtype, background)
    elif dt.kind in "iu":
        udt = np.dtype(_UNSIGNED[dt.itemsize])
        values = x.view(udt) if dt.kind == "i" else x
        info = np.iinfo(dt)
        if info.min <= bg <= info.max:
            has_bg, bgkey = True, np.array(bg, dtype=dt).view(udt)[()]
        elif dt == np.uint64 and -_TWO63 <= bg < 0:
            # skimage casts uint64 to int64, so -1 matches 2**64 - 1.
            has_bg, bgkey = True, np.uint64(bg + 2**64)
        else:
            has_bg, bgkey = False, udt.type(0)
    else:
        if dt.itemsize < 4:
            x = x.astype(np.float32)
        values = x
        if xp is np:
            _warn_float_keys(x)
        has_bg, bgkey = True, np.int64(bg)

    # skimage numbers a non-bool 3-D array shaped (a, b, 1) after swapping axes
    # 0 and 2 (its _get_swaps), i.e. in column order; match it (raster:
    # 1..N numbering; first-cell labels are flat indices of the array as given).
    swapped = (raster and dt.kind != "b" and x.ndim == 3 and x.shape[2] == 1
               and x.shape[0] > 1 and x.shape[1] > 1 and not lattice and not batched)
    if swapped:
        values = values.swapaxes(0, 2)
    size = int(np.prod(x.shape, dtype=np.int64))
    # Axes of length 1 carry no neighbours -- except a periodic one with bonds:
    # diagonal bonds through it wrap onto real neighbours, each its own bond.
    keep_ones = per if bonds_u8 is not None else (False,) * ndim
    kept = tuple(k for k, s in enumerate(values.shape) if s != 1 or keep_ones[k])
    squeezed = tuple(values.shape[k] for k in kept) or ((1,) if size == 1 else ())
    if not kept and size == 1:
        kept = (0,) if ndim else ()
    if size == 0:
        squeezed = tuple(x.shape)
    if batched:
        sq_axes = sum(1 << k for k, axis in enumerate(kept) if axis in label_axes)
        conn_sq = max(1, min(conn, bin(sq_axes).count("1")))
    else:
        conn_sq = max(1, min(conn, len(squeezed)))
    if len(squeezed) > neighbourhood.MAX_NDIM and size > 0:
        raise ValueError(
            f"label_image has {len(squeezed)} axes longer than 1; "
            f"meshccl supports at most {neighbourhood.MAX_NDIM}"
        )

    if xp is np:
        default = np.dtype(np.int32) if dt.kind == "b" else np.dtype(np.int64)
    else:
        default = np.dtype(np.int32) if size < 2**31 else np.dtype(np.int64)
    if not raster and size >= 2**31:  # (first-cell labels reach the number of cells)
        default = np.dtype(np.int64)
    out_dtype = default if dtype is None else np.dtype(dtype)
    if out_dtype.kind not in "iu":
        raise TypeError(f"dtype must be an integer dtype, got {out_dtype}")
    if not raster and size > np.iinfo(out_dtype).max:
        raise ValueError(f"dtype={out_dtype} cannot hold first-cell labels of an array of "
                         f"{size} cells (largest value {np.iinfo(out_dtype).max})")
    work = np.dtype(np.int32) if size < 2**31 - 1 else np.dtype(np.int64)
    if out_dtype.itemsize == 8:  # (int64 or uint64 labels: written as int64, viewed)
        work = np.dtype(np.int64)
    if size > 0:
        values = xp.ascontiguousarray(values).reshape(-1)
    prob = Problem(xp, values, squeezed, tuple(x.shape), conn_sq, has_bg, bgkey, work,
                   out_dtype, swapped, first=first, counts=counts, method=method,
                   max_iterations=max_iterations, statistics=statistics)
    prob.binary = dt.kind == "b"
    if size > 0 and ndim > 0 and batched:
        prob.label_axes = sq_axes
        prob.no_left = not (sq_axes >> (len(squeezed) - 1)) & 1
    if size > 0 and ndim > 0 and offsets is not None:
        # steps along an axis of length 1 always leave the array: the
        # offsets that remain, on the squeezed axes
        moved = [k for k in range(ndim) if k not in kept]
        prob.offsets = tuple(sorted({tuple(d[k] for k in kept) for d in offsets
                                     if not any(d[k] for k in moved)}))
        prob.no_left = (0,) * (len(kept) - 1) + (-1,) not in prob.offsets
        if prob.offsets:
            prob.connectivity = max(sum(1 for d in o if d) for o in prob.offsets)
    if size > 0 and ndim > 0:
        prob.periodic = sum(1 << k for k, axis in enumerate(kept) if per[axis])
        prob.mask = None if mask_u8 is None else mask_u8.reshape(-1)
        prob.tolerance = tol
        if bonds_u8 is not None:
            from .neighbourhood import bond_rows
            prob.bonds = bonds_u8.reshape(nbonds, -1)
            prob.bond_rows = bond_rows(squeezed, kept, ndim, conn)
    if dt.kind == "b" and xp is not np and size > 0:
        prob.values = _gpu_bool_bytes(prob)
    return prob


def _gpu_bool_bytes(prob):
    """A CuPy bool input (``prob.values``, flat bool) as the GPU chain
    needs it: as it is where the chain reads every non-zero byte as True
    (:func:`meshccl._gpu.chains.reads_bool_bytes`), else a copy of its
    bytes as 0 / 1, uint8 (the other chains compare bytes, and a bool
    array may hold bytes other than 0 and 1, which are True too)."""
    from ._gpu import chains

    if chains.reads_bool_bytes(chains.select(prob), prob):
        return prob.values
    return (prob.values != 0).view(np.uint8)
