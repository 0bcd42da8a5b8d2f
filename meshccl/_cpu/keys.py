"""Values as the CPU kernels compare them: *keys*.

Values reach the kernels as *keys* of a few types only, so that the
compiled core holds each kernel for those and no more
(:func:`kernel_keys`):

- equal-value labelling compares unsigned integers of 1, 2, 4 or 8 bytes
  (signed integers are viewed as unsigned; floats are truncated to int64
  as skimage does, then viewed as uint64); the per-cell lattice kernels
  and the iterative methods take 2- and 4-byte keys widened to uint64
  (:mod:`.mesh`), so those are compiled for three key types (uint8,
  uint64, float64);
- labelling with a tolerance compares the same unsigned keys, with signed
  integers shifted by half their range so that the order (and so every
  difference) is kept, or float64 for float input.  The lattice core
  (``CloseInt`` of ``meshccl/_cpu/core/lattice.hpp``) takes the difference
  of two integer keys exactly in uint64, so integers beyond
  2**53 are compared exactly, and the tolerance is floored to an integer
  for integer input: ``|a - b| <= tolerance`` holds for integers exactly
  when ``|a - b| <= floor(tolerance)``.
"""

import numpy as np

_TWO63 = 2.0**63
_TWO64 = 2.0**64


def float_keys(values):
    """Float values as int64 keys, truncated towards zero as skimage's cast
    does; NaN, +-inf and values outside [-2**63, 2**63) all become the
    int64 minimum, as that cast gives them on x86-64 (and as the GPU
    kernels' keys do, lattice.cuh ``Key``), whatever the platform."""
    with np.errstate(invalid="ignore"):
        keys = values.astype(np.int64)
    inside = (values >= -_TWO63) & (values < _TWO63)
    if not inside.all():
        keys[~inside] = np.iinfo(np.int64).min
    return keys


def kernel_keys(values, has_bg, bgkey, tolerance, background=None):
    """Values, background and tolerance as the CPU kernels compare them.

    Parameters
    ----------
    values : ndarray
        Flat values as :func:`meshccl._validate.prepare` leaves them:
        unsigned integers (signed ones viewed as unsigned, bool as uint8)
        or floats without a tolerance; the input's own dtype with one.
    has_bg, bgkey
        The background from ``prepare`` (a key of ``values``' dtype, an
        int64 for floats; a float64 with a tolerance).
    tolerance : int, float or None
        None: equal values join.  An int for integer values (exact, as
        :func:`meshccl._validate.prepare` leaves it), a float for floats.
    background : int or float, optional
        With a tolerance, the caller's background exactly (``bgkey`` is a
        float64 there, inexact for integers beyond 2**53).  Default 0.

    Returns
    -------
    keys : ndarray
        uint8, uint16, uint32 or uint64 without a tolerance; with one,
        uint64 for integer input and float64 for floats.
    has_bg : bool
    bg : scalar of ``keys``' dtype
    has_tol : bool
    tol : numpy.uint64 or numpy.float64
        The tolerance as the kernels take it for these keys (0 without).
    """
    if tolerance is None:
        if values.dtype.kind == "f":
            keys = float_keys(values).view(np.uint64)
            bg = np.array(int(bgkey), dtype=np.int64).view(np.uint64)[()]
        else:
            keys = values
            bg = values.dtype.type(bgkey)
        return keys, bool(has_bg), bg, False, _zero_tol(keys)
    if values.dtype.kind == "f":
        keys = values.astype(np.float64, copy=False)
        return keys, bool(has_bg), np.float64(bgkey), True, np.float64(tolerance)
    # integer keys: unsigned, signed ones shifted by half their range
    dt = values.dtype
    udt = np.dtype(f"u{dt.itemsize}")
    info = np.iinfo(dt)
    keys = values.view(udt) ^ udt.type(-info.min) if dt.kind == "i" else values
    b = float(bgkey) if background is None else background
    exact = isinstance(b, (int, np.integer)) or (isinstance(b, float) and b.is_integer())
    if has_bg and exact and info.min <= int(b) <= info.max:
        bg = udt.type(int(b) - int(info.min))
    else:  # (no cell can equal it)
        has_bg, bg = False, udt.type(0)
    tol = np.uint64(2**64 - 1) if tolerance >= _TWO64 else np.uint64(int(tolerance))
    # widened to 64 bits (order and differences kept): the tolerance kernels
    # are compiled for two key types only, uint64 and float64
    return keys.astype(np.uint64), bool(has_bg), np.uint64(bg), True, tol


def _zero_tol(keys):
    return np.float64(0.0) if keys.dtype.kind == "f" else np.uint64(0)
