"""Per-cell labelling of general lattices: masks, bond flags, a tolerance,
periodic axes and labelling along some axes only (``axes=``) -- the
compiled core's ``meshccl/_cpu/core/lattice.hpp`` (nothing compiled on a
call); this module prepares its arguments.

Every foreground cell starts as its own tree in a forest ``P`` of cell
indices (background cells hold -1; int32 whenever the indices fit); the
cells are visited in raster order and each is united
(``meshccl/_kernels/core/unionfind.h``) with the neighbours it joins among
those of the half-neighbourhood table (cells before it, plus the wrapped
ones of periodic axes).  Roots are the smallest index of their set, so the
forest numbered in index order gives every
component the rank of its first cell: skimage's numbering.

Whether two neighbours join: their values are equal (or within the
tolerance), neither is masked out, and their bond is
open.  With equal values and no bond flags the relation is transitive, so
unions implied by the left neighbour are skipped (the "covered" offsets
and twin pairs of the table, as on the GPU); a run of cells equal to its
left neighbour extends that cell's tree by a store instead of a union.

Which table rows exist for a row of cells depends only on the row's place
along the leading axes, computed once a row;
along the row only its first and last cells need the last axis checked.

In parallel (:func:`label_lattice_parallel`), chunks of rows are labelled
at once, each uniting only pairs inside it (so threads never share a
tree); then the first rows of each chunk are united with the cells before
it, serially, and the roots numbered per chunk after a prefix sum of
their counts.  Periodic lattices run serially: a wrapped pair can join any
two chunks.

With counts (``label(..., return_counts=True)``) the pass that writes the
final labels also counts each label's cells (serially as it writes them; in parallel each chunk adds plainly to the labels rooted in it,
and by runs, atomically, to those rooted in earlier chunks).
"""

import numpy as np

from .. import _tuning
from .image import _core


def _bond_rows(bond_rows):
    return None if bond_rows is None else np.ascontiguousarray(bond_rows, dtype=np.int64)


def _result(out, counts):
    if counts:  # (nanobind's int64 is NumPy's longlong: the counts as np.int64)
        return out[0], out[1].view(np.int64)
    return out


def label_lattice(keys, P, shape, table, has_bg, bg, tol, *, has_tol=False, periodic=0,
                  mask=None, bonds=None, bond_rows=None, no_left=False, counts=False):
    """Label flat ``keys`` (:func:`.keys.kernel_keys`; uint8 or uint64, or
    float64 with a tolerance) of ``shape`` into ``P`` (int32 or int64, same
    length); return the number of labels (with ``counts``: (N, cells per
    label 0..N)).

    ``periodic``: bit k set when axis k wraps around; ``mask``: flat uint8,
    0 = background; ``bonds``: (K, n) uint8, 0 = closed, row ``bond_rows[o]``
    for table row ``o`` (the last entry: the left neighbour); ``no_left``:
    the last axis is not labelled along (``table`` then holds only the
    offsets along the labelled axes).
    """
    work = None  # (the trees in int32 whenever they fit)
    if P.dtype == np.int64 and P.shape[0] < 2**31 - 2:
        work = np.empty(P.shape[0], dtype=np.int32)
    return _result(_core.label_lattice(
        keys, P, work, np.ascontiguousarray(shape, dtype=np.int64), table, bool(has_bg), bg,
        tol if has_tol else None, mask, bonds, _bond_rows(bond_rows), int(periodic),
        bool(no_left), bool(counts), None, 0, 1), counts)


def plan_chunks(n, W, threads):
    """Chunks of rows for ``threads`` threads: None (serially) below two
    threads' worth of ``_tuning.CPU_CHUNK_MIN_CELLS`` cells, else the row
    bounds of ``_tuning.CPU_CHUNKS_PER_THREAD`` chunks a thread (int64)."""
    threads = min(int(threads), n // _tuning.CPU_CHUNK_MIN_CELLS)
    if threads < 2:  # (small chunks cost more than they save)
        return None
    rows = n // W
    K = max(1, min(rows, _tuning.CPU_CHUNKS_PER_THREAD * threads))
    return np.linspace(0, rows, K + 1).astype(np.int64)


def label_lattice_parallel(keys, L, shape, table, has_bg, bg, tol, threads, *, has_tol=False,
                           mask=None, bonds=None, bond_rows=None, no_left=False, counts=False):
    """:func:`label_lattice` (not periodic) on up to ``threads`` threads, in
    chunks of rows (:func:`plan_chunks`; serially when it says so).  Same
    labels (and counts)."""
    n = keys.shape[0]
    W = int(shape[-1])
    chunks = plan_chunks(n, W, threads)
    if chunks is None:
        return label_lattice(keys, L, shape, table, has_bg, bg, tol, has_tol=has_tol,
                             mask=mask, bonds=bonds, bond_rows=bond_rows, no_left=no_left,
                             counts=counts)
    back = int(-(-np.abs(table[:, 0]).max(initial=0) // W)) + 1
    work = np.empty(n, dtype=np.int32 if n < 2**31 - 2 else L.dtype)
    return _result(_core.label_lattice(
        keys, L, work, np.ascontiguousarray(shape, dtype=np.int64), table, bool(has_bg), bg,
        tol if has_tol else None, mask, bonds, _bond_rows(bond_rows), 0, bool(no_left),
        bool(counts), chunks, back, int(threads)), counts)
