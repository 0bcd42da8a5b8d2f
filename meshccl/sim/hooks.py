"""What the simulators share: the run loop, labelling every k steps, checkpoints.

:class:`Simulation` is the base of :class:`~meshccl.sim.Ising` and
:class:`~meshccl.sim.CahnHilliard`.  A subclass supplies one step
(``_advance``), its state array, its observables, the phases it can label
and its checkpoint parameters; everything else is here:

- :meth:`Simulation.run` advances ``steps`` steps, labels the chosen phase
  every ``every`` steps (``meshccl.label(..., periodic=True)`` on the
  state's own device) and hands the callback a :class:`Clusters`, whose
  statistics come from :mod:`meshccl.measure`, computed when first read;
- :meth:`Simulation.iterate` is the same loop as a generator of
  ``(step, clusters)``;
- :meth:`Simulation.save` / :func:`load` write and read NumPy ``.npz``
  checkpoints; random numbers depend only on (seed, step, cell), so a run
  resumed from a checkpoint is bit-identical to one that never stopped;
- a tqdm progress bar on long runs when tqdm is installed.
"""

from __future__ import annotations

import functools
import json
import numbers
import os
import warnings

import numpy as np

from .. import measure
from ..labelling import label as _label

__all__ = ["Simulation", "Clusters", "SimulationError", "CallbackError", "load",
           "PROGRESS_STEPS", "CHECKPOINT_VERSION"]

#: runs of at least this many steps show a progress bar by default (with tqdm)
PROGRESS_STEPS = 1000
#: the checkpoint format written by :meth:`Simulation.save`
CHECKPOINT_VERSION = 1


class SimulationError(RuntimeError):
    """The simulation cannot go on (e.g. a time step that blew up).

    Attributes
    ----------
    step : int
        The step at which it happened.
    record : dict
        What ``run(..., record=...)`` had recorded before it (host arrays).
    """

    def __init__(self, message, step, record=None):
        super().__init__(message)
        self.step = step
        self.record = record if record is not None else {}


class CallbackError(RuntimeError):
    """The ``on_label`` callback raised; the original exception is ``__cause__``.

    The run stopped right after the labelled step; the simulation's state
    is that step's, intact, and a further ``run`` resumes from it.

    Attributes
    ----------
    step : int
        The step whose labels the callback was given.
    record : dict
        What ``run(..., record=...)`` had recorded up to that step.
    """

    def __init__(self, message, step, record=None):
        super().__init__(message)
        self.step = step
        self.record = record if record is not None else {}


def _xp_of(array):
    if type(array).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


def _host(a):
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


def _count(value, name, low):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int >= {low}, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return int(value)


def _seed(seed):
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int in [0, 2**64), got {seed!r}")
    if not 0 <= int(seed) < 2**64:
        raise ValueError(f"seed must be an int in [0, 2**64), got {seed!r}")
    return int(seed)


def _real(value, name, positive=False, nonnegative=False):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if positive and not value > 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    if nonnegative and not value >= 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return value


def _array_module(xp, given):
    """numpy or cupy: ``xp`` if given, else the module of the array ``given``, else numpy."""
    if xp is None:
        return np if given is None else _xp_of(given)
    if xp is np or getattr(xp, "__name__", None) == "cupy":
        return xp
    raise TypeError(f"xp must be the numpy or the cupy module, got {xp!r}")


class Clusters:
    """The labels of one phase at one step, with statistics computed on demand.

    Passed to ``run(..., on_label=...)`` callbacks and yielded by
    ``iterate``.  The labels stay on the state's device; the statistics
    come from :mod:`meshccl.measure` on that device, each computed when
    first read and then kept.

    Attributes
    ----------
    step : int
        The step the labels belong to (steps completed since the start).
    labels : numpy.ndarray or cupy.ndarray
        ``meshccl.label`` of the phase (periodic, the run's connectivity):
        0 outside the phase, 1..n in raster order of each component's
        first cell.
    phase : str
        Which phase was labelled (``'up'``, ``'A'``, ``'clusters'``, ...).

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.sim import Clusters
    >>> c = Clusters(np.array([[1, 1, 0], [0, 0, 2]]), step=10)
    >>> c.n, c.largest_fraction
    (2, 0.6666666666666666)
    >>> c.size_histogram()
    (array([1, 1]), array([1, 2, 3]))
    """

    def __init__(self, labels, step, phase=None, periodic=True):
        self.labels = labels
        self.step = int(step)
        self.phase = phase
        self.periodic = periodic

    def __repr__(self):
        return (f"Clusters(step={self.step}, phase={self.phase!r}, "
                f"shape={tuple(self.labels.shape)})")

    @functools.cached_property
    def n(self):
        """The number of components (labels are 1..n); on CuPy, one small read."""
        return int(self.labels.max()) if self.labels.size else 0

    @functools.cached_property
    def largest_fraction(self):
        """Cells of the largest component over cells of all (``measure.largest_fraction``)."""
        return measure.largest_fraction(self.labels, labelled=True)

    @functools.cached_property
    def counts(self):
        """Cells per label, int64, row 0 the cells outside the phase (on the labels' device)."""
        return measure.statistics(self.labels)["voxel_counts"]

    def size_histogram(self, log_bins=False):
        """``measure.size_histogram`` of the labels: ``(hist, edges)``, on their device."""
        key = ("hist", bool(log_bins))
        cache = self.__dict__.setdefault("_hist", {})
        if key not in cache:
            cache[key] = measure.size_histogram(self.labels, log_bins=log_bins)
        return cache[key]

    def statistics(self, **kwargs):
        """``measure.statistics`` of the labels (periodic boxes and centroids by default)."""
        kwargs.setdefault("periodic", self.periodic)
        return measure.statistics(self.labels, **kwargs)


def _progress(total, progress, desc):
    """A tqdm bar, or None (progress False, a short run without progress=True, no tqdm)."""
    if progress is False or (progress is None and total < PROGRESS_STEPS) or total == 0:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        if progress:
            warnings.warn("progress=True needs tqdm (pip install 'meshccl[sim]'); running "
                          "without a progress bar", stacklevel=4)
        return None
    return tqdm(total=total, desc=desc, unit="step", leave=False)


class Simulation:
    """Base of the simulators: the run loop, labelling hooks and checkpoints.

    Subclasses define ``kind`` (the name in checkpoints), ``state``, the
    phases (``PHASES``), ``OBSERVABLES``, ``_advance()`` (one step: compute
    the new state, then commit it and ``self.step += 1``),
    ``_phase_image(phase)``, ``_params()`` and ``_from_checkpoint``.
    """

    kind = "simulation"
    #: phases ``label=`` accepts (besides a callable)
    PHASES = ()
    #: names ``record=`` accepts
    OBSERVABLES = ()
    #: the default phase to label
    DEFAULT_PHASE = None

    def __init__(self, xp, seed):
        self.xp = xp
        self.seed = _seed(seed)
        self.step = 0

    # -- to be supplied ------------------------------------------------------
    @property
    def state(self):  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def shape(self):
        return tuple(self.state.shape)

    def _advance(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _phase_image(self, phase):  # pragma: no cover - abstract
        raise NotImplementedError

    def _observe(self, name):  # pragma: no cover - abstract
        raise NotImplementedError

    def _params(self):  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def _from_checkpoint(cls, params, state, xp, seed):  # pragma: no cover - abstract
        raise NotImplementedError

    def _check_phase(self, phase):
        """Raise ValueError if this simulation cannot label ``phase`` (no-op here)."""

    def _verify(self):
        """Raise SimulationError if the state went bad since the last check (no-op here)."""

    def _before_label(self, phase):
        """The next step will be labelled as ``phase`` (a name of ``PHASES``, or a
        callable): a simulator may prepare the image as it steps (no-op here)."""

    # -- labelling -------------------------------------------------------------
    def labels(self, label=None, connectivity=1):
        """Label a phase of the current state now.

        Parameters
        ----------
        label : str or callable, optional
            One of the simulator's ``PHASES`` (default ``DEFAULT_PHASE``), or
            a function of the state array returning the image to label
            (equal-valued neighbours join, 0 is background, as
            :func:`meshccl.label`).
        connectivity : int, optional
            Orthogonal hops, 1..ndim (default 1: nearest neighbours).

        Returns
        -------
        Clusters
        """
        self._verify()
        phase = self.DEFAULT_PHASE if label is None else label
        if callable(phase):
            image = phase(self.state)
            name = getattr(phase, "__name__", "callable")
        else:
            if phase not in self.PHASES:
                raise ValueError(f"label must be one of {self.PHASES} or a callable, got "
                                 f"{phase!r}")
            self._check_phase(phase)
            image, name = self._phase_image(phase), phase
            if isinstance(image, Clusters):
                return image
        labels = _label(image, connectivity=connectivity, periodic=True)
        return Clusters(labels, self.step, name)

    # -- the run loop ----------------------------------------------------------
    def _check_run(self, steps, every, label, connectivity, record):
        steps = _count(steps, "steps", 0)
        every = None if every is None else _count(every, "every", 1)
        if label is not None and not callable(label):
            if label not in self.PHASES:
                raise ValueError(f"label must be one of {self.PHASES} or a callable, got "
                                 f"{label!r}")
            self._check_phase(label)
        connectivity = _count(connectivity, "connectivity", 1)
        if connectivity > len(self.shape):
            raise ValueError(f"connectivity must be 1..{len(self.shape)}, got {connectivity}")
        if isinstance(record, str):
            record = (record,)
        record = tuple(record)
        for name in record:
            if name not in self.OBSERVABLES:
                raise ValueError(f"record takes {self.OBSERVABLES}, got {name!r}")
        return steps, every, record

    def _loop(self, steps, every, label, connectivity, record, series, progress):
        """Advance ``steps`` steps; yield Clusters at steps divisible by ``every``."""
        bar = _progress(steps, progress, type(self).__name__)
        try:
            for _ in range(steps):
                if every is not None and (self.step + 1) % every == 0:
                    self._before_label(self.DEFAULT_PHASE if label is None else label)
                self._advance()
                for name in record:
                    series[name].append(self._observe(name))
                if bar is not None:
                    bar.update(1)
                if every is not None and self.step % every == 0:
                    yield self.labels(label, connectivity)
            self._verify()
        finally:
            if bar is not None:
                bar.close()

    def _collect(self, series):
        out = {}
        for name, values in series.items():
            if not values:
                out[name] = np.zeros(0)
            else:
                out[name] = _host(self.xp.stack(values))
        return out

    def run(self, steps, every=None, on_label=None, *, label=None, connectivity=1,
            record=(), progress=None):
        """Advance ``steps`` steps, labelling a phase every ``every`` steps.

        Parameters
        ----------
        steps : int
            Steps to take (>= 0).  A step is a sweep: every cell is offered
            an update once (Metropolis, Kawasaki, Swendsen-Wang), or one
            time step (Cahn-Hilliard).
        every : int, optional
            Label at the steps ``sim.step`` divisible by ``every`` (counted
            from the start of the simulation, not of this call, so that
            resumed runs label the same steps).  Needs ``on_label``.
        on_label : callable, optional
            Called with a :class:`Clusters` (labels on the state's device,
            statistics through :mod:`meshccl.measure`, computed when read).
            If it raises, the run stops there with :class:`CallbackError`;
            the state is that step's and the run can be resumed.
        label : str or callable, optional
            The phase to label (see :meth:`labels`).
        connectivity : int, optional
            Orthogonal hops for the labelling (default 1).
        record : sequence of str, optional
            Observables to record after every step (the simulator's
            ``OBSERVABLES``); kept on the device during the run and copied
            to the host once at the end.
        progress : bool, optional
            A tqdm progress bar: default on for runs of at least
            ``PROGRESS_STEPS`` steps when tqdm is installed; False turns it
            off, True asks for it on any run.

        Returns
        -------
        dict
            One float64 NumPy array per ``record`` name, one value per step.

        Raises
        ------
        CallbackError
            ``on_label`` raised (the original exception is ``__cause__``).
        SimulationError
            The state became invalid (e.g. a Cahn-Hilliard time step that
            is too large); the message names the step.

        Examples
        --------
        >>> import numpy as np
        >>> from meshccl.sim import Ising
        >>> sim = Ising((16, 16), temperature=2.0, seed=3)
        >>> seen = []
        >>> out = sim.run(20, every=10, on_label=lambda c: seen.append((c.step, c.n)),
        ...               record=["energy"])
        >>> [s for s, _ in seen], out["energy"].shape
        ([10, 20], (20,))
        """
        if (every is None) != (on_label is None):
            raise ValueError("every and on_label go together: every=k labels every k steps "
                             "and hands the labels to on_label")
        if on_label is not None and not callable(on_label):
            raise TypeError(f"on_label must be callable, got {on_label!r}")
        steps, every, record = self._check_run(steps, every, label, connectivity, record)
        series = {name: [] for name in record}
        loop = self._loop(steps, every, label, connectivity, record, series, progress)
        try:
            for clusters in loop:
                try:
                    on_label(clusters)
                except Exception as exc:
                    loop.close()
                    raise CallbackError(
                        f"on_label raised {type(exc).__name__} at step {clusters.step}: {exc}; "
                        f"the run stopped there and the state of step {self.step} is kept "
                        "(call run again to go on)", clusters.step,
                        self._collect(series)) from exc
        except SimulationError as exc:
            exc.record = self._collect(series)
            raise
        return self._collect(series)

    def iterate(self, steps, every, *, label=None, connectivity=1, progress=None):
        """Advance ``steps`` steps, yielding ``(step, clusters)`` every ``every`` steps.

        The generator form of :meth:`run`: the simulation advances as the
        loop asks for more, so breaking out of the loop leaves it at the
        last yielded step.

        Parameters
        ----------
        steps, every : int
            As in :meth:`run` (``every`` is required here).
        label, connectivity, progress
            As in :meth:`run`.

        Yields
        ------
        step : int
        clusters : Clusters

        Examples
        --------
        >>> from meshccl.sim import Ising
        >>> sim = Ising((16, 16), temperature=1.5, algorithm="swendsen-wang", seed=1)
        >>> for step, clusters in sim.iterate(30, every=10, label="up"):
        ...     print(step, clusters.largest_fraction > 0.5)
        10 True
        20 True
        30 True
        """
        if every is None:
            raise TypeError("iterate needs every= (label every k steps)")
        steps, every, _ = self._check_run(steps, every, label, connectivity, ())
        return self._iterate(steps, every, label, connectivity, progress)

    def _iterate(self, steps, every, label, connectivity, progress):
        for clusters in self._loop(steps, every, label, connectivity, (), {}, progress):
            yield clusters.step, clusters

    # -- checkpoints -----------------------------------------------------------
    def save(self, path):
        """Write the state, step, seed and parameters to a NumPy ``.npz`` file.

        A simulation loaded from it continues bit-identically to this one
        (random numbers depend only on seed, step and cell).  ``path`` gets
        ``.npz`` appended if it lacks it (as :func:`numpy.savez` does).

        Examples
        --------
        >>> import os, tempfile
        >>> from meshccl.sim import Ising
        >>> sim = Ising((8, 8), temperature=2.0, seed=5)
        >>> _ = sim.run(3)
        >>> path = os.path.join(tempfile.mkdtemp(), "ising.npz")
        >>> sim.save(path)
        >>> again = Ising.load(path)
        >>> again.step, bool((again.state == sim.state).all())
        (3, True)
        """
        self._verify()
        np.savez(os.fspath(path), kind=np.array(self.kind),
                 version=np.array(CHECKPOINT_VERSION),
                 step=np.array(self.step, dtype=np.uint64),
                 seed=np.array(self.seed, dtype=np.uint64),
                 params=np.array(json.dumps(self._params())),
                 state=_host(self.state))

    @classmethod
    def load(cls, path, xp=None):
        """Read a checkpoint written by :meth:`save`.

        Parameters
        ----------
        path : str or path-like
        xp : module, optional
            ``numpy`` (default) or ``cupy``: where the loaded state lives.

        Returns
        -------
        Simulation
            Of the class that saved it (``Simulation.load`` and
            :func:`meshccl.sim.load` take any; ``Ising.load`` refuses a
            Cahn-Hilliard checkpoint).
        """
        xp = np if xp is None else _array_module(xp, None)
        try:
            with np.load(os.fspath(path), allow_pickle=False) as f:
                kind = str(f["kind"])
                version = int(f["version"])
                step, seed = int(f["step"]), int(f["seed"])
                params = json.loads(str(f["params"]))
                state = f["state"]
        except KeyError as exc:
            raise ValueError(f"{os.fspath(path)} is not a meshccl.sim checkpoint (no {exc})") \
                from None
        if version != CHECKPOINT_VERSION:
            raise ValueError(f"{os.fspath(path)}: checkpoint version {version}, this meshccl "
                             f"reads version {CHECKPOINT_VERSION}")
        target = _KINDS.get(kind)
        if target is None:
            raise ValueError(f"{os.fspath(path)}: unknown simulation kind {kind!r}")
        if cls is not Simulation and not issubclass(target, cls):
            raise ValueError(f"{os.fspath(path)} holds a {target.__name__} checkpoint, not "
                             f"{cls.__name__}")
        sim = target._from_checkpoint(params, xp.asarray(state), xp, seed)
        sim.step = step
        return sim


#: checkpoint kind -> class (filled by the subclasses' modules)
_KINDS = {}


def register(cls):
    """Class decorator: make ``cls`` loadable from checkpoints of its ``kind``."""
    _KINDS[cls.kind] = cls
    return cls


def load(path, xp=None):
    """Read any simulator's checkpoint (see :meth:`Simulation.load`)."""
    return Simulation.load(path, xp=xp)
