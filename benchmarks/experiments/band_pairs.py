"""How many of a banded tile's unions are needed (CPU count, no GPU;
benchmarks/NOTES.md, 2026-11-26 evening).

The 2-D tile kernel labels a binary tile at connectivity 2 in bands of two
rows: each band run (a run of columns holding any foreground cell of rows
2k and 2k + 1) is one node, and the pairs across a band's top border
(row 2k against row 2k - 1) are taken by row_pairs<true> (kernels/runs.cuh:
the covered / twin / same-run rules on the cells of row 2k).  This script
replays those rules on 32 x 32 tiles of an image, in Python, and counts per
tile:

  nodes      band runs
  emitted    unions the kernel's rules ask for (band_unions's turns)
  distinct   distinct (band run, band run) pairs among them
  hooks      unions that join two different sets: nodes minus the tile's
             components, the least any choice of pairs can do with these
             nodes

emitted - hooks is the most that better rules on band runs could remove.

    python benchmarks/experiments/band_pairs.py [--size 1024] [--p 0.4073 0.5927]"""
import argparse

import _common  # noqa: F401  (sys.path)
import numpy as np

from meshccl import patterns

ALL = 0xFFFFFFFF


def row_words(tile):
    """Each row of a 32 x 32 bool tile as a 32-bit int (bit x = column x)."""
    return [int(np.packbits(r[::-1]).view(">u4")[0]) for r in tile]


def runs(mask):
    out, x = [], 0
    while x < 32:
        if (mask >> x) & 1:
            s = x
            while x < 32 and (mask >> x) & 1:
                x += 1
            out.append((s, x - 1))
        else:
            x += 1
    return out


def count_tile(F, tot):
    node = {}  # (row, column) -> band run
    n = 0
    for k in range(16):
        for s, e in runs(F[2 * k] | F[2 * k + 1]):
            for x in range(s, e + 1):
                for r in (2 * k, 2 * k + 1):
                    if (F[r] >> x) & 1:
                        node[(r, x)] = n
            n += 1
    parent = list(range(n))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    tot["nodes"] += n
    for k in range(1, 16):
        r = 2 * k
        Fr, Fu = F[r], F[r - 1]
        E = Fr & (Fr << 1) & ALL
        V, Vl, Vr = Fr & Fu, Fr & ((Fu << 1) & ALL), Fr & (Fu >> 1)
        Ul, U0, Ur = Vl & ~V & ~E, V & ~Vr & ~E, Vr & ~(E & V)  # row_pairs<true>
        seen = set()
        for U, shift in ((Ul, -1), (U0, 0), (Ur, 1)):
            for b in range(32):
                if (U >> b) & 1:
                    w, u = node[(r, b)], node[(r - 1, b + shift)]
                    tot["emitted"] += 1
                    if (w, u) not in seen:
                        seen.add((w, u))
                        tot["distinct"] += 1
                    a, c = find(w), find(u)
                    if a != c:
                        parent[max(a, c)] = min(a, c)
                        tot["hooks"] += 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--p", type=float, nargs="+", default=[0.4073, 0.5927])
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    n = a.size - a.size % 32
    for p in a.p:
        img = patterns.percolation((n, n), p, seed=a.seed).astype(bool)
        tot = dict(nodes=0, emitted=0, distinct=0, hooks=0)
        for ty in range(0, n, 32):
            for tx in range(0, n, 32):
                count_tile(row_words(img[ty:ty + 32, tx:tx + 32]), tot)
        tiles = (n // 32) ** 2
        per = {k: v / tiles for k, v in tot.items()}
        print(f"percolation {n}^2 p={p}: per tile "
              + ", ".join(f"{k} {v:.1f}" for k, v in per.items())
              + f"; emitted / hooks {tot['emitted'] / tot['hooks']:.3f}")


if __name__ == "__main__":
    main()
