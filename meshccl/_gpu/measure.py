"""Per-label tables on the GPU, for :mod:`meshccl.measure`
(``_kernels/measure.cu``; the algorithm is explained at the top of that
file).

The same finished table as ``meshccl/_cpu/measure.py``, as CuPy arrays:
``meshccl_measure_init`` sets its starting values, one launch of
``meshccl_measure_runs`` reads the labels (and the intensity) once, each
block gathering its stretch of the image in a shared-memory table first,
and ``meshccl_measure_finish`` turns sums into centroids and means in
place.  For each periodic axis a sort of its distinct (label, coordinate)
pairs and two launches of ``meshccl_measure_arcs`` find the boxes.  The
label image stays on the device; only the largest label is read back (by
the caller, to size the table).
"""

from __future__ import annotations

import functools

import numpy as np

from .loader import c_type, kernels, settled

BLOCK = 256
#: blocks of the grid-stride kernels: enough to fill any current GPU
MAX_BLOCKS = 1 << 16
FIRST, BOXES, SUMS, CIRCULAR, VALUES = 1, 2, 4, 8, 16
#: cells a warp of meshccl_measure_runs loads at a time (CHUNKS = 4 chunks
#: of 32): warps' stretches are multiples of it
SWEEP = 32 * 4
#: warps of meshccl_measure_runs per multiprocessor (each takes one stretch)
WARPS_PER_SM = 64
#: a warp's shared-memory table: at most this many slots, the block's eight
#: tables in at most SHARED_BYTES (a block's default limit); none below
#: MIN_SLOTS
MAX_SLOTS, MIN_SLOTS, SHARED_BYTES = 64, 16, 48 * 1024

def _grid(items: int, per_block: int) -> tuple:
    return (max(1, min(MAX_BLOCKS, -(-items // per_block))),)


def max_label(labels):
    """The largest label (0 for an empty array), and whether any is negative:
    one reduction of the unsigned view, one read."""
    if labels.size == 0:
        return 0, False
    dtype = labels.dtype
    if dtype == np.bool_:
        return int(labels.max()), False
    top = int(labels.view(np.dtype(f"u{dtype.itemsize}")).max())
    if dtype.kind == "i" and top >= 1 << (8 * dtype.itemsize - 1):
        return top, True
    return top, False


def _flat(labels):
    """Flat contiguous uint32 / uint64 labels (views where they can be)."""
    import cupy

    flat = cupy.ascontiguousarray(labels).reshape(-1)
    if flat.dtype.itemsize == 8:
        return flat.view(cupy.uint64)
    if flat.dtype.itemsize == 4:
        return flat.view(cupy.uint32)
    return flat.astype(cupy.uint32)  # bool, 1- and 2-byte labels: a widened copy


@functools.lru_cache(maxsize=256)
def _geometry(device, shape):
    """(shape, row strides) of the cells' rows as int64 device arrays,
    kept per device and shape (a host-to-device copy per call would make
    every call wait)."""
    import cupy

    ndim = len(shape)
    rstride = [1] * ndim
    for d in range(ndim - 3, -1, -1):
        rstride[d] = rstride[d + 1] * shape[d + 1]
    out = (cupy.asarray(np.array(shape, dtype=np.int64)),
           cupy.asarray(np.array(rstride, dtype=np.int64)))
    return settled(out)


@functools.lru_cache(maxsize=256)
def _axes(device, periodic):
    import cupy

    out = cupy.asarray(np.array(periodic or (0,), dtype=np.int32))
    return settled(out)


@functools.lru_cache(maxsize=None)
def _multiprocessors(device):
    import cupy

    return cupy.cuda.Device(device).attributes["MultiProcessorCount"]


def slot_bytes(slots, ndim, values):
    """Shared memory of a warp's table (``Slots::carve`` in measure.cu), a
    multiple of 8 bytes."""
    eight = 1 + ndim + (4 + ndim if values else 0)
    four = 2 + 2 * ndim
    return slots * (8 * eight + 4 * four) + 8


def _slots(ndim, values, shape, per_warp):
    """Slots of a warp's shared-memory table: the largest power of two up to
    MAX_SLOTS with the block's tables within SHARED_BYTES; 0 (every run to
    the global table) where the slots' 32-bit counts and coordinates would
    not hold."""
    if per_warp >= 2**31 or any(s >= 2**32 for s in shape):
        return 0
    slots = MAX_SLOTS
    while slots >= MIN_SLOTS and (BLOCK // 32) * slot_bytes(slots, ndim, values) > SHARED_BYTES:
        slots //= 2
    return slots if slots >= MIN_SLOTS else 0


def table(labels, shape, rows, *, first=False, boxes=False, sums=False, periodic=(),
          intensity=None):
    """The finished per-label table (the CPU twin's ``table``), from one pass
    over the labels (and the intensity): ``count`` (int64), ``first``
    (int64; n where a label has no cells), ``box`` ((rows, 2 * ndim) int64,
    [lo_0, hi_0, lo_1, ...] inclusive, (0, -1) where a label has no cells)
    and its views ``lo``, ``hi``; ``centroid`` (float64 (rows, ndim), NaN
    without cells); ``cos``, ``sin`` (float64 (rows, len(periodic)): sums
    over the cells of the periodic axes' unit vectors); with ``intensity``
    ``isum``, ``iabs`` (sums of the values and of their magnitudes),
    ``imean``, ``imin``, ``imax`` (float64, NaN without cells),
    ``wcentroid`` (float64 (rows, ndim), NaN where the intensity sums to
    0), ``wcos``, ``wsin``.  Two kernels and a finishing one
    (``_kernels/measure.cu``); nothing is read back."""
    import cupy

    n = labels.size
    ndim = len(shape)
    kdim = max(ndim, 1)  # (a 0-d image is one cell on one axis)
    kshape = tuple(shape) if ndim else (1,)
    nper = len(periodic)
    values = intensity is not None
    device = cupy.cuda.Device().id
    count = cupy.empty(rows, dtype=cupy.uint64)
    first_t = cupy.empty(rows if first else 1, dtype=cupy.int64)
    box = cupy.empty((rows, 2 * kdim) if boxes else (1,), dtype=cupy.uint64)
    csum = cupy.empty((rows, kdim) if sums else (1,), dtype=cupy.uint64)
    cs = cupy.zeros((rows, nper), dtype=cupy.float64)
    sn = cupy.zeros((rows, nper), dtype=cupy.float64)
    if values:
        vals = cupy.ascontiguousarray(intensity).reshape(-1)
        vtype = vals.dtype
        if vtype == np.bool_:
            vals = vals.view(cupy.uint8)
        elif vtype == np.float16:
            vals = vals.astype(cupy.float32)
        ktype = np.dtype(np.uint64 if vals.dtype.itemsize == 8 else np.uint32)
        isum = cupy.empty(rows, dtype=cupy.float64)
        iabs = cupy.empty(rows, dtype=cupy.float64)
        kmin = cupy.empty(rows, dtype=ktype)
        kmax = cupy.empty(rows, dtype=ktype)
        wsum = cupy.empty((rows, kdim), dtype=cupy.float64)
        wcos = cupy.zeros((rows, nper), dtype=cupy.float64)
        wsin = cupy.zeros((rows, nper), dtype=cupy.float64)
        imean = cupy.empty(rows, dtype=cupy.float64)
        imin = cupy.empty(rows, dtype=cupy.float64)
        imax = cupy.empty(rows, dtype=cupy.float64)
        vname = c_type(vals.dtype)
    else:
        vals = isum = iabs = wsum = wcos = wsin = imean = imin = imax = cs  # (unused)
        kmin = kmax = cupy.empty(1, dtype=cupy.uint32)
        ktype, vname = np.dtype(np.uint32), "meshccl_measure::None"
    flags = (FIRST * first | BOXES * boxes | SUMS * sums | CIRCULAR * bool(nper)
             | VALUES * values)
    # each warp of meshccl_measure_runs takes one stretch of whole sweeps
    warps = max(1, min(WARPS_PER_SM * _multiprocessors(device), -(-n // SWEEP)))
    per_warp = max(SWEEP, -(-(-(-n // warps)) // SWEEP) * SWEEP)
    warps = max(1, -(-n // per_warp))
    index = np.int32 if n + per_warp + SWEEP < 2**31 else np.int64
    init, runs, finish = kernels(
        "measure.cu", f"meshccl_measure_init<{c_type(ktype)}>",
        f"meshccl_measure_runs<{c_type(np.uint64 if labels.dtype.itemsize == 8 else np.uint32)}, "
        f"{c_type(index)}, {vname}>",
        f"meshccl_measure_finish<{vname}>")
    rgrid = _grid(rows, BLOCK)
    init(rgrid, (BLOCK,), (np.int64(rows), np.int32(kdim), np.int32(flags), np.int64(n), count,
                           first_t, box, csum, isum, iabs, kmin, kmax, wsum))
    if n:
        flat = _flat(labels)
        shape_d, rstride = _geometry(device, kshape)
        slots = _slots(kdim, values, kshape, per_warp)
        words = slot_bytes(slots, kdim, values) // 8 if slots else 0
        runs((-(-warps // (BLOCK // 32)),), (BLOCK,),
             (flat, vals, index(n), index(kshape[-1]), index(per_warp), shape_d, rstride,
              np.int32(kdim), _axes(device, tuple(periodic)), np.int32(nper), np.int32(flags),
              np.int32(slots), np.int32(words), count, first_t, box, csum, cs, sn, isum, iabs,
              kmin, kmax, wsum, wcos, wsin),
             shared_mem=8 * words * (BLOCK // 32))
    finish(rgrid, (BLOCK,), (np.int64(rows), np.int32(kdim), np.int32(flags), count, box, csum,
                             isum, imean, kmin, kmax, imin, imax, wsum))
    out = {"count": count.view(cupy.int64), "cos": cs, "sin": sn}
    if first:
        out["first"] = first_t
    if boxes:
        box = box.view(cupy.int64)[:, :2 * ndim]
        out["box"], out["lo"], out["hi"] = box, box[:, 0::2], box[:, 1::2]
    if sums:
        out["centroid"] = csum.view(cupy.float64)[:, :ndim]
    if values:
        out.update(isum=isum, iabs=iabs, imean=imean, imin=imin, imax=imax,
                   wcentroid=wsum[:, :ndim], wcos=wcos, wsin=wsin)
    return out


def periodic_box(labels, shape, axis, lo, hi, rows):
    """``(start, extent)`` of the smallest arcs covering each label's
    coordinates on a periodic axis (the CPU twin's ``periodic_box``)."""
    import cupy

    n = shape[axis]
    start = cupy.full(rows, n, dtype=cupy.int64)
    biggest = cupy.full(rows, -1, dtype=cupy.int64)
    if labels.size:
        view = [1] * len(shape)
        view[axis] = n
        coord = cupy.arange(n, dtype=cupy.uint64).reshape(view)
        keys = cupy.unique((cupy.asarray(labels).astype(cupy.uint64) * np.uint64(n) + coord)
                           .reshape(-1))
        lo = cupy.ascontiguousarray(lo, dtype=cupy.int64)
        hi = cupy.ascontiguousarray(hi, dtype=cupy.int64)
        (arcs,) = kernels("measure.cu", "meshccl_measure_arcs<long long>")
        m = keys.size
        for step in (0, 1):
            arcs(_grid(m, BLOCK), (BLOCK,), (keys, np.int64(m), np.int64(n), lo, hi, biggest,
                                             start, np.int32(step)))
    extent = n - biggest
    empty = biggest < 0
    return cupy.where(empty, 0, start), cupy.where(empty, 0, extent)


def coords(labels, count, present):
    """Object array: for each label of ``present``, the (count, ndim) int64
    coordinates of its cells in raster order, as CuPy arrays."""
    import cupy

    n = labels.size
    flat = _flat(labels).astype(cupy.uint64)
    rows = count.shape[0]
    if n and (rows * n) < 2**64:
        # sort label-major, index-minor: raster order within each label
        order = (cupy.sort(flat * np.uint64(n) + cupy.arange(n, dtype=cupy.uint64))
                 % np.uint64(n)).astype(cupy.int64)
    else:
        order = cupy.argsort(flat, kind="stable") if n else cupy.zeros(0, cupy.int64)
    cells = cupy.stack(cupy.unravel_index(order, labels.shape), axis=1).astype(cupy.int64)
    starts = np.concatenate([[0], np.cumsum(count.get())])
    out = np.empty(int(present.size), dtype=object)
    for i, lab in enumerate(present.get().tolist()):
        out[i] = cells[starts[lab]:starts[lab + 1]]
    return out


#: axes before the last that the statistics label pass handles (RunStats::LEAD)
PASS_LEAD = 3
#: slots of the statistics label pass's table per block (a power of two)
PASS_SLOTS = 256


class LabelPassTable:
    """The table that the statistics form of the run label pass
    (``meshccl_label_runs_stats``, number_pieces.cu) fills while it writes
    the labels: counts, boxes and coordinate sums of every label, then
    finished as :func:`table` finishes them.

    ``shape``: the labels' shape as the caller gets them (at most
    ``PASS_LEAD + 1`` axes; :func:`fits` says).  The chain's launch reads
    the table's addresses from ``desc`` (eight-byte words, RunStats), so it
    can be built before N is known: :meth:`start` makes the table of N + 1
    rows and fills ``desc``; :meth:`finish` gives the finished columns.
    """

    def __init__(self, shape):
        import cupy

        self.shape = tuple(int(s) for s in shape)
        self.kdim = len(self.shape)
        self.n = int(np.prod(self.shape, dtype=np.int64))
        self.device = cupy.cuda.Device().id
        # (the slots' counts are 32-bit: a block's cells stay below 2**31,
        # see grid)
        self.slots = PASS_SLOTS
        self.shared = slot_bytes(self.slots, self.kdim, False) if self.slots else 0
        self.desc = cupy.zeros(5 + 2 * PASS_LEAD, dtype=cupy.uint64)
        self.arrays = None

    @staticmethod
    def fits(shape) -> bool:
        """At most ``PASS_LEAD + 1`` axes, each shorter than 2**32 (the
        pass keeps coordinates in 32 bits)."""
        return 1 <= len(shape) <= PASS_LEAD + 1 and all(s < 2**32 for s in shape)

    def grid(self, threads: int) -> tuple:
        """Blocks of the pass for ``threads`` threads of the one-launch form:
        a few per multiprocessor, which step over the rows (each block's
        table then gathers many rows before it reaches the global table),
        and enough that a block's cells stay below 2**31."""
        from .. import _tuning

        blocks = min(-(-threads // BLOCK),
                     _tuning.STATS_PASS_BLOCKS_PER_SM * _multiprocessors(self.device))
        blocks = max(blocks, -(-self.n // 2**30), 1)
        return (blocks,)

    def start(self, rows: int):
        """The table of ``rows`` rows at its starting values, and ``desc``
        pointing at it."""
        import cupy

        kdim = self.kdim
        count = cupy.empty(rows, dtype=cupy.uint64)
        box = cupy.empty((rows, 2 * kdim), dtype=cupy.uint64)
        csum = cupy.empty((rows, kdim), dtype=cupy.uint64)
        dummy = cupy.empty(1, dtype=cupy.uint32)
        init, = kernels("measure.cu", f"meshccl_measure_init<{c_type(np.dtype(np.uint32))}>")
        init(_grid(rows, BLOCK), (BLOCK,),
             (np.int64(rows), np.int32(kdim), np.int32(BOXES | SUMS), np.int64(self.n), count,
              dummy, box, csum, dummy, dummy, dummy, dummy, dummy))
        rstride = [1] * PASS_LEAD
        lead = self.shape[:-1]
        for d in range(len(lead) - 2, -1, -1):
            rstride[d] = rstride[d + 1] * lead[d + 1]
        words = np.zeros(5 + 2 * PASS_LEAD, dtype=np.uint64)
        words[:5] = (count.data.ptr, box.data.ptr, csum.data.ptr, kdim, self.slots)
        words[5:5 + len(lead)] = rstride[:len(lead)]
        words[5 + PASS_LEAD:5 + PASS_LEAD + len(lead)] = lead
        self.desc.set(words)
        self.arrays = (rows, count, box, csum)

    def finish(self):
        """The finished columns (:func:`table`'s ``count``, ``box``, ``lo``,
        ``hi``, ``centroid``)."""
        import cupy

        rows, count, box, csum = self.arrays
        dummy = cupy.empty(1, dtype=cupy.float64)
        keys = cupy.empty(1, dtype=cupy.uint32)
        finish, = kernels("measure.cu", "meshccl_measure_finish<meshccl_measure::None>")
        finish(_grid(rows, BLOCK), (BLOCK,),
               (np.int64(rows), np.int32(self.kdim), np.int32(BOXES | SUMS), count, box, csum,
                dummy, dummy, keys, keys, dummy, dummy, dummy))
        box = box.view(cupy.int64)
        return {"count": count.view(cupy.int64), "box": box, "lo": box[:, 0::2],
                "hi": box[:, 1::2], "centroid": csum.view(cupy.float64)}
