"""Plot a graph benchmark's GPU table: edges per second per graph, every method.

    python benchmarks/plot_graphs.py benchmarks/results/graph_bench_gpu.md [OUT.png]

Reads the markdown that ``benchmarks/graph_bench.py --gpu`` writes (the
first table gives SciPy's and the CPU backend's times, the "GPU, ms
(edges/s)" table every GPU method's) and draws one marker per method and
graph on a log scale; methods stopped at the pass cap are left out.
``graph_bench.py`` calls this itself after a GPU run.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def _tables(text):
    """Markdown tables of ``text`` as lists of rows (lists of cells)."""
    tables, cur = [], []
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= set("-:") for c in cells):
                cur.append(cells)
        elif cur:
            tables.append(cur)
            cur = []
    if cur:
        tables.append(cur)
    return tables


def read(path):
    """{graph: {tool: edges per second}} from a graph_bench GPU markdown file."""
    tables = _tables(Path(path).read_text())
    first = tables[0]
    head = first[0]
    edges = {row[0]: float(row[head.index("stored edges")]) for row in first[1:]}
    out = {g: {} for g in edges}
    for row in first[1:]:
        for col in ("scipy ms", "meshccl CPU (CSR) ms"):
            if col in head:
                ms = float(row[head.index(col)])
                if ms > 0:  # (tiny test graphs can time as 0.0 ms)
                    out[row[0]][col.replace(" ms", "")] = edges[row[0]] / (ms / 1e3)
    gpu = next(t for t in tables if t[0][0] == "graph" and any("(CSR)" in c for c in t[0][1:])
               and t is not first)
    for row in gpu[1:]:
        for name, cell in zip(gpu[0][1:], row[1:]):
            m = re.match(r"([\d.]+) \(([\d.e+]+)\)", cell)
            if m and float(m.group(2)) > 0:
                out[row[0]][f"GPU {name}"] = float(m.group(2))
    return out


def plot(path, png=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    data = read(path)
    graphs = list(data)
    tools = list(dict.fromkeys(t for g in graphs for t in data[g]))
    markers = "o s ^ v D P X * h < > p d H 8 1 2 3 4".split()
    colours = plt.get_cmap("tab20").colors
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(graphs) + 4), 6))
    for i, t in enumerate(tools):
        xs = [j + (i - len(tools) / 2) * 0.6 / len(tools) for j, g in enumerate(graphs) if t in data[g]]
        ys = [data[g][t] for g in graphs if t in data[g]]
        ax.plot(xs, ys, linestyle="none", marker=markers[i % len(markers)], markersize=6,
                color=colours[i % 20], label=t, fillstyle="full" if t.startswith("GPU") else "none")
    ax.set_yscale("log")
    ax.set_xticks(np.arange(len(graphs)))
    ax.set_xticklabels([g if len(g) < 28 else g[:26] + "…" for g in graphs], rotation=30, ha="right")
    ax.set_ylabel("stored edges per second")
    ax.set_title("Graph connected components: every method, end to end (" +
                 Path(path).read_text().split(";")[0].replace("Machine: ", "") + ")", fontsize=9)
    ax.grid(True, which="both", axis="y", alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=7)
    png = png or str(Path(path).with_suffix(".png"))
    fig.savefig(png, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return png


if __name__ == "__main__":
    print(plot(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
