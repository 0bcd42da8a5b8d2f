"""Hawick et al.'s iterative methods give exactly the default method's labels."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import meshccl
from meshccl import patterns
from conftest import HAVE_GPU, examples, run_label, to_backend, to_host
from test_lattice import lattices


@pytest.fixture(autouse=True, scope="module")
def _slabs_at_any_size():
    """The parallel tests here use small images: let them take slabs and
    chunks of any size (by default, arrays under 2 * CPU_SLAB_MIN_CELLS or
    2 * CPU_CHUNK_MIN_CELLS cells run serially).  The tests of that default set it
    back."""
    from meshccl import _tuning

    with _tuning.override(CPU_SLAB_MIN_CELLS=1, CPU_CHUNK_MIN_CELLS=1):
        yield

ITERATIVE = ["A", "B", "C", "D", "cpu1", "cpu2"]


@settings(max_examples=examples(60))
@given(case=lattices(), method=st.sampled_from(ITERATIVE))
def test_methods_match_default(backend, case, method):
    a, kw = case
    np.testing.assert_array_equal(run_label(a, backend, method=method, **kw), meshccl.label(a, **kw))


PATTERN_CASES = [(patterns.spiral(48), 1), (patterns.spiral(48), 2),
                 (patterns.blobs((40, 50), seed=1), 2), (patterns.potts((12, 13, 14), seed=2), 1),
                 (patterns.percolation((30, 30), 0.59, seed=3), 1),
                 (patterns.percolation((70, 33), 0.59, seed=4), 2)]


@pytest.mark.parametrize("method", ITERATIVE)
def test_methods_on_patterns(backend, method):
    for a, c in PATTERN_CASES:
        for periodic in (False, True):
            want = meshccl.label(a, connectivity=c, periodic=periodic)
            got, info = run_label(a, backend, connectivity=c, periodic=periodic, method=method,
                                  return_info=True)
            np.testing.assert_array_equal(got, want)
            assert info["method"] == method and info["iterations"] >= 1


@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.gpu
@pytest.mark.parametrize("method", ["A", "B", "D"])
def test_gpu_passes_equal_cpu_passes(method):
    """A (Jacobi), B (tile fixed points) and D take exactly the CPU twin's passes."""
    for a, c in PATTERN_CASES + [(patterns.spiral(100), 1)]:
        for kw in ({}, {"periodic": True}, {"mask": np.arange(a.size).reshape(a.shape) % 7 != 0}):
            _, cpu = meshccl.label(a, connectivity=c, method=method, return_info=True, **kw)
            _, gpu = run_label(a, "gpu", connectivity=c, method=method, return_info=True, **kw)
            assert gpu["iterations"] == cpu["iterations"], (a.shape, c, kw)


@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.gpu
@pytest.mark.parametrize("method, phases", [
    # 2-D: the plain chain (runs2d.cu; 64 is a multiple of 32, so no "clear")
    ("auto", {"tile", "border", "roots", "cells", "pieces"}),
    ("A", {"init", "pass", "flatten", "scan", "relabel"}),
    ("B", {"init", "pass", "flatten", "scan", "relabel"}),
    ("C", {"init", "sweep 0+", "sweep 0-", "sweep 1+", "sweep 1-", "flatten", "scan", "relabel"}),
    ("D", {"init", "scanning", "analysis", "labelling", "flatten", "scan", "relabel"})])
def test_gpu_return_info(method, phases):
    import cupy
    a = cupy.asarray(patterns.spiral(64))
    labels, num, info = meshccl.label(a, connectivity=1, method=method, return_num=True,
                                      return_info=True)
    assert isinstance(labels, cupy.ndarray) and num == meshccl.label(a.get(), return_num=True)[1]
    assert info["backend"] == "gpu" and info["method"] == ("unionfind" if method == "auto" else method)
    assert set(info["seconds"]) == phases | {"prepare", "label"}
    assert all(t >= 0 for t in info["seconds"].values())
    mem = info["gpu_memory"]
    assert mem["labels_bytes"] == 64 * 64 * 4 and mem["peak_bytes"] >= mem["labels_bytes"]
    # scratch: root masks and counts (n / 4 bytes) and the scan; A, B, D: one more index array;
    # 'auto' on a plain 2-D image also its tiles' slots (_tuning.RUNS_2D_SLOTS words a tile)
    # and their row offsets (2 bytes a tile row)
    from meshccl import _tuning
    limit = 64 * 64 * 4 if method in ("A", "B", "D") else 4 * _tuning.RUNS_2D_SLOTS * 4 + 2 * 64 * 2
    assert 0 < mem["extra_bytes"] <= limit + 64 * 64 // 4 + 65536  # (+ scan temp, 512 B rounding)
    assert info["iterations"] == 1 if method == "auto" else info["iterations"] > 1


@pytest.mark.parametrize("method", ITERATIVE)
def test_cpu_phase_times(method):
    _, info = meshccl.label(patterns.spiral(40), connectivity=1, method=method, return_info=True)
    phases = ({"scanning", "analysis", "labelling"} if method in ("D", "cpu2") else {"pass"})
    assert set(info["seconds"]) == {"prepare", "label", "init", "relabel"} | phases
    assert sum(info["seconds"][k] for k in phases) <= info["seconds"]["label"]


@pytest.mark.parametrize("method", ["A", "B", "C", "D", "cpu1", "cpu2"])
def test_max_iterations(backend, method):
    s = patterns.spiral(64)
    with pytest.raises(meshccl.NotConverged, match=f"method='{method}' did not converge within "
                                                   "max_iterations=2 passes"):
        meshccl.label(to_backend(s, backend), connectivity=1, method=method, max_iterations=2)
    _, info = run_label(s, backend, connectivity=1, method=method, return_info=True)
    enough = info["iterations"]
    got = run_label(s, backend, connectivity=1, method=method, max_iterations=enough)
    np.testing.assert_array_equal(got, meshccl.label(s, connectivity=1))
    if enough > 1 and method != "C":  # C's GPU pass count may vary by one
        with pytest.raises(meshccl.NotConverged):
            meshccl.label(to_backend(s, backend), connectivity=1, method=method,
                          max_iterations=enough - 1)
    # the one-pass method ignores the limit
    np.testing.assert_array_equal(run_label(s, backend, connectivity=1, max_iterations=1),
                                  meshccl.label(s, connectivity=1))


@pytest.mark.parametrize("bad", [0, -3, 1.5, True, "4"])
def test_max_iterations_validation(bad):
    with pytest.raises(ValueError, match="max_iterations must be None or an int >= 1"):
        meshccl.label(np.ones((3, 3), np.uint8), method="A", max_iterations=bad)


def test_iteration_counts_follow_the_paper():
    """On the spiral, A moves labels one cell per iteration (about the length
    of the spiral), C a line per sweep, D needs a handful (Hawick et al. 6.3.2)."""
    s = patterns.spiral(64)
    its = {m: meshccl.label(s, connectivity=1, method=m, return_info=True)[1]["iterations"]
           for m in ITERATIVE}
    assert its["A"] > 1000 > its["B"] > its["C"]
    assert its["D"] == its["cpu2"] <= 5
    assert its["cpu1"] < its["A"]


def test_return_info_shapes():
    a = np.array([[1, 0, 1]])
    labels, info = meshccl.label(a, return_info=True)
    assert set(info) == {"method", "backend", "iterations", "seconds"}
    assert info["method"] == "unionfind" and info["iterations"] == 1 and info["backend"] == "cpu"
    labels, num, info = meshccl.label(a, return_num=True, return_info=True, method="D")
    assert num == 2 and info["method"] == "D"
    assert set(info["seconds"]) == {"prepare", "label", "init", "scanning", "analysis",
                                    "labelling", "relabel"}
    empty, info = meshccl.label(np.zeros((0, 3), np.uint8), return_info=True)
    assert empty.shape == (0, 3) and set(info["seconds"]) == {"prepare", "label"}


@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.gpu
def test_gpu_input_with_cpu_methods():
    """CPU I / II run on the CPU for CuPy input and hand back CuPy arrays."""
    import cupy
    a = cupy.asarray(patterns.blobs((30, 40), seed=5))
    for method in ("cpu1", "cpu2"):
        got, info = meshccl.label(a, method=method, return_info=True)
        assert isinstance(got, cupy.ndarray) and info["backend"] == "cpu-from-gpu"
        np.testing.assert_array_equal(to_host(got), meshccl.label(a.get()))
        with pytest.raises(ValueError, match="cannot run with device='gpu'"):
            meshccl.label(a, method=method, device="gpu")
    np.testing.assert_array_equal(meshccl.label(a, method="D", device="cpu").get(),
                                  meshccl.label(a.get()))


def test_cpu_methods_refuse_device_gpu():
    with pytest.raises(ValueError, match="method='cpu1' is a CPU method"):
        meshccl.label(np.ones((3, 3), np.uint8), method="cpu1", device="gpu")


@settings(max_examples=examples(80))
@given(case=lattices(), threads=st.sampled_from([0, 2, 3, 7]))
def test_parallel_cpu_matches_serial(case, threads):
    a, kw = case
    np.testing.assert_array_equal(meshccl.label(a, cpu_threads=threads, **kw), meshccl.label(a, **kw))


@pytest.mark.parametrize("shape, conn", [((301, 257), 1), ((301, 257), 2), ((37, 41, 43), 1),
                                         ((37, 41, 43), 3), ((100000,), 1), ((9, 8, 7, 6), 4)])
def test_parallel_cpu_large(shape, conn):
    rng = np.random.default_rng(sum(shape))
    for a in [(rng.random(shape) < 0.55).astype(np.uint8),
              patterns.potts(shape, seed=1) if len(shape) > 1 else rng.integers(0, 3, shape)]:
        want = meshccl.label(a, connectivity=conn)
        for threads in (0, 2, 5):
            np.testing.assert_array_equal(meshccl.label(a, connectivity=conn, cpu_threads=threads), want)
    spiral = patterns.spiral(257)
    np.testing.assert_array_equal(meshccl.label(spiral, connectivity=1, cpu_threads=4),
                                  meshccl.label(spiral, connectivity=1))


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_cpu_threads_validation(bad):
    with pytest.raises(ValueError, match="cpu_threads must be an int >= 0"):
        meshccl.label(np.ones((3, 3), np.uint8), cpu_threads=bad)


def _skimage_reference(a, conn, background):
    from skimage.measure import label as sk_label

    return sk_label(a, connectivity=conn, background=background)


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("shape", [(1, 9), (2, 7), (3, 5), (3, 4, 5), (5, 9), (17, 13), (64, 70),
                                   (200, 151), (1, 4, 5), (2, 3, 4), (7, 9, 11), (20, 21, 22),
                                   (5, 1, 7), (1,), (2,), (31,)])
def test_parallel_slabs_match_skimage(shape, threads):
    """The plain case runs the serial labellers on slabs along axis 0 and
    unites the seams: the same labels and numbering as skimage, whatever
    the slab count (fewer rows than threads, as many, odd sizes, 1-D)."""
    rng = np.random.default_rng(sum(shape) * threads)
    images = [rng.integers(0, nv, shape) for nv in (2, 3, 7)]
    images.append(rng.random(shape) < 0.6)
    images.append((rng.random(shape) * 3).astype(np.float32))
    if len(shape) > 1 and min(shape) > 2:
        images.append(patterns.potts(shape, seed=2))
    for a in images:
        for conn in range(1, a.ndim + 1):
            for background in (0, 1, -1):
                want = _skimage_reference(a, conn, background)
                got, num = meshccl.label(a, background=background, connectivity=conn,
                                         cpu_threads=threads, return_num=True)
                np.testing.assert_array_equal(got, want)
                assert num == want.max()


def _count_slabs(monkeypatch):
    """Record the slab count of every call that runs in slabs (two or more)."""
    from meshccl._cpu import image

    counts = []
    real = image.plan_slabs

    def plan(shape, threads):
        slabs = real(shape, threads)
        if slabs >= 2:
            counts.append(slabs)
        return slabs

    monkeypatch.setattr(image, "plan_slabs", plan)
    return counts


def test_parallel_slabs_used_for_plain_case(monkeypatch):
    """cpu_threads > 1 sends the plain case through the slabs (and not a
    1-D array, nor axis 0 of length 1)."""
    calls = _count_slabs(monkeypatch)
    spiral = patterns.spiral(129)
    for threads in (0, 2, 3):
        np.testing.assert_array_equal(meshccl.label(spiral, connectivity=1, cpu_threads=threads),
                                      _skimage_reference(spiral, 1, 0))
    from meshccl._cpu.image import cpu_count

    assert len(calls) == 2 + (cpu_count() >= 2)
    n = len(calls)
    meshccl.label(np.arange(10) % 3, cpu_threads=2)
    meshccl.label(spiral[:1], cpu_threads=2)
    assert len(calls) == n


def test_parallel_slabs_by_size(monkeypatch):
    """An array takes at most cells // CPU_SLAB_MIN_CELLS slabs (here 2^16):
    serially under twice that many cells, whatever cpu_threads asks, and
    fewer slabs than threads in between."""
    from meshccl import _tuning

    slabs = _count_slabs(monkeypatch)
    with _tuning.override(CPU_SLAB_MIN_CELLS=1 << 16):
        for shape, threads, want_slabs in [((200, 200), 8, None), ((362, 362), 8, None),
                                           ((363, 363), 8, 2), ((600, 600), 8, 5),
                                           ((600, 600), 3, 3), ((1200, 1200), 0, None)]:
            a = patterns.blobs(shape, seed=3)
            slabs.clear()
            np.testing.assert_array_equal(meshccl.label(a, cpu_threads=threads),
                                          _skimage_reference(a, 2, 0))
            if threads == 0:  # every core: as many slabs as fit
                from meshccl._cpu.image import cpu_count

                want_slabs = min(cpu_count(), a.size >> 16)
                want_slabs = want_slabs if want_slabs >= 2 else None
            assert slabs == ([] if want_slabs is None else [want_slabs]), (shape, threads)


def test_parallel_slabs_start_no_python_threads():
    """The slabs run on the compiled core's own threads: repeated calls
    leave no Python threads behind."""
    import threading

    a = patterns.blobs((300, 300), seed=4)
    want = _skimage_reference(a, 2, 0)
    np.testing.assert_array_equal(meshccl.label(a, cpu_threads=3), want)
    before = threading.active_count()
    for _ in range(3):
        np.testing.assert_array_equal(meshccl.label(a, cpu_threads=3), want)
    assert threading.active_count() == before


def _graph_case():
    """A random graph past the graph path's serial shortcut, with scipy's
    labels."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components as scipy_cc

    rng = np.random.default_rng(7)
    n, m = 40_000, 60_000
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    g = sp.csr_matrix((np.ones(m), (src, dst)), shape=(n, n))
    return g, scipy_cc(g, directed=False)


def _same_graph_labels(got, want):
    return got[0] == want[0] and np.array_equal(got[1], want[1])


def test_parallel_labelling_in_a_forked_child():
    """A child forked after the parent ran threaded labelling labels with
    threads again, with the same labels: images and graphs run on the
    compiled core's threads, started for each call."""
    import multiprocessing

    from meshccl.graph import connected_components

    a = patterns.blobs((300, 300), seed=4)
    want = _skimage_reference(a, 2, 0)
    g, gwant = _graph_case()
    np.testing.assert_array_equal(meshccl.label(a, cpu_threads=3), want)
    np.testing.assert_array_equal(meshccl.label(a, cpu_threads=3, mask=a > 0), want)
    assert _same_graph_labels(connected_components(g, directed=False, cpu_threads=3), gwant)
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=_label_in_child, args=(a, want, g, gwant))
    child.start()
    child.join(120)
    alive = child.is_alive()
    if alive:
        child.kill()
    assert not alive and child.exitcode == 0


def test_parallel_labelling_from_two_threads_at_once(monkeypatch):
    """Python threads may label at once, each with threads of its own:
    images (plain or with a mask) and graphs run on the compiled core's
    threads (the GIL released), with the serial labels."""
    import threading

    from meshccl._cpu import graph as cpu_graph
    from meshccl._cpu import lattice
    from meshccl._cpu.image import cpu_count

    a = patterns.blobs((300, 300), seed=5)
    want = _skimage_reference(a, 2, 0)
    g, gwant = _graph_case()
    slabs = _count_slabs(monkeypatch)
    regions = []  # (chunked lattice calls: compiled too, on their own threads)
    real = lattice.plan_chunks

    def plan(*args):
        chunks = real(*args)
        if chunks is not None:
            regions.append(1)
        return chunks

    monkeypatch.setattr(lattice, "plan_chunks", plan)
    results = []

    def work():
        stats = {}
        for _ in range(3):
            got = cpu_graph.components_parallel("csr", (g.indptr, g.indices), g.shape[0],
                                                np.int32, 3, stats)
            ok = _same_graph_labels(got, gwant)
            ok &= stats["scheme"] != "serial" or cpu_count() < 2
            ok &= np.array_equal(meshccl.label(a, cpu_threads=3), want)
            ok &= np.array_equal(meshccl.label(a, cpu_threads=3, mask=a > 0), want)
            results.append(bool(ok))

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 6
    assert slabs == [3] * 6 and regions == [1] * 6


def _label_in_child(a, want, g, gwant):
    from meshccl import _tuning
    from meshccl.graph import connected_components

    with _tuning.override(CPU_SLAB_MIN_CELLS=1, CPU_CHUNK_MIN_CELLS=1):
        ok = np.array_equal(meshccl.label(a, cpu_threads=3), want)
        ok &= np.array_equal(meshccl.label(a, cpu_threads=3, mask=a > 0), want)
        ok &= _same_graph_labels(connected_components(g, directed=False, cpu_threads=3),
                                 gwant)
    raise SystemExit(0 if ok else 1)


def test_iterative_methods_and_words_do_not_import_numba():
    """The iterative methods (every feature) and the simulators' Philox words
    on NumPy run on the compiled core: numba is not imported."""
    import pathlib
    import subprocess
    import sys

    code = ("import sys, numpy as np, meshccl\n"
            "from meshccl.sim import random as R\n"
            "a = np.arange(60).reshape(6, 10) % 3\n"
            "for m in ('A', 'B', 'C', 'D', 'cpu1', 'cpu2'):\n"
            "    meshccl.label(a, method=m, periodic=True, mask=a > 0, return_counts=True)\n"
            "    meshccl.label(a.astype(float), method=m, tolerance=1.0, bonds=np.ones((4, 6, 10), bool))\n"
            "R.words(1, 2, 3, np.arange(10))\n"
            "print('numba' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=pathlib.Path(__file__).resolve().parents[1],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False"]
