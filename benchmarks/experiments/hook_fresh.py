"""The tile kernels' unions in shared memory with a fresh node hooked at
once (unionfind.cuh, unite_fresh; MESHCCL_HOOK_FRESH 1) or through the full
union (0): a pair's first element is a run start (2-D rows, 3-D planes) or
a band run's node, made a root by tile_nodes and larger than its partner;
its first pair may hook it under the partner itself with one CAS, where
unite() first walks both finds.  (H100 experiment, 2026-11-26 evening.)

Prints the tile kernel alone (device ms behind a busy kernel) for the
2-D cases, then the standard cases' event-timed calls and device times,
two rounds in alternating order, labels equal (_common.alternate).

    python benchmarks/experiments/hook_fresh.py [--no-calls]

unite_fresh and MESHCCL_HOOK_FRESH exist only at commit e5b5efe (run this there);
measured and not kept (benchmarks/NOTES.md, results/h100-2026-11-26c/hook_fresh.log)."""
import argparse

import _common  # noqa: F401  (sys.path)
import _defines
from _common import alternate, tile_ms
from meshccl._gpu import plan
import phases as ph

VARIANTS = {"full union": 0, "fresh hook": 1}


def use(name):
    _defines.use(MESHCCL_HOOK_FRESH=VARIANTS[name])
    plan._local.__dict__.pop("plans", None)



ap = argparse.ArgumentParser()
ap.add_argument("--no-calls", action="store_true")
opt = ap.parse_args()
cases = ph.standard_cases()
print("tile kernel alone (no slots), device ms, two rounds (min-max)", flush=True)
for name, a in cases:
    for c in sorted({1, a.ndim}):
        row = {v: [] for v in VARIANTS}
        for rnd in range(2):
            for v in (list(VARIANTS) if rnd == 0 else list(VARIANTS)[::-1]):
                use(v)
                row[v].append(tile_ms(a, c))
        print(f"{name:22s} c={c} | " + " | ".join(f"{v}: {min(t):.4f}-{max(t):.4f}"
                                                 for v, t in row.items()), flush=True)
if not opt.no_calls:
    alternate(cases, VARIANTS, use)
use("full union")
