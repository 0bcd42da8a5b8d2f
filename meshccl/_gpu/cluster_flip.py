"""The Swendsen-Wang step on the GPU without labels: the 2-D lattice chain
whose label pass writes the new spins.

A zero-field Swendsen-Wang step (:class:`meshccl.sim.Ising`) needs one
random sign per cluster, not labels numbered 1..N.  The chain of
``meshccl.label(spins, connectivity=1, periodic=True, bonds=bonds,
numbering='first-cell')`` (``runs2d-lattice``: tile, border and wrap
kernels, then the hooked roots' walks and each piece root's first-cell
label) ends, instead of its label pass, in ``meshccl_label_runs_spins``
(``number_pieces.cu``): each run's first-cell label is resolved as the
label pass resolves it and drawn once (Philox with that label as the
counter), and every cell's spin is written as one byte.  The int32 labels
are never written, and no flip kernel reads them: 8 bytes a cell fewer
and one launch fewer than labels followed by ``meshccl_ising_flip``.

The signs are those of the NumPy step (``Ising._sw_flip`` on first-cell
labels), which makes the CPU and the GPU runs equal bit for bit.  Only
2-D lattices of fewer than 2**31 cells take this chain; the others label
with first-cell numbering and flip (``meshccl_ising_flip``).
"""

from __future__ import annotations

import numpy as np

from .. import _tuning
from .launch import pack_chain
from .loader import kernels


class ClusterFlip:
    """The launches of one lattice shape, made once: ``flip(spins, bonds,
    words)`` returns the new int8 spins of ``spins`` (C-contiguous int8 CuPy
    array of the shape) with ``bonds`` (``(2,) + shape`` bool, C order) open,
    ``words`` the step's Philox words (tag, step low, step high, key low,
    key high, as ``numpy.uint32``)."""

    def __init__(self, shape):
        import cupy

        from .. import _validate
        from . import chains, image_plain

        shape = tuple(int(s) for s in shape)
        spins = cupy.ones(shape, dtype=np.int8)
        bonds = cupy.zeros((len(shape),) + shape, dtype=bool)
        prob = _validate.prepare(spins, None, 1, None, periodic=True, bonds=bonds,
                                 numbering="first-cell")
        case = chains.select(prob)
        if case.chain.name != "runs2d-lattice" or prob.work_dtype != np.int32:
            raise ValueError(f"the label-free flip takes 2-D lattices of fewer than 2**31 "
                             f"cells (chain runs2d-lattice, int32), got shape {shape} "
                             f"({case.chain.name}, {prob.work_dtype})")
        n = prob.size
        buffers = image_plain.scratch(n, prob.work_dtype, case.shape, slots=False)
        prog = chains.program(case, prob, buffers=buffers)
        name, label_pass = prog[-1]
        if name != "cells":
            raise AssertionError(f"the lattice chain ends in {name!r}, not its label pass")
        # meshccl_label_runs<int, R, W, false>'s arguments (labels, F, S, A, rows, nx, words,
        # Q, O, slots): the same grid and the first seven, then the spins and the words
        rows = _tuning.RUNS_LABEL_ROWS[4]  # (what image_plain gave the label pass)
        per_lane = _tuning.RUNS_LABEL_CELLS[4]
        (self._spins_kernel,) = kernels(
            "number_pieces.cu", f"meshccl_label_runs_spins<int, {rows}, {per_lane}>")
        self._grid, self._block = label_pass.grid, label_pass.block
        self._head = label_pass.args[1:7]
        self._chain = pack_chain(prog[:-1])
        self._labels = cupy.empty(n, dtype=np.int32)  # the forest (scratch)
        self.shape = shape

    def __call__(self, spins, bonds, words):
        import cupy

        out = cupy.empty(self.shape, dtype=np.int8)
        stream = cupy.cuda.get_current_stream().ptr
        vptr, pptr = spins.data.ptr, self._labels.data.ptr
        for launch in self._chain:
            launch(vptr, pptr, stream, 0, bonds.data.ptr)
        self._spins_kernel(self._grid, self._block,
                           (self._labels,) + self._head + (out,) + tuple(words))
        return out

