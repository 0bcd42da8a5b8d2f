"""Connected components of chunked Dask arrays: :func:`label` (and
:func:`statistics`, :func:`regionprops_table` of chunked labels, from
``_dask_measure``).

``meshccl.dask.label`` gives the labels ``meshccl.label`` gives on the whole
array (1..N in raster order of each component's first cell), lazily, for
Dask arrays whose chunks are NumPy or CuPy arrays; or, asked, a cheaper
1..N numbering in chunk order, or first-cell labels.  Needs the ``dask``
extra (``pip install "meshccl[dask]"``); ``import meshccl`` never imports
Dask.

The steps (``docs/dask.md`` gives the memory of each), one graph of plain
tasks, five a chunk that work (and small ones that take the parts of a
chunk's results that tasks of other chunks read: its ids, its layers along
each axis, its counts of representatives, its gathered labels; so that on a
cluster only those move between workers, never a chunk's labels), none of
which sees every label; on a GPU each task
runs on its thread's own stream (:func:`_own_stream`) and the work on a
chunk besides labelling it is ``_kernels/chunks.cu``
(:mod:`meshccl._gpu.chunks`):

1. and 2. one task a chunk: the chunk labelled on its own by
   ``meshccl.label`` (labels 1..n_b); the global flat (C-order) index of
   each local label's first cell, that label's id from here on (unique,
   and ordered as the global raster order is); the cells of each local
   label; and the chunk's first and last layers along every axis (values,
   ids, mask);
3. one task a chunk for the faces above it: for each axis, the two layers
   across the chunk's upper face (its last layer and the next chunk's
   first, wrapped on periodic axes), with a one-cell halo on the other
   axes cut from the neighbours' layers when the neighbourhood has
   diagonals, labelled again by ``meshccl.label`` with the same options:
   cells that share a slab label are connected, and their ids are emitted
   as pairs (on the chunk's device);
4. the pairs solved by ``meshccl.graph.connected_components`` in a tree
   reduction, each node keeping only ``id -> smallest id of its
   component`` for the ids it has seen;
5. the numbering: a component's representative is its smallest id (its
   first cell), a local label of the chunk that holds that cell.  Each
   chunk finds its representatives (its ids that the tree's root does not
   move) and counts them, per line of the chunk for 'raster' (the cells
   that share all coordinates but the last); prefix sums over the chunk
   grid, one small task a level and group of chunks, give each chunk the
   representatives before each of its lines in raster order ('raster') or
   before the chunk in chunk order ('sequential'); each chunk numbers its
   own representatives, and one task over the representatives that face
   pairs name (not every label) hands their labels to the chunks whose
   local labels joined them; counts and statistics (tables of each chunk's
   local labels, made in step 1) follow the same tables to their labels;
6. each chunk renumbered by one lookup through its table.
"""

from __future__ import annotations

import contextlib
import math
import threading
from itertools import product
from operator import getitem

import numpy as np

try:
    import dask
    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError("meshccl.dask needs Dask: pip install \".[dask]\" from a clone "
                      "(dask[array] and distributed)") from exc

from . import _tuning
from .graph import Edges
from .graph import connected_components as _graph_components
from ._dask_measure import regionprops_table, statistics
from .labelling import label as _label

__all__ = ["label", "connected_components", "statistics", "regionprops_table"]

#: the numberings of :func:`label`
NUMBERINGS = ("raster", "sequential", "first-cell")

def _xp(a):
    """The array module of a chunk (NumPy, or CuPy for CuPy chunks)."""
    if type(a).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy
    return np


_streams = threading.local()


def _on_cluster():
    """Whether a ``distributed`` client is the default scheduler now (the
    graph is then built for workers that pull whole results from each
    other)."""
    import sys

    mod = sys.modules.get("distributed")
    if mod is None:
        return False
    try:
        mod.default_client()
    except ValueError:
        return False
    return True


@contextlib.contextmanager
def _own_stream(a):
    """Run a task's device work on its thread's own stream of ``a``'s GPU,
    and wait for that stream (alone) at the end; nothing for NumPy.

    Under Dask's threaded scheduler the tasks of every chunk share one
    process: on CuPy's default stream, each wait for the device (a copy to
    the host, the size of a compaction) waits for every kernel that any
    thread queued before it, so the tasks queue behind each other's work.
    On one stream a thread (kept for the thread's life, so that CuPy's
    memory pool, which reuses a freed block only on the stream it was
    allocated on, keeps reusing its blocks), a wait covers the task's own
    kernels only.  The streams are blocking ones: their work still follows
    what was queued on the default stream (an upstream task's chunk).  The
    task's results are complete when it returns, so the tasks that read
    them, on other streams, need no other order."""
    if _xp(a) is np:
        yield
        return
    import cupy

    device = a.device.id
    own = getattr(_streams, "by_device", None)
    if own is None:
        own = _streams.by_device = {}
    with cupy.cuda.Device(device):
        stream = own.get(device)
        if stream is None:
            stream = own[device] = cupy.cuda.Stream()
        with stream:
            yield
            stream.synchronize()


def _scatter_min(xp, out, index, values):
    """``out[index] = min(out[index], values)``, on the array's device."""
    if xp is np:
        np.minimum.at(out, index, values)
    else:
        import cupyx

        cupyx.scatter_min(out, index, values)


def _label_block(block, mask, background, connectivity, tolerance):
    """Step 1: the chunk labelled alone (labels 1..n_b in the chunk's raster
    order, of the dtype ``meshccl.label`` gives: the same kernels as a plain
    call)."""
    return _label(block, background=background, connectivity=connectivity, mask=mask,
                  tolerance=tolerance)


def _first_cells(labels):
    """Step 2 on the CPU: the chunk-local flat index of each local label's
    first cell, int64 (entry l-1 for label l).

    A label's first cell has no earlier neighbour of its label along any
    axis, so it is among the *candidates*: labelled cells whose predecessor
    along each axis carries another label (a few elementwise passes; for
    blobs only the components' leading corners).  In increasing position, a
    candidate is its label's first cell when its label exceeds every label
    before it (labels are numbered by first cell); where a chunk is
    numbered otherwise (skimage's column order for (a, b, 1) chunks) the
    smallest position per label is taken instead.  (The GPU takes the
    minimum over the candidates directly: ``meshccl._gpu.chunks.first_ids``.)"""
    if labels.size == 0:
        return np.empty(0, np.int64)
    cand = labels != 0
    for axis in range(labels.ndim):
        if labels.shape[axis] > 1:
            hi = (slice(None),) * axis + (slice(1, None),)
            lo = (slice(None),) * axis + (slice(None, -1),)
            view = cand[hi]
            np.bitwise_and(view, labels[hi] != labels[lo], out=view)
    pos = np.flatnonzero(cand).astype(np.int64)
    lab = labels.ravel()[pos].astype(np.int64)
    if lab.size == 0:
        return pos
    top = np.maximum.accumulate(lab)
    new = np.empty(lab.size, bool)
    new[0] = True
    new[1:] = lab[1:] > top[:-1]
    first = pos[new]
    n = int(top[-1])
    if first.size != n:
        first = np.full(n, labels.size, np.int64)
        np.minimum.at(first, lab - 1, pos)
    return first


def _layer(x, axis, cut):
    """The first (cut 0) or last (cut -1) layer of ``x`` along ``axis``, that
    axis moved first (shape (1, other axes...)): a view."""
    at = (slice(None),) * axis + (slice(0, 1) if cut == 0 else slice(-1, None),)
    return np.moveaxis(x[at], axis, 0)


def _chunk(values, mask, start, shape, measure, keep, background, connectivity, tolerance):
    """Steps 1 and 2 for one chunk, in one task (on the chunk's device, its
    thread's own stream there): the chunk labelled alone
    (:func:`_label_block`) and summarised (:func:`_summary`).  Returns
    ``(labels, first, rows, faces_0, ..., faces_{ndim-1})``, ``labels``
    None unless ``keep`` (``low_memory`` labels the chunk again instead of
    keeping them); ``rows`` the local labels' table that ``measure`` asks
    for (:func:`_local_rows`), or None."""
    with _own_stream(values):
        if _xp(values) is np:
            labels = _label_block(values, mask, background, connectivity, tolerance)
            out = _summary(values, labels, mask, start, shape, measure)
        else:
            labels, out = _summary_gpu(values, mask, start, shape, measure, background,
                                       connectivity, tolerance)
    return (labels if keep else None,) + out


def _ids(result):
    """A chunk's ids and counts: ``(first, counts)`` of its :func:`_chunk`
    result."""
    return result[1:3]


def _ids_and_layers(result):
    """A chunk's ids, counts and layers: ``(first, counts, faces_0, ...)`` of
    its :func:`_chunk` result (everything but the local labels)."""
    return result[1:]


def _summary_gpu(values, mask, start, shape, measure, background, connectivity, tolerance):
    """Steps 1 and 2 for a CuPy chunk: :func:`_summary`'s results by the
    kernels of ``_kernels/chunks.cu`` (the ids by an atomic minimum over
    the candidates, the layers cut in one launch each); N and the counts
    from ``meshccl.label`` itself, the statistics by ``meshccl.measure``.
    Waits for the device: N, and the ids (and the table) copied to the
    host.  Returns (labels, summary)."""
    from ._gpu import chunks

    got = _label(values, background=background, connectivity=connectivity, mask=mask,
                 tolerance=tolerance, return_num=True, return_counts=measure == "counts")
    labels, n = got[0], got[1]
    ids = chunks.first_ids(labels, n, start, shape, values.itemsize)
    faces = chunks.layers(values, labels, mask, ids)
    rows = None
    if measure == "counts":
        rows = {"count": got[2].get().astype(np.int64)}
    elif measure == "statistics":
        # (measured after labelling: the label pass that fills the table
        # takes the general path, not the per-thread launch plans that
        # the threads' concurrent calls of step 1 use)
        from . import measure as _measure

        rows = _statistics_rows(_measure.statistics(labels), start)
    return labels, (ids.get(), rows) + tuple(faces)


def _statistics_rows(stats, start):
    """A chunk's ``meshccl.measure.statistics`` (local labels, chunk
    coordinates) as host rows in global coordinates: ``count``, ``lo`` and
    ``hi`` (inclusive box corners), ``csum`` (integer coordinate sums: a
    centroid times its count, rounded, gives its sum back exactly while
    the sums stay below 2**52).  Rows without cells get ``lo`` = 2**62 and
    ``hi`` = -1, which no minimum or maximum with a row that has cells
    keeps."""
    xp = _xp(stats["voxel_counts"])
    count = stats["voxel_counts"].astype(np.int64)
    box = stats["bounding_boxes"].astype(np.int64)
    at = xp.asarray(start, dtype=np.int64)
    empty = (count == 0)[:, None]
    centroid = xp.where(empty, 0.0, stats["centroids"])
    rows = {"count": count,
            "lo": xp.where(empty, _FAR, box[:, 0::2] + at),
            "hi": xp.where(empty, -1, box[:, 1::2] + at),
            "csum": xp.rint(centroid * count[:, None]).astype(np.int64) + at * count[:, None]}
    return {k: v.get() if xp is not np else v for k, v in rows.items()}


#: a box corner beyond every coordinate (rows without cells)
_FAR = np.int64(2**62)


def _local_rows(labels, start, measure):
    """The table of a NumPy chunk's local labels 0..n_b that ``measure`` asks
    for: None; 'counts': ``{"count"}``; 'statistics': the rows of
    :func:`_statistics_rows`."""
    if measure == "counts":
        return {"count": np.bincount(labels.ravel(), minlength=int(labels.max(initial=0)) + 1)
                .astype(np.int64)}
    if measure == "statistics":
        from . import measure as _measure

        return _statistics_rows(_measure.statistics(labels), start)
    return None


def _rows_where(rows, pick):
    """The rows ``pick`` (a mask or indices) of a table."""
    return {k: v[pick] for k, v in rows.items()}


def _rows_grouped(rows, group, m):
    """A table's rows reduced by ``group`` (row -> 0..m-1) into m rows:
    counts and coordinate sums add, box corners take the min / max."""
    out = {}
    for k, v in rows.items():
        if k == "lo":
            o = np.full((m,) + v.shape[1:], _FAR, np.int64)
            np.minimum.at(o, group, v)
        elif k == "hi":
            o = np.full((m,) + v.shape[1:], -1, np.int64)
            np.maximum.at(o, group, v)
        else:
            o = np.zeros((m,) + v.shape[1:], np.int64)
            np.add.at(o, group, v)
        out[k] = o
    return out


def _rows_joined(rows, at, more):
    """``rows`` with ``more`` merged into its rows ``at`` (in place)."""
    for k, v in rows.items():
        if k == "lo":
            v[at] = np.minimum(v[at], more[k])
        elif k == "hi":
            v[at] = np.maximum(v[at], more[k])
        else:
            v[at] += more[k]
    return rows


def _summary(values, labels, mask, start, shape, measure):
    """Step 2 for a NumPy chunk: the global id of each local label (the global
    flat index of its first cell, :func:`_first_cells`), the table of the
    local labels that ``measure`` asks for (:func:`_local_rows`; row 0 the
    background), and for each
    axis the chunk's first and last layer of values, ids (-1 on the
    background) and mask -- all that step 3 needs of it.  Returns
    ``(first, rows, faces_0, ..., faces_{ndim-1})`` with ``faces_d =
    (first layer, last layer)`` along axis d, each a tuple (values, ids,
    mask or None) of copies with axis d moved first (shape (1, the other
    axes in order)).  (A CuPy chunk's: :func:`_summary_gpu`.)"""
    local = _first_cells(labels)
    first = np.ravel_multi_index(
        tuple(c + s for c, s in zip(np.unravel_index(local, labels.shape), start)),
        shape).astype(np.int64)
    rows = _local_rows(labels, start, measure)
    table = np.concatenate([[-1], first]).astype(np.int64)
    out = [first, rows]
    for axis in range(labels.ndim):
        # (copies, in C order: a view would keep the whole chunk alive; the
        # lookup makes the ids a new array)
        out.append(tuple((_layer(values, axis, cut).copy(order="C"),
                          table[_layer(labels, axis, cut)],
                          None if mask is None else _layer(mask, axis, cut).copy(order="C"))
                         for cut in (0, -1)))
    return tuple(out)


def _join(parts, axis):
    """Concatenate (values, ids, mask) tuples along ``axis`` (two
    C-contiguous CuPy parts along axis 0: by device copies, no kernel)."""
    xp = _xp(parts[0][0])
    if (xp is not np and axis == 0 and len(parts) == 2
            and all(x.flags.c_contiguous for p in parts for x in p if x is not None)):
        from ._gpu import chunks

        return tuple(None if p[0] is None else chunks.stack(*p) for p in zip(*parts))
    return tuple(None if p[0] is None else xp.concatenate(p, axis=axis)
                 for p in zip(*parts))


def _slab(offsets, pieces):
    """Step 3 for one face: the slab of two layers across it (chunk A's last
    layer along the face's axis, chunk B's first), with a one-cell halo on
    the other axes where the neighbourhood has diagonals, assembled from the
    layers that step 2 cut (the face's axis first: the slab is (2, ...), so
    its rows run along a chunk's side, never across the face).

    ``offsets``: per other axis, the sorted neighbour steps present (0
    alone without diagonals; -1 and +1 where a neighbour chunk exists or
    the axis wraps); ``pieces``: for each combination of them (in
    ``itertools.product`` order), the step-2 faces of A's and B's chunks at
    that step.  Returns (values, ids, mask or None) of the slab."""
    ndim = len(offsets) + 1
    grid = {}
    for off, (faces_a, faces_b) in zip(product(*offsets), pieces):
        cut = (slice(None),) + tuple(slice(-1, None) if k < 0 else slice(0, 1) if k > 0
                                     else slice(None) for k in off)
        layer_a, layer_b = faces_a[1], faces_b[0]
        grid[off] = _join([tuple(None if x is None else x[cut] for x in layer_a),
                           tuple(None if x is None else x[cut] for x in layer_b)], 0)

    def assemble(prefix):
        if len(prefix) == ndim - 1:
            return grid[prefix]
        parts = [assemble(prefix + (k,)) for k in offsets[len(prefix)]]
        return parts[0] if len(parts) == 1 else _join(parts, 1 + len(prefix))

    return assemble(())


def _distinct_pairs(a, b):
    """The pairs (a[i], b[i]) of two int64 id arrays (ids >= 0), each once,
    sorted: by one sort of one key a * 2**31 + b when every id is below
    2**31 (arrays of up to 2**31 cells), else by ``numpy.unique`` of rows."""
    if a.size == 0:
        return a.astype(np.int64), b.astype(np.int64)
    if max(int(a.max()), int(b.max())) < 2**31:
        key = np.unique((a << 31) | b)
        return key >> 31, key & (2**31 - 1)
    pairs = np.unique(np.stack([a, b], axis=1), axis=0)
    return pairs[:, 0].copy(), pairs[:, 1].copy()


def _face_pairs(faces, background, connectivity, tolerance):
    """Step 3 for the upper faces of one chunk, in one task (on the chunk's
    device, its thread's own stream there): each face's slab
    (:func:`_slab`; ``faces`` a list of its (offsets, pieces)) labelled with
    the same options, every id in a slab component paired with one id of
    that component (whichever write lands last).  Cells that share a slab
    label are connected.  Returns (a, b) int64 host arrays, no pair twice.

    On the GPU the pairs of every face are gathered on the device
    (:class:`meshccl._gpu.chunks.Pairs`) and copied to the host once."""
    offsets, pieces = faces[0]
    layer = pieces[0][0][1][0]  # (a layer of values: the chunk's device)
    opts = dict(background=background, connectivity=connectivity, tolerance=tolerance)
    with _own_stream(layer):
        slabs = [_slab(offsets, pieces) for offsets, pieces in faces]
        if _xp(layer) is not np:
            from ._gpu import chunks

            pairs = chunks.Pairs(sum(v.size for v, _, _ in slabs), layer.itemsize)
            for v, ids, m in slabs:
                pairs.add(_label(v, mask=m, **opts).ravel(), ids.ravel())
            return _distinct_pairs(*pairs.host())
    a, b = [], []
    for v, ids, m in slabs:
        s = _label(v, mask=m, **opts).ravel()
        i = ids.ravel()
        rep = np.empty(s.size + 1, np.int64)
        rep[s] = i
        j = rep[s]
        differ = i != j  # (the background, slab label 0, has id -1 on both sides)
        a.append(i[differ])
        b.append(j[differ])
    return _distinct_pairs(np.concatenate(a), np.concatenate(b))


def _solve(*edge_lists):
    """One node of a tree of union-finds (step 4 of :func:`label`, and every
    node of :func:`connected_components`): its children's pairs joined with
    ``meshccl.graph.connected_components`` on their device (NumPy or CuPy);
    returns (id, smallest id of its component) for every id seen that is not
    the smallest of its own, sorted by id."""
    a = edge_lists[0][0]
    xp = _xp(a)
    a = xp.concatenate([e[0] for e in edge_lists])
    b = xp.concatenate([e[1] for e in edge_lists])
    if a.size == 0:
        return a, b
    ids, inverse = xp.unique(xp.concatenate([a, b]), return_inverse=True)
    inverse = inverse.ravel()
    n, comp = _graph_components(Edges(inverse[:a.size], inverse[a.size:], ids.size),
                                   directed=False)
    # components are numbered by their smallest vertex, and ids are sorted:
    # the first vertex of each component is its smallest id
    first = xp.full(n, ids.size, dtype=np.int64)
    _scatter_min(xp, first, comp, xp.arange(ids.size, dtype=np.int64))
    rep = ids[first[comp]]
    moved = rep != ids
    return ids[moved], rep[moved]


def _tree(edge_lists):
    """Step 4: the tree reduction, ``_tuning.DASK_FAN_IN`` children a node."""
    level = list(edge_lists)
    if not level:
        return dask.delayed(_solve)((np.empty(0, np.int64), np.empty(0, np.int64)))
    while True:
        fan_in = _tuning.DASK_FAN_IN
        level = [dask.delayed(_solve)(*level[i:i + fan_in]) for i in range(0, len(level), fan_in)]
        if len(level) == 1:
            return level[0]


def _line_of(ids, start, chunk_shape, shape):
    """The line of each global flat id in a chunk: the flat index, over the
    chunk's axes but the last, of the id's cell (by integer division, axis
    by axis from the last but one)."""
    line = np.zeros(ids.size, np.int64)
    rest = ids // shape[-1]
    step = 1
    for k in range(len(shape) - 2, -1, -1):
        rest, c = np.divmod(rest, shape[k])
        line += (c - start[k]) * step
        step *= chunk_shape[k]
    return line


def _lookup(keys, values):
    """Which of ``values`` (distinct int64) are in ``keys`` (sorted,
    distinct), and where: (a mask over ``values``, the index in ``keys`` of
    each value found, in the order of ``values``).  Sorted ``values`` (a
    chunk's ids in raster order) search the keys in their range instead
    when those are fewer (a chunk's face ids among all its ids), else
    each value searches ``keys``."""
    found = np.zeros(values.size, bool)
    if keys.size == 0 or values.size == 0:
        return found, np.empty(0, np.int64)
    if values.size > 1 and bool((values[1:] > values[:-1]).all()):
        lo, hi = np.searchsorted(keys, [values[0], values[-1] + 1])
        if hi - lo < values.size // 4:
            sub = keys[lo:hi]
            at = np.minimum(np.searchsorted(values, sub), values.size - 1)
            hit = values[at] == sub
            found[at[hit]] = True
            return found, lo + np.flatnonzero(hit)
    at = np.minimum(np.searchsorted(keys, values), keys.size - 1)
    found = keys[at] == values
    return found, at[found]


def _reps(first, rows, solved, start, chunk_shape, shape, numbering):
    """Step 5, one task a chunk: which of the chunk's local labels are their
    component's representative (the smallest id, its first cell), and the
    representative of each of the others (from the tree's root, ``solved``:
    moved id -> representative, sorted by moved id).

    Returns ``(is_rep, to, moved_rows, reps_per_line, sums, line)``: ``to`` the
    representative of each local label that is not one; ``moved_rows``
    their rows of the chunk's table (None without counts or statistics);
    ``reps_per_line`` the chunk's
    representatives counted per line (the cells that share every
    coordinate but the last; shape ``chunk_shape[:-1]``) for 'raster',
    else None; ``sums`` for 'raster' the same counts summed over the lines'
    trailing axes, one array a level k (shape ``chunk_shape[:k]``), for the
    other numberings the count alone; ``line`` each representative's line
    ('raster')."""
    src, rep = solved
    moved, at = _lookup(src, first)
    to = rep[at]
    is_rep = ~moved
    moved_rows = None if rows is None else _rows_where(rows, np.flatnonzero(moved) + 1)
    if numbering != "raster":
        return is_rep, to, moved_rows, None, np.int64(is_rep.sum()), None
    lines = chunk_shape[:-1]
    line = _line_of(first[is_rep], start, chunk_shape, shape)
    per_line = np.bincount(line, minlength=int(np.prod(lines, dtype=np.int64))).reshape(lines)
    sums = [per_line]
    for k in range(len(lines) - 1, -1, -1):
        sums.append(sums[-1].sum(axis=k))
    return is_rep, to, moved_rows, per_line, tuple(sums[::-1]), line


def _prefix(n_along, *sums):
    """Step 5 ('raster'), one task per level k and group of chunks that
    share their chunk indices on axes < k: ``sums`` are those chunks' level-k
    counts (per x_0..x_{k-1}, the coordinates the group shares), in C order
    of their indices on axes >= k, ``n_along`` chunks along axis k.  Returns
    (the exclusive prefix over axis k's chunks, one array each; their
    total), both per x_0..x_{k-1}."""
    per = len(sums) // n_along
    h = [sum(sums[c * per:(c + 1) * per]) for c in range(n_along)]
    prefix, run = [], np.zeros_like(h[0])
    for part in h:
        prefix.append(run)
        run = run + part
    return prefix, run


def _offsets(*counts):
    """Step 5 ('sequential', 'first-cell'): each chunk's representatives
    before it in C order of the chunks, and N."""
    c = np.asarray(counts, np.int64)
    return np.concatenate([[0], np.cumsum(c)[:-1]]), np.int64(c.sum())


def _roots(solved):
    """The representatives that some moved id names, sorted."""
    return np.unique(solved[1])


def _number(first, reps, chunk_shape, roots, numbering, index, position, *levels):
    """Step 5, one task a chunk: the global label of each of the chunk's
    representatives, and of those that ``roots`` names (the ones other
    chunks ask for) as ``(ids, labels)``.

    'raster': ``levels`` are the results of :func:`_prefix` for the
    chunk's groups, level 0 .. ndim-1; the label of a representative is 1 +
    the representatives before its line in the whole array (the prefixes
    of the chunks before it on each axis, and within its group the lines
    before its own) + those before it on its line in the chunks before
    along the last axis + its rank on its line in the chunk.
    'sequential': ``levels`` is (the offsets, N) of :func:`_offsets`;
    ``index`` the chunk's index in the grid, ``position`` its place in C
    order.  'first-cell': the id + 1."""
    is_rep, _, _, per_line, _, line = reps
    ids = first[is_rep]
    order = None
    if ids.size > 1 and not bool((ids[1:] > ids[:-1]).all()):
        # (a chunk shaped (a, b, 1) is labelled in skimage's column order)
        order = np.argsort(ids)
        ids = ids[order]
        line = None if line is None else line[order]
    if numbering == "first-cell":
        labels = ids + 1
    elif numbering == "sequential":
        labels = levels[0][0][position] + 1 + np.arange(ids.size, dtype=np.int64)
    else:
        ndim = len(chunk_shape)
        lines = chunk_shape[:-1]
        before = np.zeros(lines, np.int64)
        for k in range(ndim):
            prefix, _ = levels[k]
            term = prefix[index[k]]
            before += term.reshape(term.shape + (1,) * (ndim - 1 - k))
            if k < ndim - 1:
                total = levels[k + 1][1]  # per x_0..x_k: every chunk of the group
                excl = np.cumsum(total, axis=k) - total
                before += excl.reshape(excl.shape + (1,) * (ndim - 2 - k))
        on_line = np.cumsum(per_line.ravel()) - per_line.ravel()  # the chunk's own, earlier lines
        rank = np.arange(ids.size, dtype=np.int64) - on_line[line]
        labels = 1 + before.ravel()[line] + rank
    if order is not None:
        ids[order] = ids.copy()
        labels[order] = labels.copy()
    asked, _ = _lookup(roots, ids)
    return labels, ids[asked], labels[asked]


def _small(reps, k):
    """The part of a :func:`_reps` result that a global task reads: the
    level-k counts ('raster'), the count of representatives (k None)."""
    return reps[4] if k is None else reps[4][k]


def _small_below(reps, k):
    """The level 0..k-1 counts of a :func:`_reps` result ('raster'), one tuple."""
    return reps[4][:k]


def _asked(number):
    return number[1], number[2]


def _moved(reps):
    return reps[1], reps[2]


def _resolve(asked, moved):
    """Step 5, one task over the representatives that face pairs name: their
    labels, sorted by id, and (counts, statistics) the rows of the local
    labels moved to each, merged.  ``asked``: every chunk's (ids, labels)
    from :func:`_number`; ``moved``: every chunk's (representative, rows)
    of its moved labels, or empty without counts or statistics."""
    ids = np.concatenate([a[0] for a in asked]) if asked else np.empty(0, np.int64)
    labels = np.concatenate([a[1] for a in asked]) if asked else np.empty(0, np.int64)
    order = np.argsort(ids, kind="stable")
    ids, labels = ids[order], labels[order]
    extra = None
    if moved:
        to = np.concatenate([m[0] for m in moved])
        rows = {k: np.concatenate([m[1][k] for m in moved]) for k in moved[0][1]}
        extra = _rows_grouped(rows, np.searchsorted(ids, to), ids.size)
    return ids, labels, extra


def _chunk_table(first, rows, reps, number, resolved):
    """Step 5, one task a chunk: its table local label -> global label (entry
    0: 0); with counts or statistics also (its representatives' labels,
    their rows in the whole array (their own rows and those of the labels
    of every chunk moved to them), its background's row)."""
    is_rep, to = reps[0], reps[1]
    labels = number[0]
    table = np.zeros(first.size + 1, np.int64)
    table[1:][is_rep] = labels
    if to.size and resolved is None:  # 'first-cell': the representative's id + 1
        table[1:][~is_rep] = to + 1
    elif to.size:
        ids, global_labels = resolved[0], resolved[1]
        table[1:][~is_rep] = global_labels[np.searchsorted(ids, to)]
    if rows is None:
        return table, None
    own = _rows_where(rows, np.flatnonzero(is_rep) + 1)
    ids, extra = resolved[0], resolved[2]
    rep_ids = first[is_rep]
    if ids.size and rep_ids.size:
        at = np.minimum(np.searchsorted(ids, rep_ids), ids.size - 1)
        hit = ids[at] == rep_ids
        _rows_joined(own, np.flatnonzero(hit), _rows_where(extra, at[hit]))
    return table, (labels, own, _rows_where(rows, slice(0, 1)))


def _rows_block(lo, *parts):
    """The rows of the labels lo + 1 .. lo + m, where the m representatives
    of a row of chunks along axis 0 live (consecutive labels in both
    numberings): ``parts`` those chunks' (labels, rows, background)."""
    m = sum(p[0].size for p in parts)
    out = {}
    for labels, rows, _ in parts:
        for k, v in rows.items():
            if k not in out:
                out[k] = np.zeros((m,) + v.shape[1:], np.int64)
            out[k][labels - lo - 1] = v
    return out


def _counts_block(lo, *parts):
    """Counts of the labels lo + 1 .. lo + m (:func:`_rows_block`)."""
    return _rows_block(lo, *parts).get("count", np.zeros(0, np.int64))


def _background(table):
    return table[1][2]


def _background_cells(*rows):
    return np.array([sum(int(r["count"][0]) for r in rows)], np.int64)


def _statistics_of(ndim, on_gpu, background, *blocks):
    """The dict of ``meshccl.measure.statistics`` of the labels, rows 0..N,
    from every chunk's background row (``background``) and the rows of the
    labels 1..N (``blocks``, :func:`_rows_block`, in order of labels),
    written block by block into the result (the only copy of the N + 1 rows
    besides the blocks).  Rows without cells: box (0, -1), centroid NaN,
    as ``meshccl.measure`` gives them."""
    from ._dask_measure import _to_device

    first = _rows_grouped({k: np.concatenate([r[k] for r in background]) for k in background[0]},
                          np.zeros(len(background), np.int64), 1)
    parts = [first] + [b for b in blocks if b]
    rows = sum(p["count"].size for p in parts)
    count = np.empty(rows, np.int64)
    boxes = np.empty((rows, 2 * ndim), np.int64)
    centroids = np.empty((rows, ndim), np.float64)
    at = 0
    with np.errstate(invalid="ignore", divide="ignore"):
        for p in parts:
            end = at + p["count"].size
            count[at:end] = p["count"]
            boxes[at:end, 0::2] = p["lo"]
            boxes[at:end, 1::2] = p["hi"]
            np.divide(p["csum"], p["count"][:, None], out=centroids[at:end])
            at = end
    empty = count == 0
    boxes[empty, 0::2] = 0
    boxes[empty, 1::2] = -1
    return _to_device({"voxel_counts": count, "bounding_boxes": boxes, "centroids": centroids},
                      on_gpu)


def _reversed_axes(stats):
    """Statistics of an array's transpose (all axes reversed) turned into the
    array's own: box corners and centroids with their axes reversed."""
    box = stats["bounding_boxes"]
    rows, width = box.shape
    xp = _xp(box)
    return {"voxel_counts": stats["voxel_counts"],
            "bounding_boxes": xp.ascontiguousarray(
                box.reshape(rows, width // 2, 2)[:, ::-1, :].reshape(rows, width)),
            "centroids": xp.ascontiguousarray(stats["centroids"][:, ::-1])}


def _renumber(labels, table, itemsize):
    """Step 6: the chunk's local labels -> global labels, by one lookup on
    the chunk's device (its thread's own stream there; ``itemsize`` the
    width of the chunk's values, which names the GPU's kernel module)."""
    if _xp(labels) is np:
        return table[labels]
    from ._gpu import chunks

    with _own_stream(labels):
        return chunks.renumber(labels, table, itemsize)


def _relabel(block, mask, table, background, connectivity, tolerance):
    """Step 6 with ``low_memory``: the chunk labelled again (step 1), then
    renumbered."""
    with _own_stream(block):
        return _renumber(_label_block(block, mask, background, connectivity, tolerance), table,
                         block.itemsize)


def _known_chunks(a, name):
    """Raise unless every chunk size of the Dask array ``a`` is known."""
    if any(math.isnan(c) for cs in a.chunks for c in cs):
        raise ValueError(f"{name} has chunks of unknown size ({a.chunks}); call "
                         f"{name}.compute_chunk_sizes() first")


def _periodic_axes(periodic, ndim):
    if isinstance(periodic, (bool, np.bool_)):
        return (bool(periodic),) * ndim
    periodic = tuple(bool(p) for p in periodic)
    if len(periodic) != ndim:
        raise ValueError(f"periodic must be a bool or one bool per axis ({ndim}), "
                         f"got {len(periodic)} values")
    return periodic


def label(image, background=None, return_num=False, connectivity=None, *, periodic=False,
          mask=None, tolerance=None, return_counts=False, bonds=None, axes=None,
          low_memory=False, numbering="raster", return_statistics=False):
    """Label the connected components of a chunked Dask array, lazily.

    The labels are those of ``meshccl.label`` on the whole array, value for
    value: 1..N in raster (C) order of each component's first cell, 0 on
    the background.  Each chunk is labelled by ``meshccl.label`` on its own
    device (NumPy chunks on the CPU, CuPy chunks on their GPU); the chunks
    are then joined across their faces and renumbered.  Nothing is computed
    until the result is.

    Parameters
    ----------
    image : dask.array.Array
        NumPy- or CuPy-backed chunks, any chunking, ndim >= 1; any dtype
        ``meshccl.label`` takes.  Other array-likes go through
        ``dask.array.asarray``.
    background, connectivity : optional
        As in ``meshccl.label`` (default 0 and ``image.ndim``).
    return_num : bool, optional
        Also return N, the number of components, as a 0-d Dask array
        (int64); ``int(num)`` or ``num.compute()`` computes it.
    periodic : bool or sequence of bool, optional
        As in ``meshccl.label``: the array wraps around on these axes.
    mask : array-like of bool, optional
        As in ``meshccl.label``; a Dask array (rechunked to ``image``'s
        chunks if needed) or anything ``dask.array.asarray`` takes.
    tolerance : float, optional
        As in ``meshccl.label``: neighbours join when ``|a - b| <= tolerance``.
    return_counts : bool, optional
        Also return the cells of each label, as ``meshccl.label`` does
        (int64, length N + 1, entry 0 the background), as a 1-D Dask array
        of NumPy type whose length is unknown until computed; summed from
        each chunk's counts of its local labels in step 5, one block of
        the array a row of chunks along axis 0.
    bonds, axes
        Not supported yet: ``NotImplementedError``.
    numbering : {'raster', 'sequential', 'first-cell'}, optional
        'raster' (default): ``meshccl.label``'s values, 1..N in raster
        order of first cells.  'sequential': 1..N in chunk order (the
        chunks in C order, each chunk's components in raster order of
        their first cells within it), deterministic, what
        ``dask_image.ndmeasure.label`` gives: the same components, without
        the prefix sums per line that 'raster' needs.  'first-cell': each
        component labelled 1 + the flat index of its first cell, as
        ``meshccl.label(..., numbering='first-cell')`` (gaps, values up to
        the number of cells); not with ``return_counts``.
    low_memory : bool, optional
        False (default): each chunk's local labels (8 bytes a cell) are
        kept from step 1 until the chunk is renumbered, after the ranking,
        so the cluster holds 8 bytes a cell of the whole array at once
        (in memory, or spilled to disk by ``distributed``).  True: the
        renumbering labels each chunk again, from a copy of ``image``'s
        (and ``mask``'s) graph that ``dask.graph_manipulation.bind`` makes
        wait for the ranking, so that nothing of size of the array lives
        across it and the input is read a second time (from disk, for an
        array read from zarr).  Same labels; for arrays larger than the
        cluster's memory.
    return_statistics : bool, optional
        Also return ``meshccl.measure.statistics`` of the labels
        (``voxel_counts``, ``bounding_boxes`` in cc3d's layout,
        ``centroids``; rows 0..N), as ``meshccl.label(...,
        return_statistics=True)`` does: a ``dask.delayed`` object that
        computes to the dict (CuPy arrays for CuPy chunks).  Each chunk's
        table of its local labels is made when it is labelled (step 1) and
        merged through the numbering's tables, so the labels are never
        needed: with ``low_memory=True``, computing N and the statistics
        alone never holds the labels of more than the chunks being
        labelled.  Not with ``numbering='first-cell'`` nor periodic axes.

    Returns
    -------
    labels : dask.array.Array of int64
        The chunks of ``image``; each chunk of the chunks' array type.
    num : dask.array.Array, 0-d, int64
        Only with ``return_num=True``.
    counts : dask.array.Array, 1-D, int64
        Only with ``return_counts=True``.
    statistics : dask.delayed.Delayed
        Only with ``return_statistics=True``; last.

    Raises
    ------
    NotImplementedError
        ``bonds`` or ``axes`` given, a 0-d image, or ``return_statistics``
        with a periodic axis.
    ValueError, TypeError
        As ``meshccl.label`` raises them: for the options and the dtype at
        once, for the values (NaN, floats beyond int64) when the chunks are
        computed; ``return_counts`` or ``return_statistics`` with
        ``numbering='first-cell'``.

    Notes
    -----
    No task holds every label: the numbering's tasks hold one chunk's
    labels, counts per line of one chunk (or of a row of chunks), or the
    representatives that face pairs name; the face equivalences are solved
    in a tree of ``meshccl.graph.connected_components`` calls, whose root
    holds the ids that touch a face.  The labels are
    int64 whatever the chunks' type (``meshccl.label`` gives int32 on CuPy
    and for bool input).

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> import meshccl, meshccl.dask
    >>> x = np.array([[1, 0, 0, 1],
    ...               [1, 0, 1, 1],
    ...               [0, 0, 0, 1]])
    >>> labels, n = meshccl.dask.label(da.from_array(x, chunks=2), return_num=True)
    >>> labels.compute()
    array([[1, 0, 0, 2],
           [1, 0, 2, 2],
           [0, 0, 0, 2]])
    >>> int(n)
    2
    >>> bool((labels.compute() == meshccl.label(x)).all())
    True
    >>> meshccl.dask.label(da.from_array(np.array([1, 0, 1]), chunks=1),
    ...                    periodic=True).compute()
    array([1, 0, 1])

    For arrays larger than the cluster's memory, ``low_memory=True`` labels
    each chunk again when renumbering it instead of holding its local
    labels (same labels), and the result can be written chunk by chunk,
    e.g. ``labels.to_zarr(...)``:

    >>> meshccl.dask.label(da.from_array(x, chunks=2), low_memory=True).compute()
    array([[1, 0, 0, 2],
           [1, 0, 2, 2],
           [0, 0, 0, 2]])

    With CuPy chunks (``x.map_blocks(cupy.asarray)``) the chunks are
    labelled and joined on their GPUs; only the pairs of ids across faces
    and the tables of step 5 travel through the host.
    """
    if bonds is not None:
        raise NotImplementedError("meshccl.dask.label does not take bonds yet; "
                                  "label the whole array with meshccl.label(..., bonds=...)")
    if axes is not None:
        raise NotImplementedError("meshccl.dask.label does not take axes yet; label each slice "
                                  "on its own, or the whole array with meshccl.label")
    if not isinstance(numbering, str) or numbering not in NUMBERINGS:
        raise ValueError(f"numbering must be one of {NUMBERINGS}, got {numbering!r}")
    if return_statistics and numbering == "first-cell":
        raise ValueError("return_statistics needs numbering='raster' or 'sequential' (its rows "
                         "are the labels 0..N), got numbering='first-cell'")
    if return_counts and numbering == "first-cell":
        raise ValueError("return_counts needs numbering='raster' or 'sequential' (counts are "
                         "indexed by the labels 1..N), got numbering='first-cell'")
    image = da.asarray(image)
    _known_chunks(image, "image")
    if image.size and any(0 in cs for cs in image.chunks):
        # step 2 cuts each chunk's first and last layers: no empty chunks
        image = image.rechunk(tuple(tuple(c for c in cs if c) for cs in image.chunks))
    ndim = image.ndim
    if ndim == 0:
        raise NotImplementedError("meshccl.dask.label needs an array of at least one axis; "
                                  "use meshccl.label for 0-d arrays")
    periodic = _periodic_axes(periodic, ndim)
    if return_statistics and any(periodic):
        raise NotImplementedError(
            "meshccl.dask.label(return_statistics=True) does not take periodic axes (the "
            "circular boxes and centroids that meshccl.label gives there do not add up across "
            f"chunks); got periodic={periodic!r}: use meshccl.label on the whole array")
    if mask is not None:
        mask = da.asarray(mask)
        _known_chunks(mask, "mask")
        if mask.shape != image.shape:
            raise ValueError(f"mask must have the image's shape {image.shape}, got {mask.shape}")
        if mask.chunks != image.chunks:
            mask = mask.rechunk(image.chunks)
    # the options checked now, by meshccl.label on one cell of the dtype
    one = (1,) * ndim
    _label(np.zeros(one, dtype=image.dtype), background=background, connectivity=connectivity,
           periodic=periodic, mask=None if mask is None else np.ones(one, bool),
           tolerance=tolerance)
    if (numbering == "raster" and image.dtype.kind != "b" and ndim == 3 and image.shape[2] == 1
            and image.shape[0] > 1 and image.shape[1] > 1 and not any(periodic)
            and mask is None and tolerance is None):
        # skimage's column order for non-bool (a, b, 1) volumes, as
        # meshccl.label keeps it: the raster order of the (1, b, a) transpose
        out = label(image.transpose(2, 1, 0), background, return_num, connectivity,
                    return_counts=return_counts, low_memory=low_memory, numbering=numbering,
                    return_statistics=return_statistics)
        if not isinstance(out, tuple):
            return out.transpose(2, 1, 0)
        out = (out[0].transpose(2, 1, 0),) + out[1:]
        if return_statistics:
            out = out[:-1] + (dask.delayed(_reversed_axes, pure=True)(out[-1]),)
        return out
    out_meta = image._meta.astype(np.int64)
    if image.size == 0:
        out = (da.zeros(image.shape, dtype=np.int64, chunks=image.chunks, meta=out_meta),)
        if return_num:
            out += (da.from_array(np.int64(0)),)
        if return_counts:
            out += (da.zeros(1, dtype=np.int64, chunks=1),)
        if return_statistics:
            from . import measure as _measure

            out += (dask.delayed(_measure.statistics, pure=True)(np.zeros(image.shape, np.int64)),)
        return out if len(out) > 1 else out[0]

    grid = image.numblocks
    starts = [np.concatenate([[0], np.cumsum(c)[:-1]]).astype(int) for c in image.chunks]
    index = list(product(*(range(n) for n in grid)))
    # steps 1 to 6 as one graph of plain tasks: a few tasks a chunk, and no
    # Dask collection built per chunk or face (building those cost more
    # than running them)
    measure = "statistics" if return_statistics else "counts" if return_counts else None
    split = _on_cluster()
    keys = _tuning.DASK_CLUSTER_KEYS
    if keys not in ("auto", "fine", "coarse"):
        raise ValueError("meshccl._tuning.DASK_CLUSTER_KEYS must be 'auto', 'fine' or 'coarse', "
                         f"got {keys!r}")
    if keys == "auto":
        # a CuPy chunk's parts move through both hosts: fewer bytes win;
        # NumPy parts are cheap to move: fewer tasks win
        keys = "fine" if _xp(image._meta) is not np else "coarse"
    coarse = split and keys == "coarse"
    token = tokenize(image, mask, background, connectivity, tolerance, periodic, measure,
                     low_memory, numbering, split and keys)
    (info, summary, local, face, solve, reps, counted, prefix, before, roots, number, asked,
     moved, resolve, table, out_name, layers) = (f"meshccl-{k}-{token}" for k in (
         "chunk", "summary", "local", "face-pairs", "solve", "reps", "counted", "prefix",
         "offsets", "roots", "number", "asked", "moved", "resolve", "table", "label",
         "layers"))
    dsk = {}
    deps = [image] + ([] if mask is None else [mask])
    # On a cluster, the parts of a chunk's results that tasks of other
    # chunks read (its layers, its counts of representatives, its asked
    # labels) are keys of their own, made beside the chunk, so that only
    # they move between workers; in one process a task takes them from
    # the whole result itself (each small task costs the threaded
    # scheduler about as much as moving nothing saves: none)

    def layer_of(b, axis):
        if coarse:
            return (getitem, (summary,) + b, 2 + axis)
        return (layers,) + b + (axis,) if split else (getitem, (info,) + b, 3 + axis)

    def part_of(name, task, suffix=()):
        # task: (function, a key of chunk b, ...); its own key (name, *b, *suffix)
        if not split:
            return task
        key = (name,) + task[1][1:] + suffix
        dsk[key] = task
        return key

    def small_of(b, k):
        if coarse and k is not None and k < ndim - 1:
            # the levels but the last in one key (the last, of a chunk's
            # lines, is the only large one)
            return (getitem, part_of(counted, (_small_below, (reps,) + b, ndim - 1), (-1,)), k)
        return part_of(counted, (_small, (reps,) + b, k), () if k is None else (k,))

    # steps 1 and 2: one task a chunk: its local labels (kept unless
    # low_memory), the id of each local label (its first cell's global
    # flat index), its counts, and the chunk's first and last layers along
    # every axis (values, ids, mask)
    for b in index:
        dsk[(info,) + b] = (_chunk, (image.name,) + b,
                            None if mask is None else (mask.name,) + b,
                            tuple(int(starts[d][b[d]]) for d in range(ndim)), image.shape,
                            measure, not low_memory, background, connectivity, tolerance)
        # the result split in keys: the ids and counts that the numbering
        # reads, and the local labels that only the renumbering reads; on
        # a cluster also the layers along each axis that the faces read (a
        # task pulls whole results of other workers: a face pulls its
        # neighbour's two layers along its axis, nothing else)
        dsk[(summary,) + b] = (_ids_and_layers if coarse else _ids, (info,) + b)
        if split and not coarse:
            for axis in range(ndim):
                dsk[(layers,) + b + (axis,)] = (getitem, (info,) + b, 3 + axis)
        if not low_memory and not coarse:
            dsk[(local,) + b] = (getitem, (info,) + b, 0)
    first_of = {b: (getitem, (summary,) + b, 0) for b in index}
    cells_of = {b: (getitem, (summary,) + b, 1) for b in index}

    # step 3: one task a chunk for its upper faces.  The slab across the
    # upper face of chunk A along an axis (A's last layer and the next
    # chunk's first, wrapped where periodic) is assembled from those
    # layers, with a one-cell halo on the other axes cut from the
    # neighbouring chunks' layers when the neighbourhood has diagonals;
    # only layers travel, never a chunk.
    diagonal = (connectivity if connectivity is not None else ndim) > 1
    faces = []
    for b in index:
        upper_faces = []
        for axis in range(ndim):
            upper = grid[axis] if periodic[axis] else grid[axis] - 1
            if b[axis] >= upper:
                continue
            others = [d for d in range(ndim) if d != axis]
            offsets = []
            for o in others:
                ks = [0]
                if diagonal and (b[o] > 0 or periodic[o]):
                    ks.insert(0, -1)
                if diagonal and (b[o] < grid[o] - 1 or periodic[o]):
                    ks.append(1)
                offsets.append(ks)
            pieces = []
            for off in product(*offsets):
                pa = list(b)
                for o, k in zip(others, off):
                    pa[o] = (b[o] + k) % grid[o]
                pb = list(pa)
                pb[axis] = (b[axis] + 1) % grid[axis]
                pieces.append([layer_of(tuple(pa), axis), layer_of(tuple(pb), axis)])
            upper_faces.append([offsets, pieces])
        if upper_faces:
            key = (face,) + b
            dsk[key] = (_face_pairs, upper_faces, background, connectivity, tolerance)
            faces.append(key)

    # step 4: the tree of union-finds
    level, depth = faces, 0
    if not level:
        dsk[(solve, 0, 0)] = (_solve, (np.empty(0, np.int64), np.empty(0, np.int64)))
        level = [(solve, 0, 0)]
    fan_in = _tuning.DASK_FAN_IN
    while len(level) > 1 or depth == 0:
        nxt = []
        for i in range(0, len(level), fan_in):
            key = (solve, depth, i // fan_in)
            if key not in dsk:
                dsk[key] = (_solve,) + tuple(level[i:i + fan_in])
            nxt.append(key)
        level, depth = nxt, depth + 1

    # step 5: numbering, a few small tasks a chunk (no task sees every
    # label): each chunk's representatives (the local labels whose id is
    # their component's smallest), counted per line ('raster') or in all;
    # prefixes of those counts over the chunk grid; each chunk numbers its
    # representatives; one task gathers the labels of the representatives
    # that face pairs name; each chunk's table local -> global label
    root = level[0]
    shapes = {b: tuple(int(image.chunks[d][b[d]]) for d in range(ndim)) for b in index}
    corner = {b: tuple(int(starts[d][b[d]]) for d in range(ndim)) for b in index}
    for b in index:
        dsk[(reps,) + b] = (_reps, first_of[b], cells_of[b], root, corner[b],
                            shapes[b], image.shape, numbering)
    if numbering == "raster":
        for k in range(ndim):
            for g in product(*(range(n) for n in grid[:k])):
                members = [g + rest for rest in product(*(range(n) for n in grid[k:]))]
                dsk[(prefix, k) + g] = (_prefix, grid[k]) + tuple(small_of(m, k)
                                                                   for m in members)
        levels = {b: tuple((prefix, k) + b[:k] for k in range(ndim)) for b in index}
        num_key = (getitem, (prefix, 0), 1)
    else:
        dsk[(before,)] = (_offsets,) + tuple(small_of(b, None) for b in index)
        levels = {b: ((before,),) for b in index}
        num_key = (getitem, (before,), 1)
    if numbering != "first-cell":
        dsk[(roots,)] = (_roots, root)
    for position, b in enumerate(index):
        dsk[(number,) + b] = (_number, first_of[b], (reps,) + b, shapes[b],
                              (roots,) if numbering != "first-cell" else np.empty(0, np.int64),
                              numbering, b, position) + levels[b]
    if numbering != "first-cell":
        dsk[(resolve,)] = (_resolve, [part_of(asked, (_asked, (number,) + b)) for b in index],
                           [part_of(moved, (_moved, (reps,) + b)) for b in index]
                           if measure else [])
        barrier = resolve
    else:
        barrier = before
    # each chunk's table (local label -> global label): made inside its
    # renumbering task, or a task of its own when the counts read it too
    tables = {b: (_chunk_table, first_of[b], cells_of[b], (reps,) + b,
                  (number,) + b, (resolve,) if numbering != "first-cell" else None)
              for b in index}
    if measure:
        for b in index:
            dsk[(table,) + b] = tables[b]
            tables[b] = (table,) + b
    if low_memory:
        # the chunks labelled again after the numbering, from a copy of the
        # input's graph bound to it: no local labels are held across it
        from dask.delayed import Delayed
        from dask.graph_manipulation import bind

        done = Delayed((barrier,), HighLevelGraph.from_collections(barrier, dict(dsk),
                                                                   dependencies=deps),
                       layer=barrier)
        inputs = (image,) if mask is None else (image, mask)
        again = bind(inputs, done)
        deps += list(again)
    for b in index:
        lookup = (getitem, tables[b], 0)
        if low_memory:
            m = None if mask is None else (again[1].name,) + b
            dsk[(out_name,) + b] = (_relabel, (again[0].name,) + b, m, lookup, background,
                                    connectivity, tolerance)
        else:
            local_labels = (getitem, (info,) + b, 0) if coarse else (local,) + b
            dsk[(out_name,) + b] = (_renumber, local_labels, lookup, image.dtype.itemsize)
    graph = HighLevelGraph.from_collections(out_name, dsk, dependencies=deps)
    labels = da.Array(graph, out_name, chunks=image.chunks, dtype=np.int64, meta=out_meta)
    out = (labels,)
    if return_num:
        dsk_n = {(f"meshccl-num-{token}",): num_key}
        out += (da.Array(HighLevelGraph.from_collections(f"meshccl-num-{token}", dsk_n,
                                                         dependencies=[labels]),
                         f"meshccl-num-{token}", chunks=(), dtype=np.int64,
                         meta=np.empty((), np.int64)),)
    # the rows of chunks along axis 0 (their representatives hold
    # consecutive labels) with the key of the label before each row's first
    rows_of_chunks = []
    for r in range(grid[0]) if return_counts or return_statistics else ():
        row = [b for b in index if b[0] == r]
        if numbering == "raster":
            lo = (getitem, (getitem, (prefix, 0), 0), r)
        else:
            lo = (getitem, (getitem, (before,), 0), index.index(row[0]))
        rows_of_chunks.append((r, lo, row))
    if return_counts:
        # entry 0 (the background), then one block a row of chunks along
        # axis 0, whose representatives hold consecutive labels
        name = f"meshccl-counts-{token}"
        dsk_c = {}
        dsk_c[(name, 0)] = (_background_cells,) + tuple((_background, (table,) + b)
                                                         for b in index)
        for r, lo, row in rows_of_chunks:
            dsk_c[(name, r + 1)] = (_counts_block, lo) + tuple(
                (getitem, (table,) + b, 1) for b in row)
        out += (da.Array(HighLevelGraph.from_collections(name, dsk_c, dependencies=[labels]),
                         name, chunks=((1,) + (np.nan,) * grid[0],), dtype=np.int64,
                         meta=np.empty((0,), np.int64)),)
    if return_statistics:
        # the same blocks of rows as the counts', merged with every chunk's
        # background row by one task that holds the N + 1 rows of the result
        from dask.delayed import Delayed

        name = f"meshccl-statistics-{token}"
        dsk_s = {}
        for r, lo, row in rows_of_chunks:
            dsk_s[(name, r)] = (_rows_block, lo) + tuple((getitem, (table,) + b, 1)
                                                        for b in row)
        dsk_s[name] = (_statistics_of, ndim, _xp(image._meta) is not np,
                       [(_background, (table,) + b) for b in index]) + tuple(
                           (name, r) for r in range(grid[0]))
        out += (Delayed(name, HighLevelGraph.from_collections(name, dsk_s,
                                                              dependencies=[labels])),)
    return out if len(out) > 1 else labels


# --------------------------------------------------------------------------
# graphs: connected_components of an edge list held by Dask

def _edge_columns(part, n):
    """The (src, dst) arrays of one partition: a (k, 2) block of a Dask
    array or a DataFrame partition with ``src`` and ``dst`` columns (pandas,
    or cuDF whose ``.values`` are CuPy); its vertices checked against
    [0, n) (n None: only against 0)."""
    if hasattr(part, "columns"):
        a, b = part["src"].values, part["dst"].values
    else:
        a, b = part[:, 0], part[:, 1]
    xp = _xp(a)
    if a.size:
        lo = int(min(a.min(), b.min()))
        hi = int(max(a.max(), b.max()))
        if lo < 0:
            raise ValueError(f"edges must hold vertices >= 0, got {lo}")
        if n is not None and hi >= n:
            raise ValueError(f"edges must hold vertices < n = {n}, got {hi}")
    return xp.asarray(a, dtype=np.int64), xp.asarray(b, dtype=np.int64)


def _partition_forest(part, n):
    """Each partition's union-find: (vertex, smallest vertex of its component
    in this partition's edges) for the vertices that are not that smallest."""
    return _solve(_edge_columns(part, n))


def _graph_labels(solved, lo, hi, dtype):
    """Labels of vertices lo..hi-1 from the merged forest (moved, rep):
    ``moved`` the sorted vertices that are not their component's smallest,
    ``rep[i]`` the smallest vertex of ``moved[i]``'s component.  A root r's
    label is r minus the moved vertices below it (the roots below it), which
    is SciPy's numbering; a moved vertex takes its root's label."""
    moved, rep = solved
    xp = _xp(moved)
    v = xp.arange(lo, hi, dtype=np.int64)
    root = v.copy()
    if moved.size:
        at = xp.minimum(xp.searchsorted(moved, v), moved.size - 1)
        hit = moved[at] == v
        root[hit] = rep[at[hit]]
    return (root - xp.searchsorted(moved, root)).astype(dtype)


def _count(solved, n):
    return np.int64(n - solved[0].size)


def _edge_partitions(edges):
    """Checks ``edges``; returns (one delayed object a partition, what kind
    of input, its array meta)."""
    if hasattr(edges, "to_delayed") and hasattr(edges, "columns"):  # a dask DataFrame
        cols = list(edges.columns)
        if "src" not in cols or "dst" not in cols:
            raise ValueError(f"edges as a DataFrame needs columns 'src' and 'dst', got {cols}")
        for c in ("src", "dst"):
            dt = np.dtype(edges.dtypes[c]) if not hasattr(edges.dtypes[c], "numpy_dtype") \
                else edges.dtypes[c].numpy_dtype
            if dt.kind not in "iu":
                raise TypeError(f"edges['{c}'] must be of an integer dtype, got {edges.dtypes[c]}")
        parts = edges[["src", "dst"]].to_delayed(optimize_graph=True)
        head = edges._meta["src"].values  # NumPy for pandas, CuPy for cuDF
        return parts, _xp(head).empty(0, np.int64)
    if not isinstance(edges, da.Array):
        if not hasattr(edges, "shape") or not hasattr(edges, "dtype"):
            raise TypeError("edges must be a Dask array of shape (m, 2), a Dask DataFrame with "
                            f"columns 'src' and 'dst', or a NumPy array; got {type(edges).__name__}")
        edges = da.asarray(edges)
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise ValueError(f"edges must have shape (m, 2), got {edges.shape}")
    if edges.dtype.kind not in "iu":
        raise TypeError(f"edges must be of an integer dtype, got {edges.dtype}")
    if edges.numblocks[1] != 1:
        edges = edges.rechunk({1: 2})
    parts = edges.to_delayed(optimize_graph=True)[:, 0].tolist()
    return parts, edges._meta.astype(np.int64).reshape(0)


def connected_components(edges, n=None, *, directed=True, connection="weak", chunks=None):
    """Connected components of a graph whose edge list is a Dask collection.

    The result is SciPy's (``scipy.sparse.csgraph.connected_components`` of
    the same edges, weak connection): labels 0..N-1 numbered in order of
    each component's smallest vertex.  Each partition of the edges is
    joined alone by ``meshccl.graph.connected_components`` (the CPU on NumPy
    partitions, the GPU on CuPy ones); the partial forests, as pairs
    (vertex, smallest vertex of its tree), are merged in a tree of the same
    union-find, ``_tuning.DASK_FAN_IN`` children a node, so no task sees more
    than that many forests at once and none sees the whole edge list.

    Parameters
    ----------
    edges : dask.array.Array or dask.dataframe.DataFrame
        The edges: a Dask array of integers of shape (m, 2), one edge a row
        (any chunking along the rows, chunks of unknown size included), or
        a Dask DataFrame with integer columns ``src`` and ``dst``.  A NumPy
        array of shape (m, 2) goes through ``dask.array.asarray``.  Self
        loops and repeated edges are allowed.
    n : int, optional
        The number of vertices (vertices that no edge names are components
        of their own).  Default None: the largest vertex + 1, which reads
        the edges once at the call (``n`` given keeps everything lazy).
    directed, connection : optional
        As in SciPy; only weak connection is implemented here, for which
        the direction of an edge does not matter (strong components of a
        graph that fits one device: ``meshccl.graph.connected_components``).
    chunks : int or tuple, optional
        The chunks of ``labels`` along the vertices (default: Dask's
        ``"auto"`` for the labels' dtype).

    Returns
    -------
    n_components : dask.array.Array, 0-d, int64
        ``int(n_components)`` computes it.
    labels : dask.array.Array, 1-D, length n
        int32 (int64 for more than 2**31 - 1 vertices), as SciPy's; chunks
        of NumPy, or CuPy for CuPy partitions.

    Raises
    ------
    TypeError
        ``edges`` of another type or of a non-integer dtype.
    ValueError
        ``edges`` of another shape, a DataFrame without ``src`` and ``dst``,
        ``n`` not an int >= 0, ``connection`` neither 'weak' nor 'strong';
        and, when the partitions are computed, a negative vertex or one
        >= ``n`` (named by value).
    NotImplementedError
        ``connection='strong'`` with ``directed=True``.

    Notes
    -----
    Memory (``docs/dask.md``): a partition's task holds its edges and about
    40 bytes per vertex it names; a node of the tree its children's pairs
    (16 bytes per vertex that is not the smallest of its tree); the root's
    pairs (at most 16 bytes per vertex of the graph) are read by every
    chunk of ``labels``.  Compute ``n_components`` and ``labels``
    together (``dask.compute``) so that the tree runs once.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> import meshccl.dask
    >>> e = da.from_array(np.array([[0, 1], [4, 5], [1, 2], [5, 5]]), chunks=(2, 2))
    >>> n, labels = meshccl.dask.connected_components(e, n=7)
    >>> int(n), labels.compute()
    (4, array([0, 0, 0, 1, 2, 2, 3], dtype=int32))
    """
    if not isinstance(connection, str) or connection.lower() not in ("weak", "strong"):
        raise ValueError(f"connection must be 'weak' or 'strong' (any case), got {connection!r}")
    if connection.lower() == "strong" and directed:
        raise NotImplementedError(
            "meshccl.dask.connected_components gives weak components only; use "
            "connection='weak' (or directed=False), or meshccl.graph.connected_components for "
            f"strong components of a graph that fits one device; got connection={connection!r}")
    if n is not None and (isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer))
                          or n < 0):
        raise ValueError(f"n must be None or an int >= 0, got {n!r}")
    parts, meta = _edge_partitions(edges)
    if n is None:
        highs = [dask.delayed(_largest, pure=True)(p) for p in parts]
        n = int(max(dask.compute(*highs), default=-1)) + 1
    n = int(n)
    dtype = np.int32 if n <= np.iinfo(np.int32).max else np.int64
    forests = [dask.delayed(_partition_forest, pure=True, nout=2)(p, n) for p in parts]
    solved = _tree(forests)
    count = da.from_delayed(dask.delayed(_count, pure=True)(solved, n), shape=(), dtype=np.int64)
    vchunks = da.core.normalize_chunks("auto" if chunks is None else chunks, (n,), dtype=dtype)
    bounds = np.concatenate([[0], np.cumsum(vchunks[0])]).astype(np.int64)
    out_meta = meta.astype(dtype)
    blocks = [da.from_delayed(dask.delayed(_graph_labels, pure=True)(solved, int(lo), int(hi),
                                                                      dtype),
                              shape=(int(hi - lo),), dtype=dtype, meta=out_meta)
              for lo, hi in zip(bounds[:-1], bounds[1:])]
    labels = da.concatenate(blocks) if blocks else da.zeros(0, dtype=dtype, chunks=1)
    return count, labels


def _largest(part):
    """The largest vertex a partition names (-1 for none)."""
    if hasattr(part, "columns"):
        a, b = part["src"].values, part["dst"].values
    else:
        a, b = part[:, 0], part[:, 1]
    return int(max(a.max(), b.max())) if a.size else -1
