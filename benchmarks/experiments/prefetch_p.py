"""The run tile kernels prefetching into L2 the sectors of P that their run
starts' piece roots will be stored in (mesh23.RUNS_PREFETCH in its mode 1,
a prefetch per sector; variant 1: runs2d.cu prefetches at every
connectivity, 3: runs3d.cu too), against storing into
sectors that may not be there (0):
labels compared, then the phases of the standard 2-D and 3-D cases twice.  Why: 4-byte stores into sectors
not in L2 measured slower than a load and a store (meshccl_label_pieces
without its loads, benchmarks/NOTES.md) (H200 experiment, 2026-11-24).

    python benchmarks/experiments/prefetch_p.py [VARIANT ...]   (0, 1, 3, default)"""
from _common import labels_agree
import phases as ph

from meshccl._gpu import mesh23, plan

cases = ph.standard_cases()
VARIANTS = (0, 1, 3, "default")


DEFAULT = dict(mesh23.RUNS_PREFETCH)


def fresh(on):
    for d, c in mesh23.RUNS_PREFETCH:
        on_here = bool(on & (1 if d == 2 else 2)) if on != "default" else None
        mesh23.RUNS_PREFETCH[(d, c)] = DEFAULT[(d, c)] if on_here is None else int(on_here)
    plan._local.__dict__.pop("plans", None)


labels_agree(cases, VARIANTS, fresh)
import sys  # noqa: E402

timed = [v if v == "default" else int(v) for v in sys.argv[1:]] or VARIANTS
for rep in range(2):
    for on in timed:
        fresh(on)
        ph.report(f"prefetch={on}", cases)
mesh23.RUNS_PREFETCH.update(DEFAULT)
