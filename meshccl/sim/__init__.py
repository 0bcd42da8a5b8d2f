"""Lattice simulators that label their own state: ``meshccl.sim``.

- :class:`Ising`: the Ising model on periodic square and simple-cubic
  lattices, with a field; Metropolis (checkerboard), Kawasaki (spin
  exchange, conserved magnetisation) and Swendsen-Wang (clusters from
  :func:`meshccl.label` with ``bonds=``) dynamics.
- :class:`CahnHilliard`: a quenched binary alloy (semi-implicit spectral
  Cahn-Hilliard) on periodic 2-D and 3-D grids, float32 or float64.

Both run on NumPy (the CPU) or CuPy (the GPU), chosen by ``xp=`` or the
initial array, through the same code.  ``sim.run(steps, every=k,
on_label=f)`` (or ``for step, clusters in sim.iterate(steps, every=k)``)
labels a phase every k steps on the state's device and hands over a
:class:`Clusters` whose statistics come from :mod:`meshccl.measure`.
Random numbers are counter-based (:mod:`meshccl.sim.random`, Philox4x32-10):
a seed fixes a run, NumPy and CuPy Ising runs agree spin for spin, and
:meth:`~Simulation.save` / :func:`load` checkpoints resume bit-identically.
:mod:`meshccl.sim.exact` has the exact 2-D Ising results the tests compare
with, :mod:`meshccl.sim.analysis` the error bars.  See ``docs/sim.md``.

Examples
--------
>>> import numpy as np
>>> from meshccl.sim import Ising
>>> sim = Ising((32, 32), temperature=2.269, algorithm="swendsen-wang", seed=1)
>>> for step, clusters in sim.iterate(20, every=10, label="up"):
...     print(step, clusters.n > 0, 0 < clusters.largest_fraction <= 1)
10 True True
20 True True
"""

from . import analysis, exact, random
from .cahn_hilliard import CahnHilliard
from .hooks import CallbackError, Clusters, Simulation, SimulationError, load
from .ising import Ising

__all__ = ["Ising", "CahnHilliard", "Clusters", "Simulation", "SimulationError",
           "CallbackError", "load", "analysis", "exact", "random"]
