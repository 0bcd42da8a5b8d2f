"""Iterate a GPU pass until it changes nothing, reading change flags in batches.

The iterative methods (mesh kernels A-D in iterate.py, and the graph methods
SV, edge / vertex label propagation and BFS in graph.py) repeat a pass until
a pass changes nothing.  Every pass gets its own "changed" flag, and the
host reads the flags of a batch of passes at once: the batch grows with the
passes done so far (a quarter of them, at most :data:`BATCH_MAX`), so the
host waits about once per batch instead of once per pass, and at most a
quarter of the work is spent on passes after the fixed point -- which change
nothing, so the results and the reported pass count are exact.
"""

from __future__ import annotations

import numpy as np

from ..errors import NotConverged

#: Most passes launched between two reads of the change flags.
BATCH_MAX = 64


def until_settled(one_pass, method, max_iterations=None, after_batch=None):
    """Run ``one_pass(t, flag)`` for t = 0, 1, ... until a pass leaves its
    flag (a 1-element int32 device array, zeroed before) unset.

    Returns the number of passes including the last, which changed nothing.
    Raises :class:`~meshccl.errors.NotConverged` once ``max_iterations``
    passes all set their flags.  ``after_batch()`` runs after each read of
    the flags (the device is idle then).
    """
    import cupy

    flags = cupy.zeros(BATCH_MAX, dtype=cupy.int32)
    slots = [flags[t:t + 1] for t in range(BATCH_MAX)]
    done = 0
    while True:
        batch = min(BATCH_MAX, max(1, done // 4))
        if max_iterations is not None:
            batch = min(batch, max_iterations - done)
        flags[:batch].fill(0)
        for t in range(batch):
            one_pass(done + t, slots[t])
        settled = np.flatnonzero(flags[:batch].get() == 0)
        if after_batch is not None:
            after_batch()
        if settled.size:
            return done + int(settled[0]) + 1
        done += batch
        if max_iterations is not None and done >= max_iterations:
            raise NotConverged(f"method={method!r} did not converge within "
                               f"max_iterations={max_iterations} passes")
