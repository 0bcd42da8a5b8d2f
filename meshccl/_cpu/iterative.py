"""Hawick, Leist and Playne's iterative mesh labellers on the CPU: the
compiled core's ``meshccl/_cpu/core/iterative.hpp`` (nothing compiled on a
call); this module prepares its arguments.

The default method (:mod:`.image`, :mod:`.lattice`) is one pass.  These are the
classic iterate-until-stable methods of Hawick et al. (2010, section 5),
kept for comparison and to reproduce the paper's experiments.  Every cell
starts with its own index as label (background: -1); a cell's label only
ever decreases to the smallest label among the cells it joins; when nothing
changes, every cell holds the smallest index of its component -- the forest
that is numbered 1..N in raster order, as the lattice labeller's is.  So
every method gives exactly the labels of the default method.

- ``cpu1``  alternating raster scans: forward, then backward, in place.
- ``A``     neighbour propagation: every cell takes the minimum of its
            neighbours' labels from the previous iteration (one cell per step).
- ``B``     local propagation: A's step, then each tile of the array (the
            GPU's thread-block boxes) iterated to a local fixed point with
            the labels of the cells around it frozen.
- ``C``     directional propagation: 2 * ndim sweeps per iteration, each
            carrying labels along one axis in one direction.
- ``D`` / ``cpu2``  label equivalence: scan (record for each label the
            smallest label next to it), analysis (follow each label's chain
            to its end), labelling (replace every label by its chain's end).

"Neighbours" are the full neighbourhood (both directions of every offset of
the one neighbourhood table), with the same joining rule, mask, bonds,
tolerance and periodic wrap as the lattice labeller
(``meshccl/_cpu/core/lattice.hpp``).  Each method counts its passes,
including the last one (which changes nothing).  A, B and D take exactly as
many passes as their GPU versions (``meshccl/_kernels/iterative.cu``); C's GPU sweeps run
lines concurrently and may differ by a pass or two.  All run serially.
"""

import numpy as np

from .image import _core
from .lattice import _bond_rows, _result


def label_iterative(method, keys, P, shape, table, has_bg, bg, tol, *, has_tol=False,
                    periodic=0, mask=None, bonds=None, bond_rows=None, no_left=False,
                    max_iterations=None, counts=False):
    """Label flat ``keys`` (:func:`.keys.kernel_keys`; uint8 or uint64, or
    float64 with a tolerance) of ``shape`` into ``P`` (int32 or int64) with
    one of Hawick et al.'s iterative methods; return (N, passes, seconds
    per phase), N being (N, cells per label 0..N) with ``counts``.

    The other arguments are :func:`.lattice.label_lattice`'s.  Phases: init,
    pass (A, B, C, cpu1) or scanning / analysis / labelling (D, cpu2), and
    relabel.  Raises :class:`meshccl.errors.NotConverged` after
    ``max_iterations`` passes that all changed labels.
    """
    from ..neighbourhood import tile_logs

    shape = np.ascontiguousarray(shape, dtype=np.int64)
    logs = None
    if method == "B":  # (the GPU's tiles, so both take the same passes)
        logs = np.asarray(tile_logs(tuple(int(s) for s in shape)), dtype=np.int64)
    num, passes, seconds = _core.label_iterative(
        method, keys, P, shape, table, bool(has_bg), bg, tol if has_tol else None, mask, bonds,
        _bond_rows(bond_rows), int(periodic), bool(no_left), int(max_iterations or 0),
        bool(counts), logs)
    if passes < 0:
        from ..errors import NotConverged

        raise NotConverged(
            f"method={method!r} did not converge within max_iterations={max_iterations} passes")
    return _result(num, counts), int(passes), seconds
