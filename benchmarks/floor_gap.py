"""Where each standard case's time goes, against the floor: the bytes the
call's kernels actually move to and from device memory, how many kernels it
launches, its atomics and instructions, read from the hardware counters by
Nsight Compute (ncu), beside the call's own time.

Issue 3 asks that every standard case's gap to the floor (1 byte read and 4
written per cell at the measured copy bandwidth) be explained by the bytes
moved, the passes and the atomics.  The floor assumes the input is read
once and the labels written once; this script measures what the default
`meshccl.label` call really moves.

    python benchmarks/floor_gap.py all --out DIR [--cases SPEC] [--ncu PATH]
        for every standard case (bench.py's, `--cases` as there): the call's
        time with CUDA events (median of many, as bench.py), then one warm
        call under ncu (application replay, so that every counter pass
        starts from the same cache state as a real call; caches not
        flushed, clocks left alone); writes DIR/gap.md, DIR/gap.json and
        each case's raw ncu CSV.
    python benchmarks/floor_gap.py run CASE
        (what ncu runs) three calls to warm up (compilation, launch plans),
        then one call between cudaProfilerStart and cudaProfilerStop.
    python benchmarks/floor_gap.py table DIR
        rebuilds gap.md from DIR/gap.json.

Needs a GPU and, for `all`, ncu with access to the counters.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import io
import json
import platform
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (HERE.parent, HERE):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import bench  # noqa: E402  (the standard cases, their arrays, the timers)

#: Counters asked of ncu, by what they say: (column, metric).  Those this
#: ncu does not know (`ncu --query-metrics`) are left out and reported.
METRICS = (
    ("ns", "gpu__time_duration.sum"),
    ("dram_read", "dram__bytes_read.sum"),
    ("dram_write", "dram__bytes_write.sum"),
    ("l2_bytes", "lts__t_bytes.sum"),
    ("inst", "smsp__inst_executed.sum"),
    ("global_atom", "smsp__sass_inst_executed_op_global_atom.sum"),
    ("global_red", "smsp__sass_inst_executed_op_global_red.sum"),
    ("shared_atom", "smsp__sass_inst_executed_op_shared_atom.sum"),
)


def case_by_name(name):
    for c in bench.standard_cases():
        if c.name == name:
            return c
    raise SystemExit(f"no standard case {name!r}")


def run_one(name):
    """Warm calls, then one call inside the profiler's range."""
    import cupy

    import meshccl

    case = case_by_name(name)
    x = bench.generate(case, cupy)
    for _ in range(3):
        meshccl.label(x, connectivity=case.connectivity)
    cupy.cuda.Device().synchronize()
    cupy.cuda.runtime.profilerStart()
    meshccl.label(x, connectivity=case.connectivity)
    cupy.cuda.Device().synchronize()
    cupy.cuda.runtime.profilerStop()


def known_metrics(ncu):
    """The metrics of METRICS that this ncu knows, and those it does not."""
    out = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True).stdout
    bases = {line.split()[0] for line in out.splitlines() if line.strip()}
    have = [(k, m) for k, m in METRICS if m.rsplit(".", 1)[0] in bases]
    missing = [m for k, m in METRICS if m.rsplit(".", 1)[0] not in bases]
    return have, missing


def parse_ncu_csv(text, metrics):
    """ncu's CSV (one row per kernel and metric, base units) -> a list of
    kernels in launch order: {'kernel': name, column: value, ...}."""
    rows = [line for line in text.splitlines() if line.startswith('"')]
    kernels = {}
    names = {m: k for k, m in metrics}
    for row in csv.DictReader(io.StringIO("\n".join(rows))):
        kid = int(row["ID"])
        entry = kernels.setdefault(kid, {"kernel": row["Kernel Name"]})
        key = names.get(row["Metric Name"])
        if key is not None:
            value = row["Metric Value"].replace(",", "")
            try:
                entry[key] = float(value)
            except ValueError:
                entry[key] = None
    return [kernels[k] for k in sorted(kernels)]


def profile_case(ncu, name, metrics, out_dir):
    """One case's kernels under ncu; the raw log is kept in out_dir."""
    log = out_dir / f"{name}.csv"
    cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off",
           "--replay-mode", "application", "--cache-control", "none",
           "--print-units", "base", "--print-kernel-base", "function", "--csv",
           "--log-file", str(log), "--metrics", ",".join(m for _, m in metrics),
           sys.executable, str(Path(__file__).resolve()), "run", name]
    done = subprocess.run(cmd, capture_output=True, text=True)
    (out_dir / f"{name}.err").write_text(done.stdout + done.stderr)
    if done.returncode != 0 or not log.exists():
        return None, f"ncu exited with {done.returncode} (see {name}.err)"
    return parse_ncu_csv(log.read_text(), metrics), None


def summarise(case, call_s, kernels, bandwidth):
    """One case's row: call time, floor, bytes moved, counts."""
    cells = case.cells
    floor_bytes = 5 * cells
    total = lambda key: sum((k.get(key) or 0.0) for k in kernels)  # noqa: E731
    moved = total("dram_read") + total("dram_write")
    return {
        "case": case.name,
        "cells": cells,
        "call_ms": call_s * 1e3,
        "floor_ms": floor_bytes / bandwidth * 1e3,
        "kernels": len(kernels),
        "kernel_ms": total("ns") / 1e6,
        "dram_read_mb": total("dram_read") / 1e6,
        "dram_write_mb": total("dram_write") / 1e6,
        "moved_over_floor": moved / floor_bytes,
        "moved_ms": moved / bandwidth * 1e3,
        "l2_mb": total("l2_bytes") / 1e6,
        "inst_per_cell": total("inst") / cells,
        "global_atomics": total("global_atom") + total("global_red"),
        "shared_atomics": total("shared_atom"),
        "per_kernel": [
            {"kernel": k["kernel"], "ms": (k.get("ns") or 0.0) / 1e6,
             "read_mb": (k.get("dram_read") or 0.0) / 1e6,
             "write_mb": (k.get("dram_write") or 0.0) / 1e6,
             "global_atomics": (k.get("global_atom") or 0.0) + (k.get("global_red") or 0.0),
             "shared_atomics": k.get("shared_atom") or 0.0,
             "inst_m": (k.get("inst") or 0.0) / 1e6}
            for k in kernels],
    }


def fmt(x, digits=3):
    if x is None:
        return "n/a"
    if x == 0:
        return "0"
    return f"{x:.{digits}g}" if abs(x) < 1000 else f"{x:,.0f}"


def table(data):
    """Markdown of gap.json's content."""
    bw = data["bandwidth"]
    lines = [
        "# The standard cases against the floor: what the calls move",
        "",
        f"Machine: {data['machine']}. Date: {data['date']}. meshccl at {data['commit']}. "
        f"Command: `{data['command']}`.",
        "",
        f"Copy bandwidth (read + write) {bw / 1e12:.2f} TB/s; floor = 5 bytes a cell at it. "
        "Call: CUDA events around `meshccl.label(x, connectivity=c)`, median (bench.py's "
        "timer). The rest from one warm call under Nsight Compute (application replay, "
        "caches not flushed, clocks not locked): kernels launched, their summed durations "
        "(serialised by the profiler), the bytes read from and written to device memory "
        "(DRAM), the L2 traffic, warp instructions per cell, and atomic instructions "
        "(warp-level SASS counts: one instruction may update up to 32 words).",
        "",
    ]
    if data.get("missing_metrics"):
        lines += [f"Counters this ncu did not have: {', '.join(data['missing_metrics'])}.", ""]
    lines += [
        "| case | call ms | floor ms | × floor | kernels | Σ kernels ms | DRAM read MB | "
        "DRAM write MB | moved ÷ floor bytes | moved at copy bw ms | L2 MB | warp inst / cell | "
        "global atomics | shared atomics |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in data["cases"]:
        if r.get("error"):
            lines.append(f"| {r['case']} | {fmt(r.get('call_ms'))} | | | {r['error']} |"
                         + " |" * 9)
            continue
        lines.append(
            f"| {r['case']} | {fmt(r['call_ms'])} | {fmt(r['floor_ms'])} | "
            f"{fmt(r['call_ms'] / r['floor_ms'])} | {r['kernels']} | {fmt(r['kernel_ms'])} | "
            f"{fmt(r['dram_read_mb'])} | {fmt(r['dram_write_mb'])} | "
            f"{fmt(r['moved_over_floor'])} | {fmt(r['moved_ms'])} | {fmt(r['l2_mb'])} | "
            f"{fmt(r['inst_per_cell'])} | {fmt(r['global_atomics'])} | "
            f"{fmt(r['shared_atomics'])} |")
    lines += ["", "## Per kernel", ""]
    for r in data["cases"]:
        if r.get("error"):
            continue
        lines += [f"**{r['case']}**", "",
                  "| kernel | ms | DRAM read MB | DRAM write MB | global atomics | "
                  "shared atomics | M warp inst |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for k in r["per_kernel"]:
            lines.append(f"| {k['kernel']} | {fmt(k['ms'])} | {fmt(k['read_mb'])} | "
                         f"{fmt(k['write_mb'])} | {fmt(k['global_atomics'])} | "
                         f"{fmt(k['shared_atomics'])} | {fmt(k['inst_m'])} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def commit():
    import os

    if os.environ.get("MESHCCL_COMMIT"):
        return os.environ["MESHCCL_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=HERE).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def run_all(args):
    import cupy

    import meshccl

    out = Path(args.out)
    (out / "ncu").mkdir(parents=True, exist_ok=True)
    ncu = args.ncu or shutil.which("ncu")
    if ncu is None:
        raise SystemExit("ncu not found (--ncu PATH)")
    metrics, missing = known_metrics(ncu)
    bandwidth, _ = bench.measure_copy_bandwidth()
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    data = {
        "machine": f"{props['name'].decode()}, {platform.node()}",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "command": " ".join(["python3", "benchmarks/floor_gap.py"] + sys.argv[1:]),
        "bandwidth": bandwidth,
        "missing_metrics": missing,
        "cases": [],
    }
    for case in bench.select_cases(bench.standard_cases(), args.cases):
        x = bench.generate(case, cupy)
        call_s, _ = bench.time_gpu(lambda: meshccl.label(x, connectivity=case.connectivity))
        del x
        cupy.get_default_memory_pool().free_all_blocks()
        kernels, error = profile_case(ncu, case.name, metrics, out / "ncu")
        if error:
            row = {"case": case.name, "call_ms": call_s * 1e3, "error": error}
        else:
            row = summarise(case, call_s, kernels, bandwidth)
        data["cases"].append(row)
        print(f"{case.name}: call {call_s * 1e3:.3f} ms"
              + (f", {error}" if error else
                 f", {row['kernels']} kernels, moved {row['moved_over_floor']:.2f}x the floor's "
                 f"bytes ({row['moved_ms']:.3f} ms at copy bandwidth)"), flush=True)
        (out / "gap.json").write_text(json.dumps(data, indent=1))
    (out / "gap.md").write_text(table(data))
    print(table(data))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    a = sub.add_parser("all")
    a.add_argument("--out", required=True)
    a.add_argument("--cases", default="")
    a.add_argument("--ncu", default=None)
    r = sub.add_parser("run")
    r.add_argument("case")
    t = sub.add_parser("table")
    t.add_argument("dir")
    args = ap.parse_args(argv)
    if args.mode == "run":
        run_one(args.case)
    elif args.mode == "table":
        d = Path(args.dir)
        (d / "gap.md").write_text(table(json.loads((d / "gap.json").read_text())))
    else:
        run_all(args)


if __name__ == "__main__":
    main()
