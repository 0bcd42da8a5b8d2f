"""First-call times of the CPU backend per input dtype: cold and warm numba cache.

Each measurement is a new Python process that imports meshccl and labels a
64 x 64 image (two foreground values, so the general scan runs; bool: one)
with ``cpu_threads`` 1 and, at 128 x 128, 2 (two slabs).  *Cold*: a new,
empty ``NUMBA_CACHE_DIR``, so every kernel the call needs is compiled.
*Warm*: a second process on the cache the first one filled.  Printed per
run: the import (numpy, meshccl), the first call, the second call, and the
process's user + sys CPU time; wall = the whole process.

    python benchmarks/first_call.py                 # every dtype, 1 and 2 threads
    python benchmarks/first_call.py uint8 float64 --threads 1
"""

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

DTYPES = ["bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
          "float32", "float64"]

CHILD = r"""
import sys, time, resource
t0 = time.perf_counter()
import numpy as np
import meshccl
t1 = time.perf_counter()
dt, thr = np.dtype(sys.argv[1]), int(sys.argv[2])
side = 64 if thr == 1 else 128  # (threads: at least two slabs of CPU_SLAB_MIN_CELLS)
rng = np.random.default_rng(0)
a = rng.random((side, side)) < 0.4
x = a if dt.kind == "b" else (a * rng.integers(1, 3, size=a.shape)).astype(dt)
t2 = time.perf_counter()
meshccl.label(x, cpu_threads=thr)
t3 = time.perf_counter()
meshccl.label(x, cpu_threads=thr)
t4 = time.perf_counter()
print(f"{t1 - t0:.3f} {t3 - t2:.3f} {t4 - t3:.6f}")
"""


def run(dtype, threads, cache):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, dtype, str(threads)], env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    imp, first, second = (float(v) for v in out)
    return dict(wall=wall, cpu=cpu, imp=imp, first=first, second=second)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dtypes", nargs="*", default=DTYPES)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args(argv)
    print(f"{'dtype':8s} thr | {'cold: wall':>10s} {'cpu':>6s} {'import':>6s} {'call':>6s} | "
          f"{'warm: wall':>10s} {'cpu':>6s} {'import':>6s} {'call':>6s} {'again ms':>8s}")
    for threads in args.threads:
        for dt in args.dtypes:
            with tempfile.TemporaryDirectory(prefix="meshccl-numba-") as cache:
                c = run(dt, threads, cache)
                w = run(dt, threads, cache)
            print(f"{dt:8s} {threads:3d} | {c['wall']:10.2f} {c['cpu']:6.2f} {c['imp']:6.2f} "
                  f"{c['first']:6.2f} | {w['wall']:10.2f} {w['cpu']:6.2f} {w['imp']:6.2f} "
                  f"{w['first']:6.2f} {w['second'] * 1e3:8.2f}", flush=True)


if __name__ == "__main__":
    main()
