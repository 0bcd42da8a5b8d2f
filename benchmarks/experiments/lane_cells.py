"""Cells per lane of meshccl_runs2d_label (mesh23.RUNS_LABEL_CELLS, int32
labels): 4 (eight lanes per tile row) against 8 (four), the label pass
("cells" phase) of the standard 2-D and 3-D cases twice (H200 experiment,
2026-11-24).

    python benchmarks/experiments/lane_cells.py"""
import _common  # noqa: F401  (sys.path)
import phases as ph

from meshccl._gpu import mesh23, plan

cases = ph.standard_cases()
for rep in range(2):
    for w in (4, 8):
        mesh23.RUNS_LABEL_CELLS[4] = w
        plan._local.__dict__.pop("plans", None)
        ph.report(f"cells/lane={w}", cases, keys=("cells",))
mesh23.RUNS_LABEL_CELLS[4] = 4
