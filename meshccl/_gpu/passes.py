"""Iterate a GPU pass until it changes nothing, reading change flags in batches.

The iterative methods (mesh kernels A-D in iterate.py, and the graph methods
SV, edge / vertex label propagation and BFS in graph.py) repeat a pass until
a pass changes nothing.  Every pass gets its own "changed" flag, and the
host reads the flags of a batch of passes at once: the batch grows with the
passes done so far (a quarter of them, at most :data:`BATCH_MAX`), so the
host waits about once per batch instead of once per pass, and at most a
quarter of the work is spent on passes after the fixed point -- which change
nothing, so the results and the reported pass count are exact.

A loop whose passes are all alike (the strong components' trim and
colouring, and the levels of their searches) may also hand a
:class:`BatchGraphs`: a batch of passes is then recorded once as a CUDA
graph and replayed, one host call instead of a Python launch per kernel --
the host's launch time, not the GPU's, is what a pass over a narrow
frontier costs.  The same kernels run in the same order either way.
"""

from __future__ import annotations

import numpy as np

from ..errors import NotConverged
from . import capture

#: Most passes launched between two reads of the change flags.
BATCH_MAX = 64


class BatchGraphs:
    """Batches of passes recorded as CUDA graphs and replayed.

    :meth:`run` launches a batch through ``launch()`` the first time its
    key comes, and records it as a graph (on :func:`.graph_plan._capture_stream`)
    and replays that graph the second time and after: a key must name
    launches that are the same kernels on the same arrays every time.
    Batches of fewer than ``smallest`` passes always launch directly
    (a graph's recording costs about what a direct batch costs); 0: never
    record.  Nor is anything recorded outside the main thread
    (``capture.py``).  ``replayed`` counts the passes run from graphs; ``flags``:
    the change flags of :func:`until_settled`, kept here because the
    recorded passes write to them.
    """

    def __init__(self, smallest):
        self.smallest = int(smallest)
        self.graphs = {}
        self.seen = set()
        self.replayed = 0
        self.flags = None

    def run(self, key, size, launch):
        """Launch ``size`` passes: ``launch()`` or the graph recorded from it."""
        graph = self.graphs.get(key)
        if graph is None:
            if (not self.smallest or size < self.smallest or key not in self.seen
                    or not capture.may_record()):
                self.seen.add(key)
                launch()
                return
            import cupy

            from .graph_plan import _capture_stream

            graph, _ = capture.record(_capture_stream(cupy.cuda.Device().id), launch)
            self.graphs[key] = graph
        import cupy

        graph.launch(cupy.cuda.get_current_stream())
        self.replayed += size


def until_settled(one_pass, method, max_iterations=None, after_batch=None, graphs=None,
                  on_batch=None):
    """Run ``one_pass(t, flag)`` for t = 0, 1, ... until a pass leaves its
    flag (a 1-element int32 device array, zeroed before) unset.

    Returns the number of passes including the last, which changed nothing.
    Raises :class:`~meshccl.errors.NotConverged` once ``max_iterations``
    passes all set their flags.  ``on_batch(k)`` runs after the k passes of
    a batch are launched, ``after_batch()`` after each read of the flags
    (the device is idle then).  ``graphs``: a :class:`BatchGraphs` that
    records and replays the batches, for a ``one_pass`` that launches the
    same work whatever t (and does nothing on the host but launch).
    """
    import cupy

    if graphs is None:
        flags = cupy.zeros(BATCH_MAX, dtype=cupy.int32)
    else:  # the flags the recorded passes write
        if graphs.flags is None:
            graphs.flags = cupy.zeros(BATCH_MAX, dtype=cupy.int32)
        flags = graphs.flags
    slots = [flags[t:t + 1] for t in range(BATCH_MAX)]
    done = 0
    while True:
        batch = min(BATCH_MAX, max(1, done // 4))
        if max_iterations is not None:
            batch = min(batch, max_iterations - done)
        flags[:batch].fill(0)

        def launch(done=done, batch=batch):
            for t in range(batch):
                one_pass(done + t, slots[t])

        if graphs is None:
            launch()
        else:
            graphs.run((one_pass, batch), batch, launch)
        if on_batch is not None:
            on_batch(batch)
        settled = np.flatnonzero(flags[:batch].get() == 0)
        if after_batch is not None:
            after_batch()
        if settled.size:
            return done + int(settled[0]) + 1
        done += batch
        if max_iterations is not None and done >= max_iterations:
            raise NotConverged(f"method={method!r} did not converge within "
                               f"max_iterations={max_iterations} passes")
