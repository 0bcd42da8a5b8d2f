"""Does the 2-D tile kernel lose time to its last, partly filled wave?
Blobs 4096 wide at heights whose tile kernel grids fill a whole number of
waves or just over one (6 blocks of 8 tiles per SM: 132 * 6 = 792 blocks
a wave on an H200; a 4096-wide tile row is 16 blocks): the tile phase's ms
per height, and per block.  If a partly filled last wave costs a whole
wave, ms per block jumps where the block count passes a multiple of 792.
(H200 experiment, 2026-11-25.)

    python benchmarks/experiments/waves.py
"""
import _common  # noqa: F401  (sys.path)
import cupy

from meshccl import patterns
import phases as ph

sm = cupy.cuda.Device().attributes["MultiProcessorCount"]
x = patterns.blobs((4096, 4096), xp=cupy)
print(f"{sm} SMs; 6 blocks per SM: {6 * sm} blocks a wave", flush=True)
for rows in (32, 49, 50, 64, 98, 99, 100, 128):
    h = 32 * rows
    a = cupy.ascontiguousarray(x[:h])
    blocks = 16 * rows
    for c in (1, 2):
        r, total = ph.phases(a, c, "fixed", 20)
        print(f"h {h:5d} blocks {blocks:5d} waves {blocks / (6 * sm):5.2f} c={c} tile {r['tile']:.4f} ms"
              f" ({1e3 * r['tile'] / blocks * 6 * sm:.2f} us per full wave's worth) total {total:.4f}",
              flush=True)
