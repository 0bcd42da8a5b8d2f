"""Per-label statistics: meshccl.measure against its peers, side by side.

For each case the labels come from ``meshccl.label`` on the GPU (CuPy);
every tool then computes what it can of counts, bounding boxes and
centroids on those same labels:

* ``meshccl.measure.statistics`` (GPU): counts, boxes and centroids, and
  with a float32 intensity image the intensity statistics too (sum, mean,
  min, max, weighted centroids);
* ``cucim.skimage.measure.regionprops_table`` (GPU) with label, area,
  bbox and centroid, where cuCIM imports (not run above
  ``--cucim-max-labels`` labels);
* ``cupyx.scipy.ndimage.sum_labels`` (GPU, counts only) on cases with at
  most ``--cupyx-max-labels`` labels (its time grows with the label count:
  tens of seconds at a million labels);
* ``cc3d.statistics`` (CPU, on a host copy; the copy is not timed), where
  cc3d imports;
* ``cupy.bincount`` of the labels (counts only): a reference for one pass
  of atomics over the image, and ``meshccl.label`` alone (the call that
  made the labels: the yardstick of the ratios).

The cases span the label counts a user meets: one label covering
everything, percolation at its threshold (2-D connectivity 1 and 2, 3-D 1
and 3), blobs, a segmentation-like Potts volume (every cell labelled),
millions of one-cell labels (2-D and 3-D checkerboards), and labels with
gaps (every label times 5).  GPU tools: CUDA events around each call,
median after a warm-up; CPU: wall clock, median of up to 3 calls.  Every
peer's counts, boxes and centroids are checked against meshccl's (counts
and boxes equal, centroids to 1e-9), and meshccl's against NumPy's.

Then the cost of counting inside ``label`` (``return_counts=True``) on one
case per kernel chain that counts (docs/architecture.md), CuPy in and out:

* ``label``: ``meshccl.label(x, connectivity=1)`` (a launch plan, no wait);
* ``label + num``: with ``return_num=True`` (the one wait for N, at the end);
* ``label + counts``: with ``return_counts=True`` (the same wait, between the
  kernels that number the roots and the label pass, which counts);
* ``label, then statistics``: ``label(..., return_num=True)`` and then
  ``measure.statistics(labels)['voxel_counts']`` (a second pass, with boxes
  and centroids);
* ``label, then bincount``: ``label`` and ``cupy.bincount(labels.ravel())``;

every count checked against ``numpy.bincount`` of the labels, and the same
on the CPU (NumPy in; 1 thread; smaller cases) with ``np.bincount``.
Written to ``counts.md`` / ``counts.json``; ``--counts-only`` runs just
this part.

    python benchmarks/measure_bench.py --out out/measure [--quick] [--counts-only]

``--cpu`` (no GPU needed) measures the CPU instead: ``meshccl.measure.statistics``
on NumPy labels with ``cpu_threads`` 1, 2 and 0 (every core) against
``cc3d.statistics(x, no_slice_conversion=True)`` (single-threaded) and
skimage's ``regionprops_table`` (label, area, bbox, centroid), on
percolation, blobs, one label covering everything, one-cell labels and
labels with gaps and large values; counts, boxes and centroids checked
against cc3d's (and skimage's); written to ``cpu.md`` / ``cpu.json``:

    python benchmarks/measure_bench.py --cpu --out out/measure [--quick]
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


def _checkerboard(shape, xp):
    """1 on the cells whose coordinates sum to an even number: every one a
    component of one cell at connectivity 1."""
    grids = xp.indices(shape, dtype=xp.int32)
    return (grids.sum(axis=0) % 2 == 0).astype(xp.uint8)


def cases(quick):
    """(name, image(xp), label keyword arguments, what is done to the labels)."""
    k = 4 if quick else 1
    n2, n3 = 8192 // k, 512 // k
    pt = patterns
    return [
        (f"one label {n2}²", lambda xp: xp.ones((n2, n2), xp.uint8), {"connectivity": 1}, None),
        (f"percolation {n2}² c1", lambda xp: pt.percolation((n2, n2), 0.5927, xp=xp),
         {"connectivity": 1}, None),
        (f"percolation {n2}² c2", lambda xp: pt.percolation((n2, n2), 0.4073, xp=xp),
         {"connectivity": 2}, None),
        (f"blobs {n2}² c2", lambda xp: pt.blobs((n2, n2), xp=xp), {"connectivity": 2}, None),
        (f"one-cell labels {n2}²", lambda xp: _checkerboard((n2, n2), xp),
         {"connectivity": 1}, None),
        (f"percolation {n2}² c1, labels × 5", lambda xp: pt.percolation((n2, n2), 0.5927, xp=xp),
         {"connectivity": 1}, "gaps"),
        (f"percolation {n3}³ c1", lambda xp: pt.percolation((n3,) * 3, 0.3116, xp=xp),
         {"connectivity": 1}, None),
        (f"percolation {n3}³ c3", lambda xp: pt.percolation((n3,) * 3, 0.0976, xp=xp),
         {"connectivity": 3}, None),
        (f"blobs {n3}³ c1", lambda xp: pt.blobs((n3,) * 3, xp=xp), {"connectivity": 1}, None),
        (f"Potts q=4 {n3}³, every cell", lambda xp: pt.potts((n3,) * 3, q=4, xp=xp),
         {"connectivity": 1, "background": -1}, None),
        (f"one-cell labels {n3}³", lambda xp: _checkerboard((n3,) * 3, xp),
         {"connectivity": 1}, None),
    ]


def _fused(x, kw):
    """Whether ``label(x, return_statistics=True, **kw)`` fills its table in
    the label pass (meshccl/_gpu/chains.py, fused_statistics)."""
    from meshccl import _validate
    from meshccl._gpu import chains

    prob = _validate.prepare(x, kw.get("background"), kw.get("connectivity"), None,
                             return_statistics=True)
    return "yes" if chains.fused_statistics(chains.select(prob), prob) else "no"


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


def table_lines(rows, cols, text_cols):
    """The markdown lines of a table of ``rows`` (dicts) in the columns
    ``cols``: the header, the alignment line (the first ``text_cols``
    columns left, the rest right) and one line a row; a float shows 3
    significant digits, None or a missing key n/a."""
    cell = lambda v: "n/a" if v is None else (f"{v:.3g}" if isinstance(v, float) else str(v))  # noqa: E731
    return (["| " + " | ".join(cols) + " |",
             "|" + "---|" * text_cols + "---:|" * (len(cols) - text_cols)]
            + ["| " + " | ".join(cell(r.get(c)) for c in cols) + " |" for r in rows])


def counts_cases(quick):
    """One case per kernel chain that counts: (name, image, label kwargs)."""
    from meshccl import patterns as pt

    k = 4 if quick else 1
    n2, n3 = 8192 // k, 512 // k
    return [
        (f"percolation {n2}² (runs2d)", lambda xp: pt.percolation((n2, n2), 0.5927, xp=xp), {}),
        (f"blobs {4096 // k}² (runs2d)", lambda xp: pt.blobs((4096 // k,) * 2, xp=xp), {}),
        (f"all one label {4096 // k}² (runs2d)",
         lambda xp: xp.ones((4096 // k,) * 2, dtype=xp.uint8), {}),
        ("percolation 512² (runs2d, small)", lambda xp: pt.percolation((512, 512), 0.5927, xp=xp),
         {}),
        (f"percolation {n3}³ (runs3d)", lambda xp: pt.percolation((n3,) * 3, 0.3116, xp=xp), {}),
        (f"blobs {n3 // 2}³ uint16 (runs3d, wider cells)",
         lambda xp: pt.blobs((n3 // 2,) * 3, xp=xp).astype(xp.uint16), {}),
        # (the fixed-geometry lattice chains, with counts too)
        (f"percolation {n2 // 2}², mask (lattice)",
         lambda xp: pt.percolation((n2 // 2,) * 2, 0.5927, xp=xp), {"mask": True}),
        (f"percolation {n2 // 2}², periodic (lattice)",
         lambda xp: pt.percolation((n2 // 2,) * 2, 0.5927, xp=xp), {"periodic": True}),
    ]


def counts_cost(quick, out, sides=("gpu", "cpu")):
    """label vs label with counts vs label, then statistics / bincount, on
    the GPU (CuPy) and the CPU (NumPy); writes counts.md and counts.json."""
    cupy = None
    if "gpu" in sides:
        import cupy

    rows = []
    for name, make, kw in counts_cases(quick):
        for side in sides:
            xp = cupy if side == "gpu" else np
            x = make(xp)
            if side == "cpu" and "small" not in name:  # (half of every side on the CPU)
                x = np.ascontiguousarray(x[tuple(slice(0, max(1, s // 2)) for s in x.shape)])
            args = dict(connectivity=1, **kw)
            if kw.get("mask"):
                args["mask"] = xp.ones(x.shape, dtype=bool)
            labels, n, counts = meshccl.label(x, return_num=True, return_counts=True, **args)
            host = labels.get() if side == "gpu" else labels
            want = np.bincount(host.ravel(), minlength=n + 1)
            got = counts.get() if side == "gpu" else counts
            assert np.array_equal(got, want), (name, side)
            stats = meshccl.measure.statistics(labels)["voxel_counts"]
            assert np.array_equal(stats.get() if side == "gpu" else stats, want), (name, side)
            timer = gpu_time if side == "gpu" else cpu_time
            bincount = cupy.bincount if side == "gpu" else np.bincount
            row = {"case": name, "device": side, "shape": list(x.shape), "labels": int(n)}
            row["label ms"] = timer(lambda: meshccl.label(x, **args)) * 1e3
            row["label + num ms"] = timer(lambda: meshccl.label(x, return_num=True, **args)) * 1e3
            row["label + counts ms"] = timer(
                lambda: meshccl.label(x, return_num=True, return_counts=True, **args)) * 1e3

            def then_statistics():
                lab = meshccl.label(x, **args)
                return meshccl.measure.statistics(lab)["voxel_counts"]

            row["label, then statistics ms"] = timer(then_statistics) * 1e3
            row["label, then bincount ms"] = timer(
                lambda: bincount(meshccl.label(x, **args).ravel())) * 1e3
            row["counts cost ms"] = row["label + counts ms"] - row["label + num ms"]
            row["counts cost %"] = 100 * row["counts cost ms"] / row["label + num ms"]
            rows.append(row)
            print(json.dumps(row), flush=True)
            del x, labels, counts
    machine = {"gpu": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode() if cupy else None,
               "cupy": cupy.__version__ if cupy else None,
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    cols = ["case", "device", "labels", "label ms", "label + num ms", "label + counts ms",
            "counts cost %", "label, then statistics ms", "label, then bincount ms"]
    lines = [f"{machine['gpu']}, CuPy {machine['cupy']}, {machine['date']}. "
             "`meshccl.label(x, connectivity=1)` with and without `return_counts=True`, "
             "against counting afterwards. GPU: CuPy in, CUDA events; CPU: NumPy in, 1 thread, "
             "wall clock (smaller cases). Median ms; counts cost = (label + counts) / "
             "(label + num) - 1.", ""] + table_lines(rows, cols, text_cols=2)
    out.mkdir(parents=True, exist_ok=True)
    (out / "counts.md").write_text("\n".join(lines) + "\n")
    (out / "counts.json").write_text(json.dumps({"machine": machine, "rows": rows}, indent=1))
    print("\n".join(lines))


def cpu_cases(quick):
    """(name, labels) for the CPU comparison: NumPy labels, made once."""
    k = 4 if quick else 1
    n2, n3, nb = 4096 // k, 256 // k, 2048 // k

    def lab(x):
        return meshccl.label(x, connectivity=1)

    def gaps():  # blobs' labels spread out: every 7th value, past a quarter of the cells
        base = lab(patterns.blobs((nb, nb), seed=3))
        return np.where(base > 0, base.astype(np.int64) * 7 + nb * nb // 4, 0)

    return [
        (f"percolation {n2}² p=0.5927", lambda: lab(patterns.percolation((n2, n2), 0.5927))),
        (f"percolation {n3}³ p=0.3116", lambda: lab(patterns.percolation((n3,) * 3, 0.3116))),
        (f"blobs {nb}²", lambda: lab(patterns.blobs((nb, nb)))),
        (f"one label {n2}²", lambda: np.ones((n2, n2), np.uint32)),
        (f"one-cell labels {nb}²", lambda: np.arange(nb * nb, dtype=np.uint32).reshape(nb, nb)),
        (f"gaps, large values {nb}²", gaps),
    ]


#: skimage's regionprops_table runs on cases with at most this many labels
#: (it takes some 60 us a label: minutes at a million)
SKIMAGE_MAX_LABELS = 100_000


def cpu_compare(quick, out):
    """meshccl.measure.statistics on the CPU against cc3d.statistics and
    skimage's regionprops_table; writes cpu.md and cpu.json."""
    import os

    import cc3d
    from skimage.measure import regionprops_table

    from meshccl._cpu.image import cpu_count

    cores = cpu_count()
    props = ("label", "area", "bbox", "centroid")
    rows = []
    for name, make in cpu_cases(quick):
        labels = make()
        n = int(labels.max())
        row = {"case": name, "dtype": str(labels.dtype), "labels": n,
               "present": None, "cells": int(labels.size)}
        ours = meshccl.measure.statistics(labels)
        count, boxes, cents = ours["voxel_counts"], ours["bounding_boxes"], ours["centroids"]
        row["present"] = int(np.count_nonzero(count[1:]))
        for threads in (1, 2, 0):
            got = meshccl.measure.statistics(labels, cpu_threads=threads)
            for key in got:
                assert np.array_equal(got[key], ours[key], equal_nan=True), (name, threads, key)
        cc = cc3d.statistics(labels, no_slice_conversion=True)
        m = len(cc["voxel_counts"])  # (cc3d's table ends at the largest label too)
        present = count[:m] > 0
        assert np.array_equal(cc["voxel_counts"], count[:m]), name
        assert np.array_equal(np.asarray(cc["bounding_boxes"])[present], boxes[:m][present]), name
        assert np.allclose(cc["centroids"][present], cents[:m][present], rtol=1e-12), name
        row["cc3d ms"] = cpu_time(lambda: cc3d.statistics(labels, no_slice_conversion=True)) * 1e3
        for threads, key in ((1, "meshccl 1 thread ms"), (2, "meshccl 2 threads ms"),
                             (0, f"meshccl {cores} cores ms")):
            row[key] = cpu_time(lambda: meshccl.measure.statistics(
                labels, cpu_threads=threads)) * 1e3
        row["skimage ms"] = None
        if row["present"] <= SKIMAGE_MAX_LABELS:  # (a Python object per label)
            sk = regionprops_table(labels, properties=props)
            have = np.nonzero(count[1:])[0] + 1
            assert np.array_equal(sk["label"], have) and np.array_equal(sk["area"], count[have])
            row["skimage ms"] = cpu_time(lambda: regionprops_table(labels, properties=props),
                                         budget=20.0) * 1e3
        row["cc3d / meshccl 1 thread"] = row["cc3d ms"] / row["meshccl 1 thread ms"]
        rows.append(row)
        print(json.dumps(row), flush=True)
        del labels, ours
    import platform

    from importlib.metadata import version

    machine = {"cpu": platform.processor() or platform.machine(), "cores": cores,
               "os cores": os.cpu_count(), "numpy": np.__version__,
               "cc3d": version("connected-components-3d"), "skimage": version("scikit-image"),
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    cols = ["case", "dtype", "labels", "cc3d ms", "meshccl 1 thread ms", "meshccl 2 threads ms",
            f"meshccl {cores} cores ms", "skimage ms", "cc3d / meshccl 1 thread"]
    lines = [f"{machine['date']}, {cores} cores, NumPy {machine['numpy']}, cc3d "
             f"{machine['cc3d']}, scikit-image {machine['skimage']}. Counts, bounding "
             "boxes and centroids: `meshccl.measure.statistics(x, cpu_threads=...)`, "
             "`cc3d.statistics(x, no_slice_conversion=True)`, skimage `regionprops_table` "
             "(label, area, bbox, centroid; n/a: more than "
             f"{SKIMAGE_MAX_LABELS} labels). Median wall-clock ms of up to 3 calls.", ""]
    lines += table_lines(rows, cols, text_cols=2)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cpu.md").write_text("\n".join(lines) + "\n")
    (out / "cpu.json").write_text(json.dumps({"machine": machine, "rows": rows}, indent=1))
    print("\n".join(lines))


#: the plot's series: (label, row key or keys added, marker)
SERIES = (("label", ("label ms",), "o"),
          ("label, then statistics", ("label ms", "statistics ms"), "s"),
          ("label(..., return_statistics=True)", ("label + statistics ms",), "P"),
          ("label, then statistics with intensity", ("label ms", "with intensity ms"), "D"),
          ("cuCIM regionprops_table", ("cuCIM ms",), "^"),
          ("cupyx sum_labels (counts)", ("cupyx sum_labels ms",), "v"),
          ("cc3d.statistics (CPU)", ("cc3d ms",), "x"))


def plot(rows, path, title):
    """Time per cell against the number of labels, one marker per tool
    (flat is the goal: the cost should not grow with the labels)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for name, keys, marker in SERIES:
        pts = [(max(r["labels"], 1), sum(r[k] for k in keys) * 1e6 / r["cells"]) for r in rows
               if all(r.get(k) is not None for k in keys)]
        if pts:
            xs, ys = zip(*sorted(pts))
            ax.plot(xs, ys, marker=marker, linestyle="none", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("labels in the image")
    ax.set_ylabel("ns per cell (median call)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def write(rows, machine, out):
    """measure.md, measure.json and measure.png of the GPU rows in ``out``."""
    for r in rows:
        r["label + statistics / label"] = (r["label + statistics ms"] / r["label ms"]
                                          if r["label + statistics ms"] else None)
    cols = ["case", "labels", "label ms", "statistics ms", "statistics / label",
            "label, statistics ms", "label + statistics ms", "fused",
            "label + statistics / label",
            "with intensity ms", "with intensity / label", "bincount ms", "cuCIM ms",
            "× cuCIM", "cupyx sum_labels ms", "cc3d ms"]
    lines = [f"{machine['gpu']}, CuPy {machine['cupy']}, {machine['date']}. Counts, bounding "
             "boxes and centroids of the labels of `meshccl.label` ('statistics'; 'with "
             "intensity': also the statistics of a float32 image; cuCIM: regionprops_table "
             "with label, area, bbox, centroid; cupyx: counts only; cc3d: on the CPU). "
             "'label, statistics': `statistics(label(x))`, two calls; 'label + statistics': "
             "`label(x, return_statistics=True)`, one call ('fused': the label pass fills the "
             "table, else the labels are measured after the chain). Median "
             "ms; the ratios are to the `label` call that made the labels."
             + (f" {machine['note']}" if machine.get("note") else ""), ""]
    lines += table_lines(rows, cols, text_cols=1)
    out.mkdir(parents=True, exist_ok=True)
    (out / "measure.md").write_text("\n".join(lines) + "\n")
    (out / "measure.json").write_text(json.dumps({"machine": machine, "rows": rows}, indent=1))
    plot(rows, out / "measure.png", f"meshccl.measure, {machine['gpu']}, {machine['date']}")
    print("\n".join(lines))


def main(argv=None):
    args_ = sys.argv[1:] if argv is None else argv
    if "--replot" in args_:  # the plot again from a stored measure.json
        ap = argparse.ArgumentParser(description="measure.png from a stored measure.json")
        ap.add_argument("--replot", required=True, help="a folder holding measure.json")
        args = ap.parse_args(argv)
        folder = Path(args.replot)
        data = json.loads((folder / "measure.json").read_text())
        m = data["machine"]
        plot(data["rows"], folder / "measure.png", f"meshccl.measure, {m['gpu']}, {m['date']}")
        return 0
    if "--cpu" in (sys.argv[1:] if argv is None else argv):  # the CPU only: no CuPy
        ap = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
        ap.add_argument("--cpu", action="store_true", help="CPU statistics against cc3d, skimage")
        ap.add_argument("--out", required=True)
        ap.add_argument("--quick", action="store_true", help="every side / 4")
        args = ap.parse_args(argv)
        cpu_compare(args.quick, Path(args.out))
        return 0
    import cupy

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="every side / 4")
    ap.add_argument("--cupyx-max-labels", type=int, default=20000)
    ap.add_argument("--cucim-max-labels", type=int, default=10_000_000)
    ap.add_argument("--counts-only", action="store_true",
                    help="only the cost of label(..., return_counts=True)")
    ap.add_argument("--cases", default=None,
                    help="comma-separated parts of case names: only those cases, and no counts part")
    args = ap.parse_args(argv)
    if args.counts_only:
        counts_cost(args.quick, Path(args.out))
        return 0
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
    for name, make, kw, change in cases(args.quick):
        if args.cases and not any(part in name for part in args.cases.split(",")):
            continue
        x = make(cupy)
        labels, n = meshccl.label(x, return_num=True, **kw)
        row = {"case": name, "cells": int(labels.size)}
        row["label ms"] = gpu_time(lambda: meshccl.label(x, **kw)) * 1e3
        row["fused"] = row["label + statistics ms"] = row["label, statistics ms"] = None
        if change is None:  # statistics while labelling against label, then statistics
            fl, fs = meshccl.label(x, return_statistics=True, **kw)
            want = meshccl.measure.statistics(fl)
            for key in want:
                assert cupy.array_equal(fs[key], want[key], equal_nan=True), (name, key)
            del fl, fs, want
            row["fused"] = _fused(x, kw)
            row["label, statistics ms"] = gpu_time(
                lambda: meshccl.measure.statistics(meshccl.label(x, **kw))) * 1e3
            row["label + statistics ms"] = gpu_time(
                lambda: meshccl.label(x, return_statistics=True, **kw)) * 1e3
        if change == "gaps":
            labels = labels * 5
        n = int(labels.max())
        row["labels"] = int(cupy.count_nonzero(cupy.bincount(labels.ravel())[1:]))
        ours = meshccl.measure.statistics(labels)
        counts = ours["voxel_counts"].get()
        boxes = ours["bounding_boxes"].get()
        cents = ours["centroids"].get()
        assert np.array_equal(counts, cupy.bincount(labels.ravel(), minlength=n + 1).get())
        row["statistics ms"] = gpu_time(lambda: meshccl.measure.statistics(labels)) * 1e3
        intensity = cupy.random.default_rng(0).random(labels.shape, dtype=cupy.float32)
        with_values = meshccl.measure.statistics(labels, intensity)
        want = cupy.bincount(labels.ravel(), weights=intensity.ravel().astype(cupy.float64),
                             minlength=n + 1).get()
        assert np.allclose(with_values["intensity_sum"].get(), want, rtol=1e-9, atol=1e-6), name
        row["with intensity ms"] = gpu_time(
            lambda: meshccl.measure.statistics(labels, intensity)) * 1e3
        row["statistics / label"] = row["statistics ms"] / row["label ms"]
        row["with intensity / label"] = row["with intensity ms"] / row["label ms"]
        del intensity, with_values
        row["bincount ms"] = gpu_time(lambda: cupy.bincount(labels.ravel())) * 1e3
        nd = labels.ndim
        if cucim_table is not None and row["labels"] <= args.cucim_max_labels:
            props = ("label", "area", "bbox", "centroid")
            t = cucim_table(labels, properties=props)
            present = cupy.asnumpy(t["label"])  # (cuCIM's own rows)
            # (cuCIM's rows are its labels that have cells; checked where both have them)
            row["cuCIM equal"] = bool(np.array_equal(present,
                                                            np.nonzero(counts[1:])[0] + 1))
            present = np.intersect1d(present, np.nonzero(counts[1:])[0] + 1)
            t = {k: cupy.asnumpy(v)[np.isin(cupy.asnumpy(t["label"]), present)]
                 for k, v in t.items()}
            # (cuCIM's values, where they differ from ours and NumPy's, are
            # reported, not asserted: the table says which case)
            agree = np.array_equal(t["area"], counts[present])
            for a in range(nd):
                agree &= np.array_equal(t[f"bbox-{a}"], boxes[present, 2 * a])
                agree &= np.array_equal(t[f"bbox-{a + nd}"], boxes[present, 2 * a + 1] + 1)
                agree &= np.allclose(t[f"centroid-{a}"], cents[present, a], atol=1e-9)
            row["cuCIM equal"] = bool(row["cuCIM equal"] and agree)
            row["cuCIM ms"] = gpu_time(lambda: cucim_table(labels, properties=props), runs=3) * 1e3
        else:
            row["cuCIM ms"] = row["cuCIM equal"] = None
        if row["labels"] <= args.cupyx_max_labels:
            ones = cupy.ones(labels.shape, cupy.float32)
            index = cupy.arange(1, n + 1)
            got = cndi.sum_labels(ones, labels, index)
            assert np.array_equal(cupy.asnumpy(got).astype(np.int64), counts[1:]), name
            row["cupyx sum_labels ms"] = gpu_time(lambda: cndi.sum_labels(ones, labels, index),
                                                  runs=3) * 1e3
            del ones, index
        else:
            row["cupyx sum_labels ms"] = None
        if cc3d is not None:
            host = labels.get().astype(np.uint32)
            s = cc3d.statistics(host, no_slice_conversion=True)
            assert np.array_equal(np.asarray(s["voxel_counts"])[1:], counts[1:len(
                s["voxel_counts"])]), name
            row["cc3d ms"] = cpu_time(lambda: cc3d.statistics(host, no_slice_conversion=True)) * 1e3
            del host, s
        else:
            row["cc3d ms"] = None
        row["× cuCIM"] = row["cuCIM ms"] / row["statistics ms"] if row["cuCIM ms"] else None
        rows.append(row)
        print(json.dumps(row), flush=True)
        del x, labels, ours
        cupy.get_default_memory_pool().free_all_blocks()
    machine = {"gpu": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
               "cupy": cupy.__version__, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "cucim": None if cucim_table else cucim_why, "cc3d": None if cc3d else cc3d_why}
    out = Path(args.out)
    write(rows, machine, out)
    if args.cases:
        return 0
    counts_cost(args.quick, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
