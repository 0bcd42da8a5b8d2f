"""The Swendsen-Wang step on the GPU without labels: the 2-D lattice chain
whose label pass writes the new spins.

A zero-field Swendsen-Wang step (:class:`meshccl.sim.Ising`) needs one
random sign per cluster, not labels numbered 1..N.  The chain of
``meshccl.label(spins, connectivity=1, periodic=True, bonds=bonds,
numbering='first-cell')`` (``runs2d-lattice``: tile, border and wrap
kernels, then the hooked roots' walks) ends in the ``_spins`` forms of
its last two kernels (``number_pieces.cu``): ``meshccl_label_pieces_spins``
writes at each piece root the sign drawn at its root's first-cell label
(Philox with that label as the counter: a call per piece root, not per
cell), and ``meshccl_label_runs_spins`` resolves every run as the label
pass does and writes each cell's spin as one byte.  The int32 labels are
never written, and no flip kernel reads them: 8 bytes a cell fewer and one
launch fewer than labels followed by ``meshccl_ising_flip``.

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
        (pieces_name, pieces), (name, label_pass) = prog[-2:]
        if (pieces_name, name) != ("pieces", "cells"):
            raise AssertionError(f"the lattice chain ends in {pieces_name!r}, {name!r}, not "
                                 f"its piece and label passes")
        # the same grids; meshccl_label_pieces_first's arguments (labels, A, H, incl,
        # block_incl, words) and meshccl_label_runs<int, R, W, false>'s (labels, F, S, A,
        # rows, nx, words, Q, O, slots) less those the spin forms do not read
        rows = _tuning.RUNS_LABEL_ROWS[4]  # (what image_plain gave the label pass)
        per_lane = _tuning.RUNS_LABEL_CELLS[4]
        wpt = 1  # (image_plain.lattice_program's piece kernels: a word a thread)
        self._pieces_kernel, self._runs_kernel = kernels(
            "number_pieces.cu", f"meshccl_label_pieces_spins<int, {wpt}>",
            f"meshccl_label_runs_spins<int, {rows}, {per_lane}>")
        self._pieces_launch = (pieces.grid, pieces.block, (pieces.args[1], pieces.args[5]))
        self._runs_launch = (label_pass.grid, label_pass.block, label_pass.args[1:7])
        self._chain = pack_chain(prog[:-2])
        self._labels = cupy.empty(n, dtype=np.int32)  # the forest (scratch)
        self.shape = shape

    def __call__(self, spins, bonds, words):
        import cupy

        out = cupy.empty(self.shape, dtype=np.int8)
        stream = cupy.cuda.get_current_stream().ptr
        vptr, pptr = spins.data.ptr, self._labels.data.ptr
        for launch in self._chain:
            launch(vptr, pptr, stream, 0, bonds.data.ptr)
        grid, block, args = self._pieces_launch
        self._pieces_kernel(grid, block, (self._labels,) + args + tuple(words))
        grid, block, args = self._runs_launch
        self._runs_kernel(grid, block, (self._labels,) + args + (out,))
        return out

