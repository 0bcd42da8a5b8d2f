"""The benchmark helpers that run without a GPU: reading and plotting stored
results, and bench.py's CPU tools."""

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


def test_bench_times_and_checks_the_threaded_cpu_tool():
    import bench
    tools, skipped = bench.cpu_tools(with_peers=False)
    assert [t.name for t in tools] == ["meshccl CPU", "meshccl CPU threads"]  # run without peers
    assert set(skipped) == set(bench.CPU_PEERS)
    case = bench.Case("blobs-96^2-c2", "blobs", (96, 96), 2)
    x = bench.generate(case, bench.np)
    args = bench.parse_args(["--out", "unused", "--repeat", "1"])
    res = bench.run_case(case, None, x, [], tools, skipped, args)
    threads = res["meshccl CPU threads"]
    assert threads["status"] == "ok" and threads["count"] == res["meshccl CPU"]["count"] > 1
    assert (threads["check"], threads["reference"]) == ("identical", "meshccl CPU")
    results = {"cases": [{"tools": res}]}
    assert bench.columns(results)[:2] == ["meshccl CPU", "meshccl CPU threads"]


def test_bench_redraws_the_readme_table_and_plot_from_its_stored_run(tmp_path):
    """README's headline table and plot come from benchmarks/results/bench.json:
    the markdown names every case and tool of that run with meshccl's ratio
    to the fastest GPU peer, and the plot (every tool, the floor) is drawn."""
    import json

    import bench
    results = json.loads((ROOT / "benchmarks/results/bench.json").read_text())
    md = bench.markdown(results)
    for case in results["cases"]:
        row = next(line for line in md.splitlines() if line.startswith(f"| {case['name']} |"))
        assert "× (" in row  # meshccl against the fastest GPU peer
        assert all(r.get("check") in ("identical", "same partition")
                   for r in case["tools"].values() if r.get("status") == "ok"
                   and "check" in r)
    header = next(line for line in md.splitlines() if line.startswith("| case | floor |"))
    for tool in ("meshccl GPU", "meshccl CPU threads", "bkeccl raw", "cc3d", "scipy"):
        assert f"| {tool} |" in header
    pytest.importorskip("matplotlib")
    png = tmp_path / "bench.png"
    bench.plot(results, str(png))
    assert png.stat().st_size > 20_000


def test_bench_warms_up_the_threaded_slab_path(monkeypatch):
    """The threaded CPU tool is warmed up on a crop large enough for its
    slabs (arrays under 2 * SLAB_MIN_CELLS run serially), so numba compiles
    the slab path before the timed calls, not during the first of them."""
    import bench
    from meshccl._cpu import mesh

    monkeypatch.setattr(mesh, "SLAB_MIN_CELLS", 1 << 16)
    sizes = []
    real = mesh._label_slabs
    monkeypatch.setattr(mesh, "_label_slabs", lambda *a: sizes.append(a[0].size) or real(*a))
    tools, skipped = bench.cpu_tools(with_peers=False)
    case = bench.Case("blobs-600^2-c1", "blobs", (600, 600), 1)
    x = bench.generate(case, bench.np)
    args = bench.parse_args(["--out", "unused", "--repeat", "1", "--cpu-repeat", "1"])
    res = bench.run_case(case, None, x, [], tools, skipped, args)
    assert res["meshccl CPU threads"]["check"] == "identical"
    import numba

    if numba.config.NUMBA_NUM_THREADS >= 2:  # (one thread: no slabs at all)
        assert sizes[0] == 512 * 512 and sizes[-1] == 600 * 600  # warm-up, then timed
