"""A long randomized differential run: meshccl against independent references.

The unit tests cover each kernel path with small images and chosen cases.
This script runs for as long as it is given, on images big enough to take
the paths that only large arrays take (strips of many tiles, many tile rows,
tiles either side of the slot limit, both forms of the 2-D kernels, launch
plans and the CUDA graphs recorded at a call's addresses, several calls on
one buffer whose contents change in place), and compares every result with a
reference that shares no code with the library:

- plain images: ``skimage.measure.label``;
- periodic lattices, masks, bonds, tolerance: ``tests/reference.py``'s
  explicit neighbour graph and ``scipy.sparse.csgraph``;
- ``axes=`` (batches): skimage on every slice, renumbered by first cell;
- the iterative methods A-D: skimage;
- graphs: ``scipy.sparse.csgraph.connected_components`` (same numbering);
- ``meshccl label IN OUT`` on .npy, .tif and .png files: skimage;
- bad input (one argument corrupted, or a CSR made invalid at a random
  place): a TypeError, ValueError or NotImplementedError naming it.

Every case has its own seed (``--seed`` + its index), so one case can be run
again alone (``--case``, with the run's ``--max-cells`` and ``--kinds``).  A
call that disagrees is written to ``OUT/failures/case-N-K.npz`` (input, got,
want) with its arguments in ``case-N-K.txt``; the run goes on and exits 1
at the end.  ``OUT/progress.log`` has a line per case with its time.  Usage::

    python tests/soak.py --seconds 300 --backend gpu --out /tmp/soak
    python tests/soak.py --case 1234 --seed 0 --backend gpu

``tests/test_soak.py`` runs a few cases of each kind on every backend, so
this script cannot rot unnoticed.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import io
import json
import math
import os
import sys
import time
from collections import Counter, defaultdict

import numpy as np
from scipy import ndimage
from skimage.measure import label as sk_label

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
sys.path.insert(1, os.path.dirname(_HERE))  # the checkout, when meshccl is not installed
import meshccl  # noqa: E402
from meshccl import graph_generators as gen  # noqa: E402
from meshccl import patterns  # noqa: E402
from reference import by_first_cell, reference_lattice  # noqa: E402

# --------------------------------------------------------------------------
# Images: families of 0 / 1 (or few-valued) fields on any shape
# --------------------------------------------------------------------------


def _smooth(rng, shape, sigma):
    return ndimage.gaussian_filter(rng.random(shape, dtype=np.float32), sigma, mode="wrap")


def percolation(rng, shape):
    p = rng.choice([rng.uniform(0.02, 0.98), 0.4073, 0.5927, 0.3116, 0.1369])
    return (rng.random(shape) < p).astype(np.int64), f"percolation p={p:.4f}"


def blobs(rng, shape):
    sigma, q = rng.uniform(0.7, 9.0), rng.uniform(0.2, 0.8)
    f = _smooth(rng, shape, sigma)
    return (f > np.quantile(f, q)).astype(np.int64), f"blobs sigma={sigma:.2f} q={q:.2f}"


def potts(rng, shape):
    k, sigma = int(rng.integers(2, 9)), rng.uniform(0.5, 5.0)
    f = _smooth(rng, shape, sigma)
    cuts = np.quantile(f, np.linspace(0, 1, k + 1)[1:-1])
    return np.searchsorted(cuts, f).astype(np.int64), f"potts q={k} sigma={sigma:.2f}"


def blocky(rng, shape):
    """Random levels upscaled: uniform tiles, borders on tile boundaries."""
    scale = int(rng.choice([1, 2, 3, 7, 16, 31, 32, 33, 64]))
    levels = int(rng.choice([2, 2, 3, 5]))
    small = rng.integers(0, levels, size=tuple(-(-s // scale) for s in shape))
    for axis in range(len(shape)):
        small = np.repeat(small, scale, axis=axis)
    return small[tuple(slice(0, s) for s in shape)], f"blocky scale={scale} levels={levels}"


def segments(rng, shape):
    """Runs along the last axis with a set rate of starts: tiles with about
    as many run starts as the 2-D kernels' slots, either side of the limit."""
    r = rng.uniform(0.05, 0.6)
    starts = rng.random(shape) < r
    v = (np.cumsum(starts, axis=-1) + rng.integers(0, 2, size=shape[:-1] + (1,))) % 2
    return v.astype(np.int64), f"segments rate={r:.3f}"


def stripes(rng, shape):
    """Diagonal or straight stripes one cell wide: only diagonal steps join
    diagonal ones, straight ones cross every tile in one direction."""
    idx = np.indices(shape)
    period = int(rng.integers(2, 9))
    d = [int(rng.choice([-1, 0, 1])) for _ in shape[:-1]]
    s = idx[-1] + sum(di * ix for di, ix in zip(d, idx[:-1]))
    if rng.random() < 0.3:
        s = idx[int(rng.integers(0, len(shape)))]
    return ((s % period) == 0).astype(np.int64), f"stripes period={period} d={d}"


def serpentine(rng, shape):
    """A one-cell-wide snake through the whole array (long chains of
    tiles); a few cells removed break it into long pieces."""
    gap = int(rng.integers(2, 6))
    axis = int(rng.integers(0, len(shape)))
    moved = shape[:axis] + shape[axis + 1:] + (shape[axis],)
    lead = np.zeros((math.prod(moved[:-1]), moved[-1]), np.int64)
    lead[::gap] = 1
    for k, r in enumerate(range(0, lead.shape[0] - gap, gap)):
        col = lead.shape[1] - 1 if k % 2 == 0 else 0
        lead[r:r + gap + 1, col] = 1
    a = np.ascontiguousarray(np.moveaxis(lead.reshape(moved), -1, axis))
    breaks = int(rng.integers(0, 4))
    flat = a.reshape(-1)
    if breaks and flat.size:
        flat[rng.integers(0, flat.size, breaks)] = 0
    return a, f"serpentine gap={gap} axis={axis} breaks={breaks}"


def rings(rng, shape):
    """Nested rings around a random centre (the spiral's nesting, closed)."""
    idx = np.indices(shape)
    centre = [rng.uniform(0, s) for s in shape]
    dist = np.max(np.abs(np.stack([i - c for i, c in zip(idx, centre)])), axis=0)
    period = int(rng.integers(2, 6))
    return ((np.floor(dist) % period) == 0).astype(np.int64), f"rings period={period}"


def spiral(rng, shape):
    if len(shape) == 1:
        row = patterns.spiral(64)[1].astype(np.int64)
        return np.resize(row, shape), "spiral row"
    n = min(max(shape[-2:]), 2048)  # tiled beyond that
    s = patterns.spiral(n).astype(np.int64)
    s = np.tile(s, (-(-shape[-2] // n), -(-shape[-1] // n)))[:shape[-2], :shape[-1]]
    return np.broadcast_to(s, shape).copy(), f"spiral n={n}"


def checker(rng, shape):
    size = int(rng.choice([1, 1, 2, 5, 32]))
    return (np.indices(shape).sum(0) // size % 2).astype(np.int64), f"checker size={size}"


def sparse(rng, shape):
    p = rng.choice([rng.uniform(0.0, 0.03), rng.uniform(0.97, 1.0), 0.0, 1.0])
    return (rng.random(shape) < p).astype(np.int64), f"sparse p={p:.4f}"


FAMILIES = [percolation, blobs, potts, blocky, segments, stripes, serpentine, rings,
            spiral, checker, sparse]
DTYPES = [np.uint8] * 6 + [np.int8, np.bool_, np.bool_, np.uint16, np.int16, np.int32,
                           np.uint32, np.int64, np.float16, np.float32, np.float64]


def _sides(rng, k, budget):
    """k log-uniform sides whose product is at most ``budget``, some
    aligned to the tiles (32) and strips (256) or one past them."""
    top = max(budget, 1) ** (1.0 / max(k, 1))
    sides = []
    for _ in range(k):
        s = int(math.exp(rng.uniform(0, math.log(max(top, 2)))))
        if rng.random() < 0.25:
            s = int(rng.choice([32, 64, 256, 512, 1024])) + int(rng.choice([-1, 0, 0, 1]))
        sides.append(max(1, s))
    while math.prod(sides) > budget and max(sides) > 1:
        i = int(np.argmax(sides))
        sides[i] = max(1, sides[i] // 2)
    return tuple(sides)


def _shape(rng, max_cells):
    """1-D now and then, 2-D mostly, 3-D often."""
    return _sides(rng, int(rng.choice([1, 2, 2, 2, 2, 3, 3])), max_cells)


def _values(rng, levels, dtype):
    """Map a field of small integers to the dtype: 0 / 1, or spread values
    (0 / 255, negative ones, large ones), so that the binary paths and the
    general ones both come up."""
    top = int(levels.max()) if levels.size else 0
    kind = rng.choice(["plain", "plain", "spread", "shift"])
    if dtype == np.bool_:
        return levels.astype(bool), "bool"
    info = np.iinfo(dtype) if np.issubdtype(dtype, np.integer) else None
    if kind == "spread" and top > 0:
        big = min(1e6, float(np.finfo(dtype).max) / 2) if info is None else None
        hi = info.max if info is not None else big
        lo = info.min if info is not None else -big
        table = rng.choice([lo, hi, 0, 1, 7, hi // 2 if info is not None else 3.0], size=top + 1,
                           replace=True)
        table[0] = 0
        return table[levels].astype(dtype), "spread"
    if kind == "shift" and (info is None or info.min < 0):
        return (levels - 1).astype(dtype), "shift -1"
    return levels.astype(dtype), "plain"


# --------------------------------------------------------------------------
# Backends
# --------------------------------------------------------------------------


class Backend:
    def __init__(self, name):
        self.name = name
        if name == "gpu":
            import cupy
            self.xp = cupy
        else:
            self.xp = np

    def put(self, a):
        return self.xp.asarray(a) if self.name == "gpu" else np.asarray(a)

    def get(self, a):
        return a.get() if self.name == "gpu" else np.asarray(a)


# --------------------------------------------------------------------------
# Case kinds: each returns a list of (what, got, want, input, arguments)
# --------------------------------------------------------------------------


def _image(rng, max_cells, shape=None, dtype=None):
    shape = shape or _shape(rng, max_cells)
    fam = FAMILIES[int(rng.integers(0, len(FAMILIES)))]
    levels, what = fam(rng, shape)
    dtype = dtype or DTYPES[int(rng.integers(0, len(DTYPES)))]
    a, how = _values(rng, levels, dtype)
    return np.ascontiguousarray(a), f"{what}, {np.dtype(dtype).name} {how}, shape {shape}"


def _label_args(rng, a):
    c = int(rng.integers(1, max(a.ndim, 1) + 1))
    bg = None
    if rng.random() < 0.3 and a.size:
        bg = a.reshape(-1)[int(rng.integers(0, a.size))].item()
        if a.dtype.kind == "f":
            bg = int(bg)
    kw = {"connectivity": c, "background": bg}
    if rng.random() < 0.2:
        kw["dtype"] = np.int64
    return kw


def _view(rng, be, a):
    """``a`` as a view of other memory: transposed storage (Fortran order in
    2-D), reversed along axis 0, or every other row of a larger array."""
    how = str(rng.choice(["transposed", "reversed", "strided"]))
    if how == "transposed" and a.ndim >= 2:
        return be.put(np.ascontiguousarray(a.T)).T, how
    if how == "reversed" and a.ndim >= 1:
        return be.put(np.ascontiguousarray(a[::-1]))[::-1], how
    store = np.zeros((2 * a.shape[0],) + a.shape[1:], a.dtype) if a.ndim else a.reshape(1)
    store[::2] = a
    return be.put(store)[::2], "strided"


@contextlib.contextmanager
def _slab_min(cells):
    """The CPU backend's fewest cells per slab and per lattice chunk
    (``CPU_SLAB_MIN_CELLS``, ``CPU_CHUNK_MIN_CELLS`` of meshccl._tuning) set
    to ``cells`` for a block (None: unchanged)."""
    from meshccl import _tuning

    if cells is None:
        yield
        return
    with _tuning.override(CPU_SLAB_MIN_CELLS=cells, CPU_CHUNK_MIN_CELLS=cells):
        yield


def _some_threads(rng, be, kw, what, pieces):
    """On the CPU, four calls in ten: ``kw["cpu_threads"]`` set to 0, 2 or
    3, and half of those with ``pieces`` of any size (else small arrays run
    serially).  Returns the slab minimum for :func:`_slab_min` (None: the
    default) and ``what`` with that said."""
    if be.name == "cpu" and rng.random() < 0.4:
        kw["cpu_threads"] = int(rng.choice([0, 2, 3]))
        if rng.random() < 0.5:
            return 1, f"{what}, {pieces} of any size"
    return None, what


def case_images(rng, be, max_cells, out):
    """Several images of one shape and dtype labelled through one buffer,
    its contents replaced in place between calls (plans, graphs at the
    call's addresses, both forms of the 2-D kernels), and last the same
    image as a view in another memory layout."""
    a, what = _image(rng, max_cells)
    kw = _label_args(rng, a)
    slab_min, what = _some_threads(rng, be, kw, what, "slabs")
    x = be.put(a)
    results = []
    calls = int(rng.integers(2, 6))
    for k in range(calls + 1):
        if k == calls:
            if a.ndim == 0:
                break
            x, how = _view(rng, be, a)
            what = what + f" | then as a {how} view"
        elif k:
            b, bwhat = _image(rng, max_cells, shape=a.shape, dtype=a.dtype.type)
            what = what + f" | then {bwhat.split(',')[0]}"
            if be.name == "gpu":
                x[...] = be.put(b)
            else:
                x = b
            a = b
        with _slab_min(slab_min):
            got, n = meshccl.label(x, return_num=True, **kw)
        want = sk_label(a, background=kw["background"], connectivity=kw["connectivity"])
        results.append((f"call {k}: {what} {kw}", be.get(got), want, a, kw))
        if n != (int(want.max()) if want.size else 0):
            results.append((f"call {k} return_num {n}", np.array(n), np.array(want.max()), a, kw))
        del got
    return results


def case_lattice(rng, be, max_cells, out):
    a, what = _image(rng, min(max_cells, 300_000))
    if a.ndim == 0 or a.dtype == np.bool_ and rng.random() < 0.5:
        a = a.astype(np.uint8)
    c = int(rng.integers(1, a.ndim + 1))
    kw = {"connectivity": c, "background": int(rng.choice([0, 1, -1])) if a.dtype != bool else None}
    if rng.random() < 0.6:
        kw["periodic"] = [bool(rng.random() < 0.6) for _ in range(a.ndim)]
    if rng.random() < 0.4:
        kw["mask"] = rng.random(a.shape) < rng.uniform(0.5, 1.0)
    if rng.random() < 0.3:
        from meshccl.neighbourhood import half_offsets
        k = len(half_offsets(a.ndim, c))
        kw["bonds"] = rng.random((k,) + a.shape) < rng.uniform(0.3, 1.0)
    if rng.random() < 0.3:
        # values and tolerance on a grid of eighths, the tolerance half-way
        # between two steps: float32 and float64 differences agree exactly
        a = a.astype(np.float32) + rng.integers(-2, 3, a.shape).astype(np.float32) / 8
        kw["tolerance"] = int(rng.integers(0, 4)) / 8 + 1 / 16
        if kw["background"] is not None:
            kw["background"] = float(kw["background"])
    if not ({"mask", "bonds", "tolerance"} & set(kw)) and not any(kw.get("periodic", [])):
        # at least one feature: without any, an (a, b, 1) volume follows
        # skimage's column order, which the reference does not model
        kw["periodic"] = [True] * a.ndim
    want = reference_lattice(a, **kw)
    call = {k: (be.put(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
    slab_min, what = _some_threads(rng, be, call, what, "chunks")
    with _slab_min(slab_min):
        got = meshccl.label(be.put(a), **call)
    return [(f"lattice: {what} {sorted(kw)} c={c}", be.get(got), want, a, kw)]


def _axes_reference(a, axes, connectivity, background):
    """skimage on every slice along ``axes``, renumbered by first cell."""
    others = [d for d in range(a.ndim) if d not in axes]
    moved = np.moveaxis(a, others + list(axes), range(a.ndim))
    lead = moved.shape[:len(others)]
    out = np.zeros(moved.shape, np.int64)
    nxt = 0
    for idx in np.ndindex(*lead):
        lab = sk_label(moved[idx], background=background, connectivity=connectivity)
        out[idx] = np.where(lab > 0, lab + nxt, 0)
        nxt += int(lab.max()) if lab.size else 0
    return by_first_cell(np.moveaxis(out, range(a.ndim), others + list(axes)))


def case_axes(rng, be, max_cells, out):
    ndim = int(rng.choice([2, 3, 3, 3]))
    batch = int(rng.integers(1, 65))
    shape = (batch,) + _sides(rng, ndim - 1, max(max_cells // batch, 1))
    a, what = _image(rng, max_cells, shape=shape)
    k = int(rng.integers(1, ndim))
    axes = tuple(sorted(int(v) for v in rng.choice(ndim, size=k, replace=False)))
    c = int(rng.integers(1, len(axes) + 1))
    bg = 0 if a.dtype != bool else None
    want = _axes_reference(a, axes, c, bg)
    threads = {"cpu_threads": int(rng.choice([0, 2]))} if be.name == "cpu" else {}
    slab_min = 1 if threads and rng.random() < 0.5 else None  # chunks of any size
    with _slab_min(slab_min):
        got = meshccl.label(be.put(a), axes=axes, connectivity=c, background=bg, **threads)
    return [(f"axes {axes}: {what} c={c}", be.get(got), want, a, {"axes": axes, "connectivity": c})]


def case_methods(rng, be, max_cells, out):
    a, what = _image(rng, min(max_cells, 20_000))
    method = str(rng.choice(["A", "B", "C", "D"]))
    c = int(rng.integers(1, max(a.ndim, 1) + 1))
    got = meshccl.label(be.put(a), connectivity=c, method=method)
    want = sk_label(a, connectivity=c)
    return [(f"method {method}: {what} c={c}", be.get(got), want, a,
             {"method": method, "connectivity": c})]


GRAPHS = [
    ("rmat", lambda rng, n: gen.rmat(max(int(math.log2(n)), 2), int(rng.integers(1, 17)),
                                     seed=int(rng.integers(1 << 30)))),
    ("grid", lambda rng, n: gen.grid((max(int(n ** 0.5), 1),) * 2, keep=rng.uniform(0.3, 1.0),
                                     seed=int(rng.integers(1 << 30)))),
    ("line", lambda rng, n: gen.line(n)),
    ("disjoint", lambda rng, n: gen.disjoint(int(rng.integers(1, 50)), max(n // 50, 1),
                                             seed=int(rng.integers(1 << 30)))),
    ("random", lambda rng, n: gen.random_edges(n, int(n * rng.uniform(0.2, 4.0)),
                                               seed=int(rng.integers(1 << 30)))),
    ("ba", lambda rng, n: gen.barabasi_albert(max(n, 10), int(rng.integers(1, 6)),
                                              seed=int(rng.integers(1 << 30)))),
    ("ws", lambda rng, n: gen.watts_strogatz(max(n, 10), 4, rng.choice([0.01, 0.1, 1.0]),
                                             seed=int(rng.integers(1 << 30)))),
]


SLOW_GRAPH_METHODS = ("edge-lp", "vertex-lp", "bfs-cc", "bfs")


def case_graph(rng, be, max_cells, out):
    from scipy import sparse
    from scipy.sparse.csgraph import connected_components as sp_cc

    from meshccl.graph import METHODS, Edges, connected_components

    name, make = GRAPHS[int(rng.integers(0, len(GRAPHS)))]
    method = str(rng.choice(METHODS))
    # label propagation and BFS take as many rounds as the graph is wide
    top = 5000 if method in SLOW_GRAPH_METHODS else 1 << 18
    n = int(math.exp(rng.uniform(math.log(2), math.log(max(min(max_cells, top), 4)))))
    e = make(rng, n)
    m = sparse.coo_matrix((np.ones(len(e.src)), (e.src, e.dst)),
                          shape=(e.n_vertices, e.n_vertices)).tocsr()
    symmetric = rng.random() < 0.5
    if symmetric:
        m = (m + m.T).tocsr()
    _, want = sp_cc(m, directed=True, connection="weak")
    form = rng.choice(["csr", "edges"])
    if form == "edges":
        coo = m.tocoo()
        g = Edges(be.put(coo.row), be.put(coo.col), e.n_vertices)
    elif be.name == "gpu":
        import cupyx.scipy.sparse as csp
        g = csp.csr_matrix(m)
    else:
        g = m
    _, got = connected_components(g, method=method, symmetric=bool(symmetric))
    what = f"graph {name} n={e.n_vertices} m={m.nnz} {method} {form} symmetric={symmetric}"
    results = [(what, be.get(got), want, None, {"method": method})]
    if rng.random() < 0.3:
        # a spanning forest: n - components edges of the input, spanning the
        # same components (so no cycle)
        from meshccl.graph import spanning_forest

        f = spanning_forest(g)
        src, dst = be.get(f.src), be.get(f.dst)
        n_v = e.n_vertices
        stored = bool(np.all(np.asarray(m[src, dst]).ravel() != 0)) if len(src) else True
        fm = sparse.coo_matrix((np.ones(len(src)), (src, dst)), shape=(n_v, n_v))
        same = bool(np.array_equal(sp_cc(fm, directed=True, connection="weak")[1], want))
        expect = n_v - (int(want.max()) + 1 if n_v else 0)
        results.append((f"forest of {what}", np.array([len(src), stored, same]),
                        np.array([expect, True, True]), None, {}))
    return results


def _label_corruption(rng, a):
    """One bad argument for label(): (keyword arguments, the name the
    error must give)."""
    from meshccl.neighbourhood import half_offsets

    nd = a.ndim
    bad = [
        ({"connectivity": int(rng.choice([0, -1, nd + 1]))}, "connectivity"),
        ({"connectivity": str(rng.choice(["1", "full"]))}, "connectivity"),
        ({"connectivity": float("nan")}, "connectivity"),
        ({"background": str(rng.choice(["x", "0"]))}, "background"),
        ({"background": complex(1, 2)}, "background"),
        ({"dtype": np.float32}, "dtype"),
        ({"mask": np.ones(a.shape[:-1] + (a.shape[-1] + 1,), bool)}, "mask"),
        ({"bonds": np.ones((len(half_offsets(nd, nd)) + 1,) + a.shape, bool),
          "connectivity": nd}, "bonds"),
        ({"periodic": [True] * (nd + 1)}, "periodic"),
        ({"tolerance": float(rng.choice([-1.0, np.nan]))}, "tolerance"),
        ({"axes": (nd,)}, "axes"),
        ({"axes": (0, 0)}, "axes"),
        ({"method": "Z"}, "method"),
        ({"device": "tpu"}, "device"),
        ({"cpu_threads": -1}, "cpu_threads"),
        ({"method": "A", "max_iterations": -1}, "max_iterations"),
    ]
    return bad[int(rng.integers(0, len(bad)))]


def _graph_corruption(rng, n, indptr, indices):
    """A CSR made invalid at a random place: (graph parts, the words the
    error must give)."""
    indptr, indices = indptr.copy(), indices.copy()
    how = str(rng.choice(["index high", "index negative", "indptr decreases", "indptr start",
                          "indptr end", "edges lengths"]))
    m = len(indices)
    if how.startswith("index") and m:
        k = int(rng.integers(0, m))
        indices[k] = n + int(rng.integers(0, 5)) if how == "index high" else -1 - int(
            rng.integers(0, 5))
        return ("csr", indptr, indices), ["indices must lie in", f"at position {k}"]
    if how == "indptr decreases" and n >= 2 and indptr[-1] > 0:
        k = int(rng.integers(1, n))
        indptr[k] = indptr[-1] + 1 if indptr[k - 1] == 0 else indptr[k - 1] - 1
        if indptr[k] <= indptr[-1] and indptr[k] >= indptr[k - 1]:
            indptr[k] = indptr[k - 1] - 1
        return ("csr", indptr, indices), ["indptr"]
    if how == "indptr start":
        indptr[0] = 1
        return ("csr", indptr, indices), ["indptr must start at 0"]
    if how == "edges lengths" and m:
        return ("edges", indices[:-1], indices), ["src and dst must have the same length"]
    indptr[-1] = m + 1
    return ("csr", indptr, indices), ["indptr must end at len(indices)"]


def case_errors(rng, be, max_cells, out):
    """Bad input must get TypeError / ValueError / NotImplementedError whose
    message names the argument (never another exception, never a result)."""
    from meshccl.graph import Edges, connected_components

    allowed = (TypeError, ValueError, NotImplementedError)
    if rng.random() < 0.5:
        a, what = _image(rng, min(max_cells, 200_000))
        if a.ndim == 0:
            a = a.reshape(1)
        kw, name = _label_corruption(rng, a)
        kw = {k: (be.put(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        words = [name]
        call = lambda: meshccl.label(be.put(a), **kw)  # noqa: E731
        what = f"label({what}, {sorted(kw)})"
    else:
        n = int(math.exp(rng.uniform(0, math.log(1 << 18))))
        e = gen.random_edges(n, int(n * rng.uniform(0.0, 4.0)) + 1, seed=int(rng.integers(1 << 30)))
        order = np.argsort(e.src, kind="stable")
        indptr = np.searchsorted(e.src[order], np.arange(n + 1)).astype(np.int64)
        indices = e.dst[order].astype(rng.choice([np.int32, np.int64]))
        (form, p, q), words = _graph_corruption(rng, n, indptr, indices)
        g = Edges(be.put(p), be.put(q), None) if form == "edges" else (be.put(p), be.put(q))
        call = lambda: connected_components(g)  # noqa: E731
        what = f"connected_components({form}, n={n}, words {words})"
    try:
        call()
    except allowed as exc:
        msg = str(exc)
        ok = all(w in msg for w in words)
        return [(f"errors: {what}: {type(exc).__name__}: {msg[:200]}", np.array(ok),
                 np.array(True), None, {})]
    except Exception as exc:  # noqa: BLE001 - any other class is the failure
        return [(f"errors: {what}: raised {exc!r}", np.array(False), np.array(True), None, {})]
    return [(f"errors: {what}: no error", np.array(False), np.array(True), None, {})]


def case_cli(rng, be, max_cells, out):
    """``meshccl label IN OUT`` through files of every format it takes,
    read back and compared with skimage (colour images aside)."""
    import tempfile

    from meshccl import cli

    fmt = str(rng.choice([".npy", ".tif", ".png"]))
    a, what = _image(rng, min(max_cells, 1_000_000),
                     dtype=None if fmt == ".npy" else rng.choice([np.uint8, np.uint16]))
    if fmt != ".npy" and a.ndim < 2:  # image files have rows and columns
        a = a.reshape(1, -1)
    if fmt == ".png":  # a 2-D grey image
        a = a.reshape(a.shape[0], -1)
    elif fmt == ".tif" and a.ndim == 3 and a.shape[-1] in (3, 4):
        a = a[..., :2].copy()  # (a last axis of 3 or 4 would read as colour)
    c = int(rng.integers(1, max(a.ndim, 1) + 1))
    bg = int(rng.choice([0, 1]))
    out_fmt = str(rng.choice([".npy", ".tif"] + ([".png"] if a.ndim == 2 else [])))
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "in" + fmt), os.path.join(tmp, "out" + out_fmt)
        if fmt == ".npy":
            np.save(src, a)
        elif fmt == ".tif":
            import tifffile
            tifffile.imwrite(src, a, photometric="minisblack")
        else:
            import imageio.v3 as iio
            iio.imwrite(src, a, extension=".png")
        # (its report of each call, and the expected usage errors)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            rc = cli.main(["label", src, dst, "--connectivity", str(c), "--background", str(bg),
                           "--device", be.name])
        want = sk_label(a, connectivity=c, background=bg)
        if out_fmt == ".png" and want.size and want.max() >= 65536:  # a usage error, exit 2
            return [(f"cli {fmt} -> .png, {int(want.max())} labels: {what}", np.array(rc),
                     np.array(2), a, {})]
        if rc != 0:
            return [(f"cli {fmt} -> {out_fmt}: {what}: exit status {rc}", np.array(rc),
                     np.array(0), a, {})]
        if out_fmt == ".npy":
            got = np.load(dst)
        elif out_fmt == ".tif":
            import tifffile
            got = tifffile.imread(dst)
        else:
            import imageio.v3 as iio
            got = np.asarray(iio.imread(dst))
    got = got.astype(np.int64).reshape(want.shape)  # (a 1-D TIFF comes back as one row)
    return [(f"cli {fmt} -> {out_fmt}: {what} c={c} bg={bg}", got, want, a, {"connectivity": c})]


KINDS = {"images": (case_images, 0.5), "lattice": (case_lattice, 0.12),
         "axes": (case_axes, 0.1), "methods": (case_methods, 0.08),
         "graph": (case_graph, 0.15), "errors": (case_errors, 0.05),
         "cli": (case_cli, 0.03)}


# --------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------


def run_case(index, seed, be, max_cells, out, kinds=None):
    """Case ``index`` of the run with ``seed``: returns (kind, cells, list of
    disagreements as strings, what the first call was).  A disagreement is
    saved under ``out``."""
    rng = np.random.default_rng([seed, index])
    names = list(kinds or KINDS)
    weights = np.array([KINDS[k][1] for k in names])
    kind = names[int(rng.choice(len(names), p=weights / weights.sum()))]
    try:
        results = KINDS[kind][0](rng, be, max_cells, out)
    except Exception as exc:  # a crash is a disagreement too
        import traceback
        return kind, 0, [f"case {index} ({kind}): raised {exc!r}\n" + traceback.format_exc()], ""
    bad, cells = [], 0
    for k, (what, got, want, a, kw) in enumerate(results):
        cells += int(np.size(want))
        if np.shape(got) != np.shape(want) or not np.array_equal(got, want):
            diff = int(np.count_nonzero(np.asarray(got) != np.asarray(want))) \
                if np.shape(got) == np.shape(want) else -1
            msg = f"case {index} ({kind}): {what}: {diff} cells differ"
            bad.append(msg)
            if out:
                os.makedirs(os.path.join(out, "failures"), exist_ok=True)
                extra = {k: v for k, v in kw.items() if isinstance(v, np.ndarray)}
                name = os.path.join(out, "failures", f"case-{index}-{k}")
                np.savez_compressed(name + ".npz",
                                    **({"a": a} if a is not None else {}), got=got, want=want,
                                    **extra)
                with open(name + ".txt", "w") as f:
                    f.write(msg + "\n" + repr({k: v for k, v in kw.items()
                                               if not isinstance(v, np.ndarray)}) + "\n")
    return kind, cells, bad, results[0][0] if results else ""


def run(seconds, seed=0, backend="gpu", max_cells=4_000_000, out=None, first=0, cases=None,
        kinds=None, log=print, slow=None):
    """Run cases ``first, first + 1, ...`` for ``seconds`` (or exactly
    ``cases`` of them); returns a summary dict."""
    be = Backend(backend)
    if out:
        os.makedirs(out, exist_ok=True)
    progress = open(os.path.join(out, "progress.log"), "a") if out else None
    t0 = time.perf_counter()
    per_kind, cells, failures = Counter(), Counter(), []
    seconds_by_kind = defaultdict(float)
    index = first
    while True:
        done = index - first
        if cases is not None and done >= cases:
            break
        if cases is None and time.perf_counter() - t0 >= seconds:
            break
        t = time.perf_counter()
        if slow:  # a case that takes longer shows where it is, on stderr
            faulthandler.dump_traceback_later(slow, exit=False)
        kind, n, bad, what = run_case(index, seed, be, max_cells, out, kinds)
        faulthandler.cancel_dump_traceback_later()
        took = time.perf_counter() - t
        seconds_by_kind[kind] += took
        if progress:
            progress.write(f"case {index} {took:.2f} s{' FAIL' if bad else ''}: {what[:200]}\n")
            progress.flush()
        per_kind[kind] += 1
        cells[kind] += n
        for msg in bad:
            log("FAIL " + msg, flush=True)
        failures.extend(bad)
        index += 1
    if progress:
        progress.close()
    summary = {"backend": backend, "seed": seed, "cases": index - first, "first": first,
               "max_cells": max_cells, "seconds": round(time.perf_counter() - t0, 1),
               "per_kind": dict(per_kind), "cells_compared": dict(cells),
               "seconds_by_kind": {k: round(v, 1) for k, v in seconds_by_kind.items()},
               "failures": failures}
    return summary


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backend", choices=["gpu", "cpu"], default="gpu")
    ap.add_argument("--max-cells", type=int, default=4_000_000)
    ap.add_argument("--out", default=None, help="folder for summary.json and failures/")
    ap.add_argument("--case", type=int, default=None, help="run this one case only")
    ap.add_argument("--slow", type=float, default=60.0,
                    help="print the stack of a case still running after this many seconds")
    ap.add_argument("--kinds", default=None, help=f"comma-separated subset of {sorted(KINDS)}")
    args = ap.parse_args(argv)
    kinds = args.kinds.split(",") if args.kinds else None
    if args.case is not None:
        s = run(0, args.seed, args.backend, args.max_cells, args.out, first=args.case, cases=1,
                kinds=kinds, slow=args.slow)
    else:
        s = run(args.seconds, args.seed, args.backend, args.max_cells, args.out, kinds=kinds,
                slow=args.slow)
    text = json.dumps(s, indent=1)
    print(json.dumps({k: v for k, v in s.items() if k != "failures"}, indent=1))
    print(f"{len(s['failures'])} disagreements")
    for msg in s["failures"][:20]:
        print(" ", msg.splitlines()[0][:400])
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "summary.json"), "w") as f:
            f.write(text + "\n")
    return 1 if s["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
