"""A sequential model of the 2-D border kernel's unions, on the CPU
(experiment, 2026-11-27; benchmarks/NOTES.md).

The pieces are what the tile kernel leaves: the components of each strip of
32 rows x 256 columns at connectivity 2, each held by its first cell (its
piece root).  The pairs are the border kernel's: each tile row's top seam
(cell and the three above it, with the kernel's skipping rules) and each
strip's left seam (left_pairs's rules).  They are united one after another
in the order the kernel's blocks take them (block rows in launch order, in a
block the top-row warps, then the left-border warp; lanes in order), with
find()'s path halving and either the library's rule (the larger root hooked
under the smaller) or randomized linking (a hash priority, as the graph
path's 'jtb' method does).

Reported per case: the unions' parent loads (mean, percentiles, max) and
the depth of each hooked root in the forest left behind, which is what
meshccl_piece_roots's walks must resolve.  The model has no concurrency: on
the GPU about half the image's tile rows are at work at once, so unions walk
chains that are still being built, and the loads per union there are
higher (NOTES).  Its pair counts match the GPU kernel's counts of 2026-11-25
within 0.1 %.

    python benchmarks/experiments/border_sim.py [--cases spiral,blobs,perc]
"""
import argparse
import time

import _common  # noqa: F401  (sys.path)
import numba
import numpy as np
import scipy.ndimage as ndi

from meshccl._cpu.graph import _jtb_before  # the CPU backend's priority order
from meshccl.patterns import blobs, percolation, spiral

TH, SW = 32, 256  # tile rows; a strip's width (8 tiles)


def piece_roots(img):
    """Each foreground cell's piece root (the first cell of its strip
    component at connectivity 2); -1 for background."""
    ny, nx = img.shape
    root = np.full(img.shape, -1, np.int64)
    idx = np.arange(ny * nx, dtype=np.int64).reshape(ny, nx)
    eight = np.ones((3, 3), bool)
    for y0 in range(0, ny, TH):
        for x0 in range(0, nx, SW):
            lab, n = ndi.label(img[y0:y0 + TH, x0:x0 + SW], structure=eight)
            if n:
                mins = ndi.minimum(idx[y0:y0 + TH, x0:x0 + SW], lab,
                                   index=np.arange(1, n + 1)).astype(np.int64)
                root[y0:y0 + TH, x0:x0 + SW] = np.where(lab > 0, mins[np.maximum(lab - 1, 0)], -1)
    return root


def seam_pairs(img, root, top_row, left_row):
    """The border kernel's union pairs at connectivity 2, in its order:
    block row b takes the top seams of tile row top_row(b, rows) and the
    strips' left seams of tile row left_row(b, rows)."""
    ny, nx = img.shape
    f = img.astype(bool)
    rows, out = ny // TH, []
    for b in range(rows):
        yt, yl = top_row(b, rows) * TH, left_row(b, rows) * TH
        for xs in range(0, nx, SW):
            if yt > 0:
                for x in range(xs, xs + SW):
                    if not f[yt, x]:
                        continue
                    e = x > 0 and f[yt, x - 1]
                    V, Vl = f[yt - 1, x], x > 0 and f[yt - 1, x - 1]
                    Vr = x + 1 < nx and f[yt - 1, x + 1]
                    a = root[yt, x]
                    if Vl and not V and not e:
                        out.append((a, root[yt - 1, x - 1]))
                    if V and not Vr and not e:
                        out.append((a, root[yt - 1, x]))
                    if Vr and not (e and V):
                        out.append((a, root[yt - 1, x + 1]))
            if xs > 0:
                for y in range(yl, yl + TH):
                    k0, kL, up = f[y, xs], f[y, xs - 1], y > yl
                    ku0 = up and f[y - 1, xs]
                    kuL = up and f[y - 1, xs - 1]
                    if k0 and kL and not (ku0 and kuL):
                        out.append((root[y, xs], root[y, xs - 1]))
                    if up and k0 and kuL and not ku0 and not kL:
                        out.append((root[y, xs], root[y - 1, xs - 1]))
                    if up and kL and ku0 and not (f[y, xs - 2] and kuL):
                        out.append((root[y, xs - 1], root[y - 1, xs]))
    return np.array(out, dtype=np.int64).reshape(-1, 2)


@numba.njit(cache=True)
def _find(P, x, count):
    p = P[x]
    count[0] += 1
    while p != x:
        g = P[p]
        count[0] += 1
        if g == p:
            return p
        P[x] = g
        x = g
        p = P[x]
        count[0] += 1
    return x


@numba.njit(cache=True)
def _unite_all(P, pairs, loads, hooked, randomized):
    count = np.zeros(1, np.int64)
    for k in range(pairs.shape[0]):
        count[0] = 0
        a = _find(P, pairs[k, 0], count)
        b = _find(P, pairs[k, 1], count)
        if a != b:
            if randomized:
                if _jtb_before(b, a):
                    a, b = b, a  # a: the lower priority, hooked
            elif a < b:
                a, b = b, a  # a: the larger root, hooked
            P[a] = b
            hooked[a] = True
        loads[k] = count[0]


@numba.njit(cache=True)
def _depths(P, nodes):
    d = np.empty(nodes.size, np.int64)
    for i in range(nodes.size):
        x, n = nodes[i], 0
        while P[x] != x:
            x = P[x]
            n += 1
        d[i] = n
    return d


def scattered(b, rows):  # runs2d.cu's scattered_row
    k = 53 if rows % 53 else 59 if rows % 59 else 61 if rows % 61 else 1
    return (b * k) % rows


ORDERS = {  # (top-seam tile row, left-seam tile row) of block row b
    "library": (scattered, lambda b, r: r - 1 - b),
    "scattered_both": (scattered, scattered),
    "top_down": (lambda b, r: b, lambda b, r: b),
    "bottom_up": (lambda b, r: r - 1 - b, lambda b, r: r - 1 - b),
    "tops_down_lefts_up": (lambda b, r: b, lambda b, r: r - 1 - b),
}


def model(img, order, randomized=False):
    t = time.time()
    root = piece_roots(img)
    pairs = seam_pairs(img, root, *ORDERS[order])
    P = np.arange(img.size, dtype=np.int64)
    loads = np.zeros(len(pairs), np.int64)
    hooked = np.zeros(img.size, np.bool_)
    _unite_all(P, pairs, loads, hooked, randomized)
    d = _depths(P, np.nonzero(hooked)[0])
    q = np.percentile(loads, [50, 99, 99.9])
    return (f"pairs {len(pairs)} hooks {d.size} | loads per union mean {loads.mean():.2f} "
            f"p50/99/99.9 {q[0]:.0f}/{q[1]:.0f}/{q[2]:.0f} max {loads.max()} | hooked roots' "
            f"depth mean {d.mean():.1f} max {d.max()} ({time.time() - t:.0f} s)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="spiral,blobs,perc")
    ap.add_argument("--orders", default=",".join(ORDERS))
    opt = ap.parse_args()
    images = {"spiral": lambda: [("spiral 4096^2", spiral(4096))],
              "blobs": lambda: [("blobs 4096^2", blobs((4096, 4096)))],
              "perc": lambda: [(f"perc 8192^2 p={p}", percolation((8192, 8192), p))
                               for p in (0.4073, 0.5927)]}
    for key in opt.cases.split(","):
        for name, img in images[key]():
            for order in opt.orders.split(","):
                print(f"{name:20s} {order:18s} min-index  {model(img, order)}", flush=True)
            print(f"{name:20s} {'library':18s} randomized {model(img, 'library', True)}",
                  flush=True)
