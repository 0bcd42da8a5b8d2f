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

The bonds are drawn inside the chain's tile, border and wrap kernels
(their ``drawn`` forms in ``runs2d.cu``, ``drawn_bonds.cuh``): each bond's
Philox word, the one ``meshccl_ising_bonds`` would write into a bond plane,
is drawn where the kernel asks whether the bond is open, so no bond planes
are written or read.

The signs are those of the NumPy step (``Ising._sw_flip`` on first-cell
labels), which makes the CPU and the GPU runs equal bit for bit.  Only
2-D lattices of fewer than 2**31 cells take this chain; the others label
with first-cell numbering and flip (``meshccl_ising_flip``).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _tuning
from .launch import LABELS, VALUES
from .loader import kernels


class ClusterFlip:
    """The launches of one lattice shape, made once: ``flip(spins, threshold,
    bond_words, cluster_words)`` returns the new int8 spins of ``spins``
    (C-contiguous int8 CuPy array of the shape).  The chain's tile, border
    and wrap kernels draw each bond where they read it (``drawn_bonds.cuh``),
    open when its Philox word is below ``threshold``.
    ``bond_words``, ``cluster_words``: the step's Philox words (tag, step
    low, step high, key low, key high, as ``numpy.uint32``) of the bonds and
    of the clusters' signs."""

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
        if (case.chain.name != "runs2d-lattice" or prob.work_dtype != np.int32
                or prob.values.dtype != np.uint8 or math.prod(shape) >= 2**31):
            raise ValueError(f"the label-free flip takes 2-D lattices of fewer than 2**31 "
                             f"cells (chain runs2d-lattice, int32), got shape {shape} "
                             f"({case.chain.name}, {prob.work_dtype})")
        n = prob.size
        buffers = image_plain.scratch(n, prob.work_dtype, case.shape, slots=False)
        prog = chains.program(case, prob, buffers=buffers)
        names = [name for name, _ in prog]
        if names[-6:] != ["tile", "border", "wrap", "roots", "pieces", "cells"]:
            raise AssertionError(f"the lattice chain is {names}, not the one this replaces "
                                 f"parts of")
        (_, pieces), (_, label_pass) = prog[-2:]
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
        self._prog = prog[:-2]
        self._drawn = None  # the chain drawing its bonds (made when first used)
        self._labels = cupy.empty(n, dtype=np.int32)  # the forest (scratch)
        self.shape = shape

    def _drawn_chain(self):
        """The chain's launches with the tile, border and wrap kernels in their
        drawn-bond forms: (kernel, grid, block, arguments) for those, the packed
        launch for the others."""
        if self._drawn is None:
            forms = dict(zip(("tile", "border", "wrap"), kernels(
                "runs2d.cu", "meshccl_runs2d_drawn_tile<int>",
                "meshccl_runs2d_drawn_border<int>", "meshccl_runs2d_drawn_wrap<int>")))
            steps = []
            for name, launch in self._prog:
                if name not in forms:
                    steps.append(launch.packed())
                    continue
                # the lattice features close the arguments: mask, bonds, cells, the
                # planes of up, left, up-left, up-right, the tolerance
                planes = tuple(int(a) for a in launch.args[-5:-1])
                if planes != (0, 1, -1, -1):
                    raise AssertionError(f"bond planes {planes}, not the Ising layout")
                steps.append((forms[name], launch.grid, launch.block, launch.args[:-8]))
            self._drawn = steps
        return self._drawn

    def __call__(self, spins, threshold, bond_words, cluster_words):
        import cupy

        out = cupy.empty(self.shape, dtype=np.int8)
        stream = cupy.cuda.get_current_stream().ptr
        vptr, pptr = spins.data.ptr, self._labels.data.ptr
        tail = (np.uint64(threshold),) + tuple(bond_words)
        for step in self._drawn_chain():
            if callable(step):
                step(vptr, pptr, stream)
                continue
            fn, grid, block, args = step
            fn(grid, block, tuple(spins if a is VALUES else self._labels if a is LABELS
                                  else a for a in args) + tail)
        grid, block, args = self._pieces_launch
        self._pieces_kernel(grid, block, (self._labels,) + args + tuple(cluster_words))
        grid, block, args = self._runs_launch
        self._runs_kernel(grid, block, (self._labels,) + args + (out,))
        return out
