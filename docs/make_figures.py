"""Make every picture in docs/img/ from the current code, or check that they would not change.

    python docs/make_figures.py            # make figures: regenerate docs/img/sim/
    python docs/make_figures.py --check    # make figures-check: regenerate the numbers into a
                                           # temporary folder, compare with the committed ones

Each takes about 75 s on a 2-core machine.

Each picture comes from one example run on the CPU with fixed seeds and
the arguments in ``FIGURES`` below (sizes that finish in a few minutes on
a 2-core machine; benchmarks/README.md gives the GPU commands for larger
versions).  Every example writes, beside its PNG and markdown table, a
JSON file of the numbers the picture shows::

    {"figure": ..., "parameters": {...}, "results": {...}, "machine": {...}}

``--check`` compares everything but ``machine`` (times, dates, the
command line): integers, strings and booleans exactly, floats to a
relative tolerance (``--rtol``, default 1e-6), since the simulations are
deterministic for a seed but a floating-point sum may differ in its last
bits between NumPy builds.  A null on either side is compared with
nothing: it stands for a value that was not measured in that run (a
method stopped by a time cap).  The PNG bytes are not compared (they
differ between matplotlib and FreeType versions).  The check exits with
status 1 and lists every difference when a committed number no longer
matches what the code gives.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: where the pictures and their number files are committed
OUT = Path("docs/img/sim")

#: (number file, PNG, command): each example with its arguments, written into --out
FIGURES = [
    ("quench.json", "quench.png",
     ["examples/sim_quench.py", "--size", "256", "--steps", "4096", "--seed", "1",
      "--backend", "cpu"]),
    ("kawasaki.json", "kawasaki.png",
     ["examples/sim_kawasaki.py", "--size", "16", "--steps", "100", "--runs", "2", "--seed", "1",
      "--backend", "cpu"]),
    ("sim_physics.json", "autocorrelation.png",
     ["examples/sim_physics.py", "--size", "16", "--backend", "cpu"]),
    # the spiral's sizes up to 4096 cost only the union-find's calls: every
    # iterative method passes the 2 s cap by N = 2048 and is not run beyond
    ("hawick_spiral.json", "hawick_spiral.png",
     ["examples/hawick_experiments.py", "spiral", "--size", "4096", "--cap", "2",
      "--backend", "cpu"]),
]


def compare(committed, fresh, rtol=1e-6, where=""):
    """Differences between the compared parts of two number files.

    Parameters
    ----------
    committed, fresh : object
        Loaded JSON: dicts, lists, strings, numbers, booleans or None.  At
        the top level (``where`` empty) the key ``"machine"`` is skipped.
    rtol : float
        Floats match when ``|a - b| <= rtol * max(|a|, |b|)`` (both NaN
        match too); integers, strings and booleans must be equal.
    where : str
        The path of ``committed`` inside the file, for the messages.

    Returns
    -------
    list of str
        One line per difference, naming its path and both values; empty
        when the two match.  None on either side matches anything (a value
        not measured in that run).

    Examples
    --------
    >>> compare({"a": [1, 2.0], "machine": 1}, {"a": [1, 2.0 + 1e-12], "machine": 2})
    []
    >>> compare({"tau": 3.14}, {"tau": 2.90})
    ['tau: committed 3.14, now 2.9 (relative difference 0.076 > 1e-06)']
    """
    name = where or "(top)"
    if committed is None or fresh is None:
        return []
    if isinstance(committed, dict) and isinstance(fresh, dict):
        out = []
        for key in list(committed) + [k for k in fresh if k not in committed]:
            if not where and key == "machine":
                continue
            path = f"{where}.{key}" if where else str(key)
            if key not in fresh:
                out.append(f"{path}: committed {_short(committed[key])}, now missing")
            elif key not in committed:
                out.append(f"{path}: not committed, now {_short(fresh[key])}")
            else:
                out += compare(committed[key], fresh[key], rtol, path)
        return out
    if isinstance(committed, list) and isinstance(fresh, list):
        if len(committed) != len(fresh):
            return [f"{name}: committed {len(committed)} entries, now {len(fresh)}"]
        out = []
        for i, (a, b) in enumerate(zip(committed, fresh)):
            out += compare(a, b, rtol, f"{where}[{i}]")
        return out
    if _floats(committed, fresh):
        a, b = float(committed), float(fresh)
        if a == b or (math.isnan(a) and math.isnan(b)):
            return []
        scale = max(abs(a), abs(b))
        diff = abs(a - b) / scale if scale and math.isfinite(scale) else math.inf
        if diff <= rtol:
            return []
        return [f"{name}: committed {a!r}, now {b!r} (relative difference {diff:.2g} > {rtol:g})"]
    if type(committed) is not type(fresh) or committed != fresh:
        return [f"{name}: committed {_short(committed)}, now {_short(fresh)}"]
    return []


def _floats(a, b):
    """Whether ``a`` and ``b`` are compared with a tolerance: two numbers,
    at least one of them a float, neither a boolean."""
    if isinstance(a, bool) or isinstance(b, bool):
        return False
    numbers = (int, float)
    return (isinstance(a, numbers) and isinstance(b, numbers)
            and (isinstance(a, float) or isinstance(b, float)))


def _short(value, width=60):
    """``value`` as JSON, cut to ``width`` characters for a message."""
    text = json.dumps(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def generate(out, quiet=False):
    """Run every example of ``FIGURES`` into the folder ``out``.

    Parameters
    ----------
    out : pathlib.Path
        Folder for the PNGs, tables and number files (relative to the
        repository root, or absolute).
    quiet : bool
        Keep the examples' output unless one fails.

    Returns
    -------
    dict
        Seconds each example took, by number file.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.setdefault("MPLBACKEND", "Agg")
    seconds = {}
    for numbers, _, command in FIGURES:
        argv = [sys.executable, *command, "--out", str(out)]
        print(f"$ python {' '.join(command)} --out {out}", flush=True)
        t0 = time.perf_counter()
        done = subprocess.run(argv, cwd=ROOT, env=env, text=True,
                              stdout=subprocess.PIPE if quiet else None,
                              stderr=subprocess.STDOUT if quiet else None)
        seconds[numbers] = time.perf_counter() - t0
        if done.returncode:
            if quiet:
                print(done.stdout)
            raise SystemExit(f"{command[0]} failed (exit status {done.returncode})")
        print(f"  {seconds[numbers]:.1f} s", flush=True)
    return seconds


def check(rtol):
    """Regenerate the numbers into a temporary folder and compare them.

    Parameters
    ----------
    rtol : float
        Relative tolerance for floats (see ``compare``).

    Returns
    -------
    int
        0 when every committed number file matches, 1 otherwise.
    """
    problems = []
    with tempfile.TemporaryDirectory(prefix="meshccl-figures-") as tmp:
        generate(Path(tmp), quiet=True)
        for numbers, picture, command in FIGURES:
            committed_path = ROOT / OUT / numbers
            if not (ROOT / OUT / picture).exists():
                problems.append(f"{OUT / picture}: not committed")
            if not committed_path.exists():
                problems.append(f"{OUT / numbers}: not committed")
                continue
            committed = json.loads(committed_path.read_text())
            fresh = json.loads((Path(tmp) / numbers).read_text())
            problems += [f"{OUT / numbers}: {line}" for line in compare(committed, fresh, rtol)]
    if problems:
        print(f"\n{len(problems)} difference(s) between the committed numbers and the code's:")
        print("\n".join("  " + p for p in problems))
        print("\nIf the change is meant, run `make figures` and commit docs/img/ "
              "(and the numbers the docs quote).")
        return 1
    print(f"\nthe pictures in {OUT} match the code (numbers of {len(FIGURES)} figures compared)")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="regenerate the numbers into a temporary folder and compare them with "
                         "the committed ones (exit status 1 on a difference)")
    ap.add_argument("--rtol", type=float, default=1e-6,
                    help="relative tolerance for floats in --check (default 1e-6)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if args.check:
        status = check(args.rtol)
    else:
        generate(OUT)
        status = 0
        print(f"wrote the pictures, tables and number files in {OUT}")
    print(f"{time.perf_counter() - t0:.0f} s in all")
    return status


if __name__ == "__main__":
    sys.exit(main())
