"""A volume no GPU holds as input + labels, labelled on one GPU for N, counts
and statistics without ever holding its labels (issue 54, point 4).

The volume (``--side``³ uint8 in ``--chunk``³ CuPy chunks) is a function of
a seed and each chunk's position, generated on the GPU by the task that
needs the chunk, as a store read chunk by chunk would give it: each cell a
function of the seed and its global position (a counter-based hash, no
cuRAND, the same cells whatever the chunking): blobs (three crossed sine
waves of the global coordinates plus Gaussian noise of ``--noise``,
thresholded; components cross chunk faces) or site percolation at
p = 0.3116.  ``meshccl.dask.label(x, return_num=True,
return_statistics=True, low_memory=True)`` is computed for N and the
statistics alone under the threaded scheduler: step 1 keeps of each chunk
its layers, ids and the table of its local labels (counts, boxes,
coordinate sums), never its labels, and the result's rows come from those
tables through the numbering (``docs/dask.md``).  Nothing is spilled: what
lives across the numbering is host and device memory, both sampled.

Reported (``dask_ooc.md``, ``dask_ooc.json`` in ``--out``, written as
they come): the wall time; then the floor of any chunked labelling here,
the chunks generated and labelled alone (N of each chunk summed, nothing
kept); the peak device memory (``cudaMemGetInfo``'s used bytes, sampled
every ``--sample`` s, less those used before the run) and CuPy's pool;
the peak host RSS (sampled) and ``ru_maxrss``.  ``--check-side S`` first
labels an S³ volume of the same kind both ways and checks N and the
statistics equal to ``meshccl.label(whole, return_statistics=True)`` on the
whole array (which must fit the GPU), twice: the first computation in the
process with its NVRTC compilations counted, then a second.  ``--zarr DIR``
also writes the labels (int32, Blosc zstd level 1) to ``DIR/check.zarr``
and ``DIR/labels.zarr`` in the same pass (the check reads them back and
compares them with the whole-array labels), and reports the store's bytes
on disk.

(``dask_out_of_core.py`` measures the other out-of-core path: labels read
from and written to zarr through a memory-capped ``distributed`` worker.)

    python benchmarks/dask_ooc.py --side 3072 --chunk 512 --check-side 1024 --out /tmp/ooc
    python benchmarks/dask_ooc.py --side 1024 --chunk 256 --zarr /tmp/z --out /tmp/ooc
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


#: One cell of the volume from the seed and the cell's global position alone:
#: a splitmix64 finaliser of (seed, global flat index) gives 64 random bits,
#: the same whatever the chunking; percolation keeps a cell where 24 of them,
#: as a fraction, fall below p; blobs add three crossed sine waves of the
#: global coordinates to Gaussian noise (Box-Muller on two 24-bit fractions)
#: and keep the cells above 0.3.  No cuRAND: nothing but this kernel runs.
_CELL = r"""
    long long z = i / (ny * nx) + z0, y = (i / nx) % ny + y0, x = i % nx + x0;
    unsigned long long h = seed * 0x9E3779B97F4A7C15ULL + (z * sy + y) * sx + x;
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ULL;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBULL;
    h ^= h >> 31;
    float u = (float)(h >> 40) * (1.0f / 16777216.0f);
    if (blobs) {
        float v = ((float)((h >> 16) & 0xFFFFFFULL) + 0.5f) * (1.0f / 16777216.0f);
        const float two_pi = 6.283185307179586f;
        float f = noise * sqrtf(-2.0f * logf(v)) * cosf(two_pi * u)
                  + sinf(z * (two_pi / 41.0f)) + sinf(y * (two_pi / 53.0f))
                  + sinf(x * (two_pi / 67.0f));
        out = f > 0.3f;
    } else {
        out = u < 0.3116f;
    }
"""


@functools.lru_cache(maxsize=1)
def _cell_kernel():
    import cupy

    return cupy.ElementwiseKernel(
        "int64 ny, int64 nx, int64 z0, int64 y0, int64 x0, int64 sy, int64 sx, uint64 seed, "
        "bool blobs, float32 noise", "uint8 out", _CELL, "meshccl_bench_cells")


def _block(pattern, noise, seed, block_info=None):
    """One chunk on the current GPU, from the seed and its global position
    (:data:`_CELL`): the same cells whatever the chunking."""
    import cupy

    info = block_info[None]
    (z0, z1), (y0, y1), (x0, x1) = info["array-location"]
    _, sy, sx = info["shape"]
    out = cupy.empty((z1 - z0, y1 - y0, x1 - x0), dtype=cupy.uint8)
    _cell_kernel()(y1 - y0, x1 - x0, z0, y0, x0, sy, sx, np.uint64(seed),
                   pattern == "blobs", np.float32(noise), out)
    return out


def volume(side, chunk, pattern, noise, seed=0):
    import cupy
    import dask.array as da

    return da.map_blocks(_block, pattern, noise, seed, dtype=np.uint8,
                         chunks=da.core.normalize_chunks(chunk, (side,) * 3),
                         meta=cupy.empty((0, 0, 0), cupy.uint8))


class Peaks:
    """Samples the device's used bytes, CuPy's pool and this process's RSS
    in a thread; the peaks above the values at the start."""

    def __init__(self, every):
        self.every = every
        self.device = self.pool = self.rss = 0

    def _read(self):
        import cupy

        free, total = cupy.cuda.runtime.memGetInfo()
        with open("/proc/self/statm") as f:
            rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        return total - free, cupy.get_default_memory_pool().total_bytes(), rss

    def _run(self):
        while not self._stop.is_set():
            d, p, r = self._read()
            self.device, self.pool, self.rss = (max(self.device, d), max(self.pool, p),
                                                max(self.rss, r))
            self._stop.wait(self.every)

    def __enter__(self):
        self.base = self._read()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def _n_alone(block):
    import meshccl

    return np.array([meshccl.label(block, return_num=True)[1]], np.int64).reshape(1, 1, 1)


def floor(x):
    """The chunks generated and labelled alone (each chunk's N, summed)."""
    import cupy

    _n_alone(x.blocks[0, 0, 0].compute(scheduler="threads"))  # (compiled before the clock)
    t = time.perf_counter()
    n = x.map_blocks(_n_alone, dtype=np.int64, chunks=(1, 1, 1),
                     meta=np.empty((0, 0, 0), np.int64)).sum().compute(scheduler="threads")
    cupy.cuda.Device().synchronize()
    return time.perf_counter() - t, int(n)


def _to_host(block, dtype):
    """A chunk of labels as a NumPy array of ``dtype`` (copied from its GPU)."""
    block = block.astype(dtype, copy=False)
    return block.get() if hasattr(block, "get") else block


def zarr_array(path, shape, chunk, dtype):
    """A new zarr array at ``path`` (chunks of ``chunk``³, Blosc-compressed
    with zstd at level 1, byte-shuffled) for the labels."""
    import zarr
    from zarr.codecs import BloscCodec

    return zarr.create_array(store=path, shape=shape, chunks=(chunk,) * len(shape),
                             dtype=dtype, overwrite=True,
                             compressors=BloscCodec(cname="zstd", clevel=1, shuffle="shuffle"))


def ooc(x, connectivity, store=None):
    """N and the statistics, and with ``store`` (a zarr array) the labels
    written chunk by chunk in the same pass (each chunk labelled again after
    the numbering, renumbered, copied to the host and compressed there);
    the labels are never held at once.  (seconds, N, stats)."""
    import dask
    import dask.array as da

    import meshccl.dask

    labels, num, stats = meshccl.dask.label(x, connectivity=connectivity, return_num=True,
                                            return_statistics=True, low_memory=True)
    # the arrays (N, the store's) together and the delayed statistics last:
    # dask 2026.8's compute returns its results grouped by kind, in the
    # order each kind first comes, not in the order asked
    todo = [num]
    if store is not None:
        host = labels.map_blocks(_to_host, store.dtype, dtype=store.dtype,
                                 meta=np.empty((0,) * x.ndim, store.dtype))
        todo.append(da.store(host, store, lock=False, compute=False))
    t = time.perf_counter()
    got = dask.compute(*todo, stats, scheduler="threads")
    return time.perf_counter() - t, int(got[0]), got[-1]


def check(args):
    """The same kind of volume at --check-side, both ways: equal?"""
    import cupy
    import dask

    import meshccl

    x = volume(args.check_side, args.check_chunk, args.pattern, args.noise, seed=1)
    whole = dask.compute(x, scheduler="threads")[0]
    t = time.perf_counter()
    _, n, want = meshccl.label(whole, connectivity=args.connectivity, return_num=True,
                               return_statistics=True)
    cupy.cuda.Device().synchronize()
    whole_s = time.perf_counter() - t
    store = None
    if args.zarr:
        store = zarr_array(os.path.join(args.zarr, "check.zarr"), whole.shape, args.check_chunk,
                           np.int32)
    want_labels = cupy.asnumpy(meshccl.label(whole, connectivity=args.connectivity))
    del whole
    # twice: the first computation compiles what it needs (NVRTC compilations
    # counted, with the seconds they took, summed over threads)
    from dask_gpu import Compiles

    with Compiles() as compiles:
        first, _, _ = ooc(x, args.connectivity, store)
    seconds, got_n, got = ooc(x, args.connectivity, store)
    equal = got_n == int(n) and all(
        bool(cupy.array_equal(cupy.asarray(got[k]), want[k])) for k in want)
    if store is not None:
        equal = equal and bool(np.array_equal(store[...], want_labels))
    return {"side": args.check_side, "chunk": args.check_chunk, "n": int(n), "equal": equal,
            "seconds": seconds, "first_seconds": first, "first_compiles": compiles.count,
            "first_compile_seconds": compiles.seconds, "zarr": store is not None,
            "whole_label_statistics_s": whole_s}


def write(out, row):
    with open(os.path.join(out, "dask_ooc.json"), "w") as f:
        json.dump(row, f, indent=1)
    gb = 2**30
    lines = [f"# meshccl.dask.label statistics out of core, one GPU ({row.get('device')}, "
             f"{row.get('when')})", "",
             f"{row['pattern']} (noise {row['noise']}) {row['side']}³ = "
             f"{row['side'] ** 3 / 1e9:.1f} G cells in {row['chunk']}³ chunks "
             f"({row['chunks']}), connectivity {row['connectivity']}, threaded scheduler, "
             f"`low_memory=True`; input {row['side'] ** 3 / gb:.1f} GiB, its int32 labels "
             f"{4 * row['side'] ** 3 / gb:.1f} GiB (never held)", ""]
    if "check" in row and "error" in row["check"]:
        lines += ["check failed:", "", "```", row["check"]["error"], "```", ""]
    elif "check" in row:
        c = row["check"]
        lines += [f"check at {c['side']}³ in {c['chunk']}³ chunks: N = {c['n']}, statistics "
                  f"equal to meshccl.label's on the whole array: {c['equal']} "
                  f"({c['seconds']:.2f} s out of core"
                  + (", labels written to zarr and read back equal" if c.get("zarr") else "")
                  + f"; {c['whole_label_statistics_s']:.3f} s whole; the first computation in "
                  f"this process {c['first_seconds']:.2f} s, {c['first_compiles']} NVRTC "
                  f"compilations, {c['first_compile_seconds']:.2f} s of compiling summed over "
                  "threads)", ""]
    if "floor_s" in row:
        lines += [f"chunks generated and labelled alone: {row['floor_s']:.2f} s "
                  f"(sum of the chunks' N {row['floor_n']})", ""]
    if "seconds" in row:
        lines += ["| | |", "|---|---:|",
                  f"| wall seconds (N and statistics"
                  f"{', labels written to zarr' if 'zarr_bytes' in row else ''}) | "
                  f"{row['seconds']:.2f} |",
                  f"| N | {row['n']} |",
                  f"| × chunks alone | {row['seconds'] / row['floor_s']:.1f}× |"
                  if "floor_s" in row else "| × chunks alone | |",
                  f"| peak device used, above the start | {row['peak_device'] / gb:.1f} GiB |",
                  f"| peak CuPy pool | {row['peak_pool'] / gb:.1f} GiB |",
                  f"| peak host RSS (sampled) | {row['peak_rss'] / gb:.1f} GiB |",
                  f"| host ru_maxrss | {row['maxrss'] / gb:.1f} GiB |",
                  "| spilled | nothing (threaded scheduler, no spilling) |"]
        if "zarr_bytes" in row:
            lines += [f"| labels in zarr (int32, Blosc zstd 1) | {row['zarr_bytes'] / gb:.1f} GiB "
                      f"on disk ({row['zarr_bytes'] / (4 * row['side'] ** 3):.3f} of raw), "
                      f"{row['disk_free'] / gb:.0f} GiB left free |"]
    with open(os.path.join(out, "dask_ooc.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--side", type=int, default=3072)
    ap.add_argument("--chunk", type=int, default=512)
    ap.add_argument("--pattern", default="blobs", choices=("blobs", "percolation"))
    ap.add_argument("--noise", type=float, default=0.25)
    ap.add_argument("--connectivity", type=int, default=1)
    ap.add_argument("--check-side", type=int, default=0,
                    help="also check an S³ volume against the whole-array call (0: no)")
    ap.add_argument("--check-chunk", type=int, default=256)
    ap.add_argument("--no-floor", action="store_true", help="skip the chunks-alone floor")
    ap.add_argument("--sample", type=float, default=0.05)
    ap.add_argument("--zarr", default=None,
                    help="also write the labels (int32) to zarr stores in this folder, in the "
                         "same pass (check.zarr, labels.zarr)")
    ap.add_argument("--out", default="dask_ooc_out")
    args = ap.parse_args(argv)

    import cupy

    os.makedirs(args.out, exist_ok=True)
    row = {"side": args.side, "chunk": args.chunk, "pattern": args.pattern,
           "noise": args.noise, "connectivity": args.connectivity,
           "chunks": -(-args.side // args.chunk) ** 3,
           "device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
           "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    if args.check_side:
        try:
            row["check"] = check(args)
        except Exception as exc:  # (recorded; the large run still tells its time)
            import traceback

            row["check"] = {"error": "".join(traceback.format_exception(exc))[-3000:]}
        write(args.out, row)
        cupy.get_default_memory_pool().free_all_blocks()
    x = volume(args.side, args.chunk, args.pattern, args.noise)
    ooc(volume(2 * args.chunk, args.chunk, args.pattern, args.noise, seed=2),
        args.connectivity)  # (every kernel compiled before the clock)
    cupy.get_default_memory_pool().free_all_blocks()
    store = None
    if args.zarr:
        store = zarr_array(os.path.join(args.zarr, "labels.zarr"), x.shape, args.chunk, np.int32)
    with Peaks(args.sample) as peaks:
        row["seconds"], row["n"], stats = ooc(x, args.connectivity, store)
    if store is not None:
        import shutil

        row["zarr_bytes"] = sum(os.path.getsize(os.path.join(d, f))
                                for d, _, fs in os.walk(os.path.join(args.zarr, "labels.zarr"))
                                for f in fs)
        if row["n"] > np.iinfo(np.int32).max:
            row["zarr_note"] = "N exceeds int32: the stored labels are wrapped"
        row["disk_free"] = shutil.disk_usage(args.zarr).free
    row.update(peak_device=peaks.device - peaks.base[0], peak_pool=peaks.pool,
               peak_rss=peaks.rss,
               maxrss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    row["largest_count"] = int(stats["voxel_counts"][1:].max()) if row["n"] else 0
    del stats
    write(args.out, row)
    if not args.no_floor:
        cupy.get_default_memory_pool().free_all_blocks()
        row["floor_s"], row["floor_n"] = floor(x)
        write(args.out, row)


if __name__ == "__main__":
    main()
