"""Out-of-core labelling: a zarr volume larger than the memory of the worker
that labels it, read chunk by chunk, labelled by ``meshccl.dask.label`` and
written back as zarr chunk by chunk (issue 43, point 3).

The volume (uint8, 0/1) is generated chunk by chunk straight into zarr: a
threshold of three crossed sine waves of the global coordinates plus a
little per-chunk noise, so that components cross many chunks (a
labyrinth, like a gyroid) and the field is continuous across chunk faces.
Its side is chosen so that input + int64 labels (9 bytes a cell) are
``--factor`` times the worker's memory budget, unless ``--side`` is given.

CPU (default): ``distributed.LocalCluster(n_workers=1, memory_limit=budget)``,
one worker process; its resident memory (RSS) is sampled from this process
every ``--sample`` seconds (psutil), the peak reported.
``--gpu``: ``dask_cuda.LocalCUDACluster(n_workers=1, device_memory_limit=0.6 *
budget, memory_limit=host budget)`` with the worker's CuPy pool capped at
the budget (an allocation past it fails); chunks go to the
GPU by ``map_blocks(cupy.asarray)`` after reading and back by
``cupy.asnumpy`` before writing; the worker's CuPy memory pool
(``total_bytes``) is sampled through ``client.run`` as well as the RSS.

For each mode of ``--modes`` (``low``: ``low_memory=True``, the chunks
labelled again after the ranking; ``default``: the local labels held until
then, in memory or spilled to disk by the worker) it reports the wall time
of ``labels.to_zarr(...)`` (with N computed in the same pass), the peak
RSS and device pool, and checks the written labels against
``meshccl.label`` on a ``--check-side`` cube cut from the volume (that cube
labelled through the same zarr path on the same cluster).

Writes ``out_of_core.json`` and ``out_of_core.md`` in ``--out``.

    python benchmarks/dask_out_of_core.py --budget 1GiB --factor 3 --out /tmp/ooc
    python benchmarks/dask_out_of_core.py --gpu --budget 4GiB --factor 3 --out /tmp/ooc-gpu
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

UNITS = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def parse_bytes(text: str) -> int:
    t = text.strip().lower().replace("ib", "").replace("b", "")
    if t and t[-1] in UNITS:
        return int(float(t[:-1]) * UNITS[t[-1]])
    return int(float(t))


def gib(b) -> str:
    return f"{b / 2**30:.2f} GiB"


def _volume_block(block_info=None, period=(41.0, 53.0, 67.0), noise=0.25, seed=0):
    """One chunk of the test volume, from the global coordinates of its cells."""
    info = block_info[None]
    loc = info["array-location"]
    z, y, x = (np.arange(lo, hi, dtype=np.float32) for lo, hi in loc)
    f = (np.sin(z * (2 * np.pi / period[0]))[:, None, None]
         + np.sin(y * (2 * np.pi / period[1]))[None, :, None]
         + np.sin(x * (2 * np.pi / period[2]))[None, None, :])
    rng = np.random.default_rng([seed, *info["chunk-location"]])
    f += noise * rng.standard_normal(f.shape, dtype=np.float32)
    return (f > 0.3).astype(np.uint8)


def make_volume(path, side, chunk):
    import dask.array as da

    vol = da.map_blocks(_volume_block, dtype=np.uint8,
                        chunks=da.core.normalize_chunks(chunk, (side,) * 3),
                        meta=np.empty((0, 0, 0), np.uint8))
    vol.to_zarr(path, overwrite=True)


class Sampler:
    """Peak RSS of the worker processes (psutil, from here) and, for GPU
    workers, the peak of their CuPy pools (through ``client.run``)."""

    def __init__(self, client, every, gpu):
        import psutil

        self.client, self.every, self.gpu = client, every, gpu
        pids = client.run(os.getpid)
        self.procs = [psutil.Process(p) for p in pids.values()]
        self.peak_rss = 0
        self.peak_pool = 0
        self.peak_spilled = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        n = 0
        while not self._stop.is_set():
            try:
                self.peak_rss = max(self.peak_rss, sum(p.memory_info().rss for p in self.procs))
                if n % 4 == 0:
                    spilled = self.client.run(_spilled_bytes)
                    self.peak_spilled = max(self.peak_spilled, sum(spilled.values()))
                if self.gpu and n % 4 == 0:
                    pools = self.client.run(_pool_bytes)
                    self.peak_pool = max(self.peak_pool, sum(pools.values()))
            except Exception:  # a worker restarting: keep sampling
                pass
            n += 1
            self._stop.wait(self.every)

    def __enter__(self):
        self.peak_rss = sum(p.memory_info().rss for p in self.procs)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def _warm():
    import meshccl.dask  # noqa: F401


def _cap_pool(limit):
    """Make ``limit`` bytes a hard cap on the worker's CuPy memory pool: an
    allocation past it raises instead of taking more of the device, so the
    labelling really runs in that much device memory (dask-cuda's
    ``device_memory_limit`` only starts spilling there)."""
    import cupy

    cupy.get_default_memory_pool().set_limit(size=limit)
    return cupy.get_default_memory_pool().get_limit()


def _rss():
    import psutil

    return psutil.Process().memory_info().rss


def _spilled_bytes(dask_worker):
    """Bytes the worker has spilled to disk now (0 where its store does not say)."""
    try:
        return int(dask_worker.data.spilled_total[-1])
    except Exception:
        return 0


def _pool_bytes():
    import cupy

    return cupy.get_default_memory_pool().total_bytes()


def _to_gpu(a):
    import cupy

    return cupy.asarray(a)


def _to_host(a):
    import cupy

    return cupy.asnumpy(a)


def label_zarr(src, dst, gpu, low_memory, connectivity):
    """The recipe: zarr in, labels out as zarr, N in the same pass."""
    import dask
    import dask.array as da

    import meshccl.dask

    image = da.from_zarr(src)
    if gpu:
        image = image.map_blocks(_to_gpu)
    labels, n = meshccl.dask.label(image, connectivity=connectivity, return_num=True,
                                   low_memory=low_memory)
    if gpu:
        labels = labels.map_blocks(_to_host, dtype=labels.dtype,
                                   meta=np.empty((0,) * labels.ndim, labels.dtype))
    store = labels.to_zarr(dst, overwrite=True, compute=False)
    _, n = dask.compute(store, n)
    return int(n)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", default="1GiB",
                    help="the worker's memory limit (host; --gpu: the device limit)")
    ap.add_argument("--gpu", action="store_true",
                    help="CuPy chunks on a dask_cuda.LocalCUDACluster of one worker")
    ap.add_argument("--host-budget", default=None,
                    help="--gpu: the worker's host memory limit (default: --budget)")
    ap.add_argument("--factor", type=float, default=3.0,
                    help="input + int64 labels = factor x budget (default 3)")
    ap.add_argument("--side", type=int, default=None, help="cube side (overrides --factor)")
    ap.add_argument("--chunk", type=int, default=128, help="chunk side (default 128)")
    ap.add_argument("--connectivity", type=int, default=1)
    ap.add_argument("--modes", default="low", help="comma list of low, default (default: low)")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads of the worker (default: the CPUs; 1 with --gpu)")
    ap.add_argument("--check-side", type=int, default=160,
                    help="side of the cube checked against meshccl.label (0: none)")
    ap.add_argument("--sample", type=float, default=0.1, help="RSS sampling period, s")
    ap.add_argument("--dir", default=None, help="where the zarr stores go (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the zarr stores")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)

    import dask
    import dask.array as da
    import distributed
    import zarr

    import meshccl

    budget = parse_bytes(args.budget)
    host_budget = parse_bytes(args.host_budget) if args.host_budget else budget
    side = args.side or int(round((args.factor * budget / 9) ** (1 / 3)))
    os.makedirs(args.out, exist_ok=True)
    work = args.dir or tempfile.mkdtemp(prefix="meshccl-ooc-")
    os.makedirs(work, exist_ok=True)
    src = os.path.join(work, "volume.zarr")
    cells = side ** 3
    print(f"volume {side}^3 = {cells / 1e6:.0f} M cells, chunks {args.chunk}^3; input "
          f"{gib(cells)}, int64 labels {gib(8 * cells)}; worker budget {gib(budget)}"
          + (f" on the device, {gib(host_budget)} host" if args.gpu else ""), flush=True)
    t = time.perf_counter()
    make_volume(src, side, args.chunk)
    t_make = time.perf_counter() - t
    print(f"volume written in {t_make:.1f} s to {src}", flush=True)

    if args.gpu:
        import dask_cuda

        cluster = dask_cuda.LocalCUDACluster(n_workers=1, device_memory_limit=int(0.6 * budget),
                                             memory_limit=host_budget,
                                             threads_per_worker=args.threads or 1,
                                             dashboard_address=None)
    else:
        cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=args.threads
                                           or os.cpu_count(), memory_limit=budget,
                                           processes=True, dashboard_address=None)
    rows = []
    with cluster, distributed.Client(cluster) as client:
        # the worker's own footprint (Python, NumPy, numba, meshccl, Dask):
        # distributed pauses a worker at 80 % of its limit, so the budget
        # must leave room above it
        client.run(_warm)
        if args.gpu:
            client.run(_cap_pool, budget)
        idle = sum(client.run(_rss).values())
        print(f"idle worker RSS (meshccl imported) {gib(idle)}", flush=True)
        if idle > 0.5 * (host_budget if args.gpu else budget):
            print("warning: the budget leaves little room above the idle worker; it may "
                  "pause (distributed.worker.memory.pause)", flush=True)
        if args.check_side:
            k = min(args.check_side, side)
            sub = os.path.join(work, "check.zarr")
            da.from_zarr(src)[:k, :k, :k].rechunk(args.chunk // 2).to_zarr(sub, overwrite=True)
            want, n_want = meshccl.label(zarr.open_array(sub, mode="r")[:],
                                         connectivity=args.connectivity, return_num=True)
            for mode in args.modes.split(","):
                dst = os.path.join(work, "check-labels.zarr")
                n = label_zarr(sub, dst, args.gpu, mode == "low", args.connectivity)
                same = bool(np.array_equal(zarr.open_array(dst, mode="r")[:], want))
                print(f"check {k}^3 ({mode}): labels equal to meshccl.label: {same}, "
                      f"N {n} vs {n_want}", flush=True)
                if not same or n != n_want:
                    raise SystemExit("labels differ from meshccl.label")
        for mode in args.modes.split(","):
            dst = os.path.join(work, f"labels-{mode}.zarr")
            client.run(_trim)
            with Sampler(client, args.sample, args.gpu) as s:
                t = time.perf_counter()
                try:
                    n = label_zarr(src, dst, args.gpu, mode == "low", args.connectivity)
                    err = None
                except Exception as exc:  # a worker killed for memory: say so
                    n, err = None, f"{type(exc).__name__}: {exc}"
                wall = time.perf_counter() - t
            row = {"mode": mode, "low_memory": mode == "low", "side": side, "chunk": args.chunk,
                   "cells": cells, "N": n, "seconds": round(wall, 3),
                   "peak_worker_rss_bytes": s.peak_rss, "budget_bytes": budget,
                   "idle_worker_rss_bytes": idle, "peak_spilled_bytes": s.peak_spilled,
                   "error": err}
            if args.gpu:
                row["peak_device_pool_bytes"] = s.peak_pool
                row["host_budget_bytes"] = host_budget
            rows.append(row)
            print(f"{mode}: {wall:.1f} s, N {n}, peak worker RSS {gib(s.peak_rss)}, "
                  f"peak spilled to disk {gib(s.peak_spilled)}"
                  + (f", peak device pool {gib(s.peak_pool)}" if args.gpu else "")
                  + (f", failed: {err}" if err else ""), flush=True)
            if not args.keep:
                shutil.rmtree(dst, ignore_errors=True)
    meta = {"when": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "host": platform.node(), "cpus": os.cpu_count(), "gpu": args.gpu,
            "dask": dask.__version__, "distributed": distributed.__version__,
            "zarr": zarr.__version__, "volume_seconds": round(t_make, 3), "argv": sys.argv[1:]}
    if args.gpu:
        import cupy

        meta["device"] = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    with open(os.path.join(args.out, "out_of_core.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    lines = [f"# meshccl.dask.label out of core ({'GPU' if args.gpu else 'CPU'})", "",
             f"{meta['when']}; {meta.get('device', platform.processor() or 'CPU')}, "
             f"{meta['cpus']} CPUs; dask {meta['dask']}, zarr {meta['zarr']}. Volume "
             f"{side}³ uint8 ({gib(cells)}; int64 labels {gib(8 * cells)}), chunks "
             f"{args.chunk}³, connectivity {args.connectivity}; one worker limited to "
             f"{gib(budget)}{' of device memory' if args.gpu else ''} (idle worker RSS "
             f"{gib(rows[0]['idle_worker_rss_bytes']) if rows else '?'}).", "",
             "| mode | N | seconds | peak worker RSS | peak spilled to disk | "
             + ("peak device pool | " if args.gpu else "") + "note |",
             "|---|---:|---:|---:|---:|" + ("---:|" if args.gpu else "") + "---|"]
    for r in rows:
        lines.append(f"| {r['mode']} | {r['N']} | {r['seconds']:.1f} | "
                     f"{gib(r['peak_worker_rss_bytes'])} | {gib(r['peak_spilled_bytes'])} | "
                     + (f"{gib(r['peak_device_pool_bytes'])} | " if args.gpu else "")
                     + f"{r['error'] or ''} |")
    with open(os.path.join(args.out, "out_of_core.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    if not args.keep and not args.dir:
        shutil.rmtree(work, ignore_errors=True)


def _trim():
    """Give freed heap back to the OS before a measured run (glibc)."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass


if __name__ == "__main__":
    main()
