"""Host time per meshccl.label call on a 4096^2 CuPy image (spiral): wall
per call without synchronising, event-timed median, and a cProfile of
200 calls (H200 experiment, 2026-11-24)."""
import time, cProfile, pstats, io
import cupy, numpy as np
import meshccl
from meshccl import patterns as P
x = P.spiral(4096, xp=cupy)
for c in (1,):
    for _ in range(5): meshccl.label(x, connectivity=c)
    cupy.cuda.Device().synchronize()
    n = 50
    t0 = time.perf_counter()
    for _ in range(n): meshccl.label(x, connectivity=c)
    t1 = time.perf_counter()
    cupy.cuda.Device().synchronize()
    t2 = time.perf_counter()
    print(f"c={c} host per call {1e6*(t1-t0)/n:.1f} us, with GPU {1e6*(t2-t0)/n:.1f} us")
    s, e = cupy.cuda.Event(), cupy.cuda.Event()
    ts = []
    for _ in range(30):
        s.record(); meshccl.label(x, connectivity=c); e.record(); e.synchronize()
        ts.append(cupy.cuda.get_elapsed_time(s, e))
    print("event median ms", np.median(ts))
    pr = cProfile.Profile(); pr.enable()
    for _ in range(200): meshccl.label(x, connectivity=c)
    pr.disable(); cupy.cuda.Device().synchronize()
    st = io.StringIO(); pstats.Stats(pr, stream=st).sort_stats("tottime").print_stats(18); print(st.getvalue()[:4000])
