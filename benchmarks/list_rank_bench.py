"""List ranking: the sequential walk against Wylie's pointer jumping and
the random-splitter method, on the CPU (the compiled core's threads) and
the GPU.

    python benchmarks/list_rank_bench.py --max-log2 22 --out DIR          (CPU only here)
    python benchmarks/list_rank_bench.py --gpu --max-log2 26 --out DIR    (needs CuPy + GPU)

Sizes n = 2**--min-log2 .. 2**--max-log2 (default 16..26), two inputs each:
one random list (a random permutation linked in order) and many lists
(random lengths 1..2 * --mean-list, mean --mean-list, randomly numbered).
Every call is the public ``meshccl.graph.list_rank`` with an explicit
``method`` (validation included; ranks only), checked equal to the
sequential walk's.  CPU: wall clock, median of --reps after a warm-up,
'wylie' and 'splitters' on --threads threads (default all cores).  GPU
(--gpu; refused clearly without CuPy or a device): the array on the device,
CUDA events around the call, median of --reps after a warm-up.  Sequential
runs above --seq-max-log2 are skipped (minutes at 2**26 on a slow VM).
Writes list_rank.md (ms and ns per element, the fastest marked),
list_rank.json and list_rank.png (ns per element against n) under --out.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from meshccl.graph import list_rank  # noqa: E402
from timing import median_events_ms as time_gpu, require_gpu, wall_ms as time_cpu  # noqa: E402


def one_list(n, rng):
    perm = rng.permutation(n)
    succ = np.empty(n, np.int64)
    succ[perm[:-1]] = perm[1:]
    succ[perm[-1]] = -1
    return succ


def many_lists(n, rng, mean):
    perm = rng.permutation(n)
    lengths = rng.integers(1, 2 * mean, size=n // mean + 2)
    ends = np.minimum(np.cumsum(lengths), n)
    ends = np.unique(np.concatenate([ends[ends < n], [n]]))
    succ = np.empty(n, np.int64)
    succ[perm[:-1]] = perm[1:]
    succ[perm[ends - 1]] = -1  # the last element of each run is a tail
    return succ


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--min-log2", type=int, default=16)
    ap.add_argument("--max-log2", type=int, default=26)
    ap.add_argument("--seq-max-log2", type=int, default=26)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: all cores)")
    ap.add_argument("--mean-list", type=int, default=1000)
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--no-cpu-parallel", action="store_true",
                    help="skip the CPU's wylie and splitters (GPU runs)")
    ap.add_argument("--out", type=Path, default=Path("list_rank_results"))
    args = ap.parse_args(argv)
    if args.gpu:
        require_gpu("--gpu")
    args.out.mkdir(parents=True, exist_ok=True)
    from meshccl._cpu.image import cpu_count

    threads = args.threads or cpu_count()
    cols = ["cpu sequential"]
    if not args.no_cpu_parallel:
        cols += [f"cpu wylie ({threads} thr)", f"cpu splitters ({threads} thr)"]
    if args.gpu:
        cols += ["gpu wylie", "gpu splitters"]
    rows = []
    rng = np.random.default_rng(2026)
    for lg in range(args.min_log2, args.max_log2 + 1):
        n = 1 << lg
        for kind, succ in (("one list", one_list(n, rng)),
                           (f"lists of ~{args.mean_list}", many_lists(n, rng, args.mean_list))):
            want = list_rank(succ, method="sequential")
            row = {"n": n, "log2": lg, "input": kind, "ms": {}}
            if lg <= args.seq_max_log2:
                row["ms"]["cpu sequential"] = time_cpu(lambda: list_rank(succ, method="sequential"),
                                                       args.reps)
            if not args.no_cpu_parallel:
                for m in ("wylie", "splitters"):
                    got = list_rank(succ, method=m, cpu_threads=threads)
                    assert (got == want).all(), (m, n, kind)
                    row["ms"][f"cpu {m} ({threads} thr)"] = time_cpu(
                        lambda m=m: list_rank(succ, method=m, cpu_threads=threads), args.reps)
            if args.gpu:
                import cupy

                dev = cupy.asarray(succ)
                for m in ("wylie", "splitters"):
                    got = list_rank(dev, method=m)
                    assert (got.get() == want).all(), (m, n, kind)
                    row["ms"][f"gpu {m}"] = time_gpu(lambda m=m: list_rank(dev, method=m),
                                                     args.reps)
                del dev
            rows.append(row)
            print(lg, kind, {k: round(v, 3) for k, v in row["ms"].items()}, flush=True)
    machine = {"platform": platform.platform(), "processor": platform.processor(),
               "cpu_threads": threads}
    if args.gpu:
        import cupy

        machine["gpu"] = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    (args.out / "list_rank.json").write_text(json.dumps({"machine": machine, "columns": cols,
                                                         "rows": rows}, indent=1))
    lines = [f"List ranking, ms per call (ns per element); fastest in bold. "
             f"{machine}", "",
             "| n | input | " + " | ".join(cols) + " |",
             "|---:|---|" + "---:|" * len(cols)]
    for row in rows:
        best = min(row["ms"].values())
        cells = []
        for c in cols:
            v = row["ms"].get(c)
            if v is None:
                cells.append("–")
                continue
            s = f"{v:.3f} ({v * 1e6 / row['n']:.1f})"
            cells.append(f"**{s}**" if v == best else s)
        lines.append(f"| 2^{row['log2']} | {row['input']} | " + " | ".join(cells) + " |")
    (args.out / "list_rank.md").write_text("\n".join(lines) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
        for ax, kind in zip(axes, dict.fromkeys(r["input"] for r in rows)):
            sel = [r for r in rows if r["input"] == kind]
            for c in cols:
                pts = [(r["n"], r["ms"][c] * 1e6 / r["n"]) for r in sel if c in r["ms"]]
                if pts:
                    ax.plot(*zip(*pts), marker="o", label=c)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(kind)
            ax.set_xlabel("n")
        axes[0].set_ylabel("ns per element")
        axes[0].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(args.out / "list_rank.png", dpi=120)
    except ImportError:
        print("matplotlib missing: no plot")
    print((args.out / "list_rank.md").read_text())


if __name__ == "__main__":
    main()
