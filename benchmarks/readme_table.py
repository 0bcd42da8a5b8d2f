"""Markdown tables from a stored benchmark run (``benchmarks/bench.py``'s bench.json).

A run lives in ``benchmarks/results/latest-<machine kind>/`` (bench.json,
bench.md, bench.png, bench.log).  This script prints its headline table --
each case's floor, meshccl's GPU time, the GPU peers, meshccl against the
fastest GPU peer of the same run, meshccl against the floor, and the CPU
tools -- under a line naming the machine, the date and the commit, and a
small-image latency table.  Times in ms, three significant digits (whole
numbers from 100 on).

    python benchmarks/readme_table.py benchmarks/results/latest-h100
    python benchmarks/readme_table.py benchmarks/results/latest-h100 --write README.md
    python benchmarks/readme_table.py benchmarks/results/latest-h200 --write docs/performance.md

``--write FILE`` replaces the text between the markers
``<!-- table: latest-h100 -->`` and ``<!-- end table: latest-h100 -->`` in
FILE (the folder's name in both), and leaves the rest of FILE alone.
``--latency`` does the same for the latency table (markers
``<!-- latency: NAME -->`` / ``<!-- end latency: NAME -->``), and
``--graph`` for a ``graph_bench.py --gpu`` folder (its graph_bench_gpu.md:
the machine line and the best-method-per-graph table; markers
``<!-- graph: NAME -->`` / ``<!-- end graph: NAME -->``).
"""
import argparse
import json
import math
import re
import sys
from pathlib import Path

GPU_PEERS = ["cupyx", "cuCIM", "bkeccl", "bkeccl raw", "colorcc"]
SHOWN = ["cupyx", "cuCIM", "bkeccl raw", "colorcc"]
CPU = ["meshccl CPU", "meshccl CPU threads", "skimage", "scipy", "OpenCV", "cc3d"]
LATENCY = ["meshccl GPU", "meshccl GPU return_num", "cupyx", "cuCIM", "meshccl CPU", "skimage"]


def ms(x):
    """Milliseconds, three significant digits (whole numbers from 100 on)."""
    if x >= 99.95:
        return f"{x:.0f}"
    decimals = max(0, 2 - math.floor(math.log10(x)))
    text = f"{x:.{decimals}f}"
    if decimals and float(text) >= 10 ** (3 - decimals):  # rounded up a digit (9.996 -> 10.00)
        text = f"{x:.{decimals - 1}f}"
    return text


def case_name(c):
    shape = c["shape"]
    size = f"{shape[0]}{'²' if len(shape) == 2 else '³'}"
    pattern = c["pattern"]
    if pattern == "potts":  # (the case name says q: potts4-...)
        pattern = "Potts q=" + c["name"].split("-")[0][len("potts"):]
    return f"{pattern} {size}, c{c['connectivity']}"


def _seconds(tools, name):
    r = tools.get(name, {})
    return r["seconds"] if r.get("status") == "ok" else None


def threads(run):
    """The CPU threads of the run (the threaded CPU column's; numba's in
    runs before it was dropped)."""
    m = run.get("machine", {})
    return m.get("cpu_threads", m.get("numba", {}).get("threads", "N"))


def header(run):
    """The table's two header lines."""
    names = (["case", "floor", "**meshccl GPU**"] + SHOWN
             + ["vs fastest GPU peer", "× floor", "meshccl CPU (1 thread)",
                f"meshccl CPU ({threads(run)} threads)"] + CPU[2:])
    return ["| " + " | ".join(names) + " |",
            "|---|" + "---:|" * (len(names) - 1)]


def rows(run):
    """One Markdown row per case of ``run`` (a loaded bench.json)."""
    out = []
    for c in run["cases"]:
        t = c["tools"]
        me = _seconds(t, "meshccl GPU")
        cells = [case_name(c), f"{c['floor_s'] * 1e3:.3f}",
                 f"**{ms(me * 1e3)}**" if me is not None else "n/a"]
        cells += [ms(_seconds(t, p) * 1e3) if _seconds(t, p) is not None else "n/a" for p in SHOWN]
        peers = [(_seconds(t, p), p) for p in GPU_PEERS if _seconds(t, p) is not None]
        if peers and me is not None:
            best, who = min(peers)
            cells.append(f"{best / me:.2f}× ({who})")
        else:
            cells.append("n/a")
        cells.append(f"{me / c['floor_s']:.1f}×" if me is not None else "n/a")
        cells += [ms(_seconds(t, p) * 1e3) if _seconds(t, p) is not None else "n/a" for p in CPU]
        out.append("| " + " | ".join(cells) + " |")
    return out


def caption(run):
    """One line: the machine, the date and the commit of the run."""
    m = run.get("machine", {})
    gpu = m.get("gpu", {})
    commit = m.get("meshccl", {}).get("git", "unknown commit")
    bandwidth = run.get("copy_bandwidth_bytes_per_s")
    bw = f", device copy {bandwidth / 1e12:.2f} TB/s" if bandwidth else ""
    return (f"{gpu.get('name', 'no GPU')} (CuPy {gpu.get('cupy', '?')}{bw}); host "
            f"{m.get('cpu_count', '?')} CPUs, {threads(run)} CPU threads; "
            f"{m.get('date_utc', 'date unknown')}; meshccl at {commit}. "
            "Median ms per call (GPU: CUDA events on CuPy arrays; CPU: wall clock on NumPy).")


def table(run):
    """The caption, a blank line and the table."""
    return "\n".join([caption(run), ""] + header(run) + rows(run))


def latency_table(run):
    """Small images, wall time per call of a loop (µs), from the run's ``latency``."""
    lines = ["| image | " + " | ".join(LATENCY) + " |", "|---|" + "---:|" * len(LATENCY)]
    for entry in run.get("latency", []):
        t = entry["tools"]
        cells = ["×".join(str(s) for s in entry["shape"]) + f", c{entry['connectivity']}"]
        cells += [f"{t[n]['seconds'] * 1e6:.0f}" if n in t and t[n].get("seconds") else "n/a"
                  for n in LATENCY]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def graph_summary(text):
    """The machine line and the "best GPU method per graph" table of a
    graph_bench GPU markdown file, as they are.

    Raises
    ------
    ValueError
        If the file has no such table.
    """
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines)
                  if line.startswith("| graph | stored edges | best |")), None)
    if start is None:
        raise ValueError("no 'best GPU method per graph' table found")
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "\n".join([lines[0], ""] + lines[start:end])


def replace_between(text, kind, name, body):
    """Replace what lies between ``<!-- kind: name -->`` and ``<!-- end kind: name -->``.

    Raises
    ------
    ValueError
        If the markers are missing.
    """
    start, end = f"<!-- {kind}: {name} -->", f"<!-- end {kind}: {name} -->"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise ValueError(f"markers {start!r} ... {end!r} not found")
    return pattern.sub(lambda _: f"{start}\n{body}\n{end}", text, count=1)


def load(folder):
    """Load ``folder/bench.json`` (or a bench.json path)."""
    path = Path(folder)
    if path.is_dir():
        path = path / "bench.json"
    return json.loads(path.read_text())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="a results folder (benchmarks/results/latest-h100) or its bench.json")
    ap.add_argument("--write", metavar="FILE", help="replace the table between its markers in FILE")
    what = ap.add_mutually_exclusive_group()
    what.add_argument("--latency", action="store_true",
                      help="the small-image latency table instead of the headline table")
    what.add_argument("--graph", action="store_true",
                      help="RUN is a graph_bench folder: its best-method-per-graph table")
    args = ap.parse_args(argv)
    name = Path(args.run).name if Path(args.run).is_dir() else Path(args.run).parent.name
    if args.graph:
        folder = Path(args.run)
        body, kind = graph_summary((folder / "graph_bench_gpu.md" if folder.is_dir()
                                    else folder).read_text()), "graph"
    else:
        run = load(args.run)
        body, kind = (latency_table(run), "latency") if args.latency else (table(run), "table")
    if args.write is None:
        print(body)
        return 0
    path = Path(args.write)
    path.write_text(replace_between(path.read_text(), kind, name, body))
    return 0


if __name__ == "__main__":
    sys.exit(main())
