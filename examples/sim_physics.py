"""The physics checks of tests/test_sim.py, with their numbers printed.

    python examples/sim_physics.py            # NumPy (the CPU), as the tests
    python examples/sim_physics.py --gpu      # the same runs on CuPy (same spins)
    python examples/sim_physics.py --size 32 --sweeps 4   # larger, longer (x4)

2-D Ising model, L x L torus, fixed seeds, cold start, 200 sweeps of
burn-in; error bars from 32 bin means (meshccl.sim.analysis.binning),
autocorrelation times by Sokal's window (analysis.autocorrelation_time):

- T = 2.0: <|m|> against Onsager's spontaneous magnetisation, <E>/N
  against the exact L x L value;
- T = T_c: <E>/N against the exact L x L value (Kaufman; Ferdinand and
  Fisher) and the infinite lattice's -sqrt(2); tau_int of |m| and E for
  Swendsen-Wang and Metropolis.
"""

import argparse
import math
import time

import numpy as np

from meshccl.sim import Ising, analysis, exact

SWEEPS = {(2.0, "swendsen-wang"): 3000, (2.0, "metropolis"): 4000,
          ("tc", "swendsen-wang"): 4000, ("tc", "metropolis"): 12000}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=16)
    ap.add_argument("--sweeps", type=float, default=1.0, help="multiply the sweeps by this")
    ap.add_argument("--gpu", action="store_true", help="run on CuPy")
    args = ap.parse_args()
    xp = np
    if args.gpu:
        import cupy as xp
    size = args.size
    tc = exact.CRITICAL_TEMPERATURE
    print(f"{size} x {size} torus, {'CuPy' if args.gpu else 'NumPy'}")
    for (which, algorithm), sweeps in SWEEPS.items():
        t = 2.0 if which == 2.0 else tc
        sweeps = int(sweeps * args.sweeps)
        sim = Ising((size, size), temperature=t, algorithm=algorithm, seed=1, start="cold", xp=xp)
        sim.run(200)
        t0 = time.perf_counter()
        out = sim.run(sweeps, record=("energy", "magnetisation"))
        per = (time.perf_counter() - t0) / sweeps * 1e3
        e, m = out["energy"], np.abs(out["magnetisation"])
        (em, ee), (mm, me) = analysis.binning(e), analysis.binning(m)
        (te, tee), (tm, tme) = analysis.autocorrelation_time(e), analysis.autocorrelation_time(m)
        exact_e = exact.energy_per_spin(t, size)
        line = (f"T = {t:.6f} {algorithm:13s} {sweeps:6d} sweeps ({per:.2f} ms each): "
                f"E/N = {em:.5f} +- {ee:.5f} (exact {exact_e:.5f}, {(em - exact_e) / ee:+.1f} sigma)")
        if which == 2.0:
            ms = exact.spontaneous_magnetisation(t)
            line += f"; <|m|> = {mm:.5f} +- {me:.5f} (Onsager {ms:.5f}, {(mm - ms) / me:+.1f} sigma)"
        else:
            line += (f" [infinite lattice {-math.sqrt(2):.5f}]; tau_int |m| = {tm:.2f} +- {tme:.2f}, "
                     f"E = {te:.2f} +- {tee:.2f} sweeps")
        print(line, flush=True)


if __name__ == "__main__":
    main()
