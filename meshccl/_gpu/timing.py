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
