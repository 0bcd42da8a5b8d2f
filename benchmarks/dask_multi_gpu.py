"""meshccl.dask.label on one GPU and on several: Dask's threaded scheduler on
one GPU, and ``dask_cuda.LocalCUDACluster`` (one worker a GPU) with 1, 2,
... workers (issue 54, point 2).

The volume (``--side``³ uint8, CuPy chunks of ``--chunk``³) is generated on
the GPUs chunk by chunk, each chunk from a seed of its own and its global
position (``blobs``: a threshold of crossed sine waves plus noise,
components that cross many chunks; ``percolation``: site percolation at
p = 0.3116, many small components), so the same array exists on every
configuration without a copy from the client.  On a cluster of k workers
the chunks are generated and persisted in k slabs along axis 0, one a
worker (``client.persist(part, workers=[w])``), as a user whose workers
each read a part of a store would hold them; under the threaded scheduler
they are persisted on GPU 0.

For each configuration: a warm-up run (kernels compiled on each worker),
then ``--repeat`` timed runs of ``persist(labels, N)`` until done (the
labels stay on the GPUs); on a cluster the transfers between workers of
each timed run are read from every worker's ``transfer_incoming_log``
(bytes, count and seconds, per kind of key) and one run is recorded with
``get_task_stream`` (compute seconds per kind of task).  The floor of any
chunked labelling there, **step 1 alone** (``x.map_blocks(meshccl.label)``
persisted: one task a chunk, nothing joined), is timed on the same
configuration.  Checks: N equal to that of ``meshccl.label`` on the whole
volume on GPU 0 (timed too: the one-GPU reference), two checksums of every
chunk's labels equal those of the whole-array labels (computed on the
workers: 16 bytes a chunk travel), and a ``--check-side``³ cube, chunked
by half the chunk side, labelled value for value as ``meshccl.label``.

Writes ``dask_multi_gpu.md`` and ``dask_multi_gpu.json`` to ``--out`` (rows
as they finish, so a run cut short keeps what it measured).

    python benchmarks/dask_multi_gpu.py --out benchmarks/results/latest-h200-x2
    python benchmarks/dask_multi_gpu.py --side 1024 --chunk 256 --repeat 1 --out /tmp/mgpu
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


def _block(pattern, seed, offset=0, block_info=None):
    """One chunk of the volume on the current GPU, from its global position
    (its place in the part plus ``offset`` cells along axis 0) and its own
    seed."""
    import cupy

    loc = [list(r) for r in block_info[None]["array-location"]]
    loc[0] = [loc[0][0] + offset, loc[0][1] + offset]
    corner = tuple(lo for lo, _ in loc)
    rs = cupy.random.RandomState((seed * 1_000_003 + hash(corner)) % (2**32))
    shape = tuple(hi - lo for lo, hi in loc)
    if pattern == "percolation":
        return (rs.random_sample(shape, dtype=cupy.float32) < 0.3116).astype(cupy.uint8)
    z, y, x = (cupy.arange(lo, hi, dtype=cupy.float32) for lo, hi in loc)
    f = (cupy.sin(z * (2 * np.pi / 41.0))[:, None, None]
         + cupy.sin(y * (2 * np.pi / 53.0))[None, :, None]
         + cupy.sin(x * (2 * np.pi / 67.0))[None, None, :])
    f += 0.25 * rs.standard_normal(shape, dtype=cupy.float32)
    return (f > 0.3).astype(cupy.uint8)


def parts(side, chunk, pattern, k, seed=0):
    """The volume as k parts along axis 0 (whole rows of chunks, as even as
    the rows allow), each a lazy CuPy-backed Dask array."""
    import cupy
    import dask.array as da

    rows = da.core.normalize_chunks(chunk, (side,) * 3)[0]
    cut = np.array_split(np.arange(len(rows)), min(k, len(rows)))
    out = []
    for rs in cut:
        lo = int(sum(rows[:rs[0]]))
        chunks = (tuple(rows[i] for i in rs),) + da.core.normalize_chunks(chunk, (side,) * 3)[1:]
        out.append(da.map_blocks(_block, pattern, seed, lo, dtype=np.uint8, chunks=chunks,
                                 meta=cupy.empty((0, 0, 0), cupy.uint8)))
    return out


def volume(side, chunk, pattern, seed=0):
    """The whole volume, one lazy Dask array."""
    import dask.array as da

    return da.concatenate(parts(side, chunk, pattern, 1, seed), axis=0)


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


def _sync():
    import cupy

    cupy.cuda.Device().synchronize()


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
        _sync()
        t = time.perf_counter()
        lab, n = meshccl.label(x, connectivity=connectivity, return_num=True)
        n = int(n)
        _sync()
        times.append(time.perf_counter() - t)
    del x
    sums = dask.compute(chunk_checksums(da.from_array(lab, chunks=chunk)), scheduler="sync")[0]
    del lab
    cupy.get_default_memory_pool().free_all_blocks()
    return statistics.median(times), n, sums


def _kind(key):
    from dask.utils import key_split

    return key_split(key)


def transfer_log(dask_worker):
    """This worker's incoming transfers since the log was cleared: bytes,
    count and seconds per kind of key, and in all."""
    per = collections.defaultdict(lambda: [0, 0])
    total, seconds, count = 0, 0.0, 0
    for e in dask_worker.transfer_incoming_log:
        total += e["total"]
        seconds += e["duration"]
        count += 1
        for k, nb in e["keys"].items():
            per[_kind(k)][0] += nb
            per[_kind(k)][1] += 1
    return {"bytes": total, "seconds": seconds, "transfers": count,
            "per_kind": {k: v for k, v in per.items()}}


def clear_transfer_log(dask_worker):
    dask_worker.transfer_incoming_log.clear()


def transfers(client):
    """The cluster's incoming transfers since the logs were cleared, summed
    over workers."""
    out = {"bytes": 0, "seconds": 0.0, "transfers": 0, "per_kind": {}}
    for w in client.run(transfer_log).values():
        out["bytes"] += w["bytes"]
        out["seconds"] += w["seconds"]
        out["transfers"] += w["transfers"]
        for k, (nb, c) in w["per_kind"].items():
            got = out["per_kind"].setdefault(k, [0, 0])
            got[0] += nb
            got[1] += c
    return out


def where_time_goes(stream, t0):
    """Compute seconds per task kind (the key's prefix) and per worker, the
    number of tasks of each kind, and each kind's span on the wall clock:
    (its first task's start, its last task's stop), in seconds after
    ``t0`` (``time.time()`` when the graph was handed to the client)."""
    per_kind = collections.Counter()
    per_worker = collections.Counter()
    count = collections.Counter()
    spans = {}
    for t in stream:
        kind = _kind(t["key"])
        count[kind] += 1
        for s in t.get("startstops", ()):
            if s["action"] == "compute":
                per_kind[kind] += s["stop"] - s["start"]
                per_worker[t.get("worker", "?")] += s["stop"] - s["start"]
                lo, hi = spans.get(kind, (np.inf, -np.inf))
                spans[kind] = (min(lo, s["start"] - t0), max(hi, s["stop"] - t0))
    return per_kind, per_worker, count, spans


def _null_key(key):
    return ("null-" + key[0],) + tuple(key[1:]) if isinstance(key, tuple) else "null-" + key


def null_graph(collections):
    """The graph of ``collections`` with every task replaced by ``len`` of the
    list of its dependencies (the same dependencies, under new keys, so that
    no result of an earlier run is reused; the persisted input's tasks become
    such tasks too): what the scheduler and the workers cost for that
    graph's shape, without its work or its data.  (graph, keys)"""
    import dask.base
    import dask.core

    dsk = dict(dask.base.collections_to_expr(collections).__dask_graph__())
    out = {_null_key(key): (len, [_null_key(d) for d in dask.core.get_dependencies(dsk, key)])
           for key in dsk}
    keys = [_null_key(k) for c in collections for k in dask.core.flatten(c.__dask_keys__())]
    return out, keys


def _label_chunk(block, connectivity, run):
    """Step 1 alone for one chunk (``run`` numbers the repetition: keys of
    their own each time, so that a cluster cannot hand back the results of
    the run before, whose release may still be on its way)."""
    import meshccl

    return meshccl.label(block, connectivity=connectivity, dtype=np.int64)


def _warm():
    import meshccl.dask  # noqa: F401


def run_threads(args, n_ref, sums_ref, small):
    """One GPU, Dask's threaded scheduler: (row)."""
    import cupy
    import dask

    import meshccl.dask as mdask

    conn = args.connectivity
    if small is not None:
        xs = volume(small[0], args.chunk // 2, args.pattern, seed=1)
        got = dask.compute(mdask.label(xs, connectivity=conn), scheduler="threads")[0]
        if not np.array_equal(cupy.asnumpy(got), small[1]):
            raise SystemExit(f"threads: labels of the {small[0]}^3 check cube differ "
                             "from meshccl.label")
        del got
    (x,) = dask.persist(volume(args.side, args.chunk, args.pattern), scheduler="threads")
    times, first = [], None
    for r in range(args.repeat + 1):
        labels, n = mdask.label(x, connectivity=conn, return_num=True)
        _sync()
        t = time.perf_counter()
        labels, n = dask.persist(labels, n, scheduler="threads")
        _sync()
        dt = time.perf_counter() - t
        if r == 0:
            first = dt
            if int(n.compute()) != n_ref:
                raise SystemExit(f"threads: N {int(n.compute())} differs from {n_ref}")
            sums = dask.compute(chunk_checksums(labels), scheduler="threads")[0]
            if not np.array_equal(sums, sums_ref):
                raise SystemExit("threads: chunk checksums differ from meshccl.label's")
        else:
            times.append(dt)
        del labels
    step1 = []
    for _ in range(args.repeat + 1):
        _sync()
        t = time.perf_counter()
        (alone,) = dask.persist(x.map_blocks(_label_chunk, conn, len(step1), dtype=np.int64),
                                scheduler="threads")
        _sync()
        step1.append(time.perf_counter() - t)
        del alone
    del x
    cupy.get_default_memory_pool().free_all_blocks()
    return {"config": "threads, 1 GPU", "gpus": 1, "seconds": statistics.median(times),
            "first_run_seconds": first, "N": n_ref,
            "step1_alone_seconds": statistics.median(step1[1:])}


def run_cluster(args, k, n_ref, sums_ref, small):
    """k GPUs, a LocalCUDACluster of k workers: one row for each value of
    ``--cluster-keys`` (``meshccl._tuning.DASK_CLUSTER_KEYS``)."""
    import dask.array as da
    import dask_cuda
    import distributed
    from distributed import wait

    import meshccl.dask as mdask
    from meshccl import _tuning

    conn = args.connectivity
    visible = ",".join(str(i) for i in range(k))
    with dask_cuda.LocalCUDACluster(CUDA_VISIBLE_DEVICES=visible, n_workers=k,
                                    threads_per_worker=args.threads,
                                    dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        client.run(_warm)
        workers = sorted(client.scheduler_info()["workers"])
        pieces = [client.persist(p, workers=[w], allow_other_workers=False)
                  for p, w in zip(parts(args.side, args.chunk, args.pattern, k), workers)]
        wait(pieces)
        x = da.concatenate(pieces, axis=0)
        rows = []
        for keys in args.cluster_keys.split(","):
            with _tuning.override(DASK_CLUSTER_KEYS=keys):
                rows.append(_cluster_row(args, k, client, x, n_ref, sums_ref, small, keys))
            print(json.dumps({kk: v for kk, v in rows[-1].items() if "per_kind" not in kk}),
                  flush=True)
        step1 = []
        for _ in range(args.repeat + 1):
            t = time.perf_counter()
            alone = client.persist(x.map_blocks(_label_chunk, conn, len(step1),
                                                dtype=np.int64))
            wait(alone)
            step1.append(time.perf_counter() - t)
            del alone
    for row in rows:
        row["step1_alone_seconds"] = statistics.median(step1[1:])
    return rows


def _cluster_row(args, k, client, x, n_ref, sums_ref, small, keys):
    """The timed runs of one configuration on a running cluster (the graph
    built under this context's tuning): (row)."""
    import cupy
    from distributed import get_task_stream, wait

    import meshccl.dask as mdask

    conn = args.connectivity
    if small is not None:
        xs = volume(small[0], args.chunk // 2, args.pattern, seed=1)
        got = client.compute(mdask.label(xs, connectivity=conn)).result()
        if not np.array_equal(cupy.asnumpy(got), small[1]):
            raise SystemExit(f"{k} GPUs ({keys}): labels of the {small[0]}^3 check cube "
                             "differ from meshccl.label")
        del got
    times, moved, first, stream = [], [], None, None
    for r in range(args.repeat + 1):
        labels, n = mdask.label(x, connectivity=conn, return_num=True)
        client.run(clear_transfer_log)
        t = time.perf_counter()
        if r == args.repeat:
            with get_task_stream(client) as ts:
                t_wall = time.time()
                labels, n = client.persist([labels, n])
                wait([labels, n])
                t_done = time.time() - t_wall
            stream = ts.data
        else:
            labels, n = client.persist([labels, n])
            wait([labels, n])
        dt = time.perf_counter() - t
        if r == 0:
            first = dt
            if int(n.compute()) != n_ref:
                raise SystemExit(f"{k} GPUs ({keys}): N {int(n.compute())} differs from {n_ref}")
            sums = chunk_checksums(labels).compute()
            if not np.array_equal(sums, sums_ref):
                raise SystemExit(f"{k} GPUs ({keys}): chunk checksums differ from "
                                 "meshccl.label's")
        else:
            times.append(dt)
            moved.append(transfers(client))
        del labels, n
    per_kind, per_worker, count, spans = where_time_goes(stream, t_wall)
    null_s = null_tasks = None
    if args.null_graph:
        labels, n = mdask.label(x, connectivity=conn, return_num=True)
        dsk, keys_out = null_graph([labels, n])
        null_tasks = len(dsk)
        null_s = []
        for _ in range(args.repeat + 1):
            t = time.perf_counter()
            client.get(dsk, keys_out, sync=True)
            null_s.append(time.perf_counter() - t)
        null_s = statistics.median(null_s[1:])
        del labels, n
    last = moved[-1]
    return {"config": f"LocalCUDACluster, {k} GPU{'s' if k > 1 else ''}, {keys} keys",
            "gpus": k, "keys": keys,
            "seconds": statistics.median(times), "first_run_seconds": first, "N": n_ref,
            "transfer_bytes": statistics.median(m["bytes"] for m in moved),
            "transfer_seconds": statistics.median(m["seconds"] for m in moved),
            "transfers": last["transfers"],
            "transfer_bytes_per_kind": {kk: v[0] for kk, v in sorted(
                last["per_kind"].items(), key=lambda kv: -kv[1][0])},
            "tasks": len(stream), "tasks_per_kind": dict(count),
            "profiled_run_seconds": t_done,
            "null_graph_tasks": null_tasks, "null_graph_seconds": null_s,
            "span_per_kind": {kk: [round(a, 4), round(b, 4)] for kk, (a, b) in
                              sorted(spans.items(), key=lambda kv: kv[1][0])},
            "compute_seconds_per_kind": dict(per_kind.most_common()),
            "compute_seconds_per_worker": dict(per_worker)}


def write(out, meta, rows):
    with open(os.path.join(out, "dask_multi_gpu.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    ref_s = meta["meshccl_label_whole_seconds"]
    threads = next((r["seconds"] for r in rows if r["config"].startswith("threads")), None)
    lines = ["# meshccl.dask.label on one GPU and on several", "",
             f"{meta['when']}; {meta['device']} × {meta['gpus_on_machine']}, "
             f"{meta['cpus']} CPUs; dask {meta['dask']}, distributed {meta['distributed']}, "
             f"dask-cuda {meta['dask_cuda']}, CuPy {meta['cupy']}. {meta['pattern']} "
             f"{meta['side']}³ uint8 ({meta['side'] ** 3 / 1e9:.2f} G cells), CuPy chunks "
             f"{meta['chunk']}³, connectivity {meta['connectivity']}, N = {meta['N']}. "
             "Seconds of `persist(labels, N)` until done (labels stay on the GPUs), median of "
             f"{meta['repeat']} after a warm-up run; checked: N and every chunk's checksums "
             "equal those of meshccl.label on the whole volume, and a "
             f"{meta['check_side']}³ cube value for value. On a cluster ({meta['threads_per_worker']} "
             "threads a worker) the input is persisted in slabs along axis 0, one a worker. Transfers: every worker's incoming "
             "transfers during a timed run (bytes, seconds summed over transfers).", "",
             f"meshccl.label on the whole volume, one GPU: {ref_s:.3f} s.", "",
             "| configuration | seconds | speed-up vs 1-GPU cluster (same keys) | vs threads, 1 GPU | first run "
             "| step 1 alone | × step 1 alone | transfers | transfer MB | transfer seconds |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        base = next((b["seconds"] for b in rows if b["config"].startswith("LocalCUDACluster, 1 ")
                     and b.get("keys") == r.get("keys")), None)
        sp = f"{base / r['seconds']:.2f}×" if base else "n/a"
        st = f"{threads / r['seconds']:.2f}×" if threads else "n/a"
        tb = r.get("transfer_bytes")
        lines.append(
            f"| {r['config']} | {r['seconds']:.3f} | {sp} | {st} | {r['first_run_seconds']:.2f} | "
            f"{r['step1_alone_seconds']:.3f} | {r['seconds'] / r['step1_alone_seconds']:.1f}× | "
            f"{r.get('transfers', '')} | {'' if tb is None else f'{tb / 1e6:.1f}'} | "
            f"{'' if tb is None else format(r['transfer_seconds'], '.3f')} |")
    for r in rows:
        if "transfer_bytes_per_kind" in r:
            lines += ["", f"{r['config']}: MB moved between workers per kind of key "
                      "(one timed run): " + ", ".join(
                          f"{k} {v / 1e6:.1f}" for k, v in r["transfer_bytes_per_kind"].items())]
        if "compute_seconds_per_kind" in r:
            lines += [f"{r['config']}: {r['tasks']} tasks; compute seconds per kind of task "
                      "(summed over workers): " + ", ".join(
                          f"{k} {v:.3f}" for k, v in r["compute_seconds_per_kind"].items())]
        if r.get("null_graph_seconds") is not None:
            lines += [f"{r['config']}: the same graph with every task doing nothing "
                      f"({r['null_graph_tasks']} tasks, no input): {r['null_graph_seconds']:.3f} s"]
        if "span_per_kind" in r:
            lines += [f"{r['config']}: wall-clock span of each kind of task in the profiled run "
                      f"({r['profiled_run_seconds']:.3f} s; seconds after the graph was handed "
                      "to the client, first start - last stop; tasks): " + ", ".join(
                          f"{k} {a:.3f}-{b:.3f} ({r['tasks_per_kind'].get(k, '?')})"
                          for k, (a, b) in r["span_per_kind"].items())]
    with open(os.path.join(out, "dask_multi_gpu.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--side", type=int, default=2048,
                    help="cube side (default 2048: 8.6 G cells)")
    ap.add_argument("--chunk", type=int, default=512)
    ap.add_argument("--pattern", default="blobs", help="blobs or percolation")
    ap.add_argument("--connectivity", type=int, default=1)
    ap.add_argument("--gpus", default="1,2",
                    help="cluster worker counts (default 1,2; those above the machine's "
                         "GPUs are skipped)")
    ap.add_argument("--no-threads", action="store_true",
                    help="no row for the threaded scheduler on one GPU")
    ap.add_argument("--threads", type=int, default=8,
                    help="threads a cluster worker (default 8: each runs its GPU tasks on a "
                         "stream of its own, and the host steps in parallel)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--cluster-keys", default="fine",
                    help="values of meshccl._tuning.DASK_CLUSTER_KEYS to run on each cluster "
                         "(fine, coarse or both: fine,coarse)")
    ap.add_argument("--null-graph", action="store_true",
                    help="on a cluster also time the graph's shape alone: every task replaced "
                         "by one that does nothing (the scheduler's and workers' share)")
    ap.add_argument("--check-side", type=int, default=256,
                    help="also compare a cube of this side value for value (0: no)")
    args = ap.parse_args(argv)
    if args.pattern not in ("blobs", "percolation"):
        raise SystemExit(f"--pattern must be blobs or percolation, got {args.pattern!r}")

    import cupy
    import dask
    import dask_cuda
    import distributed

    import meshccl

    os.makedirs(args.out, exist_ok=True)
    t0 = time.perf_counter()
    conn = args.connectivity
    print(f"{args.pattern} {args.side}^3 = {args.side ** 3 / 1e9:.2f} G cells, chunks "
          f"{args.chunk}^3, connectivity {conn}", flush=True)
    ref_s, n_ref, sums_ref = reference(args.side, args.chunk, args.pattern, conn, args.repeat)
    print(f"meshccl.label whole on GPU 0: {ref_s * 1e3:.1f} ms, N {n_ref}", flush=True)
    small = None
    if args.check_side:
        k = min(args.check_side, args.side)
        xs = dask.compute(volume(k, args.chunk // 2, args.pattern, seed=1), scheduler="sync")[0]
        small = (k, cupy.asnumpy(meshccl.label(xs, connectivity=conn)))
        del xs
        cupy.get_default_memory_pool().free_all_blocks()
    ngpu = cupy.cuda.runtime.getDeviceCount()
    meta = {"when": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "host": platform.node(), "cpus": len(os.sched_getaffinity(0)),
            "device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
            "gpus_on_machine": ngpu, "dask": dask.__version__,
            "distributed": distributed.__version__, "dask_cuda": dask_cuda.__version__,
            "cupy": cupy.__version__, "threads_per_worker": args.threads,
            "pattern": args.pattern, "side": args.side,
            "chunk": args.chunk, "connectivity": conn, "repeat": args.repeat,
            "check_side": small[0] if small else 0, "meshccl_label_whole_seconds": ref_s,
            "N": n_ref, "argv": sys.argv[1:]}
    rows = []
    if not args.no_threads:
        rows.append(run_threads(args, n_ref, sums_ref, small))
        write(args.out, meta, rows)
    for k in (int(g) for g in args.gpus.split(",")):
        if k > ngpu:
            print(f"skipping {k} GPUs: this machine has {ngpu}", flush=True)
            continue
        rows += run_cluster(args, k, n_ref, sums_ref, small)
        meta["total_seconds"] = time.perf_counter() - t0
        write(args.out, meta, rows)


if __name__ == "__main__":
    main()
