"""Tuning constants, in one place, and the one way to change them.

Every constant here was kept because a measurement chose it; its comment
gives the reason in a line and names the entry of ``docs/decisions.md``
that holds the measurements.  They never change what a call returns, only
how fast it runs (labels are identical for every setting).

Library code reads them as ``_tuning.NAME`` at call time, never by
``from ._tuning import NAME``, so that :func:`override` is seen everywhere.
Tests and benchmarks that need another setting use :func:`override`;
nothing assigns to these names (or to any other module global) at run time.

Examples
--------
>>> from meshccl import _tuning
>>> with _tuning.override(CPU_SLAB_MIN_CELLS=1 << 20):
...     _tuning.CPU_SLAB_MIN_CELLS
1048576
"""

from __future__ import annotations

import contextlib
import threading

_lock = threading.RLock()
_on_change = []  # callables that drop what was built from these constants


def when_changed(fn):
    """Register ``fn()`` to run after :func:`override` sets or restores
    values (a module's caches of launch programs, say).  Returns ``fn``."""
    _on_change.append(fn)
    return fn


@contextlib.contextmanager
def override(**values):
    """Set tuning constants for the duration of a ``with`` block.

    Parameters
    ----------
    **values
        ``NAME=value`` for constants of this module.  An unknown name raises
        ``KeyError`` (so a renamed constant cannot be overridden silently).

    Notes
    -----
    Not thread-safe against calls running concurrently in other threads:
    meant for tests and benchmarks.  Caches built from the constants are
    dropped on entry and on exit.
    """
    g = globals()
    unknown = sorted(k for k in values if not (k.isupper() and k in g))
    if unknown:
        raise KeyError(f"no tuning constant named {', '.join(unknown)}")
    with _lock:
        old = {k: g[k] for k in values}
        g.update(values)
        _changed()
        try:
            yield
        finally:
            g.update(old)
            _changed()


def _changed():
    for fn in _on_change:
        fn()


# ---------------------------------------------------------------------------
# GPU: plain 1-D, 2-D and 3-D images (_gpu/image_plain.py)
# ---------------------------------------------------------------------------

# ---------------------------------------------------------------------------
# GPU: general lattices and the iterative methods
# ---------------------------------------------------------------------------

# ---------------------------------------------------------------------------
# GPU: graphs
# ---------------------------------------------------------------------------

# The samplers' sizes; the CPU twins (_cpu/graph.py) read the same values.
#: edges per vertex united by k-out sampling: 2 was best for Afforest and GConn
#: (docs/graph.md: "k-out sampling")
GRAPH_K_OUT = 2
#: entries a still-root vertex unites in hook-based sampling, as k-out's
#: (docs/graph.md: "hook-based sampling")
GRAPH_HB_EDGES = 2
#: BFS sampling stops after this many levels; what it reached is still one
#: connected set and the finish pass does the rest (docs/graph.md: "BFS sampling")
GRAPH_BFS_SAMPLE_LEVELS = 512
#: k-out runs all k entries in one guarded kernel above this many stored
#: entries per vertex, Afforest's rounds below (docs/graph.md: "k-out sampling")
GRAPH_KOUT_DENSE_DEGREE = 32

# method='auto' on the GPU (docs/graph.md: "auto on the GPU")
from fractions import Fraction  # noqa: E402  (an exact threshold)

#: sample ('kout') symmetric CSR storing more than this many entries per vertex
GRAPH_AUTO_KOUT_MIN_DEGREE = Fraction(23, 10)  # exact: m > 2.3 n
#: ... and use 'hb' instead above this many
GRAPH_AUTO_HB_MIN_DEGREE = 6
#: look for a path numbered in order at most this many entries per vertex ...
GRAPH_AUTO_CHAIN_MAX_DEGREE = 2
#: ... and take 'early' when this share of sampled entries joins v and v +- 1
GRAPH_AUTO_CHAIN_MIN_FRACTION = 0.75

#: resident blocks per multiprocessor of the validation scan: 8 x 256
#: threads fill an H100 / H200 multiprocessor at its 32 registers
GRAPH_CHECK_BLOCKS_PER_SM = 8
#: ... when it runs on a side stream beside the method: 2 leave the method
#: the bandwidth its loads need (docs/graph.md: "graph check aside")
GRAPH_CHECK_ASIDE_BLOCKS_PER_SM = 2

# Recorded launch plans of repeated calls (_gpu/graph_plan.py;
# docs/graph.md: "launch plans")
#: the call with one key on which a plan is recorded (1: the first; 0: never),
#: so that a one-off call never pays for the recording
GRAPH_PLAN_AFTER = 2
#: plans kept per thread (least recently used dropped first)
GRAPH_MAX_PLANS = 4
#: larger graphs take the direct path: the GPU's time dwarfs the host's
#: there, and a plan keeps about 20 bytes per vertex
GRAPH_MAX_PLAN_VERTICES = 1 << 23

# ---------------------------------------------------------------------------
# CPU: images and lattices
# ---------------------------------------------------------------------------

CPU_SLAB_MIN_CELLS = 1 << 12  # placeholder moved by the CPU work; see _cpu/

# ---------------------------------------------------------------------------
# CPU: graphs
# ---------------------------------------------------------------------------

# The parallel union-find of cpu_threads != 1 (_cpu/graph.py; docs/graph.md:
# "CPU threads").  The samplers use GRAPH_K_OUT, GRAPH_HB_EDGES and
# GRAPH_BFS_SAMPLE_LEVELS above.
#: chunks of work per thread, for load balance on skewed degrees
GRAPH_CPU_CHUNKS_PER_THREAD = 8
#: vertices (edges of an edge list) sampled to estimate the share of cross edges
GRAPH_CPU_SAMPLE_VERTICES = 1024
#: largest estimated share of cross edges for the 'local' scheme (1.0: always
#: 'local', -1.0: always 'cas'; tests run both schemes on any graph so)
GRAPH_CPU_LOCAL_CROSS = 0.25
#: fewer cross edges than this are united by the calling thread alone
GRAPH_CPU_SERIAL_CROSS = 1 << 16
#: a range's buffer of cross edges holds min(its stored edges,
#: its stored edges // GRAPH_CPU_CROSS_BUFFER_DIV + GRAPH_CPU_CROSS_BUFFER_MIN)
GRAPH_CPU_CROSS_BUFFER_DIV = 4
GRAPH_CPU_CROSS_BUFFER_MIN = 1024
#: graphs with fewer vertices + stored edges run serially: a parallel
#: region costs more than the whole serial union-find there
GRAPH_CPU_PARALLEL_MIN_WORK = 1 << 16
