"""The physics checks of tests/test_sim.py, with their numbers printed; Swendsen-Wang vs Metropolis near T_c.

    python examples/sim_physics.py            # NumPy (the CPU), as the tests (< 1 min)
    python examples/sim_physics.py --backend gpu      # the same runs on CuPy (same spins)
    python examples/sim_physics.py --size 32 --sweeps 4   # larger, longer (x4)
    python examples/sim_physics.py --backend gpu --size 64 --steps 40000 --out docs/img/sim

2-D Ising model, L x L torus, fixed seeds, cold start, 200 sweeps of
burn-in; error bars from 32 bin means (meshccl.sim.analysis.binning),
autocorrelation times by Sokal's window (analysis.autocorrelation_time):

- T = 2.0: <|m|> against Onsager's spontaneous magnetisation, <E>/N
  against the exact L x L value;
- T = T_c: <E>/N against the exact L x L value (Kaufman; Ferdinand and
  Fisher) and the infinite lattice's -sqrt(2); tau_int of |m| and E for
  Swendsen-Wang and Metropolis.

Writes into ``--out``: ``autocorrelation.png`` (at T_c: the first sweeps of
|m| for both dynamics, and the autocorrelation functions rho(t) of |m| and
E from ``meshccl.sim.analysis.autocorrelation``, with each tau_int) and
``sim_physics.md`` (the lines printed) and ``sim_physics.json`` (the
same numbers in full, the times per sweep apart under ``machine``, for
``docs/make_figures.py --check``).  ``--steps N`` runs N sweeps in
every run instead of the table's (3000 / 4000 at T = 2, 4000 / 12000 at
T_c, times ``--sweeps``).
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np

from meshccl.sim import Ising, analysis, exact

SWEEPS = {(2.0, "swendsen-wang"): 3000, (2.0, "metropolis"): 4000,
          ("tc", "swendsen-wang"): 4000, ("tc", "metropolis"): 12000}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=16)
    ap.add_argument("--sweeps", type=float, default=1.0, help="multiply the sweeps by this")
    ap.add_argument("--steps", type=int, default=None,
                    help="sweeps of every run (default: the table's, times --sweeps)")
    ap.add_argument("--backend", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--gpu", action="store_true", help="the same as --backend gpu")
    ap.add_argument("--out", default="sim-examples",
                    help="folder for autocorrelation.png and sim_physics.md")
    args = ap.parse_args(argv)
    gpu = args.gpu or args.backend == "gpu"
    xp = np
    if gpu:
        import cupy as xp
    size = args.size
    tc = exact.CRITICAL_TEMPERATURE
    lines = [f"{size} x {size} torus, {'CuPy' if gpu else 'NumPy'}"]
    print(lines[0])
    at_tc = {}
    runs, ms_per_sweep = [], {}
    for (which, algorithm), sweeps in SWEEPS.items():
        t = 2.0 if which == 2.0 else tc
        sweeps = args.steps if args.steps else int(sweeps * args.sweeps)
        sim = Ising((size, size), temperature=t, algorithm=algorithm, seed=1, start="cold", xp=xp)
        sim.run(200)
        t0 = time.perf_counter()
        out = sim.run(sweeps, record=("energy", "magnetisation"))
        per = (time.perf_counter() - t0) / sweeps * 1e3
        e, m = out["energy"], np.abs(out["magnetisation"])
        (em, ee), (mm, me) = analysis.binning(e), analysis.binning(m)
        (te, tee), (tm, tme) = analysis.autocorrelation_time(e), analysis.autocorrelation_time(m)
        exact_e = exact.energy_per_spin(t, size)
        run = {"temperature": t, "algorithm": algorithm, "sweeps": sweeps,
               "energy_per_spin": [em, ee], "exact_energy_per_spin": exact_e,
               "abs_magnetisation": [mm, me]}
        ms_per_sweep[f"T = {t:.6f} {algorithm}"] = per
        line = (f"T = {t:.6f} {algorithm:13s} {sweeps:6d} sweeps ({per:.2f} ms each): "
                f"E/N = {em:.5f} +- {ee:.5f} (exact {exact_e:.5f}, {(em - exact_e) / ee:+.1f} sigma)")
        if which == 2.0:
            ms = exact.spontaneous_magnetisation(t)
            run["onsager"] = ms
            line += f"; <|m|> = {mm:.5f} +- {me:.5f} (Onsager {ms:.5f}, {(mm - ms) / me:+.1f} sigma)"
        else:
            line += (f" [infinite lattice {-math.sqrt(2):.5f}]; tau_int |m| = {tm:.2f} +- {tme:.2f}, "
                     f"E = {te:.2f} +- {tee:.2f} sweeps")
            run.update(tau_int_abs_magnetisation=[tm, tme], tau_int_energy=[te, tee])
            at_tc[algorithm] = {"m": m, "e": e, "tau_m": (tm, tme), "tau_e": (te, tee),
                                "ms_per_sweep": per}
        print(line, flush=True)
        lines.append(line)
        runs.append(run)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "sim_physics.md"), "w") as f:
        f.write("\n\n".join(lines) + "\n")
    # the numbers of the table and the picture's legends, in full; what
    # depends on the machine (time per sweep) under "machine"
    numbers = {"figure": "autocorrelation.png",
               "parameters": {"size": size, "backend": "gpu" if gpu else "cpu", "seed": 1,
                              "start": "cold", "burn_in": 200},
               "results": runs,
               "machine": {"ms_per_sweep": ms_per_sweep}}
    with open(os.path.join(args.out, "sim_physics.json"), "w") as f:
        json.dump(numbers, f, indent=1)
        f.write("\n")
    try:
        plot(at_tc, size, gpu, os.path.join(args.out, "autocorrelation.png"))
    except ImportError:
        print("matplotlib is not installed: no autocorrelation.png", file=sys.stderr)
    print(f"wrote sim_physics.md, sim_physics.json and autocorrelation.png in {args.out}")


def plot(at_tc, size, gpu, path):
    """At T_c: |m| against sweeps, and rho(t) of |m| and E, for both dynamics."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"swendsen-wang": "tab:blue", "metropolis": "tab:red"}
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    for algorithm, r in at_tc.items():
        c = colours[algorithm]
        n = min(500, r["m"].size)
        axes[0].plot(np.arange(n), r["m"][:n], color=c, lw=0.8, label=algorithm)
        for ax, key, tau in ((axes[1], "m", r["tau_m"]), (axes[2], "e", r["tau_e"])):
            rho = analysis.autocorrelation(r[key])
            lag = min(rho.size, max(20, int(8 * tau[0]) + 1))
            ax.plot(np.arange(lag), rho[:lag], color=c, marker=".", ms=3,
                    label=f"{algorithm}: tau_int = {tau[0]:.2f} ± {tau[1]:.2f}")
    axes[0].set_xlabel("sweep")
    axes[0].set_ylabel("|m|")
    axes[0].set_title(f"|m| at T_c, {size}² torus (first sweeps)")
    axes[0].legend(fontsize=8)
    for ax, name in ((axes[1], "|m|"), (axes[2], "E")):
        ax.set_yscale("log")
        ax.set_ylim(1e-2, 1.1)
        ax.set_xlabel("lag t (sweeps)")
        ax.set_ylabel(f"rho(t) of {name}")
        ax.set_title(f"autocorrelation of {name} at T_c")
        ax.legend(fontsize=8)
    fig.suptitle(f"Swendsen-Wang vs Metropolis at T_c = 2.2692, {size} x {size}, "
                 f"{'GPU (CuPy)' if gpu else 'CPU (NumPy)'}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
