"""How much of the 2-D tile kernel's time is P's traffic?  (H100 experiment,
2026-11-26; benchmarks/NOTES.md, "What the calls move".)

Nsight Compute (floor_gap.py) has the tile kernel of percolation 8192^2
p = .4073 c2 moving about 0.7 GB of device memory for a 67 MB input: the
piece roots go to P at each run start, and where run starts are dense every
sector of P is fetched (the prefetch) and written back.  A design whose
forest lives in per-tile compact arrays would not touch P before the label
pass.  This times the tile kernel alone (CUDA events, behind a busy kernel,
median of 20) under variants that remove that traffic:

  plain             the kernel as the call takes it for these images (no slots)
  plain, no pf      without the prefetch of P's sectors
  plain, no P       no stores into P at all (the finds kept), no prefetch:
                    the kernel's time without P, a lower bound
  slots 512         every tile's run starts' piece roots in its own 512 slots
                    (compact, consecutive words), piece roots also into P
  slots 512, no P   the same without the stores into P: what a compact
                    forest's tile kernel would cost

Variants marked "no P" leave wrong labels; only the tile kernel runs.

    python benchmarks/experiments/compact_bound.py"""
import _common  # noqa: F401  (sys.path)
import cupy

from _common import patched_source, recompile, tile_ms
from meshccl import patterns as P
from meshccl._gpu import loader, mesh23

_source = loader.source
PLAIN_STORE = """                P[tile0 + (I)r * nx + b] = g;
                also(r, b, g);
                return;"""
NO_PLAIN_STORE = """                if (g == (I)-7) P[tile0 + (I)r * nx + b] = g;  // (never: keeps the find)
                return;"""
ROOT_STORE = "            if (root) P[tile0 + (I)r * nx + b] = g;"
NO_ROOT_STORE = "            (void)root;"


VARIANTS = {
    # name: (slots, slotted form, prefetch, patches)
    "plain": (192, False, 2, ()),
    "plain, no pf": (192, False, 0, ()),
    "plain, no P": (192, False, 0, ((PLAIN_STORE, NO_PLAIN_STORE),)),
    "slots 512": (512, True, 2, ()),
    "slots 512, no P": (512, True, 2, ((ROOT_STORE, NO_ROOT_STORE),)),
}


def use(name):
    slots, _, pf, pairs = VARIANTS[name]
    mesh23.RUNS_2D_SLOTS = slots
    mesh23.RUNS_PREFETCH[(2, 2)] = pf
    loader.source = patched_source(_source, "runs2d.cu", *pairs) if pairs else _source
    recompile()



cases = [("perc 8192^2 p=.4073", P.percolation((8192, 8192), 0.4073, xp=cupy)),
         ("perc 8192^2 p=.5927", P.percolation((8192, 8192), 0.5927, xp=cupy)),
         ("blobs 4096^2", P.blobs((4096, 4096), xp=cupy)),
         ("spiral 4096^2", P.spiral(4096, xp=cupy))]
print("tile kernel alone, ms (connectivity 2), two rounds in alternating order", flush=True)
order = list(VARIANTS)
for name, a in cases:
    row = {v: [] for v in order}
    for rnd in range(2):
        for v in (order if rnd == 0 else order[::-1]):
            use(v)
            row[v].append(tile_ms(a, 2, VARIANTS[v][1]))
    print(f"{name:22s} | " + " | ".join(f"{v}: {min(t):.4f}-{max(t):.4f}"
                                         for v, t in row.items()), flush=True)
use("plain")
