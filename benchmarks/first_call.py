"""First-call times of the CPU backend per input dtype, each in a fresh process.

Each measurement is a new Python process that imports meshccl and labels a
256 x 256 image (``--side``; two foreground values, so the general scan
runs; bool: one) with ``cpu_threads`` 1 and 2 (two threads: slabs).
*Cold*: a new, empty ``NUMBA_CACHE_DIR``, so every numba kernel the call
needs is compiled (the compiled core needs none); *warm*: a second process
on the cache the first one filled.  Printed per run: the import (numpy,
meshccl), the first call, the second call, the first call's excess over the
second, and the whole process's wall time and user + sys CPU time.
Issue 55's bar: cold wall <= 0.3 s, first call <= 5 ms more than the second.
``--method`` labels with another method (``A``, ``cpu1``, ...) instead of
the default; ``--method words`` draws ``meshccl.sim.random.words`` (four
words a cell) for the image's cells instead of labelling.  ``--feature``
adds a lattice feature to the call: ``mask`` (90 % of the cells),
``bonds`` (each open with p = 0.5), ``tolerance`` (0.3 on the values plus
uniform noise, as float64), ``periodic``, ``axes`` (a stack of 4 images,
``axes=(1, 2)``) or ``counts`` (``return_counts=True``).

    python benchmarks/first_call.py                 # every dtype, 1 and 2 threads
    python benchmarks/first_call.py uint8 float64 --threads 1
    python benchmarks/first_call.py uint8 --threads 1 --method D --side 64
    python benchmarks/first_call.py uint8 int32 --threads 1 --feature mask
    PYTHONPATH=/other/checkout python benchmarks/first_call.py   # another meshccl
"""

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

DTYPES = ["bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
          "float16", "float32", "float64"]  # (every dtype skimage.measure.label takes)

CHILD = r"""
import sys, time, resource
t0 = time.perf_counter()
import numpy as np
import meshccl
t1 = time.perf_counter()
dt, thr, side, method = np.dtype(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
feature = sys.argv[5]
rng = np.random.default_rng(0)
shape = (4, side, side) if feature == "axes" else (side, side)
a = rng.random(shape) < 0.4
x = a if dt.kind == "b" else (a * rng.integers(1, 3, size=a.shape)).astype(dt)
kw = {}
if feature == "mask":
    kw["mask"] = rng.random(shape) < 0.9
elif feature == "bonds":
    from meshccl.neighbourhood import half_offsets
    kw["bonds"] = rng.random((len(half_offsets(len(shape), len(shape))),) + shape) < 0.5
elif feature == "tolerance":
    x = x.astype(np.float64) + rng.random(shape)
    kw["tolerance"] = 0.3
elif feature == "periodic":
    kw["periodic"] = True
elif feature == "axes":
    kw["axes"] = (1, 2)
elif feature == "counts":
    kw["return_counts"] = True
if method == "words":
    from meshccl.sim import random as R
    call = lambda: R.words(1, R.TAG_METROPOLIS, 0, np.arange(x.size), 4)
else:
    call = lambda: meshccl.label(x, cpu_threads=thr, method=method, **kw)
t2 = time.perf_counter()
call()
t3 = time.perf_counter()
call()
t4 = time.perf_counter()
print(f"{t1 - t0:.4f} {t3 - t2:.6f} {t4 - t3:.6f} {meshccl.__file__}")
"""


def run(dtype, threads, cache, side, method="auto", feature="none"):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, dtype, str(threads), str(side),
                          method, feature], env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    imp, first, second = (float(v) for v in out[:3])
    return dict(wall=wall, cpu=cpu, imp=imp, first=first, second=second, path=out[3])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dtypes", nargs="*", default=DTYPES)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--side", type=int, default=256)
    ap.add_argument("--method", default="auto",
                    help="the label method, or 'words' for the simulators' Philox words")
    ap.add_argument("--feature", default="none",
                    choices=["none", "mask", "bonds", "tolerance", "periodic", "axes", "counts"],
                    help="a lattice feature (or counts) added to the call")
    args = ap.parse_args(argv)
    head = True
    for threads in args.threads:
        for dt in args.dtypes:
            with tempfile.TemporaryDirectory(prefix="meshccl-numba-") as cache:
                c = run(dt, threads, cache, args.side, args.method, args.feature)
                w = run(dt, threads, cache, args.side, args.method, args.feature)
            if head:
                print(f"meshccl: {c['path']}; {args.side} x {args.side}, {args.method}, "
                      f"{args.feature}; times in s, "
                      "excess = first call - second call in ms")
                print(f"{'dtype':8s} thr | {'cold: wall':>10s} {'cpu':>6s} {'import':>6s} "
                      f"{'call':>6s} {'excess':>7s} | {'warm: wall':>10s} {'call':>6s} "
                      f"{'excess':>7s} {'again ms':>8s}")
                head = False
            print(f"{dt:8s} {threads:3d} | {c['wall']:10.3f} {c['cpu']:6.2f} {c['imp']:6.3f} "
                  f"{c['first']:6.3f} {(c['first'] - c['second']) * 1e3:7.2f} | "
                  f"{w['wall']:10.3f} {w['first']:6.3f} {(w['first'] - w['second']) * 1e3:7.2f} "
                  f"{w['second'] * 1e3:8.2f}", flush=True)


if __name__ == "__main__":
    main()
