"""The tiles of a runs2d.cu block uniting across their inner borders in
shared memory (mesh23.RUNS_2D_STRIPS, pieces are components of a strip of 8
tiles) against the border kernel taking every tile border: phases of the
standard 2-D cases, twice each, the labels compared (H200 experiment,
2026-11-24)."""
import _common  # noqa: F401  (sys.path)
import cupy
import phases as ph

import meshccl
from meshccl._gpu import mesh23, plan

cases = ph.standard_cases(dims=(2,))
for name, a in cases:
    for c in (1, 2):
        got = []
        for on in (False, True):
            mesh23.RUNS_2D_STRIPS = on
            plan._local.__dict__.pop("plans", None)
            got.append(meshccl.label(a, connectivity=c))
        if not bool(cupy.array_equal(got[0], got[1])):
            print(f"{name} c={c}: labels DIFFER with and without strips", flush=True)
for rep in range(2):
    for on in (False, True):
        mesh23.RUNS_2D_STRIPS = on
        ph.report(f"strips {'on ' if on else 'off'}", cases)
mesh23.RUNS_2D_STRIPS = True
