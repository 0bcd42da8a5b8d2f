"""Blocks of the 2-D tile kernel one tile row tall (8 x 1 tiles, 256 x 32
cells) against two (4 x 2 tiles, 128 x 64 cells, the inner tile row's pairs
united in shared memory too): mesh23.RUNS_2D_STRIP_ROWS 1 and 2, labels
compared, then the phases of the standard 2-D cases twice (H200
experiment, 2026-11-24).

    python benchmarks/experiments/strip_rows.py"""
import _common  # noqa: F401  (sys.path)
import cupy
import phases as ph

import meshccl
from meshccl._gpu import mesh23, plan

cases = ph.standard_cases(dims=(2,))


def use(rows):
    mesh23.RUNS_2D_STRIP_ROWS = rows
    plan._local.__dict__.pop("plans", None)


for name, a in cases:
    for c in (1, 2):
        got = []
        for rows in (1, 2):
            use(rows)
            got.append(meshccl.label(a, connectivity=c))
        same = bool(cupy.array_equal(got[0], got[1]))
        print(f"{name} c={c}: labels {'equal' if same else 'DIFFER'}", flush=True)
for rep in range(2):
    for rows in (1, 2):
        use(rows)
        ph.report(f"rows={rows}", cases)
use(2)
