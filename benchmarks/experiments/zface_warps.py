"""Warps (bricks) per block of meshccl_runs3d_zface (mesh23.RUNS_ZFACE_WARPS):
its phase time on the standard 3-D cases (H200 experiment, 2026-11-24)."""
import _common  # noqa: F401  (sys.path)
from meshccl._gpu import mesh23
import phases as ph

cases = ph.standard_cases(dims=(3,))
for nw in (1, 2, 4, 8):
    mesh23.RUNS_ZFACE_WARPS = nw
    ph.report(f"warps={nw}", cases, keys=("zface",))
