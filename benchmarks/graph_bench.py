"""Graph connected components: meshccl against
scipy.sparse.csgraph.connected_components on generated graphs, side by side
in one process, every result checked identical to SciPy's.  Writes a
markdown table.

    python benchmarks/graph_bench.py [--scale 20] [--out DIR]
    python benchmarks/graph_bench.py --gpu --scale 22 --grid-side 4096 --reps 5 --out DIR
        (Watts–Strogatz on 14 M vertices there: --ws-vertices, default 14_000_000 with --gpu)
    python benchmarks/graph_bench.py --gpu --papers --reps 3 --out DIR
    python benchmarks/graph_bench.py --networkx --scale 16 --machine "dev VM, 2 vCPUs"

CPU columns: SciPy and meshccl's CPU backend (CSR and edge-list input), wall
clock, median of --reps after a warm-up.  With --gpu (needs CuPy and a GPU;
refused clearly otherwise) every GPU method also runs on the graph held on
the device as a cupyx CSR matrix (and 'unionfind' and 'auto' also on the
edge list), timed end to end -- validation, kernels, relabel and the one
synchronisation for the count -- with CUDA events, median of --reps after a
warm-up (a method whose first timed run takes over --slow seconds is timed
that once).  Repeated calls on the same device arrays replay a recorded
launch plan where one applies ('ecl', 'kout', 'hb' and 'auto' running one
of them, graphs up to 2**23 vertices; meshccl._gpu.graph_plan); --papers
also times 'auto' with plans off ("no plan": every call as a first call
runs).  The table adds edges per second, the best GPU method per graph,
and what 'auto' ran (meshccl.graph._auto_method, the rule
connected_components uses) with its time against the best.  The iterative
methods ('sv', 'edge-lp', 'vertex-lp', 'bfs-cc') run with
max_iterations=--max-passes; a run that reaches it is reported "stopped"
(with the time it took, a lower bound) and not repeated.  A summary line
gives the geometric-mean speed-up of 'ecl' over Hawick's kernels and SV
(issue 5 asks for >= 1.8x).  --networkx adds networkx.connected_components
(graph built beforehand, not timed) as a peer, at --scale <= 16 only.
--cpu-threads N adds a column "meshccl CPU parallel (CSR)":
connected_components(csr, cpu_threads=N), the parallel CPU union-find
(0: every core this process may run on); default off.

--families LIST (names of meshccl.graph_families, or 'all') runs each
family at --edges stored edges for the --connections (weak and strong):
SciPy once (its labels are the reference; one call, so that large graphs
stay within a device session; --scipy-reps N: the median of N calls),
meshccl's CPU backend with --cpu and its GPU backend
with --gpu (median of --reps; CUDA events around the whole public call on
a cupyx CSR; a backend whose first call takes over --slow seconds is timed
by that call alone), and NetworkX (weakly_/strongly_connected_components
on a DiGraph built outside the timing, where networkx imports) at the
largest of --edges / 1000, / 100, / 10 and --edges whose graph build and
calls, estimated linearly from the size below, fit --networkx-limit
seconds each; its speed-up is against SciPy at the size it ran.  A
family whose slower SciPy call, estimated from the family at --edges /
100, would pass --scipy-limit seconds runs at fewer edges (the table's
note says so); --time-budget leaves out the families that would pass it
and lists them.  The table, json and plot are rewritten after each family
(a run cut short keeps the families it finished).
Labels are checked: value for value against SciPy on the CPU and for weak
components, SciPy's partition numbered by smallest vertex for strong
components on the GPU and for NetworkX.  Writes families.md,
families.json and families.png (speed-up over SciPy per family) under --out:

    python benchmarks/graph_bench.py --families all --cpu --edges 1e6 --out DIR
    python benchmarks/graph_bench.py --families all --gpu --cpu --edges 1e7 \
        --networkx-limit 2 --time-budget 280 --out DIR

With --sizes LIST (stored edges, e.g. 10,100,1e3,1e4,1e5,1e6) the families
mode runs each family at every size instead, SciPy on a float64 SciPy CSR
(int32 indices, as SciPy builds it) against meshccl's CPU backend on it
(--cpu) and/or the GPU backend on that CSR as a cupyx CSR (--gpu; wall
clock: the call reads the count, so it waits for the GPU), for strong
components also each route of the GPU backend forced (SIZE_ROUTES: all
on the host's search, or the GPU's own steps), every call in turn in one
process, each timed as the median of at least --reps calls and of as
many as fit in --size-seconds (small graphs: thousands of calls, so that
the microseconds of each call's overhead show), labels checked value for
value; --connections picks weak and/or strong.  Writes sizes.md and
sizes.json under --out (after every graph):

    python benchmarks/graph_bench.py --families rmat,uniform,cycle --cpu --gpu \
        --connections strong --sizes 1e3,1e4,1e5,1e6 --out DIR

--papers builds graphs shaped like three inputs of GConn (Hong, Dhulipala
and Shun, 2020, Table 1), every edge stored both ways as there and
symmetric=True: a Kronecker (R-MAT, Graph500 a, b, c = 0.57, 0.19, 0.19)
graph of scale 21 with edge factor 48 (kron_g500-logn21), a connected
road-like 4900² grid subgraph with 2.41 entries per vertex (road_usa), and
a Barabási–Albert graph (Batagelj–Brandes) of 4,847,571 vertices and 9
edges per vertex (soc-LiveJournal1); duplicate edges are merged by the CSR
build (on the GPU when --gpu).  SciPy runs once per graph (the reference
labels; no other CPU baseline), the GPU methods of PAPER_METHODS on the CSR.
The output sets meshccl's best edges/s beside GConn's V100 numbers for the
corresponding graphs (Table 2), and with --gpu a phase table: each method's
time split into validation, its own steps and the relabel
(connected_components(..., return_info=True), CUDA events, --reps calls).
--papers-shrink k divides the sizes by 2**k (quick checks).
"""

import argparse
import contextlib
import datetime
import itertools
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components as scipy_cc

import meshccl
from meshccl import _tuning
from meshccl import graph_generators as gen
from meshccl.errors import NotConverged
from meshccl.graph import GPU_METHODS, ITERATIVE, Edges, _auto_method, connected_components

#: the GPU methods timed ('async' and 'bfs' are aliases)
BENCH_METHODS = [m for m in GPU_METHODS if m not in ("async", "bfs")]
#: the methods 'ecl' is compared with in the summary line
HAWICK_SV = ("edge-lp", "vertex-lp", "bfs-cc", "sv")
#: the GPU methods timed by --papers
PAPER_METHODS = ["auto", "ecl", "unionfind", "kout", "hb", "rem-cas", "early", "jtb", "sv",
                 "edge-lp", "vertex-lp"]

#: GConn on a V100 (Hong, Dhulipala, Shun, "Exploring the Design Space of
#: Static and Incremental Graph Connectivity Algorithms on GPUs", PACT 2020):
#: n and m from Table 1 (symmetric graphs, every edge counted in both
#: directions), running times in ms from Table 2 ("median of five runs").
#: "best" is the fastest entry of the graph's column over all five groups;
#: "rows" the Table 2 row matching each meshccl method.
GCONN = {
    "kron_g500-logn21": {
        "n": 2.10e6, "m": 182.08e6,
        "best": ("k-out sampling / Union-Async", 0.51),
        "no_sampling": ("Union-Rem-CAS", 3.60),
        "rows": {"unionfind": ("No sampling / Union-Async", 3.64),
                 "rem-cas": ("No sampling / Union-Rem-CAS", 3.60),
                 "early": ("No sampling / Union-Early", 16.23),
                 "jtb": ("No sampling / Union-JTB", 5.23),
                 "sv": ("No sampling / Shiloach-Vishkin", 15.93),
                 "edge-lp": ("No sampling / LabelPropagation", 12.50),
                 "ecl": ("Existing algorithms / ECL-CC [49]", 6.02),
                 "kout": ("k-out sampling / Union-Async", 0.51),
                 "hb": ("HB sampling / Union-Async", 0.57)}},
    "road_usa": {
        "n": 23.95e6, "m": 57.71e6,
        "best": ("No sampling / Union-Async", 3.39),
        "no_sampling": ("Union-Async", 3.39),
        "rows": {"unionfind": ("No sampling / Union-Async", 3.39),
                 "rem-cas": ("No sampling / Union-Rem-CAS", 3.83),
                 "early": ("No sampling / Union-Early", 5.68),
                 "jtb": ("No sampling / Union-JTB", 5.53),
                 "sv": ("No sampling / Shiloach-Vishkin", 15.65),
                 "edge-lp": ("No sampling / LabelPropagation", 3289.59),
                 "ecl": ("Existing algorithms / ECL-CC [49]", 22.55),
                 "kout": ("k-out sampling / Union-Async", 5.27),
                 "hb": ("HB sampling / Union-Async", 8.60)}},
    "soc-LiveJournal1": {
        "n": 4.85e6, "m": 85.70e6,
        "best": ("HB sampling / Union-Async (and Union-Rem-CAS)", 0.67),
        "no_sampling": ("Union-Rem-CAS", 2.98),
        "rows": {"unionfind": ("No sampling / Union-Async", 3.07),
                 "rem-cas": ("No sampling / Union-Rem-CAS", 2.98),
                 "early": ("No sampling / Union-Early", 8.18),
                 "jtb": ("No sampling / Union-JTB", 3.70),
                 "sv": ("No sampling / Shiloach-Vishkin", 12.23),
                 "edge-lp": ("No sampling / LabelPropagation", 15.01),
                 "ecl": ("Existing algorithms / ECL-CC [49]", 7.14),
                 "kout": ("k-out sampling / Union-Async", 0.85),
                 "hb": ("HB sampling / Union-Async", 0.67)}},
}


def timed(f, reps):
    f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = f()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)), out


def timed_gpu(f, reps, slow=None):
    """Median seconds of f() by CUDA events, after a warm-up (one call,
    which also compiles the kernels; a second where the first took under
    0.1 s: the call that records a launch plan where one applies, see
    meshccl._gpu.graph_plan); if a timed run takes over ``slow`` seconds,
    that run is the only one.  A NotConverged run gives (seconds of the
    stopped run, None) and is not repeated."""
    import cupy

    try:
        t0 = time.perf_counter()
        out = f()
        cupy.cuda.Device().synchronize()
        if time.perf_counter() - t0 < 0.1:
            out = f()
    except NotConverged:
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        try:
            f()
        except NotConverged:
            pass
        stop.record()
        stop.synchronize()
        return cupy.cuda.get_elapsed_time(start, stop) / 1e3, None
    cupy.cuda.Device().synchronize()
    ts = []
    for _ in range(reps):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        out = f()
        stop.record()
        stop.synchronize()
        ts.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
        if slow is not None and ts[-1] > slow:
            break
    return float(np.median(ts)), out


def time_gpu_methods(runs, reps, slow, max_passes, symmetric, want_n, want_labels):
    """{"method (form)": (seconds, True | False | "stopped")} for each
    (method, form, graph) of runs; labels compared with the reference."""
    import cupy

    from meshccl.graph import release_plans

    gpu = {}
    for method, form, g in runs:
        kw = {"max_iterations": max_passes} if method in ITERATIVE else {}
        # "no plan": every call takes the direct path, as a first call does
        # (otherwise repeated calls replay a recorded CUDA graph where one applies)
        plans = {"GRAPH_PLAN_AFTER": 0} if form.endswith("no plan") else {}
        try:
            with _tuning.override(**plans):
                t, out = timed_gpu(lambda: connected_components(g, method=method,
                                                                symmetric=symmetric, **kw),
                                   reps, slow)
        finally:
            release_plans()
        if out is None:
            gpu[f"{method} ({form})"] = (t, "stopped")
            continue
        c, lab = out
        gpu[f"{method} ({form})"] = (t, c == want_n and np.array_equal(lab.get(), want_labels))
        del lab
    cupy.get_default_memory_pool().free_all_blocks()
    return gpu


#: the phases of the relabel to SciPy's numbering (meshccl/_gpu/relabel.py)
RELABEL_PHASES = ("flatten", "scan", "relabel")


def gpu_phases(runs, reps, max_passes, symmetric, skip=()):
    """{"method (form)": (method ran, {phase: median s}, method steps)} from
    connected_components(..., return_info=True), ``reps`` calls each (the
    kernels are compiled by then); phases by CUDA events: 'validate', the
    method's steps (info["method_phases"]) and the relabel's.  Keys in
    ``skip`` (stopped or slow runs) and runs that stop are left out."""
    import cupy

    out = {}
    for method, form, g in runs:
        key = f"{method} ({form})"
        if key in skip:
            continue
        kw = {"max_iterations": max_passes} if method in ITERATIVE else {}
        samples = []
        try:
            for _ in range(reps):
                *_, info = connected_components(g, method=method, symmetric=symmetric,
                                                return_info=True, **kw)
                samples.append(info["seconds"])
        except NotConverged:
            continue
        med = {k: float(np.median([sec[k] for sec in samples])) for k in samples[0]}
        out[key] = (info["method"], med, info["method_phases"])
    cupy.get_default_memory_pool().free_all_blocks()
    return out


def phase_lines(rows_phases):
    """Markdown lines of the phase table: (graph, gpu dict, gpu_phases dict) per graph."""
    lines = ["| graph | method ('auto': what ran) | validate ms | method steps ms | method ms | relabel ms "
             "(flatten + scan + relabel) | sum of phases ms | end to end ms (timed) |",
             "|---|---|---:|---|---:|---:|---:|---:|"]
    for name, gpu, phases in rows_phases:
        for key, (ran, sec, steps) in phases.items():
            method_s = sum(sec[p] for p in steps)
            relabel_s = sum(sec.get(p, 0.0) for p in RELABEL_PHASES)
            validate_s = sec.get("validate", 0.0)
            detail = " + ".join(f"{p} {sec[p]*1e3:.2f}" for p in steps)
            t = gpu.get(key, (None,))[0]
            asked = key.split(" (")[0]
            label = asked if ran == asked else f"{asked} ({ran})"
            lines.append(f"| {name} | {label} | {validate_s*1e3:.2f} | {detail} | "
                         f"{method_s*1e3:.2f} | {relabel_s*1e3:.2f} | "
                         f"{(validate_s + method_s + relabel_s)*1e3:.2f} | "
                         f"{'–' if t is None else f'{t*1e3:.2f}'} |")
    return lines


def best_of(gpu):
    """The fastest correct entry of a gpu dict (None if there is none)."""
    ok = [k for k in gpu if gpu[k][1] is True]
    return min(ok, key=lambda k: gpu[k][0]) if ok else None


def best_time(gpu, form):
    """Seconds of the fastest correct method on the input form ("CSR", "edges")."""
    return min((t for k, (t, ok) in gpu.items() if k.endswith(f"({form})") and ok is True),
               default=None)


def auto_cell(gpu, form, picked):
    """'METHOD, ms, ratio' for the 'auto' run on `form`: what it ran, its
    time, and its time over the best time on the same input form."""
    t, ok = gpu.get(f"auto ({form})", (None, None))
    tb = best_time(gpu, form)
    if t is None or tb is None:
        return "–"
    return f"{picked}, {t*1e3:.2f} ms{_mark(ok)}, {t / tb:.2f}×"


def auto_summary(rows_auto):
    """One line: how far 'auto' was from the best method, over the graphs."""
    ratios = [t / tb for t, tb in rows_auto if t and tb]
    if not ratios:
        return "'auto' vs best: no data."
    g = float(np.exp(np.mean(np.log(ratios))))
    return (f"'auto' vs the best GPU method (time ratio, CSR input): geometric mean {g:.2f}×, "
            f"worst {max(ratios):.2f}×, within 10 % on {sum(r <= 1.1 for r in ratios)} of "
            f"{len(ratios)} graphs.")


#: Watts–Strogatz vertices of a --gpu run (issue 5: "Watts–Strogatz 14 M vertices")
WS_GPU_VERTICES = 14_000_000


def cases(s, side, ws_n=None):
    """(name, generator) of the graphs of a normal run: 2**s vertices (RMAT
    scale s), side² grids, Watts–Strogatz on ws_n vertices (default 2**s)."""
    n = 2 ** s
    ws_n = n if ws_n is None else ws_n
    return [
        (f"RMAT scale {s}, edge factor 16", lambda: gen.rmat(s, 16, seed=1)),
        (f"2-D grid {side}²", lambda: gen.grid((side, side))),
        (f"road-like grid {side}², 55% of edges", lambda: gen.grid((side, side), keep=0.55, seed=2)),
        (f"Watts–Strogatz, {ws_n} vertices, k=8, p=0.1",
         lambda: gen.watts_strogatz(ws_n, 8, 0.1, seed=5)),
        (f"line, {n} vertices", lambda: gen.line(n)),
        (f"disjoint: 64 trees of {n // 64}", lambda: gen.disjoint(64, n // 64, seed=3)),
        (f"random, {n} vertices, {n} edges", lambda: gen.random_edges(n, n, seed=4)),
        # Hawick et al.'s Disjoint 3 at its middle point: 12 edges per vertex, 1000 sets
        (f"Hawick's Disjoint, {n} vertices, {12 * n} edges, 1000 sets",
         lambda: gen.hawick_disjoint(n, 12 * n, 1000, seed=6)),
    ]


def paper_cases(shrink=0):
    """(our graph's name, the GConn graph it stands for, generator) for --papers."""
    side = int(round(4900 / 2 ** (shrink / 2)))
    n_ba = 4847571 >> shrink
    return [
        (f"Kronecker (R-MAT, Graph500 a,b,c) scale {21 - shrink}, edge factor 48",
         "kron_g500-logn21", lambda: gen.rmat(21 - shrink, 48, seed=1)),
        (f"road-like: connected {side}² grid subgraph, 2.41 entries/vertex",
         "road_usa", lambda: gen.road_grid(side, 2.41, seed=2)),
        (f"social-like: Barabási–Albert (Batagelj–Brandes), {n_ba} vertices, 9 edges/vertex",
         "soc-LiveJournal1", lambda: gen.barabasi_albert_bb(n_ba, 9, seed=3)),
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, default=20, help="2**scale vertices (RMAT scale)")
    ap.add_argument("--grid-side", type=int, default=None,
                    help="side of the 2-D grids (default 2**(scale/2))")
    ap.add_argument("--ws-vertices", type=int, default=None,
                    help=f"vertices of the Watts–Strogatz graph (k=8: 4 stored edges per vertex; "
                         f"default {WS_GPU_VERTICES:_} with --gpu, else 2**scale)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--gpu", action="store_true", help="also time every GPU method (needs CuPy and a GPU)")
    ap.add_argument("--papers", action="store_true",
                    help="graphs shaped like GConn's kron_g500-logn21, road_usa, soc-LiveJournal1 "
                         "(see above), compared with GConn's V100 numbers")
    ap.add_argument("--papers-shrink", type=int, default=0,
                    help="--papers graphs 2**k times smaller (quick checks)")
    ap.add_argument("--symmetric", action="store_true",
                    help="store every edge in both directions and tell meshccl so (symmetric=True; "
                         "always on with --papers)")
    ap.add_argument("--only", default=None, help="run only graphs whose name contains this text")
    ap.add_argument("--max-passes", type=int, default=20000,
                    help="max_iterations of the iterative GPU methods (beyond: 'stopped')")
    ap.add_argument("--slow", type=float, default=0.5,
                    help="a GPU method whose first timed run takes longer (s) is timed once")
    ap.add_argument("--networkx", action="store_true",
                    help="also time networkx.connected_components (only at --scale <= 16)")
    ap.add_argument("--cpu-threads", type=int, default=None,
                    help="also time connected_components(csr, cpu_threads=N) (0: all cores)")
    ap.add_argument("--machine", default=None,
                    help="words on the machine for the header (e.g. 'dev VM, 2 vCPUs, no GPU')")
    ap.add_argument("--out", default=None)
    ap.add_argument("--families", default=None,
                    help="comma list of meshccl.graph_families names, or 'all': weak and strong "
                         "components of each family against SciPy (the families mode below)")
    ap.add_argument("--edges", type=float, default=None,
                    help="families mode: stored edges of each graph (default 1e7 with --gpu, "
                         "1e6 with --cpu)")
    ap.add_argument("--cpu", action="store_true",
                    help="families mode: meshccl's CPU backend too (no GPU needed)")
    ap.add_argument("--sizes", default=None,
                    help="families mode: comma list of stored edges per graph; each family at "
                         "each size, SciPy and meshccl's --cpu and/or --gpu timed in turn "
                         "(see above)")
    ap.add_argument("--connections", default="weak,strong",
                    help="--families: the connections timed (comma list of weak, strong)")
    ap.add_argument("--scipy-reps", type=int, default=1,
                    help="--families without --sizes: SciPy timed as the median of this many "
                         "calls (default 1: its one reference call)")
    ap.add_argument("--size-seconds", type=float, default=0.3,
                    help="--sizes: seconds of calls per graph, connection and library")
    ap.add_argument("--networkx-limit", type=float, default=2.0,
                    help="families mode: seconds NetworkX may take to build its graph and for "
                         "each call; it runs at the largest of --edges / 1000, / 100, / 10, "
                         "--edges whose estimate (linear from the size below) fits (0: no "
                         "NetworkX)")
    ap.add_argument("--scipy-limit", type=float, default=20.0,
                    help="families mode: seconds SciPy's slower call may take, estimated from "
                         "the family at --edges / 100; a family over it runs at fewer edges, "
                         "noted in the table (0: no limit)")
    ap.add_argument("--time-budget", type=float, default=0.0,
                    help="families mode: seconds for the whole run; after the first family, "
                         "a family is left out (and listed under the table) once the time so "
                         "far plus the longest family so far would pass it (0: no budget)")
    ap.add_argument("--tune", default="",
                    help="NAME=VALUE[,NAME=VALUE...]: meshccl._tuning constants for the run "
                         "(integers or floats), e.g. STRONG_PEEL_AFTER=1000000000")
    opt = ap.parse_args(argv)
    if opt.gpu and not meshccl.gpu_available():
        print("--gpu: no CUDA GPU is usable (CuPy missing or no device)", file=sys.stderr)
        return 2
    stack = contextlib.ExitStack()
    try:
        stack.enter_context(_tuning.override(**tuning_values(opt.tune)))
    except (KeyError, ValueError) as exc:
        print(f"--tune {opt.tune!r}: {exc}", file=sys.stderr)
        return 2
    with stack:
        return _main(opt)


def tuning_values(text):
    """{name: number} from ``NAME=VALUE,NAME=VALUE`` (--tune)."""
    values = {}
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        number = float(value)
        values[name.strip()] = int(number) if number.is_integer() and "." not in value else number
    return values


def _main(opt):
    if opt.families is not None:
        return families(opt)
    if opt.papers:
        if opt.networkx:
            print("--networkx does not combine with --papers", file=sys.stderr)
            return 2
        return papers(opt)
    t_start = time.perf_counter()
    s = opt.scale
    side = opt.grid_side or int(2 ** (s / 2))
    ws_n = opt.ws_vertices if opt.ws_vertices is not None else (WS_GPU_VERTICES if opt.gpu else 2 ** s)
    gpu_methods = BENCH_METHODS if opt.gpu else []
    nx = None
    if opt.networkx:
        if opt.scale > 16:
            print("--networkx: only at --scale <= 16 (networkx is pure Python)", file=sys.stderr)
            return 2
        try:
            import networkx as nx
        except ImportError:
            print("--networkx: networkx is not importable", file=sys.stderr)
            return 2
    rows = []
    for name, make in cases(s, side, ws_n):
        if opt.only and opt.only not in name:
            continue
        e = make()
        n = e.n_vertices
        if opt.symmetric:
            e = Edges(np.concatenate([e.src, e.dst]), np.concatenate([e.dst, e.src]), n)
        csr = sp.coo_matrix((np.ones(e.src.size, np.int8), (e.src, e.dst)), shape=(n, n)).tocsr()
        t_s, (n_s, lab_s) = timed(lambda: scipy_cc(csr, directed=True, connection="weak"), opt.reps)
        t_m, (n_m, lab_m) = timed(lambda: connected_components(csr), opt.reps)
        t_e, (n_e, lab_e) = timed(lambda: connected_components(e), opt.reps)
        same = n_s == n_m == n_e and np.array_equal(lab_s, lab_m) and np.array_equal(lab_s, lab_e)
        t_p = None
        if opt.cpu_threads is not None:
            t_p, (n_p, lab_p) = timed(lambda: connected_components(csr, cpu_threads=opt.cpu_threads),
                                      opt.reps)
            same = same and n_p == n_s and np.array_equal(lab_p, lab_s)
        t_nx = None
        if nx is not None:
            G = nx.Graph()
            G.add_nodes_from(range(n))
            G.add_edges_from(zip(e.src.tolist(), e.dst.tolist()))
            t_nx, comps = timed(lambda: list(nx.connected_components(G)), opt.reps)
            same = same and len(comps) == n_s
            del G
        gpu, picked = {}, {}
        if gpu_methods:
            import cupy
            import cupyx.scipy.sparse as csp

            g_csr = csp.csr_matrix((cupy.ones(csr.nnz, cupy.float32), cupy.asarray(csr.indices),
                                    cupy.asarray(csr.indptr)), shape=csr.shape)
            g_edges = Edges(cupy.asarray(e.src), cupy.asarray(e.dst), n)
            picked = {"CSR": _auto_method(g_csr, opt.symmetric),
                      "edges": _auto_method(g_edges, opt.symmetric)}
            runs = [(m, "CSR", g_csr) for m in gpu_methods] + [("unionfind", "edges", g_edges),
                                                               ("auto", "edges", g_edges)]
            gpu = time_gpu_methods(runs, opt.reps, opt.slow, opt.max_passes, opt.symmetric,
                                   n_s, lab_s)
            same = same and all(ok is not False for _, ok in gpu.values())
            del g_csr, g_edges
            cupy.get_default_memory_pool().free_all_blocks()
        rows.append((name, n, csr.nnz, n_s, t_s, t_m, t_e, gpu, same, t_nx, picked, t_p))
        line = (f"{name:44s} scipy {t_s*1e3:9.1f} ms  meshccl CPU CSR {t_m*1e3:8.1f} ms  "
                f"edges {t_e*1e3:8.1f} ms" + (f"  networkx {t_nx*1e3:9.1f} ms" if t_nx else "")
                + (f"  parallel CSR {t_p*1e3:8.1f} ms" if t_p is not None else ""))
        for k, (t, ok) in gpu.items():
            line += f"  | GPU {k} {t*1e3:7.2f} ms{_mark(ok)}"
        print(line + f"  {'identical' if same else 'MISMATCH'}"
              f"  [{time.perf_counter() - t_start:.0f} s so far]", flush=True)

    head = (f"Machine: {_machine(opt)}"
            f"{_gpu_name() if gpu_methods else ''}; "
            f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
            f"meshccl {meshccl.__version__}, SciPy {scipy.__version__}"
            f"{f', networkx {nx.__version__}' if nx is not None else ''}; "
            f"command: `python {shlex.join(sys.argv)}`; median of {opt.reps} after a warm-up"
            f"{f'; GPU times by CUDA events, end to end (validation, kernels, relabel, count), a method over {opt.slow} s timed once; iterative methods capped at {opt.max_passes} passes' if gpu_methods else ''}"
            f"{'; every edge stored both ways, symmetric=True' if opt.symmetric else ''}"
            f"{f'; parallel CPU column: cpu_threads={opt.cpu_threads}' if opt.cpu_threads is not None else ''}.")
    nxh = (" networkx ms |", "---:|") if nx is not None else ("", "")
    par = opt.cpu_threads is not None
    ph = (" meshccl CPU parallel (CSR) ms |", "---:|") if par else ("", "")
    lines = [head, "", "| graph | vertices | stored edges | components | scipy ms |" + nxh[0] +
             " meshccl CPU (CSR) ms | meshccl CPU (edge list) ms |" + ph[0] +
             " speed-up (CPU CSR) | labels |",
             "|---|---:|---:|---:|---:|" + nxh[1] + "---:|---:|" + ph[1] + "---:|---|"]
    for name, n, m, c, ts_, tm, te, gpu, same, t_nx, _picked, t_p in rows:
        nxc = f" {t_nx*1e3:.1f} |" if nx is not None else ""
        pc = f" {t_p*1e3:.1f} |" if par else ""
        lines.append(f"| {name} | {n} | {m} | {c} | {ts_*1e3:.1f} |{nxc} {tm*1e3:.1f} | {te*1e3:.1f} |"
                     f"{pc} {ts_/tm:.2f}× | {'identical' if same else 'MISMATCH'} |")
    if nx is not None and rows:
        sp_nx = [r[9] / r[5] for r in rows]
        lines += ["", f"meshccl CPU (CSR) vs networkx: {min(sp_nx):.0f}× to {max(sp_nx):.0f}× faster "
                      f"(networkx's time excludes building its graph)."]
    if gpu_methods:
        keys = list(rows[0][7]) if rows else []
        lines += ["", "GPU, ms (edges/s), every method; labels checked equal to SciPy's:", "",
                  "| graph | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
        for name, n, m, *_, gpu, _same, _nx, _picked, _tp in rows:
            lines.append(f"| {name} | " + " | ".join(_cell(t, ok, m) for t, ok in gpu.values()) + " |")
        lines += ["", "Best GPU method per graph, and what 'auto' ran (method, time, time / the "
                  "best time on the same input form):", "",
                  "| graph | stored edges | best | ms | edges/s | speed-up vs scipy | "
                  "'auto' on the CSR | 'auto' on the edge list |",
                  "|---|---:|---|---:|---:|---:|---|---|"]
        ratios = []
        for name, n, m, c, ts_, tm, te, gpu, same, _nx, picked, _tp in rows:
            best = best_of(gpu)
            if best is None:
                lines.append(f"| {name} | {m} | – | | | | | |")
                continue
            t = gpu[best][0]
            lines.append(f"| {name} | {m} | {best} | {t*1e3:.2f} | {m / t:.3g} | {ts_ / t:.1f}× | "
                         f"{auto_cell(gpu, 'CSR', picked['CSR'])} | "
                         f"{auto_cell(gpu, 'edges', picked['edges'])} |")
            ratios.append((gpu.get("auto (CSR)", (None,))[0], best_time(gpu, "CSR")))
        lines += ["", auto_summary(ratios), "", _ecl_summary(rows)]
    lines += ["", f"Benchmark wall time {time.perf_counter() - t_start:.0f} s."]
    table = "\n".join(lines)
    print(table)
    if opt.out:
        Path(opt.out).mkdir(parents=True, exist_ok=True)
        fname = ("graph_bench_gpu.md" if gpu_methods else
                 "graph_bench_networkx.md" if nx is not None else "graph_bench.md")
        Path(opt.out, fname).write_text(table + "\n")
        if gpu_methods:
            try:
                import plot_graphs  # benchmarks/plot_graphs.py, next to this file

                plot_graphs.plot(Path(opt.out, fname))
            except ImportError:  # no matplotlib: the table is enough
                pass
    return 0 if all(r[8] for r in rows) else 1


def families(opt):
    """The families mode (module docstring): a table, a json and a plot."""
    from meshccl import graph_families

    names = list(graph_families.FAMILIES) if opt.families == "all" else opt.families.split(",")
    unknown = sorted(set(names) - set(graph_families.FAMILIES))
    if unknown:
        print(f"--families: unknown {unknown}; known: {sorted(graph_families.FAMILIES)}",
              file=sys.stderr)
        return 2
    if not (opt.cpu or opt.gpu):
        print("--families needs --cpu, --gpu or both", file=sys.stderr)
        return 2
    if not set(opt.connections.split(",")) <= {"weak", "strong"} or opt.scipy_reps < 1:
        print(f"--connections: a comma list of weak, strong, got {opt.connections!r}; "
              f"--scipy-reps: >= 1, got {opt.scipy_reps}", file=sys.stderr)
        return 2
    for flag in ("networkx_limit", "scipy_limit", "time_budget"):
        if getattr(opt, flag) < 0:
            print(f"--{flag.replace('_', '-')}: must be >= 0 seconds, got {getattr(opt, flag)}",
                  file=sys.stderr)
            return 2
    if opt.sizes is not None:
        return _family_sizes(opt, names)
    nx = None
    if opt.networkx_limit > 0:
        try:
            import networkx as nx
        except ImportError:  # the column is left out, and the header says why
            pass
    m_target = int(opt.edges or (1e7 if opt.gpu else 1e6))
    cols = ["scipy"] + (["networkx"] if nx is not None else []) \
        + (["cpu"] if opt.cpu else []) + (["gpu"] if opt.gpu else [])
    rows, skipped, ok_all, t_start = [], [], True, time.perf_counter()
    longest = 0.0
    table = ""
    for name in names:
        t_family = time.perf_counter()
        if opt.time_budget and rows and t_family - t_start + longest > opt.time_budget:
            skipped.append(name)
            continue
        make = graph_families.FAMILIES[name]
        m, shrunk = _scipy_fit(make, m_target, opt.scipy_limit)
        t0 = time.perf_counter()
        e = make(m, seed=1)
        n = e.n_vertices
        g = sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(n, n)).tocsr()
        del e
        build = time.perf_counter() - t0
        dev = None
        if opt.gpu:
            import cupyx.scipy.sparse as csp

            dev = csp.csr_matrix(g)
        ladder = _networkx_ladder(nx, make, m, opt.networkx_limit) if nx is not None else {}
        for conn in opt.connections.split(","):
            row = {"family": name, "title": graph_families.TITLES[name], "connection": conn,
                   "n": n, "m": int(g.nnz), "build_s": build, "ms": {}, "ok": {}}
            if shrunk:
                row["shrunk"] = shrunk
            t0 = time.perf_counter()
            want = scipy_cc(g, directed=True, connection=conn)
            times = [time.perf_counter() - t0]
            for _ in range(opt.scipy_reps - 1):
                t0 = time.perf_counter()
                scipy_cc(g, directed=True, connection=conn)
                times.append(time.perf_counter() - t0)
            row["ms"]["scipy"] = float(np.median(times)) * 1e3
            row["components"] = int(want[0])
            row["largest"] = int(np.bincount(want[1]).max()) if n else 0
            canon = _by_smallest(want[1])
            if nx is not None:
                row["networkx"] = ladder[conn]
                if "ok" in ladder[conn]:
                    row["ok"]["networkx"] = ladder[conn]["ok"]

            def call(x, conn=conn, **kw):
                return connected_components(x, directed=True, connection=conn, **kw)

            if opt.cpu:  # (compiled: the first call costs what a later one costs)
                t0 = time.perf_counter()
                got = call(g)
                first = time.perf_counter() - t0
                row["ok"]["cpu"] = bool(got[0] == want[0] and (got[1] == want[1]).all())
                row["ms"]["cpu"] = (first if first > opt.slow else
                                    timed(lambda: call(g), opt.reps)[0]) * 1e3
            if opt.gpu:
                got = call(dev)
                ref = want[1] if conn == "weak" else canon
                row["ok"]["gpu"] = bool(got[0] == want[0] and (got[1].get() == ref).all())
                row["ms"]["gpu"] = timed_gpu(lambda: call(dev), opt.reps, opt.slow)[0] * 1e3
                info = call(dev, return_info=True)[2]
                row["gpu_info"] = {"method": info["method"],
                                   "seconds_ms": {k: v * 1e3 for k, v in info["seconds"].items()},
                                   "passes": info.get("passes"),
                                   "host_vertices": info.get("host_vertices"),
                                   "path_vertices": info.get("path_vertices"),
                                   "pieces": info.get("pieces"),
                                   "iterations": info.get("iterations")}
            ok_all &= all(row["ok"].values())
            rows.append(row)
            print(name, conn, n, row["m"], {k: round(v, 2) for k, v in row["ms"].items()},
                  row["ok"], row.get("networkx", ""), flush=True)
        del dev
        longest = max(longest, time.perf_counter() - t_family)
        table = _families_write(rows, cols, opt, m_target, nx, skipped, t_start)
    table = _families_write(rows, cols, opt, m_target, nx, skipped, t_start)
    print(table)
    return 0 if ok_all else 1


def _families_write(rows, cols, opt, m_target, nx, skipped, t_start):
    """The families table of the rows so far; under --out also its json
    and plot (rewritten after every family: a run cut short keeps the
    families it finished)."""
    import json

    table = _families_table(rows, cols, opt, time.perf_counter() - t_start, nx, skipped)
    if opt.out:
        out = Path(opt.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "families.md").write_text(table + "\n")
        (out / "families.json").write_text(json.dumps(
            {"machine": _machine(opt), "columns": cols, "edges": m_target, "skipped": skipped,
             "networkx_limit_s": opt.networkx_limit if nx is not None else None,
             "scipy_limit_s": opt.scipy_limit, "rows": rows}, indent=1))
        _families_plot(rows, cols, out / "families.png")
    return table


def _round_down(m):
    """m rounded down to one significant digit (at least 1)."""
    step = 10 ** int(np.log10(max(m, 1)))
    return max(1, int(m // step * step))


def _scipy_fit(make, m, limit):
    """(edges to run, note or None): ``m``, or fewer where SciPy's slower
    call, estimated from the family at m / 100 edges (linear in the edges),
    would take over ``limit`` seconds (0: no limit)."""
    if not limit or m < 100_000:
        return m, None
    e = make(m // 100, seed=1)
    n = e.n_vertices
    g = sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(n, n)).tocsr()
    slowest = 0.0
    for conn in ("weak", "strong"):
        t0 = time.perf_counter()
        scipy_cc(g, directed=True, connection=conn)
        slowest = max(slowest, time.perf_counter() - t0)
    estimate = slowest * m / max(1, g.nnz)
    if estimate <= limit:
        return m, None
    run = _round_down(m * limit / estimate)
    return run, f"shrunk from {m} edges: SciPy estimated {estimate:.1f} s > {limit:g} s"


def _networkx_components(nx, make, m):
    """NetworkX on the family at m edges: ({conn: (ms, ok, SciPy ms)}, the
    seconds its DiGraph took to build (not timed in the calls), stored
    edges).  ok: NetworkX's partition is SciPy's."""
    e = make(m, seed=1)
    n = e.n_vertices
    g = sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(n, n)).tocsr()
    t0 = time.perf_counter()
    G = nx.DiGraph()
    G.add_nodes_from(range(n))
    G.add_edges_from(zip(e.src.tolist(), e.dst.tolist()))
    build = time.perf_counter() - t0
    out = {}
    for conn, run in (("weak", nx.weakly_connected_components),
                      ("strong", nx.strongly_connected_components)):
        t0 = time.perf_counter()
        want = scipy_cc(g, directed=True, connection=conn)
        t_scipy = time.perf_counter() - t0
        t0 = time.perf_counter()
        comps = list(run(G))
        t_nx = time.perf_counter() - t0
        labels = np.full(n, -1, np.int64)
        labels[np.fromiter(itertools.chain.from_iterable(comps), np.int64)] = np.repeat(
            np.arange(len(comps)), [len(c) for c in comps])
        ok = len(comps) == want[0] and np.array_equal(_by_smallest(labels),
                                                      _by_smallest(want[1]))
        out[conn] = (t_nx * 1e3, bool(ok), t_scipy * 1e3)
    return out, build, int(g.nnz)


def _networkx_ladder(nx, make, m, limit):
    """NetworkX on the family at the largest of m / 1000, m / 100, m / 10,
    m edges (at least 1000) whose estimate fits ``limit`` seconds: each
    size run only when its graph build and each call, estimated linearly
    from the size below, stay within the limit.  {conn: {"m", "ms",
    "scipy_ms", "ok"} of the largest size run, plus "next_s": the estimate
    that stopped the ladder (absent when it reached m)}."""
    size = min(m, max(1000, m // 1000))
    done = None
    while True:
        result, build, stored = _networkx_components(nx, make, size)
        done = (size, stored, result)
        if size >= m:
            break
        nxt = min(m, size * 10)
        slowest = max([build] + [ms / 1e3 for ms, _, _ in result.values()])
        estimate = slowest * nxt / size
        if estimate > limit:
            break
        size = nxt
    size, stored, result = done
    ladder = {}
    for conn, (ms, ok, scipy_ms) in result.items():
        ladder[conn] = {"m": stored, "ms": ms, "scipy_ms": scipy_ms, "ok": ok}
        if size < m:
            ladder[conn]["next_s"] = estimate
    return ladder


def _in_turn(fs, reps, seconds):
    """(median seconds of each function of fs, calls of each), the functions
    called in turn (f, g, h, f, g, h, ...) after one warm-up call each: at
    least ``reps`` calls of each, more while fewer than ``seconds`` have
    passed (at most 20 000)."""
    for f in fs:
        f()
    times = [[] for _ in fs]
    clock = time.perf_counter
    start = clock()
    while len(times[0]) < reps or (clock() - start < seconds and len(times[0]) < 20_000):
        for f, t in zip(fs, times):
            t0 = clock()
            f()
            t.append(clock() - t0)
    return [float(np.median(t)) for t in times], len(times[0])


#: --sizes --gpu: the GPU's strong-component routes timed beside 'auto'
#: ('host': every graph copied to the host's search; 'steps': the GPU's own
#: steps whatever the size), as _tuning overrides
SIZE_ROUTES = {"gpu host": {"STRONG_HOST_SMALL": 1 << 62},
               "gpu steps": {"STRONG_HOST_SMALL": 0, "STRONG_HOST_SPARSE": 0}}


def _family_sizes(opt, names):
    """--sizes: every family at every size, SciPy against meshccl's CPU
    and/or GPU (for strong components on the GPU also its two routes,
    :data:`SIZE_ROUTES`); the table rewritten after every graph."""
    import json

    from meshccl import graph_families

    sizes = [int(float(x)) for x in opt.sizes.split(",")]
    conns = opt.connections.split(",")
    rows, ok_all, t_start = [], True, time.perf_counter()
    for name in names:
        for m in sizes:
            e = graph_families.FAMILIES[name](m, seed=1)
            n = e.n_vertices
            g = sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(n, n)).tocsr()
            row = {"family": name, "title": graph_families.TITLES[name], "n": n, "m": int(g.nnz),
                   "us": {}, "calls": {}, "ok": {}}
            dev = None
            if opt.gpu:  # (the call reads the count: it waits for the GPU)
                import cupyx.scipy.sparse as csp

                dev = csp.csr_matrix(g)
            for conn in conns:
                want = scipy_cc(g, directed=True, connection=conn)
                calls = {"scipy": lambda: scipy_cc(g, directed=True, connection=conn)}
                if opt.cpu:
                    calls["cpu"] = lambda: connected_components(g, directed=True, connection=conn)
                if opt.gpu:
                    calls["gpu"] = lambda: connected_components(dev, directed=True,
                                                                connection=conn)
                    if conn == "strong":
                        for col, values in SIZE_ROUTES.items():
                            def routed(values=values):
                                with _tuning.override(**values):
                                    return connected_components(dev, directed=True,
                                                                connection=conn)
                            calls[col] = routed
                for col, f in calls.items():
                    if col == "scipy":
                        continue
                    got = f()
                    labels = got[1].get() if col.startswith("gpu") else got[1]
                    ref = (_by_smallest(want[1]) if col.startswith("gpu") and conn == "strong"
                           else want[1])
                    row["ok"][f"{conn} {col}"] = bool(got[0] == want[0] and (labels == ref).all())
                times, count = _in_turn(list(calls.values()), opt.reps, opt.size_seconds)
                row["us"][conn] = {col: t * 1e6 for col, t in zip(calls, times)}
                row["calls"][conn] = count
            del dev
            ok_all &= all(row["ok"].values())
            rows.append(row)
            print(name, n, row["m"], {c: {k: round(v, 1) for k, v in t.items()}
                                      for c, t in row["us"].items()}, row["ok"], flush=True)
            if opt.out:
                _sizes_write(rows, sizes, conns, opt, t_start)
    print(_sizes_write(rows, sizes, conns, opt, t_start))
    return 0 if ok_all else 1


def _sizes_write(rows, sizes, conns, opt, t_start):
    """The --sizes table (and json, under --out) of the rows so far."""
    import json

    where = ("a cupyx CSR on the GPU (wall clock; the call waits for the count)"
             if opt.gpu else "a float64 SciPy CSR")
    cols = [c for c in rows[0]["us"][conns[0]] if c != "scipy"] if rows else []
    lines = [f"Components of small and large graphs on {where}: SciPy and meshccl "
             f"called in turn, µs per call (median of >= {opt.reps} calls, up to "
             f"{opt.size_seconds} s each); × = SciPy / meshccl. {_machine(opt)}", ""]
    for conn in conns:
        cols = [c for c in rows[0]["us"][conn] if c != "scipy"] if rows else []
        lines += [f"{conn} components:", "",
                  "| family | stored edges | SciPy µs | " + " | ".join(
                      f"{c} µs | {c} ×" for c in cols) + " | labels |",
                  "|---|---:|---:|" + "---:|---:|" * len(cols) + "---|"]
        for r in rows:
            t = r["us"][conn]
            cells = [f"{t['scipy']:.1f}"]
            for c in cols:
                cells += [f"{t[c]:.1f}", f"{t['scipy'] / t[c]:.2f}"]
            ok = "ok" if all(v for k, v in r["ok"].items() if k.startswith(conn)) else "WRONG"
            lines.append(f"| {r['title']} | {r['m']} | " + " | ".join(cells) + f" | {ok} |")
        for c in cols:
            worst = min(rows, key=lambda r: r["us"][conn]["scipy"] / r["us"][conn][c])
            t = worst["us"][conn]
            lines.append(f"\n{conn}, {c}: lowest × {t['scipy'] / t[c]:.2f} ({worst['title']}, "
                         f"{worst['m']} edges).")
        lines.append("")
    lines += [f"Benchmark wall time {time.perf_counter() - t_start:.0f} s."]
    table = "\n".join(lines)
    if opt.out:
        out = Path(opt.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "sizes.md").write_text(table + "\n")
        (out / "sizes.json").write_text(json.dumps(
            {"machine": _machine(opt), "sizes": sizes, "connections": conns, "rows": rows},
            indent=1))
    return table


def _by_smallest(labels):
    """Labels renumbered 0.. in order of each component's smallest vertex."""
    if not labels.size:
        return labels
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[inverse.ravel()]


def _speed(r, c):
    """SciPy's time over column c's on row r (NetworkX: at the size it ran), or None."""
    if c == "networkx":
        x = r.get("networkx")
        return x["scipy_ms"] / x["ms"] if x and x["ms"] else None
    return r["ms"]["scipy"] / r["ms"][c] if r["ms"].get(c) else None


def _networkx_cell(x, m):
    """NetworkX's ms, with the size it ran at where that is below the row's."""
    if x is None:
        return ""
    if x["m"] == m:
        return f"{x['ms']:.2f}"
    return f"{x['ms']:.2f} at {x['m']} edges (next: est. {x['next_s']:.0f} s)"


def _families_table(rows, cols, opt, wall, nx=None, skipped=()):
    speed = [c for c in cols if c != "scipy"]
    scipy_calls = ("one SciPy call" if getattr(opt, "scipy_reps", 1) == 1
                   else f"SciPy median of {opt.scipy_reps}")
    head = (f"Weak and strong components per graph family, ms per call; speed-up over SciPy "
            f"({scipy_calls}; meshccl median of {opt.reps}). {_machine(opt)}"
            + (f" Tuning: {opt.tune}." if opt.tune else ""))
    if nx is not None:
        head += (f" NetworkX {nx.__version__}: weakly_/strongly_connected_components on a "
                 f"DiGraph built outside the timing, its partition checked against SciPy's, at "
                 f"the largest size whose estimated build and calls fit {opt.networkx_limit:g} s "
                 f"each (a smaller size is named in its cell; its speed-up is against SciPy at "
                 f"that size).")
    elif opt.networkx_limit > 0:
        head += " NetworkX: not importable, left out."
    lines = [head, "",
             "| family | connection | n | stored edges | components | largest | "
             + " | ".join(cols) + " | " + " | ".join(f"{c} / scipy" for c in speed)
             + " | labels | note |", "|---|---|---:|---:|---:|---:|"
             + "---:|" * (len(cols) + len(speed)) + "---|---|"]
    for r in rows:
        ms = r["ms"]
        cells = [_networkx_cell(r.get("networkx"), r["m"]) if c == "networkx" else
                 f"{ms[c]:.2f}" if c in ms else "" for c in cols]
        ups = [f"{_speed(r, c):.3g}x" if _speed(r, c) else "" for c in speed]
        ok = "ok" if all(r["ok"].values()) else "WRONG " + ",".join(
            k for k, v in r["ok"].items() if not v)
        lines.append(f"| {r['title']} | {r['connection']} | {r['n']} | {r['m']} | "
                     f"{r['components']} | {r['largest']} | " + " | ".join(cells + ups)
                     + f" | {ok} | {r.get('shrunk', '')} |")
    if any("gpu_info" in r for r in rows):
        lines += ["", "GPU, one call with return_info=True: the method that ran, ms per step "
                  "(CUDA events); for weak components the passes of an iterative method; for "
                  "strong ones the GPU's passes, colouring rounds, vertices of contracted "
                  "paths, pieces joined by mutual edges (the quotient solved; blank: none) "
                  "and vertices finished on the host:", "",
                  "| family | connection | method | steps | passes | colour rounds | path vertices "
                  "| pieces | host vertices |",
                  "|---|---|---|---|---:|---:|---:|---:|---:|"]
        for r in rows:
            if "gpu_info" in r:
                i = r["gpu_info"]
                steps = ", ".join(f"{k} {v:.2f}" for k, v in i["seconds_ms"].items())
                strong = r["connection"] == "strong"
                passes = i["passes"] if strong else i["iterations"]
                rounds, paths, pieces, host = (
                    (i["iterations"], i.get("path_vertices"), i.get("pieces") or "",
                     i["host_vertices"]) if strong else ("", "", "", ""))
                lines.append(f"| {r['title']} | {r['connection']} | {i['method']} | {steps} | "
                             f"{passes} | {rounds} | {paths} | {pieces} | {host} |")
    if skipped:
        lines += ["", f"Not run (--time-budget {opt.time_budget:g} s reached): "
                  + ", ".join(skipped) + "."]
    lines += ["", f"Benchmark wall time {wall:.0f} s."]
    return "\n".join(lines)


def _families_plot(rows, cols, path):
    """Speed-up over SciPy per family: one marker per backend and connection."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # no matplotlib: the table is enough
        return
    titles = list(dict.fromkeys(r["title"] for r in rows))
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(titles) + 1.5))
    marks = {"weak": "o", "strong": "s"}
    colours = {"cpu": "tab:blue", "gpu": "tab:green", "networkx": "tab:grey"}
    for c in (c for c in cols if c != "scipy"):
        for conn in ("weak", "strong"):
            pts = [(_speed(r, c), titles.index(r["title"])) for r in rows
                   if r["connection"] == conn and _speed(r, c)]
            if pts:
                ax.scatter(*zip(*pts), marker=marks[conn], color=colours[c],
                           label=f"meshccl {c}, {conn}" if c != "networkx" else f"networkx, {conn}")
    ax.axvline(1, color="k", lw=0.8)
    ax.axvline(10, color="k", lw=0.5, ls=":")
    ax.set_xscale("log")
    ax.set_yticks(range(len(titles)), titles)
    ax.invert_yaxis()
    ax.set_xlabel("speed-up over SciPy (x)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))  # beside the axes
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def _cell(t, ok, m):
    return (f"stopped after {t*1e3:.0f} ms" if ok == "stopped" else
            f"{t*1e3:.2f} ({m / t:.3g}){_mark(ok)}")


def _symmetric_csr(e, on_gpu):
    """(host CSR, device CSR or None) of e with every edge stored both ways,
    duplicates merged, indices sorted in each row."""
    n = e.n_vertices
    if not on_gpu:
        s = np.concatenate([e.src, e.dst])
        d = np.concatenate([e.dst, e.src])
        return sp.coo_matrix((np.ones(s.size, np.int8), (s, d)), shape=(n, n)).tocsr(), None
    import cupy
    import cupyx.scipy.sparse as csp

    src, dst = cupy.asarray(e.src), cupy.asarray(e.dst)
    key = cupy.concatenate([src * n + dst, dst * n + src])
    del src, dst
    key = cupy.unique(key)                                   # sorted by row, then column
    rows = key // n
    indices = (key - rows * n).astype(cupy.int32)
    del key
    indptr = cupy.concatenate([cupy.zeros(1, cupy.int64),
                               cupy.cumsum(cupy.bincount(rows, minlength=n))]).astype(cupy.int32)
    del rows
    g = csp.csr_matrix((cupy.ones(indices.size, cupy.float32), indices, indptr), shape=(n, n))
    host = sp.csr_matrix((np.ones(indices.size, np.int8), indices.get(), indptr.get()), shape=(n, n))
    return host, g


def papers(opt):
    """--papers: GConn-shaped graphs, scipy once, the GPU methods of PAPER_METHODS."""
    t_start = time.perf_counter()
    on_gpu = opt.gpu
    rows = []
    for name, paper, make in paper_cases(opt.papers_shrink):
        if opt.only and opt.only not in name:
            continue
        t0 = time.perf_counter()
        e = make()
        t_gen = time.perf_counter() - t0
        csr, g_csr = _symmetric_csr(e, on_gpu)
        del e
        n = csr.shape[0]
        t_build = time.perf_counter() - t0 - t_gen
        t0 = time.perf_counter()
        n_s, lab_s = scipy_cc(csr, directed=True, connection="weak")
        t_s = time.perf_counter() - t0
        gpu, picked, phases = {}, None, {}
        if on_gpu:
            import cupy

            picked = _auto_method(g_csr, True)
            runs = [(m, "CSR", g_csr) for m in PAPER_METHODS]
            gpu = time_gpu_methods(runs + [("auto", "CSR, no plan", g_csr)], opt.reps, opt.slow,
                                   opt.max_passes, True, n_s, lab_s)
            phases = gpu_phases(runs, opt.reps, opt.max_passes, True,
                                skip={k for k, (t, ok) in gpu.items()
                                      if ok is not True or t > opt.slow})
            del g_csr, runs
            cupy.get_default_memory_pool().free_all_blocks()
        same = all(ok is not False for _, ok in gpu.values())
        rows.append((name, paper, n, csr.nnz, n_s, t_s, gpu, same, picked, phases))
        del csr, lab_s
        line = (f"{name:60s} n {n} stored {rows[-1][3]} (generated in {t_gen:.1f} s, CSR "
                f"{t_build:.1f} s) scipy {t_s*1e3:.0f} ms")
        for k, (t, ok) in gpu.items():
            line += f"  | {k} {t*1e3:.2f} ms{_mark(ok)}"
        print(line + f"  {'identical' if same else 'MISMATCH'}"
              f"  [{time.perf_counter() - t_start:.0f} s so far]", flush=True)

    head = (f"Machine: {_machine(opt)}"
            f"{_gpu_name() if on_gpu else ''}; "
            f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
            f"meshccl {meshccl.__version__}, SciPy {scipy.__version__}; "
            f"command: `python {shlex.join(sys.argv)}`.  Graphs shaped like GConn's inputs "
            f"(synthetic stand-ins, not the same graphs): every edge stored both ways, "
            f"duplicates merged (self-loops kept), symmetric=True.  SciPy: one run (its labels are the "
            f"reference)"
            f"{f'; GPU: median of {opt.reps} after a warm-up by CUDA events, end to end (validation, kernels, relabel, count), a method over {opt.slow} s timed once; iterative methods capped at {opt.max_passes} passes; repeated calls replay a recorded launch plan where one applies (up to 2**23 vertices), the column auto (CSR, no plan) with plans off, as every first call runs' if on_gpu else ''}.")
    lines = [head, "", "| graph | vertices | stored edges | entries/vertex | components | scipy ms (1 run) "
             "| stands for (GConn Table 1: n, m) | labels |",
             "|---|---:|---:|---:|---:|---:|---|---|"]
    for name, paper, n, m, c, ts_, gpu, same, _p, _ph in rows:
        gp = GCONN[paper]
        lines.append(f"| {name} | {n} | {m} | {m / n:.1f} | {c} | {ts_*1e3:.0f} | {paper} "
                     f"({gp['n']/1e6:.2f}M, {gp['m']/1e6:.2f}M) | "
                     f"{'identical' if same else 'MISMATCH'} |")
    if on_gpu and rows:
        keys = list(rows[0][6])
        lines += ["", "GPU, ms (edges/s = stored edges / time); labels checked equal to SciPy's:", "",
                  "| graph | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
        for name, paper, n, m, c, ts_, gpu, *_ in rows:
            lines.append(f"| {name} | " + " | ".join(_cell(t, ok, m) for t, ok in gpu.values()) + " |")
        lines += ["", "Best GPU method per graph, and what 'auto' ran (method, time, time / best):", "",
                  "| graph | best | ms | edges/s | speed-up vs scipy | 'auto' |",
                  "|---|---|---:|---:|---:|---|"]
        ratios = []
        for name, paper, n, m, c, ts_, gpu, same, picked, _ph in rows:
            best = best_of(gpu)
            if best is None:
                lines.append(f"| {name} | – | | | | |")
                continue
            t = gpu[best][0]
            lines.append(f"| {name} | {best} | {t*1e3:.2f} | {m / t:.3g} | {ts_ / t:.0f}× | "
                         f"{auto_cell(gpu, 'CSR', picked)} |")
            ratios.append((gpu.get("auto (CSR)", (None,))[0], t))
        lines += ["", auto_summary(ratios)]
        lines += ["", f"Phase split (connected_components(..., return_info=True), median of "
                  f"{opt.reps} calls after the timed runs; CUDA events): 'validate' is the "
                  f"device-side check of the CSR with its one transfer to the host, 'method' the "
                  f"method's steps, 'relabel' the numbering to SciPy's labels.  The sum leaves "
                  f"out the host gaps between phases and the read of the count; methods that "
                  f"stopped or took over {opt.slow} s are left out.", ""]
        lines += phase_lines([(r[0], r[6], r[9]) for r in rows])
    lines += ["", "GConn on a V100 (Hong, Dhulipala, Shun, PACT 2020): n, m from Table 1 (edges "
              "counted in both directions, as our stored edges), times from Table 2 (ms); "
              "edges/s = m / time.  'fastest' is the fastest entry of the graph's column over "
              "all five groups of Table 2.  Our graphs are synthetic graphs of similar size and "
              "shape, not GConn's, and an H200 has about 5.3× a V100's memory bandwidth "
              "(4.8 vs 0.9 TB/s).", "",
              "| our graph | stored edges | GConn graph (n, m) | GConn fastest (Table 2) | ms | "
              "edges/s | GConn no sampling, fastest | ms | meshccl best | edges/s | "
              "meshccl best / GConn V100 |",
              "|---|---:|---|---|---:|---:|---|---:|---|---:|---:|"]
    for name, paper, n, m, c, ts_, gpu, *_ in rows:
        gp = GCONN[paper]
        g_eps = gp["m"] / (gp["best"][1] * 1e-3)
        best = best_of(gpu)
        ours = (f"{best}, {gpu[best][0]*1e3:.2f} ms | {m / gpu[best][0]:.3g} | "
                f"{m / gpu[best][0] / g_eps:.2f}" if best else "– | – | –")
        lines.append(f"| {name} | {m} | {paper} ({gp['n']/1e6:.2f}M, {gp['m']/1e6:.2f}M) | "
                     f"{gp['best'][0]} | {gp['best'][1]:.2f} | {g_eps:.3g} | {gp['no_sampling'][0]} | "
                     f"{gp['no_sampling'][1]:.2f} | {ours} |")
    if on_gpu and rows:
        methods = [k for k in GCONN["road_usa"]["rows"]]
        lines += ["", "Per method: meshccl edges/s / GConn V100 edges/s of the matching Table 2 row "
                  "(GConn's ms in brackets):", "",
                  "| meshccl method | GConn row | " + " | ".join(r[1] for r in rows) + " |",
                  "|---|---|" + "---:|" * len(rows)]
        for meth in methods:
            cells = []
            for name, paper, n, m, c, ts_, gpu, *_ in rows:
                label, ms = GCONN[paper]["rows"][meth]
                t, ok = gpu.get(f"{meth} (CSR)", (None, None))
                g_eps = GCONN[paper]["m"] / (ms * 1e-3)
                if t is None or ok is False:
                    cells.append(f"– ({ms:.2f})")
                else:
                    cells.append(f"{'≤ ' if ok == 'stopped' else ''}{m / t / g_eps:.2f} ({ms:.2f})")
            lines.append(f"| {meth} | {GCONN[rows[0][1]]['rows'][meth][0]} | " + " | ".join(cells) + " |")
        lines += ["", "(≤: the method stopped at the pass cap; the ratio uses the time until then.)"]
    lines += ["", f"Benchmark wall time {time.perf_counter() - t_start:.0f} s."]
    table = "\n".join(lines)
    print(table)
    if opt.out:
        Path(opt.out).mkdir(parents=True, exist_ok=True)
        fname = "graph_bench_papers_gpu.md" if on_gpu else "graph_bench_papers.md"
        Path(opt.out, fname).write_text(table + "\n")
    return 0 if all(r[7] for r in rows) else 1


def _machine(opt):
    """The header's machine: --machine's words, then what Python sees."""
    seen = f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"
    return f"{opt.machine}; Python sees {seen}" if opt.machine else seen


def _mark(ok):
    return "" if ok is True else (" stopped" if ok == "stopped" else " MISMATCH")


def _ecl_summary(rows):
    """ECL vs Hawick/SV: geometric mean over graphs and methods of
    t(method) / t(ecl), CSR input.  A stopped run counts with the time it
    took before stopping (a lower bound on the speed-up)."""
    ratios, parts, stopped = [], [], 0
    for method in HAWICK_SV:
        rs = []
        for *_, gpu, _same, _nx, _picked, _tp in rows:
            t_ecl, ok_ecl = gpu.get("ecl (CSR)", (None, False))
            t, ok = gpu.get(f"{method} (CSR)", (None, False))
            if t_ecl is None or t is None or ok_ecl is not True or ok is False:
                continue
            stopped += ok == "stopped"
            rs.append(t / t_ecl)
        if rs:
            parts.append(f"{method} {np.exp(np.mean(np.log(rs))):.1f}×")
            ratios += rs
    if not ratios:
        return "ECL vs Hawick/SV: no data."
    g = float(np.exp(np.mean(np.log(ratios))))
    return (f"ECL vs Hawick/SV (geometric-mean speed-up of 'ecl' over {', '.join(HAWICK_SV)}, "
            f"CSR, {len(rows)} graphs): {'≥ ' if stopped else ''}{g:.1f}× "
            f"({'; '.join(parts)}; issue 5 target ≥ 1.8×: {'met' if g >= 1.8 else 'NOT met'}"
            f"{f'; {stopped} stopped runs count with their time so far' if stopped else ''}).")


def _gpu_name():
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    return f", GPU: {name}, CuPy {cupy.__version__}"


if __name__ == "__main__":
    sys.exit(main())
