import sys
sys.path.insert(0, "benchmarks/experiments")
import numpy as np, cupy
from meshccl import patterns
from meshccl._gpu import mesh23

def run(a, c, folded, stop):
    mesh23.PIECES_FOLDED = folded
    flat = cupy.asarray(a).ravel()
    out = cupy.empty(a.size, dtype=cupy.int32)
    buffers = mesh23.scratch(a.size, np.int32, a.shape, flat.dtype)
    snaps = {}
    for name, step in mesh23.steps(flat, out, a.shape, c, True, np.uint8(0), buffers):
        step()
        cupy.cuda.Device().synchronize()
        snaps[name] = (out.get().copy(), buffers[0].get().copy(), buffers[3].get().copy())
    return snaps, buffers

for shape in [(512, 512), (4096, 4096)]:
    a = patterns.percolation(shape, 0.5927, seed=6)
    n = a.size; words = (n + 31) // 32
    s0, _ = run(a, 1, False, None)
    s1, _ = run(a, 1, True, None)
    print(shape, "steps", list(s0), list(s1))
    P0, bits0, bi0 = s0["pieces"]
    P1, bits1, bi1 = s1["roots"]
    A = bits1[:words]
    Abits = np.unpackbits(A.view(np.uint8), bitorder="little")[:n].astype(bool)
    Hb = np.unpackbits(s1["border"][1][words:2*words].view(np.uint8), bitorder="little")[:n].astype(bool)
    blocks = -(-words // 1024)
    print("block_incl equal", np.array_equal(bi0[:blocks], bi1[:blocks]), bi0[:6], bi1[:6])
    idx = np.nonzero(Abits)[0]
    bad = idx[P1[idx] != -P0[idx]]
    print("piece roots", idx.size, "hooked", Hb.sum(), "bad", bad.size)
    for x in bad[:10]:
        print(" x", x, "block", x // 32768, "hooked", Hb[x], "fold", P1[x], "want", -P0[x])
    F0 = s0["cells"][0]; F1 = s1["cells"][0]
    print("final equal", np.array_equal(F0, F1))
    print("tail after", np.count_nonzero(s1["cells"][1][2*words:]))
