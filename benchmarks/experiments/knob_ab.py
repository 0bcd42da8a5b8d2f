"""One entry of a dict of knobs in meshccl/_gpu/mesh23.py set to each of
several values, on the 2-D standard cases (or 3-D with --3d): call /
device times under ab-alternation, labels equal (a re-check of an older
tuning on the kernels as they are).  (H200 experiment, 2026-11-25.)

    python benchmarks/experiments/knob_ab.py RUNS_PREFETCH "(2, 2)" 0 1 2
    python benchmarks/experiments/knob_ab.py RUNS_LABEL_CELLS 4 4 8 --3d"""
import ast
import sys

from _common import alternate
from meshccl._gpu import mesh23, plan
import phases as ph

args = [a for a in sys.argv[1:] if a != "--3d"]
name, key, values = args[0], ast.literal_eval(args[1]), [ast.literal_eval(v) for v in args[2:]]
knob = getattr(mesh23, name)
VARIANTS = {f"{name}[{key}]={v}": v for v in values}


def use(variant):
    knob[key] = VARIANTS[variant]
    plan._local.__dict__.pop("plans", None)


cases = ph.standard_cases((2, 3) if "--3d" in sys.argv else (2,))
alternate(cases, VARIANTS, use, conns=lambda x: (1, x.ndim))
