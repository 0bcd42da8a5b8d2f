"""The phases (benchmarks/phases.py) of whole source trees on one machine,
as ab_trees.py times their calls: each tree (a folder holding meshccl/ and
kernels/) in a process of its own, twice in alternating order.  (H200
experiment, 2026-11-25.)

    python benchmarks/experiments/ab_phases.py old .   [--only NAME]"""
import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(1, sys.argv[2])
import meshccl
assert meshccl.__file__.startswith(sys.argv[1]), meshccl.__file__
from pathlib import Path
from meshccl._gpu import loader
loader.kernel_dir = lambda: Path(sys.argv[1]) / "kernels"
import phases as ph
cases = [(n, a) for n, a in ph.standard_cases() if sys.argv[3] in n]
ph.report(sys.argv[4], cases)
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trees", nargs="+")
    ap.add_argument("--only", default="")
    ap.add_argument("--rounds", type=int, default=2)
    opts = ap.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(HERE.parent)]
                                        + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    for r in range(opts.rounds):
        order = opts.trees if r % 2 == 0 else opts.trees[::-1]
        for tree in order:
            root = str(Path(tree).resolve())
            subprocess.run([sys.executable, "-c", CHILD, root, str(HERE), opts.only,
                            Path(tree).name or tree], env=env, check=True)


if __name__ == "__main__":
    main()
