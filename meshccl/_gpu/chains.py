"""The GPU image path's one table: which chain of kernels labels which problem.

Every labelling call on CuPy input is a :class:`meshccl._validate.Problem`
(the values, the shape the kernels see, the background key, the lattice
features, the numbering and whether counts are asked for), made once by
validation.  :func:`select` maps it to a :class:`Case`: one row of
:data:`TABLE` and the geometry that chain sees (a stack of images becomes
one tall 2-D image).  Every driver builds its launches from that case and
nowhere else:

- a launch plan (:mod:`.plan`, repeated calls on same-shaped arrays) takes
  :func:`program` once and packs or records it;
- a call without a plan (``return_info``, float16, non-contiguous input,
  other features) runs :func:`label`, which launches the same
  :func:`program` (timing each step when asked) or, for Hawick et al.'s
  iterative methods, their loop;
- counts (``return_counts``) are the same chains with the counting form of
  their label pass (:mod:`.counted` explains how each counts).

The rows, in the order :func:`select` tries them:

========================  ==================================================
chain                     serves
========================  ==================================================
iterative                 ``method='A'``, 'B', 'C', 'D'
runs2d                    1-D and 2-D arrays, equal values
runs3d                    3-D arrays, equal values
runs2d-packed             a phase of packed Ising spins (the simulation hooks)
runs2d-lattice            1-D and 2-D arrays with a mask, bonds or tolerance
runs3d-lattice            3-D arrays with a mask, bonds or tolerance
runs3d-structure          3-D bool arrays under a ``meshccl.ndimage.label``
                          structure no connectivity names, or one along
                          axes that are not a stack of images (its half
                          offsets as a bit mask)
runsnd                    bool arrays under any other such structure (1, 2
                          or 4+ axes), and bool arrays of 4 or more axes
                          (the neighbourhood from a table)
general                   everything else: more than 3 axes longer than 1
                          (values that are not bool, or lattice features),
                          ``axes`` that are not a stack of images, grids of
                          tiles too large for one launch of the above
========================  ==================================================

Periodic axes add the chain's wrap kernel before the numbering (the
fixed-geometry chains; the general and iterative kernels wrap by
themselves).

Counts (``label(..., return_counts=True)``) are taken by the kernel that
writes the final labels, not by a pass over the labels after them: the
``_counted`` form of meshccl_label_runs (one add per run of a tile row, by
the lane that resolves the run's label) on the fixed-geometry chains,
and meshccl_relabel_counted (per cell) on the general and iterative ones.
In each, the lanes of a warp that hold one label add once, their sum
(``numbering.cuh``, add_counts); the label passes of number_pieces.cu
gather a warp's sums of hot labels and of the background in a table per
block in shared memory first, and add it to global memory once a block.
The fixed-geometry chains count into a table of N + 1 rows, made when N
is known: the chain's launches up to the roots kernel (which finds N)
run, the host reads N (the call's one wait, which it needs for the
counts anyway), makes the table and launches the rest, the table in the
place of :data:`.launch.COUNTS` (:func:`split`).  One kernel more there,
meshccl_clear_counts, zeroes rows 0..N; the table is the counts the
call returns, no copy.  (A table of n + 1 rows, made before the chain,
spared that wait but took 8 bytes a cell: twice the labels.)  The general chain and the iterative methods number
their roots with a scan whose total the host reads first, then make a
table of N + 1 rows and launch meshccl_relabel_counted; row 0 is set to
the cells the labels left.  ``python -m meshccl._gpu.chains`` prints the table with each
chain's kernels as Markdown (``docs/architecture.md`` holds that output,
and a test checks that it still does).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

from . import image_plain, runs3d_structure, runs_nd
from .launch import COUNTS
from .timing import run


class Chain(NamedTuple):
    """One row of :data:`TABLE`."""

    name: str
    #: the problems it serves, in words
    serves: str
    #: its steps in launch order, as "file: kernel" (docs and tests)
    steps: tuple
    #: where ``return_counts`` counts the cells
    counts: str


_NUMBER_RUNS = ("number_pieces.cu: meshccl_piece_roots (hooked roots walked to their root; "
                "roots counted and prefix-summed)",
                "number_pieces.cu: meshccl_label_pieces (every piece root's label)",
                "number_pieces.cu: meshccl_label_runs (each run resolved once, every cell "
                "written once)")
_NUMBER_ROOTS = ("number_roots.cu: meshccl_flatten (each cell's root; a bit mask of roots "
                 "per warp)",
                 "number_roots.cu: meshccl_word_sums, meshccl_scan_block, meshccl_rank_words "
                 "(prefix sums of the root counts)",
                 "number_roots.cu: meshccl_relabel (labels written in place)")
_CLEAR = ("clear: a memset of the bit arrays, where rows are not 32-cell aligned",)
_WRAP2D = ("runs2d.cu: meshccl_runs2d_wrap (periodic axes: pairs across a periodic edge)",)
_WRAP3D = ("wrap3d.cu: meshccl_wrap3d (periodic axes: pairs across a periodic face)",)

#: Every chain of the GPU image path.
TABLE = (
    Chain("iterative", "`method='A'`, `'B'`, `'C'` or `'D'` (Hawick et al.)",
          ("iterative.cu: meshccl_iter_init",
           "iterative.cu: meshccl_iter_a (A), meshccl_iter_b (B), meshccl_iter_c (C) or "
           "meshccl_iter_d_scan, meshccl_iter_d_analyse, meshccl_iter_d_label (D), repeated "
           "until a pass changes nothing") + _NUMBER_ROOTS,
          "meshccl_relabel_counted"),
    Chain("runs2d", "1-D and 2-D arrays of any dtype, and stacks of them (`axes` naming the "
          "last one or two axes: one tall image), equal values",
          _CLEAR + ("runs2d.cu: meshccl_runs2d_tile (32x32 tiles a warp each, runs as nodes, "
                    "strips of 8 tiles sharing one forest; slots for the piece roots of "
                    "tiles with few runs)",
                    "runs2d.cu: meshccl_runs2d_border (pairs across tile tops and strip "
                    "edges)") + _WRAP2D + _NUMBER_RUNS,
          "meshccl_label_runs_counted"),
    Chain("runs3d", "3-D arrays of any dtype, equal values",
          _CLEAR + ("runs3d.cu: meshccl_runs3d_tile (bricks of 32x32 cells and 8 or 16 "
                    "planes, a warp per plane, one shared forest; row masks from byte-wise "
                    "compares, or ballots for wider cells)",
                    "runs3d.cu: meshccl_runs3d_seams (pairs across the x and y faces of "
                    "brick columns)",
                    "runs3d.cu: meshccl_runs3d_zface (a brick's first plane against the "
                    "plane below)") + _WRAP3D + _NUMBER_RUNS,
          "meshccl_label_runs_counted"),
    Chain("runs2d-packed", "a phase of `meshccl.sim.Ising`'s packed Metropolis spins (2-D, "
          "periodic: the labelling hooks), in place of its bool image",
          _CLEAR + ("runs2d.cu: meshccl_runs2d_packed_tile (the tile kernel without slots, "
                    "each row's mask from the two colours' words: packed_spins.cuh)",
                    "runs2d.cu: meshccl_runs2d_packed_border (the border kernel's pairs, "
                    "cells read from the words)",
                    "runs2d.cu: meshccl_runs2d_packed_wrap (pairs across a periodic edge)")
          + _NUMBER_RUNS,
          "meshccl_label_runs_counted"),
    Chain("runs2d-lattice", "1-D and 2-D arrays, and stacks of them, with a mask, bonds or "
          "a tolerance",
          _CLEAR + ("runs2d.cu: meshccl_runs2d_lattice_tile (the 2-D tile with the joining "
                    "rule, mask and open bonds in each row's masks)",
                    "runs2d.cu: meshccl_runs2d_lattice_border (every joined pair across tile "
                    "tops and strip edges)") + _WRAP2D + _NUMBER_RUNS,
          "meshccl_label_runs_counted"),
    Chain("runs3d-lattice", "3-D arrays of any cell type with a mask, bonds or a tolerance",
          _CLEAR + ("runs3d.cu: meshccl_runs3d_lattice_tile (the brick with the joining rule, "
                    "mask and open bonds in each row's masks; every joined pair united)",
                    "runs3d.cu: meshccl_runs3d_lattice_seams (a thread per cell on the tile "
                    "columns' sides: every joined pair into another column)",
                    "runs3d.cu: meshccl_runs3d_lattice_zface (a brick's first plane against "
                    "the plane below)") + _WRAP3D + _NUMBER_RUNS,
          "meshccl_label_runs_counted"),
    Chain("runs3d-structure", "3-D bool arrays (`meshccl.ndimage.label`'s foreground) under "
          "a structure that no connectivity names, or a connectivity along axes that are not "
          "a stack of images, without lattice features",
          _CLEAR + ("runs3d_structure.cu: meshccl_runs3d_structure_tile (runs3d.cu's bricks "
                    "of 32x32 cells and 8 or 16 planes, a warp per plane, one shared forest; "
                    "the structure's 13 half offsets a bit mask)",
                    "runs3d_structure.cu: meshccl_runs3d_structure_faces (a thread per 32 "
                    "cells of a row: every pair that leaves its brick, in the global forest)")
          + _NUMBER_RUNS,
          "meshccl_label_runs_counted"),
    Chain("runsnd", "bool arrays (`meshccl.ndimage.label`'s foreground) under a structure "
          "that no connectivity names (1, 2 or 4 or more axes), and bool arrays of 4 or more "
          "axes longer than 1, without lattice features",
          _CLEAR + ("runsnd.cu: meshccl_runsnd_rows (a thread per 32 cells of a row: "
                    "foreground and run-start masks, every run start its own piece root)",
                    "runsnd.cu: meshccl_runsnd_unions (a thread per 32 cells: the pairs with "
                    "each earlier row of the structure's row table, one per overlap of runs, "
                    "united in the global forest)") + _NUMBER_RUNS,
          "meshccl_label_runs_counted"),
    Chain("general", "everything else: more than 3 axes longer than 1 (values that are not "
          "bool, or with lattice features), `axes` that are not a stack of images, grids of "
          "tiles too large for one launch of the chains above",
          ("general.cu: meshccl_general_tile (unions inside power-of-two tiles in shared "
           "memory)", "general.cu: meshccl_general_union (pairs across tile borders)")
          + _NUMBER_ROOTS,
          "meshccl_relabel_counted"),
)

CHAINS = {c.name: c for c in TABLE}


@dataclasses.dataclass(frozen=True)
class Case:
    """A problem's chain and the geometry the chain sees."""

    chain: Chain
    #: the shape the chain labels (a stack of images: its tall 2-D image)
    shape: tuple
    #: a stack of images: the rows of each image (else None)
    image_rows: int | None
    #: bit k: axis k of ``shape`` wraps
    periodic: int
    #: bit k: axis k of ``shape`` is labelled along (None: all)
    label_axes: int | None
    #: the last axis of ``shape`` is not labelled along
    no_left: bool


def select(prob) -> Case:
    """The chain for ``prob`` (a :class:`meshccl._validate.Problem`): the one
    place the GPU image path decides."""
    if prob.method in ("A", "B", "C", "D"):
        return Case(CHAINS["iterative"], prob.shape, None, prob.periodic, prob.label_axes,
                    prob.no_left)
    if prob.packed_flip is not None:  # packed spins (validated: 2-D, periodic)
        return Case(CHAINS["runs2d-packed"], prob.shape, None, prob.periodic, None, False)
    if runs3d_structure.serves(prob):  # bool, 3-D, a structure as a bit mask
        return Case(CHAINS["runs3d-structure"], prob.shape, None, 0, None, False)
    if runs_nd.serves(prob):  # bool: any structure, any number of axes, from a row table
        return Case(CHAINS["runsnd"], prob.shape, None, 0, None, False)
    if prob.offsets is not None:  # an explicit neighbourhood: its offset table, as it is
        return Case(CHAINS["general"], prob.shape, None, prob.periodic, None, prob.no_left)
    shape, periodic, label_axes, no_left = prob.shape, prob.periodic, prob.label_axes, \
        prob.no_left
    image_rows = None
    stack = image_plain.stack_view(shape, label_axes, periodic)
    if stack is not None:
        shape, image_rows, periodic = stack
        label_axes, no_left = None, False
    whole = label_axes is None or label_axes == (1 << len(shape)) - 1
    if whole and not no_left and image_plain.fits(shape):
        features = prob.mask is not None or prob.bonds is not None or prob.tolerance is not None
        if len(shape) <= 2:
            name = "runs2d-lattice" if features else "runs2d"
        elif features:
            name = "runs3d-lattice"
        else:
            name = "runs3d"
        return Case(CHAINS[name], shape, image_rows, periodic, None, False)
    return Case(CHAINS["general"], prob.shape, None, prob.periodic, prob.label_axes,
                prob.no_left)


def reads_bool_bytes(case, prob) -> bool:
    """Whether ``case``'s chain takes a bool input's bytes as they are
    (every non-zero byte True, as NumPy reads a bool array, which may hold
    bytes other than 0 and 1): the run chains, plain and lattice forms,
    with their wrap kernels (the kernels' ``meshccl::flag8`` form:
    :func:`.image_plain.cell_type`), runsnd and runs3d-structure
    (:func:`.runs_nd.byte_type`).  The general and iterative chains
    compare bytes, and label a 0 / 1 copy."""
    return case.chain.name in ("runs2d", "runs3d", "runs2d-lattice", "runs3d-lattice",
                               "runsnd", "runs3d-structure")


def program(case, prob, *, buffers=None, slot_tiles=True, report=None, counts=None,
            stats=None):
    """The launches of ``case``'s chain for ``prob``'s shape and dtype, as
    ``[(name, launch), ...]``: ``launch(values, P, mask, bonds)`` runs one
    step on flat CuPy ``values`` and labels ``P`` (and the call's mask and
    bonds, flat bytes, where the chain has them); the last returns N as a
    0-d CuPy array (no host synchronisation).  The fixed-geometry chains'
    launches are :class:`.launch.Launch` objects, which a launch plan packs.

    ``buffers``, ``slot_tiles``, ``report``: see
    :func:`.image_plain.program`.  ``counts``: :data:`.launch.COUNTS` for
    the counting form of the label pass, the table given to the launches
    after :func:`split` (the general and iterative chains count in
    :func:`label`).
    ``stats``: a :class:`.measure.LabelPassTable` for the statistics form
    of the run label pass (:func:`fused_statistics` says where).
    """
    chain = case.chain.name
    view, work, n = prob.values.dtype, prob.work_dtype, prob.size
    first = prob.first
    if chain in ("runs2d", "runs3d") and not case.periodic:
        return image_plain.program(view, work, n, case.shape, prob.connectivity, prob.has_bg,
                                   prob.bgkey, buffers=buffers, slot_tiles=slot_tiles,
                                   report=report, counts=counts, first=first,
                                   image_rows=case.image_rows, stats=stats)
    if chain == "runs2d-packed":
        return image_plain.packed_program(work, n, case.shape, prob.connectivity,
                                          prob.packed_flip, buffers=buffers, counts=counts,
                                          first=first)
    if chain in ("runs2d", "runs3d", "runs2d-lattice", "runs3d-lattice"):
        return image_plain.lattice_program(
            view, work, n, case.shape, prob.connectivity, prob.has_bg, prob.bgkey,
            periodic=case.periodic, mask=prob.mask is not None, bonds=prob.bonds is not None,
            bond_rows=prob.bond_rows, tolerance=prob.tolerance, buffers=buffers, first=first,
            counts=counts, image_rows=case.image_rows, stats=stats)
    if chain == "runsnd":
        return runs_nd.program(prob, buffers=buffers, counts=counts)
    if chain == "runs3d-structure":
        return runs3d_structure.program(prob, buffers=buffers, counts=counts)
    if chain == "general":
        if counts is not None:
            raise ValueError("the general chain counts in chains.label")
        from .image_general import general_program

        return general_program(prob, buffers=buffers)
    raise ValueError(f"the {chain} chain has no fixed program (chains.label runs it)")


class Result(NamedTuple):
    """What :func:`label` gives back."""

    #: N: a 0-d CuPy array (no wait for the device), or an int where the
    #: call had to read it (counts)
    count: object
    #: cells per label, int64 CuPy array of N + 1 rows (row 0: background),
    #: or None when not asked for
    counts: object
    #: passes (the iterative methods; 1 for the one-pass chains)
    iterations: int
    #: the finished statistics table (``_gpu.measure.table``'s count, box,
    #: lo, hi, centroid) where the chain's label pass filled it, else None
    statistics: object = None


def label(prob, P, timer=None) -> Result:
    """Label ``prob`` (values on the current GPU) into the flat int32/int64
    CuPy array ``P``: the chain :func:`select` names, launched step by step
    (``timer``: a :class:`.timing.PhaseTimer` timing each step, or None)."""
    case = select(prob)
    values = prob.values
    if case.chain.name == "iterative":
        from .iterative import label_iterative

        count, passes = label_iterative(prob, P, timer=timer)
        if prob.counts:
            return Result(count[0], count[1], passes)
        return Result(count, None, passes)
    if prob.statistics and fused_statistics(case, prob):
        return _label_with_statistics(case, prob, P, timer)
    counted = prob.counts and case.chain.name != "general"
    steps = program(case, prob, counts=COUNTS if counted else None)
    if counted:
        at = split(steps)
        for name, launch in steps[:at]:
            run(timer, name, lambda launch=launch: launch(values, P, prob.mask, prob.bonds))
        num = int(steps[-1][1].result)
        import cupy

        table = cupy.empty(num + 1, dtype=cupy.int64)
        for name, launch in steps[at:]:
            run(timer, name, lambda launch=launch: launch(values, P, prob.mask, prob.bonds,
                                                          table))
        return Result(num, table, 1)
    if prob.counts and case.chain.name == "general":
        from .number_roots import relabel_counted

        for name, launch in steps[:2]:  # (general.cu's two kernels)
            run(timer, name, lambda launch=launch: launch(values, P, prob.mask, prob.bonds))
        num, counts = relabel_counted(P, prob.size, timer)
        return Result(num, counts, 1)
    count = None
    for name, launch in steps:
        count = run(timer, name, lambda launch=launch: launch(values, P, prob.mask, prob.bonds))
    return Result(count, None, 1)


def split(steps) -> int:
    """Where a counted program (``counts=COUNTS``) waits for N: the index
    of its first launch after the roots kernel, which writes N on the
    device (``steps[-1][1].result`` then holds it)."""
    return [name for name, _ in steps].index("roots") + 1


#: the chains whose label pass can fill the statistics table
STATISTICS_CHAINS = ("runs2d", "runs3d", "runs2d-lattice", "runs3d-lattice")


def fused_statistics(case, prob) -> bool:
    """Whether ``prob``'s statistics (``label(..., return_statistics=True)``)
    come from its chain's label pass: a run chain (the run label pass),
    no periodic axis (circular means and arcs need the labels), labels
    1..N, the caller's layout (not the swapped one) with its last axis the
    chain's rows, and at most four axes (counts, if asked, are the table's).
    Elsewhere the labels are measured after the chain."""
    from .measure import LabelPassTable

    return (case.chain.name in STATISTICS_CHAINS and not case.periodic and not prob.first
            and not prob.swapped and LabelPassTable.fits(prob.out_shape)
            and prob.out_shape[-1] == case.shape[-1])


def _label_with_statistics(case, prob, P, timer):
    """:func:`label` with the statistics form of the run label pass: the
    chain up to the label pass, N read (the table needs N + 1 rows), the
    table made, then the label pass, which fills it."""
    from .measure import LabelPassTable

    stats = LabelPassTable(prob.out_shape)
    steps = program(case, prob, stats=stats)
    values = prob.values
    for name, launch in steps[:-1]:
        run(timer, name, lambda launch=launch: launch(values, P, prob.mask, prob.bonds))
    name, last = steps[-1]
    num = int(last.result)
    stats.start(num + 1)
    run(timer, name, lambda: last(values, P, prob.mask, prob.bonds))
    table = stats.finish()
    return Result(num, table["count"] if prob.counts else None, 1, table)


BEGIN = "<!-- chains: generated by python -m meshccl._gpu; do not edit -->"
END = "<!-- chains: end -->"


def markdown() -> str:
    """:data:`TABLE` as the Markdown table of ``docs/architecture.md``, in
    the order :func:`select` tries the rows."""
    rows = ["| chain | serves | steps, in launch order | counts in |",
            "|---|---|---|---|"]
    for c in TABLE:
        steps = " → ".join(f"`{s.split(': ', 1)[0]}`: {s.split(': ', 1)[1]}" for s in c.steps)
        rows.append(f"| `{c.name}` | {c.serves} | {steps} | `{c.counts}` |")
    return "\n".join(rows)


def write(path):
    """Replace the table between :data:`BEGIN` and :data:`END` in ``path``."""
    from pathlib import Path

    text = Path(path).read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    Path(path).write_text(f"{head}{BEGIN}\n{markdown()}\n{END}{tail}")

