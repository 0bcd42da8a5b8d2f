"""The compiled CPU core against another meshccl (e.g. main's numba plain path),
in one process, on the same arrays: median and minimum wall time of several
calls (``meshccl.label`` end to end, NumPy in and out), in ms.  Serial
(``cpu_threads=1``) and on every core (``0``).

    NUMBA_CACHE_DIR=/tmp/nc python benchmarks/cpu_core.py --other /path/to/meshccl

``--lattice`` times the lattice features instead (mask, periodic,
tolerance, bonds, ``axes``), ``--iterative`` Hawick et al.'s iterative
methods (serial whatever ``--threads`` says).  ``--other`` is a meshccl package directory (a checkout's ``meshccl/``); it is
imported as ``meshccl_other`` (through a symlink in a temporary directory),
so both run side by side.  Without it only this meshccl is timed.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

import meshccl
from meshccl import patterns

CASES = [  # (name, array maker, connectivities)
    ("spiral 2048^2", lambda: patterns.spiral(2048), (1, 2)),
    ("blobs 2048^2", lambda: patterns.blobs((2048, 2048), seed=1), (1, 2)),
    ("percolation 2048^2", lambda: patterns.percolation((2048, 2048), 0.5927, seed=2), (1, 2)),
    ("potts 2048^2", lambda: patterns.potts((2048, 2048), seed=3), (1, 2)),
    ("blobs 128^3", lambda: patterns.blobs((128, 128, 128), seed=4), (1, 3)),
    ("percolation 128^3", lambda: patterns.percolation((128, 128, 128), 0.3116, seed=5), (1, 3)),
    ("potts 128^3", lambda: patterns.potts((128, 128, 128), seed=6), (1, 3)),
]


def _lattice_cases():
    """The lattice features (mask, periodic, tolerance, bonds, axes): (name,
    array, extra keyword arguments, connectivities)."""
    rng = np.random.default_rng(7)
    blobs = patterns.blobs((2048, 2048), seed=1)
    field = patterns.blobs((1024, 1024), seed=2).astype(np.float64) + rng.random((1024, 1024)) * 0.1
    ones = np.ones((1024, 1024), dtype=np.uint8)
    return [
        ("blobs 2048^2 mask", blobs, dict(mask=rng.random(blobs.shape) < 0.9), (1, 2)),
        ("potts 1024^2 periodic", patterns.potts((1024, 1024), seed=3), dict(periodic=True), (1, 2)),
        ("field 1024^2 tolerance", field, dict(tolerance=0.05), (1, 2)),
        ("bonds 1024^2 p=0.5", ones, dict(bonds=rng.random((2, 1024, 1024)) < 0.5), (1,)),
        ("potts 16x256^2 axes", patterns.potts((16, 256, 256), seed=4), dict(axes=(1, 2)), (1, 2)),
        ("potts 128^3 mask", patterns.potts((128,) * 3, seed=6),
         dict(mask=rng.random((128,) * 3) < 0.9), (1, 3)),
    ]


def _iterative_cases():
    """Hawick et al.'s iterative methods (they run serially): (name, array,
    extra keyword arguments, connectivities)."""
    rng = np.random.default_rng(8)
    blobs = patterns.blobs((256, 256), seed=1)
    potts = patterns.potts((32, 32, 32), seed=6)
    spiral = patterns.spiral(64)
    cases = []
    for m in ("cpu1", "A", "B", "C", "D"):
        cases.append((f"{m}: blobs 256^2", blobs, dict(method=m), (2,)))
        cases.append((f"{m}: potts 32^3 mask", potts,
                      dict(method=m, mask=rng.random(potts.shape) < 0.9), (1,)))
        cases.append((f"{m}: spiral 64^2 periodic", spiral, dict(method=m, periodic=True), (1,)))
    return cases


def median_ms(f, repeat):
    """Median and minimum wall time of ``repeat`` calls after a warm-up, ms."""
    f()  # (warm: numba compiles here)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3, min(times) * 1e3


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--other", help="another meshccl package directory")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 0])
    ap.add_argument("--lattice", action="store_true",
                    help="the lattice features' cases instead of the plain ones")
    ap.add_argument("--iterative", action="store_true",
                    help="the iterative methods' cases instead of the plain ones")
    args = ap.parse_args(argv)
    if args.iterative:
        args.threads = [1]
    tools = {"compiled": meshccl}
    if args.other:
        d = tempfile.mkdtemp()
        os.symlink(os.path.abspath(args.other), os.path.join(d, "meshccl_other"))
        sys.path.insert(0, d)
        import meshccl_other

        tools = {"other": meshccl_other, "compiled": meshccl}
    names = list(tools)
    print(f"{'case':24s} conn thr | " + " ".join(f"{n + ' med':>13s} {'min':>7s}" for n in names))
    cases = (_lattice_cases() if args.lattice else _iterative_cases() if args.iterative
             else [(name, make(), {}, conns) for name, make, conns in CASES])
    for name, a, extra, conns in cases:
        for conn in conns:
            for thr in args.threads:
                want = None
                row = []
                for tool in names:
                    f = lambda: tools[tool].label(a, connectivity=conn, cpu_threads=thr, **extra)
                    got = f()
                    if want is None:
                        want = got
                    assert np.array_equal(got, want), (name, conn, thr, tool)
                    row.append(median_ms(f, args.repeat))
                print(f"{name:24s} {conn:4d} {thr:3d} | "
                      + " ".join(f"{med:13.2f} {lo:7.2f}" for med, lo in row), flush=True)


if __name__ == "__main__":
    main()
