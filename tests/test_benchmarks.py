"""The benchmark helpers that run without a GPU: tables and plots drawn from
results (synthetic ones here: no test reads the stored results or the docs),
and bench.py's CPU tools."""

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


GRAPH_MD = """Machine: test; command: `python benchmarks/graph_bench.py --gpu`

| graph | vertices | stored edges | components | scipy ms | meshccl CPU (CSR) ms | meshccl CPU (edge list) ms | speed-up (CPU CSR) | labels |
|---|---:|---:|---:|---:|---:|---:|---:|---|
| RMAT scale 4 | 16 | 200 | 3 | 2.0 | 1.0 | 1.0 | 2.00× | identical |
| line, 16 vertices | 16 | 15 | 1 | 0.0 | 0.5 | 0.5 | n/a | identical |

GPU, ms (edges/s), every method; labels checked equal to SciPy's:

| graph | auto (CSR) | ecl (CSR) | bfs-cc (CSR) |
|---|---:|---:|---:|
| RMAT scale 4 | 0.02 (1e+07) | 0.01 (2e+07) | stopped after 3 ms |
| line, 16 vertices | 0.03 (5e+05) | 0.04 (3.75e+05) | 0.10 (1.5e+05) |
"""


def test_plot_graphs_reads_a_gpu_table(tmp_path):
    """plot_graphs reads graph_bench's markdown: edges/s per graph and method,
    stopped methods and 0.0 ms CPU times left out, and draws them."""
    import plot_graphs
    md = tmp_path / "graph_bench_gpu.md"
    md.write_text(GRAPH_MD)
    data = plot_graphs.read(md)
    assert set(data) == {"RMAT scale 4", "line, 16 vertices"}
    rmat = data["RMAT scale 4"]
    assert rmat["scipy"] == pytest.approx(200 / 2e-3)
    assert rmat["meshccl CPU (CSR)"] == pytest.approx(200 / 1e-3)
    assert rmat["GPU ecl (CSR)"] == 2e7 and rmat["GPU auto (CSR)"] == 1e7
    assert "GPU bfs-cc (CSR)" not in rmat  # stopped
    assert "scipy" not in data["line, 16 vertices"]  # timed as 0.0 ms
    assert data["line, 16 vertices"]["GPU bfs-cc (CSR)"] == 1.5e5
    pytest.importorskip("matplotlib")
    png = plot_graphs.plot(md, str(tmp_path / "g.png"))
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


def _run(with_gpu_peer=True):
    """A synthetic bench.json: two cases, as benchmarks/bench.py writes them."""
    def ok(seconds, check="identical"):
        return {"status": "ok", "seconds": seconds, "count": 5, "check": check,
                "reference": "meshccl CPU"}

    na = {"status": "n/a"}
    case2d = {"name": "spiral-64^2-c2", "pattern": "spiral", "shape": [64, 64], "connectivity": 2,
              "cells": 64 ** 2, "floor_s": 2e-5,
              "tools": {"meshccl GPU": ok(1e-4), "cupyx": ok(1.5e-3), "cuCIM": ok(2.2e-3),
                        "bkeccl": ok(9e-4, "same partition"),
                        "bkeccl raw": ok(4e-4, "same partition") if with_gpu_peer else na,
                        "colorcc": ok(5.5e-4, "same partition"),
                        "meshccl CPU": ok(0.0675), "meshccl CPU threads": ok(0.0103),
                        "skimage": ok(0.231), "scipy": ok(0.0987, "same partition"),
                        "OpenCV": ok(0.0263, "same partition"), "cc3d": ok(0.0635)}}
    case3d = {"name": "potts4-32^3-c1", "pattern": "potts", "shape": [32, 32, 32],
              "connectivity": 1, "cells": 32 ** 3, "floor_s": 1.5e-4,
              "tools": {"meshccl GPU": ok(3e-4), "cupyx": na, "cuCIM": ok(1.2e-3),
                        "bkeccl": na, "bkeccl raw": na, "colorcc": na,
                        "meshccl CPU": ok(0.188), "meshccl CPU threads": ok(0.0196),
                        "skimage": ok(0.476), "scipy": na, "OpenCV": na, "cc3d": ok(0.265)}}
    return {"machine": {"date_utc": "2030-01-02 03:04:05 UTC", "cpu_count": 8,
                        "cpu_model": "Test CPU", "command": "bench.py --out x",
                        "numba": {"version": "0", "threads": 8},
                        "meshccl": {"version": "0.1.0", "git": "abc1234"},
                        "gpu": {"name": "Test GPU", "cupy": "14.2.0", "driver_version": "13.0",
                                "runtime_version": "13.2"}},
            "copy_bandwidth_bytes_per_s": 3.0e12, "cases": [case2d, case3d],
            "skipped_tools": {}, "failures": [],
            "latency": [{"side": 64, "shape": [64, 64], "connectivity": 1,
                         "tools": {"meshccl GPU": {"seconds": 1.6e-5},
                                   "cupyx": {"seconds": 6.5e-4}}}]}


def test_bench_markdown_and_plot_of_a_run(tmp_path):
    """bench.py's markdown names every case and tool with meshccl's ratio to
    the fastest GPU peer, and its plot (every tool, the floor) is drawn."""
    import bench
    results = _run()
    md = bench.markdown(results)
    for case in results["cases"]:
        row = next(line for line in md.splitlines() if line.startswith(f"| {case['name']} |"))
        assert "× (" in row  # meshccl against the fastest GPU peer
    header = next(line for line in md.splitlines() if line.startswith("| case | floor |"))
    for tool in ("meshccl GPU", "meshccl CPU threads", "bkeccl raw", "cc3d", "scipy"):
        assert f"| {tool} |" in header
    pytest.importorskip("matplotlib")
    png = tmp_path / "bench.png"
    bench.plot(results, str(png))
    assert png.stat().st_size > 20_000


def test_readme_table_rows_of_a_run():
    import readme_table
    rows = readme_table.rows(_run())
    assert rows == [
        "| spiral 64², c2 | 0.020 | **0.100** | 1.50 | 2.20 | 0.400 | 0.550 | 4.00× (bkeccl raw)"
        " | 5.0× | 67.5 | 10.3 | 231 | 98.7 | 26.3 | 63.5 |",
        "| Potts q=4 32³, c1 | 0.150 | **0.300** | n/a | 1.20 | n/a | n/a | 4.00× (cuCIM)"
        " | 2.0× | 188 | 19.6 | 476 | n/a | n/a | 265 |",
    ]
    # without bkeccl raw the next fastest GPU peer of the run
    assert "5.50× (colorcc)" in readme_table.rows(_run(with_gpu_peer=False))[0]
    head = readme_table.header(_run())
    assert head[0].count("|") == head[1].count("|") == rows[0].count("|")
    assert "meshccl CPU (8 threads)" in head[0]


def test_readme_table_caption_and_latency():
    import readme_table
    text = readme_table.table(_run())
    first = text.splitlines()[0]
    assert "Test GPU" in first and "2030-01-02 03:04:05 UTC" in first and "abc1234" in first
    assert "3.00 TB/s" in first
    lat = readme_table.latency_table(_run()).splitlines()
    assert lat[2].startswith("| 64×64, c1 | 16 | n/a | 650 |")


def test_readme_table_graph_summary(tmp_path):
    import readme_table
    best = ("| graph | stored edges | best | ms | edges/s | speed-up vs scipy | 'auto' on the CSR |\n"
            "|---|---:|---|---:|---:|---:|---|\n"
            "| RMAT scale 4 | 200 | ecl (CSR) | 0.01 | 2e+07 | 200.0× | ecl, 0.02 ms, 2.00× |\n")
    folder = tmp_path / "latest-graph-test"
    folder.mkdir()
    (folder / "graph_bench_gpu.md").write_text(GRAPH_MD + "\nBest GPU method per graph:\n\n" + best
                                               + "\nafter the table\n")
    summary = readme_table.graph_summary((folder / "graph_bench_gpu.md").read_text())
    assert summary == GRAPH_MD.splitlines()[0] + "\n\n" + best.rstrip("\n")
    doc = tmp_path / "perf.md"
    doc.write_text("<!-- graph: latest-graph-test -->\n<!-- end graph: latest-graph-test -->\n")
    assert readme_table.main([str(folder), "--graph", "--write", str(doc)]) == 0
    assert summary in doc.read_text()
    with pytest.raises(ValueError, match="best GPU method"):
        readme_table.graph_summary(GRAPH_MD)


def test_readme_table_writes_between_markers(tmp_path):
    import json

    import readme_table
    folder = tmp_path / "latest-test"
    folder.mkdir()
    (folder / "bench.json").write_text(json.dumps(_run()))
    doc = tmp_path / "doc.md"
    doc.write_text("before\n<!-- table: latest-test -->\nold\n<!-- end table: latest-test -->\n"
                   "<!-- latency: latest-test -->\n<!-- end latency: latest-test -->\nafter\n")
    assert readme_table.main([str(folder), "--write", str(doc)]) == 0
    assert readme_table.main([str(folder), "--write", str(doc), "--latency"]) == 0
    text = doc.read_text()
    assert text.startswith("before\n<!-- table: latest-test -->\nTest GPU")
    assert "old" not in text and text.endswith("<!-- end latency: latest-test -->\nafter\n")
    assert readme_table.table(_run()) in text and readme_table.latency_table(_run()) in text
    again = text
    readme_table.main([str(folder), "--write", str(doc)])  # idempotent
    assert doc.read_text() == again
    with pytest.raises(ValueError, match="markers"):
        readme_table.replace_between("no markers", "table", "latest-test", "x")


def test_readme_table_rounds_to_three_significant_digits():
    from readme_table import ms
    assert [ms(x) for x in (0.18358, 0.0999, 1.0049, 9.996, 38.46, 99.96, 2152.4)] == \
        ["0.184", "0.0999", "1.00", "10.0", "38.5", "100", "2152"]


def test_bench_warms_up_the_threaded_slab_path(monkeypatch):
    """The threaded CPU tool is warmed up on a crop large enough for its
    slabs (arrays under 2 * CPU_SLAB_MIN_CELLS run serially), so the slab
    path has run once (its buffers, its threads) before the timed calls."""
    import bench
    from meshccl import _tuning
    from meshccl._cpu import image

    sizes = []
    real = image.plan_slabs

    def plan(shape, threads):
        slabs = real(shape, threads)
        if slabs >= 2:
            sizes.append(int(np.prod(shape)))
        return slabs

    monkeypatch.setattr(image, "plan_slabs", plan)
    tools, skipped = bench.cpu_tools(with_peers=False)
    case = bench.Case("blobs-600^2-c1", "blobs", (600, 600), 1)
    x = bench.generate(case, bench.np)
    args = bench.parse_args(["--out", "unused", "--repeat", "1", "--cpu-repeat", "1"])
    with _tuning.override(CPU_SLAB_MIN_CELLS=1 << 16):
        res = bench.run_case(case, None, x, [], tools, skipped, args)
    assert res["meshccl CPU threads"]["check"] == "identical"
    from meshccl._cpu.image import cpu_count

    if cpu_count() >= 2:  # (one core: no slabs at all)
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


def test_bench_shapes_and_lattice_sets_run_on_the_cpu(tmp_path):
    """--sets shapes,lattice at tiny sizes without a GPU: every case is
    generated and labelled by meshccl CPU (the GPU's reference), the CPU
    peers run only up to --cpu-peer-cells and agree, every lattice case has
    its plain call, and each set writes its JSON, Markdown and plot (and
    the standard set, not asked for, writes nothing)."""
    import json

    import bench
    assert bench.main(["--out", str(tmp_path), "--sets", "lattice,shapes", "--no-gpu",
                       "--shrink", "256", "--cpu-peer-cells", "3000", "--no-latency"]) == 0
    for stem in ("bench-shapes", "bench-lattice"):
        for ext in (".json", ".md", ".png"):
            assert (tmp_path / (stem + ext)).stat().st_size > 0
    assert not (tmp_path / "bench.json").exists()

    shapes = json.loads((tmp_path / "bench-shapes.json").read_text())
    assert [c["name"] for c in shapes["cases"]] == [c.name for c in bench.shape_cases(256)]
    assert not shapes["failures"]
    for c in shapes["cases"]:
        tools = c["tools"]
        assert tools["meshccl CPU"]["status"] == "ok" and tools["meshccl CPU"]["count"] > 0
        assert "meshccl CPU threads" not in tools or tools["meshccl CPU threads"]["status"] == "skipped"
        sk = tools.get("skimage")
        if sk is not None:
            if c["cells"] > 3000:
                assert sk["status"] == "skipped"
            else:
                assert sk["status"] == "ok" and sk["check"] == "identical"
                assert tools["meshccl CPU"]["check"] == "identical"
    by_name = {c["name"]: c for c in shapes["cases"]}
    levels = next(c for c in shapes["cases"] if c["pattern"] == "levels")
    assert levels["dtype"] == "uint16" and levels["foreground_fraction"] == 1.0
    tall = by_name["percolation-3906x64-c1"]
    wide = by_name["percolation-64x3906-c1"]  # its transpose: the same components
    assert wide["tools"]["meshccl CPU"]["count"] == tall["tools"]["meshccl CPU"]["count"]

    lattice = json.loads((tmp_path / "bench-lattice.json").read_text())
    assert [c["name"] for c in lattice["cases"]] == [c.name for c in bench.lattice_cases(256)]
    assert not lattice["failures"]
    names = {c["name"] for c in lattice["cases"]}
    for c in lattice["cases"]:
        assert c["tools"]["meshccl CPU"]["status"] == "ok"
        assert c["plain"] is None or c["plain"] in names
    plains = [c for c in lattice["cases"] if c["plain"] is None]
    assert plains and all(c["tools"].get("skimage", {}).get("check") in ("identical", None)
                          for c in plains)
    sw = next(c for c in lattice["cases"] if c["variant"] == "swendsen-wang")
    assert sw["bytes_per_cell"] == 1 + 4 + len(sw["shape"])  # spins, labels, a bond per axis


def _gpu_set_results():
    """Synthetic shapes and lattice results, as bench.py writes them on a GPU."""
    import bench

    def ok(seconds, check="identical", dense=True):
        return {"status": "ok", "seconds": seconds, "count": 7, "check": check, "dense": dense,
                "cells_per_s": 1e9}

    machine = {"date_utc": "2030-01-02 03:04:05 UTC", "cpu_count": 8, "cpu_model": "Test CPU",
               "command": "bench.py", "numba": {"version": "0", "threads": 8},
               "meshccl": {"version": "0.1.0", "git": "abc1234"},
               "gpu": {"name": "Test GPU", "cupy": "14", "driver_version": "13.0",
                       "runtime_version": "13.2", "l2_bytes": 50 << 20}}
    settings = {"repeat": 20, "min_time": 0.5, "cpu_repeat": 1, "cpu_peer_cells": 20_000_000,
                "shrink": None, "quick": False}
    case4 = bench.Case("blobs-64^4-c4", "blobs", (64,) * 4, 4, sigma=2.0)
    cells = case4.cells
    shapes = {"machine": machine, "copy_bandwidth_bytes_per_s": 3e12, "settings": settings,
              "skipped_tools": {}, "failures": [], "cases": [{
                  "name": case4.name, "pattern": "blobs", "shape": list(case4.shape),
                  "connectivity": 4, "cells": cells, "ndim": 4, "neighbours": case4.neighbours,
                  "itemsize": 1, "generator": bench.generator_text(case4),
                  "foreground_fraction": 0.5, "floor_s": cells * 5 / 3e12,
                  "neighbour_floor_s": cells * 84 / 3e12,
                  "tools": {"meshccl GPU": ok(3e-4), "cupyx": ok(1.2e-3), "cuCIM": ok(5e-3),
                            "bkeccl raw": ok(1.5e-4, "same partition", dense=False),
                            "meshccl CPU": ok(0.5), "skimage": ok(3.0)}}]}
    lattice = {"machine": machine, "copy_bandwidth_bytes_per_s": 3e12, "settings": settings,
               "skipped_tools": {}, "failures": [], "cases": []}
    for c, t in zip(bench.lattice_cases(16), (2e-4, 5e-4)):
        lattice["cases"].append({
            "name": c.name, "group": c.group, "shape": list(c.shape), "variant": c.variant,
            "call": c.call, "plain": c.plain, "cells": c.cells, "tolerance": None,
            "floor_s": c.cells * 5 / 3e12,
            "tools": {"meshccl GPU": ok(t), "meshccl CPU": ok(10 * t, "reference")}})
    return shapes, lattice


def test_bench_new_set_tables_of_a_gpu_run(tmp_path):
    """The shapes table divides by the fastest *dense* GPU peer (bkeccl raw,
    faster but sparse, is left out of that column), gives the 80-read floor
    of 4-D at connectivity 4 and issue 45's verdict; the lattice table
    divides each feature by its plain call; both plots are drawn."""
    import bench

    assert bench.Case("x", "blobs", (8,) * 4, 4).neighbours == 80
    assert [bench._div(s, 4) for s in (4999, 3001, 64, 4)] == [1249, 751, 16, 8]
    shapes, lattice = _gpu_set_results()
    assert bench.speedup(shapes["cases"][0]["tools"], dense_only=True) == (4.0, "cupyx")
    assert bench.speedup(shapes["cases"][0]["tools"])[1] == "bkeccl raw"
    md = bench.markdown_shapes(shapes)
    row = next(line for line in md.splitlines() if line.startswith("| blobs-64^4-c4 |"))
    assert "4.00× (cupyx)" in row and "0.50× (bkeccl raw)" in row and "✓" in row  # 10.7x floor
    assert "84 bytes" in md  # the 80-read floor: 80 neighbours x 1 byte + 4
    md = bench.markdown_lattice(lattice)
    periodic = lattice["cases"][1]["name"]  # 0.5 ms against the plain call's 0.2
    row = next(line for line in md.splitlines() if line.startswith(f"| {periodic} |"))
    assert periodic.endswith("-periodic") and "2.50×" in row and "✗" in row
    pytest.importorskip("matplotlib")
    bench.plot(shapes, str(tmp_path / "s.png"))
    bench.plot_lattice(lattice, str(tmp_path / "l.png"))
    assert (tmp_path / "s.png").stat().st_size > 10_000 and (tmp_path / "l.png").stat().st_size > 10_000
