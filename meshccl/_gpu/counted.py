"""Labels and the cells of each label in one go on the GPU:
``label(..., return_counts=True)`` on CuPy input.

The counts are taken by the kernel that writes the final labels, not by a
pass over the labels after them:

============================  ===========================================
chain                         counting kernel (its ``_counted`` form)
============================  ===========================================
plain and lattice 1-D / 2-D,  ``number_pieces.cu``: meshccl_label_runs --
stacks of them, 3-D bytes,    one add per run of a tile row, by the lane
periodic 3-D                  that resolves the run's label
plain 3-D of wider cells      meshccl_label_cells -- per vector of cells
                              (its first cell's label with all its cells
                              of that label; the rest cell by cell), piece
                              roots included (meshccl_label_pieces then
                              counts nothing)
general chain, iterative      ``number_roots.cu``: meshccl_relabel_counted
methods                       -- per cell
============================  ===========================================

In each, the lanes of a warp that hold one label add once, their sum
(``numbering.cuh``, add_counts).  The label passes of number_pieces.cu
gather a warp's sums of hot labels (large components, one in every warp)
and the background, row 0, in a table per block in shared memory first,
and add it to the table in global memory once a block (BlockCounts).

The chains of image_plain.py (plain and lattice) count into a table of
n + 1 rows (:func:`.image_plain.count_table`; N <= n): N is not known on
the host when the chain is launched, and with a table that needs no N the
chain runs from its first kernel to its last without the host, as a call
without counts does.  One kernel more, meshccl_clear_counts, zeroes rows
0..N right after the roots kernel has written N on the device; the label
pass then adds every label's cells, row 0 included.  The host reads N where ``return_num`` reads it (a
call with counts always does) and copies rows 0..N out.  A launch plan
(:mod:`.plan`) keeps its table and launches this chain as it launches the
one without counts: its calls with counts cost the call with
``return_num``, the clear kernel, the counting adds and the copy of N + 1
rows.

The general chain and the iterative methods number their roots with a
scan whose total the host reads first, then make the table of N + 1 rows
and launch meshccl_relabel_counted; its blocks are many (a cell a thread)
and row 0 is set on the host, to the cells the labels left.
"""

from __future__ import annotations

from . import image_general, image_plain
from .number_roots import relabel_counted
from .timing import run


def label_mesh_counted(values, P, shape, connectivity, has_bg, bgkey, timer=None,
                       label_axes=None, **lattice):
    """:func:`.image_general.label_mesh` with counts: label flat CuPy
    ``values`` into ``P`` and return (N, counts), N an int and counts an
    int64 CuPy array of length N + 1 (counts[0]: the background)."""
    if image_general.fixed_chain_view(shape, dict(lattice, label_axes=label_axes)) is not None:
        table = image_plain.count_table(values.size)
        count = image_general.label_mesh(values, P, shape, connectivity, has_bg, bgkey,
                                         timer=timer, counts=table, label_axes=label_axes,
                                         **lattice)
        num = int(count)
        return num, table[:num + 1].copy()
    for name, launch in image_general.mesh_steps(values, P, shape, connectivity, has_bg, bgkey,
                                                 label_axes=label_axes, **lattice):
        run(timer, name, launch)
    return relabel_counted(P, values.size, timer)
