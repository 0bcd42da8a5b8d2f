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


def test_readme_headline_table_is_the_stored_run():
    """README's headline rows are readme_table.py's rows of
    benchmarks/results/bench.json, every one: a new run and the README are
    updated together, and the ratios quoted are that run's."""
    import json

    import readme_table
    run = json.loads((ROOT / "benchmarks/results/bench.json").read_text())
    rows = readme_table.rows(run)
    assert len(rows) == len(run["cases"]) == 14
    readme = (ROOT / "README.md").read_text().splitlines()
    start = readme.index(rows[0])  # ValueError if the README's row differs
    assert readme[start:start + len(rows)] == rows


def test_readme_table_rounds_to_three_significant_digits():
    from readme_table import ms
    assert [ms(x) for x in (0.18358, 0.0999, 1.0049, 9.996, 38.46, 99.96, 2152.4)] == \
        ["0.184", "0.0999", "1.00", "10.0", "38.5", "100", "2152"]


def test_bench_warms_up_the_threaded_slab_path(monkeypatch):
    """The threaded CPU tool is warmed up on a crop large enough for its
    slabs (arrays under 2 * CPU_SLAB_MIN_CELLS run serially), so numba
    compiles the slab path before the timed calls, not during the first of
    them."""
    import bench
    from meshccl import _tuning
    from meshccl._cpu import image_parallel

    sizes = []
    real = image_parallel._slabs
    monkeypatch.setattr(image_parallel, "_slabs", lambda *a: sizes.append(a[0].size) or real(*a))
    tools, skipped = bench.cpu_tools(with_peers=False)
    case = bench.Case("blobs-600^2-c1", "blobs", (600, 600), 1)
    x = bench.generate(case, bench.np)
    args = bench.parse_args(["--out", "unused", "--repeat", "1", "--cpu-repeat", "1"])
    with _tuning.override(CPU_SLAB_MIN_CELLS=1 << 16):
        res = bench.run_case(case, None, x, [], tools, skipped, args)
    assert res["meshccl CPU threads"]["check"] == "identical"
    import numba

    if numba.config.NUMBA_NUM_THREADS >= 2:  # (one thread: no slabs at all)
        assert sizes[0] == 512 * 512 and sizes[-1] == 600 * 600  # warm-up, then timed


# Rows as ncu 2025.3 wrote them (--csv --print-units base), with its own
# messages before them: two kernels, eight counters each.
NCU_CSV = '''==PROF== Connected to process 733 (/usr/bin/python3.12)
==PROF== Creating report from application replay data: 0%.................100%
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
''' + "\n".join(
    f'"{kid}","733","python3.12","127.0.0.1","{name}","1","7","(256, 1, 1)","(16, 128, 1)",'
    f'"0","9.0","Command line profiler metrics","{metric}","{unit}","{value}"'
    for kid, name, rows in (
        (0, "meshccl_runs2d_tile", (("dram__bytes_read.sum", "byte", "17,096,704"),
                                    ("dram__bytes_write.sum", "byte", "20,544,768"),
                                    ("gpu__time_duration.sum", "ns", "49,728"),
                                    ("lts__t_bytes.sum", "byte", "59,982,304"),
                                    ("smsp__inst_executed.sum", "inst", "28,116,863"),
                                    ("smsp__sass_inst_executed_op_global_atom.sum", "inst", "0"),
                                    ("smsp__sass_inst_executed_op_global_red.sum", "inst", "2,048"),
                                    ("smsp__sass_inst_executed_op_shared_atom.sum", "inst", "66,666"))),
        (1, "meshccl_runs2d_border", (("dram__bytes_read.sum", "byte", "2,325,248"),
                                      ("dram__bytes_write.sum", "byte", "3,429,120"),
                                      ("gpu__time_duration.sum", "ns", "18,688"),
                                      ("lts__t_bytes.sum", "byte", "18,546,176"),
                                      ("smsp__inst_executed.sum", "inst", "4,440,000"),
                                      ("smsp__sass_inst_executed_op_global_atom.sum", "inst", "32,847"),
                                      ("smsp__sass_inst_executed_op_global_red.sum", "inst", "0"),
                                      ("smsp__sass_inst_executed_op_shared_atom.sum", "inst", "0"))))
    for metric, unit, value in rows) + "\n"


def test_floor_gap_reads_ncu_rows_and_sums_a_case():
    import floor_gap
    kernels = floor_gap.parse_ncu_csv(NCU_CSV, floor_gap.METRICS)
    assert [k["kernel"] for k in kernels] == ["meshccl_runs2d_tile", "meshccl_runs2d_border"]
    assert kernels[0]["dram_read"] == 17_096_704 and kernels[1]["ns"] == 18_688
    case = floor_gap.bench.Case("blobs-4096^2-c2", "blobs", (4096, 4096), 2)
    row = floor_gap.summarise(case, 0.124e-3, kernels, bandwidth=2.98e12)
    moved = 17_096_704 + 20_544_768 + 2_325_248 + 3_429_120
    assert row["kernels"] == 2
    assert row["moved_over_floor"] == pytest.approx(moved / (5 * 4096 ** 2))
    assert row["moved_ms"] == pytest.approx(moved / 2.98e12 * 1e3)
    assert row["kernel_ms"] == pytest.approx((49_728 + 18_688) / 1e6)
    assert row["global_atomics"] == 2_048 + 32_847 and row["shared_atomics"] == 66_666
    assert row["floor_ms"] == pytest.approx(5 * 4096 ** 2 / 2.98e12 * 1e3)
    data = {"machine": "m", "date": "d", "commit": "c", "command": "x", "bandwidth": 2.98e12,
            "missing_metrics": [], "cases": [row, {"case": "spiral-4096^2-c2", "call_ms": 0.19,
                                                   "error": "ncu exited with 1"}]}
    md = floor_gap.table(data)
    assert "| blobs-4096^2-c2 | 0.124 | 0.0281 | 4.41 | 2 |" in md
    assert "ncu exited with 1" in md and "| meshccl_runs2d_border | 0.0187 |" in md


def test_floor_gap_keeps_only_the_counters_ncu_knows(monkeypatch):
    import floor_gap
    listing = "\n".join(["Device TARGET", "dram__bytes_read   Counter byte  # of bytes read",
                         "gpu__time_duration Counter ns    duration"])
    monkeypatch.setattr(floor_gap.subprocess, "run",
                        lambda *a, **k: type("R", (), {"stdout": listing})())
    have, missing = floor_gap.known_metrics("ncu")
    assert have == [("ns", "gpu__time_duration.sum"), ("dram_read", "dram__bytes_read.sum")]
    assert "dram__bytes_write.sum" in missing and "lts__t_bytes.sum" in missing
