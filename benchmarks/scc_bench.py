"""Strongly connected components: scipy.sparse.csgraph.connected_components
(connection='strong') against meshccl's CPU backend (a compiled Tarjan
search) and its GPU backend (trim, forward-backward, colouring; CuPy).

    python benchmarks/scc_bench.py --out DIR                       (CPU only)
    python benchmarks/scc_bench.py --gpu --max-scale 22 --out DIR  (needs CuPy + GPU)
    python benchmarks/scc_bench.py --gpu --quick --out DIR         (small sizes: a smoke run)

Graphs (directed, duplicates merged by the CSR build; every tool reads the
same SciPy CSR, the GPU the same arrays as a cupyx CSR on the device):

* R-MAT (meshccl.graph_generators.rmat, Graph500 a, b, c = 0.57, 0.19,
  0.19), scales --min-scale .. --max-scale (default 16..22), --edge-factor
  (16) edges per vertex: a giant component, very many single vertices;
* road-like (graph_generators.road_directed): a --road-side² grid (default
  2048) with 2.41 entries per vertex, --one-way (0.1) of the streets one
  way: a giant component of diameter ~ the side, many small ones;
* one giant component: graph_generators.random_edges with 2**--giant-scale
  vertices (default --max-scale) and --edge-factor edges each;
* the families of issue 57 (sizes times --family-scale, default 1):
  'uniform' random directed, 1 M vertices / 4 M edges; 'hubs', power-law
  out-degrees (source of each edge drawn with weight (rank + 1)**-0.8),
  1 M / 7 M; 'cycle', one directed cycle through all 300 k vertices plus
  30 k chords forward by at most 100 (one component of diameter ~ n);
  'grid', a 1000 x 1000 grid directed one way (right and down: a DAG of
  single vertices); 'dag', 1 M / 4 M random edges from a lower to a higher
  position of a random order; 'small', 100 k directed 10-cycles and 1 M
  edges from a cycle to a later one (many small components, a DAG
  between them).  Vertex ids are shuffled where the order would be
  trivial (dag, small).

Every result is checked: the CPU's labels equal SciPy's value for value,
the GPU's are SciPy's partition (numbered by smallest vertex).  CPU
columns: wall clock, median of --reps after the checked call (the
warm-up).  GPU: CUDA events
around the whole public call (validation, transpose, search, relabel and
the host's reads), median of --reps after a warm-up; then one call with
return_info=True whose phase times and colouring rounds go to the json.
The issue's target: the GPU >= 100x SciPy on R-MAT-22.  Writes TAG.md and
TAG.json under --out (--tag, default scc); --graphs picks the sets (rmat,
road, giant), so that large runs can be split over several commands.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components as scipy_cc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from meshccl import graph_generators as gen  # noqa: E402
from meshccl.graph import Edges, connected_components  # noqa: E402
from timing import median_events_ms as time_gpu, require_gpu, wall_ms  # noqa: E402


def strong(g, **kw):
    return connected_components(g, directed=True, connection="strong", **kw)


def canonical(labels):
    """Labels renumbered 0.. in order of each component's smallest vertex."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[inverse.ravel()]


def csr_of(e):
    """The SciPy CSR of an edge list, float64 data (SciPy's own dtype: no
    cast inside either tool)."""
    n = e.n_vertices
    return sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(n, n)).tocsr()


def _edges(src, dst, n):
    return Edges(np.asarray(src, np.int64), np.asarray(dst, np.int64), int(n))


def uniform(n, m, seed=0):
    """m edges with both ends uniform over n vertices."""
    rng = np.random.default_rng(seed)
    return _edges(rng.integers(0, n, m), rng.integers(0, n, m), n)


def hubs(n, m, seed=0):
    """m edges whose sources follow a power law (vertex of rank r drawn with
    weight (r + 1)**-0.8, ranks shuffled over the vertices), targets uniform."""
    rng = np.random.default_rng(seed)
    weight = (np.arange(n) + 1.0) ** -0.8
    rank = rng.choice(n, m, p=weight / weight.sum())
    return _edges(rng.permutation(n)[rank], rng.integers(0, n, m), n)


def cycle_chords(n, chords, reach=100, seed=0):
    """One directed cycle 0 -> 1 -> ... -> n - 1 -> 0 plus ``chords`` edges
    from a random vertex forward by 2..reach (modulo n)."""
    rng = np.random.default_rng(seed)
    v = np.arange(n)
    start = rng.integers(0, n, chords)
    return _edges(np.concatenate([v, start]),
                  np.concatenate([(v + 1) % n, (start + rng.integers(2, reach + 1, chords)) % n]),
                  n)


def grid_one_way(side):
    """A side x side grid, every edge directed right or down."""
    v = np.arange(side * side).reshape(side, side)
    return _edges(np.concatenate([v[:, :-1].ravel(), v[:-1, :].ravel()]),
                  np.concatenate([v[:, 1:].ravel(), v[1:, :].ravel()]), side * side)


def dag(n, m, seed=0):
    """m edges from a lower to a higher place of a random order of n vertices."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = a != b
    order = rng.permutation(n)
    return _edges(order[np.minimum(a, b)[keep]], order[np.maximum(a, b)[keep]], n)


def small_sccs(k, size, m, seed=0):
    """k directed cycles of ``size`` vertices and m edges from a vertex of
    one cycle to a vertex of a later one; vertex ids shuffled."""
    rng = np.random.default_rng(seed)
    v = np.arange(k * size)
    ring = v // size * size + (v % size + 1) % size
    a, b = rng.integers(0, k, m), rng.integers(0, k, m)
    keep = a != b
    lo, hi = np.minimum(a, b)[keep], np.maximum(a, b)[keep]
    src = lo * size + rng.integers(0, size, lo.size)
    dst = hi * size + rng.integers(0, size, hi.size)
    order = rng.permutation(k * size)
    return _edges(order[np.concatenate([v, src])], order[np.concatenate([ring, dst])], k * size)


def _k(f, count):
    return max(1, int(round(f * count)))


#: name: (table title, graph of size factor f)
FAMILIES = {
    "uniform": ("uniform random", lambda f: uniform(_k(f, 1e6), _k(f, 4e6), 5)),
    "hubs": ("power-law out-degree hubs", lambda f: hubs(_k(f, 1e6), _k(f, 7e6), 6)),
    "cycle": ("one cycle through all + chords", lambda f: cycle_chords(_k(f, 3e5), _k(f, 3e4),
                                                                       seed=7)),
    "grid": ("2-D grid, one way", lambda f: grid_one_way(_k(f ** 0.5, 1000))),
    "dag": ("random DAG", lambda f: dag(_k(f, 1e6), _k(f, 4e6), 8)),
    "small": ("many small SCCs (10-cycles)", lambda f: small_sccs(_k(f, 1e5), 10, _k(f, 1e6), 9)),
}

GRAPH_SETS = ("rmat", "road", "giant") + tuple(FAMILIES)


def graphs(args):
    sets = args.graphs.split(",")
    unknown = sorted(set(sets) - set(GRAPH_SETS))
    if unknown:
        sys.exit(f"--graphs takes a comma list of {GRAPH_SETS}, got {unknown}")
    if "rmat" in sets:
        for scale in range(args.min_scale, args.max_scale + 1):
            yield f"R-MAT {scale}", lambda s=scale: gen.rmat(s, args.edge_factor, seed=s)
    if "road" in sets:
        yield (f"road {args.road_side}², one-way {args.one_way}",
               lambda: gen.road_directed(args.road_side, one_way=args.one_way, seed=1))
    if "giant" in sets:
        gs = args.giant_scale if args.giant_scale is not None else args.max_scale
        yield (f"random 2^{gs}, {args.edge_factor}/vertex (one giant)",
               lambda: gen.random_edges(1 << gs, args.edge_factor << gs, seed=2))
    for name in sets:
        if name in FAMILIES:
            title, make = FAMILIES[name]
            yield title, lambda make=make: make(args.family_scale)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--min-scale", type=int, default=16)
    ap.add_argument("--max-scale", type=int, default=22)
    ap.add_argument("--edge-factor", type=int, default=16)
    ap.add_argument("--road-side", type=int, default=2048)
    ap.add_argument("--one-way", type=float, default=0.1)
    ap.add_argument("--giant-scale", type=int, default=None, help="default: --max-scale")
    ap.add_argument("--family-scale", type=float, default=1.0,
                    help="size factor of the issue-57 families (uniform, hubs, cycle, grid, "
                         "dag, small)")
    ap.add_argument("--graphs", default=",".join(GRAPH_SETS),
                    help=f"comma list of {', '.join(GRAPH_SETS)} (default all)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--gpu-reps", type=int, default=7)
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--no-cpu", action="store_true", help="skip meshccl's CPU backend")
    ap.add_argument("--quick", action="store_true",
                    help="scales 10..14, a 256² road grid, giant 2^14: a smoke run")
    ap.add_argument("--out", type=Path, default=Path("scc_results"))
    ap.add_argument("--tag", default="scc", help="file names under --out: TAG.md, TAG.json")
    args = ap.parse_args(argv)
    if args.quick:
        args.min_scale, args.max_scale, args.road_side = 10, 14, 256
        args.family_scale = min(args.family_scale, 1 / 16)
    if args.gpu:
        require_gpu("--gpu")
    args.out.mkdir(parents=True, exist_ok=True)
    cols = ["scipy"] + ([] if args.no_cpu else ["meshccl cpu"]) + (["meshccl gpu"] if args.gpu else [])
    rows = []
    for name, make in graphs(args):
        t = time.perf_counter()
        g = csr_of(make())
        n, m = g.shape[0], g.nnz
        want = scipy_cc(g, connection="strong")  # (also SciPy's warm-up)
        big = int(np.bincount(want[1]).max())
        row = {"graph": name, "n": n, "m": m, "components": int(want[0]), "largest": big,
               "ms": {}, "build_s": time.perf_counter() - t}
        row["ms"]["scipy"] = wall_ms(lambda: scipy_cc(g, connection="strong"), args.reps,
                                     warmup=False)  # (warmed up by the check above)
        if not args.no_cpu:
            got = strong(g)
            # the partition must be SciPy's; the numbering is SciPy's order of
            # completion, recorded as exact or not (it may differ between SciPy
            # versions)
            assert got[0] == want[0] and (canonical(got[1]) == canonical(want[1])).all(), \
                ("cpu", name)
            row["cpu_numbering_exact"] = bool((got[1] == want[1]).all())
            row["ms"]["meshccl cpu"] = wall_ms(lambda: strong(g), args.reps, warmup=False)
        if args.gpu:
            import cupy
            import cupyx.scipy.sparse as csp

            dev = csp.csr_matrix(g)
            got = strong(dev)
            assert got[0] == want[0] and (got[1].get() == canonical(want[1])).all(), ("gpu", name)
            row["ms"]["meshccl gpu"] = time_gpu(lambda: strong(dev), args.gpu_reps)
            _, _, info = strong(dev, return_info=True)
            row["gpu_phases_ms"] = {k: v * 1e3 for k, v in info["seconds"].items()}
            row["gpu_colour_rounds"] = info["iterations"]
            del dev
            cupy.get_default_memory_pool().free_all_blocks()
        rows.append(row)
        print(name, n, m, row["components"], {k: round(v, 2) for k, v in row["ms"].items()},
              flush=True)
    machine = {"platform": platform.platform(), "processor": platform.processor(),
               "python": platform.python_version(), "scipy": scipy.__version__}
    if args.gpu:
        import cupy

        machine["gpu"] = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
        machine["cupy"] = cupy.__version__
    (args.out / f"{args.tag}.json").write_text(json.dumps({"machine": machine, "columns": cols,
                                                   "args": vars(args) | {"out": str(args.out)},
                                                   "rows": rows}, indent=1))
    speed = [c for c in cols if c != "scipy"]
    lines = [f"Strong components, ms per call (median); speed-up over SciPy. {machine}", "",
             "| graph | n | stored edges | components | largest | " + " | ".join(cols) + " | "
             + " | ".join(f"{c} / scipy" for c in speed) + " |",
             "|---|---:|---:|---:|---:|" + "---:|" * (len(cols) + len(speed))]
    for r in rows:
        ms = r["ms"]
        cells = [f"{ms[c]:.2f}" for c in cols]
        ups = [f"{ms['scipy'] / ms[c]:.1f}x" for c in speed]
        lines.append(f"| {r['graph']} | {r['n']} | {r['m']} | {r['components']} | {r['largest']} | "
                     + " | ".join(cells + ups) + " |")
    if args.gpu:
        lines += ["", "GPU phases (ms, one call with return_info=True; CUDA events):", "",
                  "| graph | phases | colouring rounds |", "|---|---|---:|"]
        for r in rows:
            ph = ", ".join(f"{k} {v:.2f}" for k, v in r["gpu_phases_ms"].items())
            lines.append(f"| {r['graph']} | {ph} | {r['gpu_colour_rounds']} |")
    (args.out / f"{args.tag}.md").write_text("\n".join(lines) + "\n")
    print((args.out / f"{args.tag}.md").read_text())


if __name__ == "__main__":
    main()
