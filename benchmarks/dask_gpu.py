"""meshccl.dask.label on CuPy chunks on one GPU, threaded scheduler (issue 54,
point 1): the time of a computation against labelling the chunks alone and
``meshccl.label`` on the whole array, the task seconds of each step, and the
first computation in a fresh process against a later one.

The volume (``--side``³ uint8, ``--chunk``³ CuPy chunks; blobs or site
percolation, ``dask_multi_gpu.volume``) is generated on the GPU and
persisted.  Timed, best of ``--repeat`` after one warm-up, each ending when
the GPU is done:

- ``whole``: ``meshccl.label`` on the whole volume (one CuPy array);
- ``chunks alone``: ``x.map_blocks(meshccl.label)`` persisted (step 1 only,
  nothing joined): the floor of any chunked labelling on this scheduler;
- ``dask``: ``meshccl.dask.label(x, return_num=True)`` persisted.

The labels are checked equal to the whole-array call's, value for value.
One more run under ``dask.diagnostics.Profiler`` gives the task seconds of
each step (``docs/dask.md``; a task on the GPU waits for its own kernels,
and on the one stream that the threads share, for those queued before).

``--first after-label`` runs, in a new process with an empty CuPy kernel
cache (``CUPY_CACHE_DIR`` a new folder), ``meshccl.label`` on a
``--first-side``³ volume twice, then ``meshccl.dask.label`` on it twice,
and reports each call's seconds and the NVRTC compilations it started
(count and seconds, CuPy's own kernels and meshccl's): what the first Dask
computation compiles beyond a plain ``label``.  ``--first fresh``: the two
Dask computations alone in such a process (nothing compiled before them);
``both``: the two processes.

Writes ``dask_gpu.json`` and ``dask_gpu.md`` to ``--out``.

    python benchmarks/dask_gpu.py --out /tmp/dgpu
    python benchmarks/dask_gpu.py --side 640 --chunk 211,257,333 --connectivity 3 --out /tmp/dgpu
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)


def _chunks(text, side):
    import dask.array as da

    sizes = [int(c) for c in text.split(",")]
    if len(sizes) == 1:
        return da.core.normalize_chunks(sizes[0], (side,) * 3)
    # several sizes: cycled along every axis (odd, unequal chunks)
    axis, left, k = [], side, 0
    while left > 0:
        axis.append(min(sizes[k % len(sizes)], left))
        left -= axis[-1]
        k += 1
    return (tuple(axis),) * 3


def _volume(side, chunks, pattern):
    import cupy
    import dask.array as da
    from dask_multi_gpu import _block

    return da.map_blocks(_block, pattern, 0, dtype=np.uint8, chunks=chunks,
                         meta=cupy.empty((0, 0, 0), cupy.uint8))


class Compiles:
    """Counts NVRTC compilations (CuPy's kernel-cache misses) while active,
    and names what each compiled.

    Every NVRTC compilation CuPy starts goes through
    ``cupy.cuda.compiler._NVRTCProgram.compile`` (CuPy 14: RawModule,
    ElementwiseKernel, ReductionKernel and the preprocessing of an empty
    source that keys the cache; ``compile_using_nvrtc`` is not on that
    path); the counter wraps that method, or ``compile_using_nvrtc`` where
    it is missing.  ``names``: per compilation, its name expressions (templated
    kernels of meshccl's modules) or the ``__global__`` functions of its
    source (CuPy's own kernels); '(preprocess)' for the empty source."""

    def __init__(self):
        import cupy.cuda.compiler as compiler

        self.compiler = compiler
        self.program = getattr(compiler, "_NVRTCProgram", None)
        self.count, self.seconds, self.names = 0, 0.0, []

    def _record(self, src, expressions, seconds):
        import re

        self.count += 1
        self.seconds += seconds
        if expressions:
            name = ",".join(expressions)
        elif src is not None and not src.strip():
            name = "(preprocess)"
        else:
            found = re.findall(r"__global__\s+void\s+(\w+)", src or "")
            name = ",".join(found[:4]) or "(unnamed)"
        self.names.append(name[:160])

    def __enter__(self):
        counter = self
        if self.program is not None:
            inner = self.inner = self.program.compile

            def counted(program, *args, **kwargs):
                t = time.perf_counter()
                try:
                    return inner(program, *args, **kwargs)
                finally:
                    counter._record(getattr(program, "src", None),
                                    getattr(program, "name_expressions", None),
                                    time.perf_counter() - t)

            self.program.compile = counted
        else:
            inner = self.inner = self.compiler.compile_using_nvrtc

            def counted(source, *args, **kwargs):
                t = time.perf_counter()
                try:
                    return inner(source, *args, **kwargs)
                finally:
                    counter._record(source, kwargs.get("name_expressions"),
                                    time.perf_counter() - t)

            self.compiler.compile_using_nvrtc = counted
        return self

    def __exit__(self, *exc):
        if self.program is not None:
            self.program.compile = self.inner
        else:
            self.compiler.compile_using_nvrtc = self.inner


def _sync():
    import cupy

    cupy.cuda.Device().synchronize()


def _best(fn, repeat):
    fn()  # warm-up
    times, out = [], None
    for _ in range(repeat):
        _sync()
        t = time.perf_counter()
        out = fn()
        _sync()
        times.append(time.perf_counter() - t)
    return min(times), times, out


def first_compute(side, chunk, pattern, connectivity, plain_first):
    """In this (fresh) process: seconds and compiles of the first calls."""
    import dask
    import dask.array as da

    import meshccl
    import meshccl.dask

    x = dask.compute(_volume(side, _chunks(chunk, side), pattern), scheduler="threads")[0]
    xd = da.from_array(x, chunks=_chunks(chunk, side), asarray=False)
    out = {"side": side, "chunk": chunk}

    def run(name, fn):
        with Compiles() as c:
            _sync()
            t = time.perf_counter()
            fn()
            _sync()
            out[name] = {"seconds": time.perf_counter() - t, "compiles": c.count,
                         "compile_seconds": c.seconds, "compiled": c.names}
        print(name, json.dumps(out[name]), flush=True)  # (kept if a later call times out)

    def chunked():
        lab, n = meshccl.dask.label(xd, connectivity=connectivity, return_num=True)
        dask.persist(lab, n, scheduler="threads")

    if plain_first:
        run("label first", lambda: meshccl.label(x, connectivity=connectivity))
        run("label second", lambda: meshccl.label(x, connectivity=connectivity))
    run("dask first", chunked)
    run("dask second", chunked)
    return out


def _fresh(args, plain_first):
    """first_compute in a new process with an empty CuPy kernel cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, CUPY_CACHE_DIR=cache)
        cmd = [sys.executable, os.path.abspath(__file__), "--child",
               "--first-side", str(args.first_side), "--first-chunk", args.first_chunk,
               "--pattern", args.pattern, "--connectivity", str(args.connectivity)]
        cmd += ["--plain-first"] if plain_first else []
        try:
            res = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                 timeout=args.timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"not done within --timeout {args.timeout} s"}
        if res.returncode:
            return {"error": res.stderr[-2000:]}
        return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--side", type=int, default=1280)
    ap.add_argument("--chunk", default="256", help="chunk side, or several (cycled)")
    ap.add_argument("--pattern", default="blobs", choices=("blobs", "percolation"))
    ap.add_argument("--connectivity", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--first", choices=("none", "after-label", "fresh", "both"), default="none",
                    help="also the first computation in a new process with an empty kernel "
                         "cache: after a plain label ('after-label'), alone ('fresh'), or both")
    ap.add_argument("--first-side", type=int, default=512)
    ap.add_argument("--first-chunk", default="256")
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("--out", default="dask_gpu_out")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--plain-first", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(first_compute(args.first_side, args.first_chunk, args.pattern,
                                       args.connectivity, args.plain_first)))
        return

    import cupy
    import dask

    import meshccl
    import meshccl.dask
    from dask_bench import step_seconds

    os.makedirs(args.out, exist_ok=True)
    chunks = _chunks(args.chunk, args.side)
    x = _volume(args.side, chunks, args.pattern).persist(scheduler="threads")
    whole = dask.compute(x, scheduler="threads")[0]
    c = args.connectivity
    row = {"side": args.side, "chunk": args.chunk, "pattern": args.pattern, "connectivity": c,
           "chunks": int(np.prod([len(a) for a in chunks])),
           "device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
           "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    row["whole_s"], _, (want, n) = _best(
        lambda: meshccl.label(whole, connectivity=c, return_num=True), args.repeat)
    row["n"] = int(n)
    row["chunks_alone_s"], _, _ = _best(
        lambda: x.map_blocks(meshccl.label, connectivity=c, dtype=np.int32,
                             meta=cupy.empty((0, 0, 0), cupy.int32)).persist(
            scheduler="threads"), args.repeat)

    def chunked():
        lab, num = meshccl.dask.label(x, connectivity=c, return_num=True)
        return dask.persist(lab, num, scheduler="threads")

    row["dask_s"], row["dask_runs_s"], (lab, num) = _best(chunked, args.repeat)
    got = dask.compute(lab, scheduler="threads")[0]
    row["equal"] = bool(int(num) == row["n"] and cupy.array_equal(got, want))
    del got
    row["dask_over_chunks"] = row["dask_s"] / row["chunks_alone_s"]
    row["dask_over_whole"] = row["dask_s"] / row["whole_s"]
    lab, num = meshccl.dask.label(x, connectivity=c, return_num=True)
    row["steps"] = step_seconds(lab, num)
    write(args.out, row)
    if args.first in ("after-label", "both"):
        row["first_after_label"] = _fresh(args, plain_first=True)
        write(args.out, row)
    if args.first in ("fresh", "both"):
        row["first_fresh"] = _fresh(args, plain_first=False)
        write(args.out, row)


def write(out, row):
    """``dask_gpu.json`` and ``dask_gpu.md`` in ``out``; the table printed."""
    with open(os.path.join(out, "dask_gpu.json"), "w") as f:
        json.dump(row, f, indent=1)
    lines = [f"# meshccl.dask.label, CuPy chunks, one GPU ({row['device']}, {row['when']})", "",
             f"{row['pattern']} {row['side']}³ in {row['chunk']}³ chunks ({row['chunks']}), "
             f"connectivity {row['connectivity']}, threaded scheduler; N = {row['n']}; labels "
             f"equal to meshccl.label: {row['equal']}", "",
             "| | seconds |", "|---|---:|",
             f"| meshccl.dask.label (best; runs {', '.join(f'{t:.3f}' for t in row['dask_runs_s'])}) "
             f"| {row['dask_s']:.3f} |",
             f"| chunks alone (step 1) | {row['chunks_alone_s']:.3f} |",
             f"| meshccl.label whole | {row['whole_s']:.4f} |",
             f"| dask / chunks alone | {row['dask_over_chunks']:.2f}× |",
             f"| dask / whole | {row['dask_over_whole']:.0f}× |", "",
             "Task seconds per step (one profiled run):", "",
             "| step | task seconds |", "|---|---:|"]
    lines += [f"| {k} | {v:.3f} |" for k, v in row["steps"].items()]
    for key in ("first_after_label", "first_fresh"):
        if key not in row:
            continue
        first = row[key]
        lines += ["", f"`{key}` (a new process, empty CuPy kernel cache, "
                  f"{first.get('side')}³ in {first.get('chunk')}³ chunks):", ""]
        if "error" in first:
            lines += [f"error: {first['error']}"]
            continue
        lines += ["| call | seconds | NVRTC compilations | compiling seconds |",
                  "|---|---:|---:|---:|"]
        calls = [k for k in first if isinstance(first[k], dict)]
        lines += [f"| {k} | {first[k]['seconds']:.3f} | {first[k]['compiles']} | "
                  f"{first[k]['compile_seconds']:.2f} |" for k in calls]
        for k in calls:
            if first[k]["compiles"]:
                lines += ["", f"compiled by {k}: " + "; ".join(first[k].get("compiled", []))]
    with open(os.path.join(out, "dask_gpu.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
