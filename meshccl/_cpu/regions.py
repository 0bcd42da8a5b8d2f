"""When numba's parallel regions may run, and on how many threads.

The CPU backend's parallel modes (the mesh slabs and chunks, the graph
schemes) run in numba parallel regions.  Two situations must not enter one:

- a child forked after its parent had started numba's threading layer:
  GNU OpenMP ends such a child with SIGTERM the moment it starts a region,
  and TBB's state is undefined there;
- a second Python thread while one region runs: the 'workqueue' layer
  (where numba finds neither OpenMP nor TBB) aborts on concurrent use.

:func:`numba_region` answers whether a region may run now and, when it
may, sets numba's thread count for the block.  Callers fall back to Python
threads or to their serial code when it says no.
"""

import contextlib
import os
import sys
import threading

#: the process's state: forked after numba's threading layer started, and
#: the lock of the one region that may be open (replaced in a forked child)
_state = {"forked_after_start": False, "lock": threading.Lock()}


def _after_fork_in_child():
    started = sys.modules.get("numba.np.ufunc.parallel")
    if started is not None and getattr(started, "_is_initialized", True):
        _state["forked_after_start"] = True
    _state["lock"] = threading.Lock()  # (a parent's thread may have held it)


os.register_at_fork(after_in_child=_after_fork_in_child)


def forked_after_start():
    """Whether this process was forked after numba's threading layer started."""
    return _state["forked_after_start"]


@contextlib.contextmanager
def numba_region(threads):
    """Yield whether a numba parallel region may run now, on ``threads``
    threads (at most numba's NUMBA_NUM_THREADS; numba's count is set for the
    block and restored after).  No while another thread's block is open
    (tried without waiting) and in a child forked after the layer started."""
    import numba

    lock = _state["lock"]
    if _state["forked_after_start"] or not lock.acquire(blocking=False):
        yield False
        return
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS)))
        yield True
    finally:
        numba.set_num_threads(old)
        lock.release()
