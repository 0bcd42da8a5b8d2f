"""Launch plans: low-latency repeated labelling of same-shaped CuPy arrays.

A simulation that labels its lattice every few steps calls ``label()`` many
times on arrays of one shape and dtype.  The general path validates the
arguments, builds the launch arguments, looks up the kernels and allocates
the relabel path's scratch arrays on every call: a few hundred microseconds
of host time, far more than the GPU needs for a small image.

A :class:`Plan` does that work once per (shape, dtype, arguments, device,
stream, thread) and keeps it: the kernels, the argument tuples, the scratch
arrays (reused call after call; safe because one thread's launches on one
stream run in order).  A call then only views the input, allocates the
output and launches the same kernels as a call without a plan (the plain
chains of image_plain.py; for n-D arrays general.cu, then number_roots.cu
with the one-block scan for short arrays) -- same labels.  The
launches of the 2-D / 3-D path are packed for the driver once
(``launch.py``): a call writes the input's and the output's addresses into
the packed arguments and launches, without CuPy's per-argument work; on
Hopper and later the kernels of the relabel chain may start while the one
before drains (programmatic dependent launch, ``kernels/launch.cuh``).

A loop that labels the same input again and again and drops each result
(a simulation's lattice, a benchmark) also sees the same label memory come
back from CuPy's pool call after call.  On the :data:`meshccl._tuning.PLAN_GRAPH_AFTER`-th call
with one (input address, label address) pair, a plan records its launches
as a CUDA graph on those two addresses, and replays it whenever a call
finds its input and its new label array at exactly those addresses again:
one graph launch instead of five to eight kernel launches, so the first
kernel starts sooner (5–12 µs on the 4096² images, H200) and the GPU's
gaps between kernels shrink.  The graph reads whatever the input holds when
it runs, and writes the labels into the array the call has just allocated,
so a replay is the same work as the launches it stands for.  A plan keeps
:data:`MAX_GRAPHS` such graphs (least recently used dropped first), and
stops recording if a recording fails.  Graphs are recorded only in the main
thread (``capture.py``: another thread's synchronisation with the GPU
fails while a capture is open).

Plain 2-D images have their kernels in two forms, with slots for the piece
roots of their run starts and without (image_plain.py, _tuning.RUNS_2D_SLOTS): the
slots pay on images of large pieces and cost images of many small ones.
Each call counts the tiles whose run starts fit their slots, and its
border kernel writes the count to the plan's word of pinned host memory
(one of :data:`REPORT_WORDS` in a buffer for the process); the next call
reads that word, without waiting for anything, and takes the form its
count calls for (_tuning.RUNS_2D_SLOTS_SHARE).  A call still running
leaves an older count, which only costs speed: both forms give the same
labels.  The graphs at addresses are kept per form.  Where
_tuning.RUNS_2D_SLOTS_SHARE leaves no choice (0: always slots, above 1:
never), and for small arrays (their graph, below, takes the slots), there
is no count and one chain.

Small arrays (up to :data:`meshccl._tuning.PLAN_GRAPH_CELLS` cells) have a second graph for the
other calls: the launches recorded once on the plan's own input and label
buffers (5 bytes per cell, kept with the plan); such a call copies the
input in, replays that graph and copies the labels out.

Plans serve C-contiguous CuPy input of any dtype but float16 (which needs
a copy to float32), ``method='auto'``, no ``return_info`` or device
override, on every chain of :data:`.chains.TABLE` that
:func:`.chains.select` names for the call, except the iterative ones and,
for calls with lattice features or counts, the general one.  The plan
builds its launches from that chain (:func:`.chains.program`).  A lattice
plan (periodic axes, a mask, bonds, a tolerance; a simulation labels its
lattice so every few steps) takes the call's mask and bonds (C-contiguous
bool CuPy arrays) as two more addresses in its packed launches, and
records no graphs.  At most :data:`MAX_PLANS` plans per thread are kept.

The labelling hooks' packed Ising spins (:class:`meshccl._validate.PackedSpins`)
take lattice plans too (:func:`fast_label_packed`): the words' address is the
input's.

``label(..., return_counts=True)`` takes a plan of its own (counting is
part of the key) wherever the chains of image_plain.py serve the call,
plain or lattice: its programs take the counted form of the label pass
(:mod:`.chains` says how), packed like any other, the count table's place
left open (:data:`.launch.COUNTS`).  A call launches the chain up to its
roots kernel, reads N (its one wait for the GPU, which the counts need
anyway), makes a table of N + 1 rows -- the counts it returns -- and
launches the rest with it.  Such a plan records no graphs (the wait splits
the chain).
"""

from __future__ import annotations

import ctypes
import functools
import sys
import threading
from collections import OrderedDict

import numpy as np

from .. import _tuning, _validate
from . import capture, chains, image_plain, number_roots, runs3d_structure, runs_nd
from .launch import COUNTS, pack_chain

MAX_PLANS = 16
#: Graphs at addresses kept per plan, and address pairs counted per plan.
MAX_GRAPHS = 4
MAX_SEEN = 16
#: The host word of a plan's count of tiles with slots before any call has
#: written it.
NO_COUNT = 0xFFFFFFFF
#: Words of pinned host memory for the plans' counts of tiles with slots
#: (one buffer for the process, never freed, its words handed out in turn:
#: a kernel still running when its plan is dropped can only write a stale
#: count into a word a newer plan took, which costs that plan one choice of
#: kernel, never a label).
REPORT_WORDS = 1024
_local = threading.local()


@_tuning.when_changed
def _drop_plans():
    """Plans are built from tuning constants: an override drops this
    thread's plans (its documented scope)."""
    plans = getattr(_local, "plans", None)
    if plans is not None:
        plans.clear()


class _Reports:
    """The process's buffer of pinned host words for the plans' counts of
    tiles with slots (made on first use, never freed), handed out in turn."""

    def __init__(self):
        import cupy

        self.mem = cupy.cuda.alloc_pinned_memory(4 * REPORT_WORDS)
        self.words = np.frombuffer(self.mem, np.uint32, REPORT_WORDS)
        self.next = 0
        self.lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def _reports():
    return _Reports()


def _report_word():
    """A word of pinned host memory, which kernels can write (unified
    addressing): (a NumPy view of it, its address)."""
    reports = _reports()
    with reports.lock:
        k = reports.next
        reports.next = (k + 1) % REPORT_WORDS
    return reports.words[k:k + 1], reports.mem.ptr + 4 * k


class Plan:
    """Everything but the input and the output of one labelling call."""

    def __init__(self, prob, case, bool_input=False):
        import cupy

        n = prob.size
        # return_counts: the launches after `split` take the call's count
        # table, made once the roots kernel has found N
        self.counted = bool(prob.counts)
        counts = COUNTS if self.counted else None
        self.split = None
        self.n = n
        self.out_shape = prob.out_shape
        self.work = prob.work_dtype
        self.out_dtype = prob.out_dtype
        self.view = prob.values.dtype
        self.cupy = cupy
        self.graph = None  # the graph on the plan's own buffers (small arrays)
        self.at = OrderedDict()  # (input, labels) addresses -> (graph, N's 0-d array)
        self.seen = OrderedDict()  # address pairs -> calls so far
        self._stream = None  # the stream graphs are recorded on (made on the first)
        self.packed = None
        self.report = None  # plain 2-D images: the host word of the tiles' count (see _pick)
        self.slot_tiles = True
        # bool input: its bytes as 0 / 1 first (a bool array may hold other
        # non-zero bytes, which are True), into a buffer kept with the plan
        # (not where the chain reads the bytes as they are: chains.reads_bool_bytes)
        self.bool01 = cupy.empty(prob.out_shape, dtype=cupy.bool_) if bool_input else None
        # lattice features (periodic axes, a mask, bonds, a tolerance): one
        # chain, no graphs
        self.lattice = bool(case.periodic or prob.mask is not None or prob.bonds is not None
                            or prob.tolerance is not None)
        name = case.chain.name
        if name == "general":
            if prob.counts:
                raise ValueError("a plan counts only on the fixed-geometry chains")
            self.program = chains.program(case, prob, buffers=number_roots.scratch(n, self.work))
            if n <= _tuning.PLAN_GRAPH_CELLS:
                self._try_capture()
            return
        if name in ("runsnd", "runs3d-structure"):  # (one form, its own scratch)
            own = runs_nd if name == "runsnd" else runs3d_structure
            prog = chains.program(case, prob, buffers=own.scratch(n, self.work, case.shape),
                                  counts=counts)
            self.chains = {True: (prog, _packed(prog))}
            self.program, self.packed = self.chains[True]
            if self.counted:
                self.split, self.at = chains.split(prog), None
            elif n <= _tuning.PLAN_GRAPH_CELLS:
                self._try_capture()
            return
        buffers = image_plain.scratch(n, self.work, case.shape, slots=not self.lattice)
        if self.lattice:
            prog = chains.program(case, prob, buffers=buffers, counts=counts)
            self.chains = {True: (prog, _packed(prog))}
            self.program, self.packed = self.chains[True]
            self.at = None
            if self.counted:
                self.split = chains.split(prog)
            return
        # a plain chain: its launches worked out once, scratch kept with the plan
        report, forms = 0, (True,)  # (the forms with slots or without: see _pick)
        if image_plain.chooses_slots(case.shape):
            self.slots_from = image_plain.slots_threshold(case.shape, prob.connectivity)
            if self.slots_from > NO_COUNT:  # never slots: nothing to count
                forms = (False,)
            elif self.slots_from > 0 and n > _tuning.PLAN_GRAPH_CELLS:  # (small: one graph, below)
                forms = (True, False)
                self.report, report = _report_word()
                self.report[0] = NO_COUNT
                self._fitted = ctypes.c_uint32.from_address(report)  # (read per call)
        self.chains = {}  # slot_tiles -> (program, packed launches or None)
        for slot_tiles in forms:
            prog = chains.program(case, prob, buffers=buffers, slot_tiles=slot_tiles,
                                  report=report, counts=counts)
            self.chains[slot_tiles] = (prog, _packed(prog))
        self.slot_tiles = forms[0]
        self.program, self.packed = self.chains[self.slot_tiles]
        if self.counted:  # (both forms have their roots kernel at one place)
            self.split, self.at = chains.split(self.program), None
        elif n <= _tuning.PLAN_GRAPH_CELLS:
            self._try_capture()

    def _try_capture(self):
        if not capture.may_record():  # (not in a worker thread: capture.py)
            return
        try:
            self._capture()
        except Exception:  # no graph support here: launch one by one
            self.graph = None

    def _launch(self, values, P, mask=None, bonds=None):
        """The launches of the plain path; returns N as a 0-d array, or for
        a counted plan (N as an int, the count table).  P: the labels (an
        array, or with packed launches also a bare MemoryPointer); ``mask``,
        ``bonds``: a lattice plan's call's arrays."""
        if self.split is not None:
            return self._launch_counted(values, P, mask, bonds)
        if self.packed is not None:
            vptr = values.data.ptr
            pptr = P.ptr if isinstance(P, self.cupy.cuda.MemoryPointer) else P.data.ptr
            mptr = 0 if mask is None else mask.data.ptr
            bptr = 0 if bonds is None else bonds.data.ptr
            stream = self.cupy.cuda.get_current_stream().ptr
            count = None
            for launch in self.packed:
                count = launch(vptr, pptr, stream, mptr, bptr)
            return count
        if not isinstance(P, self.cupy.ndarray):
            P = self.cupy.ndarray((self.n,), dtype=self.work, memptr=P)
        count = None
        for _, launch in self.program:
            count = launch(values, P, mask, bonds)
        return count

    def _launch_counted(self, values, P, mask, bonds):
        """:meth:`_launch` of a counted plan: the launches up to the roots
        kernel, N read, the table of N + 1 rows made, the rest."""
        cupy, at = self.cupy, self.split
        if self.packed is not None:
            vptr = values.data.ptr
            pptr = P.ptr if isinstance(P, cupy.cuda.MemoryPointer) else P.data.ptr
            mptr = 0 if mask is None else mask.data.ptr
            bptr = 0 if bonds is None else bonds.data.ptr
            stream = cupy.cuda.get_current_stream().ptr
            for launch in self.packed[:at]:
                launch(vptr, pptr, stream, mptr, bptr)
            count = int(self.program[-1][1].result)
            table = cupy.empty(count + 1, dtype=cupy.int64)
            for launch in self.packed[at:]:
                launch(vptr, pptr, stream, mptr, bptr, table.data.ptr)
            return count, table
        if not isinstance(P, cupy.ndarray):
            P = cupy.ndarray((self.n,), dtype=self.work, memptr=P)
        for _, launch in self.program[:at]:
            launch(values, P, mask, bonds)
        count = int(self.program[-1][1].result)
        table = cupy.empty(count + 1, dtype=cupy.int64)
        for _, launch in self.program[at:]:
            launch(values, P, mask, bonds, table)
        return count, table

    def _capture(self):
        """Record the launches once as a CUDA graph on the plan's own
        input and label buffers.  A call then costs two device copies (input
        in, labels out) and one graph launch instead of seven or eight kernel launches
        with long argument lists: small images are bound by host time."""
        cupy = self.cupy
        vin = cupy.empty(self.n, dtype=self.view)
        pbuf = cupy.empty(self.n, dtype=self.work)
        graph, count = self._record(vin, pbuf)
        self.vin, self.pbuf, self.graph = vin, pbuf, graph
        self.count = count  # a view of a scratch array that the graph fills

    def _record(self, values, P):
        """The launches on ``values`` and ``P`` recorded as a CUDA graph
        (nothing runs): (graph, N's 0-d array, which the graph fills).  On
        the plan's own stream: plans belong to one thread, so no other
        thread's recording can meet this one there."""
        stream = self._stream
        if stream is None:
            stream = self._stream = self.cupy.cuda.Stream(non_blocking=True)
        return capture.record(stream, lambda: self._launch(values, P))

    def _pick(self):
        """Plain 2-D images: the tile kernel with slots or without
        (image_plain.slots_threshold), from the count of tiles that fitted their
        slots which the last finished call wrote to host memory.  The plan
        does not wait for it: a call still running leaves an older count
        (or none yet: slots).  Either kernel gives the same labels."""
        slot_tiles = self._fitted.value >= self.slots_from
        if slot_tiles != self.slot_tiles:
            self.slot_tiles = slot_tiles
            self.program, self.packed = self.chains[slot_tiles]

    def _graph_at(self, x, mem):
        """The graph recorded at ``x``'s and ``mem``'s addresses (and the
        tile kernel :meth:`_pick` chose), as (graph, N's 0-d array);
        recorded now if this is the pair's :data:`meshccl._tuning.PLAN_GRAPH_AFTER`-th call;
        None: launch the ordinary way."""
        key = (x.data.ptr, mem.ptr, self.slot_tiles)
        hit = self.at.get(key)
        if hit is not None:
            self.at.move_to_end(key)
            return hit
        if not _tuning.PLAN_GRAPH_AFTER or not capture.may_record():
            return None
        calls = self.seen.pop(key, 0) + 1
        if calls < _tuning.PLAN_GRAPH_AFTER:
            self.seen[key] = calls
            if len(self.seen) > MAX_SEEN:
                self.seen.popitem(last=False)
            return None
        values = x.view(self.view).reshape(-1)
        P = self.cupy.ndarray((self.n,), dtype=self.work, memptr=mem)
        try:
            hit = self._record(values, P)
        except Exception:  # no graph here: the ordinary launches, now and later
            self.at = self.seen = None
            return None
        self.at[key] = hit
        if len(self.at) > MAX_GRAPHS:
            self.at.popitem(last=False)
        return hit

    def __call__(self, x, return_num, mask=None, bonds=None):
        cupy = self.cupy
        if self.bool01 is not None:
            cupy.not_equal(x.view(cupy.uint8), 0, out=self.bool01)
            x = self.bool01
        # the labels' memory from the pool, the launches, and only then the
        # array object around it: the first kernel starts ~1 us sooner (x is
        # C-contiguous: its address is the flat view's)
        mem = cupy.cuda.alloc(self.n * self.work.itemsize)
        if self.report is not None and self.graph is None:
            self._pick()
        hit = self._graph_at(x, mem) if self.at is not None else None
        if hit is not None:
            hit[0].launch(cupy.cuda.get_current_stream())
            count = hit[1]
        elif self.packed is not None and self.graph is None:
            count = self._launch(x, mem, mask, bonds)
        elif self.graph is not None:
            stream = cupy.cuda.get_current_stream()
            self.vin.data.copy_from_device_async(x.data, self.vin.nbytes, stream)
            self.graph.launch(stream)
            mem.copy_from_device_async(self.pbuf.data, self.n * self.work.itemsize, stream)
            count = self.count
        else:
            count = self._launch(x.view(self.view).reshape(-1),
                                 cupy.ndarray((self.n,), dtype=self.work, memptr=mem),
                                 mask, bonds)
        P = cupy.ndarray(self.out_shape, dtype=self.work, memptr=mem)
        return self._finish(P, count, return_num)

    def _finish(self, P, count, return_num):
        """The output dtype, N and the counts (a host sync only where N is
        needed: for ``return_num``, the counts or a narrower dtype)."""
        if self.counted:
            count, counts = count
        if self.out_dtype != self.work:
            top = np.iinfo(self.out_dtype).max
            if top < np.iinfo(self.work).max:  # (a narrower dtype: N must fit)
                count = int(count)
                if count > top:
                    raise ValueError(f"dtype={self.out_dtype} cannot hold {count} labels "
                                     f"(largest value {top})")
            P = _as_dtype(P, self.out_dtype)
        if self.counted:
            return (P, count, counts) if return_num else (P, counts)
        if return_num:
            return P, int(count)
        return P


def _as_dtype(P, dtype):
    """Labels ``P`` (int32 / int64, never negative) in ``dtype``: a view
    where the item sizes agree (uint32 from int32: the same bits, no copy
    of the labels), else a converted copy."""
    if P.dtype.itemsize == np.dtype(dtype).itemsize:
        return P.view(dtype)
    return P.astype(dtype)


def _packed(program):
    """The program's launches packed for the driver (:func:`.launch.pack_chain`),
    or None where they are not all packable."""
    try:
        return pack_chain(program)
    except (TypeError, AttributeError):  # not packable: CuPy's kernel calls
        return None


def _feature_array(a, x):
    """A mask or bonds array a lattice plan can take as it is: a
    C-contiguous bool CuPy array on ``x``'s device (else the general path
    checks and converts it)."""
    return (type(a).__module__.startswith("cupy") and a.dtype == np.bool_
            and a.flags.c_contiguous and a.data.device_id == x.data.device_id)


_UNHASHABLE = object()


def _cached(key):
    """The plan this thread keeps under ``key`` (made the most recent), None
    when it keeps none, or ``_UNHASHABLE`` when an argument in the key
    cannot be hashed."""
    plans = getattr(_local, "plans", None)
    if plans is None:
        plans = _local.plans = OrderedDict()
    try:
        plan = plans.get(key)
    except TypeError:
        return _UNHASHABLE
    if plan is not None:
        plans.move_to_end(key)
    return plan


def _keep(key, plan):
    """Keep ``plan`` under ``key`` on this thread, dropping the least
    recent beyond ``MAX_PLANS``."""
    plans = _local.plans
    plans[key] = plan
    if len(plans) > MAX_PLANS:
        plans.popitem(last=False)


def fast_label_packed(spins, connectivity, return_num, periodic, return_counts):
    """:func:`fast_label` for packed Ising spins (:class:`meshccl._validate.PackedSpins`,
    the labelling hooks' input): a plan per (lattice, phase, connectivity,
    counts), its packed launches taking the words' address, as a lattice
    plan takes an image's.  None where the words are not a C-contiguous
    CuPy array on the current GPU (the general path checks them)."""
    words = spins.words
    if not (type(words).__module__.startswith("cupy") and words.flags.c_contiguous):
        return None
    cupy = sys.modules["cupy"]
    if words.data.device_id != cupy.cuda.runtime.getDevice():
        return None
    key = ("packed", tuple(words.shape), words.dtype.char, spins.shape, spins.phase,
           connectivity, type(connectivity), periodic, words.data.device_id,
           cupy.cuda.get_current_stream().ptr, return_counts)
    plan = _cached(key)
    if plan is _UNHASHABLE:  # the general path says what is wrong
        return None
    if plan is None:
        prob = _validate.prepare(spins, None, connectivity, None, periodic=periodic,
                                 return_counts=return_counts)
        plan = Plan(prob, chains.select(prob))
        _keep(key, plan)
    return plan(words, return_num)


def fast_label(x, background, connectivity, dtype, return_num, periodic=False, mask=None,
               tolerance=None, bonds=None, numbering="raster", axes=None, return_counts=False,
               offsets=None):
    """Label CuPy array ``x`` through a cached plan; None when a plan does
    not apply (the caller takes the general path, which also says what is
    wrong with an argument).  ``return_counts``: True or False; with True
    the result ends with the counts, as ``label`` returns them.
    ``offsets``: an explicit half neighbourhood (:func:`meshccl.ndimage.label`'s
    structures, bool ``x``), planned on the chains made for them."""
    if numbering == "raster":
        first = False
    elif numbering == "first-cell":
        first = True
    else:
        return None
    if return_counts and first:
        return None
    if (not x.flags.c_contiguous or x.dtype.kind not in "biuf" or x.dtype.char == "e"
            or x.ndim == 0 or x.size == 0):
        return None
    features = not (periodic is False and mask is None and tolerance is None and bonds is None
                    and axes is None)
    if features:
        if (mask is not None and not _feature_array(mask, x)) or (
                bonds is not None and not _feature_array(bonds, x)):
            return None
        if isinstance(periodic, list):
            periodic = tuple(periodic)
        if isinstance(axes, list):
            axes = tuple(axes)
    cupy = sys.modules["cupy"]  # (x is a CuPy array; an import statement costs ~1 us)
    device = x.data.device_id
    if device != cupy.cuda.runtime.getDevice():  # run on the input's GPU
        with cupy.cuda.Device(device):
            return fast_label(x, background, connectivity, dtype, return_num, periodic, mask,
                              tolerance, bonds, numbering, axes, return_counts, offsets)
    key = (x.shape, x.dtype.char, background, type(background), connectivity,
           type(connectivity), dtype, device, cupy.cuda.get_current_stream().ptr, first,
           return_counts, offsets)
    if features:
        key += (periodic, tolerance, type(tolerance), None if mask is None else mask.shape,
                None if bonds is None else bonds.shape, axes)
    plan = _cached(key)
    if plan is _UNHASHABLE:  # the general path says what is wrong
        return None
    if plan is None:
        prob = _validate.prepare(x, background, connectivity, dtype, periodic=periodic,
                                 mask=mask, tolerance=tolerance, bonds=bonds, axes=axes,
                                 numbering=numbering, return_counts=return_counts,
                                 offsets=offsets)
        case = chains.select(prob)
        if prob.swapped or (case.chain.name == "general" and (features or prob.counts)):
            return None  # (the general chain plans plain calls only)
        if offsets is not None and case.chain.name not in ("runsnd", "runs3d-structure"):
            return None  # (a structure's plans: its own chains only)
        # (bool input as 0 / 1 bytes, unless the chain reads any non-zero
        # byte as True: then the problem's values are the input itself)
        plan = Plan(prob, case, bool_input=x.dtype == np.bool_
                    and prob.values.dtype != np.bool_)
        del prob  # (its values may be a copy, which the calls do not need)
        _keep(key, plan)
    if features:
        return plan(x, return_num, mask, bonds)
    return plan(x, return_num)
