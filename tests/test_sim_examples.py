"""The simulation examples and benchmarks/sim_bench.py run, at tiny sizes, on the CPU;
the benchmark's NumPy/SciPy Swendsen-Wang agrees with meshccl's clusters and physics."""

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import meshccl
from meshccl.sim import Ising, exact

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def _load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}",
                                                  ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _has_png(path):
    """The PNG exists, or matplotlib is missing (then the example skips it)."""
    if importlib.util.find_spec("matplotlib") is None:
        return True
    return path.stat().st_size > 5_000


def test_quench_example(tmp_path, capsys):
    _load("sim_quench").main(["--size", "32", "--steps", "256", "--out", str(tmp_path)])
    md = (tmp_path / "quench.md").read_text()
    rows = [line for line in md.splitlines() if line.startswith("| 1") or line.startswith("| 2")]
    assert [r.split("|")[1].strip() for r in rows] == ["128", "256"]
    assert all(int(r.split("|")[3]) > 0 for r in rows)      # A domains
    assert _has_png(tmp_path / "quench.png")
    assert "A domains" in capsys.readouterr().out


def test_kawasaki_example(tmp_path):
    _load("sim_kawasaki").main(["--size", "8", "--steps", "6", "--every", "1", "--runs", "2",
                                "--temperatures", "2,6", "--fractions", "0.2,0.4",
                                "--out", str(tmp_path)])
    md = (tmp_path / "kawasaki.md").read_text()
    rows = [line for line in md.splitlines() if line.startswith("| 0.")]
    assert len(rows) == 2
    for row in rows:
        for cell in row.split("|")[2:-1]:
            assert 0 < float(cell.split("±")[0]) <= 1
    assert _has_png(tmp_path / "kawasaki.png")


def test_physics_example(tmp_path):
    _load("sim_physics").main(["--size", "8", "--steps", "64", "--out", str(tmp_path)])
    md = (tmp_path / "sim_physics.md").read_text()
    assert md.count("sweeps (") == 4 and md.count("tau_int |m|") == 2
    assert _has_png(tmp_path / "autocorrelation.png")


def test_hawick_spiral_example(tmp_path):
    _load("hawick_experiments").main(["spiral", "--sizes", "32", "--cap", "2",
                                      "--backend", "cpu", "--out", str(tmp_path)])
    md = (tmp_path / "hawick_spiral.md").read_text()
    assert "unionfind (CPU)" in md and "D (CPU)" in md
    assert _has_png(tmp_path / "hawick_spiral.png")


def test_sim_bench_quick_cpu(tmp_path):
    import sim_bench
    assert sim_bench.main(["--out", str(tmp_path), "--quick", "--no-gpu", "--cpu-size", "32",
                           "--cpu-steps", "2"]) == 0
    res = json.loads((tmp_path / "sim_bench.json").read_text())
    assert res["reference_check"]["same_partition"]
    cpu = res["cpu"]
    assert cpu["shape"] == [32, 32] and cpu["cores"] == 1
    assert cpu["meshccl_flips_per_ns"] > 0 and cpu["reference_flips_per_ns"] > 0
    assert "swendsen_wang" not in res                       # no GPU sections without a GPU
    md = (tmp_path / "sim_bench.md").read_text()
    assert "Swendsen-Wang on the CPU" in md and "same partition" in md
    assert _has_png(tmp_path / "sim_bench.png")


@pytest.mark.parametrize("shape", [(24, 40), (6, 8, 10), (2, 6)])
def test_reference_clusters_are_meshccl_labels(shape):
    """The benchmark's SciPy cluster identification = meshccl.label(periodic, bonds)."""
    import sim_bench
    rng = np.random.default_rng(5)
    spins = np.where(rng.random(shape) < 0.5, 1, -1).astype(np.int8)
    bonds = sim_bench.reference_bonds(spins, 0.6, rng)
    count, ref = sim_bench.reference_clusters(spins, bonds)
    ours, n = meshccl.label(spins, connectivity=1, periodic=True, bonds=bonds, return_num=True)
    assert n == count and sim_bench.same_partition(ours, ref)
    assert not sim_bench.same_partition(ours, np.zeros_like(ref)) or count == 1


def test_reference_sw_reproduces_onsager():
    """The reference Swendsen-Wang samples the Ising model: <|m|> at T = 2 on a
    16^2 torus near Onsager's 0.9113 (the SW test's finite-size bias < 0.002;
    400 sweeps: standard error about 0.006, the band is 5 of them)."""
    import sim_bench
    rng = np.random.default_rng(11)
    p = -np.expm1(-2.0 / 2.0)
    spins = np.ones((16, 16), dtype=np.int8)
    ms = []
    for i in range(500):
        spins = sim_bench.reference_sw_step(spins, p, rng)
        if i >= 100:
            ms.append(abs(spins.mean()))
    assert abs(np.mean(ms) - exact.spontaneous_magnetisation(2.0)) < 0.03
    # and meshccl's own SW step on one configuration: the reference labels its bonds alike
    sim = Ising((16, 16), temperature=2.0, algorithm="swendsen-wang", seed=2)
    sim.run(3, progress=False)
    bonds = sim._sw_bonds()
    count, ref = sim_bench.reference_clusters(sim.state, bonds)
    assert sim_bench.same_partition(sim._sw_labels(bonds), ref)


def test_sim_bench_gpu_sections_with_a_stand_in_device(tmp_path, monkeypatch):
    """The GPU sections' code (timing loops, tables, plot) run end to end on a
    stand-in 'cupy' that is NumPy with wall-clock events: no numbers checked,
    only that every section is filled and written."""
    import time
    from types import SimpleNamespace

    import bench
    import sim_bench

    class Event:
        def record(self):
            self.t = time.perf_counter()

        def synchronize(self):
            pass

    # NumPy itself, with CuPy's event and pool calls added for the test, so
    # that every `xp is np` test in meshccl.sim takes the NumPy paths
    # (the fused CuPy kernels need a real GPU)
    fake = np
    monkeypatch.setattr(np, "cuda", SimpleNamespace(
        Event=Event, get_elapsed_time=lambda a, b: (b.t - a.t) * 1e3,
        Device=lambda: SimpleNamespace(synchronize=lambda: None)), raising=False)
    monkeypatch.setattr(np, "get_default_memory_pool",
                        lambda: SimpleNamespace(free_all_blocks=lambda: None), raising=False)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(sim_bench.meshccl, "gpu_available", lambda: True)
    monkeypatch.setattr(sim_bench, "copy_floor", lambda nbytes, repeat: 1e-6)
    monkeypatch.setattr(sim_bench, "gpu_busy", lambda seconds: None)
    info = bench.machine_info(False, "stand-in")
    info["gpu"] = {"name": "stand-in", "cupy": "0", "runtime_version": "0"}
    monkeypatch.setattr(bench, "machine_info", lambda use_gpu, reason: info)
    assert sim_bench.main(["--out", str(tmp_path), "--sides", "16,32", "--side3", "8",
                           "--sw-sides3", "8,6", "--metropolis-sides", "16,32",
                           "--ch-sides", "16,8", "--ch-steps", "256", "--repeat", "2",
                           "--cpu-size", "16", "--cpu-steps", "1"]) == 0
    res = json.loads((tmp_path / "sim_bench.json").read_text())
    assert [r["shape"] for r in res["swendsen_wang"]] == [[16, 16], [32, 32], [8, 8, 8],
                                                          [6, 6, 6]]
    assert all(r["parts_s"]["bonds"] > 0 and r["label_only_s"] > 0 and r["step_s"] > 0
               for r in res["swendsen_wang"])
    assert [r["shape"] for r in res["metropolis"]] == [[16, 16], [32, 32], [8, 8, 8]]
    assert [r["calls"] for r in res["cahn_hilliard"]] == [2, 2]
    md = (tmp_path / "sim_bench.md").read_text()
    for title in ("Swendsen-Wang, Ising at T_c", "Metropolis, checkerboard, multi-spin",
                  "Cahn-Hilliard labelled every 128", "Swendsen-Wang on the CPU"):
        assert title in md
    assert _has_png(tmp_path / "sim_bench.png")


def test_label_volume_example(capsys):
    example = _load("label_volume")
    with pytest.raises(SystemExit) as done:
        example.main(["--help"])
    assert done.value.code == 0
    assert "--backend {auto,cpu,gpu}" in capsys.readouterr().out
    assert example.main(["24", "--backend", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "24^3 volume of blobs" in out and "on the CPU" in out
    assert "connectivity 1:" in out and "connectivity 3:" in out
    with pytest.raises(SystemExit) as done:
        example.main(["many"])
    assert done.value.code == 2
    assert "expected a positive integer, got 'many'" in capsys.readouterr().err


def test_hawick_defaults_are_the_quick_run(monkeypatch):
    """Without options the example runs the small sizes (about a minute on
    a laptop CPU); --paper-sizes the paper's, each still overridable."""
    example = _load("hawick_experiments")
    calls = []
    monkeypatch.setattr(example, "run", lambda *args: calls.append(args))
    example.main(["spiral"])
    example.main(["cahn-hilliard", "--paper-sizes"])
    example.main(["spiral", "--paper-sizes", "--cap", "5", "--sizes", "64"])
    (_, quick, cap, out, frames, _), (_, paper, pcap, _, pframes, _), (_, mine, mcap, _, _, _) = calls
    assert (quick, cap, frames, out) == ([256, 512], 2.0, 2, "hawick-out")
    assert (paper, pcap, pframes) == ([256, 512, 1024, 2048, 4096], 60.0, 4)
    assert (mine, mcap) == ([64], 5.0)
