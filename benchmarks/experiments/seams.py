"""The 3-D pairs across tile columns' x / y faces: meshccl_runs3d_seams (a
warp walks a seam through a brick's planes) against mesh23.cu's border
kernel on the run bricks (a thread per face cell), phases of the standard
3-D cases, twice each (H200 experiment, 2026-11-24)."""
import _common  # noqa: F401  (sys.path)
from meshccl._gpu import mesh23
import phases as ph

cases = ph.standard_cases(dims=(3,))
for seams in (False, True, False, True):
    mesh23.RUNS_3D_SEAMS = seams
    ph.report("seams " if seams else "border", cases, keys=("tile", "border", "zface"))
mesh23.RUNS_3D_SEAMS = True
