"""A/B timing of whole source trees on one machine: each tree (a folder
holding ``meshccl/`` and ``kernels/``, e.g. an older commit unpacked with
``git archive <commit> meshccl kernels | tar -x -C old``) labels the
standard cases in a process of its own, twice in alternating order; per
case and connectivity one meshccl.label call timed with CUDA events as
bench.py does ("call") and the same behind a busy kernel ("gpu"), and a
digest of the labels, which must agree between trees (H200 experiment,
2026-11-24).  With --phases, each tree's phases (benchmarks/phases.py)
instead (2026-11-25).

    python benchmarks/experiments/ab_trees.py old .   [--only NAME] [--phases]"""
import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import sys, hashlib
sys.path.insert(0, sys.argv[1])
sys.path.insert(1, sys.argv[2])
import meshccl
assert meshccl.__file__.startswith(sys.argv[1]), meshccl.__file__
# the tree's own kernels (an editable install may answer for meshccl._kernels)
from pathlib import Path
from meshccl._gpu import loader
loader.kernel_dir = lambda: Path(sys.argv[1]) / "kernels"
from _common import device_ms, time_ms
import phases as ph
if sys.argv[5] == "phases":
    ph.report(sys.argv[4], [(n, a) for n, a in ph.standard_cases() if sys.argv[3] in n])
    raise SystemExit
for name, a in ph.standard_cases():
    if sys.argv[3] not in name:
        continue
    for c in (1, a.ndim):
        f = lambda: meshccl.label(a, connectivity=c)
        digest = hashlib.sha1(f().get().tobytes()).hexdigest()[:10]
        print(f"{sys.argv[4]:8s} {name:20s} c={c} call {time_ms(f):.4f} gpu {device_ms(f):.4f} "
              f"labels {digest}", flush=True)
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trees", nargs="+")
    ap.add_argument("--only", default="")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--phases", action="store_true", help="each tree's phases, not its calls")
    opts = ap.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(HERE.parent)]
                                        + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    for r in range(opts.rounds):
        order = opts.trees if r % 2 == 0 else opts.trees[::-1]
        for tree in order:
            root = str(Path(tree).resolve())
            subprocess.run([sys.executable, "-X", "faulthandler", "-c", CHILD, root, str(HERE), opts.only,
                            Path(tree).name or tree, "phases" if opts.phases else "calls"],
                           env=env, check=True)


if __name__ == "__main__":
    main()
