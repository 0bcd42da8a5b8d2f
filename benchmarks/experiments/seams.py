"""The 3-D pairs across tile columns' x / y faces: meshccl_runs3d_seams (a
warp walks a seam through a brick's planes) against mesh23.cu's border
kernel on the run bricks (a thread per face cell), the seam kernel walking
the planes given as arguments per warp (default 4), phases of the standard
3-D cases, twice each (H200 experiment, 2026-11-24)."""
import _common  # noqa: F401  (sys.path)
from meshccl._gpu import mesh23
import phases as ph

import sys

cases = ph.standard_cases(dims=(3,))
walks = [int(w) for w in sys.argv[1:]] or [4]
for rep in range(2):
    mesh23.RUNS_3D_SEAMS = False
    ph.report("border  ", cases, keys=("border",))
    mesh23.RUNS_3D_SEAMS = True
    for w in walks:
        mesh23.RUNS_SEAM_PLANES = {1: w, 2: w, 3: w}
        ph.report(f"seams {w:2d}", cases, keys=("border",))
mesh23.RUNS_SEAM_PLANES = {1: 4, 2: 4, 3: 4}
