"""Labels and the cells of each label in one go on the GPU:
``label(..., return_counts=True)`` on CuPy input.

The counts are taken by the kernel that writes the final labels, not by a
pass over the labels after them:

============================  ===========================================
chain                         counting kernel (its ``_counted`` form)
============================  ===========================================
plain 1-D / 2-D, 3-D bytes    ``number_pieces.cu``: meshccl_label_runs --
                              one add per run of a tile row, by the lane
                              that resolves the run's label
plain 3-D of wider cells      meshccl_label_cells -- per cell, piece roots
                              included (meshccl_label_pieces then counts
                              nothing)
general chain, iterative      ``number_roots.cu``: meshccl_relabel_counted
methods                       -- per cell
============================  ===========================================

Calls with lattice features (periodic axes, mask, bonds, tolerance) take
the general chain when they count, also those that label without counts
on the fixed-geometry lattice chains (image_plain.lattice_program): those
chains end in the same meshccl_label_runs and could take its counted form
the same way (a ``counts`` flag through lattice_program), not done yet.

In each, the lanes of a warp that hold one label add once, their sum
(``numbering.cuh``, add_counts).  The table has N + 1 rows, so it is made
once N is known: after the kernel that numbers the roots (piece roots, or
the scan), the host reads N -- the same 8-byte read ``return_num`` costs,
only earlier, between kernels, where the GPU waits for the host to launch
the rest -- then allocates the zeroed table and launches the label pass.
The background is not counted there (all of it on one word would
serialise its atomics): row 0 is set afterwards to the cells the labels
left.  A call with counts takes no launch plan (:mod:`.plan`): its chain
is launched through CuPy, as a call with ``return_info`` is.
"""

from __future__ import annotations

import functools

from . import image_general, image_plain
from .number_roots import relabel_counted
from .timing import run


def label_mesh_counted(values, P, shape, connectivity, has_bg, bgkey, timer=None,
                       label_axes=None, **lattice):
    """:func:`.image_general.label_mesh` with counts: label flat CuPy
    ``values`` into ``P`` and return (N, counts), N an int and counts an
    int64 CuPy array of length N + 1 (counts[0]: the background)."""
    if not _features(lattice) and image_plain.applies(shape, label_axes=label_axes):
        return _plain_counted(values, P, shape, connectivity, has_bg, bgkey, timer)
    stack = image_plain.stack_view(shape, label_axes, lattice.get("periodic", 0))
    if (stack is not None and not _features(dict(lattice, periodic=stack[2]))
            and image_plain.applies(stack[0])):  # (a stack of images: its tall 2-D image)
        return _plain_counted(values, P, stack[0], connectivity, has_bg, bgkey, timer,
                              image_rows=stack[1])
    for name, launch in image_general.mesh_steps(values, P, shape, connectivity, has_bg, bgkey,
                                                 label_axes=label_axes, **lattice):
        run(timer, name, launch)
    return relabel_counted(P, values.size, timer)


def _features(lattice):
    """True when a lattice feature is on (those calls take the general chain)."""
    return bool(lattice.get("periodic")) or lattice.get("no_left", False) or any(
        lattice.get(k) is not None for k in ("mask", "bonds", "tolerance"))


def _plain_counted(values, P, shape, connectivity, has_bg, bgkey, timer, image_rows=None):
    """The plain chain (image_plain.py) with its counted label pass: the
    launches up to the roots kernel, N, the table, the rest (``image_rows``:
    a stack of images, see image_plain.stack_view)."""
    import cupy

    n = values.size
    buffers = image_plain.scratch(n, P.dtype, shape, values.dtype)
    prog = image_plain.program(values.dtype, P.dtype, n, shape, connectivity, has_bg, bgkey,
                               buffers, counts=True, image_rows=image_rows)
    cut = [name for name, _ in prog].index("roots") + 1
    for name, launch in prog[:cut]:
        run(timer, name, functools.partial(launch, values, P))
    num = int(prog[-1][1].result)  # N, which the roots kernel has written
    counts = cupy.zeros(num + 1, dtype=cupy.int64)
    for name, launch in prog[cut:]:
        run(timer, name, functools.partial(launch.with_counts(counts), values, P))
    counts[0] = n - counts[1:].sum()
    return num, counts
