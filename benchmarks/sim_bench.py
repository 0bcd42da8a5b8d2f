"""Benchmark of meshccl.sim (issue 42, point 6): the simulators, side by side in one run.

What it measures
----------------
* **Swendsen-Wang, Ising at T_c** (2-D: T_c = 2.269185 J, L = 1024, 2048,
  4096, 8192, 16384; 3-D simple cubic: T_c = 4.5115 J, L = 256, 512), on
  the GPU.  **Spin flips per ns** = L^d spins offered an update per SW
  step / the median time of one step (each spin's cluster is redrawn once
  a step, whether or not its sign changes).  The step is timed whole
  (``Ising._advance``): in 2-D the lattice chain of ``meshccl.label(spins,
  connectivity=1, periodic=True, bonds=bonds)`` drawing each bond where it
  reads it and writing each cluster's new spin (drawn at its first cell) in
  its last pass, with no bond planes and no labels; in 3-D bonds,
  first-cell labels, then the flip kernel.  Beside it, on the step's spins,
  each between its own CUDA events: the bond kernel alone
  (``Ising._sw_bonds``) and **label only**, ``meshccl.label(spins,
  connectivity=1, periodic=True, bonds=bonds)`` with int32 labels 1..N, the
  time of labelling alone, which the step is reported against.  Targets
  (issue 53): >= 50 flips/ns at 8192^2 and >= 60 at 16384^2.
* **Metropolis, checkerboard, multi-spin** (2-D at T_c, L = 4096, 8192,
  16384; 3-D 256^3 at 4.5115): spin flips per ns = L^d / the time of one
  sweep (both colours), two ways: ``sim.run(n)`` between CUDA events
  (what a user's loop gets, the host's kernel launches included), and the
  GPU's own time, the same n sweeps queued behind a busy kernel so that
  they run back to back.  Target (issue 53): >= 1,000 flips/ns at 4096^2
  and above.  A sweep is two launches, one a colour.
  Beside them: a device-to-device copy of the packed lattice
  (4 bits a spin: one read and one write), the int8 spins (``state``) as a
  share of the GPU's sweep, and the labelling hook ``label='up'``
  (connectivity 1, periodic), each GPU time queued as the sweeps are: the
  hook as it runs (2-D: ``meshccl.label`` of the packed words,
  ``Ising._phase_image``; 3-D: the label of the bool image that the sweep
  before the labelled step wrote as it went), the bool image written by
  ``meshccl_ising_unpack`` then labelled, the label of a ready bool image
  alone, and the unpacking pass alone; in 3-D also the sweep that writes
  the image against the plain sweep.  What reading the packed state costs
  the hook, as a share of a sweep (issue 53: < 10 %): 2-D, the hook less
  the label of a ready image; 3-D, the sweep writing the image less the
  plain sweep.
* **Flips/ns against L**: the Metropolis and Swendsen-Wang rows above as
  one table and one plot (``sim_flips.png``), with the anchors of issue 53
  drawn in (as reported by their authors, not measured here): NVIDIA's
  ising-gpu multi-spin Metropolis, ~900 flips/ns per H100; cuIsingModel,
  ~1,350-1,400 on one RTX 6000 Ada at 16384^2; Komura and Okabe's
  Swendsen-Wang, 37.3 on 256 GPUs (L = 65,536).
* **Cahn-Hilliard, labelled every 128 steps** (1024^2 and 256^3, float64,
  dt = 0.5): a run of ``--ch-steps`` steps with ``run(..., every=128,
  on_label=...)`` (the callback reads the domain count, ``clusters.n``,
  Hawick et al.'s Fig. 18 workload) against the same number of steps
  without labelling, each between CUDA events.  The fraction of the run
  spent labelling = (labelled - plain) / labelled; also the time of one
  ``sim.labels('A').n`` call on its own x the calls / the labelled run.
  Target: < 5 %.
* **CPU**: Swendsen-Wang on 512^2 at T_c with meshccl's CPU backend
  (``Ising(..., xp=numpy)``: the compiled core's Philox, ``meshccl.label`` with periodic
  + bonds, both single-threaded) against a plain NumPy/SciPy implementation
  written here (:func:`reference_sw_step`: ``numpy.random`` bonds, clusters
  by ``scipy.sparse.csgraph.connected_components`` on the periodic bond
  graph, a ``numpy.random`` draw per cluster), also single-threaded: the
  same core count (one).  Wall clock, median of ``--cpu-steps`` steps after
  a warm-up; flips per ns as above.  The reference's clusters are checked
  against ``meshccl.label`` on one configuration in this run (and in
  ``tests/test_sim_examples.py``).

Every GPU number: warm-up steps first, then CUDA events around each step
(or part), synchronised after it, the median over ``--repeat`` steps.

Outputs (``--out DIR``): ``sim_bench.json`` (machine, command, every
number), ``sim_bench.md`` (the tables, also printed), ``sim_bench.png``
and ``sim_flips.png`` (flips/ns against L with the anchors).

Usage::

    python benchmarks/sim_bench.py --out benchmarks/results/latest-h100   # GPU machine, < 8 min
    python benchmarks/sim_bench.py --out /tmp/m --metropolis-only      # Metropolis only, < 2 min
    python benchmarks/sim_bench.py --out /tmp/w --sw-only              # Swendsen-Wang only
    python benchmarks/sim_bench.py --out /tmp/a --only metropolis,sw   # both, no CH or CPU
    python benchmarks/sim_bench.py --out /tmp/s --quick                # smaller sizes
    python benchmarks/sim_bench.py --out /tmp/s --quick --no-gpu --cpu-size 64   # CPU only
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the working tree's meshccl
sys.path.insert(0, HERE)

import bench  # noqa: E402  (machine_info, time_gpu, the copy floor, number formats)
import meshccl  # noqa: E402
from meshccl.sim import CahnHilliard, Ising  # noqa: E402
from meshccl.sim.exact import CRITICAL_TEMPERATURE  # noqa: E402

#: T_c of the simple-cubic Ising model: 1 / K_c, K_c = 0.221654626 (Ferrenberg, Xu and
#: Landau 2018), T_c = 4.511523 J; the issue asks for 4.5115
TC_3D = 4.5115
SW_TARGETS = {8192: 50.0, 16384: 60.0}
METROPOLIS_TARGET_FLIPS_PER_NS = 1000.0
CH_TARGET = 0.05
LABEL_EVERY = 128
#: Metropolis flips/ns reported by others (issue 53), drawn on the plot: (label, value)
METROPOLIS_ANCHORS = [
    ("NVIDIA ising-gpu multi-spin, per H100 (~900)", 900.0),
    ("cuIsingModel, one RTX 6000 Ada (~1,350-1,400)", 1375.0),
]
#: meshccl's int8 Metropolis kernel before multi-spin coding (H200, 2026-11-29): L -> flips/ns
METROPOLIS_BEFORE = {4096: 245.0, 8192: 261.0}
#: Swendsen-Wang flips/ns reported by others (issue 53): (label, value, L)
SW_ANCHORS = [("Komura-Okabe SW, 256 GPUs, L = 65,536 (37.3)", 37.3, 65536)]


# --------------------------------------------------------------------------
# The plain NumPy/SciPy Swendsen-Wang (the CPU reference)
# --------------------------------------------------------------------------

def reference_bonds(spins, p, rng):
    """Random bonds in meshccl's layout: ``bonds[k]`` joins x and x - e_k
    (``meshccl.neighbourhood.half_offsets(ndim, 1)[k]``), each open with
    probability p (not yet restricted to equal spins)."""
    return rng.random((spins.ndim,) + spins.shape) < p


def reference_clusters(spins, bonds):
    """Swendsen-Wang clusters on the torus by SciPy: the graph of open bonds
    between equal neighbours, ``scipy.sparse.csgraph.connected_components``.
    Returns (number of clusters, labels 0..n-1 of spins' shape)."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    n = spins.size
    index = np.arange(n).reshape(spins.shape)
    rows, cols = [], []
    for k in range(spins.ndim):
        partner = np.roll(index, 1, axis=k)        # x - e_k, periodic
        join = bonds[k] & (spins == np.roll(spins, 1, axis=k))
        rows.append(index[join])
        cols.append(partner[join])
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    graph = sp.csr_matrix((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=(n, n))
    count, labels = connected_components(graph, directed=False)
    return count, labels.reshape(spins.shape)


def reference_sw_step(spins, p, rng):
    """One Swendsen-Wang step at h = 0, plain NumPy/SciPy: bonds, clusters,
    each cluster set to +-1 with probability 1/2.  Returns the new spins."""
    count, labels = reference_clusters(spins, reference_bonds(spins, p, rng))
    up = rng.random(count) < 0.5
    return np.where(up[labels], 1, -1).astype(np.int8)


def same_partition(a, b):
    """True when label arrays a and b group the cells identically."""
    a, b = np.asarray(a).ravel(), np.asarray(b).ravel()
    pairs = np.unique(np.stack([a, b]), axis=1)
    return (pairs.shape[1] == np.unique(a).size == np.unique(b).size)


def check_reference(size=64, seed=3):
    """The reference's clusters against meshccl's on one configuration: the
    spins and bonds of a meshccl SW simulation at T_c after a few steps."""
    sim = Ising((size, size), temperature=CRITICAL_TEMPERATURE, algorithm="swendsen-wang",
                seed=seed)
    sim.run(5, progress=False)
    bonds = sim._sw_bonds()
    ours = meshccl.label(sim.state, connectivity=1, periodic=True, bonds=bonds)
    count, theirs = reference_clusters(sim.state, bonds)
    ok = same_partition(ours, theirs) and int(ours.max()) == count
    return {"size": size, "clusters": int(count), "same_partition": bool(ok)}


# --------------------------------------------------------------------------
# Timing helpers
# --------------------------------------------------------------------------

def _events(n):
    import cupy
    return [cupy.cuda.Event() for _ in range(n)]


def _elapsed(a, b):
    import cupy
    return cupy.cuda.get_elapsed_time(a, b) / 1e3


def gpu_sw(shape, temperature, repeat, warmup):
    """Swendsen-Wang step on the GPU, and beside it the bond kernel alone and the
    labelling alone, on the step's own spins and bonds: median seconds of each."""
    import cupy

    sim = Ising(shape, temperature=temperature, algorithm="swendsen-wang", seed=1, xp=cupy)
    sim.run(warmup, progress=False)
    cupy.cuda.Device().synchronize()
    e = _events(3)

    def steps(sim):
        times = []
        for _ in range(repeat):
            e[0].record()
            sim._advance()
            e[1].record()
            e[1].synchronize()
            times.append(_elapsed(e[0], e[1]))
        return statistics.median(times)

    t = steps(sim)                    # the whole step
    parts = {}
    bonds_t, label_t = [], []
    for _ in range(repeat):           # bonds alone, then labelling alone
        e[0].record()
        bonds = sim._sw_bonds()
        e[1].record()
        labels = meshccl.label(sim._s, connectivity=1, periodic=True, bonds=bonds)
        e[2].record()
        e[2].synchronize()
        bonds_t.append(_elapsed(e[0], e[1]))
        label_t.append(_elapsed(e[1], e[2]))
        sim._advance()
    parts["bonds"] = statistics.median(bonds_t)
    m = float(np.abs(sim.magnetisation()))
    cells = int(np.prod(shape))
    label_only = statistics.median(label_t)
    del sim, bonds, labels
    cupy.get_default_memory_pool().free_all_blocks()
    return {"shape": list(shape), "temperature": temperature, "cells": cells,
            "step_s": t, "flips_per_ns": cells / (t * 1e9), "steps_timed": repeat,
            "parts_s": parts, "label_only_s": label_only,
            "label_only_flips_per_ns": cells / (label_only * 1e9),
            "abs_magnetisation_last": m}


def copy_floor(nbytes, repeat):
    """Median seconds of a device-to-device copy of ``nbytes`` (one read + one write)."""
    import cupy

    src = cupy.ones(nbytes, dtype=cupy.uint8)
    dst = cupy.empty_like(src)
    stream = cupy.cuda.get_current_stream()
    s, _ = bench.time_gpu(lambda: dst.data.copy_from_device_async(src.data, nbytes, stream),
                          min_runs=repeat, min_time=0.05, warmup=3)
    return s


@functools.lru_cache(maxsize=None)
def _spin_kernel():
    import cupy

    return cupy.RawKernel(r"""
    extern "C" __global__ void meshccl_bench_spin(long long cycles) {
        const long long t0 = clock64();
        while (clock64() - t0 < cycles) {}
    }""", "meshccl_bench_spin")


def gpu_busy(seconds):
    """Keep the GPU busy for about ``seconds`` (one thread spinning on clock64), so that
    work queued behind it runs back to back, without gaps for the host's launches."""
    import cupy

    khz = cupy.cuda.Device().attributes["ClockRate"]
    _spin_kernel()((1,), (1,), (np.int64(seconds * khz * 1e3),))


def _queued(fn, calls):
    """GPU seconds per call of ``fn``: ``calls`` calls queued behind gpu_busy (long enough
    to cover the host's time to queue them), between one pair of CUDA events."""
    import cupy

    cupy.cuda.Device().synchronize()
    t0 = time.perf_counter()
    fn()
    cupy.cuda.Device().synchronize()
    host = time.perf_counter() - t0      # one call with its launches, an upper bound
    e = _events(2)
    gpu_busy(2 * calls * host + 0.005)
    e[0].record()
    for _ in range(calls):
        fn()
    e[1].record()
    e[1].synchronize()
    return _elapsed(e[0], e[1]) / calls


def gpu_metropolis(shape, temperature, sweeps, warmup):
    """Multi-spin Metropolis: flips/ns of ``sim.run`` and of the GPU alone, the copy
    floor of the packed lattice, and the hooks' images as shares of a sweep."""
    import cupy

    sim = Ising(shape, temperature=temperature, algorithm="metropolis", seed=1, xp=cupy)
    sim.run(warmup, progress=False)
    cupy.cuda.Device().synchronize()
    e = _events(2)
    e[0].record()
    sim.run(sweeps, progress=False)
    e[1].record()
    e[1].synchronize()
    run_s = _elapsed(e[0], e[1]) / sweeps
    gpu_s = _queued(sim._advance, sweeps)
    packed = sim._packed          # None on the array-expression path
    hook = _hook_costs(sim, shape) if packed is not None else {}

    def unpack():
        if packed is not None:
            sim._s = None
        return sim.state

    state_s = _queued(unpack, 10)
    cells = int(np.prod(shape))
    nbytes = packed.nbytes if packed is not None else cells * sim.state.itemsize
    floor = copy_floor(nbytes, 10)
    m = float(abs(sim.magnetisation()))
    sim = packed = None
    cupy.get_default_memory_pool().free_all_blocks()
    return {"shape": list(shape), "temperature": temperature, "cells": cells,
            "sweeps_timed": sweeps, "sweep_s": run_s, "gpu_sweep_s": gpu_s,
            "flips_per_ns": cells / (run_s * 1e9), "gpu_flips_per_ns": cells / (gpu_s * 1e9),
            "state_bytes": int(nbytes), "floor_s": floor, "ratio": gpu_s / floor,
            "unpack_s": state_s, "unpack_share": state_s / gpu_s,
            "abs_magnetisation_last": m, **hook,
            **{f"{k[:-2]}_share": v / gpu_s for k, v in hook.items()},
            "hook_extra_share": _hook_extra(hook, gpu_s, len(shape)) if hook else None}


def _hook_extra(hook, sweep_s, ndim):
    """What reading the packed state costs the hook, as a share of a sweep: 2-D, the
    hook less the label of a ready image; 3-D, the sweep that writes the image less the
    plain sweep."""
    if ndim == 2:
        return (hook["hook_s"] - hook["image_label_s"]) / sweep_s
    return (hook["image_sweep_s"] - sweep_s) / sweep_s


def _hook_costs(sim, shape, calls=10):
    """GPU seconds of the labelling hook ``label='up'`` (connectivity 1, periodic) on
    packed spins, queued: ``hook_s`` as the hook runs it (``_phase_image`` then
    ``meshccl.label``: 2-D the packed words, 3-D the image the sweep before wrote),
    ``unpacked_label_s`` the bool image written from the packed words and then labelled,
    ``image_label_s`` the label of a ready bool image, ``unpack_s`` the unpacking pass
    alone; 3-D also ``image_sweep_s``, a sweep that writes the image as it goes."""
    from meshccl.sim.ising import _unpack

    out = {}
    if len(shape) == 3:
        def image_sweep():
            sim._before_label("up")
            sim._advance()

        image_sweep()
        out["image_sweep_s"] = _queued(image_sweep, 10 * calls)
        assert sim._image is not None and sim._image[:2] == ("up", sim.step)
    image = _unpack(sim._packed, tuple(shape), "up")

    def hook():
        return meshccl.label(sim._phase_image("up"), connectivity=1, periodic=True)

    def unpacked():
        return meshccl.label(_unpack(sim._packed, tuple(shape), "up"), connectivity=1,
                             periodic=True)

    def ready():
        return meshccl.label(image, connectivity=1, periodic=True)

    def unpack():
        return _unpack(sim._packed, tuple(shape), "up")

    # (each once first: kernels compile, plans are made, outside the queued calls)
    assert bool((hook() == ready()).all()) and bool((unpacked() == ready()).all())
    out.update({"hook_s": _queued(hook, calls), "unpacked_label_s": _queued(unpacked, calls),
                "image_label_s": _queued(ready, calls), "up_unpack_s": _queued(unpack, calls)})
    return out


def gpu_cahn_hilliard(shape, steps, repeat):
    import cupy

    sim = CahnHilliard(shape, dt=0.5, seed=1, xp=cupy)
    sim.run(LABEL_EVERY, progress=False)        # warm-up: FFT plans, kernels
    sim.labels("A").n
    cupy.cuda.Device().synchronize()
    e = _events(2)
    counts = []

    def timed(**kw):
        e[0].record()
        sim.run(steps, progress=False, **kw)
        e[1].record()
        e[1].synchronize()
        return _elapsed(e[0], e[1])

    plain = timed()
    labelled = timed(every=LABEL_EVERY, on_label=lambda c: counts.append(c.n))
    call, _ = bench.time_gpu(lambda: sim.labels("A").n, min_runs=repeat, min_time=0.05,
                             warmup=1)
    calls = len(counts)
    return {"shape": list(shape), "steps": steps, "every": LABEL_EVERY, "calls": calls,
            "plain_s": plain, "labelled_s": labelled, "label_call_s": call,
            "fraction": (labelled - plain) / labelled,
            "fraction_from_calls": calls * call / labelled,
            "step_s": plain / steps, "domains": counts}


def cpu_sw(size, steps, seed=1):
    """meshccl's CPU backend against the NumPy/SciPy reference, one core each."""
    shape = (size, size)
    p = -np.expm1(-2.0 / CRITICAL_TEMPERATURE)
    sim = Ising(shape, temperature=CRITICAL_TEMPERATURE, algorithm="swendsen-wang", seed=seed)
    sim.run(2, progress=False)                   # warm-up (first calls)
    ours = []
    for _ in range(steps):
        t0 = time.perf_counter()
        sim._advance()
        ours.append(time.perf_counter() - t0)
    rng = np.random.default_rng(seed)
    spins = sim.state.copy()
    spins = reference_sw_step(spins, p, rng)     # warm-up
    theirs = []
    for _ in range(steps):
        t0 = time.perf_counter()
        spins = reference_sw_step(spins, p, rng)
        theirs.append(time.perf_counter() - t0)
    cells = size * size
    t_ours, t_ref = statistics.median(ours), statistics.median(theirs)
    return {"shape": list(shape), "steps_timed": steps, "cores": 1,
            "meshccl_step_s": t_ours, "reference_step_s": t_ref,
            "meshccl_flips_per_ns": cells / (t_ours * 1e9),
            "reference_flips_per_ns": cells / (t_ref * 1e9),
            "speedup": t_ref / t_ours}


# --------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------

def _ms(s):
    return bench.fmt3(s * 1e3)


def _side(shape):
    return f"{shape[0]}^{len(shape)}" if len(set(shape)) == 1 else "x".join(map(str, shape))


def markdown(res):
    m = res["machine"]
    gpu = m.get("gpu")
    where = (f"{gpu['name']} (CuPy {gpu['cupy']}, CUDA runtime {gpu['runtime_version']})"
             if gpu else f"no GPU ({m.get('gpu_skipped')})")
    lines = ["# meshccl.sim benchmark", "",
             f"Machine: {where}; host {m['cpu_count']} CPUs ({m['cpu_model']}). "
             f"Date: {m['date_utc']}. meshccl {m['meshccl']['version']} at "
             f"{m['meshccl']['git']}. Command: `{m['command']}`", ""]
    if res.get("swendsen_wang"):
        goals = ", ".join(f">= {v:g} at {k}^2" for k, v in SW_TARGETS.items())
        lines += ["## Swendsen-Wang, Ising at T_c (GPU)", "",
                  "Spin flips per ns = L^d spins per SW step / median time of one step "
                  "(every spin's cluster is redrawn once a step). 2-D: the labelling chain "
                  "draws each bond where it reads it and writes the new spins in its last "
                  "pass (no bond planes, no labels). 3-D: bonds, first-cell labels, flip. Beside the step, each between its own CUDA "
                  "events on the step's spins: the bond kernel alone, and label only = "
                  "`meshccl.label(spins, connectivity=1, periodic=True, bonds=bonds)` "
                  "(int32 labels 1..N), the time of labelling alone, the bound the step is "
                  f"measured against. Targets (issue 53): {goals} flips/ns.", "",
                  "| lattice | T | ms / step | **flips / ns** "
                  "| bonds ms | label only ms | step / label only | target |",
                  "|---|---:|---:|---:|---:|---:|---:|---|"]
        for r in res["swendsen_wang"]:
            p = r["parts_s"]
            target = ""
            if len(r["shape"]) == 2 and r["shape"][0] == r["shape"][1] in SW_TARGETS:
                target = "✓" if r["flips_per_ns"] >= SW_TARGETS[r["shape"][0]] else "✗"
            lines.append(f"| {_side(r['shape'])} | {r['temperature']:.4f} | {_ms(r['step_s'])} "
                         f"| **{bench.fmt3(r['flips_per_ns'])}** | "
                         f"{_ms(p['bonds'])} | {_ms(r['label_only_s'])} | "
                         f"{r['step_s'] / r['label_only_s']:.2f} | {target} |")
        lines.append("")
    if res.get("metropolis"):
        lines += ["## Metropolis, checkerboard, multi-spin (GPU)", "",
                  "One sweep = both colours; spins packed 4 bits each, one array per colour. "
                  "flips/ns = L^d / the time of a sweep: `run` = `sim.run(n)` between CUDA "
                  "events (host launches included); GPU = the same sweeps queued behind a "
                  "busy kernel (back to back). Floor = a device-to-device copy of the packed "
                  "lattice (one read + one write). `int8` = the spins (`state`) unpacked, as "
                  "a share of the GPU's sweep. Target: >= "
                  f"{METROPOLIS_TARGET_FLIPS_PER_NS:,.0f} flips/ns at 4096^2 and above.", "",
                  "| lattice | T | **flips/ns (run)** | flips/ns (GPU) | ms / sweep (run) "
                  "| ms / sweep (GPU) | x copy floor | int8 spins | target |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in res["metropolis"]:
            target = ""
            if len(r["shape"]) == 2 and r["shape"][0] >= 4096:
                ok = r["flips_per_ns"] >= METROPOLIS_TARGET_FLIPS_PER_NS
                target = "✓" if ok else "✗"
            lines.append(f"| {_side(r['shape'])} | {r['temperature']:.4f} | "
                         f"**{bench.fmt3(r['flips_per_ns'])}** | "
                         f"{bench.fmt3(r['gpu_flips_per_ns'])} | "
                         f"{_ms(r['sweep_s'])} | "
                         f"{_ms(r['gpu_sweep_s'])} | {r['ratio']:.1f}x | "
                         f"{r['unpack_share']:.0%} | {target} |")
        hooks = [r for r in res["metropolis"] if r.get("hook_s") is not None]
        if hooks:
            lines += ["", "The labelling hook `label='up'` (connectivity 1, periodic), GPU ms "
                      "queued: the hook as it runs (2-D: `meshccl.label` of the packed words; "
                      "3-D: the label of the bool image that the sweep before the labelled "
                      "step wrote as it went); the bool image written from the words by a "
                      "pass of its own, then labelled; the label of a ready bool image; that "
                      "pass alone; 3-D: the sweep that writes the image. Extra = what reading "
                      "the packed state costs the hook, as a share of the GPU's sweep (2-D: "
                      "hook - label of a ready image; 3-D: sweep writing the image - sweep; "
                      "target < 10 %).", "",
                      "| lattice | sweep ms | sweep writing the image ms | **hook ms** | "
                      "unpack + label ms | label of an image ms | unpack ms (share of sweep) "
                      "| **extra (share of sweep)** |",
                      "|---|---:|---:|---:|---:|---:|---:|---:|"]
            for r in hooks:
                image_sweep = _ms(r["image_sweep_s"]) if r.get("image_sweep_s") else "—"
                lines.append(f"| {_side(r['shape'])} | {_ms(r['gpu_sweep_s'])} | "
                             f"{image_sweep} | **{_ms(r['hook_s'])}** | "
                             f"{_ms(r['unpacked_label_s'])} | "
                             f"{_ms(r['image_label_s'])} | {_ms(r['up_unpack_s'])} "
                             f"({r['up_unpack_share']:.0%}) | **{r['hook_extra_share']:+.0%}** |")
        lines += ["", "Anchors (as reported, not measured here): "
                  + "; ".join(f"{name}" for name, _ in METROPOLIS_ANCHORS)
                  + "; meshccl's int8 kernel before, H200: "
                  + ", ".join(f"{v:g} at {L}^2" for L, v in METROPOLIS_BEFORE.items()) + ".", ""]
    lines += flips_table(res)
    if res.get("cahn_hilliard"):
        lines += ["## Cahn-Hilliard labelled every 128 steps (GPU)", "",
                  "float64, dt = 0.5, from the initial noise. Labelled run: "
                  "`run(steps, every=128, on_label=lambda c: c.n)` (label phase A, "
                  "periodic, read the domain count); plain: the same number of steps "
                  "without labelling, continuing the same quench. Fraction = "
                  "(labelled - plain) / labelled; by calls = calls x (one `labels('A').n` "
                  f"call) / labelled. Target: < {CH_TARGET:.0%}.", "",
                  "| grid | steps | ms / step | label calls | ms / call | plain s | "
                  "labelled s | **fraction** | by calls | target |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in res["cahn_hilliard"]:
            ok = "✓" if max(r["fraction"], r["fraction_from_calls"]) < CH_TARGET else "✗"
            lines.append(f"| {_side(r['shape'])} | {r['steps']} | {_ms(r['step_s'])} | "
                         f"{r['calls']} | {_ms(r['label_call_s'])} | {r['plain_s']:.3f} | "
                         f"{r['labelled_s']:.3f} | **{r['fraction']:.2%}** | "
                         f"{r['fraction_from_calls']:.2%} | {ok} |")
        lines.append("")
    c = res.get("cpu")
    if c:
        ok = "✓" if c["speedup"] >= 1 else "✗"
        chk = res["reference_check"]
        lines += ["## Swendsen-Wang on the CPU, one core each", "",
                  "meshccl: `Ising(..., algorithm='swendsen-wang')` on NumPy (compiled Philox, "
                  "`meshccl.label` with periodic + bonds, single-threaded). Reference: plain "
                  "NumPy/SciPy written in this benchmark (`numpy.random` bonds, "
                  "`scipy.sparse.csgraph.connected_components` on the periodic bond graph, "
                  "a `numpy.random` draw per cluster), single-threaded. Wall clock, median "
                  f"of {c['steps_timed']} steps. Reference clusters checked against "
                  f"`meshccl.label` on a {chk['size']}^2 configuration: "
                  f"{'same partition' if chk['same_partition'] else 'MISMATCH'} "
                  f"({chk['clusters']} clusters). Target: meshccl at least as fast.", "",
                  "| lattice | meshccl ms / step | flips / ns | NumPy/SciPy ms / step | "
                  "flips / ns | **speed-up** | target |",
                  "|---|---:|---:|---:|---:|---:|---|",
                  f"| {_side(c['shape'])} | {_ms(c['meshccl_step_s'])} | "
                  f"{bench.fmt3(c['meshccl_flips_per_ns'])} | {_ms(c['reference_step_s'])} | "
                  f"{bench.fmt3(c['reference_flips_per_ns'])} | **{c['speedup']:.2f}x** | "
                  f"{ok} |", ""]
    return "\n".join(lines)


def _flips_rows(res):
    """{L: {'metropolis': flips/ns (sim.run), 'sw': flips/ns}} of the square lattices."""
    rows = {}
    for key, field in (("metropolis", "flips_per_ns"), ("swendsen_wang", "flips_per_ns")):
        for r in res.get(key) or []:
            if len(r["shape"]) == 2 and r["shape"][0] == r["shape"][1]:
                rows.setdefault(r["shape"][0], {})[key] = r[field]
    return dict(sorted(rows.items()))


def flips_table(res):
    """The markdown lines of flips/ns against L, with the anchors (none when nothing
    was measured on the GPU)."""
    rows = _flips_rows(res)
    if not rows:
        return []
    lines = ["## Spin flips per ns against L (GPU, 2-D, T_c)", "",
             "Metropolis: `sim.run(n)` between CUDA events (host launches included); "
             "Swendsen-Wang: the median step. Anchors, as reported by their authors (not "
             "measured here): "
             + "; ".join(name for name, _ in METROPOLIS_ANCHORS) + " (Metropolis); "
             + "; ".join(name for name, _, _ in SW_ANCHORS) + " (Swendsen-Wang).", "",
             "| L | **Metropolis flips/ns** | **Swendsen-Wang flips/ns** |",
             "|---:|---:|---:|"]
    for L, r in rows.items():
        m, w = r.get("metropolis"), r.get("swendsen_wang")
        lines.append(f"| {L} | {bench.fmt3(m) if m else '—'} | {bench.fmt3(w) if w else '—'} |")
    return lines + [""]


def plot_flips(res, path):
    """flips/ns against L (log-log): meshccl's Metropolis and Swendsen-Wang with the
    anchors of issue 53 and its targets."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    rows = _flips_rows(res)
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(9.0, 4.4))
    for key, colour, name in (("metropolis", "tab:red", "meshccl Metropolis (multi-spin)"),
                              ("swendsen_wang", "tab:blue", "meshccl Swendsen-Wang")):
        pts = [(L, r[key]) for L, r in rows.items() if key in r]
        if pts:
            ax.plot(*zip(*pts), "o-", color=colour, label=name)
            for L, v in pts:
                ax.annotate(bench.fmt3(v), (L, v), textcoords="offset points", xytext=(0, 5),
                            ha="center", fontsize=7, color=colour)
    for (name, value), ls in zip(METROPOLIS_ANCHORS, ("-.", ":")):
        ax.axhline(value, color="tab:red", ls=ls, lw=1, alpha=0.7, label=name)
    for name, value, _ in SW_ANCHORS:
        ax.axhline(value, color="tab:blue", ls="-.", lw=1, alpha=0.7, label=name)
    ax.plot(list(METROPOLIS_BEFORE), list(METROPOLIS_BEFORE.values()), "x:", color="gray",
            label="meshccl int8 Metropolis before (H200)")
    ax.hlines(METROPOLIS_TARGET_FLIPS_PER_NS, 4096, 16384, color="tab:green", lw=2, ls="--",
              label="targets (issue 53)", zorder=3)
    ax.scatter(list(SW_TARGETS), list(SW_TARGETS.values()), marker="_", s=200,
               color="tab:green", zorder=3)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("L (L x L lattice, T_c)")
    ax.set_ylabel("spin flips per ns")
    m = res["machine"]
    ax.set_title(f"Ising on one {m['gpu']['name'] if m.get('gpu') else 'CPU'}: "
                 f"flips/ns against L", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot(res, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    panels = [k for k in ("swendsen_wang", "metropolis", "cahn_hilliard", "cpu") if res.get(k)]
    if not panels:  # (--sw-only without a GPU: nothing measured)
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 4.2), squeeze=False)
    for ax, key in zip(axes[0], panels):
        if key == "swendsen_wang":
            rows = res[key]
            names = [_side(r["shape"]) for r in rows]
            x = np.arange(len(rows))
            ax.bar(x - 0.2, [r["step_s"] * 1e9 / r["cells"] for r in rows], 0.4,
                   color="tab:blue", label="SW step")
            ax.bar(x + 0.2, [r["label_only_s"] * 1e9 / r["cells"] for r in rows], 0.4,
                   color="tab:gray", label="label only (bound)")
            ax.set_xticks(x, names)
            bottom = np.array([r["step_s"] * 1e9 / r["cells"] for r in rows])
            for i, r in enumerate(rows):
                ax.annotate(f"{bench.fmt3(r['flips_per_ns'])} flips/ns", (i, bottom[i]),
                            ha="center", va="bottom", fontsize=8)
            ax.set_ylabel("ns per spin")
            ax.set_title("Swendsen-Wang at T_c: the step and labelling alone\n(label: flips "
                         "per ns of the step)")
            ax.legend(fontsize=8)
        elif key == "metropolis":
            rows = [r for r in res[key] if len(r["shape"]) == 2]
            sides = [r["shape"][0] for r in rows]
            ax.plot(sides, [r["flips_per_ns"] for r in rows], "o-", color="tab:red",
                    label="meshccl, sim.run")
            ax.plot(sides, [r["gpu_flips_per_ns"] for r in rows], "s--", color="tab:red",
                    alpha=0.6, label="meshccl, GPU time")
            for r in rows:
                ax.annotate(bench.fmt3(r["flips_per_ns"]), (r["shape"][0], r["flips_per_ns"]),
                            ha="center", va="bottom", fontsize=8)
            ax.plot(list(METROPOLIS_BEFORE), list(METROPOLIS_BEFORE.values()), "x:",
                    color="gray", label="meshccl int8 kernel before (H200)")
            for (name, value), ls in zip(METROPOLIS_ANCHORS, ("-.", ":")):
                ax.axhline(value, color="k", ls=ls, lw=1, label=name)
            ax.axhline(METROPOLIS_TARGET_FLIPS_PER_NS, color="tab:green", ls="--", lw=1,
                       label="target (issue 53)")
            ax.set_xscale("log", base=2)
            ax.set_xlabel("L (L x L lattice)")
            ax.set_ylabel("spin flips per ns")
            ax.set_ylim(bottom=0)
            ax.set_title("Metropolis, multi-spin, at T_c")
            ax.legend(fontsize=7)
        elif key == "cahn_hilliard":
            rows = res[key]
            ax.bar([_side(r["shape"]) for r in rows], [100 * r["fraction"] for r in rows])
            ax.axhline(100 * CH_TARGET, color="k", ls="--", lw=1, label="target")
            ax.set_ylabel("% of run time labelling")
            ax.set_title(f"Cahn-Hilliard, labelled every {LABEL_EVERY} steps")
            ax.legend(fontsize=8)
        else:
            c = res[key]
            ax.bar(["meshccl CPU", "NumPy/SciPy"],
                   [c["meshccl_flips_per_ns"], c["reference_flips_per_ns"]],
                   color=["tab:blue", "tab:gray"])
            ax.set_ylabel("spin flips per ns")
            ax.set_title(f"Swendsen-Wang {_side(c['shape'])}, CPU, 1 core")
    m = res["machine"]
    fig.suptitle((m["gpu"]["name"] if m.get("gpu") else "CPU only") + f" — {m['date_utc']}",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------

def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for sim_bench.json/.md/.png")
    ap.add_argument("--quick", action="store_true",
                    help="smaller sizes and fewer steps (a smoke run)")
    ap.add_argument("--no-gpu", action="store_true", help="the CPU comparison only")
    ap.add_argument("--repeat", type=int, default=None,
                    help="timed steps per GPU case (default 20, quick 5)")
    ap.add_argument("--ch-steps", type=int, default=None,
                    help="Cahn-Hilliard steps per run (default 4096, quick 256)")
    ap.add_argument("--sides", default=None,
                    help="2-D sides for SW (default 1024,2048,4096,8192,16384; quick 1024,4096)")
    ap.add_argument("--sw-sides3", default=None,
                    help="3-D sides for SW (default 256,512; quick 128)")
    ap.add_argument("--sw-only", action="store_true",
                    help="the Swendsen-Wang section alone (and the reference check)")
    ap.add_argument("--metropolis-sides", default=None,
                    help="2-D sides for Metropolis (default 4096,8192,16384; quick 1024,4096)")
    ap.add_argument("--metropolis-only", action="store_true",
                    help="the Metropolis section alone (no SW, Cahn-Hilliard or CPU runs)")
    ap.add_argument("--only", default=None,
                    help="sections to run, comma-separated: metropolis, sw, ch, cpu (default "
                         "all; --sw-only and --metropolis-only are 'sw' and 'metropolis')")
    ap.add_argument("--side3", type=int, default=None, help="3-D side (default 256, quick 128)")
    ap.add_argument("--ch-sides", default=None,
                    help="Cahn-Hilliard 2-D and 3-D sides (default 1024,256; quick 512,128)")
    ap.add_argument("--cpu-size", type=int, default=512, help="side of the CPU SW lattice")
    ap.add_argument("--cpu-steps", type=int, default=None,
                    help="timed CPU SW steps each (default 7, quick 3)")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    quick = args.quick
    repeat = args.repeat or (5 if quick else 20)
    ch_steps = args.ch_steps or (256 if quick else 4096)
    cpu_steps = args.cpu_steps or (3 if quick else 7)
    sections = {"metropolis", "sw", "ch", "cpu"}
    if args.only is not None:
        wanted = {v.strip() for v in args.only.split(",") if v.strip()}
        if not wanted or wanted - sections:
            raise SystemExit(f"--only takes some of {sorted(sections)}, got {args.only!r}")
        sections = wanted
    if args.sw_only:
        sections = {"sw"}
    if args.metropolis_only:
        sections = {"metropolis"}
    use_gpu, reason = (False, "--no-gpu") if args.no_gpu else (meshccl.gpu_available(), "")
    if not use_gpu and not reason:
        reason = "no usable GPU"
    res = {"machine": bench.machine_info(use_gpu, reason), "quick": quick}
    os.makedirs(args.out, exist_ok=True)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    if use_gpu:
        sides = ([int(v) for v in args.sides.split(",")] if args.sides else
                 [1024, 4096] if quick else [1024, 2048, 4096, 8192, 16384])
        sides3 = ([int(v) for v in args.sw_sides3.split(",") if v] if args.sw_sides3 is not None
                  else [128] if quick else [256, 512])
        side3 = args.side3 or (128 if quick else 256)
        msides = ([int(v) for v in args.metropolis_sides.split(",")] if args.metropolis_sides
                  else [1024, 4096] if quick else [4096, 8192, 16384])
        ch2, ch3 = ([int(v) for v in args.ch_sides.split(",")] if args.ch_sides else
                    [512, 128] if quick else [1024, 256])
    if use_gpu and "metropolis" in sections:
        res["metropolis"] = []
        for shape in [(L, L) for L in msides] + [(side3,) * 3]:
            r = gpu_metropolis(shape, CRITICAL_TEMPERATURE if len(shape) == 2 else TC_3D,
                               sweeps=10 * repeat, warmup=3)
            log(f"Metropolis {_side(shape)}: {r['flips_per_ns']:.0f} flips/ns (run), "
                f"{r['gpu_flips_per_ns']:.0f} (GPU); int8 spins {r['unpack_share']:.0%} of a "
                f"sweep; hook 'up' {r.get('hook_s', 0) * 1e3:.3f} ms, label of an image "
                f"{r.get('image_label_s', 0) * 1e3:.3f} ms, unpack + label "
                f"{r.get('unpacked_label_s', 0) * 1e3:.3f} ms")
            res["metropolis"].append(r)
    if use_gpu and "sw" in sections:
        res["swendsen_wang"] = []
        for shape, t in ([((L, L), CRITICAL_TEMPERATURE) for L in sides]
                         + [((L,) * 3, TC_3D) for L in sides3]):
            r = gpu_sw(shape, t, repeat, warmup=3)
            log(f"SW {_side(shape)}: {r['step_s'] * 1e3:.3f} ms/step, "
                f"{r['flips_per_ns']:.2f} flips/ns, parts {r['parts_s']}, label only "
                f"{r['label_only_s'] * 1e3:.3f} ms")
            res["swendsen_wang"].append(r)
        if "cpu" not in sections:
            res["reference_check"] = check_reference()
    if use_gpu and "ch" in sections:
        res["cahn_hilliard"] = []
        for shape in [(ch2, ch2), (ch3,) * 3]:
            r = gpu_cahn_hilliard(shape, ch_steps, repeat)
            log(f"Cahn-Hilliard {_side(shape)}: {r['step_s'] * 1e3:.3f} ms/step, labelling "
                f"{r['fraction']:.2%} of the run ({r['fraction_from_calls']:.2%} by calls)")
            res["cahn_hilliard"].append(r)
    if "cpu" in sections:
        res["reference_check"] = check_reference()
        res["cpu"] = cpu_sw(args.cpu_size, cpu_steps)
        c = res["cpu"]
        log(f"CPU SW {args.cpu_size}^2: meshccl {c['meshccl_step_s'] * 1e3:.2f} ms, "
            f"NumPy/SciPy {c['reference_step_s'] * 1e3:.2f} ms ({c['speedup']:.2f}x)")

    with open(os.path.join(args.out, "sim_bench.json"), "w") as f:
        json.dump(res, f, indent=1)
    md = markdown(res)
    with open(os.path.join(args.out, "sim_bench.md"), "w") as f:
        f.write(md + "\n")
    plot(res, os.path.join(args.out, "sim_bench.png"))
    plot_flips(res, os.path.join(args.out, "sim_flips.png"))
    print(md)
    return 0 if res.get("reference_check", {"same_partition": True})["same_partition"] else 1


if __name__ == "__main__":
    sys.exit(main())
