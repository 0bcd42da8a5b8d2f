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
    # the peak device memory sections (issue 56)
    assert bench.MEMORY_HEADING not in md  # no peak recorded: no section
    shapes["cases"][0]["tools"]["meshccl GPU"].update(
        peak_bytes=2 * 4 * 64 ** 4, labels_bytes=4 * 64 ** 4, peak_ratio=2.0)
    shapes["cases"][0]["tools"]["cupyx"].update(
        peak_bytes=None, labels_bytes=4 * 64 ** 4, peak_ratio=None, peak_note="elsewhere")
    section = bench.markdown_shapes(shapes).split(bench.MEMORY_HEADING)[1]
    assert "| blobs-64^4-c4 | 67.1 MB | 134 MB (2.00×) | — |  |  | ✗ |" in section
    assert "- cupyx: elsewhere" in section
    for c in lattice["cases"]:
        c["tools"]["meshccl GPU"].update(peak_bytes=4 * c["cells"], labels_bytes=4 * c["cells"],
                                         peak_ratio=1.0)
    section = bench.markdown_lattice(lattice).split(bench.MEMORY_HEADING)[1]
    assert f"| {periodic} | 262 kB | 262 kB (1.00×) | ✓ |" in section  # 256² int32
    pytest.importorskip("matplotlib")
    bench.plot(shapes, str(tmp_path / "s.png"))
    bench.plot_lattice(lattice, str(tmp_path / "l.png"))
    assert (tmp_path / "s.png").stat().st_size > 10_000 and (tmp_path / "l.png").stat().st_size > 10_000
    bench.plot_memory(shapes, str(tmp_path / "m.png"))
    assert (tmp_path / "m.png").stat().st_size > 10_000


# ------------------------------------------------------------ device memory

class _FakeCupy:
    """A stand-in ``cupy`` for bench.py's GPU code without a GPU: arrays are
    NumPy arrays; those made by ``empty`` / ``asarray`` come from a "pool"
    that tells the registered memory hooks, as CuPy's pool does, of each
    block it hands out (its size rounded up to 512 bytes) and takes back
    (when the array is collected).  CUDA events read the wall clock."""

    def __init__(self):
        import types
        import weakref

        import numpy as np

        hooks = self.hooks = {}

        class MemoryHook:
            name = "hook"

            def __enter__(self):
                if self.name in hooks:
                    raise RuntimeError(f"hook {self.name} already registered")
                hooks[self.name] = self
                return self

            def __exit__(self, *exc):
                del hooks[self.name]

            def malloc_postprocess(self, **kw):
                pass

            def free_postprocess(self, **kw):
                pass

        class DeviceArray(np.ndarray):
            @property
            def __cuda_array_interface__(self):
                return {"data": (self.__array_interface__["data"][0], False),
                        "shape": self.shape, "typestr": self.dtype.str, "version": 3}

        def empty(shape, dtype=np.float64):
            a = np.empty(shape, dtype).view(DeviceArray)
            ptr, size = a.__array_interface__["data"][0], -(-a.nbytes // 512) * 512
            for h in list(hooks.values()):
                h.malloc_postprocess(device_id=0, size=a.nbytes, mem_size=size, mem_ptr=ptr,
                                     pmem_id=id(a))
            weakref.finalize(a, lambda: [h.free_postprocess(device_id=0, mem_size=size,
                                                            mem_ptr=ptr, pmem_id=0)
                                         for h in list(hooks.values())])
            return a

        def asarray(x):
            out = empty(np.shape(x), np.asarray(x).dtype)
            out[...] = x
            return out

        class Event:
            def record(self):
                import time
                self.t = time.perf_counter()

            def synchronize(self):
                pass

        self.DeviceArray = DeviceArray
        self.module = types.ModuleType("cupy")
        cuda = types.ModuleType("cupy.cuda")
        cuda.memory_hook = types.SimpleNamespace(MemoryHook=MemoryHook)
        cuda.Device = lambda *a: types.SimpleNamespace(synchronize=lambda: None, id=0)
        cuda.Event = Event
        cuda.get_elapsed_time = lambda a, b: (b.t - a.t) * 1e3
        m = self.module
        m.cuda, m.empty, m.asarray = cuda, empty, asarray
        m.asnumpy = lambda a: np.array(a).view(np.ndarray)
        m.get_default_memory_pool = lambda: types.SimpleNamespace(free_all_blocks=lambda: None)
        m.__getattr__ = lambda name: getattr(np, name)  # the rest as NumPy's

    def install(self, monkeypatch):
        monkeypatch.setitem(sys.modules, "cupy", self.module)
        monkeypatch.setitem(sys.modules, "cupy.cuda", self.module.cuda)
        return self.module


def test_call_memory_counts_what_a_call_holds_from_the_pool(monkeypatch):
    """PeakMemory's peak is the high-water mark of the blocks taken inside
    the block, in the pool's 512-byte units, whatever was allocated before
    (freeing such a block inside does not lower it), and nested blocks each
    count; measure_memory relates it to the output's bytes and gives no
    number for an output that is not pool memory."""
    import numpy as np

    import bench
    from meshccl._gpu.timing import PeakMemory
    fake = _FakeCupy()
    cp = fake.install(monkeypatch)
    before = [cp.empty(1000, np.uint8)]
    with PeakMemory() as mem:
        before.pop()                       # a block from before, freed inside: not ours
        a = cp.empty(8000, np.uint8)       # 8192 bytes (8000 rounded up to 512s)
        b = cp.empty(4096, np.int32)       # 16384: the peak, 24576
        del a
        c = cp.empty(200, np.int32)        # 1024 (800 rounded up)
    assert (mem.peak, mem.current) == (8192 + 16384, 16384 + 1024)
    assert mem.holds(b.__cuda_array_interface__["data"][0] + 8) and len(mem.live) == 2
    del b, c
    with PeakMemory() as outer:            # nested: each hook counts what its block takes
        d = cp.empty(1024, np.uint8)
        with PeakMemory(site=lambda: "here") as inner:
            e = cp.empty(2048, np.uint8)
    assert (outer.peak, inner.peak) == (1024 + 2048, 2048) and inner.at_peak == [(2048, "here")]
    del d, e

    def call():                            # 2x its output of scratch, then the output
        scratch = cp.empty(2 * 64 * 64, np.int32)
        out = cp.empty((64, 64), np.int32)
        del scratch
        return out, 5

    rec = bench.measure_memory(call)
    assert rec == {"peak_bytes": 3 * 64 * 64 * 4, "labels_bytes": 64 * 64 * 4, "peak_ratio": 3.0}
    outside = bench.measure_memory(lambda: np.zeros((8, 8), np.int32).view(fake.DeviceArray))
    assert outside["peak_bytes"] is None and "not memory of CuPy's pool" in outside["peak_note"]
    assert outside["labels_bytes"] == 256
    host = bench.measure_memory(lambda: np.zeros(4, np.int32))
    assert host["peak_bytes"] is None and "no device address" in host["peak_note"]


def test_bench_run_case_records_peak_memory_per_gpu_tool(monkeypatch):
    """run_case, on the stand-in cupy, measures each GPU tool in one call
    of its own after the timed calls (the timed calls run without the
    hook), records the peak, the output's bytes and their ratio, reports
    tools that allocate elsewhere without a number, and the tables show
    them (with meshccl's verdict against the 1.25x target)."""
    import numpy as np

    import bench
    import meshccl
    fake = _FakeCupy()
    cp = fake.install(monkeypatch)
    hooked = []

    def host_labels(x, c):
        return meshccl.label(np.asarray(x), connectivity=c.connectivity).astype(np.int32)

    def pooled(x, c):
        scratch = cp.empty(x.size // 4, np.int32)  # a quarter of the labels' bytes
        out = cp.asarray(host_labels(x, c))
        del scratch
        return out

    def meshccl_like(x, c):
        hooked.append(bool(fake.hooks))
        return pooled(x, c)

    def elsewhere(x, c):  # an output another allocator made
        return host_labels(x, c).view(fake.DeviceArray)

    def with_count(fn):
        return lambda x, c: (lambda out: (out, int(out.max())))(fn(x, c))

    gtools = [bench.Tool("meshccl GPU", "gpu", label=with_count(meshccl_like), timed=meshccl_like),
              bench.Tool("cupyx", "gpu", label=with_count(elsewhere)),
              bench.Tool("colorcc", "gpu", label=with_count(pooled), memory="uses PyTorch's"),
              bench.Tool("cuCIM", "gpu", label=with_count(pooled), supports=lambda c: "no")]
    ctools, _ = bench.cpu_tools(with_peers=False)
    case = bench.Case("blobs-64^2-c1", "blobs", (64, 64), 1)
    x = bench.generate(case, np)
    args = bench.parse_args(["--out", "unused", "--repeat", "2", "--min-time", "0"])
    res = bench.run_case(case, cp.asarray(x), x, gtools, ctools[:1], {}, args)
    mine = res["meshccl GPU"]
    # timed calls (2 warm-up + 2) without the hook, one measured call with it, then the check's
    assert hooked == [False] * 4 + [True, False]
    assert mine["check"] == "identical" and mine["labels_bytes"] == 64 * 64 * 4
    assert mine["peak_bytes"] == 64 * 64 * 5 and mine["peak_ratio"] == 1.25
    assert res["cupyx"]["peak_bytes"] is None and res["cupyx"]["check"] == "identical"
    assert res["colorcc"]["peak_note"] == "uses PyTorch's"
    assert res["cuCIM"]["status"] == "n/a"
    assert "peak 20.5 kB (1.25×)" in bench._fmt_result(mine)

    results = {"machine": {"date_utc": "d", "cpu_count": 1, "cpu_model": "c", "command": "x",
                           "meshccl": {"version": "0", "git": "g"}, "gpu": {
                               "name": "Fake GPU", "driver_version": "0", "runtime_version": "0",
                               "cupy": "0"}},
               "settings": {"repeat": 2, "min_time": 0, "cpu_repeat": 1},
               "cases": [dict(name=case.name, shape=[64, 64], generator=bench.generator_text(case),
                              floor_s=None, tools=res)], "skipped_tools": {}, "failures": []}
    for md in (bench.markdown_memory(results), bench.markdown(results)):
        section = md.split(bench.MEMORY_HEADING)[1]
        row = next(line for line in section.splitlines() if line.startswith(f"| {case.name} |"))
        assert row == f"| {case.name} | 16.4 kB | 20.5 kB (1.25×) | — | n/a | — | ✓ |"
        assert "- cupyx: its output is not memory of CuPy's pool" in section
        assert "- colorcc: uses PyTorch's" in section
    mine["peak_ratio"] = 1.26
    assert bench._memory_lines(results, ["meshccl GPU"])[-1].endswith(" | ✗ |")
    args = bench.parse_args(["--out", "unused", "--no-memory"])
    res = bench.run_case(case, cp.asarray(x), x, gtools[:1], [], {}, args)
    assert "peak_bytes" not in res["meshccl GPU"]
    assert bench._memory_lines({"cases": [{"tools": res}]}, ["meshccl GPU"]) == []


def test_bench_memory_set_cases_and_cpu_run(tmp_path):
    """--sets memory holds issue 56's three cases (selectable with --cases,
    shrunk with --shrink) and runs without a GPU: meshccl CPU as the
    reference, the memory section saying why there is no number."""
    import json

    import bench
    from meshccl.patterns import PERCOLATION_THRESHOLD
    cases = bench.memory_cases()
    assert [(c.name, c.shape, c.p, c.dtype) for c in cases] == [
        ("percolation-1024^3-c1", (1024,) * 3, PERCOLATION_THRESHOLD[(3, 1)], "uint8"),
        ("percolation-1024^3-c3", (1024,) * 3, PERCOLATION_THRESHOLD[(3, 3)], "uint8"),
        ("percolation-16384^2-c2", (16384,) * 2, PERCOLATION_THRESHOLD[(2, 2)], "uint8")]
    assert 4 * cases[0].cells == 4 * 2**30  # 4.3 GB of int32 labels
    args = bench.parse_args(["--out", "x", "--sets", "memory,standard"])
    assert args.sets == ["standard", "memory"] and args.memory
    assert bench._set_args(args, "memory").min_time == 0.5
    assert not bench.parse_args(["--out", "x", "--no-memory"]).memory
    with pytest.raises(SystemExit):
        bench.parse_args(["--out", "x", "--sets", "memroy"])
    assert [bench.fmt_bytes(n) for n in (7.5e9, 4 * 2**30, 268_435_456, 2048, 512)] == \
        ["7.50 GB", "4.29 GB", "268 MB", "2.05 kB", "512 B"]

    assert bench.main(["--out", str(tmp_path), "--sets", "memory", "--no-gpu", "--shrink", "64",
                       "--cases", "percolation-16^3-c3,percolation-256^2-c2"]) == 0
    run = json.loads((tmp_path / "bench-memory.json").read_text())
    assert [c["name"] for c in run["cases"]] == ["percolation-16^3-c3", "percolation-256^2-c2"]
    for c in run["cases"]:
        assert c["tools"]["meshccl CPU"]["status"] == "ok"
        assert c["tools"]["meshccl CPU"]["check"] == "reference"
        assert set(c["tools"]) == set(bench.GPU_TOOLS) | {"meshccl CPU"}  # the GPU's: skipped
    md = (tmp_path / "bench-memory.md").read_text()
    assert f"{bench.MEMORY_HEADING}\n\nNot measured: no GPU in this run." in md
    assert (tmp_path / "bench-memory.png").stat().st_size > 0




def test_incremental_plot_gives_each_rule_one_colour_and_labels_the_target():
    """incremental_bench's figure: a union rule keeps its colour in every
    panel (the two rows hold different series), its check=True variant is
    dotted in the same colour, and the dashed target line is in the legend
    of the R-MAT panels only."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import incremental_bench as bench

    sizes, ratios = [10**3, 10**4], [1, 4]
    top = ["unionfind/halving", "unionfind/halving check=True", "rem-cas/splicing", "jtb/splitting"]
    graphs = [{"name": name, "batch_size": {k: {"1000": 1e9, "10000": 2e9} for k in top},
               "ratio": {k: {"1": 1e9, "4": 3e9} for k in order}}
              for name, order in (("R-MAT 8", ["unionfind/halving", "rem-cas/splicing",
                                                "jtb/splitting"]),
                                  ("grid 8²", ["jtb/splitting", "unionfind/full",
                                               "rem-cas/splicing"]))]
    fig = bench.figure({"graphs": graphs, "machine": {"gpu": "test"}}, sizes, ratios)
    colours = {}
    for ax in fig.axes:
        for line in ax.get_lines():
            label = line.get_label()
            if label.startswith("target"):
                continue
            rule = label.split("/")[0]
            assert colours.setdefault(rule, line.get_color()) == line.get_color(), label
            assert line.get_linestyle() == (":" if label.endswith("check=True") else "-")
    assert len(set(colours.values())) == len(colours) == 3
    rmat_top, grid_top = fig.axes[0], fig.axes[1]
    targets = [line for line in rmat_top.get_lines() if line.get_linestyle() == "--"]
    assert len(targets) == 1 and targets[0].get_label().startswith("target 5e+10 edges/s")
    assert targets[0].get_label() in [t.get_text() for t in rmat_top.get_legend().get_texts()]
    assert not [line for line in grid_top.get_lines() if line.get_linestyle() == "--"]
    plt.close(fig)


def test_cpu_memory_formats_its_table():
    """cpu_memory's helpers: bytes as MB, a cell as peak (peak / output),
    a tool that did not run as "not measured", the ru_maxrss fallback
    starred; no measurement runs here."""
    import cpu_memory
    assert cpu_memory.fmt_bytes(None) == "—"
    assert cpu_memory.fmt_bytes(52_314_112) == "52.3 MB"
    assert cpu_memory.fmt_bytes(203_000_000) == "203 MB"
    assert cpu_memory.conn_name(1, 3) == "c1" and cpu_memory.conn_name(3, 3) == "full"
    ok = {"peak_bytes": 50_331_648, "output_bytes": 33_554_432, "output_dtype": "int64",
          "method": "VmHWM"}
    assert cpu_memory.fmt_cell(ok) == "50.3 MB (1.50×)"
    assert cpu_memory.fmt_cell(dict(ok, method="ru_maxrss")) == "50.3 MB* (1.50×)"
    assert cpu_memory.fmt_cell({"error": "not importable: cc3d"}) == "not measured"
    rows = [{"case": "blobs 256^3", "ndim": 3, "conn": 3, "input_bytes": 16_777_216,
             "tools": {"meshccl serial": ok, "cc3d": {"error": "x"}}}]
    md = cpu_memory.table(rows, ["meshccl serial", "cc3d"])
    lines = md.splitlines()
    assert lines[0] == "| case | conn | input | meshccl serial | cc3d |"
    assert lines[2] == "| blobs 256³ | full | 16.8 MB | 50.3 MB (1.50×) | not measured |"
    assert "meshccl serial int64" in md


def test_measure_plot_of_stored_rows(tmp_path):
    """measure_bench's plot: one point per case and tool that has a time,
    tools without one (None) left out, and --replot from measure.json."""
    import json

    import measure_bench

    rows = [{"case": "a", "cells": 100, "labels": 0, "label ms": 1.0, "statistics ms": 2.0,
             "with intensity ms": 3.0, "cuCIM ms": None, "cupyx sum_labels ms": 5.0,
             "cc3d ms": None},
            {"case": "b", "cells": 400, "labels": 30, "label ms": 1.5, "statistics ms": 2.5,
             "with intensity ms": None, "cuCIM ms": 9.0, "cupyx sum_labels ms": None,
             "cc3d ms": None}]
    (tmp_path / "measure.json").write_text(json.dumps(
        {"machine": {"gpu": "test", "date": "today"}, "rows": rows}))
    assert measure_bench.main(["--replot", str(tmp_path)]) == 0
    png = (tmp_path / "measure.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000


def test_graph_bench_sizes_times_scipy_and_the_cpu_in_turn(tmp_path):
    """graph_bench.py --families ... --cpu --sizes: every family at every
    size, both connections timed against SciPy, labels checked, the table
    and json written."""
    import json

    import graph_bench

    assert graph_bench.main(["--families", "cycle,small_sccs", "--cpu", "--sizes", "10,300",
                             "--size-seconds", "0", "--reps", "2", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "sizes.json").read_text())
    assert data["sizes"] == [10, 300]
    assert [r["family"] for r in data["rows"]] == ["cycle", "cycle", "small_sccs", "small_sccs"]
    for r in data["rows"]:
        assert r["ok"] == {"weak cpu": True, "strong cpu": True}
        assert r["calls"] == {"weak": 2, "strong": 2}
        assert all(t["scipy"] > 0 and t["cpu"] > 0 for t in r["us"].values())
    assert "| one cycle through all + chords | 10 |" in (tmp_path / "sizes.md").read_text()


def test_graph_bench_families_runs_every_family_with_labels_checked(tmp_path):
    """graph_bench.py --families all --cpu: every family of
    meshccl.graph_families, weak and strong, labels checked against SciPy;
    NetworkX's partition checked too where networkx imports (at the
    requested size: a generous limit); table, json and plot written."""
    import json

    import graph_bench

    from meshccl.graph_families import FAMILIES

    assert graph_bench.main(["--families", "all", "--cpu", "--edges", "3000", "--reps", "1",
                             "--networkx-limit", "60", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "families.json").read_text())
    assert [(r["family"], r["connection"]) for r in data["rows"]] == [
        (f, c) for f in FAMILIES for c in ("weak", "strong")]
    try:
        import networkx  # noqa: F401
        has_nx = True
    except ImportError:
        has_nx = False
    assert ("networkx" in data["columns"]) == has_nx
    for r in data["rows"]:
        assert r["ok"]["cpu"] is True and r["ms"]["scipy"] > 0 and r["ms"]["cpu"] > 0
        assert 0 < r["largest"] <= r["n"] and 0 < r["components"] <= r["n"]
        if has_nx:
            assert r["ok"]["networkx"] is True
            assert r["networkx"]["m"] == r["m"] and r["networkx"]["ms"] > 0
    assert (tmp_path / "families.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_graph_bench_families_networkx_stops_below_its_limit(tmp_path):
    """With a NetworkX limit nothing fits, NetworkX runs only at its first
    size (1000 edges, below --edges) and is still checked; the time budget
    leaves every family after the first out."""
    import json

    import graph_bench

    pytest.importorskip("networkx")
    assert graph_bench.main(["--families", "cycle,chain,small_sccs", "--cpu", "--edges", "20000",
                             "--reps", "1", "--networkx-limit", "1e-9", "--time-budget", "1e-9",
                             "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "families.json").read_text())
    assert [r["family"] for r in data["rows"]] == ["cycle", "cycle"]
    assert data["skipped"] == ["chain", "small_sccs"]
    for r in data["rows"]:
        x = r["networkx"]
        assert r["ok"]["networkx"] is True and 900 <= x["m"] <= 1100 < r["m"]
        assert x["next_s"] > 1e-9 and x["scipy_ms"] > 0


def test_graph_bench_scipy_limit_shrinks_a_family():
    """_scipy_fit: a family whose SciPy estimate passes the limit runs at
    fewer edges (one significant digit), with a note; no limit keeps it."""
    import graph_bench

    from meshccl.graph_families import FAMILIES

    m, note = graph_bench._scipy_fit(FAMILIES["chain_shuffled"], 200_000, 1e-7)
    assert 1 <= m < 200_000 and m == graph_bench._round_down(m) and note
    assert graph_bench._scipy_fit(FAMILIES["chain_shuffled"], 200_000, 0) == (200_000, None)
    assert graph_bench._scipy_fit(FAMILIES["chain"], 200_000, 1e6) == (200_000, None)
    assert [graph_bench._round_down(x) for x in (1, 9, 12, 999, 3456)] == [1, 9, 10, 900, 3000]


def test_graph_bench_families_refuses_bad_limits(capsys):
    import graph_bench

    assert graph_bench.main(["--families", "cycle", "--cpu", "--networkx-limit", "-1"]) == 2
    assert "--networkx-limit" in capsys.readouterr().err


def test_dask_bench_step_seconds_names_every_meshccl_task():
    """Every task that meshccl.dask.label writes falls in one of the steps the
    benchmark's table reports (a renamed task would land in 'other')."""
    da = pytest.importorskip("dask.array")
    import dask_bench
    from dask.diagnostics import Profiler

    import meshccl.dask as mdask

    x = (np.random.default_rng(0).random((12, 10)) < 0.5).astype(np.uint8)
    image = da.from_array(x, chunks=(5, 4)).persist(scheduler="sync")
    for numbering in ("raster", "sequential"):
        lab, n = mdask.label(image, return_num=True, numbering=numbering)
        with Profiler() as prof:
            import dask

            dask.compute(lab, n, scheduler="threads")
        steps = {dask_bench._step_of(r.key) for r in prof.results
                 if str(r.key[0] if isinstance(r.key, tuple) else r.key).startswith("meshccl-")
                 and "finalize" not in str(r.key)}
        assert steps == {step for step, _ in dask_bench.STEPS}, numbering
        seconds = dask_bench.step_seconds(lab, n)
        assert all(seconds[step] > 0 for step, _ in dask_bench.STEPS)


def test_dask_bench_check_partition_against_a_pairwise_check():
    """The blockwise check of two labellings against the definition (every
    pair of cells together in one iff together in the other, background in
    the same cells), on random relabellings, merges and splits, some across
    the blocks."""
    da = pytest.importorskip("dask.array")
    import dask_bench

    rng = np.random.default_rng(7)
    for _ in range(60):
        a = rng.integers(0, 5, (4, 6))
        perm = np.concatenate([[0], rng.permutation(np.arange(1, 40))])
        b = perm[a]
        if rng.random() < 0.5:  # a merge, a split or a moved background cell
            b[rng.integers(0, 4), rng.integers(0, 6)] = rng.integers(0, 45)
        want = (np.array_equal(a == 0, b == 0)
                and np.array_equal(a.ravel()[:, None] == a.ravel()[None, :],
                                   b.ravel()[:, None] == b.ravel()[None, :]))
        n_a, n_b = (len(np.unique(v[v > 0])) for v in (a, b))
        got = dask_bench.check_partition(da.from_array(b, chunks=(2, 3)), n_b,
                                         da.from_array(a, chunks=(2, 3)), n_a, None)
        assert got == want


def test_dask_bench_check_labels_against_block_hashes():
    """Labels equal to the reference pass the blockwise hash check; one
    changed cell, another N or another chunking of the hashes fails it."""
    da = pytest.importorskip("dask.array")
    import dask_bench

    want = np.random.default_rng(3).integers(0, 9, (6, 7, 5))
    chunks = da.core.normalize_chunks(3, want.shape)
    hashes = dask_bench.block_hashes(want, chunks)
    lab = da.from_array(want.astype(np.int32), chunks=3)
    assert dask_bench.check_labels(lab, 4, hashes, 4, None)
    assert not dask_bench.check_labels(lab, 5, hashes, 4, None)
    bad = want.copy()
    bad[5, 6, 4] += 1
    assert not dask_bench.check_labels(da.from_array(bad, chunks=3), 4, hashes, 4, None)
    assert not dask_bench.check_labels(da.from_array(want, chunks=2), 4, hashes, 4, None)


def test_dask_bench_input_array_reads_its_blocks(tmp_path):
    """The benchmark's input: blocks read from the .npy file by the tasks,
    equal to the array, the graph small whatever the array's size."""
    da = pytest.importorskip("dask.array")
    import pickle

    import dask_bench

    x = np.random.default_rng(2).integers(0, 2, (40, 30, 20)).astype(np.uint8)
    path = str(tmp_path / "x.npy")
    image = dask_bench.input_array(x, 16, path)
    assert image.chunks == da.core.normalize_chunks(16, x.shape)
    assert np.array_equal(image.compute(scheduler="threads"), x)
    assert len(pickle.dumps(dict(image.__dask_graph__()))) < x.nbytes / 4


def test_dask_bench_main_writes_each_row_before_dask_image(tmp_path, monkeypatch):
    """A small run on the threaded scheduler: each row has dask-image's
    time, its phases and N of meshccl.label; the input is cached and read
    back by a second run; a run cut while dask-image runs has already
    written meshccl.dask's row."""
    pytest.importorskip("dask_image")
    import json

    import dask_bench

    import meshccl

    argv = ["--side", "24", "--chunks", "12", "--patterns", "blobs", "--connectivity", "1,3",
            "--schedulers", "threads", "--repeat", "1", "--no-scipy", "--peer-limit", "60",
            "--cache", str(tmp_path / "cache"), "--out", str(tmp_path / "a")]
    dask_bench.main(argv)
    rows = json.loads((tmp_path / "a" / "dask_bench.json").read_text())["rows"]
    x = dask_bench.make_case("blobs", 24)
    assert np.array_equal(np.load(tmp_path / "cache" / "blobs-24-seed0.npy"), x)
    for r, conn in zip(rows, (1, 3)):
        assert r["N"] == meshccl.label(x, connectivity=conn, return_num=True)[1]
        assert r["dask_image_s"] > 0 and "dask_image_pending" not in r
        assert {"check raster", "check sequential", "make input"} <= set(r["phases_s"])

    def cut(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(dask_bench, "peer_limited", cut)
    with pytest.raises(KeyboardInterrupt):
        dask_bench.main(argv[:-1] + [str(tmp_path / "b")])
    (row,) = json.loads((tmp_path / "b" / "dask_bench.json").read_text())["rows"]
    assert row["dask_image_pending"] and row["N"] == rows[0]["N"] and row["meshccl_dask_s"] > 0


def _slow_block(b):
    import time

    time.sleep(1.0)
    return b


def test_dask_bench_peer_limited_times_or_stops():
    """dask_bench's time limit per peer on the threaded scheduler: a graph
    built and computed within the limit gives its seconds (its labels
    checked), one whose computation or whose construction passes it gives
    None and its process is stopped; labels that split a component stop
    the run."""
    import time

    da = pytest.importorskip("dask.array")
    import dask_bench

    want = np.zeros((8, 8, 8), np.int64)
    want[:3] = 1
    want[5:, 2:] = 2
    ref = da.from_array(want, chunks=4)
    lab = da.from_array(np.where(want == 1, 7, want), chunks=4)
    n = 2
    seconds = dask_bench.peer_limited(lambda: (lab, n), None, 60, ref, 2)
    assert 0 <= seconds < 60
    slow = lab.map_blocks(_slow_block, dtype=lab.dtype)
    assert dask_bench.peer_limited(lambda: (slow, n), None, 0.2, ref, 2) is None

    def slow_build():
        time.sleep(30)
        return lab, n

    t = time.perf_counter()
    assert dask_bench.peer_limited(slow_build, None, 0.2, ref, 2) is None
    assert time.perf_counter() - t < 20
    split = da.from_array(np.where(np.arange(8)[:, None, None] < 1, 3, want), chunks=4)
    with pytest.raises(SystemExit):
        dask_bench.peer_limited(lambda: (split, 3), None, 60, ref, 2)


def test_dask_multi_gpu_null_graph_keeps_the_shape():
    """The no-op graph of dask_multi_gpu.py: one task per task of the label
    graph, each waiting for the same dependencies under new keys; it runs."""
    da = pytest.importorskip("dask.array")
    import dask
    import dask.core
    import dask_multi_gpu

    import meshccl.dask as mdask

    x = da.from_array((np.random.default_rng(1).random((12, 10)) < 0.5).astype(np.uint8),
                      chunks=(5, 4))
    lab, n = mdask.label(x, return_num=True)
    dsk = dict(dask.base.collections_to_expr([lab, n]).__dask_graph__())
    null, keys = dask_multi_gpu.null_graph([lab, n])
    assert len(null) == len(dsk)
    for key in dsk:
        deps = {dask_multi_gpu._null_key(d) for d in dask.core.get_dependencies(dsk, key)}
        assert set(dask.core.get_dependencies(null, dask_multi_gpu._null_key(key))) == deps
    got = dask.get(null, keys)
    assert len(got) == lab.npartitions + 1
