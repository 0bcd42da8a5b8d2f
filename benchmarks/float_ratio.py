"""Float input against uint8 on the GPU: whole calls and each kernel.

Issue 56's target for float32 input: the plain call (``label(x)`` on a float
field, equal truncations joined) and the ``tolerance=t`` call each within
1.3x of the uint8 plain call.  Per shape, this script times three calls at
connectivity 1, ``background=-1`` (CUDA events, median of ``--reps``):

- ``uint8 plain``: random spins at half filling (bench.py's lattice set);
- ``float32 plain``: bench.py's float field (smoothed noise in [0, 16));
- ``float32 tolerance``: the same field, ``tolerance=t`` with t the median
  neighbour difference along axis 0 (bench.py's ``tolerance`` case);
- ``float32 spins plain`` and ``float32 spins tolerance`` (t = 0.5): the
  spins as float32, the same components as the uint8 call, so that the
  cell type's and the tolerance chain's costs show apart from the field's;

and then each kernel of each call's chain on its own (the launches of
``meshccl._gpu.chains.program``, CUDA events between them), so that a ratio
can be split into the kernels that make it.  Each call's labels are hashed.

    python benchmarks/float_ratio.py [--shapes 4096^2,256^3,512^3] [--reps 15]
    python benchmarks/float_ratio.py --tree base=/tmp/base --tree new=. --out DIR

With ``--tree`` (at least two), every tree runs in its own process (the
packages share a name), the trees alternating over ``--rounds``; the first
tree is the reference of the A/B ratios, and a call whose labels differ
between trees is reported (exit status 1).  ``DIR`` gets ``float_ratio.md``
and ``float_ratio.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_trees import tree_rows  # noqa: E402

HERE = Path(__file__).resolve().parent


def _shape(name):
    side, _, nd = name.partition("^")
    return (int(side),) * int(nd or 1)


def worker(tree, shapes, reps):
    """Time every call and kernel with the meshccl of ``tree`` (or the one
    on sys.path); print one JSON line per call."""
    if tree:
        sys.meta_path[:] = [f for f in sys.meta_path
                            if not str(getattr(f, "__module__", "")).startswith("__editable__")]
        sys.path.insert(0, tree)
    import meshccl  # (before bench.py, which puts its repository first)

    sys.path.insert(1, str(HERE))
    import cupy
    import numpy as np

    import bench
    from meshccl import _validate
    from meshccl._gpu import chains, image_plain
    from timing import median_events_ms

    for name in shapes:
        shape = _shape(name)
        inp = bench.LatticeInputs(shape, cupy)
        field, tol = inp["field"], inp["tolerance"]
        spins = inp["spins"].astype(cupy.uint8)
        calls = {"uint8 plain": (spins, {}),
                 "float32 plain": (field, {}),
                 "float32 tolerance": (field, {"tolerance": tol}),
                 # the spins as floats: the cell type's cost on the same components,
                 # and the tolerance chain's (0.5: equal spins join) on them
                 "float32 spins plain": (spins.astype(cupy.float32), {}),
                 "float32 spins tolerance": (spins.astype(cupy.float32), {"tolerance": 0.5})}
        for call, (x, kw) in calls.items():
            def run():
                return meshccl.label(x, connectivity=1, background=-1, **kw)

            labels = run()
            digest = hashlib.sha1(cupy.asnumpy(labels).tobytes()).hexdigest()
            del labels
            ms = median_events_ms(run, reps)
            # the chain's kernels one by one
            prob = _validate.prepare(x, -1, 1, None, tolerance=kw.get("tolerance"))
            case = chains.select(prob)
            buffers = image_plain.scratch(x.size, prob.work_dtype, case.shape)
            out = cupy.empty(x.size, dtype=prob.work_dtype)
            steps = chains.program(case, prob, buffers=buffers)
            ev = [cupy.cuda.Event() for _ in range(len(steps) + 1)]
            times = [[] for _ in steps]
            for rep in range(reps + 1):
                ev[0].record()
                for k, (_, launch) in enumerate(steps):
                    launch(prob.values, out, None, None)
                    ev[k + 1].record()
                ev[-1].synchronize()
                if rep:
                    for k in range(len(steps)):
                        times[k].append(cupy.cuda.get_elapsed_time(ev[k], ev[k + 1]))
            kernels = {s: float(np.median(t)) for (s, _), t in zip(steps, times)}
            print(json.dumps({"shape": name, "call": call, "ms": ms, "hash": digest,
                              "chain": case.chain.name, "tolerance": kw.get("tolerance"),
                              "kernels": kernels}), flush=True)
    print(json.dumps({"meshccl": meshccl.__file__}), flush=True)


def run_tree(path, args):
    return tree_rows(path, __file__, ["--shapes", args.shapes, "--reps", str(args.reps)],
                     lambda rec: (rec["shape"], rec["call"]))


def table(runs, names):
    """The Markdown report: per shape and call each tree's ms, its ratio to
    the uint8 plain call, the A/B ratio and the labels; then the kernels."""
    ref = names[0]
    keys = list(runs[ref][0])
    med = {n: {k: statistics.median(r[k]["ms"] for r in runs[n]) for k in keys} for n in names}
    lines = ["| shape | call | " + " | ".join(f"{n} ms | {n} × uint8" for n in names)
             + "".join(f" | {n} / {ref}" for n in names[1:]) + " | labels |",
             "|---|---|" + "---:|" * (3 * len(names) - 1) + "---|"]
    failed = False
    for shape, call in keys:
        u8 = {n: med[n][(shape, "uint8 plain")] for n in names}
        same = len({r[(shape, call)]["hash"] for n in names for r in runs[n]}) == 1
        failed |= not same
        lines.append(f"| {shape} | {call} | "
                     + " | ".join(f"{med[n][(shape, call)]:.4f} | "
                                  f"{med[n][(shape, call)] / u8[n]:.3f}" for n in names)
                     + "".join(f" | {med[n][(shape, call)] / med[ref][(shape, call)]:.3f}"
                               for n in names[1:])
                     + f" | {'identical' if same else 'DIFFER'} |")
    lines += ["", "Kernels (median ms of the round medians; each kernel timed on its own):", ""]
    for shape, call in keys:
        lines.append(f"{shape} {call} ({runs[ref][0][(shape, call)]['chain']}):")
        for kernel in runs[ref][0][(shape, call)]["kernels"]:
            vals = []
            for n in names:
                ks = [r[(shape, call)]["kernels"].get(kernel) for r in runs[n]]
                ks = [k for k in ks if k is not None]
                vals.append(f"{n} {statistics.median(ks):.4f}" if ks else f"{n} -")
            lines.append(f"  {kernel:40s} " + "  ".join(vals))
    return "\n".join(lines), failed


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="4096^2,256^3,512^3")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default="")
    ap.add_argument("--worker", metavar="TREE", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    shapes = [s for s in args.shapes.split(",") if s]
    if args.worker is not None:
        worker(args.worker, shapes, args.reps)
        return 0
    trees = [(t.split("=", 1)[0], Path(t.split("=", 1)[1]).resolve()) for t in args.tree]
    if not trees:
        trees = [("this", HERE.parent)]
    runs = {n: [] for n, _ in trees}
    for r in range(args.rounds):
        for name, path in (trees if r % 2 == 0 else trees[::-1]):
            print(f"round {r + 1}: {name} ({path})", file=sys.stderr, flush=True)
            runs[name].append(run_tree(path, args))
        # the table of the rounds so far (a run cut short keeps them)
        text, failed = table(runs, [n for n, _ in trees])
        if args.out:
            out = Path(args.out)
            out.mkdir(parents=True, exist_ok=True)
            (out / "float_ratio.md").write_text(text + "\n")
            (out / "float_ratio.json").write_text(json.dumps(
                {n: [{f"{s} | {c}": v for (s, c), v in r.items()} for r in rs]
                 for n, rs in runs.items()}, indent=1))
    print(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
