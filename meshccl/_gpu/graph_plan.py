"""Launch plans for repeated graph calls: one CUDA graph per input buffer.

A GPU graph call with a deferred check ('ecl', 'kout', 'hb' on CuPy CSR
input, ``meshccl.graph._methods.DEFERRED_CHECK_METHODS``) issues about twenty kernel
launches and a dozen allocations.  On a graph of a few million vertices
the GPU needs about 0.4 ms for them, and the host about as long to issue
them (CuPy packs every launch's arguments in Python), so the call is bound
by the host.  A program that labels the same arrays again -- a benchmark,
a simulation whose bonds change in place, a solver that re-checks its
graph after each step -- pays that host time on every call.

A :class:`GraphPlan` records the whole call once as a CUDA graph: the
check on its side branch, the method's kernels, the relabel, the count
into the facts.  Every array the recording allocates (the clamped row
offsets, the parent array, the work lists, the relabel's scratch, the
facts) is kept by the plan, so that the graph's pointers stay valid.  A
call then launches the graph, copies the labels out of the plan's parent
array into a fresh one and reads the facts: one launch, one copy, one
transfer.

The graph reads the input through the pointers it was recorded with, at
the time it runs.  So a plan is keyed by those pointers (and the sizes,
dtypes, method, device, stream, thread) and replays only for arrays that
sit at exactly those addresses now -- whatever they hold: values changed
in place are read as they are, and invalid values are caught by the
check inside the graph, as on the direct path (the methods read rows
through the clamped copy, so nothing reads out of bounds).

A plan is recorded on the ``GRAPH_PLAN_AFTER``-th call with one key (a
one-off call never pays for the recording) and kept for up to
``GRAPH_MAX_PLANS`` keys per thread, for graphs of at most
``GRAPH_MAX_PLAN_VERTICES`` vertices (constants of ``meshccl._tuning``;
a plan holds about 20 bytes per vertex of device memory).  :func:`release`
drops them, and so does a change of the tuning constants.  If recording fails (a CuPy without graph
support, another allocator than CuPy's default pool, out of memory), the
key is marked and the direct path runs, now and later.  Nothing is
recorded outside the main thread (``capture.py``).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict

from .. import _tuning
from . import capture

#: keys whose calls are counted towards GRAPH_PLAN_AFTER, per thread
MAX_SEEN = 64

_local = threading.local()


def _tables():
    if not hasattr(_local, "plans"):
        _local.plans, _local.seen = OrderedDict(), OrderedDict()
    return _local.plans, _local.seen


def release():
    """Drop this thread's graph plans (their device memory goes back to
    CuPy's pool) and forget the calls counted so far."""
    plans, seen = _tables()
    plans.clear()
    seen.clear()


# a plan records the kernels as the tuning constants chose them
_tuning.when_changed(release)


@functools.lru_cache(maxsize=None)
def _capture_stream(device_id: int):
    """The stream plans are recorded on (one per device, so that the
    memory pool's blocks of released plans are found again by the next)."""
    import cupy

    return cupy.cuda.Stream(non_blocking=True)


class GraphPlan:
    """One recorded call: ``plan()`` -> (facts, labels) as the direct path
    gives them (facts: the 7-entry device array of :func:`.graph.check`
    with the count in slot 6; labels: a new CuPy array)."""

    def __init__(self, kind, indptr, indices, n, method, symmetric, compression):
        import cupy

        from . import graph as gpu

        pool = cupy.get_default_memory_pool()
        if cupy.cuda.get_allocator() != pool.malloc:
            raise RuntimeError("graph plans need CuPy's default memory pool")
        keep = []

        def alloc(size):
            mem = pool.malloc(size)
            keep.append(mem)  # every block the graph writes stays with the plan
            return mem

        dev = cupy.cuda.Device().id
        for t in ("int32", "int64"):  # made outside the graph: their zeros must be there
            gpu._dummy(dev, t)
        def launch():
            facts, join = gpu.check_aside(indptr, indices)
            try:
                _, P = gpu.components(kind, (indptr, indices), n, method, symmetric,
                                      compression=compression, facts=facts)
            finally:
                join()
            return facts, P

        with cupy.cuda.using_allocator(alloc):
            graph, (facts, P) = capture.record(_capture_stream(dev), launch)
        self.graph, self.facts, self.P, self._keep = graph, facts, P, keep

    def __call__(self):
        import cupy

        stream = cupy.cuda.get_current_stream()
        self.graph.launch(stream)
        labels = cupy.empty(self.P.shape, dtype=self.P.dtype)
        labels.data.copy_from_device_async(self.P.data, self.P.nbytes, stream)
        return self.facts, labels


def lookup(kind, indptr, indices, n, method, symmetric, compression):
    """The plan for this call, recorded now if this is the key's
    ``GRAPH_PLAN_AFTER``-th call; None: take the direct path (and count the
    call)."""
    plan_after = _tuning.GRAPH_PLAN_AFTER
    if plan_after < 1 or not 0 < n <= _tuning.GRAPH_MAX_PLAN_VERTICES or not capture.may_record():
        return None
    import cupy

    key = (kind, indptr.data.ptr, indices.data.ptr, indptr.size, indices.size,
           indptr.dtype.char, indices.dtype.char, n, method, bool(symmetric), compression,
           cupy.cuda.Device().id, cupy.cuda.get_current_stream().ptr)
    plans, seen = _tables()
    plan = plans.get(key)
    if plan is not None:
        plans.move_to_end(key)
        return plan or None  # False: recording failed for this key
    calls = seen.pop(key, 0) + 1
    if calls < plan_after:
        seen[key] = calls
        if len(seen) > MAX_SEEN:
            seen.popitem(last=False)
        return None
    try:
        plan = GraphPlan(kind, indptr, indices, n, method, symmetric, compression)
    except Exception:  # no graph here: the direct path, this time and later
        plan = False
    plans[key] = plan
    if len(plans) > _tuning.GRAPH_MAX_PLANS:
        plans.popitem(last=False)
    return plan or None
