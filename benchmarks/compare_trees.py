"""Before / after: meshccl from two source trees, side by side on one GPU.

A redesign must keep every label and every standard case's time.  This
script times ``meshccl.label`` on CuPy input for the standard cases
(``bench.py``'s) and the small-image latency, once per source tree per
round, each tree in its own process (the two packages share a name), the
trees alternating round by round so that clock drift hits both alike.
Every tree's labels are hashed; a case whose hashes differ between trees
is a failure (exit status 1).

    git archive <commit> meshccl kernels | tar -x -C /tmp/before
    python benchmarks/compare_trees.py --tree before=/tmp/before --tree after=. \\
        --rounds 3 --out out/compare

The first tree is the reference of the ratios.  A tree is the folder that
holds its ``meshccl`` package (installed copies are ignored: the tree goes
first on ``PYTHONPATH``).  Writes ``compare.json`` and ``compare.md`` in
``--out`` and prints the table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def worker(tree: str, cases_spec: str, quick: bool, repeat: int) -> None:
    """In a child process: time every case with the meshccl on sys.path and
    print one JSON line per case."""
    # an installed meshccl (an editable install's import hook, or a develop
    # install's path entry put before PYTHONPATH) must not win over the tree
    sys.meta_path[:] = [f for f in sys.meta_path
                        if not str(getattr(f, "__module__", "")).startswith("__editable__")]
    sys.path.insert(0, tree)
    import meshccl  # (first: bench.py puts its own repository first on sys.path)

    sys.path.insert(1, str(HERE))
    import bench
    import cupy

    cache = bench.ArrayCache(cupy)
    # the standard cases, and the shapes set's where --cases names them
    known = bench.standard_cases(quick) + (bench.shape_cases(4 if quick else 1)
                                           if cases_spec else [])
    for case in bench.select_cases(known, cases_spec):
        x = cache.get(case)
        def call():
            return meshccl.label(x, connectivity=case.connectivity)

        labels = call()
        digest = hashlib.sha1(cupy.asnumpy(labels).tobytes()).hexdigest()
        del labels
        seconds, runs = bench.time_gpu(call, min_runs=repeat, min_time=0.5)
        print(json.dumps({"case": case.name, "seconds": seconds, "runs": runs,
                          "hash": digest}), flush=True)
    x = cupy.asarray(bench.patterns.blobs((256, 256)))
    seconds, runs = bench.time_latency(lambda: meshccl.label(x),
                                       cupy.cuda.Device().synchronize)
    digest = hashlib.sha1(cupy.asnumpy(meshccl.label(x)).tobytes()).hexdigest()
    print(json.dumps({"case": "latency blobs-256^2 (wall)", "seconds": seconds, "runs": runs,
                      "hash": digest}), flush=True)
    print(json.dumps({"meshccl": meshccl.__file__}), flush=True)


def tree_rows(path: Path, script, worker_args, key) -> dict:
    """Run ``script --worker PATH worker_args...`` in a process that imports
    meshccl from the tree at ``path`` (first on PYTHONPATH), and return its
    JSON rows (one per stdout line) keyed by ``key(row)``; the worker's
    ``{"meshccl": file}`` line must name a file of that tree.  Shared by
    this script and ``float_ratio.py``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(path)] + [p for p in env.get("PYTHONPATH", "")
                                                        .split(os.pathsep) if p])
    cmd = [sys.executable, str(Path(script).resolve()), "--worker", str(path)] + list(worker_args)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=str(path))
    if out.returncode != 0:
        raise SystemExit(f"tree {path}: worker failed\n{out.stderr[-4000:]}")
    rows, where = {}, None
    for line in out.stdout.splitlines():
        rec = json.loads(line)
        if "meshccl" in rec:
            where = rec["meshccl"]
        else:
            rows[key(rec)] = rec
    if where is None or not Path(where).resolve().is_relative_to(Path(path).resolve()):
        raise SystemExit(f"tree {path}: imported meshccl from {where}, not from the tree "
                         "(an editable install's import hook wins over PYTHONPATH: "
                         "`pip uninstall meshccl` first)")
    return rows


def run_tree(path: Path, args) -> dict:
    return tree_rows(path, __file__, ["--cases", args.cases, "--repeat", str(args.repeat)]
                     + (["--quick"] if args.quick else []), lambda rec: rec["case"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=PATH",
                    help="a source tree (repeat; the first is the reference)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=30, help="at least this many timed calls")
    ap.add_argument("--cases", default="",
                    help="bench.py case names or patterns, of the standard and the shapes "
                         "set (default: every standard case)")
    ap.add_argument("--quick", action="store_true", help="every side / 4")
    ap.add_argument("--out", default="", help="folder for compare.json and compare.md")
    ap.add_argument("--worker", metavar="TREE", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker, args.cases, args.quick, args.repeat)
        return 0
    trees = [(t.split("=", 1)[0], Path(t.split("=", 1)[1]).resolve()) for t in args.tree]
    if len(trees) < 2:
        raise SystemExit("give at least two --tree NAME=PATH")
    runs = {name: [] for name, _ in trees}
    for r in range(args.rounds):
        order = trees if r % 2 == 0 else trees[::-1]
        for name, path in order:
            print(f"round {r + 1}: {name} ({path})", file=sys.stderr, flush=True)
            runs[name].append(run_tree(path, args))
    ref = trees[0][0]
    cases = list(runs[ref][0])
    table, failed = [], False
    for case in cases:
        row = {"case": case}
        hashes = set()
        for name, _ in trees:
            row[name] = statistics.median(rnd[case]["seconds"] for rnd in runs[name])
            hashes.update(rnd[case]["hash"] for rnd in runs[name])
        row["identical"] = len(hashes) == 1
        failed |= not row["identical"]
        table.append(row)
    names = [n for n, _ in trees]
    lines = ["| case | " + " | ".join(f"{n} (ms)" for n in names) + " | "
             + " | ".join(f"{n} / {ref}" for n in names[1:]) + " | labels |",
             "|---|" + "---:|" * (2 * len(names) - 1) + "---|"]
    for row in table:
        lines.append(f"| {row['case']} | " + " | ".join(f"{row[n] * 1e3:.4f}" for n in names)
                     + " | " + " | ".join(f"{row[n] / row[ref]:.3f}" for n in names[1:])
                     + f" | {'identical' if row['identical'] else 'DIFFER'} |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.md").write_text(text + "\n")
        (out / "compare.json").write_text(json.dumps({"trees": {n: str(p) for n, p in trees},
                                                      "rounds": args.rounds, "rows": table},
                                                     indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
