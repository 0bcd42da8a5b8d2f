"""Plain images on the CPU (equal values; no mask, bonds, tolerance,
wrap-around or axes -- what ``skimage.measure.label`` does): the compiled
core, :mod:`meshccl._cpu._core`.

The labeller is C++17, compiled when the package is built (its algorithm,
run-based two-pass labelling with a union-find over provisional labels,
serial or in slabs on threads, is explained at the top of
``meshccl/_cpu/core/image.hpp``; the union-find is the shared header
``meshccl/_kernels/core/unionfind.h``).  Nothing is compiled on a call.
Each component gets the rank of its first cell in raster order
(skimage's numbering), whichever form runs.
"""

import os

import numpy as np

from .. import _tuning

try:
    from . import _core
except ImportError as exc:  # (a source tree that was never built)
    raise ImportError(
        "meshccl's compiled CPU core (meshccl._cpu._core) is missing: install meshccl with "
        "pip (`pip install .` or `pip install -e .` in a checkout; a C++17 compiler is "
        "needed) rather than running it from the source tree") from exc


def cpu_count():
    """The cores this process may run on (``cpu_threads=0``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (not on Linux)
        return os.cpu_count() or 1


def plan_slabs(shape, threads):
    """Slabs along axis 0 for ``threads`` threads: at most one per
    ``_tuning.CPU_SLAB_MIN_CELLS`` cells and one per plane; below 2 (or
    for a 1-D array) the image is labelled serially."""
    n = int(np.prod(shape))
    if len(shape) < 2:
        return 1
    return max(1, min(int(threads), n // max(_tuning.CPU_SLAB_MIN_CELLS, 1), int(shape[0])))


def label_plain(keys, P, shape, table, has_bg, bgkey, counts=False, threads=1):
    """Label flat ``keys`` (:func:`.keys.kernel_keys`: uint8/16/32/64) of
    ``shape`` into ``P`` (int32 or int64, same length); return the number
    of labels (with ``counts``: (N, cells per label 0..N), int64, counted
    as the labels are written).

    ``table``: the half-neighbourhood table of :mod:`meshccl.neighbourhood`.
    ``threads`` > 1: in slabs along axis 0 (:func:`plan_slabs`), serially
    when fewer than two fit or the array is 1-D; the same labels.
    """
    shape = np.ascontiguousarray(shape, dtype=np.int64)
    table = np.ascontiguousarray(table, dtype=np.int64)
    keys = np.ascontiguousarray(keys)
    # provisional labels int32 whenever they fit (then the scans run on half
    # the bytes), gathered into an int64 P at the end: in slabs from an array
    # of their own, serially from P's own first half (the core does that)
    work = None
    slabs = plan_slabs(shape, threads)
    if P.dtype == np.int64 and P.shape[0] < 2**31 - 2 and slabs > 1 and shape.size > 1:
        work = np.empty(P.shape[0], dtype=np.int32)
    out = _core.label_plain(
        keys, P, work, shape, table, bool(has_bg), int(np.asarray(bgkey).astype(keys.dtype)),
        bool(counts), slabs, _tuning.CPU_PROV_TABLE_MIN,
        _tuning.CPU_PROV_TABLE_CELLS_PER_LABEL, _tuning.CPU_COUNTS_SPREAD_LABELS)
    if counts:  # (nanobind's int64 is NumPy's longlong: the counts as np.int64, as skimage's)
        return out[0], out[1].view(np.int64)
    return out


def first_cell_labels(L, count):
    """Raster labels ``L`` (1..count, background 0; flat int32 or int64)
    turned in place into first-cell labels: 1 + the flat index of each
    label's first cell."""
    _core.first_cell_labels(L, int(count))
