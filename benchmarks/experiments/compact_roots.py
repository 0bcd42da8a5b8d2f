"""store_piece_roots (kernels/runs.cuh): run starts 32 at a time up to
MESHCCL_COMPACT_MAX per tile, else a turn per row; nth_bit by __fns or by
popc halving (MESHCCL_SELECT_FNS).  Tile-kernel time per variant on the
standard 2-D and 3-D cases (H200 experiment, 2026-11-24).

The two macros are those of commit b85f1a8's kernels/runs.cuh (run it with
``git checkout b85f1a8 -- kernels``); the kernels now take the threshold as
a template argument chosen from these numbers (benchmarks/NOTES.md)."""
import _defines
import phases as ph

cases = ph.standard_cases()
for compact, fns in [(0, 1), (64, 1), (128, 1), (256, 1), (1024, 1), (128, 0), (1024, 0)]:
    _defines.use(MESHCCL_COMPACT_MAX=compact, MESHCCL_SELECT_FNS=fns)
    ph.report(f"max={compact:4d} fns={fns}", cases, keys=("tile",))
