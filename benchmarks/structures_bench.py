"""``meshccl.ndimage.label`` with structures that no connectivity names,
against ``cupyx.scipy.ndimage.label`` on the GPU and ``scipy.ndimage.label``
on the CPU (issue 57, point 3).

What it measures
----------------
Random centrosymmetric 3 x 3 x 3 structures (each pair of opposite
neighbours kept with probability 1/2, the centre set; seeds 0, 1, ...),
plus the three ``generate_binary_structure`` ones for reference, on a
3-D volume of random cells (each set with probability ``--fill``, default
0.3) of side ``--side`` (default 512).  GPU: CUDA events, median of
``--repeat`` calls after a warm-up; labels and N of meshccl checked equal
to cupyx's on every structure.  CPU (``--cpu-side``, default 128):
``meshccl.ndimage.label`` on NumPy against ``scipy.ndimage.label``, wall
clock, median, labels checked equal.

4-D (issue 53, point 4): bool site percolation near the 4-D threshold
with all 80 neighbours (``bench.PERCOLATION_4D_C4``) on sides ``--sides4``
(default 48 and 128), ``meshccl.label(x, connectivity=4)`` against
``cupyx.scipy.ndimage.label(x, ones((3, 3, 3, 3)))``, labels checked equal,
with two floors from the measured device copy bandwidth (1 GiB D2D copy,
read + write): the copy floor, 1 byte in and 4 bytes of label out per
cell, and the neighbour-read floor, 80 neighbour bytes read and 4 written
per cell.  CPU: ``--cpu-side4`` (default 24) against SciPy.

Outputs (``--out DIR``): ``structures.md`` (the tables, also printed) and
``structures.json``.

``--kinds``: only the 3-D structures of one kind each (:func:`kinds`: no
neighbours, the corners, one diagonal, the edges, the full box without
the x neighbours, the first axis, x - 1 and x + 1 of the rows up and down)
at p = 0.3 and 0.6 on the GPU against cupyx, labels checked equal;
outputs ``structures-3d-kinds.md`` and ``.json``.

Usage::

    python benchmarks/structures_bench.py --out benchmarks/results/latest-h200
    python benchmarks/structures_bench.py --out /tmp/s --no-gpu --cpu-side 64
    python benchmarks/structures_bench.py --out /tmp/s --count 4 --sides4 48  # quick
    python benchmarks/structures_bench.py --out /tmp/k --kinds
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from scipy import ndimage

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import meshccl.ndimage  # noqa: E402
from bench import PERCOLATION_4D_C4, measure_copy_bandwidth  # noqa: E402
from timing import wall_ms  # noqa: E402


def random_structure(seed):
    """A centrosymmetric 3 x 3 x 3 bool structure: each of the 13 pairs of
    opposite neighbours kept with probability 1/2 (at least one), the
    centre set."""
    rng = np.random.default_rng(seed)
    s = np.zeros(27, bool)
    keep = rng.random(13) < 0.5
    if not keep.any():
        keep[rng.integers(13)] = True
    for k in np.flatnonzero(keep):
        s[k] = s[26 - k] = True
    s[13] = True
    return s.reshape(3, 3, 3)


def structures(count):
    out = [(f"connectivity {c}", ndimage.generate_binary_structure(3, c)) for c in (1, 2, 3)]
    seed = 0
    named = {o[1].tobytes() for o in out}
    while len(out) < 3 + count:
        s = random_structure(seed)
        seed += 1
        if s.tobytes() not in named:
            named.add(s.tobytes())
            out.append((f"random #{seed - 1} ({int(s.sum()) - 1} neighbours)", s))
    return out


def kinds():
    """``[(name, structure)]``: 3-D structures of one kind each, the 3 x 3
    x 3 patterns tests/test_runsnd_emulated.py names (centre set except in
    the corners')."""
    centre = np.zeros((3, 3, 3), bool)
    centre[1, 1, 1] = True
    corners = np.zeros((3, 3, 3), bool)
    corners[::2, ::2, ::2] = True
    diag = np.zeros((3, 3, 3), bool)
    diag[[0, 1, 2], [0, 1, 2], [0, 1, 2]] = True
    nox = np.ones((3, 3, 3), bool)
    nox[1, 1, 0] = nox[1, 1, 2] = False
    first = np.zeros((3, 3, 3), bool)
    first[:, 1, 1] = True
    sides = centre.copy()
    sides[0, 0, ::2] = sides[2, 2, ::2] = True
    return [("centre only", centre), ("corners (diagonals only)", corners),
            ("main diagonal", diag), ("anti-diagonal", diag[..., ::-1].copy()),
            ("odd parity", np.indices((3, 3, 3)).sum(0) % 2 == 1),
            ("full box without x neighbours", nox), ("first axis only", first),
            ("x - 1 and x + 1 of a row, not x", sides)]


def kinds_rows(side, repeat):
    """The :func:`kinds` rows: ``side``³ bool random cells at p = 0.3 and
    0.6, ``meshccl.ndimage.label`` against cupyx, labels and N equal."""
    import cupy
    from cupyx.scipy import ndimage as cndi

    rows = []
    for p in (0.3, 0.6):
        x = cupy.random.default_rng(5).random((side,) * 3, dtype=cupy.float32) < p
        for name, s in kinds():
            sg = cupy.asarray(s)
            ours, n = meshccl.ndimage.label(x, sg)
            want, wn = cndi.label(x, sg)
            assert int(n) == int(wn) and bool((ours == want).all()), (p, name)
            del ours, want
            row = {"p": p, "structure": name, "neighbours": int(s.sum()) - int(s[1, 1, 1]),
                   "joins along x": "yes" if s[1, 1, 0] else "no",
                   "ms": gpu_ms(lambda: meshccl.ndimage.label(x, sg), repeat),
                   "cupyx ms": gpu_ms(lambda: cndi.label(x, sg), max(3, repeat // 4))}
            row["× cupyx"] = row["cupyx ms"] / row["ms"]
            rows.append(row)
            print(json.dumps(row), flush=True)
        del x
    return rows


def write_kinds(out, side, repeat):
    import cupy

    rows = kinds_rows(side, repeat)
    name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"].decode()
    machine = {"host": platform.node(), "gpu": name,
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "command": "python benchmarks/structures_bench.py " + " ".join(sys.argv[1:])}
    cols = ["p", "structure", "neighbours", "joins along x", "ms", "cupyx ms", "× cupyx"]
    fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else str(v)  # noqa: E731
    lines = [f"# 3-D structures of every kind against cupyx ({name}, {machine['date']})", "",
             f"{side}³ bool random cells at p = 0.3 and 0.6; `meshccl.ndimage.label` against "
             "`cupyx.scipy.ndimage.label` with the same structure, CUDA events, median of "
             f"{repeat} (cupyx: {max(3, repeat // 4)}); labels equal on every row. Command: `"
             + machine["command"] + "`.", "",
             "| " + " | ".join(cols) + " |", "|---:|---|---:|---|" + "---:|" * 3]
    lines += ["| " + " | ".join(fmt(r[c]) for c in cols) + " |" for r in rows]
    out.mkdir(parents=True, exist_ok=True)
    (out / "structures-3d-kinds.md").write_text("\n".join(lines) + "\n")
    (out / "structures-3d-kinds.json").write_text(json.dumps({"machine": machine, "rows": rows},
                                                             indent=1))
    print("\n".join(lines))
    return 0


def gpu_ms(fn, repeat):
    import cupy

    fn()
    cupy.cuda.Device().synchronize()
    ts = []
    for _ in range(repeat):
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(cupy.cuda.get_elapsed_time(a, b))
    return statistics.median(ts)


#: bool site percolation near the 4-D threshold with all 80 neighbours
P4 = PERCOLATION_4D_C4


def four_d(sides, cpu_side, repeat, on_gpu):
    """The 4-D rows: full connectivity on ``sides`` (GPU) and one CPU row
    on ``cpu_side``, each checked against cupyx / SciPy."""
    rows = []
    full = np.ones((3, 3, 3, 3), bool)
    if on_gpu:
        import cupy
        from cupyx.scipy import ndimage as cndi

        bw, _ = measure_copy_bandwidth()
        for side in sides:
            x = cupy.random.default_rng(7).random((side,) * 4, dtype=cupy.float32) < P4
            n = x.size
            ours, num = meshccl.label(x, connectivity=4, return_num=True)
            want, wn = cndi.label(x, cupy.asarray(full))
            assert num == int(wn) and bool((ours == want).all()), side
            del ours, want
            row = {"case": f"{side}⁴ ({n / 1e6:.1f} M cells)", "cells": n}
            row["GPU ms"] = gpu_ms(lambda: meshccl.label(x, connectivity=4), repeat)
            row["cupyx ms"] = gpu_ms(lambda: cndi.label(x, cupy.asarray(full)),
                                     max(3, repeat // 4))
            row["× cupyx"] = row["cupyx ms"] / row["GPU ms"]
            floor = n * 5 / bw * 1e3
            row["copy TB/s"] = bw / 1e12
            row["copy floor µs"] = floor * 1e3
            row["× copy floor"] = row["GPU ms"] / floor
            row["× nbr floor"] = row["GPU ms"] / (floor * 84 / 5)
            rows.append(row)
            print(json.dumps(row), flush=True)
            del x
            cupy.get_default_memory_pool().free_all_blocks()
    if cpu_side:
        host = np.random.default_rng(7).random((cpu_side,) * 4) < P4
        ours, n = meshccl.ndimage.label(host, full)
        want, wn = ndimage.label(host, full)
        assert n == wn and np.array_equal(ours, want)
        row = {"case": f"CPU {cpu_side}⁴", "cells": host.size}
        row["CPU ms"] = wall_ms(lambda: meshccl.ndimage.label(host, full), 3)
        row["SciPy ms"] = wall_ms(lambda: ndimage.label(host, full), 3)
        row["× SciPy"] = row["SciPy ms"] / row["CPU ms"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    if rows:  # (every row shows every column of the table: blanks where not measured)
        keys = [k for r in rows for k in r]
        for r in rows:
            for k in keys:
                r.setdefault(k, float("nan"))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--side", type=int, default=512)
    ap.add_argument("--cpu-side", type=int, default=128)
    ap.add_argument("--fill", type=float, default=0.3)
    ap.add_argument("--count", type=int, default=8, help="random structures")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--sides4", default="48,128",
                    help="4-D sides, comma-separated (empty: no 4-D rows)")
    ap.add_argument("--cpu-side4", type=int, default=24)
    ap.add_argument("--no-gpu", action="store_true")
    ap.add_argument("--kinds", action="store_true",
                    help="only the structures of one kind each, GPU against cupyx")
    args = ap.parse_args(argv)
    if args.kinds:
        return write_kinds(args.out, args.side, args.repeat)
    rows = []
    cases = structures(args.count)
    rng = np.random.default_rng(5)
    host = rng.random((args.cpu_side,) * 3) < args.fill
    gpu = None
    if not args.no_gpu:
        import cupy
        from cupyx.scipy import ndimage as cndi

        gpu = cupy.random.default_rng(5).random((args.side,) * 3, dtype=cupy.float32) < args.fill
        name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"].decode()
    for label, s in cases:
        row = {"structure": label, "neighbours": int(s.sum()) - 1}
        ours, n = meshccl.ndimage.label(host, s)
        want, wn = ndimage.label(host, s)
        assert n == wn and np.array_equal(ours, want), label
        row["CPU ms"] = wall_ms(lambda: meshccl.ndimage.label(host, s), 3)
        row["SciPy ms"] = wall_ms(lambda: ndimage.label(host, s), 3)
        row["× SciPy"] = row["SciPy ms"] / row["CPU ms"]
        if gpu is not None:
            sg = cupy.asarray(s)
            ours, n = meshccl.ndimage.label(gpu, sg)
            want, wn = cndi.label(gpu, sg)
            assert int(n) == int(wn) and bool((ours == want).all()), label
            del ours, want
            row["GPU ms"] = gpu_ms(lambda: meshccl.ndimage.label(gpu, sg), args.repeat)
            row["cupyx ms"] = gpu_ms(lambda: cndi.label(gpu, sg), max(3, args.repeat // 4))
            row["× cupyx"] = row["cupyx ms"] / row["GPU ms"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    sides4 = [int(s) for s in args.sides4.split(",") if s.strip()]
    rows4 = four_d(sides4, args.cpu_side4, args.repeat, gpu is not None)
    machine = {"host": platform.node(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "gpu": None if gpu is None else name,
               "command": "python benchmarks/structures_bench.py " + " ".join(sys.argv[1:])}
    cols = ["structure", "neighbours"] + (["GPU ms", "cupyx ms", "× cupyx"] if gpu is not None
                                          else []) + ["CPU ms", "SciPy ms", "× SciPy"]
    fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else str(v)  # noqa: E731
    lines = [f"# `meshccl.ndimage.label` with any structure ({machine['gpu'] or 'CPU only'}, "
             f"{machine['date']})", "",
             f"Random cells (p = {args.fill}); GPU: {args.side}³ bool on the device, CUDA "
             f"events, median of {args.repeat} (cupyx: {max(3, args.repeat // 4)}); CPU: "
             f"{args.cpu_side}³, one thread, median wall clock. Labels and N equal to cupyx's "
             "and SciPy's on every row. Command: `" + machine["command"] + "`.", "",
             "| " + " | ".join(cols) + " |", "|---|" + "---:|" * (len(cols) - 1)]
    lines += ["| " + " | ".join(fmt(r[c]) for c in cols) + " |" for r in rows]
    if rows4:
        cols4 = [c for c in ("case", "GPU ms", "cupyx ms", "× cupyx", "copy floor µs",
                             "× copy floor", "× nbr floor", "CPU ms", "SciPy ms", "× SciPy")
                 if c in rows4[0]]
        lines += ["", f"4-D, all 80 neighbours: bool site percolation at p = {P4} (near the "
                  "4-D threshold at full connectivity, bench.py's PERCOLATION_4D_C4); GPU: "
                  "`meshccl.label(x, connectivity=4)` against `cupyx.scipy.ndimage.label(x, "
                  "ones((3, 3, 3, 3)))`, labels equal; CPU: `meshccl.ndimage.label` against "
                  "`scipy.ndimage.label`. Copy floor: (1 + 4) bytes a cell at the measured "
                  "device copy bandwidth" + (f" ({rows4[0]['copy TB/s']:.2f} TB/s)"
                                             if "copy TB/s" in rows4[0] else "")
                  + "; the neighbour-read floor: (80 + 4) bytes a cell, 16.8 copy floors.", "",
                  "| " + " | ".join(cols4) + " |", "|---|" + "---:|" * (len(cols4) - 1)]
        lines += ["| " + " | ".join(fmt(r[c]) for c in cols4) + " |" for r in rows4]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "structures.md").write_text("\n".join(lines) + "\n")
    (args.out / "structures.json").write_text(json.dumps({"machine": machine, "rows": rows,
                                                          "rows4": rows4}, indent=1))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
