"""An independent reference labeller for any ndim (tests only).

For each distinct value, scipy.ndimage.label finds the components of the
cells holding it; components are then numbered by their first cell in raster
order.  Keys follow skimage: floats are truncated to integers first.
"""

import numpy as np
from scipy import ndimage


class Forest:
    """A disjoint-set forest for the tests that replay a kernel's unions on
    the host: the larger root goes under the smaller (as the kernels'
    union does), so a set's root is its smallest member.  Items are
    registered by :meth:`add` (or given at construction); :meth:`find` of
    an unregistered item raises KeyError."""

    def __init__(self, items=()):
        self.parent = {x: x for x in items}

    def add(self, x):
        self.parent.setdefault(x, x)
        return x

    def find(self, x):
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def unite(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def reference_label(a, background=0, connectivity=None):
    a = np.asarray(a)
    if a.dtype == bool:
        keys = a.astype(np.int64)
        bg = 1 if background == 1 else 0
    else:
        keys = a.astype(np.int64)
        bg = 0 if background is None else int(background)
    if a.ndim == 0:
        return np.array(0 if keys == bg else 1)
    conn = a.ndim if connectivity is None else connectivity
    structure = ndimage.generate_binary_structure(a.ndim, conn)
    out = np.zeros(a.shape, dtype=np.int64)
    nxt = 0
    for v in np.unique(keys):
        if v == bg:
            continue
        lab, n = ndimage.label(keys == v, structure=structure)
        out[lab > 0] = lab[lab > 0] + nxt
        nxt += n
    return by_first_cell(out)


def by_first_cell(ids):
    """Renumber non-negative component ids (0: background) 1..N in raster
    order of each component's first cell."""
    flat = np.asarray(ids).ravel()
    fg = flat > 0
    out = np.zeros(flat.shape, np.int64)
    if fg.any():
        uniq, first = np.unique(flat[fg], return_index=True)
        rank = np.zeros(int(flat.max()) + 1, np.int64)
        rank[uniq[np.argsort(first)]] = np.arange(1, len(uniq) + 1)
        out[fg] = rank[flat[fg]]
    return out.reshape(np.shape(ids))


def reference_lattice(a, background=None, connectivity=None, periodic=False, mask=None,
                      tolerance=None, bonds=None):
    """Reference for the lattice features: build the explicit neighbour graph
    (every half-neighbourhood offset, wrapped on periodic axes, filtered by
    foreground, mask, joining rule and bonds) and take its connected
    components with scipy.sparse.csgraph; number them by first cell."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    from meshccl.neighbourhood import half_offsets

    a = np.asarray(a)
    shape, ndim, n = a.shape, a.ndim, a.size
    conn = ndim if connectivity is None else connectivity
    per = (bool(periodic),) * ndim if np.isscalar(periodic) else tuple(periodic)
    if a.dtype == bool:
        keys = a.astype(np.float64 if tolerance is not None else np.int64)
        bg = 1 if background == 1 else 0
    elif tolerance is None:
        keys = a.astype(np.int64)
        bg = 0 if background is None else int(background)
    elif a.dtype.kind in "iu":
        # integers with a tolerance: compared exactly (Python ints), the
        # tolerance floored, the background matched exactly
        keys = a.astype(object)
        bg = 0 if background is None else background
        tolerance = int(np.floor(tolerance))
    else:
        keys = a.astype(np.float64)
        bg = 0.0 if background is None else float(background)
    fg = (keys != bg).astype(bool)
    if mask is not None:
        fg &= np.asarray(mask)
    coords = np.indices(shape)
    src_all = np.arange(n).reshape(shape)
    rows, cols = [], []
    for k, d in enumerate(half_offsets(ndim, conn)):
        ok = np.ones(shape, bool)
        tgt = []
        for axis in range(ndim):
            c = coords[axis] + d[axis]
            if per[axis]:
                c = c % shape[axis]
            else:
                ok &= (c >= 0) & (c < shape[axis])
                c = np.clip(c, 0, shape[axis] - 1)
            tgt.append(c)
        dst = np.ravel_multi_index(tgt, shape)
        src = src_all
        ok &= fg & fg.reshape(-1)[dst]
        kx, ky = keys.reshape(-1)[src], keys.reshape(-1)[dst]
        ok &= np.asarray((kx == ky) if tolerance is None else (np.abs(kx - ky) <= tolerance),
                         dtype=bool)
        if bonds is not None:
            ok &= np.asarray(bonds[k])
        rows.append(src[ok])
        cols.append(dst[ok])
    rows = np.concatenate(rows) if rows else np.zeros(0, int)
    cols = np.concatenate(cols) if cols else np.zeros(0, int)
    g = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    _, comp = connected_components(g, directed=False)
    return by_first_cell(np.where(fg.reshape(-1), comp + 1, 0).reshape(shape))
