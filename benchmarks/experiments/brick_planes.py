"""runs3d.cu bricks of 8 or 16 planes (mesh23.RUNS_3D_PLANES): phases of
the standard 3-D cases (H200 experiment, 2026-11-24)."""
import _common  # noqa: F401  (sys.path)
from meshccl._gpu import mesh23
import phases as ph

cases = ph.standard_cases(dims=(3,))
for planes in (8, 16, 8, 16):
    mesh23.RUNS_3D_PLANES = {1: planes, 2: planes, 3: planes}
    ph.report(f"planes={planes:2d}", cases)
