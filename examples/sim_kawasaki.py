"""Kawasaki Ising model at fixed minority fractions: the largest minority cluster (Hawick et al. 2010, Figs. 2-3).

    python examples/sim_kawasaki.py                               # 16^3, 6 T x 4 fractions, CPU (< 1 min)
    python examples/sim_kawasaki.py --backend gpu --size 32 --steps 1000 --runs 4 --out docs/img/sim

A random mixture of spins with a fixed fraction V_f of minority (-1) spins
is quenched to temperature T and evolved by Kawasaki spin exchange
(``meshccl.sim.Ising(..., algorithm='kawasaki', minority=V_f)``), which
keeps V_f exactly.  Every ``--every`` sweeps of the second half of each run
the hook labels the minority phase (periodic, nearest neighbours) and
records the largest cluster's share of the minority cells
(``Clusters.largest_fraction``); these are averaged over the samples and
over ``--runs`` independent runs (seeds).  Hawick et al.'s Fig. 3 plots
this over (T, V_f) for a 32^3 body-centred cubic lattice and 100 runs; here
the lattice is simple cubic (3-D, T_c = 4.5115 J) or square (2-D, T_c =
2.2692 J), with sizes and run counts set by the flags.  The crease of the
surface -- where the minority's largest cluster stops spanning the system
-- follows the phase boundary at low T; at high T, where the mixture
becomes random, it moves towards the site-percolation threshold (0.3116
simple cubic, 0.5927 square).

Writes into ``--out``:

- ``kawasaki.png``: the largest-cluster fraction over (T, V_f) as a map and
  as curves against T with error bars, and (Fig. 2) the largest minority
  cluster of one run at V_f closest to 0.2 and the lowest T;
- ``kawasaki.md``: the table (also printed);
- ``kawasaki.json``: the same means and errors in full and the pictured
  cluster's counts, the run's time apart under ``machine`` (for
  ``docs/make_figures.py --check``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from meshccl.sim import Ising
from meshccl.sim.exact import CRITICAL_TEMPERATURE

TC = {2: CRITICAL_TEMPERATURE, 3: 4.5115}


def host(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def floats(text):
    return [float(v) for v in text.split(",") if v.strip()]


def run(args, xp):
    shape = (args.size,) * args.dims
    burn = args.steps // 2
    every = args.every or max(1, (args.steps - burn) // 10)
    mean = np.full((len(args.fractions), len(args.temperatures)), np.nan)
    error = np.full_like(mean, np.nan)
    picture = None
    pick_f = int(np.argmin(np.abs(np.array(args.fractions) - 0.2)))
    for i, vf in enumerate(args.fractions):
        for j, t in enumerate(args.temperatures):
            per_run = []
            for r in range(args.runs):
                seed = args.seed + 1_000_003 * r + 1009 * i + j
                sim = Ising(shape, temperature=t, algorithm="kawasaki", minority=vf, seed=seed,
                            xp=xp)
                samples = []

                def on_label(c, samples=samples):
                    if c.step > burn:
                        samples.append(c.largest_fraction if c.n else 0.0)

                sim.run(args.steps, every=every, on_label=on_label, label="down", progress=False)
                per_run.append(np.mean(samples))
                if i == pick_f and j == 0 and r == 0:
                    c = sim.labels("down")
                    big = int(host(c.counts)[1:].argmax()) + 1 if c.n else -1
                    picture = (vf, t, host(c.labels) == big, host(sim.state) < 0)
            per_run = np.array(per_run)
            mean[i, j] = per_run.mean()
            error[i, j] = per_run.std(ddof=1) / np.sqrt(per_run.size) if per_run.size > 1 \
                else np.nan
            print(f"V_f = {vf:.3f}  T = {t:.3f}: largest fraction {mean[i, j]:.4f}"
                  + (f" +- {error[i, j]:.4f}" if per_run.size > 1 else ""), flush=True)
    return mean, error, picture, every


def table(args, mean, error, every, seconds):
    lines = [f"Kawasaki Ising, {args.size}^{args.dims} ({'simple cubic' if args.dims == 3 else 'square'}"
             f", periodic), {args.steps} sweeps per run from a random mixture, minority "
             f"labelled every {every} sweeps over the second half, {args.runs} run(s) per "
             f"point, {args.backend.upper()}, {seconds:.1f} s. Entries: largest minority "
             "cluster / minority cells, mean over runs (+- standard error over runs). "
             f"T in units of J (T_c = {TC[args.dims]:.4f}).", "",
             "| V_f \\ T | " + " | ".join(f"{t:.3g}" for t in args.temperatures) + " |",
             "|---|" + "---:|" * len(args.temperatures)]
    for i, vf in enumerate(args.fractions):
        cells = []
        for j in range(len(args.temperatures)):
            e = error[i, j]
            cells.append(f"{mean[i, j]:.3f}" + ("" if np.isnan(e) else f" ± {e:.3f}"))
        lines.append(f"| {vf:.3g} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def numbers(args, mean, error, picture, every, seconds):
    """The picture's numbers for ``kawasaki.json``.

    Parameters
    ----------
    args : argparse.Namespace
        The command line.
    mean, error : ndarray
        Largest-cluster fraction over (V_f, T) and its standard error over
        runs (NaN with one run: written as null, compared with nothing).
    picture : tuple or None
        ``(V_f, T, largest cluster mask, minority mask)`` of the pictured run.
    every : int
        Sweeps between labellings.
    seconds : float
        Time of the run; machine-dependent, so kept under ``"machine"``.

    Returns
    -------
    dict
        ``figure``, ``parameters``, ``results`` and ``machine``.
    """
    def listed(a):
        return [[None if np.isnan(v) else float(v) for v in row] for row in a]

    parameters = {k: getattr(args, k) for k in ("size", "dims", "steps", "runs", "temperatures",
                                                 "fractions", "seed", "backend")}
    parameters["every"] = every
    results = {"largest_fraction": listed(mean), "standard_error": listed(error)}
    if picture is not None:
        vf, t, big, minority = picture
        results["pictured"] = {"fraction": vf, "temperature": t, "largest_cells": int(big.sum()),
                               "minority_cells": int(minority.sum())}
    return {"figure": "kawasaki.png", "parameters": parameters, "results": results,
            "machine": {"seconds": seconds}}


def plot(args, mean, error, picture, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    temps, fracs = np.array(args.temperatures), np.array(args.fractions)
    fig = plt.figure(figsize=(15, 4.6))
    ax = fig.add_subplot(1, 3, 1)
    im = ax.imshow(mean, origin="lower", aspect="auto", cmap="viridis", vmin=0, vmax=1,
                   extent=_extent(temps, fracs))
    fig.colorbar(im, ax=ax, label="largest cluster / minority cells")
    ax.set_xlabel("T (J)")
    ax.set_ylabel("minority fraction V_f")
    ax.set_title("Fig. 3: largest minority cluster")
    ax = fig.add_subplot(1, 3, 2)
    for i, vf in enumerate(fracs):
        ax.errorbar(temps, mean[i], yerr=None if np.all(np.isnan(error[i])) else error[i],
                    marker="o", ms=3, capsize=2, label=f"V_f = {vf:g}")
    ax.axvline(TC[args.dims], color="k", ls=":", lw=1, label="T_c")
    ax.set_xlabel("T (J)")
    ax.set_ylabel("largest cluster / minority cells")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=7)
    ax.set_title(f"{args.size}^{args.dims}, {args.runs} run(s) per point")
    if picture is not None:
        vf, t, big, minority = picture
        if args.dims == 3:
            ax = fig.add_subplot(1, 3, 3, projection="3d")
            z, y, x = np.nonzero(big)
            ax.scatter(x, y, z, s=4, c=z, cmap="Blues", depthshade=True)
            n = args.size
            ax.set_xlim(0, n)
            ax.set_ylim(0, n)
            ax.set_zlim(0, n)
        else:
            ax = fig.add_subplot(1, 3, 3)
            img = np.where(minority, 1, 0)
            img[big] = 2
            from matplotlib.colors import ListedColormap
            ax.imshow(img, cmap=ListedColormap(["#f2f2f2", "#9ecae1", "#08306b"]),
                      interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
        ax.set_title(f"Fig. 2: largest minority cluster\nV_f = {vf:g}, T = {t:.3g}, "
                     f"{int(big.sum())} of {int(minority.sum())} minority cells", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _extent(temps, fracs):
    def edges(v):
        if v.size == 1:
            return v[0] - 0.5, v[0] + 0.5
        d = np.diff(v)
        return v[0] - d[0] / 2, v[-1] + d[-1] / 2
    return (*edges(temps), *edges(fracs))


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=16, help="side (a multiple of 4; default 16)")
    ap.add_argument("--dims", type=int, choices=(2, 3), default=3)
    ap.add_argument("--steps", type=int, default=100, help="sweeps per run (default 100)")
    ap.add_argument("--every", type=int, default=None,
                    help="label every k sweeps (default: 10 samples in the second half)")
    ap.add_argument("--runs", type=int, default=2, help="independent runs per point")
    ap.add_argument("--temperatures", type=floats, default=None,
                    help="comma-separated T (default: 6 from 0.4 T_c to 1.4 T_c)")
    ap.add_argument("--fractions", type=floats, default=[0.1, 0.2, 0.3, 0.4],
                    help="comma-separated minority fractions (default 0.1,0.2,0.3,0.4)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--backend", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--out", default="sim-examples", help="folder for kawasaki.png and .md")
    args = ap.parse_args(argv)
    if args.temperatures is None:
        args.temperatures = [round(v, 4) for v in TC[args.dims] * np.linspace(0.4, 1.4, 6)]
    if args.steps < 2:
        ap.error("--steps must be at least 2")
    return args


def main(argv=None):
    args = parse_args(argv)
    xp = np
    if args.backend == "gpu":
        import cupy as xp
    os.makedirs(args.out, exist_ok=True)
    t0 = time.perf_counter()
    mean, error, picture, every = run(args, xp)
    seconds = time.perf_counter() - t0
    text = table(args, mean, error, every, seconds)
    with open(os.path.join(args.out, "kawasaki.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(args.out, "kawasaki.json"), "w") as f:
        json.dump(numbers(args, mean, error, picture, every, seconds), f, indent=1)
        f.write("\n")
    print(text)
    try:
        plot(args, mean, error, picture, os.path.join(args.out, "kawasaki.png"))
    except ImportError:
        print("matplotlib is not installed: no kawasaki.png", file=sys.stderr)
    print(f"wrote kawasaki.md, kawasaki.json and kawasaki.png in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
