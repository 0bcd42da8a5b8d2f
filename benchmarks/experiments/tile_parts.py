"""Where the 2-D tile kernel's time goes, part by part (H100 experiment,
2026-11-26 evening; benchmarks/NOTES.md).

Times the tile kernel alone (CUDA events behind a busy kernel, median of 20,
two rounds in alternating order) with parts of it switched off at run time
(a condition that is never true keeps the code, so registers and code layout
barely move):

  plain         the kernel as the call takes it (no slots for these images)
  no unions     the unions inside each tile (band_unions / tile_unions) skipped
  no seams      ... and the unions across the block's inner tile borders
  no stores     the unions kept, store_piece_roots (finds + stores) skipped
  masks only    no unions, no seams, no stores: loads, masks, bit arrays

Variants other than plain leave wrong labels; only the tile kernel runs.

    python benchmarks/experiments/tile_parts.py"""
import _common  # noqa: F401  (sys.path)
import cupy

from _common import patched_source, recompile, tile_ms
from meshccl import patterns as P
from meshccl._gpu import loader

_source = loader.source
UNIONS = ("        if (band)\n            band_unions<RSB>(",
          "        if (nx > 0) {\n        } else if (band)\n            band_unions<RSB>(")
SEAMS = ("if (seams && live && warp > 0 && y < ny) {",
         "if (nx < 0 && seams && live && warp > 0 && y < ny) {")
STORES = ("const unsigned roots = meshccl::runs::store_piece_roots<",
          "const unsigned roots = nx > 0 ? 0u : meshccl::runs::store_piece_roots<")



VARIANTS = {
    "plain": (),
    "no unions": (UNIONS,),
    "no seams": (UNIONS, SEAMS),
    "no stores": (STORES,),
    "masks only": (UNIONS, SEAMS, STORES),
}


def use(name):
    pairs = VARIANTS[name]
    loader.source = patched_source(_source, "runs2d.cu", *pairs) if pairs else _source
    recompile()



cases = [("perc 8192^2 p=.4073", P.percolation((8192, 8192), 0.4073, xp=cupy), 2),
         ("perc 8192^2 p=.5927", P.percolation((8192, 8192), 0.5927, xp=cupy), 1),
         ("perc 8192^2 p=.5927", P.percolation((8192, 8192), 0.5927, xp=cupy), 2),
         ("spiral 4096^2", P.spiral(4096, xp=cupy), 2),
         ("potts4 4096^2", P.potts((4096, 4096), xp=cupy), 2)]
print("tile kernel alone, ms, two rounds in alternating order (min-max)", flush=True)
order = list(VARIANTS)
for name, a, c in cases:
    row = {v: [] for v in order}
    for rnd in range(2):
        for v in (order if rnd == 0 else order[::-1]):
            use(v)
            row[v].append(tile_ms(a, c))
    print(f"{name:22s} c{c} | " + " | ".join(f"{v}: {min(t):.4f}-{max(t):.4f}"
                                            for v, t in row.items()), flush=True)
use("plain")
