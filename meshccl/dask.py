"""Connected components of chunked Dask arrays: :func:`label`.

``meshccl.dask.label`` gives the labels ``meshccl.label`` gives on the whole
array (1..N in raster order of each component's first cell), lazily, for
Dask arrays whose chunks are NumPy or CuPy arrays.  Needs the ``dask``
extra (``pip install "meshccl[dask]"``); ``import meshccl`` never imports
Dask.

The steps, each a Dask task (``docs/dask.md`` gives the memory of each):

1. every chunk labelled on its own by ``meshccl.label`` (labels 1..n_b);
2. per chunk, the global flat (C-order) index of each local label's first
   cell; that index is the label's id from here on (unique, and ordered as
   the global raster order is);
3. per axis, the two layers across every chunk's upper face (the chunk's
   last layer and the next chunk's first, wrapped on periodic axes) of the
   values, ids and mask, gathered into one thin array (``take``) whose
   two-layer blocks get a one-cell halo on the other axes
   (``dask.array.overlap``); each such slab is labelled again by
   ``meshccl.label`` with the same options: cells that share a slab label
   are connected, and their ids are emitted as pairs (on the chunk's device);
4. the pairs solved by ``meshccl.graph.connected_components`` in a tree
   reduction, each node keeping only ``id -> smallest id of its
   component`` for the ids it has seen;
5. one task ranks the components by their smallest id (= first cell in the
   global raster order) and hands each chunk its table local label ->
   global label; each chunk is renumbered by one lookup.
"""

from __future__ import annotations

import math
from itertools import product

import numpy as np

try:
    import dask
    import dask.array as da
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError("meshccl.dask needs Dask: pip install 'meshccl[dask]' "
                      "(dask[array] and distributed)") from exc

from .graph import Edges
from .graph import connected_components as _graph_components
from .labelling import label as _label

__all__ = ["label", "connected_components"]

#: children of one node of the tree that solves the face equivalences
FAN_IN = 8


def _xp(a):
    """The array module of a chunk (NumPy, or CuPy for CuPy chunks)."""
    if type(a).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy
    return np


def _host(a):
    return a.get() if _xp(a) is not np else np.asarray(a)


def _scatter_min(xp, out, index, values):
    """``out[index] = min(out[index], values)``, on the array's device."""
    if xp is np:
        np.minimum.at(out, index, values)
    else:
        import cupyx

        cupyx.scatter_min(out, index, values)


def _label_block(block, mask, background, connectivity, tolerance):
    """Step 1: the chunk labelled alone (int64 labels 1..n_b)."""
    return _label(block, background=background, connectivity=connectivity, mask=mask,
                  tolerance=tolerance, dtype=np.int64)


def _first_cells(labels, start, shape):
    """Step 2: the global flat index of each local label's first cell
    (int64 on the host, entry l-1 for label l; increasing)."""
    xp = _xp(labels)
    flat = labels.ravel()
    n = int(flat.max()) if flat.size else 0
    if n == 0:
        return np.empty(0, np.int64)
    first = None
    if xp is np:
        # where labels 1..n appear first in increasing order (all but
        # skimage's column-order quirk, docs/usage.md), a label's first cell
        # is where the running maximum grows
        before = np.empty_like(flat)
        before[0] = 0
        np.maximum.accumulate(flat[:-1], out=before[1:])
        first = np.flatnonzero(flat > before)
        if first.size != n:
            first = None
    if first is None:
        pos = xp.flatnonzero(flat)
        first = xp.full(n + 1, flat.size, dtype=np.int64)
        _scatter_min(xp, first, flat[pos], pos.astype(np.int64))
        first = first[1:]
    local = np.unravel_index(_host(first), labels.shape)
    return np.ravel_multi_index(tuple(c + s for c, s in zip(local, start)), shape).astype(np.int64)


def _summary(labels, start, shape):
    """Step 2's per-chunk summary for step 5: the first-cell index of each
    local label, and the cells of each local label (entry 0: background)."""
    xp = _xp(labels)
    first = _first_cells(labels, start, shape)
    counts = _host(xp.bincount(labels.ravel(), minlength=first.size + 1)).astype(np.int64)
    return first, counts


def _ids_block(labels, shape=None, block_info=None):
    """Each cell's id: its label's first-cell index; -1 on the background."""
    xp = _xp(labels)
    start = [lo for lo, _ in block_info[0]["array-location"]]
    first = _first_cells(labels, start, shape)
    table = xp.asarray(np.concatenate([np.array([-1], np.int64), first]))
    return table[labels]


def _face_pairs(values, mask, ids, upper, background, connectivity, tolerance):
    """Step 3 for one slab (two layers along the axes marked in ``upper``,
    with a one-cell halo on the others): the two-cell slab across that face
    labelled with the same options; every id in a slab
    component is paired with the smallest id there.  Returns (a, b) int64
    host arrays, no pair twice from one slab."""
    xp = _xp(values)
    out_a, out_b = [], []
    for axis, has_halo in enumerate(upper):
        if not has_halo:
            continue
        sl = (slice(None),) * axis + (slice(-2, None),)
        v, i = values[sl], ids[sl]
        m = None if mask is None else mask[sl]
        s = _label(v, background=background, connectivity=connectivity, mask=m,
                   tolerance=tolerance, dtype=np.int64).ravel()
        i = i.ravel()
        keep = xp.flatnonzero(s)
        if keep.size == 0:
            continue
        s, i = s[keep], i[keep]
        smallest = xp.full(int(s.max()) + 1, np.iinfo(np.int64).max, dtype=np.int64)
        _scatter_min(xp, smallest, s, i)
        # one pair per (slab label, id): sorted by both, repeats dropped (a
        # lexsort rather than unique(axis=1): CuPy 12 and earlier lack the axis,
        # later ones are slow with it, cupy/cupy#8326)
        order = xp.lexsort(xp.stack([i, s]))
        s, i = s[order], i[order]
        first = xp.ones(s.size, dtype=bool)
        first[1:] = (s[1:] != s[:-1]) | (i[1:] != i[:-1])
        s, i = s[first], i[first]
        j = smallest[s]
        join = i != j
        if not bool(join.any()):
            continue
        out_a.append(_host(i[join]))
        out_b.append(_host(j[join]))
    if not out_a:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(out_a), np.concatenate(out_b)


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
    """Step 4: the tree reduction, FAN_IN children a node."""
    level = list(edge_lists)
    if not level:
        return dask.delayed(_solve)((np.empty(0, np.int64), np.empty(0, np.int64)))
    while True:
        level = [dask.delayed(_solve)(*level[i:i + FAN_IN]) for i in range(0, len(level), FAN_IN)]
        if len(level) == 1:
            return level[0]


def _rank(solved, *summaries):
    """Step 5: each component's global label, the rank of its smallest id;
    returns (N, [table of each chunk: local label -> global label], counts)."""
    src, rep = solved
    firsts = [f for f, _ in summaries]
    sizes = [f.size for f in firsts]
    every = np.concatenate(firsts) if firsts else np.empty(0, np.int64)
    smallest = every.copy()
    if src.size:
        at = np.minimum(np.searchsorted(src, every), src.size - 1)
        hit = src[at] == every
        smallest[hit] = rep[at[hit]]
    roots = np.sort(every[smallest == every])
    numbers = np.searchsorted(roots, smallest) + 1
    tables, start = [], 0
    for size in sizes:
        tables.append(np.concatenate([np.zeros(1, np.int64), numbers[start:start + size]]))
        start += size
    counts = np.zeros(roots.size + 1, np.int64)
    counts[0] = sum(int(c[0]) for _, c in summaries)
    if every.size:
        np.add.at(counts, numbers, np.concatenate([c[1:] for _, c in summaries]))
    return np.int64(roots.size), tables, counts


def _renumber(labels, table):
    """Step 5's lookup: the chunk's local labels -> global labels."""
    return _xp(labels).asarray(table)[labels]


def _relabel(block, mask, table, background, connectivity, tolerance):
    """Step 5 with ``low_memory``: the chunk labelled again (step 1), then
    renumbered."""
    return _renumber(_label_block(block, mask, background, connectivity, tolerance), table)


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
          low_memory=False):
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
        each chunk's counts of its local labels in step 5.
    bonds, axes
        Not supported yet: ``NotImplementedError``.
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

    Returns
    -------
    labels : dask.array.Array of int64
        The chunks of ``image``; each chunk of the chunks' array type.
    num : dask.array.Array, 0-d, int64
        Only with ``return_num=True``.
    counts : dask.array.Array, 1-D, int64
        Only with ``return_counts=True``; last.

    Raises
    ------
    NotImplementedError
        ``bonds`` or ``axes`` given, or a 0-d image.
    ValueError, TypeError
        As ``meshccl.label`` raises them: for the options and the dtype at
        once, for the values (NaN, floats beyond int64) when the chunks are
        computed.

    Notes
    -----
    One task (step 5 in ``docs/dask.md``) holds about 60 bytes per local
    label of every chunk, to rank the components; the face equivalences are solved in
    a tree of ``meshccl.graph.connected_components`` calls.  The labels are
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
    image = da.asarray(image)
    _known_chunks(image, "image")
    ndim = image.ndim
    if ndim == 0:
        raise NotImplementedError("meshccl.dask.label needs an array of at least one axis; "
                                  "use meshccl.label for 0-d arrays")
    periodic = _periodic_axes(periodic, ndim)
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
    if (image.dtype.kind != "b" and ndim == 3 and image.shape[2] == 1 and image.shape[0] > 1
            and image.shape[1] > 1 and not any(periodic) and mask is None and tolerance is None):
        # skimage's column order for non-bool (a, b, 1) volumes, as
        # meshccl.label keeps it: the raster order of the (1, b, a) transpose
        out = label(image.transpose(2, 1, 0), background, return_num, connectivity,
                    return_counts=return_counts, low_memory=low_memory)
        if isinstance(out, tuple):
            return (out[0].transpose(2, 1, 0),) + out[1:]
        return out.transpose(2, 1, 0)
    out_meta = image._meta.astype(np.int64)
    if image.size == 0:
        out = (da.zeros(image.shape, dtype=np.int64, chunks=image.chunks, meta=out_meta),)
        if return_num:
            out += (da.from_array(np.int64(0)),)
        if return_counts:
            out += (da.zeros(1, dtype=np.int64, chunks=1),)
        return out if len(out) > 1 else out[0]

    # step 1: every chunk alone
    opts = dict(background=background, connectivity=connectivity, tolerance=tolerance)
    if mask is None:
        local = da.map_blocks(_label_block, image, None, **opts, dtype=np.int64, meta=out_meta)
    else:
        local = da.map_blocks(_label_block, image, mask, **opts, dtype=np.int64, meta=out_meta)

    grid = local.numblocks
    starts = [np.concatenate([[0], np.cumsum(c)[:-1]]).astype(int) for c in local.chunks]
    # unoptimized, so that every step names the same keys (each chunk labelled once)
    blocks = local.to_delayed(optimize_graph=False)
    index = list(product(*(range(n) for n in grid)))

    # step 2: the id of each local label (its first cell's global flat index)
    summaries = [dask.delayed(_summary, pure=True)(
        blocks[b], tuple(int(starts[d][b[d]]) for d in range(ndim)), image.shape)
        for b in index]
    ids = da.map_blocks(_ids_block, local, shape=image.shape, dtype=np.int64, meta=out_meta)

    # step 3: the faces, one task a chunk and axis.  For axis i, the two
    # layers across each upper face (the chunk's last layer and the next
    # chunk's first, wrapped where periodic) are gathered into one thin
    # array, two layers a chunk along i; dask.array.overlap then gives each
    # two-layer block its one-cell halo on the other axes.  Only those
    # layers are cut and moved, never a whole chunk with its halo.
    arrays = (image, ids) if mask is None else (image, ids, mask)
    boundary = {d: ("periodic" if periodic[d] else "none") for d in range(ndim)}
    edge_lists = []
    for axis in range(ndim):
        ends = np.cumsum(local.chunks[axis])
        faces = grid[axis] if periodic[axis] else grid[axis] - 1
        if faces == 0:
            continue
        take = np.stack([ends[:faces] - 1, ends[:faces] % image.shape[axis]], axis=1).ravel()
        depth = {d: (0 if d == axis else 1) for d in range(ndim)}
        slabs = []
        for a in arrays:
            thin = a[(slice(None),) * axis + (take,)].rechunk({axis: 2})
            slabs.append(da.overlap.overlap(thin, depth=depth, boundary=boundary)
                         .to_delayed(optimize_graph=False))
        upper = tuple(d == axis for d in range(ndim))
        for b in index:
            if b[axis] >= faces:
                continue
            m = slabs[2][b] if mask is not None else None
            edge_lists.append(dask.delayed(_face_pairs, pure=True, nout=2)(
                slabs[0][b], m, slabs[1][b], upper, background, connectivity, tolerance))

    # steps 4 and 5
    solved = _tree(edge_lists)
    ranked = dask.delayed(_rank, pure=True, nout=3)(solved, *summaries)
    # each chunk gets its own table (a getitem task), not the whole list
    tables = ranked[1]
    if low_memory:
        # the chunks labelled again after the ranking, from a copy of the
        # input's graph bound to it: no local labels are held across it
        from dask.graph_manipulation import bind

        inputs = (image,) if mask is None else (image, mask)
        again = [a.to_delayed(optimize_graph=False) for a in bind(inputs, ranked[0])]
    out_blocks = np.empty(grid, dtype=object)
    for k, b in enumerate(index):
        shape_b = tuple(local.chunks[d][b[d]] for d in range(ndim))
        if low_memory:
            m = again[1][b] if mask is not None else None
            task = dask.delayed(_relabel, pure=True)(again[0][b], m, tables[k], **opts)
        else:
            task = dask.delayed(_renumber, pure=True)(blocks[b], tables[k])
        out_blocks[b] = da.from_delayed(task, shape=shape_b, dtype=np.int64, meta=out_meta)
    labels = da.block(out_blocks.tolist())
    if labels.chunks != image.chunks:  # pragma: no cover - da.block keeps them
        labels = labels.rechunk(image.chunks)
    out = (labels,)
    if return_num:
        out += (da.from_delayed(ranked[0], shape=(), dtype=np.int64),)
    if return_counts:
        out += (da.from_delayed(ranked[2], shape=(np.nan,), dtype=np.int64),)
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
    joined alone by ``meshccl.graph.connected_components`` (numba on NumPy
    partitions, the GPU on CuPy ones); the partial forests, as pairs
    (vertex, smallest vertex of its tree), are merged in a tree of the same
    union-find, ``FAN_IN`` children a node, so no task sees more than
    ``FAN_IN`` forests at once and none sees the whole edge list.

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
