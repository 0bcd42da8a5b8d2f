"""meshccl.dask.label against dask_image.ndmeasure.label on the same chunked
inputs and the same scheduler (issue 43, point 5; issue 54, point 6).

For each case (pattern, side, chunk side, connectivity; the cases in
increasing size) and each scheduler (``threads``: Dask's threaded
scheduler; ``cluster``: a ``distributed.LocalCluster`` of ``--workers``
processes sharing the CPUs, the input persisted on it), it times
``label(image)`` -- the call that builds the tool's graph -- and
``persist(labels, n)`` until done (the labels stay where they are computed:
in the process's memory, or on the cluster's workers; nothing gathered)
for

* ``meshccl.dask.label`` on NumPy chunks with ``numbering='sequential'``
  (1..N in chunk order, what dask-image gives: the one compared with it)
  and with ``numbering='raster'`` (``meshccl.label``'s values),
* ``dask_image.ndmeasure.label`` (SciPy per chunk) with the matching
  ``structure`` (``generate_binary_structure(3, c)``: 26 neighbours at c3),

and, as references on the whole array, ``meshccl.label`` (CPU, all numba
threads) and ``scipy.ndimage.label``.  With ``--gpu`` also
``meshccl.dask.label`` on CuPy chunks (threaded scheduler, one GPU) against
``meshccl.label`` on the whole CuPy array.

Checks, every case, where the labels live (nothing gathered): meshccl.dask's
raster labels equal ``meshccl.label``'s value for value (a BLAKE2b hash of
each block, computed by a task where the block is, against the same
block of the whole-array labels; CuPy chunks: compared whole), its
sequential ones and dask-image's are the same partition up to numbering
(each block's distinct pairs of their label and the checked raster
label, then one task over all pairs: a one-to-one map, background to
background).  A failed check stops the run.

The input is written once to a ``.npy`` file in ``--cache`` (kept for
later runs) and each task reads its block from it: the graph carries the
path, not the data, and a cluster's workers read their own blocks.  Each
row records where the run's time went (``phases_s``: making the input,
the reference, moving the input, each tool, each check) and is written
as soon as meshccl.dask's part is measured, then again after dask-image's,
so a run cut in dask-image keeps it.

Time limits: ``--dask-image-limit`` skips dask-image on a case whose
time, estimated from the same pattern, connectivity and scheduler on the
largest smaller side measured (scaled by the cells), exceeds it (the row
says so and keeps the estimate); ``--time-limit`` stops taking new cases
once the run has lasted that long.

``--steps`` (threaded scheduler) also runs each meshccl.dask computation
once under ``dask.diagnostics.Profiler`` and reports the task seconds of
each step (summed over tasks; the steps of ``docs/dask.md``), for both
numberings.

The issue's sizes: ``--side 512 --chunks 128`` (fits a 23 GB machine);
``--side 1024`` holds the input, the whole-array labels while hashed, and
meshccl.dask's raster labels (the partition checks' reference), the
sequential ones and dask-image's int32 at once: some 30 GB.

Writes ``dask_bench.md``, ``dask_bench.json`` and ``dask_bench.png`` to
``--out``.  ``--progress`` shows Dask's progress bar on each computation.

    python benchmarks/dask_bench.py --out /tmp/dask-bench               # 256³, 128³ and 64³ chunks
    python benchmarks/dask_bench.py --large --gpu --out results/dask    # and 512³
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def make_case(pattern, side, seed=0, gpu=False):
    """The input, a host array (drawn with CuPy where ``gpu``: another field
    of the same kind, much faster at 1024³)."""
    from meshccl import patterns

    xp = np
    if gpu:
        import cupy as xp
    shape = (side,) * 3
    if pattern == "blobs":
        x = patterns.blobs(shape, seed=seed, xp=xp).astype(xp.uint8)
    elif pattern == "percolation":
        x = patterns.percolation(shape, 0.3116, seed=seed, xp=xp).astype(xp.uint8)
    else:
        raise ValueError(f"pattern must be 'blobs' or 'percolation', got {pattern!r}")
    return x.get() if gpu else x


def input_array(x, chunk, path):
    """``x`` as a Dask array of ``chunk``-sided blocks, each task reading its
    block from the ``.npy`` file at ``path`` (written once, by a rename, so
    a run cut while writing leaves no half file): the graph carries the
    path, never the data, and a cluster's workers read their blocks
    themselves, as from a user's store."""
    import dask.array as da

    if not os.path.exists(path):
        np.save(path + ".part.npy", x)
        os.replace(path + ".part.npy", path)
    return da.map_blocks(_read_block, path, dtype=x.dtype,
                         chunks=da.core.normalize_chunks(chunk, x.shape),
                         meta=np.empty((0,) * x.ndim, x.dtype))


def _read_block(path, block_info=None):
    where = tuple(slice(a, b) for a, b in block_info[None]["array-location"])
    return np.ascontiguousarray(np.load(path, mmap_mode="r")[where])


def _block_hash(block):
    """BLAKE2b of a block's values as C-ordered int64."""
    import hashlib

    return hashlib.blake2b(np.ascontiguousarray(block, dtype=np.int64).data).digest()


def block_hashes(want, chunks):
    """:func:`_block_hash` of each block of the NumPy array ``want`` in the
    block layout ``chunks``, blocks in C order (threads: hashlib and the
    copies release the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    from dask.array.core import slices_from_chunks

    with ThreadPoolExecutor(len(os.sched_getaffinity(0))) as pool:
        return list(pool.map(lambda s: _block_hash(want[s]), slices_from_chunks(chunks)))


def _block_pairs(a, b):
    """The distinct (a, b) label pairs of the cells of two blocks of
    nonnegative labels, rows of an int64 array: each pair one int64 key
    (``a * (max b + 1) + b``), runs of equal keys in raster order dropped
    before sorting what is left."""
    a = np.asarray(a, np.int64).ravel()
    b = np.asarray(b, np.int64).ravel()
    if a.size == 0:
        return np.zeros((0, 2), np.int64)
    if int(a.min()) < 0 or int(b.min()) < 0:
        raise ValueError(f"labels must be nonnegative, got {min(a.min(), b.min())}")
    base = int(b.max()) + 1
    if int(a.max()) * base + base > np.iinfo(np.int64).max:
        raise ValueError(f"labels up to {int(a.max())} and {base - 1} do not fit one int64 key")
    key = a * base + b
    key = np.unique(key[np.r_[True, key[1:] != key[:-1]]])
    return np.stack([key // base, key % base], 1)


def _bijection(pair_blocks):
    """Whether the (a, b) pairs of every block, together, are a one-to-one
    map that takes 0 (background) to 0 and nothing else to 0; with the
    number of nonzero labels of a."""
    pairs = np.unique(np.concatenate(pair_blocks), axis=0)
    a, b = pairs[:, 0], pairs[:, 1]
    ok = (np.array_equal(a == 0, b == 0) and np.unique(a).size == a.size
          and np.unique(b).size == b.size)
    return bool(ok), int(np.count_nonzero(a))


def check_labels(labels, n, want_hashes, n_want, client, scheduler="threads"):
    """Whether the Dask labels ``labels`` equal the whole-array reference
    value for value (each block's :func:`_block_hash` against
    ``want_hashes``, its blocks in C order) and ``n`` is ``n_want``.  The
    hashes are computed where the blocks live: only they travel."""
    import dask

    hashes = [dask.delayed(_block_hash)(b) for b in labels.to_delayed().ravel()]
    got, count = _small(dask.delayed(_pair)(hashes, n), client, scheduler)
    return int(count) == n_want and list(got) == list(want_hashes)


def check_partition(labels, n, ref, n_want, client, scheduler="threads"):
    """Whether the Dask labels ``labels`` name the same components as the
    checked labels ``ref`` (same chunks) up to numbering, and ``n`` is
    ``n_want``: each block's distinct (label, ref label) pairs computed
    where the blocks live, then one task checks that all of them together
    are a bijection between the labels, background to background (two
    cells in one component of one are in one of the other, block by block
    and across blocks through the shared ref label).  Only the pairs
    travel, a few per component and block."""
    import dask

    pairs = [dask.delayed(_block_pairs)(a, b)
             for a, b in zip(labels.to_delayed().ravel(), ref.to_delayed().ravel())]
    (ok, count_a), count = _small(dask.delayed(_pair)(dask.delayed(_bijection)(pairs), n),
                                  client, scheduler)
    return ok and count_a == int(count) == n_want


def _pair(a, b):
    return a, b


def _small(result, client, scheduler):
    """A delayed result with small a value, computed on the cluster or the
    scheduler."""
    if client is not None:
        return client.compute(result).result()
    return result.compute(scheduler=scheduler)


@contextlib.contextmanager
def progress_bar(on, client):
    if on and client is None:
        from dask.diagnostics import ProgressBar

        with ProgressBar():
            yield
    else:
        yield


def compute(collections, scheduler, client, progress):
    """dask.compute on the chosen scheduler, with a progress bar if asked."""
    import dask

    if client is not None:
        futures = client.compute(list(collections))
        if progress:
            from distributed import progress as dprogress

            dprogress(futures)
        return client.gather(futures)
    with progress_bar(progress, None):
        return dask.compute(*collections, scheduler=scheduler)


def persist(collections, client, progress):
    """The collections persisted (threaded scheduler, or on the cluster) and
    waited for: their chunks computed where they stay."""
    import dask

    if client is not None:
        from distributed import wait

        out = client.persist(list(collections))
        if progress:
            from distributed import progress as dprogress

            dprogress(out)
        wait(out)
        return out
    with progress_bar(progress, None):
        return dask.persist(*collections, scheduler="threads")


def timed(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        out = None  # (a result persisted on a cluster released before the next run)
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--patterns", default="blobs,percolation")
    ap.add_argument("--side", default="256", help="cube sides (default 256; e.g. 512,1024)")
    ap.add_argument("--chunks", default="128,64", help="chunk sides (default 128,64)")
    ap.add_argument("--large", action="store_true", help="also 512³ with 128³ chunks")
    ap.add_argument("--connectivity", default="1,3")
    ap.add_argument("--schedulers", default="threads,cluster")
    ap.add_argument("--workers", type=int, default=2, help="LocalCluster processes")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dask-image-repeat", type=int, default=1)
    ap.add_argument("--dask-image-limit", type=float, default=None,
                    help="skip dask-image where its estimated seconds exceed this")
    ap.add_argument("--peer-limit", type=float, default=None,
                    help="stop dask-image on a case after this many seconds (its time then a "
                         "lower bound: the row says '> S'); runs it in a forked process on "
                         "the threaded scheduler")
    ap.add_argument("--peer-speedup", type=float, default=None,
                    help="with --peer-limit: stop dask-image only after the larger of "
                         "--peer-limit and this many times meshccl.dask's seconds on the case, "
                         "so that a cut still proves this speed-up")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="take no new case once the run has lasted this many seconds")
    ap.add_argument("--reference-repeat", type=int, default=None,
                    help="runs of the whole-array references (default --repeat)")
    ap.add_argument("--no-scipy", action="store_true", help="no scipy.ndimage.label reference")
    ap.add_argument("--no-dask-image", action="store_true")
    ap.add_argument("--draw-on-gpu", action="store_true",
                    help="draw the inputs with CuPy (other fields of the same kind; minutes "
                         "faster at 1024³), then label them on the CPU as always")
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--progress", action="store_true")
    ap.add_argument("--cache", default=None,
                    help="folder of the inputs as .npy files, read block by block by the tasks "
                         "and kept for later runs (default: a folder in the temporary directory)")
    ap.add_argument("--steps", action="store_true",
                    help="task seconds of each step (threaded scheduler)")
    ap.add_argument("--append", action="store_true",
                    help="add the rows to those of --out/dask_bench.json (runs split in parts)")
    args = ap.parse_args(argv)

    import dask
    import dask.array as da
    import scipy
    import scipy.ndimage as ndi

    import meshccl
    import meshccl.dask as mdask

    dask_image = None
    if not args.no_dask_image:
        import dask_image.ndmeasure as dask_image  # noqa: F811

    os.makedirs(args.out, exist_ok=True)
    sides = [int(v) for v in args.side.split(",")]
    cases = [(p, side, int(c), int(k)) for side in sides for p in args.patterns.split(",")
             for c in args.chunks.split(",") for k in args.connectivity.split(",")]
    if args.large and 512 not in sides:
        cases += [(p, 512, 128, int(k)) for p in args.patterns.split(",")
                  for k in args.connectivity.split(",")]
    cases.sort(key=lambda c: c[1])
    t_start = time.perf_counter()
    ref_repeat = args.reference_repeat or args.repeat
    meta = {"when": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "host": platform.node(), "cpus": len(os.sched_getaffinity(0)), "dask": dask.__version__,
            "scipy": scipy.__version__, "workers": args.workers, "repeat": args.repeat,
            "argv": sys.argv[1:], "drawn_on_gpu": args.draw_on_gpu}
    if dask_image is not None:
        from importlib.metadata import version

        meta["dask_image"] = version("dask-image")
    if args.gpu:
        import cupy

        meta["device"] = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
        meta["cupy"] = cupy.__version__
    rows = []
    old = os.path.join(args.out, "dask_bench.json")
    if args.append and os.path.exists(old):
        with open(old) as f:
            rows = json.load(f)["rows"]
    client = cluster = None
    data, refs = {}, {}  # inputs by (pattern, side); reference hashes and N by case
    cache = os.path.abspath(args.cache or os.path.join(tempfile.gettempdir(),
                                                       "meshccl-dask-bench"))
    os.makedirs(cache, exist_ok=True)
    for sched in args.schedulers.split(","):
        if sched == "cluster":
            cluster, client = start_cluster(args.workers)
        elif sched != "threads":
            raise SystemExit(f"--schedulers takes threads and cluster, got {sched!r}")
        warm(client, args.connectivity)
        for pattern, side, chunk, conn in cases:
            if args.time_limit and time.perf_counter() - t_start > args.time_limit:
                print(f"--time-limit {args.time_limit:g} s reached: {pattern} {side}^3 c{conn} "
                      f"({sched}) not run", flush=True)
                meta.setdefault("not_run", []).append(f"{pattern} {side}³ c{conn} {sched}")
                continue
            name = f"{pattern} {side}³, {chunk}³ chunks, c{conn}"
            row = {"case": name, "pattern": pattern, "side": side, "chunk": chunk,
                   "connectivity": conn, "scheduler": sched}
            phases = row["phases_s"] = {}  # where the run's time went, this row
            t = time.perf_counter()
            path = os.path.join(cache, f"{pattern}-{side}-seed0{'-gpu' if args.draw_on_gpu else ''}.npy")
            if (pattern, side) not in data:  # (from --cache when an earlier run made it)
                data[(pattern, side)] = (np.load(path) if os.path.exists(path)
                                         else make_case(pattern, side, gpu=args.draw_on_gpu))
            x = data[(pattern, side)]
            phases["make input"] = time.perf_counter() - t
            t = time.perf_counter()
            if (pattern, side, chunk, conn) not in refs:  # whole-array reference, once
                want, n_want = meshccl.label(x, connectivity=conn, return_num=True,
                                             cpu_threads=0)
                hashes = block_hashes(want, da.core.normalize_chunks(chunk, x.shape))
                refs[(pattern, side, chunk, conn)] = hashes, n_want
                del want
            want_hashes, n_want = refs[(pattern, side, chunk, conn)]
            phases["reference and its block hashes"] = time.perf_counter() - t
            if sched == "threads":  # whole-array references, timed once per case
                t = time.perf_counter()
                row["meshccl_label_s"], _ = timed(
                    lambda: meshccl.label(x, connectivity=conn, cpu_threads=0), ref_repeat)
                st = ndi.generate_binary_structure(3, conn)
                if not args.no_scipy:
                    row["scipy_s"], _ = timed(lambda: ndi.label(x, structure=st), ref_repeat)
                phases["whole-array timings"] = time.perf_counter() - t
            t = time.perf_counter()
            (image,) = persist((input_array(x, chunk, path),), client, False)
            phases["input to the scheduler"] = time.perf_counter() - t
            ref = None
            for numbering in ("raster", "sequential"):
                def build():  # (timed with the computation: a user waits for both)
                    return mdask.label(image, connectivity=conn, return_num=True,
                                       numbering=numbering)

                t = time.perf_counter()
                seconds, (plab, pn) = timed(
                    lambda: persist(build(), client, args.progress), args.repeat)
                phases[f"meshccl.dask {numbering} (x{args.repeat})"] = time.perf_counter() - t
                t = time.perf_counter()
                same = (check_labels(plab, pn, want_hashes, n_want, client) if ref is None
                        else check_partition(plab, pn, ref, n_want, client))
                phases[f"check {numbering}"] = time.perf_counter() - t
                if not same:
                    raise SystemExit(f"{name} ({sched}): meshccl.dask.label "
                                     f"(numbering={numbering!r}) differs from meshccl.label")
                row["meshccl_dask_s" if numbering == "sequential" else "meshccl_raster_s"] = seconds
                if ref is None:
                    ref = plab  # checked: the reference of the partition checks
                del plab, pn
                if args.steps and client is None:
                    t = time.perf_counter()
                    row[f"steps_{numbering}"] = step_seconds(lab, n)
                    phases[f"steps {numbering}"] = time.perf_counter() - t
            row["N"] = n_want
            estimate = _estimate(rows, row)
            rows.append(row)
            if dask_image is not None:  # written now: a run cut in dask-image keeps meshccl's
                row["dask_image_pending"] = True
                write_all(args.out, meta, rows, args.gpu)
            t = time.perf_counter()
            if dask_image is not None and args.dask_image_limit and estimate is not None \
                    and estimate > args.dask_image_limit:
                row["dask_image_skipped"] = (f"estimated {estimate:.0f} s from a smaller side > "
                                             f"--dask-image-limit {args.dask_image_limit:g} s")
                row["dask_image_estimate_s"] = estimate
            elif dask_image is not None and args.peer_limit:
                st = ndi.generate_binary_structure(3, conn)
                limit = max(args.peer_limit, (args.peer_speedup or 0) * row["meshccl_dask_s"])
                got = peer_limited(lambda: dask_image.label(image, structure=st), client,
                                   limit, ref, n_want)
                if got is None:  # cut: its time is a lower bound
                    row["dask_image_cut_s"] = limit
                    row["speedup_at_least"] = limit / row["meshccl_dask_s"]
                    if client is not None:  # (its tasks still run on the workers)
                        del ref, image
                        client.restart()
                        client.run(_warm)
                        warm(client, args.connectivity)
                else:
                    row["dask_image_s"] = got
                    row["speedup_vs_dask_image"] = row["dask_image_s"] / row["meshccl_dask_s"]
            elif dask_image is not None:
                st = ndi.generate_binary_structure(3, conn)
                row["dask_image_s"], (pdl, pdn) = timed(
                    lambda: persist(dask_image.label(image, structure=st), client,
                                    args.progress), args.dask_image_repeat)
                if not check_partition(pdl, pdn, ref, n_want, client):
                    raise SystemExit(f"{name} ({sched}): dask-image's components differ")
                del pdl, pdn
                row["speedup_vs_dask_image"] = row["dask_image_s"] / row["meshccl_dask_s"]
            row.pop("dask_image_pending", None)
            if dask_image is not None:
                phases["dask-image and its check"] = time.perf_counter() - t
            ref = image = None
            if args.gpu and sched == "threads":
                import cupy

                xg = cupy.asarray(x)

                def whole():
                    out = meshccl.label(xg, connectivity=conn)
                    cupy.cuda.Device().synchronize()
                    return out

                whole()
                row["gpu_label_s"], _ = timed(whole, args.repeat)
                gimage = da.from_array(xg, chunks=chunk)
                gwant = meshccl.label(xg, connectivity=conn)
                glab, gn = mdask.label(gimage, connectivity=conn, return_num=True)
                compute((glab, gn), "threads", None, False)  # warm-up: kernels compiled
                def chunked():
                    out = compute((glab, gn), "threads", None, args.progress)
                    cupy.cuda.Device().synchronize()
                    return out

                row["gpu_dask_s"], (ggot, gn) = timed(chunked, args.repeat)
                if not bool((ggot == gwant).all()) or int(gn) != n_want:
                    raise SystemExit(f"{name}: CuPy chunks differ from meshccl.label on the GPU")
                row["gpu_dask_over_label"] = row["gpu_dask_s"] / row["gpu_label_s"]
                del xg, gimage, glab, ggot, gwant
                cupy.get_default_memory_pool().free_all_blocks()
            print(json.dumps(row), flush=True)
            meta["total_seconds"] = time.perf_counter() - t_start
            write_all(args.out, meta, rows, args.gpu)
        if client is not None:
            client.close()
            cluster.close()
            client = cluster = None

    meta["total_seconds"] = time.perf_counter() - t_start
    write_all(args.out, meta, rows, args.gpu)
    with open(os.path.join(args.out, "dask_bench.md")) as f:
        print(f.read())


def start_cluster(workers):
    """A LocalCluster of ``workers`` processes sharing the CPUs, meshccl.dask
    imported on each, and its client."""
    import distributed

    nthreads = max(1, len(os.sched_getaffinity(0)) // workers)
    cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=nthreads,
                                       processes=True, dashboard_address=None)
    client = distributed.Client(cluster)
    client.run(_warm)
    return cluster, client


def warm(client, connectivity):
    """The chunk kernels compiled (once per process and connectivity: the
    threaded scheduler's, or each worker's); not timed."""
    import dask.array as da

    import meshccl.dask as mdask

    tiny = da.from_array((np.arange(12**3).reshape((12,) * 3) % 3 == 0).astype(np.uint8),
                         chunks=6)
    for conn in {int(k) for k in connectivity.split(",")}:
        compute(mdask.label(tiny, connectivity=conn, return_num=True), "threads", client, False)


def peer_limited(build, client, limit, ref, n_want):
    """Seconds of ``persist(*build())`` until done -- ``build`` makes the
    peer's graph (dask-image builds its graph in Python, in time that grows
    faster than its chunks: at 512 chunks it alone can pass the limit), so
    the graph's construction is timed with its computation -- or None where
    both have not finished within ``limit`` seconds (then stopped).  The
    construction runs in a forked process, killed at the limit.  On the
    threaded scheduler that process also computes (with its own thread
    pool); on a cluster it reports how long the construction took, and if
    that was within the limit the graph is built again here and its
    persisted futures are waited for with the time left (after a cut the
    caller restarts the workers: their tasks keep running).  The
    components are checked against the checked labels ``ref`` (a Dask
    array of the same chunks) by :func:`check_partition`, where the labels
    are."""
    import multiprocessing
    from concurrent.futures import ThreadPoolExecutor

    import dask

    def child(send):
        t = time.perf_counter()
        labels, n = build()
        if client is not None:
            send.send((time.perf_counter() - t, None))
            return
        with ThreadPoolExecutor(len(os.sched_getaffinity(0))) as pool, \
                dask.config.set(pool=pool):
            plab, pn = dask.persist(labels, n, scheduler="threads")
            seconds = time.perf_counter() - t
            send.send((seconds, check_partition(plab, pn, ref, n_want, None)))

    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=child, args=(send,))
    proc.start()
    done = recv.poll(limit + 5)  # (the check after the timed part: a few seconds more)
    result = recv.recv() if done else None
    proc.kill()
    proc.join()
    if result is None or result[0] > limit:
        return None
    if client is not None:
        from distributed import wait

        t = time.perf_counter()
        out = client.persist(list(build()))
        try:
            wait(out, timeout=max(limit - (time.perf_counter() - t), 0.001))
        except TimeoutError:
            client.cancel(out)
            return None
        seconds = time.perf_counter() - t
        if not check_partition(out[0], out[1], ref, n_want, client):
            raise SystemExit("dask-image's components differ")
        return seconds
    if not result[1]:
        raise SystemExit("dask-image's components differ")
    return result[0]


def write_all(out, meta, rows, gpu):
    with open(os.path.join(out, "dask_bench.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    write_markdown(os.path.join(out, "dask_bench.md"), meta, rows, gpu)
    plot(os.path.join(out, "dask_bench.png"), rows)


def _estimate(rows, row):
    """dask-image's seconds on ``row``'s case, from the same pattern,
    connectivity, chunk and scheduler on the largest smaller side measured,
    scaled by the cells; None where there is none."""
    same = [r for r in rows if "dask_image_s" in r and r["side"] < row["side"]
            and all(r[k] == row[k] for k in ("pattern", "connectivity", "chunk", "scheduler"))]
    if not same:
        return None
    r = max(same, key=lambda r: r["side"])
    return r["dask_image_s"] * (row["side"] / r["side"]) ** 3


#: the steps of meshccl.dask.label (docs/dask.md), by the names of their tasks
STEPS = (("1-2 chunks: labels, ids, layers", ("chunk", "summary", "local", "layers")),
         ("3 faces", ("face-pairs",)), ("4 tree", ("solve",)),
         ("5 numbering", ("reps", "counted", "prefix", "offsets", "roots", "number", "asked",
                          "moved", "resolve", "table")),
         ("6 renumber", ("label",)))


def _step_of(key):
    """The step of a task by its key's name; a task that Dask fused with the
    ones before it (e.g. ``array-meshccl-chunk-<token>``: reading the
    input chunk and step 1) counts for the last meshccl step it names."""
    name = str(key[0] if isinstance(key, tuple) else key)
    found, at = "other", -1
    for step, names in STEPS:
        for n in names:
            k = name.rfind(f"meshccl-{n}-")
            if k > at:
                found, at = step, k
    return found


def step_seconds(lab, n):
    """Task seconds of each step of one threaded computation of (lab, n)."""
    import dask
    from dask.diagnostics import Profiler

    with Profiler() as prof:
        dask.compute(lab, n, scheduler="threads")
    out = {step: 0.0 for step, _ in STEPS}
    for r in prof.results:
        step = _step_of(r.key)
        out[step] = out.get(step, 0.0) + (r.end_time - r.start_time)
    return out


def _warm():
    import meshccl.dask  # noqa: F401


def _fmt(v, digits=3, unit=""):
    return "n/a" if v is None else f"{v:.{digits}g}{unit}"


def write_markdown(path, meta, rows, gpu):
    lines = ["# meshccl.dask.label against dask_image.ndmeasure.label", "",
             f"{meta['when']}; {meta['cpus']} CPUs{', ' + meta['device'] if gpu else ''}; "
             f"dask {meta['dask']}, dask-image {meta.get('dask_image', 'n/a')}, "
             f"SciPy {meta['scipy']}. Seconds of `persist(*label(image))` until done, the "
             "call that builds each tool's graph included (nothing "
             f"gathered), median of {meta['repeat']} (dask-image: "
             "its own count); every label checked (meshccl.dask = meshccl.label value for "
             "value; dask-image the same components). `threads`: Dask's threaded "
             f"scheduler; `cluster`: a LocalCluster of {meta['workers']} processes, the input "
             "persisted on it.", "",
             "meshccl.dask: `numbering='sequential'` (the numbering dask-image gives; "
             "the speed-up is against it), and `'raster'` (meshccl.label's values). c3: "
             "26 neighbours (dask-image: `structure=np.ones((3, 3, 3))`).", "",
             "| case | scheduler | N | meshccl.dask | dask-image | speed-up | meshccl.dask raster |"
             " meshccl.label whole | scipy whole |"
             + (" GPU dask | GPU whole | GPU dask / whole |" if gpu else ""),
             "|---|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|---:|" if gpu else "")]
    for r in rows:
        di = _fmt(r.get("dask_image_s"))
        speedup = _fmt(r.get('speedup_vs_dask_image'), unit='×')
        if "dask_image_skipped" in r:
            di = f"skipped (est. {r['dask_image_estimate_s']:.0f})"
        if "dask_image_cut_s" in r:
            di = f"> {r['dask_image_cut_s']:.3g} (stopped)"
            speedup = f"> {r['speedup_at_least']:.3g}×"
        if r.get("dask_image_pending"):
            di = "running when the run was cut"
        line = (f"| {r['case']} | {r['scheduler']} | {r['N']} | {_fmt(r['meshccl_dask_s'])} | "
                f"{di} | {speedup} | "
                f"{_fmt(r.get('meshccl_raster_s'))} | "
                f"{_fmt(r.get('meshccl_label_s'))} | {_fmt(r.get('scipy_s'))} |")
        if gpu:
            line += (f" {_fmt(r.get('gpu_dask_s'))} | {_fmt(r.get('gpu_label_s'))} | "
                     f"{_fmt(r.get('gpu_dask_over_label'), unit='×')} |")
        lines.append(line)
    stepped = [r for r in rows if "steps_raster" in r]
    if stepped:
        names = [step for step, _ in STEPS]
        lines += ["", "Task seconds of each step (one threaded run under "
                  "`dask.diagnostics.Profiler`, summed over the step's tasks):", "",
                  "| case | numbering | " + " | ".join(names) + " |",
                  "|---|---|" + "---:|" * len(names)]
        for r in stepped:
            for numbering in ("sequential", "raster"):
                st = r[f"steps_{numbering}"]
                lines.append(f"| {r['case']} | {numbering} | "
                             + " | ".join(_fmt(st.get(k)) for k in names) + " |")
    if meta.get("not_run"):
        lines += ["", "Not run (`--time-limit`): " + "; ".join(meta["not_run"]) + "."]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def plot(path, rows):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tools = [("meshccl_dask_s", "meshccl.dask (CPU chunks)"),
             ("dask_image_s", "dask-image"), ("gpu_dask_s", "meshccl.dask (CuPy chunks)")]
    tools = [t for t in tools if any(t[0] in r or (t[0] == "dask_image_s" and
                                                   "dask_image_cut_s" in r) for r in rows)]
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(rows) + 2), 4.5))
    width = 0.8 / len(tools)
    for i, (k, name) in enumerate(tools):
        heights = [r.get(k, r.get("dask_image_cut_s", np.nan) if k == "dask_image_s" else np.nan)
                   for r in rows]
        bars = ax.bar([j + i * width for j in range(len(rows))], heights, width, label=name)
        for bar, r in zip(bars, rows):  # (stopped at the limit: a lower bound)
            if k == "dask_image_s" and "dask_image_cut_s" in r:
                bar.set_hatch("//")
    if tools and tools[0][0] == "meshccl_dask_s":
        # dask-image's time over meshccl.dask's above each pair of bars
        for j, r in enumerate(rows):
            if "speedup_vs_dask_image" in r:
                ax.annotate(f"{r['speedup_vs_dask_image']:.0f}×",
                            (j + width / 2, max(r["dask_image_s"], r["meshccl_dask_s"])),
                            xytext=(0, 3), textcoords="offset points", ha="center", fontsize=7)
            elif "dask_image_cut_s" in r:
                ax.annotate(f"> {r['speedup_at_least']:.0f}×",
                            (j + width / 2, max(r["dask_image_cut_s"], r["meshccl_dask_s"])),
                            xytext=(0, 3), textcoords="offset points", ha="center", fontsize=7)
            elif "dask_image_skipped" in r:
                ax.annotate("dask-image\nnot run", (j + width / 2, r["meshccl_dask_s"]),
                            xytext=(0, 3), textcoords="offset points", ha="center", fontsize=6)
    ax.set_title("meshccl.dask.label against dask_image.ndmeasure.label\n"
                 "(above the bars: dask-image's time / meshccl.dask's; hatched: dask-image "
                 "stopped at the limit)", fontsize=9)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(rows))])
    ax.set_xticklabels([f"{r['case']}\n{r['scheduler']}" for r in rows], rotation=60,
                       ha="right", fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("seconds (log)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
