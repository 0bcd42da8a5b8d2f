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

# ---------------------------------------------------------------------------
# CPU: images and lattices
# ---------------------------------------------------------------------------

# Fewest cells per slab of the parallel plain case (_cpu/image_parallel.py):
# an array of fewer than twice as many is labelled serially whatever
# cpu_threads says.  A slab costs a seam and a share of three parallel
# regions' start; 4096 was the best of 1 to 2**17 on a 16-core host from
# 64**2 to 4096**2 (docs/decisions.md: "CPU slabs").
CPU_SLAB_MIN_CELLS = 1 << 12

# Fewest cells per thread of the other parallel cases (mask, bonds,
# tolerance, axes: _cpu/lattice.py); serially below twice as many.  2**14 was
# the best of 2**10 to 2**18 from 128**2 to 2048**2 on the same host
# (docs/decisions.md: "CPU chunks").
CPU_CHUNK_MIN_CELLS = 1 << 14

# Chunks of rows per thread in those cases: more than one evens out chunks
# of unequal work; each adds a border to unite serially (docs/decisions.md:
# "CPU chunks").
CPU_CHUNKS_PER_THREAD = 4

# First size of the table of provisional labels of the general serial scan
# (_cpu/image.py), in cells per entry and at least: most images need far
# fewer labels than cells, and the table doubles when it fills, so it
# starts small (docs/decisions.md: "CPU provisional labels").
CPU_PROV_TABLE_CELLS_PER_LABEL = 32
CPU_PROV_TABLE_MIN = 1024

# ---------------------------------------------------------------------------
# CPU: graphs
# ---------------------------------------------------------------------------
