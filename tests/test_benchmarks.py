"""The benchmark helpers that run without a GPU: reading and plotting stored results."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def test_plot_graphs_reads_the_stored_gpu_table(tmp_path):
    import plot_graphs
    data = plot_graphs.read(ROOT / "benchmarks/results/graph_bench_gpu.md")
    rmat = next(g for g in data if g.startswith("RMAT"))
    assert data[rmat]["scipy"] > 0 and data[rmat]["GPU ecl (CSR)"] > 100 * data[rmat]["scipy"]
    assert all("GPU bfs-cc (CSR)" not in data[g] for g in data if g.startswith("RMAT"))  # stopped
    pytest.importorskip("matplotlib")
    png = plot_graphs.plot(ROOT / "benchmarks/results/graph_bench_gpu.md", str(tmp_path / "g.png"))
    assert Path(png).stat().st_size > 10_000
