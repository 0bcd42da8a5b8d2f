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
    """Peak bytes taken from CuPy's memory pool while the ``with`` block runs
    (on this thread), counted from its start: the labelling's own arrays --
    labels, scratch, any copy of the input -- but not the input itself."""

    def __enter__(self):
        from cupy.cuda import memory_hook

        outer = self

        class _Hook(memory_hook.MemoryHook):
            name = "meshccl-peak"

            def malloc_postprocess(self, **kw):
                outer.current += kw["mem_size"]
                outer.peak = max(outer.peak, outer.current)

            def free_postprocess(self, **kw):
                outer.current -= kw["mem_size"]

        self.current = 0
        self.peak = 0
        self._hook = _Hook()
        self._hook.__enter__()
        return self

    def __exit__(self, *exc):
        self._hook.__exit__(*exc)
        return False
