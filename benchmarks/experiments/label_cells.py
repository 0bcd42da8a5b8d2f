"""Cells per lane of meshccl_runs2d_label (mesh23.RUNS_LABEL_CELLS, int32
labels): 4 (eight lanes per tile row) or 8 (four), the "cells" phase on the
standard cases (H200 experiment, 2026-11-24)."""
import _common  # noqa: F401  (sys.path)
from meshccl._gpu import mesh23
import phases as ph

cases = ph.standard_cases()
for w in (4, 8, 4, 8):
    mesh23.RUNS_LABEL_CELLS = {4: w, 8: 4}
    ph.report(f"cells/lane={w}", cases, keys=("cells",))
