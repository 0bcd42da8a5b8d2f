"""Per-label statistics: meshccl.measure against its peers, side by side.

For each case the labels come from ``meshccl.label`` on the GPU (int32
CuPy); every tool then computes what it can of counts, bounding boxes and
centroids on those same labels:

* ``meshccl.measure.statistics`` (GPU): counts, boxes and centroids;
* ``cucim.skimage.measure.regionprops_table`` (GPU) with label, area,
  bbox and centroid, where cuCIM imports;
* ``cupyx.scipy.ndimage.sum_labels`` (GPU, counts only) on cases with at
  most ``--cupyx-max-labels`` labels (its time grows with the label count:
  tens of seconds at a million labels);
* ``cc3d.statistics`` (CPU, on a host copy; the copy is not timed), where
  cc3d imports;
* ``cupy.bincount`` of the labels (counts only): a reference for one pass
  of atomics over the image, and ``meshccl.label`` alone.

GPU tools: CUDA events around each call, median after a warm-up; CPU: wall
clock, median of up to 3 calls.  Every peer's counts, boxes and centroids
are checked against meshccl's (counts and boxes equal, centroids to 1e-9).

    python benchmarks/measure_bench.py --out out/measure [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics as stats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import meshccl  # noqa: E402
from meshccl import patterns  # noqa: E402


def cases(quick):
    k = 4 if quick else 1
    return [("percolation", (8192 // k,) * 2, 0.5927), ("percolation", (512 // k,) * 3, 0.3116),
            ("blobs", (4096 // k,) * 2, None)]


def gpu_time(fn, runs=10):
    import cupy

    fn()
    cupy.cuda.Device().synchronize()
    start, end, times = cupy.cuda.Event(), cupy.cuda.Event(), []
    for _ in range(runs):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    return stats.median(times)


def cpu_time(fn, budget=8.0):
    times = []
    while len(times) < 3 and sum(times) < budget:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return stats.median(times)


def main(argv=None):
    import cupy

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="every side / 4")
    ap.add_argument("--cupyx-max-labels", type=int, default=20000)
    args = ap.parse_args(argv)
    try:
        from cucim.skimage.measure import regionprops_table as cucim_table
    except Exception as e:  # noqa: BLE001
        cucim_table, cucim_why = None, f"{type(e).__name__}: {e}"
    try:
        import cc3d
    except Exception as e:  # noqa: BLE001
        cc3d, cc3d_why = None, f"{type(e).__name__}: {e}"
    from cupyx.scipy import ndimage as cndi

    rows = []
    for pattern, shape, p in cases(args.quick):
        x = patterns.percolation(shape, p, xp=cupy) if pattern == "percolation" \
            else patterns.blobs(shape, xp=cupy)
        labels, n = meshccl.label(x, connectivity=1, return_num=True)
        name = f"{pattern} {'x'.join(map(str, shape))} c1"
        row = {"case": name, "labels": int(n), "cells": int(labels.size)}
        row["label ms"] = gpu_time(lambda: meshccl.label(x, connectivity=1)) * 1e3
        ours = meshccl.measure.statistics(labels)
        counts = ours["voxel_counts"].get()
        boxes = ours["bounding_boxes"].get()
        cents = ours["centroids"].get()
        row["meshccl ms"] = gpu_time(lambda: meshccl.measure.statistics(labels)) * 1e3
        row["bincount ms"] = gpu_time(lambda: cupy.bincount(labels.ravel())) * 1e3
        assert np.array_equal(counts, cupy.bincount(labels.ravel(), minlength=n + 1).get())
        nd = labels.ndim
        if cucim_table is not None:
            props = ("label", "area", "bbox", "centroid")
            t = cucim_table(labels, properties=props)
            assert np.array_equal(cupy.asnumpy(t["area"]), counts[1:]), name
            for a in range(nd):
                assert np.array_equal(cupy.asnumpy(t[f"bbox-{a}"]), boxes[1:, 2 * a]), name
                assert np.array_equal(cupy.asnumpy(t[f"bbox-{a + nd}"]), boxes[1:, 2 * a + 1] + 1)
                assert np.allclose(cupy.asnumpy(t[f"centroid-{a}"]), cents[1:, a], atol=1e-9)
            row["cuCIM ms"] = gpu_time(lambda: cucim_table(labels, properties=props), runs=5) * 1e3
        else:
            row["cuCIM ms"] = None
        if n <= args.cupyx_max_labels:
            ones = cupy.ones(labels.shape, cupy.float32)
            index = cupy.arange(1, n + 1)
            got = cndi.sum_labels(ones, labels, index)
            assert np.array_equal(cupy.asnumpy(got).astype(np.int64), counts[1:]), name
            row["cupyx sum_labels ms"] = gpu_time(lambda: cndi.sum_labels(ones, labels, index),
                                                  runs=3) * 1e3
        else:
            row["cupyx sum_labels ms"] = None
        if cc3d is not None:
            host = labels.get().astype(np.uint32)
            s = cc3d.statistics(host, no_slice_conversion=True)
            assert np.array_equal(np.asarray(s["voxel_counts"])[1:], counts[1:len(
                s["voxel_counts"])]), name
            row["cc3d ms"] = cpu_time(lambda: cc3d.statistics(host, no_slice_conversion=True)) * 1e3
        else:
            row["cc3d ms"] = None
        peers = [row[k] for k in ("cuCIM ms", "cupyx sum_labels ms", "cc3d ms") if row[k]]
        row["fastest peer / meshccl"] = min(peers) / row["meshccl ms"] if peers else None
        rows.append(row)
        print(json.dumps(row), flush=True)
        del x, labels, ours
    machine = {"gpu": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
               "cupy": cupy.__version__, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "cucim": None if cucim_table else cucim_why, "cc3d": None if cc3d else cc3d_why}
    cols = ["case", "labels", "label ms", "meshccl ms", "bincount ms", "cuCIM ms",
            "cupyx sum_labels ms", "cc3d ms", "fastest peer / meshccl"]
    fmt = lambda v: "n/a" if v is None else (f"{v:.3g}" if isinstance(v, float) else str(v))  # noqa: E731
    lines = [f"{machine['gpu']}, CuPy {machine['cupy']}, {machine['date']}. Counts, bounding "
             "boxes and centroids of the labels of `meshccl.label(x, connectivity=1)` "
             "(cupyx: counts only; cc3d: on the CPU). Median ms.", "",
             "| " + " | ".join(cols) + " |", "|---|" + "---:|" * (len(cols) - 1)]
    lines += ["| " + " | ".join(fmt(r[c]) for c in cols) + " |" for r in rows]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "measure.md").write_text("\n".join(lines) + "\n")
    (out / "measure.json").write_text(json.dumps({"machine": machine, "rows": rows}, indent=1))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
