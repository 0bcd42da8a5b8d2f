"""The CPU backend's mesh entry points: which labeller runs which problem.

:func:`label_problem` takes the :class:`meshccl._validate.Problem` that
validation made, as the GPU backend's :func:`meshccl._gpu.chains.label`
does, and picks one of the entries below.

Values first become kernel keys (:func:`.keys.kernel_keys`: a few dtypes, so
the compiled core holds each kernel a few times, not once per input dtype
and option).
Then:

- the plain case (equal values; no mask, bonds, tolerance, wrap or axes):
  the compiled run-based labeller of :mod:`.image` (serial, or in slabs
  with seams on several threads);
- every other case: the compiled per-cell union-find of :mod:`.lattice` (in
  chunks of rows on several threads, unless periodic);
- the iterative methods of Hawick et al.: the compiled iterative labellers
  of :mod:`.iterative` (serial).

All of them give every component the rank of its first cell in raster
order (skimage's numbering), so the labels are identical whichever runs.
With ``counts=True`` each also counts the cells of every label in the pass
that writes the final labels, and returns (N, counts) for N: counts is
int64 of length N + 1, counts[0] the background.
"""

import numpy as np

from .._validate import ITERATIVE
from .image import label_plain
from .keys import kernel_keys


def label_problem(prob, cpu_threads=1):
    """Label ``prob`` (a :class:`meshccl._validate.Problem` of host arrays):
    the one entry of the CPU backend.

    Returns ``(P, N, counts, report)``: the labels (flat, the work dtype),
    their number, the cells per label (int64, N + 1 rows) or None when not
    asked for, and a dict for ``label(..., return_info=True)``:
    ``iterations``, ``threads`` where threads ran, ``seconds`` per phase of
    an iterative method.  ``cpu_threads``: 1 serial, 0 every core, N at
    most N (plain and lattice calls; periodic lattices and the iterative
    methods run serially).
    """
    from ..neighbourhood import offset_table
    from .image import cpu_count, first_cell_labels

    P = np.empty(prob.size, dtype=prob.work_dtype)
    table = offset_table(prob.shape, prob.connectivity, prob.label_axes, prob.offsets)
    features = dict(mask=prob.mask, bonds=prob.bonds, bond_rows=prob.bond_rows,
                    tolerance=prob.tolerance, no_left=prob.no_left, background=prob.bgkey,
                    counts=prob.counts)
    # (the run-based labeller reads its neighbour lines from a connectivity's
    # table; an explicit neighbourhood takes the per-cell one)
    explicit = prob.offsets is not None
    report = {"iterations": 1}
    if prob.method in ITERATIVE:
        num, report["iterations"], report["seconds"] = label_iterative(
            prob.method, prob.values, P, prob.shape, table, prob.has_bg, prob.bgkey,
            periodic=prob.periodic, max_iterations=prob.max_iterations, **features)
    elif cpu_threads != 1 and not prob.periodic:
        report["threads"] = cpu_threads or cpu_count()
        num = label_mesh_parallel(prob.values, P, prob.shape, table, prob.has_bg, prob.bgkey,
                                  report["threads"], **features, explicit=explicit)
    else:
        num = label_mesh(prob.values, P, prob.shape, table, prob.has_bg, prob.bgkey,
                         periodic=prob.periodic, **features, explicit=explicit)
    num, counts = num if prob.counts else (num, None)
    if prob.first:
        first_cell_labels(P, num)
    return P, num, counts, report


def _plain(tolerance, mask, bonds, periodic, no_left, explicit):
    return (tolerance is None and mask is None and bonds is None and not periodic
            and not no_left and not explicit)


def _lattice_keys(keys, bg):
    """Keys for the per-cell lattice labeller and the iterative methods: 2-
    and 4-byte keys widened to uint64, so the compiled labellers are
    instantiated for uint8 and uint64 keys only (with a tolerance: uint64, float64) -- 48 versions of its loop
    already (docs/decisions.md: "compiled cpu core"; a copy of the values
    costs about 2 % of a call)."""
    if keys.dtype.itemsize in (2, 4) and keys.dtype.kind == "u":
        return keys.astype(np.uint64), np.uint64(bg)
    return keys, bg


def label_mesh(values, P, shape, table, has_bg, bgkey, *, periodic=0, mask=None,
               bonds=None, bond_rows=None, tolerance=None, no_left=False, background=None,
               counts=False, explicit=False):
    """Label flat ``values`` (as :func:`meshccl._validate.prepare` leaves
    them) of ``shape`` into ``P`` (int32 or int64, same length), serially;
    return the number of labels (with ``counts``: (N, cells per label)).

    ``table``: :func:`meshccl.neighbourhood.offset_table` of the shape;
    ``no_left``: cells never join along the last axis (it is not one of
    ``axes``; ``table`` then holds only the offsets along the labelled
    axes); ``background``: the caller's background, exact, for labelling
    with a tolerance; ``explicit``: ``table`` is that of an explicit
    neighbourhood (:func:`meshccl.neighbourhood.offset_table` with
    ``offsets``), which the per-cell labeller takes.
    """
    keys, has_bg, bg, has_tol, tol = kernel_keys(values, has_bg, bgkey, tolerance, background)
    if _plain(tolerance, mask, bonds, periodic, no_left, explicit):
        return label_plain(keys, P, shape, table, has_bg, bg, counts)
    from .lattice import label_lattice

    keys, bg = _lattice_keys(keys, bg)
    return label_lattice(keys, P, shape, table, has_bg, bg, tol, has_tol=has_tol,
                         periodic=periodic, mask=mask, bonds=bonds, bond_rows=bond_rows,
                         no_left=no_left, counts=counts)


def label_mesh_parallel(values, L, shape, table, has_bg, bgkey, threads, *, mask=None,
                        bonds=None, bond_rows=None, tolerance=None, no_left=False,
                        background=None, counts=False, explicit=False):
    """:func:`label_mesh` on up to ``threads`` threads (not for periodic
    lattices); the same labels.  The plain case runs in slabs along axis 0
    (:func:`.image.label_plain`), the others in chunks of rows
    (:func:`.lattice.label_lattice_parallel`); small arrays run serially
    (see ``CPU_SLAB_MIN_CELLS`` and ``CPU_CHUNK_MIN_CELLS`` in
    :mod:`meshccl._tuning`)."""
    keys, has_bg, bg, has_tol, tol = kernel_keys(values, has_bg, bgkey, tolerance, background)
    if _plain(tolerance, mask, bonds, 0, no_left, explicit):
        return label_plain(keys, L, shape, table, has_bg, bg, counts, threads)
    from .lattice import label_lattice_parallel

    keys, bg = _lattice_keys(keys, bg)
    return label_lattice_parallel(keys, L, shape, table, has_bg, bg, tol, threads,
                                  has_tol=has_tol, mask=mask, bonds=bonds,
                                  bond_rows=bond_rows, no_left=no_left, counts=counts)


def label_iterative(method, values, P, shape, table, has_bg, bgkey, *, periodic=0, mask=None,
                    bonds=None, bond_rows=None, tolerance=None, no_left=False,
                    max_iterations=None, background=None, counts=False):
    """Label with one of Hawick et al.'s iterative methods
    (:func:`.iterative.label_iterative`); return (N, passes, seconds per
    phase), N being (N, counts) with ``counts``."""
    from .iterative import label_iterative as run

    keys, has_bg, bg, has_tol, tol = kernel_keys(values, has_bg, bgkey, tolerance, background)
    keys, bg = _lattice_keys(keys, bg)
    return run(method, keys, P, np.asarray(shape, dtype=np.int64), table, has_bg, bg, tol,
               has_tol=has_tol, periodic=periodic, mask=mask, bonds=bonds,
               bond_rows=bond_rows, no_left=no_left, max_iterations=max_iterations,
               counts=counts)
