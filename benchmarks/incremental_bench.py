"""Incremental connectivity on the GPU: GConn's Figures 8 and 10 (Hong,
Dhulipala and Shun 2020, section 4.4) for meshccl.graph.IncrementalConnectivity.

    python benchmarks/incremental_bench.py --out DIR            (meant to take under 5 minutes on an H100)
    python benchmarks/incremental_bench.py --quick --out DIR    (smaller graphs, fewer points)
    python benchmarks/incremental_bench.py --graphs rmat --out DIR   (R-MAT alone)

Graphs (meshccl.graph_generators, generated on the host, copied to the GPU,
edge order shuffled on the device as the paper shuffles its streams):
R-MAT scale 22 with the paper's (a, b, c) = (0.5, 0.1, 0.1) and 10 edges
per vertex, Barabási–Albert (Batagelj–Brandes) with 2**22 vertices and 10
edges each, a 4096 x 4096 grid with 60 % of its edges (a road-like graph,
standing in for the paper's europe_osm).  --quick: scale 20, 2**20, 2048².

Four measurements, every (union rule, compression) pair first:

0. floors: the edge list read once, and read with both ends' parents
   (two random reads of the parent array per edge), by two small kernels.
1. one batch: all edges inserted by one ``insert(check=False)`` into a
   fresh structure (CUDA events around the call alone; a warm-up, then the
   median of --reps); per rule its fastest compression is "the fastest
   variant" used below, as in the paper's figures.  The fastest variant is
   also timed with ``check=True`` (validation: one more launch and one
   read) and with ``forest=False``; on R-MAT, it and 'unionfind' also
   against the kernel's grid (``GRAPH_INCR_BLOCKS_PER_SM``, :data:`BLOCKS`).
2. throughput against batch size (Figure 8): the shuffled edges streamed
   in batches of 10**3 .. 10**8 (at most --max-batches batches per point),
   CUDA events around the whole stream, edges per second; check=False and,
   for 'unionfind', check=True.
   Then mixed streams at the same batch sizes: every edge inserted plus
   as many random queries, shuffled, fed to ``process`` (operations per
   second).
3. throughput against the ratio of inserts to queries (Figure 10): every
   edge as an insert plus m / ratio queries of random vertex pairs,
   shuffled together, run by ``process`` in one batch; operations per
   second.
4. the small-batch floor: microseconds per call of ``insert``,
   ``connected`` and ``process`` with one operation, check=False and
   check=True (CUDA events around 1000 back-to-back calls).

Every run ends with its component count checked against
``connected_components`` of the whole graph.  Writes incremental.md,
incremental.json and incremental.png under --out.  The target (issue 44):
one-batch insertion of R-MAT-22 at >= 5e10 edges/s (GConn reported up to
4.8e10 on a V100, Table 4); the table says whether it was met.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from meshccl import _tuning  # noqa: E402
from meshccl import graph_generators as gen  # noqa: E402
from timing import events_ms, require_gpu  # noqa: E402
from meshccl.graph import (COMPRESSION, INCREMENTAL_METHODS, Edges,  # noqa: E402
                           IncrementalConnectivity, connected_components)

RULES = [m for m in INCREMENTAL_METHODS if m != "async"]
TARGET = 5e10
#: GRAPH_INCR_BLOCKS_PER_SM values of the grid sweep (R-MAT only)
BLOCKS = (4, 8, 16, 32, 64)


GRAPHS = ("rmat", "ba", "grid")


def graphs(quick, keep=GRAPHS):
    big = 20 if quick else 22
    side = 2048 if quick else 4096
    return [g for key, g in zip(GRAPHS, [
        (f"R-MAT {big} (0.5, 0.1, 0.1), 10/vertex",
         lambda: gen.rmat(big, edge_factor=10, a=0.5, b=0.1, c=0.1, seed=1)),
        (f"Barabási–Albert 2^{big}, 10/vertex", lambda: gen.barabasi_albert_bb(1 << big, 10, seed=2)),
        (f"grid {side}², 60 % of edges", lambda: gen.grid((side, side), keep=0.6, seed=3)),
    ]) if key in keep]


def one_batch(n, src, dst, method, compression, reps, check=False, forest=None):
    """Median ms of one insert of every edge into a fresh structure, and
    the last structure's component count."""
    ts, cc = [], None
    for rep in range(reps + 1):  # the first is the warm-up (kernel compile)
        cc = IncrementalConnectivity(n, method=method, compression=compression, device="gpu",
                                     forest=forest)
        t = events_ms(lambda: cc.insert(src, dst, check=check))
        if rep:
            ts.append(t)
    return statistics.median(ts), cc.n_components


#: the floors' kernels: each thread reads four edges a step (one int4 of
#: sources, one of destinations), the first XORs them, the second XORs the
#: parents of their eight ends; a sum nobody reads is stored only when it
#: hits a value that keeps the compiler from dropping the loads
_FLOOR_SOURCE = r"""
extern "C" __global__ void meshccl_bench_read_edges(const int4* s, const int4* d, long long q,
                                                    int* sink) {
    int acc = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < q;
         i += (long long)gridDim.x * blockDim.x) {
        const int4 a = __ldcs(s + i), b = __ldcs(d + i);
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w;
    }
    if (acc == 0x7fffffff) sink[0] = acc;
}
extern "C" __global__ void meshccl_bench_read_parents(const int4* s, const int4* d, long long q,
                                                      const int* P, int* sink) {
    int acc = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < q;
         i += (long long)gridDim.x * blockDim.x) {
        const int4 a = __ldcs(s + i), b = __ldcs(d + i);
        acc ^= __ldcg(P + a.x) ^ __ldcg(P + a.y) ^ __ldcg(P + a.z) ^ __ldcg(P + a.w);
        acc ^= __ldcg(P + b.x) ^ __ldcg(P + b.y) ^ __ldcg(P + b.z) ^ __ldcg(P + b.w);
    }
    if (acc == 0x7fffffff) sink[0] = acc;
}
"""


def floors(n, src, dst, reps):
    """Median ms of what every one-batch insert does at least, on the first
    m - m mod 4 edges (int32 ``src``, ``dst``): read the edge list once,
    and read it with the parents of both ends of every edge (two random
    reads of the n-entry int32 parent array per edge, no walk, no atomic).
    One wave of blocks (8 of 256 threads a multiprocessor)."""
    import cupy

    assert src.dtype == dst.dtype == np.int32
    mod = cupy.RawModule(code=_FLOOR_SOURCE)
    read = mod.get_function("meshccl_bench_read_edges")
    gather = mod.get_function("meshccl_bench_read_parents")
    P = cupy.arange(n, dtype=cupy.int32)
    sink = cupy.zeros(1, dtype=cupy.int32)
    q = np.int64(src.size // 4)
    grid = (8 * cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["multiProcessorCount"],)
    out = {}
    for name, fn in (("edges read", lambda: read(grid, (256,), (src, dst, q, sink))),
                     ("edges and both parents read",
                      lambda: gather(grid, (256,), (src, dst, q, P, sink)))):
        fn()
        out[name] = statistics.median(events_ms(fn) for _ in range(reps))
    return out


def _timed_fresh(n, method, compression, reps, feed):
    """(median ms, last structure) of ``feed(cc)`` on a fresh structure each
    time: one untimed round, then ``reps`` timed by CUDA events."""
    ts, cc = [], None
    for rep in range(reps + 1):
        cc = IncrementalConnectivity(n, method=method, compression=compression, device="gpu")
        t = events_ms(lambda: feed(cc))
        if rep:
            ts.append(t)
    return statistics.median(ts), cc


def _batched(total, batch, max_batches):
    """(slices, items fed) of ``total`` items in at most ``max_batches`` batches."""
    count = min(-(-total // batch), max_batches)
    return [slice(k * batch, (k + 1) * batch) for k in range(count)], min(total, count * batch)


def streamed(n, src, dst, method, compression, batch, max_batches, reps, check):
    """(edges per second, component count) of the edges fed in batches."""
    slices, fed = _batched(src.size, batch, max_batches)

    def feed(cc):
        for sl in slices:
            cc.insert(src[sl], dst[sl], check=check)

    ms, cc = _timed_fresh(n, method, compression, reps, feed)
    return fed / (ms * 1e-3), (cc.n_components if fed == src.size else None)


def mixed_ops(n, src, dst, ratio, rng_seed=7):
    """(kinds, a, b): every edge as an insert and m / ratio queries of
    random vertex pairs, shuffled together on the device (the paper's
    streams for Figure 10)."""
    import cupy

    m = src.size
    q = int(m / ratio)
    rs = cupy.random.RandomState(rng_seed)
    kinds = cupy.concatenate([cupy.zeros(m, cupy.uint8), cupy.ones(q, cupy.uint8)])
    a = cupy.concatenate([src, rs.randint(0, n, q, dtype=cupy.int64).astype(src.dtype)])
    b = cupy.concatenate([dst, rs.randint(0, n, q, dtype=cupy.int64).astype(dst.dtype)])
    perm = rs.permutation(m + q)
    return kinds[perm], a[perm], b[perm]


def mixed(n, src, dst, method, compression, ratio, reps, rng_seed=7):
    """Operations per second of one process() batch of :func:`mixed_ops`."""
    kinds, a, b = mixed_ops(n, src, dst, ratio, rng_seed)
    ms, cc = _timed_fresh(n, method, compression, reps,
                          lambda cc: cc.process((kinds, a, b), check=False))
    return kinds.size / (ms * 1e-3), cc.n_components


def mixed_streamed(n, ops, method, compression, batch, max_batches, reps):
    """(operations per second, component count or None) of a mixed stream
    (:func:`mixed_ops`) fed to process() in batches of ``batch``."""
    kinds, a, b = ops
    slices, fed = _batched(kinds.size, batch, max_batches)

    def feed(cc):
        for sl in slices:
            cc.process((kinds[sl], a[sl], b[sl]), check=False)

    ms, cc = _timed_fresh(n, method, compression, reps, feed)
    return fed / (ms * 1e-3), (cc.n_components if fed == kinds.size else None)


def floor_us(calls=1000):
    """Microseconds per call of one-operation batches (the launch floor)."""
    import cupy

    cc = IncrementalConnectivity(1 << 20, device="gpu")
    one = cupy.asarray([1], dtype=cupy.int32)
    zero = cupy.asarray([0], dtype=cupy.int32)
    kind = cupy.asarray([1], dtype=cupy.uint8)
    out = {}
    for check in (False, True):
        for name, fn in (("insert", lambda: cc.insert(zero, one, check=check)),
                         ("connected", lambda: cc.connected(zero, one, check=check)),
                         ("process", lambda: cc.process((kind, zero, one), check=check))):
            fn()

            def loop():
                for _ in range(calls):
                    fn()

            t0 = time.perf_counter()
            ms = events_ms(loop)
            wall = time.perf_counter() - t0
            out[f"{name}, check={check}"] = {"events_us": ms * 1e3 / calls,
                                             "wall_us": wall * 1e6 / calls}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("incremental_results"))
    ap.add_argument("--quick", action="store_true", help="smaller graphs, fewer points")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--max-batches", type=int, default=2000,
                    help="batches per point of the batch-size sweep")
    ap.add_argument("--graphs", default=",".join(GRAPHS),
                    help="comma-separated subset of " + ",".join(GRAPHS))
    args = ap.parse_args(argv)
    bad = sorted(set(args.graphs.split(",")) - set(GRAPHS))
    if bad:
        ap.error(f"--graphs: unknown {', '.join(bad)} (choose from {', '.join(GRAPHS)})")
    require_gpu("incremental_bench")
    import cupy
    args.out.mkdir(parents=True, exist_ok=True)
    t_start = time.time()
    sizes = [10**3, 10**5, 10**7] if args.quick else [10**k for k in range(3, 9)]
    ratios = [2, 1, 0.5] if args.quick else [8, 4, 2, 1, 0.5, 0.25, 0.125]
    reps = min(3, args.reps) if args.quick else args.reps
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    machine = {"gpu": props["name"].decode(), "cupy": cupy.__version__,
               "platform": platform.platform(),
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    results = {"machine": machine, "quick": args.quick, "graphs": [], "floor": floor_us()}
    for gname, make in graphs(args.quick, args.graphs.split(",")):
        t0 = time.perf_counter()
        e = make()
        n = e.n_vertices
        perm = cupy.random.RandomState(11).permutation(e.src.size)
        src = cupy.asarray(e.src.astype(np.int32))[perm]  # the paper's unsorted COO stream
        dst = cupy.asarray(e.dst.astype(np.int32))[perm]
        del perm, e
        m = src.size
        want = connected_components(Edges(src, dst, n))[0]
        g = {"name": gname, "n": n, "m": m, "components": want, "one_batch": {},
             "batch_size": {}, "ratio": {}, "generate_s": time.perf_counter() - t0}
        print(f"{gname}: n={n} m={m} components={want} ({g['generate_s']:.1f} s)", flush=True)
        # 1. one batch, every variant
        best = {}
        for method in RULES:
            for comp in COMPRESSION[method]:
                ms, count = one_batch(n, src, dst, method, comp, reps)
                assert count == want, (gname, method, comp, count, want)
                g["one_batch"][f"{method}/{comp}"] = {"ms": ms, "edges_per_s": m / (ms * 1e-3)}
                if method not in best or ms < g["one_batch"][f"{method}/{best[method]}"]["ms"]:
                    best[method] = comp
                print(f"  one batch {method}/{comp}: {ms:.3f} ms, {m / (ms * 1e-3):.3g} edges/s",
                      flush=True)
        g["fastest"] = best
        g["floors"] = floors(n, src, dst, reps)
        print("  floors: " + ", ".join(f"{k} {v:.3f} ms" for k, v in g["floors"].items()),
              flush=True)
        fastest = min(best, key=lambda k: g["one_batch"][f"{k}/{best[k]}"]["ms"])
        for label, kw in (("check=True", {"check": True}), ("forest=False", {"forest": False})):
            ms, count = one_batch(n, src, dst, fastest, best[fastest], reps, **kw)
            assert count == want
            g["one_batch"][f"{fastest}/{best[fastest]} {label}"] = {"ms": ms,
                                                                   "edges_per_s": m / (ms * 1e-3)}
        # 1b. the batch kernel's grid: one batch against blocks per multiprocessor
        if gname.startswith("R-MAT"):
            row_keys = [fastest] + (["unionfind"] if "unionfind" in best and fastest != "unionfind"
                                    else [])
            g["blocks_per_sm"] = {}
            for method in row_keys:
                row = g["blocks_per_sm"][f"{method}/{best[method]}"] = {}
                for blocks in BLOCKS:
                    with _tuning.override(GRAPH_INCR_BLOCKS_PER_SM=blocks):
                        ms, count = one_batch(n, src, dst, method, best[method], reps)
                    assert count == want, (gname, method, blocks, count, want)
                    row[str(blocks)] = ms
                print(f"  blocks per SM {method}/{best[method]}: " + ", ".join(
                    f"{b}: {v:.3f} ms" for b, v in row.items()), flush=True)
        # 2. against batch size (Figure 8)
        for method, comp in best.items():
            for check in ((False, True) if method == "unionfind" else (False,)):
                key = f"{method}/{comp}" + (" check=True" if check else "")
                row = g["batch_size"][key] = {}
                for b in sizes:
                    rate, count = streamed(n, src, dst, method, comp, min(b, m), args.max_batches,
                                           1 if b <= 10**4 else min(reps, 3), check)
                    assert count in (None, want), (gname, key, b, count, want)
                    row[str(b)] = rate
                print(f"  batch sizes {key}: " + ", ".join(f"{b:.0e}: {r:.3g}" for b, r in
                                                          zip(sizes, row.values())), flush=True)
        # 2b. mixed streams (one query per insert) against batch size
        ops = mixed_ops(n, src, dst, 1)
        g["mixed_batch_size"] = {}
        for method, comp in best.items():
            row = g["mixed_batch_size"][f"{method}/{comp}"] = {}
            for b in sizes:
                rate, count = mixed_streamed(n, ops, method, comp, min(b, ops[0].size),
                                             args.max_batches, 1 if b <= 10**4 else min(reps, 3))
                assert count in (None, want), (gname, method, b, count, want)
                row[str(b)] = rate
            print(f"  mixed 1:1 batch sizes {method}/{comp}: " + ", ".join(
                f"{b:.0e}: {r:.3g}" for b, r in zip(sizes, row.values())), flush=True)
        del ops
        # 3. against the ratio of inserts to queries (Figure 10)
        for method, comp in best.items():
            row = g["ratio"][f"{method}/{comp}"] = {}
            for r in ratios:
                rate, count = mixed(n, src, dst, method, comp, r, min(reps, 3))
                assert count == want, (gname, method, r, count, want)
                row[str(r)] = rate
            print(f"  ratios {method}/{comp}: " + ", ".join(f"{r}: {v:.3g}" for r, v in
                                                          zip(ratios, row.values())), flush=True)
        results["graphs"].append(g)
        del src, dst
        cupy.get_default_memory_pool().free_all_blocks()
        results["seconds"] = time.time() - t_start  # the tables so far, graph by graph
        (args.out / "incremental.json").write_text(json.dumps(results, indent=1))
        (args.out / "incremental.md").write_text(markdown(results, sizes, ratios))
    plot(results, sizes, ratios, args.out / "incremental.png")
    print((args.out / "incremental.md").read_text())


def markdown(res, sizes, ratios):
    mach = res["machine"]
    lines = [f"# Incremental connectivity ({mach['gpu']}, CuPy {mach['cupy']}, {mach['date']}"
             f"{', --quick' if res['quick'] else ''}; {res['seconds']:.0f} s)", "",
             "CUDA events, median; every run's component count checked against "
             "`connected_components`. Edges stream as shuffled COO (int32).", ""]
    for g in res["graphs"]:
        lines += [f"## {g['name']}: {g['n']} vertices, {g['m']} edges, {g['components']} components",
                  "", "One batch of every edge, `insert(check=False)` into a fresh structure:", "",
                  "| rule/compression | ms | edges/s |", "|---|---:|---:|"]
        top = max(v["edges_per_s"] for v in g["one_batch"].values())
        for k, v in g["one_batch"].items():
            s = f"{v['edges_per_s']:.3g}"
            lines.append(f"| {k} | {v['ms']:.3f} | {'**' + s + '**' if v['edges_per_s'] == top else s} |")
        fl = g.get("floors", {})
        if fl:
            lines += ["", "Floors of one batch: " + "; ".join(
                f"{k}, {v:.3f} ms ({g['m'] / (v * 1e-3):.3g} edges/s)" for k, v in fl.items())
                + " (no walk, no atomic)."]
        if g["name"].startswith("R-MAT 22"):
            lines += ["", f"Target >= {TARGET:.0e} edges/s: **{'met' if top >= TARGET else 'not met'}** "
                      f"({top:.3g})."]
        if g.get("blocks_per_sm"):
            lines += ["", "One batch (ms) against `GRAPH_INCR_BLOCKS_PER_SM` "
                      f"(the setting: {_tuning.GRAPH_INCR_BLOCKS_PER_SM}):", "",
                      "| variant | " + " | ".join(str(b) for b in BLOCKS) + " |",
                      "|---|" + "---:|" * len(BLOCKS)]
            for k, row in g["blocks_per_sm"].items():
                lines.append(f"| {k} | " + " | ".join(f"{row[str(b)]:.3f}" for b in BLOCKS) + " |")
        lines += ["", "Edges/s against batch size (Figure 8; fastest variant of each rule):", "",
                  "| variant | " + " | ".join(f"{b:.0e}" for b in sizes) + " |",
                  "|---|" + "---:|" * len(sizes)]
        for k, row in g["batch_size"].items():
            lines.append(f"| {k} | " + " | ".join(f"{row[str(b)]:.3g}" for b in sizes) + " |")
        lines += ["", "Operations/s of a mixed stream (every edge inserted, as many random "
                  "queries, shuffled) fed to `process` in batches of each size:", "",
                  "| variant | " + " | ".join(f"{b:.0e}" for b in sizes) + " |",
                  "|---|" + "---:|" * len(sizes)]
        for k, row in g.get("mixed_batch_size", {}).items():
            lines.append(f"| {k} | " + " | ".join(f"{row[str(b)]:.3g}" for b in sizes) + " |")
        lines += ["", "Operations/s against the ratio of inserts to queries (Figure 10; one "
                  "`process` batch):", "",
                  "| variant | " + " | ".join(str(r) for r in ratios) + " |",
                  "|---|" + "---:|" * len(ratios)]
        for k, row in g["ratio"].items():
            lines.append(f"| {k} | " + " | ".join(f"{row[str(r)]:.3g}" for r in ratios) + " |")
        lines.append("")
    lines += ["## Small-batch floor (one operation per call, 1000 calls back to back)", "",
              "| call | µs per call (events) | µs per call (wall) |", "|---|---:|---:|"]
    for k, v in res["floor"].items():
        lines.append(f"| {k} | {v['events_us']:.2f} | {v['wall_us']:.2f} |")
    return "\n".join(lines) + "\n"


def figure(res, sizes, ratios):
    """The plot of a run as a matplotlib Figure: per graph, edges/s against
    the batch size (top) and operations/s against inserts : queries
    (bottom).  Each union rule has one colour in every panel; the
    check=True variant is drawn dotted in its rule's colour.  The dashed
    line on R-MAT panels is the one-batch target (:data:`TARGET`)."""
    import matplotlib.pyplot as plt

    gs = res["graphs"]
    rules = list(dict.fromkeys(k.split("/")[0] for g in gs for part in ("batch_size", "ratio")
                               for k in g[part]))
    colour = {rule: f"C{i % 10}" for i, rule in enumerate(rules)}

    def draw(ax, xs, rows):
        for key, row in rows.items():
            checked = key.endswith(" check=True")
            ax.plot(xs, [row[str(x)] for x in xs], marker="o", label=key,
                    color=colour[key.split("/")[0]], ls=":" if checked else "-",
                    mfc="none" if checked else None)

    fig, axes = plt.subplots(2, len(gs), figsize=(5 * len(gs), 8), squeeze=False)
    for j, g in enumerate(gs):
        ax = axes[0][j]
        draw(ax, sizes, g["batch_size"])
        for key, row in g.get("mixed_batch_size", {}).items():
            ax.plot(sizes, [row[str(x)] for x in sizes], marker="s", ms=3, ls="--",
                    color=colour[key.split("/")[0]], label=f"{key} mixed 1:1 (ops/s)")
        if g["name"].startswith("R-MAT"):
            ax.axhline(TARGET, color="grey", lw=0.8, ls="--",
                       label=f"target {TARGET:.0e} edges/s (one batch)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("batch size")
        ax.set_ylabel("edges/s (mixed: operations/s)")
        ax.set_title(g["name"], fontsize=9)
        ax.legend(fontsize=7)
        ax = axes[1][j]
        draw(ax, ratios, g["ratio"])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("inserts : queries")
        ax.set_ylabel("operations/s")
        ax.legend(fontsize=7)
    fig.suptitle(f"IncrementalConnectivity, {res['machine']['gpu']}")
    fig.tight_layout()
    return fig


def plot(res, sizes, ratios, path):
    """Save :func:`figure` to ``path`` (nothing without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot")
        return
    fig = figure(res, sizes, ratios)
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
