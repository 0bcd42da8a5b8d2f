"""Reproduce the mesh experiments of Hawick, Leist and Playne (2010), section 6.3.

    python examples/hawick_experiments.py spiral          # about 45 s on a 2-core laptop CPU
    python examples/hawick_experiments.py cahn-hilliard   # about 70 s on a 2-core laptop CPU
    python examples/hawick_experiments.py spiral --paper-sizes   # the paper's N = 256 ... 4096

By default N = 256 and 512, a cap of 2 s per call and 2 Cahn-Hilliard
frames: a quick look that finishes in about a minute.  --paper-sizes runs
the paper's N = 256 ... 4096 with a 60 s cap and 4 frames: on a 2-core
CPU that took 11 minutes for the spiral and 44 minutes for Cahn-Hilliard
(the CPU methods dominate; --backend gpu leaves them out).

spiral (their Fig. 19): label Hawick's two interleaved one-cell-wide spirals
at each N with every method, recording time per call and
passes.  A method that takes longer than --cap seconds at one size is
stopped there (max_iterations) and not run at larger sizes (the plot and
table say so), as the paper did for Kernel A.

cahn-hilliard (their Fig. 18): run a Cahn-Hilliard quench
(meshccl.sim.CahnHilliard: semi-implicit Fourier, c_t = laplacian(c^3 - c -
gamma * laplacian(c)), dt = 0.05) and label the binary field c > 0 every 128
steps with every method; report the mean time per call against N.

Methods: the default one-pass union-find ('unionfind', on the GPU when CuPy
sees one, and on the CPU), and Hawick et al.'s iterative methods A, B, C, D,
cpu1 (CPU I) and cpu2 (CPU II).  A-D and unionfind run on the GPU (CuPy)
and on the CPU (numba); --backends (or --backend) picks which.  Writes a
markdown table and a PNG plot (time per call vs N, log-log; for the spiral
also the labelled 64 x 64 spiral) into --out, and a JSON file of the same
numbers: the passes (and the spiral's component count) under "results",
the times, which depend on the machine, under "machine" (for
docs/make_figures.py --check).  --size N is short for the
sizes 256, 512, ... up to N; --steps S for S // 128 Cahn-Hilliard frames.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

import meshccl
from meshccl import patterns

METHODS = ["unionfind", "A", "B", "C", "D", "cpu1", "cpu2"]
#: the default run: done in about a minute on a 2-core laptop CPU
QUICK = {"sizes": "256,512", "cap": 2.0, "frames": 2}
#: --paper-sizes: the sizes of Hawick et al.'s figures 18 and 19
PAPER = {"sizes": "256,512,1024,2048,4096", "cap": 60.0, "frames": 4}


def backends(which="all"):
    """(name, method, device, array module) for everything runnable here.

    ``which``: 'gpu', 'cpu' or 'all'.  CPU I / II are CPU methods only.
    """
    out = []
    if which in ("gpu", "all") and meshccl.gpu_available():
        import cupy
        out += [(f"{m} (GPU)", m, "gpu", cupy) for m in METHODS if m not in ("cpu1", "cpu2")]
    if which in ("cpu", "all"):
        out += [(f"{m} (CPU)", m, "cpu", np) for m in METHODS]
    return out


def _call(a, kw, device, xp):
    """Seconds for one call (CUDA events on the GPU) and its info dict."""
    if device == "cpu":
        t0 = time.perf_counter()
        _, info = meshccl.label(a, return_info=True, **kw)
        return time.perf_counter() - t0, info
    start, stop = xp.cuda.Event(), xp.cuda.Event()
    start.record()
    _, info = meshccl.label(a, return_info=True, **kw)
    stop.record()
    stop.synchronize()
    return xp.cuda.get_elapsed_time(start, stop) / 1e3, info


def timed_label(a, method, device, xp, cap, connectivity=1, reps=3):
    """(median seconds per call, passes, note); seconds is None when the
    method was stopped at the cap.

    An iterative method first runs PROBE passes to learn its time per pass;
    the timed calls then get ``max_iterations`` worth about 1.5 x cap
    seconds, so a method that would run for minutes stops near the cap
    (meshccl.NotConverged) instead of finishing.
    """
    kw = dict(connectivity=connectivity, method=method)
    meshccl.label(a[tuple(slice(0, 16) for _ in a.shape)], **kw)  # warm-up: compile
    if method not in ("unionfind", "auto"):
        probe = 64
        t0 = time.perf_counter()
        try:
            meshccl.label(a, max_iterations=probe, **kw)
        except meshccl.NotConverged:
            per_pass = (time.perf_counter() - t0) / probe
            kw["max_iterations"] = max(probe, int(1.5 * cap / per_pass))
    ts, passes = [], None
    while len(ts) < reps and sum(ts) < 10.0:  # slow methods: fewer repeats
        t0 = time.perf_counter()
        try:
            s, info = _call(a, kw, device, xp)
        except meshccl.NotConverged:
            spent = time.perf_counter() - t0
            return None, None, f"stopped: > {kw['max_iterations']} passes, {spent:.0f} s"
        ts.append(s)
        passes = info["iterations"]
    return float(np.median(ts)), passes, ""


def cahn_hilliard_frames(n, frames, every=128, dt=0.05, gamma=1.0, seed=0, xp=np):
    """Frames (c > 0, uint8) of a 2-D Cahn-Hilliard quench, every `every`
    steps, computed by meshccl.sim.CahnHilliard on ``xp`` (NumPy, or CuPy for
    a GPU solver): mobility 1, kappa = gamma, c = 0.05 (2u - 1) at the start."""
    from meshccl.sim import CahnHilliard

    sim = CahnHilliard((n, n), dt=dt, kappa=gamma, mean=0.0, noise=0.05, seed=seed, xp=xp)
    out = []
    for _ in range(frames):
        sim.run(every, progress=False)
        out.append((sim.state > 0).astype(np.uint8))
    return out


def run(kind, sizes, cap, out_dir, frames, which="all"):
    rows = []  # (name, N, seconds or None, passes, note)
    stopped = {}
    todo = backends(which)
    solver = todo[0][3] if todo and todo[0][2] == "gpu" else np
    for n in sizes:
        if kind == "spiral":
            inputs = [patterns.spiral(n)]
        else:
            inputs = [f if solver is np else f.get() for f in cahn_hilliard_frames(n, frames, xp=solver)]
        for name, method, device, xp in todo:
            if name in stopped:
                rows.append((name, n, None, None, "not run: " + stopped[name]))
                continue
            times, its, note = [], [], ""
            for a in inputs:
                s, it, note = timed_label(xp.asarray(a), method, device, xp, cap)
                if s is None:
                    break
                times.append(s)
                its.append(it)
                if s > cap:
                    break
            if not times or note:
                rows.append((name, n, None, None, note))
                stopped[name] = f"stopped at N={n}"
                print(f"{kind} N={n:5d} {name:18s} {note}", flush=True)
                continue
            mean = float(np.mean(times))
            rows.append((name, n, mean, its[0], ""))
            print(f"{kind} N={n:5d} {name:18s} {mean * 1e3:12.2f} ms  passes {its[0]}", flush=True)
            if mean > cap:
                stopped[name] = f"{mean:.0f} s at N={n}"
    write(kind, rows, sizes, cap, out_dir)


def write(kind, rows, sizes, cap, out_dir):
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    head = (f"{kind}: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"
            + (", GPU " + _gpu_name() if meshccl.gpu_available() else ", no GPU")
            + f"; {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
            f"command: `python {' '.join(sys.argv)}`; cap {cap:g} s per call")
    names = list(dict.fromkeys(r[0] for r in rows))
    lines = [head, "", "| method | " + " | ".join(f"N={n}" for n in sizes) + " |",
             "|---|" + "---:|" * len(sizes)]
    for name in names:
        cells = []
        for n in sizes:
            r = next((r for r in rows if r[0] == name and r[1] == n), None)
            if r is None:
                cells.append("")
            elif r[2] is None:
                cells.append(r[4].split(":")[0] if r[4].startswith("not run") else r[4])
            else:
                cells.append(f"{r[2] * 1e3:.2f} ms" + (f" ({r[3]} passes)" if r[3] and r[3] > 1 else ""))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"stopped: the method was still changing labels after about 1.5 x the cap "
                 f"({cap:g} s; meshccl.NotConverged via max_iterations); not run: it was stopped "
                 "or took longer than the cap at a smaller N.  Times are per call (Cahn-Hilliard: "
                 "mean over the frames), passes include the last one, which changes nothing.")
    (out_dir / f"hawick_{kind}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    # passes do not depend on the machine, but whether a method ran at an N
    # does (the time cap): a pass count is null where it was stopped or not run
    results = {"passes": {name: {str(r[1]): r[3] if r[2] is not None else None
                                 for r in rows if r[0] == name} for name in names}}
    if kind == "spiral":
        spiral = patterns.spiral(64)
        labels, n = meshccl.label(spiral, connectivity=1, background=-1, return_num=True)
        results["spiral_64_components"] = int(n)
    numbers = {"figure": f"hawick_{kind}.png",
               "parameters": {"experiment": kind, "sizes": list(sizes), "cap_s": cap,
                              "methods": names},
               "results": results,
               "machine": {"seconds": {name: {str(r[1]): r[2] for r in rows if r[0] == name}
                                       for name in names},
                           "notes": {name: {str(r[1]): r[4] for r in rows if r[0] == name and r[4]}
                                     for name in names},
                           "header": head}}
    with open(out_dir / f"hawick_{kind}.json", "w") as f:
        json.dump(numbers, f, indent=1)
        f.write("\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    if kind == "spiral":
        fig, (pic, ax) = plt.subplots(1, 2, figsize=(12, 6), gridspec_kw={"width_ratios": [1, 1.4]})
        pic.imshow(labels, cmap="tab10", vmin=1, vmax=10, interpolation="nearest")
        pic.set_title(f"Hawick's spiral, 64 x 64, labelled:\n{n} one-cell-wide components "
                      "(both values)", fontsize=10)
        pic.set_xticks([])
        pic.set_yticks([])
    else:
        fig, ax = plt.subplots(figsize=(7, 5))
    for name in names:
        pts = [(r[1], r[2]) for r in rows if r[0] == name and r[2] is not None]
        # why a method's line ends early goes in its legend entry (an
        # annotation beside the last point overlaps where two lines end together)
        first_missing = next((r for r in rows if r[0] == name and r[2] is None), None)
        if first_missing is None:
            label = name
        elif first_missing[4].startswith("stopped"):
            label = f"{name}: stopped at N={first_missing[1]} (> {cap:g} s cap)"
        else:
            label = f"{name}: > {cap:g} s cap at N={pts[-1][0]}, not run beyond"
        if pts:
            ax.plot(*zip(*pts), marker="o", label=label)
        else:  # no point to draw: the method still appears in the legend
            ax.plot([], [], ls="none", marker="x", color="0.5", label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("N (N x N cells)")
    ax.set_ylabel("seconds per call" if kind == "spiral" else "mean seconds per frame")
    ax.set_title(f"Hawick et al. 2010, {'Fig. 19: spiral' if kind == 'spiral' else 'Fig. 18: Cahn-Hilliard'}")
    # below the axes: inside, the entries would hide the union-find's line
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_dir / f"hawick_{kind}.png", dpi=120)


def _gpu_name():
    import cupy
    name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("experiment", choices=["spiral", "cahn-hilliard"])
    ap.add_argument("--paper-sizes", action="store_true",
                    help="the paper's experiment: N = 256 ... 4096, a 60 s cap, 4 frames "
                         "(11 (spiral) and 44 (Cahn-Hilliard) minutes on a 2-core CPU); "
                         "--sizes, --cap and --frames still override these")
    ap.add_argument("--sizes", default=None,
                    help=f"comma-separated N (default {QUICK['sizes']}; --paper-sizes: "
                         f"{PAPER['sizes']})")
    ap.add_argument("--size", type=int, default=None,
                    help="the sizes 256, 512, ... up to this (instead of --sizes)")
    ap.add_argument("--steps", type=int, default=None,
                    help="Cahn-Hilliard steps: --frames = steps // 128")
    ap.add_argument("--cap", type=float, default=None,
                    help=f"seconds; slower methods stop growing N (default {QUICK['cap']:g}; "
                         f"--paper-sizes: {PAPER['cap']:g})")
    ap.add_argument("--frames", type=int, default=None,
                    help=f"Cahn-Hilliard frames per size (default {QUICK['frames']}; "
                         f"--paper-sizes: {PAPER['frames']})")
    ap.add_argument("--out", default="hawick-out", help="folder for the table and plot "
                                                        "(default hawick-out)")
    ap.add_argument("--backends", "--backend", choices=["gpu", "cpu", "all"], default="all",
                    help="which methods to run (default: GPU ones where CuPy sees a GPU, and CPU)")
    opt = ap.parse_args(argv)
    preset = PAPER if opt.paper_sizes else QUICK
    for name in ("sizes", "cap", "frames"):
        if getattr(opt, name) is None:
            setattr(opt, name, preset[name])
    sizes = [int(s) for s in opt.sizes.split(",")]
    if opt.size is not None:
        sizes = [n for n in (256, 512, 1024, 2048, 4096, 8192, 16384) if n <= opt.size] or [opt.size]
    if opt.steps is not None:
        opt.frames = max(1, opt.steps // 128)
    run(opt.experiment, sizes, opt.cap, opt.out, opt.frames, opt.backends)
    return 0


if __name__ == "__main__":
    sys.exit(main())
