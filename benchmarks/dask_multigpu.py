"""meshccl.dask.label on one and two GPUs: ``dask_cuda.LocalCUDACluster``
with 1 and 2 workers (issue 43, point 2).

The volume (``--side``³ uint8, CuPy chunks of ``--chunk``³) is generated
on the workers chunk by chunk from the global coordinates (``blobs``: a
threshold of crossed sine waves plus noise, components crossing many
chunks; ``percolation``: site percolation at p = 0.3116, many small
components), so the same array exists on 1 and on 2 GPUs without a host
copy.  Before any cluster starts, this process builds the same array on
GPU 0, labels it with ``meshccl.label`` (timed: the one-GPU reference) and
keeps two checksums per chunk of those labels; then frees it.

For each worker count it persists the input on the workers, runs
``meshccl.dask.label`` once to warm up (kernels compiled on each worker),
then times ``--repeat`` runs of ``persist(labels, N)`` + ``wait`` (the
labels stay on the GPUs; nothing large comes back), one of them inside
``distributed.performance_report`` (HTML, needs bokeh) and
``get_task_stream``, whose compute time per task kind and per worker is
written as a table.  Checks: N equal to ``meshccl.label``'s, and every
chunk's checksums equal those of the whole-array labels (on the workers:
only 16 bytes a chunk travel).  ``--check-side`` also compares a smaller
cube value for value on the client.

Writes ``multigpu.json``, ``multigpu.md`` and ``performance-<k>gpu.html``
in ``--out``.  Made to finish in under 8 minutes on 2×H100 at the default
size.

    python benchmarks/dask_multigpu.py --out /tmp/mgpu
    python benchmarks/dask_multigpu.py --side 1536 --pattern percolation --out /tmp/mgpu
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def _block(pattern, seed, block_info=None):
    """One chunk of the volume on the current GPU, from its global position."""
    import cupy

    info = block_info[None]
    loc = info["array-location"]
    rs = cupy.random.RandomState(
        (seed * 1_000_003 + hash(tuple(info["chunk-location"]))) % (2**32))
    shape = tuple(hi - lo for lo, hi in loc)
    if pattern == "percolation":
        return (rs.random_sample(shape, dtype=cupy.float32) < 0.3116).astype(cupy.uint8)
    z, y, x = (cupy.arange(lo, hi, dtype=cupy.float32) for lo, hi in loc)
    f = (cupy.sin(z * (2 * np.pi / 41.0))[:, None, None]
         + cupy.sin(y * (2 * np.pi / 53.0))[None, :, None]
         + cupy.sin(x * (2 * np.pi / 67.0))[None, None, :])
    f += 0.25 * rs.standard_normal(shape, dtype=cupy.float32)
    return (f > 0.3).astype(cupy.uint8)


def volume(side, chunk, pattern, seed=0):
    import cupy
    import dask.array as da

    return da.map_blocks(_block, pattern, seed, dtype=np.uint8,
                         chunks=da.core.normalize_chunks(chunk, (side,) * 3),
                         meta=cupy.empty((0, 0, 0), cupy.uint8))


def _checksums(labels):
    """Two int64 checksums of a chunk of labels (sum, and sum weighted by
    the position in the chunk), as a (1, 1, 1, 2) NumPy block."""
    import cupy

    flat = labels.ravel().astype(cupy.int64)
    w = cupy.arange(flat.size, dtype=cupy.int64) % 9973 + 1
    s = cupy.stack([flat.sum(), (flat * w).sum()])
    return cupy.asnumpy(s).reshape((1,) * labels.ndim + (2,))


def chunk_checksums(labels):
    import dask.array as da

    return da.map_blocks(_checksums, labels, dtype=np.int64, new_axis=labels.ndim,
                         chunks=tuple((1,) * len(c) for c in labels.chunks) + ((2,),),
                         meta=np.empty((0,) * (labels.ndim + 1), np.int64))


def reference(side, chunk, pattern, connectivity, repeat):
    """meshccl.label on the whole volume on GPU 0: (seconds, N, checksums)."""
    import cupy
    import dask
    import dask.array as da

    import meshccl

    x = dask.compute(volume(side, chunk, pattern), scheduler="sync")[0]
    meshccl.label(x, connectivity=connectivity)  # warm-up
    times = []
    for _ in range(repeat):
        cupy.cuda.Device().synchronize()
        t = time.perf_counter()
        lab, n = meshccl.label(x, connectivity=connectivity, return_num=True)
        n = int(n)
        cupy.cuda.Device().synchronize()
        times.append(time.perf_counter() - t)
    del x
    sums = dask.compute(chunk_checksums(da.from_array(lab, chunks=chunk)), scheduler="sync")[0]
    del lab
    cupy.get_default_memory_pool().free_all_blocks()
    return statistics.median(times), n, sums


def where_time_goes(stream):
    """Compute seconds per task kind (the key's prefix) and per worker."""
    from dask.utils import key_split

    per_kind = collections.Counter()
    per_worker = collections.Counter()
    for t in stream:
        kind = key_split(t["key"])
        for s in t.get("startstops", ()):
            if s["action"] == "compute":
                per_kind[kind] += s["stop"] - s["start"]
                per_worker[t.get("worker", "?")] += s["stop"] - s["start"]
            elif s["action"] == "transfer":
                per_kind["(transfer)"] += s["stop"] - s["start"]
    return per_kind, per_worker


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--side", type=int, default=1280,
                    help="cube side (default 1280: 2.1 G cells; about 40-50 GB on one GPU)")
    ap.add_argument("--chunk", type=int, default=256)
    ap.add_argument("--pattern", default="blobs", help="blobs or percolation")
    ap.add_argument("--connectivity", type=int, default=1)
    ap.add_argument("--gpus", default="1,2", help="worker counts (default 1,2)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--check-side", type=int, default=384,
                    help="also compare a cube of this side value for value (0: no)")
    args = ap.parse_args(argv)
    if args.pattern not in ("blobs", "percolation"):
        raise SystemExit(f"--pattern must be blobs or percolation, got {args.pattern!r}")

    import cupy
    import dask
    import dask_cuda
    import distributed
    from distributed import get_task_stream, performance_report, wait

    import meshccl
    import meshccl.dask as mdask

    os.makedirs(args.out, exist_ok=True)
    t0 = time.perf_counter()
    conn = args.connectivity
    cells = args.side ** 3
    print(f"{args.pattern} {args.side}^3 = {cells / 1e9:.2f} G cells, chunks {args.chunk}^3, "
          f"connectivity {conn}", flush=True)
    ref_s, n_ref, sums_ref = reference(args.side, args.chunk, args.pattern, conn, args.repeat)
    print(f"meshccl.label whole on GPU 0: {ref_s * 1e3:.1f} ms, N {n_ref}", flush=True)
    small = None
    if args.check_side:
        k = min(args.check_side, args.side)
        xs = dask.compute(volume(k, args.chunk // 2, args.pattern, seed=1), scheduler="sync")[0]
        small = (k, cupy.asnumpy(meshccl.label(xs, connectivity=conn)))
        del xs
        cupy.get_default_memory_pool().free_all_blocks()

    rows = []
    ngpu = cupy.cuda.runtime.getDeviceCount()
    for k in (int(g) for g in args.gpus.split(",")):
        if k > ngpu:
            print(f"skipping {k} GPUs: this machine has {ngpu}", flush=True)
            continue
        visible = ",".join(str(i) for i in range(k))
        with dask_cuda.LocalCUDACluster(CUDA_VISIBLE_DEVICES=visible, n_workers=k,
                                        threads_per_worker=1,
                                        dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            client.run(_warm)
            if small is not None:
                xs = volume(small[0], args.chunk // 2, args.pattern, seed=1)
                got = client.compute(mdask.label(xs, connectivity=conn)).result()
                if not np.array_equal(cupy.asnumpy(got), small[1]):
                    raise SystemExit(f"{k} GPUs: labels of the {small[0]}^3 check cube differ "
                                     "from meshccl.label")
                del got
                print(f"{k} GPUs: {small[0]}^3 cube labels equal to meshccl.label", flush=True)
            x = client.persist(volume(args.side, args.chunk, args.pattern))
            wait(x)
            times = []
            for r in range(args.repeat + 1):
                labels, n = mdask.label(x, connectivity=conn, return_num=True)
                report = r == args.repeat  # the last run: with the report
                t = time.perf_counter()
                if report:
                    html = os.path.join(args.out, f"performance-{k}gpu.html")
                    try:
                        ctx = performance_report(filename=html)
                        ctx.__enter__()
                    except Exception as exc:  # no bokeh: the task stream table only
                        print(f"no performance report ({exc})", flush=True)
                        ctx = None
                    with get_task_stream(client) as ts:
                        labels, n = client.persist([labels, n])
                        wait([labels, n])
                    dt = time.perf_counter() - t  # the HTML's rendering not counted
                    if ctx is not None:
                        ctx.__exit__(None, None, None)
                else:
                    labels, n = client.persist([labels, n])
                    wait([labels, n])
                    dt = time.perf_counter() - t
                if r == 0:
                    warm = dt  # the first run compiles kernels on each worker
                elif not report:
                    times.append(dt)
                n = int(n.compute())
                if n != n_ref:
                    raise SystemExit(f"{k} GPUs: N {n} differs from meshccl.label's {n_ref}")
                if r == 0:
                    sums = chunk_checksums(labels).compute()
                    if not np.array_equal(sums, sums_ref):
                        raise SystemExit(f"{k} GPUs: chunk checksums differ from meshccl.label's")
                    print(f"{k} GPUs: N and every chunk's checksums equal meshccl.label's",
                          flush=True)
                del labels
            per_kind, per_worker = where_time_goes(ts.data)
            secs = statistics.median(times) if times else dt
            # the floor of any chunked labelling on this cluster: step 1
            # alone (each chunk labelled, one task a chunk, nothing joined)
            step1 = []
            for _ in range(args.repeat + 1):
                t = time.perf_counter()
                alone = client.persist(x.map_blocks(_label_chunk, conn, dtype=np.int64))
                wait(alone)
                step1.append(time.perf_counter() - t)
                del alone
            step1 = statistics.median(step1[1:])
            rows.append({"gpus": k, "seconds": secs, "first_run_seconds": warm,
                         "report_run_seconds": dt, "N": n, "step1_alone_seconds": step1,
                         "compute_seconds_per_kind": dict(per_kind.most_common()),
                         "compute_seconds_per_worker": dict(per_worker)})
            print(f"{k} GPUs: {secs:.2f} s (median of {len(times)}; first {warm:.2f} s)",
                  flush=True)
            del x
    base = next((r["seconds"] for r in rows if r["gpus"] == 1), None)
    for r in rows:
        r["speedup_vs_1gpu"] = base / r["seconds"] if base else None
    meta = {"when": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "host": platform.node(),
            "device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
            "gpus_on_machine": ngpu, "dask": dask.__version__,
            "dask_cuda": dask_cuda.__version__, "cupy": cupy.__version__,
            "pattern": args.pattern, "side": args.side, "chunk": args.chunk,
            "connectivity": conn, "meshccl_label_whole_seconds": ref_s, "N": n_ref,
            "total_seconds": time.perf_counter() - t0, "argv": sys.argv[1:]}
    with open(os.path.join(args.out, "multigpu.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    lines = ["# meshccl.dask.label on 1 and 2 GPUs (dask_cuda.LocalCUDACluster)", "",
             f"{meta['when']}; {meta['device']} × {ngpu}; dask {meta['dask']}, dask-cuda "
             f"{meta['dask_cuda']}, CuPy {meta['cupy']}. {args.pattern} {args.side}³ uint8 "
             f"({cells / 1e9:.2f} G cells), CuPy chunks {args.chunk}³, connectivity {conn}, "
             f"N = {n_ref}. Seconds of `persist(labels, N)` until done (labels stay on the "
             f"GPUs), median of {args.repeat} after a warm-up run; checked: N and every "
             "chunk's checksums equal meshccl.label's on one GPU.", "",
             f"meshccl.label on the whole array, one GPU: {ref_s:.3f} s.", "",
             "**step 1 alone**: `persist(x.map_blocks(meshccl.label))` on the same "
             "chunks and cluster -- each chunk labelled, one task a chunk, nothing joined: "
             "the floor of a chunked labelling there (Dask's scheduling, the chunks' "
             "labelling), median of the same number of runs.", "",
             "| GPUs | seconds | speed-up vs 1 GPU | first run (compiles) | step 1 alone | "
             "× step 1 alone | × whole array |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        sp = f"{r['speedup_vs_1gpu']:.2f}×" if r["speedup_vs_1gpu"] else "n/a"
        lines.append(f"| {r['gpus']} | {r['seconds']:.2f} | {sp} | {r['first_run_seconds']:.2f} | "
                     f"{r['step1_alone_seconds']:.3f} | "
                     f"{r['seconds'] / r['step1_alone_seconds']:.1f}× | "
                     f"{r['seconds'] / ref_s:.0f}× |")
    for r in rows:
        lines += ["", f"Where the time goes, {r['gpus']} GPU(s) (task compute seconds summed "
                  "over workers, from the task stream of the reported run):", "",
                  "| task kind | seconds |", "|---|---:|"]
        lines += [f"| {k} | {v:.3f} |" for k, v in r["compute_seconds_per_kind"].items()]
    with open(os.path.join(args.out, "multigpu.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def _warm():
    import meshccl.dask  # noqa: F401


def _label_chunk(block, connectivity):
    import meshccl

    return meshccl.label(block, connectivity=connectivity, dtype=np.int64)


if __name__ == "__main__":
    main()
