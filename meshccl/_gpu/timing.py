"""Per-phase GPU timing for ``return_info=True``: CUDA events around launches."""

from __future__ import annotations


class PhaseTimer:
    """Records a pair of CUDA events around each timed launch.

    ``seconds()`` waits for the last event and returns the summed time per
    phase name, in seconds, in the order the phases first ran.
    """

    def __init__(self):
        self._marks = []
        self._sums = {}

    def run(self, name, launch):
        import cupy

        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        result = launch()
        stop.record()
        self._marks.append((name, start, stop))
        return result

    def fold(self):
        """Add up the events recorded so far and let them go (long loops)."""
        import cupy

        if self._marks:
            self._marks[-1][2].synchronize()
        for name, start, stop in self._marks:
            self._sums[name] = self._sums.get(name, 0.0) + cupy.cuda.get_elapsed_time(start, stop) / 1e3
        self._marks = []

    def seconds(self) -> dict:
        self.fold()
        return dict(self._sums)


def run(timer, name, launch):
    """Run ``launch()``, timed as phase ``name`` when ``timer`` is not None."""
    return launch() if timer is None else timer.run(name, launch)


class PeakMemory:
    """Device memory a ``with`` block takes from CuPy's memory pool (on this
    thread): ``peak`` is the high-water mark of the bytes it holds, counted
    from the block's start.

    A CuPy memory hook sees every block the pool hands out and takes back,
    whether the pool had it cached or asks the driver for it, in the sizes
    the pool deals in (rounded up to 512 bytes).  Only blocks taken inside
    the ``with`` count: the input and anything else allocated before are
    not, and freeing such a block inside does not lower the count.  The
    blocks still held at the end stay in ``live`` (pointer -> bytes), so
    :meth:`holds` tells whether an output came from the pool within the
    block.  This is the one count of ``return_info``'s ``gpu_memory``, of
    ``benchmarks/bench.py``'s peak-memory columns and of
    ``tests/test_memory.py``.

    ``site``: a function called at each allocation that returns where it
    was made (a string); ``at_peak`` then lists the blocks held at the
    high-water mark as (bytes, site), largest first.  Hooks of several
    ``PeakMemory`` may be active at once (nested blocks each count).
    """

    def __init__(self, site=None):
        self.site = site
        self.at_peak = []
        self.current = self.peak = 0
        self.live = {}
        self.sites = {}

    def __enter__(self):
        from cupy.cuda import memory_hook

        outer = self

        class _Hook(memory_hook.MemoryHook):
            name = f"meshccl-peak-{id(outer):x}"  # (CuPy keys hooks by name)

            def malloc_postprocess(self, **kw):
                ptr, size = kw["mem_ptr"], kw["mem_size"]
                if not ptr:  # the allocation failed
                    return
                outer.live[ptr] = size
                outer.current += size
                if outer.site is not None:
                    outer.sites[ptr] = outer.site()
                    if outer.current > outer.peak:
                        outer.at_peak = sorted(((b, outer.sites.get(p, "?"))
                                                for p, b in outer.live.items()), reverse=True)
                outer.peak = max(outer.peak, outer.current)

            def free_postprocess(self, **kw):
                outer.current -= outer.live.pop(kw["mem_ptr"], 0)

        self.current = self.peak = 0
        self.live, self.sites, self.at_peak = {}, {}, []
        self._hook = _Hook()
        self._hook.__enter__()
        return self

    def __exit__(self, *exc):
        self._hook.__exit__(*exc)
        return False

    def holds(self, ptr):
        """True when device address ``ptr`` lies in a block taken from the
        pool inside the ``with`` and not given back."""
        return any(p <= ptr < p + size for p, size in self.live.items())
