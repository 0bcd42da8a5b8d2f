"""A Cahn-Hilliard quench labelled as it runs (Hawick, Leist and Playne 2010, section 6.3.1).

    python examples/sim_quench.py                                 # 256^2, 4096 steps, CPU (< 1 min)
    python examples/sim_quench.py --backend gpu --size 1024 --steps 16384 --out docs/img/sim

A binary alloy quenched from a nearly uniform mixture (c = mean + small
noise) separates into A-rich (c > 0) and B-rich (c < 0) domains that
coarsen.  ``meshccl.sim.CahnHilliard`` runs the quench and its hook
labels the A phase every ``--every`` steps (128, as the paper) on the
state's device, periodic, and hands over the domain count and the
largest domain's share of the A cells (``meshccl.measure``).

Writes into ``--out``:

- ``quench.png``: the field at four labelled steps (log-spaced), B light,
  A grey, the largest A domain dark red (for 3-D, the middle slice); below,
  the number of A domains and the largest domain's fraction against time;
- ``quench.md``: the table of every labelled step (also printed, thinned);
- ``quench.json``: the same rows in full and the pictured steps, the run's
  time apart under ``machine`` (for ``docs/make_figures.py --check``).

The defaults (mean -0.3: A is the minority and forms droplets that coarsen,
dt = 1 < 2 kappa / M) run in well under a minute on one CPU core.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from meshccl.sim import CahnHilliard


def host(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def array_module(backend):
    if backend == "gpu":
        import cupy
        return cupy
    return np


def snapshot_steps(steps, every, count=4):
    """``count`` labelled steps (multiples of every), roughly log-spaced up to ``steps``."""
    labelled = np.arange(every, steps + 1, every)
    if labelled.size <= count:
        return [int(s) for s in labelled]
    want = np.geomspace(labelled[0], labelled[-1], count)
    picks = sorted({int(labelled[np.argmin(np.abs(labelled - w))]) for w in want})
    return picks


def run(args):
    xp = array_module(args.backend)
    shape = (args.size,) * args.dims
    sim = CahnHilliard(shape, dt=args.dt, mean=args.mean, noise=args.noise, seed=args.seed,
                       dtype=np.float32 if args.float32 else np.float64, xp=xp)
    snaps_at = set(snapshot_steps(args.steps, args.every))
    rows, snaps = [], []

    def on_label(c):
        n = c.n
        cells = int(c.counts[1:].sum()) if n else 0
        rows.append({"step": int(c.step), "time": c.step * args.dt, "domains": int(n),
                     "largest_fraction": float(c.largest_fraction) if n else 0.0,
                     "mean_size": cells / n if n else 0.0,
                     "free_energy": float(sim.free_energy())})
        if c.step in snaps_at:
            lab = c.labels
            big = int(c.counts[1:].argmax()) + 1 if n else -1
            if args.dims == 3:
                mid = shape[0] // 2
                state, lab = sim.state[mid], lab[mid]
            else:
                state = sim.state
            img = np.where(host(state) > 0, 1, 0).astype(np.int8)
            img[host(lab) == big] = 2
            snaps.append((c.step, img))

    t0 = time.perf_counter()
    sim.run(args.steps, every=args.every, on_label=on_label, label="A",
            progress=None if args.steps >= 1000 else False)
    seconds = time.perf_counter() - t0
    return sim, rows, snaps, seconds


def table(rows, args, seconds, thin=1):
    head = (f"Cahn-Hilliard quench, {args.size}^{args.dims}, mean {args.mean}, dt {args.dt}, "
            f"{'float32' if args.float32 else 'float64'}, {args.backend.upper()}; A phase "
            f"(c > 0) labelled every {args.every} steps, periodic, connectivity 1; "
            f"{args.steps} steps in {seconds:.1f} s (simulation and labelling)")
    lines = [head, "", "| step | time | A domains | largest fraction | mean domain cells "
             "| free energy |", "|---:|---:|---:|---:|---:|---:|"]
    for i, r in enumerate(rows):
        if i % thin and i != len(rows) - 1:
            continue
        lines.append(f"| {r['step']} | {r['time']:g} | {r['domains']} | "
                     f"{r['largest_fraction']:.4f} | {r['mean_size']:.1f} | "
                     f"{r['free_energy']:.6g} |")
    return "\n".join(lines)


def numbers(rows, snaps, args, seconds):
    """The picture's numbers for ``quench.json``.

    Parameters
    ----------
    rows : list of dict
        One row per labelled step, as ``run`` returns them.
    snaps : list of (int, ndarray)
        The pictured steps and their images.
    args : argparse.Namespace
        The command line.
    seconds : float
        Time of the run; machine-dependent, so kept under ``"machine"``.

    Returns
    -------
    dict
        ``figure``, ``parameters``, ``results`` and ``machine``.
    """
    parameters = {k: getattr(args, k) for k in ("size", "dims", "steps", "every", "dt", "mean",
                                                 "noise", "seed", "backend")}
    parameters["dtype"] = "float32" if args.float32 else "float64"
    return {"figure": "quench.png", "parameters": parameters,
            "results": {"rows": rows, "pictured_steps": [step for step, _ in snaps]},
            "machine": {"seconds": seconds}}


def plot(rows, snaps, args, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    cmap = ListedColormap(["#f2f2f2", "#8c8c8c", "#b2182b"])
    fig = plt.figure(figsize=(3.0 * max(len(snaps), 2), 6.4))
    grid = fig.add_gridspec(2, max(len(snaps), 1), height_ratios=[1, 0.9])
    for i, (step, img) in enumerate(snaps):
        ax = fig.add_subplot(grid[0, i])
        ax.imshow(img, cmap=cmap, vmin=0, vmax=2, interpolation="nearest")
        ax.set_title(f"t = {step * args.dt:g} (step {step})", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    ax = fig.add_subplot(grid[1, :])
    t = np.array([r["time"] for r in rows])
    ax.plot(t, [r["domains"] for r in rows], "o-", ms=3, color="tab:blue")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("time (steps x dt)")
    ax.set_ylabel("A domains", color="tab:blue")
    ax2 = ax.twinx()
    ax2.plot(t, [r["largest_fraction"] for r in rows], "s-", ms=3, color="tab:red")
    ax2.set_ylabel("largest domain / A cells", color="tab:red")
    top = max([r["largest_fraction"] for r in rows] + [1e-3])
    ax2.set_ylim(0, min(1.05, 1.15 * top))
    slc = " (middle slice)" if args.dims == 3 else ""
    fig.suptitle(f"Cahn-Hilliard quench {args.size}^{args.dims}, mean {args.mean}: A grey, "
                 f"largest A domain red{slc}; labelled every {args.every} steps", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=256, help="side of the grid (default 256)")
    ap.add_argument("--dims", type=int, choices=(2, 3), default=2)
    ap.add_argument("--steps", type=int, default=4096, help="time steps (default 4096)")
    ap.add_argument("--every", type=int, default=128, help="label every k steps (128)")
    ap.add_argument("--dt", type=float, default=1.0)
    ap.add_argument("--mean", type=float, default=-0.3, help="quench composition")
    ap.add_argument("--noise", type=float, default=0.05)
    ap.add_argument("--float32", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--backend", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--out", default="sim-examples", help="folder for quench.png and quench.md")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.steps < args.every:
        raise SystemExit(f"--steps ({args.steps}) must be at least --every ({args.every})")
    os.makedirs(args.out, exist_ok=True)
    sim, rows, snaps, seconds = run(args)
    md_path = os.path.join(args.out, "quench.md")
    with open(md_path, "w") as f:
        f.write(table(rows, args, seconds) + "\n")
    with open(os.path.join(args.out, "quench.json"), "w") as f:
        json.dump(numbers(rows, snaps, args, seconds), f, indent=1)
        f.write("\n")
    print(table(rows, args, seconds, thin=max(1, len(rows) // 12)))
    try:
        plot(rows, snaps, args, os.path.join(args.out, "quench.png"))
    except ImportError:
        print("matplotlib is not installed: no quench.png", file=sys.stderr)
    print(f"wrote {md_path}, quench.json and quench.png in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
