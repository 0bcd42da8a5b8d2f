"""Issue-3 capabilities beyond raw throughput, measured in one run.

    python benchmarks/capabilities.py [batch] [memory] [huge] [latency] [cpu] --out DIR

batch    1024 images of 256^2 (uint8 blobs) labelled in one call with
         axes=(1, 2) against a Python loop of cupyx.scipy.ndimage.label
         calls (and a loop of meshccl calls), CUDA events, median of 5.
memory   peak GPU memory of one call beyond the input and the label array
         (label(..., return_info=True)['gpu_memory']) on the standard cases.
huge     a 1300^3 uint8 percolation volume (2.2e9 cells > 2**31): labelled on
         the GPU with 64-bit indices, then on the CPU backend (compiled core, all
         threads), labels compared cell for cell; time and memory reported.
         Then the same for two 2-D images of about 2.15e9 cells (a binary one
         at connectivity 2, a four-valued one at connectivity 1).
latency  wall time per call of label() on a 256^2 CuPy image in a loop, and
         a cProfile of where the host time goes.
cpu      the CPU backend serial and with all threads against
         scipy.ndimage.label and cc3d (if importable), wall clock.

Writes capabilities.md (and .json) into --out, with the machine and date.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import io
import json
import os
import platform
import pstats
import sys
import time
from pathlib import Path

import numpy as np

import meshccl
from meshccl import patterns as P

LINES = []


def say(line=""):
    print(line, flush=True)
    LINES.append(line)


def gpu_time(fn, reps=5, warmup=1):
    import cupy

    for _ in range(warmup):
        fn()
    cupy.cuda.Device().synchronize()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    ts = []
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        ts.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return float(np.median(ts))


def wall(fn, reps=3):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def batch(results):
    import cupy
    from cupyx.scipy import ndimage as cndi

    stack = cupy.stack([P.blobs((256, 256), seed=s, xp=cupy) for s in range(1024)])
    say("## Batches: 1024 images of 256² (blobs), connectivity 1")
    say()
    ours = meshccl.label(stack, axes=(1, 2), connectivity=1)
    counts = [int(cndi.label(stack[k])[1]) for k in range(1024)]
    for k in (0, 1, 2, 511, 1023):  # spot-check: each image's own components
        assert int(cupy.unique(ours[k]).size) - 1 == counts[k], k
    count = int(ours.max())
    total = sum(counts)
    assert count == total, (count, total)
    t_batch = gpu_time(lambda: meshccl.label(stack, axes=(1, 2), connectivity=1))
    t_loop_cupyx = gpu_time(lambda: [cndi.label(stack[k]) for k in range(1024)], reps=3)
    t_loop_ours = gpu_time(lambda: [meshccl.label(stack[k], connectivity=1) for k in range(1024)], reps=3)
    say("| tool | ms for 1024 images | per image | vs cupyx loop |")
    say("|---|---:|---:|---:|")
    for name, t in [("meshccl, one call, axes=(1, 2)", t_batch), ("meshccl, Python loop", t_loop_ours),
                    ("cupyx.scipy.ndimage.label, Python loop", t_loop_cupyx)]:
        say(f"| {name} | {t * 1e3:.2f} | {t / 1024 * 1e6:.1f} µs | {t_loop_cupyx / t:.1f}× |")
    say(f"\nComponents: {count} in total, equal to the sum of cupyx's per-image counts.")
    say()
    results["batch"] = dict(batch_s=t_batch, loop_ours_s=t_loop_ours, loop_cupyx_s=t_loop_cupyx,
                            components=count)


def memory(results):
    import cupy

    cases = [("blobs 4096²", lambda: P.blobs((4096, 4096), xp=cupy)),
             ("percolation 8192²", lambda: P.percolation((8192, 8192), 0.5927, xp=cupy)),
             ("blobs 512³", lambda: P.blobs((512,) * 3, xp=cupy)),
             ("Potts q=4 256³", lambda: P.potts((256,) * 3, xp=cupy))]
    say("## Peak GPU memory per call, beyond the input and the label array")
    say()
    say("| case | method | labels (int32) | extra | extra ÷ labels |")
    say("|---|---|---:|---:|---:|")
    rows = []
    for name, make in cases:
        a = make()
        for method in ("auto", "D", "B"):
            if method != "auto" and "Potts" not in name and "blobs 4096" not in name:
                continue
            _, info = meshccl.label(a, connectivity=1, method=method, return_info=True)
            m = info["gpu_memory"]
            rows.append(dict(case=name, method=method, **m))
            say(f"| {name} | {method} | {m['labels_bytes'] / 2**20:.1f} MiB | "
                f"{m['extra_bytes'] / 2**20:.2f} MiB | {m['extra_bytes'] / m['labels_bytes']:.3f} |")
        del a
    say()
    results["memory"] = rows


def cpu_label(host, conn):
    """The CPU backend on all threads, timed (wall clock) after a call on the
    first 64 rows (planes) of the same array with int64 labels (the first
    touches of the call's code and tables, which are not labelling).  Returns (labels,
    count, seconds, seconds of the warm-up call)."""
    t0 = time.perf_counter()
    meshccl.label(host[:64], connectivity=conn, cpu_threads=0, dtype=np.int64)
    warm = time.perf_counter() - t0
    t0 = time.perf_counter()
    labels, num = meshccl.label(host, connectivity=conn, return_num=True, cpu_threads=0)
    return labels, num, time.perf_counter() - t0, warm


def huge(results):
    import cupy

    side = 1300
    n = side ** 3
    say(f"## A volume beyond 2**31 cells: {side}³ = {n:,} uint8 cells (percolation p = 0.3116)")
    say()
    a = P.percolation((side,) * 3, 0.3116, seed=7, xp=cupy)
    cupy.get_default_memory_pool().free_all_blocks()
    labels, num, info = meshccl.label(a, connectivity=1, return_num=True, return_info=True)
    t_gpu = gpu_time(lambda: meshccl.label(a, connectivity=1), reps=3)
    say(f"GPU: {t_gpu * 1e3:.1f} ms per call (median of 3), labels {labels.dtype}, "
        f"{num:,} components; peak extra memory {info['gpu_memory']['extra_bytes'] / 2**30:.2f} GiB "
        f"beyond the {info['gpu_memory']['labels_bytes'] / 2**30:.1f} GiB label array.")
    host = a.get()
    a = None
    gl = labels.get()
    del labels
    cupy.get_default_memory_pool().free_all_blocks()
    cl, cnum, t_cpu, t_warm = cpu_label(host, 1)
    same = bool(np.array_equal(gl, cl))
    say(f"CPU backend (compiled core, all {os.cpu_count()} threads): {t_cpu:.1f} s, {cnum:,} components, "
        f"labels {cl.dtype}; GPU labels {'identical' if same else 'DIFFERENT'} cell for cell. "
        f"(A warm-up call before, on its first 64 planes: {t_warm:.1f} s.)")
    say()
    results["huge"] = dict(side=side, gpu_s=t_gpu, cpu_s=t_cpu, cpu_warmup_s=t_warm,
                           components=int(num),
                           identical=same, extra_bytes=info["gpu_memory"]["extra_bytes"])
    if not same:
        raise SystemExit("huge volume: GPU and CPU labels differ")
    del gl, cl, host
    huge_image(results)


def huge_image(results):
    """The 2-D path beyond 2**31 cells, on two images: a 46400^2 uint8
    percolation image (p = .4073, connectivity 2: binary bands, some tiles
    with slots), and a 46341^2 one of four values (two independent p = .5
    fields, a + 2b; connectivity 1: rows of equal values, a width that is not
    a multiple of 32).  Each on the CPU backend, then on the GPU by a launch
    plan's first call (the tile kernels with slots), by a later one (the
    plan's pick from the first call's count) and through the general path
    (return_info), each compared with the CPU's labels cell for cell."""
    import cupy

    rows = []
    for side, kind, conn in ((46400, "percolation p = 0.4073", 2),
                             (46341, "four values (a + 2b, two p = 0.5 fields)", 1)):
        n = side ** 2
        say(f"## An image beyond 2**31 cells: {side}² = {n:,} uint8 cells ({kind}, "
            f"connectivity {conn})")
        say()
        if conn == 2:
            a = P.percolation((side, side), 0.4073, seed=7, xp=cupy)
        else:
            a = P.percolation((side, side), 0.5, seed=7, xp=cupy)
            a += 2 * P.percolation((side, side), 0.5, seed=8, xp=cupy)
        cl, cnum, t_cpu, t_warm = cpu_label(a.get(), conn)
        checks = {}

        def check(name, labels, num=None):
            checks[name] = bool(np.array_equal(labels.get(), cl)) and num in (None, cnum)

        first, num = meshccl.label(a, connectivity=conn, return_num=True)
        check("plan, first call", first, num)
        dtype = first.dtype
        del first
        t_gpu = gpu_time(lambda: meshccl.label(a, connectivity=conn), reps=3)
        check("plan, later call", meshccl.label(a, connectivity=conn))
        general, info = meshccl.label(a, connectivity=conn, return_info=True)
        check("general path", general)
        del general, a, cl
        cupy.get_default_memory_pool().free_all_blocks()
        same = all(checks.values())
        say(f"GPU: {t_gpu * 1e3:.1f} ms per call (median of 3), labels {dtype}, {num:,} components; "
            f"peak extra memory {info['gpu_memory']['extra_bytes'] / 2**30:.2f} GiB beyond the "
            f"{info['gpu_memory']['labels_bytes'] / 2**30:.1f} GiB label array.")
        say(f"CPU backend (compiled core, all {os.cpu_count()} threads): {t_cpu:.1f} s, {cnum:,} "
            f"components; GPU labels against it, cell for cell: "
            + ", ".join(f"{k} {'identical' if v else 'DIFFERENT'}" for k, v in checks.items())
            + f". (A warm-up call before, on its first 64 rows: {t_warm:.1f} s.)")
        say()
        rows.append(dict(side=side, image=kind, connectivity=conn, gpu_s=t_gpu, cpu_s=t_cpu,
                         cpu_warmup_s=t_warm,
                         components=int(num), identical=same, checks=checks,
                         extra_bytes=info["gpu_memory"]["extra_bytes"]))
    results["huge_image"] = rows
    if not all(r["identical"] for r in rows):
        raise SystemExit("huge image: GPU and CPU labels differ")


def latency(results):
    import cupy

    say("## Latency: one 256² CuPy image (blobs, connectivity 1), label() in a loop")
    say()
    img = P.blobs((256, 256), xp=cupy)
    rows = {}
    for name, fn in [("label(img)", lambda: meshccl.label(img, connectivity=1)),
                     ("label(img, return_num=True)", lambda: meshccl.label(img, connectivity=1, return_num=True))]:
        for _ in range(50):
            fn()
        cupy.cuda.Device().synchronize()
        loops = 2000
        t0 = time.perf_counter()
        for _ in range(loops):
            fn()
        cupy.cuda.Device().synchronize()
        rows[name] = (time.perf_counter() - t0) / loops
        say(f"- {name}: {rows[name] * 1e6:.1f} µs per call (wall, {loops} calls, synchronised at the end)")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(2000):
        meshccl.label(img, connectivity=1)
    cupy.cuda.Device().synchronize()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(18)
    say()
    say("Host time by function (cProfile, 2000 calls, top by own time):")
    say("```")
    for line in out.getvalue().splitlines()[6:30]:
        say(line.rstrip())
    say("```")
    say()
    results["latency"] = rows


def cpu(results):
    from scipy import ndimage

    try:
        import cc3d
    except ImportError:
        cc3d = None
    from meshccl._cpu.image import cpu_count

    say(f"## CPU backend, {os.cpu_count()} cores ({cpu_count()} threads)")
    say()
    cases = [("blobs 4096²", P.blobs((4096, 4096)), 1), ("percolation 8192²", P.percolation((8192, 8192), 0.5927), 1),
             ("blobs 512³", P.blobs((512,) * 3), 1), ("percolation 512³", P.percolation((512,) * 3, 0.3116), 3)]
    say("| case | conn | meshccl serial | meshccl all threads | scipy.ndimage | cc3d | serial ÷ scipy | threads ÷ cc3d |")
    say("|---|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    for name, a, c in cases:
        meshccl.label(a[tuple(slice(0, 8) for _ in a.shape)], connectivity=c)
        meshccl.label(a[tuple(slice(0, 64) for _ in a.shape)], connectivity=c, cpu_threads=0)
        t_ser = wall(lambda: meshccl.label(a, connectivity=c), reps=2)
        t_par = wall(lambda: meshccl.label(a, connectivity=c, cpu_threads=0), reps=2)
        st = ndimage.generate_binary_structure(a.ndim, c)
        t_sci = wall(lambda: ndimage.label(a, structure=st), reps=2)
        conn = {1: 2 * a.ndim, a.ndim: 3 ** a.ndim - 1}[c] if a.ndim > 1 else 2
        t_cc3d = wall(lambda: cc3d.connected_components(a, connectivity=conn), reps=2) if cc3d else float("nan")
        rows.append(dict(case=name, conn=c, serial_s=t_ser, threads_s=t_par, scipy_s=t_sci, cc3d_s=t_cc3d))
        say(f"| {name} | {c} | {t_ser * 1e3:.0f} ms | {t_par * 1e3:.0f} ms | {t_sci * 1e3:.0f} ms | "
            f"{t_cc3d * 1e3:.0f} ms | {t_ser / t_sci:.2f} | {t_par / t_cc3d:.2f} |")
    say()
    results["cpu"] = rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("parts", nargs="*", default=["batch", "memory", "huge", "latency", "cpu"])
    ap.add_argument("--out", required=True)
    opt = ap.parse_args(argv)
    out = Path(opt.out)
    out.mkdir(parents=True, exist_ok=True)
    gpu = ""
    if meshccl.gpu_available():
        import cupy
        props = cupy.cuda.runtime.getDeviceProperties(0)
        gpu = f", GPU {props['name'].decode() if isinstance(props['name'], bytes) else props['name']}"
    say(f"Machine: {platform.machine()}, {os.cpu_count()} CPUs{gpu}; "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
        f"command: `python benchmarks/capabilities.py {' '.join(opt.parts)}`")
    say()
    results = {}
    for part in opt.parts:
        {"batch": batch, "memory": memory, "huge": huge, "latency": latency, "cpu": cpu}[part](results)
    (out / "capabilities.md").write_text("\n".join(LINES) + "\n")
    (out / "capabilities.json").write_text(json.dumps(results, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
