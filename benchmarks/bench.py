"""Benchmark harness: meshccl against the other connected-component labellers.

What it measures
----------------
* **Standard cases** (DESIGN.md section 4), generated with :mod:`meshccl.patterns`
  directly on the GPU when CuPy sees one (else with NumPy): Hawick's spiral and
  smoothed-noise blobs at 4096^2, site percolation at 8192^2 at the threshold
  of the connectivity, blobs and percolation at 512^3, and a 4-state Potts
  field (values 1..4, labelled by equal value) at 4096^2 and 256^3.  Each is
  run at connectivity 1 and at full connectivity (ndim).  ``--quick`` divides
  every side by 4 for a smoke run.
* **Floor** per case: (1 byte in + 4 bytes out per cell) / device copy
  bandwidth, the bandwidth being measured here with a 1 GiB device-to-device
  ``cudaMemcpyAsync`` timed with CUDA events (bytes read + bytes written).
* **GPU tools**, side by side in this process on the same CuPy array:
  meshccl.label, cupyx.scipy.ndimage.label, and, where they import,
  cucim.skimage.measure.label, bkeccl.ccl (dense and raw output; binary, full
  connectivity only) and colorcc.label (2-D only; the case is packed into the
  red channel of an RGB image).  Each is warmed up, then timed with a pair of
  CUDA events around every call; the median over at least ``--repeat`` calls
  (default 20) and at least ``--min-time`` seconds (default 1) is reported.
* **CPU tools** on a NumPy copy: meshccl.label (CPU backend) serially and
  with every numba thread (``cpu_threads=0``; the thread count,
  ``numba.config.NUMBA_NUM_THREADS``, is recorded), and as peers
  skimage.measure.label, scipy.ndimage.label, cv2.connectedComponents and
  cc3d.connected_components.  Each is warmed up on a small crop (numba JIT,
  first-call costs), then timed with ``time.perf_counter``: the median of
  ``--cpu-repeat`` (7) calls, of 3 once the calls add up to 4 s, or a single
  call when one takes more than 5 s.
* **Correctness**: every tool's component count must equal meshccl's, and its
  labels must describe the same partition ('identical' when the values are
  equal too, 'same partition' when they differ only by a relabelling,
  'MISMATCH' otherwise).  meshccl GPU and meshccl CPU threads must be
  identical to meshccl CPU, and meshccl CPU identical to skimage (the drop-in
  contract).  A meshccl MISMATCH or error makes the script exit with status 1
  (after writing the results).  Tools that do not do what a case asks
  (binary-only tools on the Potts field, 2-D-only tools on volumes,
  full-connectivity-only tools at connectivity 1) are marked 'n/a'.
* **Small-image latency**: blobs at 64^2 .. 1024^2, wall time per call of a
  Python loop of N calls followed by one device synchronise, divided by N.

Outputs (in ``--out DIR``): ``bench.json`` (machine, versions, command line,
every number), ``bench.md`` (tables; also printed to stdout at the end) and
``bench.png`` (throughput per case on a log axis, with the floor).

Usage::

    python benchmarks/bench.py --out out/bench            # full run (GPU machine)
    python benchmarks/bench.py --out /tmp/b --quick       # smaller sizes
    python benchmarks/bench.py --out /tmp/b --quick --no-gpu   # CPU-only smoke run
    python benchmarks/bench.py --out /tmp/b --cases spiral,potts4-4096^2-c1
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import functools
import importlib.metadata
import inspect
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # benchmark the working tree's meshccl

import meshccl  # noqa: E402
from meshccl import patterns  # noqa: E402

CPU_SLOW_S = 5.0          # a CPU call slower than this is timed once
CPU_BUDGET_S = 4.0        # CPU calls of one tool and case stop (after 3) once they add up to this
GPU_MAX_RUNS = 2000       # cap on timed GPU calls per tool and case
COPY_BYTES = 1 << 30      # size of the bandwidth probe (1 GiB)
LATENCY_SIDES = (64, 256, 512, 1024)
LATENCY_CONNECTIVITY = 1  # cupyx's default structure

GPU_TOOLS = ("meshccl GPU", "cupyx", "cuCIM", "bkeccl", "bkeccl raw", "colorcc")
CPU_MESHCCL = ("meshccl CPU", "meshccl CPU threads")
CPU_PEERS = ("skimage", "scipy", "OpenCV", "cc3d")
CPU_TOOLS = CPU_MESHCCL + CPU_PEERS
GPU_PEERS = GPU_TOOLS[1:]
MESHCCL_TOOLS = ("meshccl GPU",) + CPU_MESHCCL


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------

@dataclass
class Case:
    name: str
    pattern: str            # 'spiral', 'blobs', 'percolation', 'potts'
    shape: tuple
    connectivity: int
    multi: bool = False     # multi-valued (equal-value labelling), no background
    p: float | None = None  # percolation probability

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def cells(self):
        return int(np.prod(self.shape, dtype=np.int64))


def _shape_name(shape):
    return f"{shape[0]}^{len(shape)}" if len(set(shape)) == 1 else "x".join(map(str, shape))


def standard_cases(quick=False):
    """The cases of DESIGN.md section 4, each at connectivity 1 and ndim."""
    k = 4 if quick else 1
    specs = [
        ("spiral", (4096 // k,) * 2),
        ("blobs", (4096 // k,) * 2),
        ("percolation", (8192 // k,) * 2),
        ("blobs", (512 // k,) * 3),
        ("percolation", (512 // k,) * 3),
        ("potts", (4096 // k,) * 2),
        ("potts", (256 // k,) * 3),
    ]
    cases = []
    for pattern, shape in specs:
        ndim = len(shape)
        for conn in (1, ndim):
            label = "potts4" if pattern == "potts" else pattern
            name = f"{label}-{_shape_name(shape)}-c{conn}"
            p = patterns.PERCOLATION_THRESHOLD[(ndim, conn)] if pattern == "percolation" else None
            cases.append(Case(name, pattern, shape, conn, multi=(pattern == "potts"), p=p))
    return cases


def select_cases(cases, spec):
    """Keep the cases matching any comma-separated token: an exact name, a
    shell pattern (``blobs-*-c1``) or a name prefix (``spiral``)."""
    if not spec:
        return cases
    tokens = [t.strip() for t in spec.split(",") if t.strip()]
    chosen = [c for c in cases
              if any(c.name == t or fnmatch.fnmatchcase(c.name, t) or c.name.startswith(t)
                     for t in tokens)]
    if not chosen:
        raise SystemExit(f"--cases {spec!r} matches none of: {', '.join(c.name for c in cases)}")
    return chosen


def generate(case, xp):
    """The case's array (uint8) on ``xp``'s device."""
    if case.pattern == "spiral":
        return patterns.spiral(case.shape[0], xp=xp)
    if case.pattern == "blobs":
        return patterns.blobs(case.shape, xp=xp)
    if case.pattern == "percolation":
        return patterns.percolation(case.shape, case.p, xp=xp)
    if case.pattern == "potts":
        return patterns.potts(case.shape, q=4, xp=xp)
    raise ValueError(case.pattern)


class ArrayCache:
    """Holds the last generated array, so the c1 and cN variants of a
    pattern (same array unless it is percolation) are generated once."""

    def __init__(self, xp):
        self.xp, self.key, self.value = xp, None, None

    def get(self, case):
        key = (case.pattern, case.shape, case.p)
        if key != self.key:
            self.key, self.value = None, None  # free the old one first
            self.value = generate(case, self.xp)
            self.key = key
        return self.value


# --------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------

def time_gpu(fn, min_runs=20, min_time=1.0, warmup=2):
    """Median seconds of ``fn()`` on the device: CUDA events around each call,
    after ``warmup`` calls; at least ``min_runs`` calls and ``min_time``
    seconds (capped at GPU_MAX_RUNS calls, and at 10 * min_time seconds
    once min_runs is reached)."""
    import cupy

    for _ in range(warmup):
        fn()
    cupy.cuda.Device().synchronize()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    total = 0.0
    while True:
        n = len(times)
        if n >= GPU_MAX_RUNS:
            break
        if n >= min_runs and total >= min_time:
            break
        if total >= 10 * min_time and n >= min(min_runs, 3):
            break
        start.record()
        fn()
        end.record()
        end.synchronize()
        t = cupy.cuda.get_elapsed_time(start, end) / 1e3
        times.append(t)
        total += t
    return statistics.median(times), len(times)


def time_cpu(fn, repeat=7, budget_s=CPU_BUDGET_S):
    """Median wall seconds of ``fn()`` over ``repeat`` calls, fewer (but at
    least 3) once the calls add up to ``budget_s``, one when a call takes
    more than CPU_SLOW_S.  A median of 7 keeps the odd slow call (on a
    shared VM, up to 3-5x) out of fast cases' numbers.
    Returns (seconds, runs, last output)."""
    times, out = [], None
    while len(times) < repeat:
        out = None
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        if times[-1] > CPU_SLOW_S or (len(times) >= 3 and sum(times) > budget_s):
            break
    return statistics.median(times), len(times), out


def time_latency(fn, sync, loops=5, budget_s=0.2):
    """Wall seconds per call: perf_counter around N calls and one sync, / N.
    N is chosen so one loop takes about ``budget_s``; median of ``loops``."""
    fn()
    fn()
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    one = max(time.perf_counter() - t0, 1e-6)
    n = int(min(1000, max(5, budget_s / one)))
    per_call = []
    for _ in range(loops):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        per_call.append((time.perf_counter() - t0) / n)
    return statistics.median(per_call), n


def measure_copy_bandwidth(nbytes=COPY_BYTES, runs=20):
    """Device copy bandwidth in bytes/s, counting bytes read + written."""
    import cupy

    def time_copy():
        src = cupy.ones(nbytes, dtype=cupy.uint8)
        dst = cupy.empty_like(src)
        stream = cupy.cuda.get_current_stream()
        return time_gpu(lambda: dst.data.copy_from_device_async(src.data, nbytes, stream),
                        min_runs=runs, min_time=0.1, warmup=3)[0]

    seconds = time_copy()
    cupy.get_default_memory_pool().free_all_blocks()
    return 2 * nbytes / seconds, seconds


# --------------------------------------------------------------------------
# Correctness
# --------------------------------------------------------------------------

def compare(xp, ref, ref_count, labels, count):
    """'identical', 'same partition' or 'MISMATCH (...)' for ``labels``
    (count ``count``) against the dense reference ``ref`` (1..ref_count)."""
    if count is None or int(count) != int(ref_count):
        return f"MISMATCH (count {count} vs {ref_count})"
    ref = ref.reshape(-1)
    labels = labels.reshape(-1)
    if ref.shape != labels.shape:
        return f"MISMATCH (shape {labels.shape} vs {ref.shape})"
    if bool(xp.array_equal(ref, labels)):
        return "identical"
    # Same partition iff every reference component maps to one label, the map
    # sends background to background and is one-to-one on components.
    m = xp.full(int(ref_count) + 1, -1, dtype=xp.int64)
    m[ref] = labels.astype(xp.int64)
    if not bool(xp.array_equal(m[ref], labels)):
        return "MISMATCH (labels differ within a component)"
    if bool((ref == 0).any()) and int(m[0]) != 0:
        return "MISMATCH (background differs)"
    comp = m[1:]
    if ref_count and (not bool((comp > 0).all()) or int(xp.unique(comp).size) != int(ref_count)):
        return "MISMATCH (components merged or background labelled)"
    return "same partition"


def strict(check):
    """meshccl must match meshccl / skimage value for value."""
    if check == "same partition":
        return "MISMATCH (same partition, different numbering)"
    return check


# --------------------------------------------------------------------------
# Tools
# --------------------------------------------------------------------------

@dataclass
class Tool:
    """One labeller.  ``label(x, case) -> (labels, count)`` is called once for
    the check; ``timed(x, case)`` is what is timed (defaults to ``label``);
    ``prepare(x, case)`` converts the case array to the tool's input format
    outside the timed region; ``supports(case)`` returns None or why 'n/a'."""
    name: str
    device: str                     # 'gpu' or 'cpu'
    label: object
    supports: object = None
    timed: object = None
    prepare: object = None
    api: str = ""
    version: str = ""

    def why_not(self, case):
        return self.supports(case) if self.supports else None

    def timed_call(self, x, case):
        return (self.timed or self.label)(x, case)

    def prepared(self, x, case):
        return self.prepare(x, case) if self.prepare else x


def _version(dist, module=None):
    try:
        return importlib.metadata.version(dist)
    except Exception:
        return str(getattr(module, "__version__", "?"))


def _binary_only(case):
    return "binary tools label non-zero cells, not equal values" if case.multi else None


def _structure(case):
    """scipy's structuring element for the case's connectivity (cached, so
    building it costs nothing inside the timed calls)."""
    return _structure_for(case.ndim, case.connectivity)


@functools.lru_cache(maxsize=None)
def _structure_for(ndim, connectivity):
    from scipy import ndimage

    return ndimage.generate_binary_structure(ndim, connectivity)


def _has_params(fn, names):
    """True when ``fn`` visibly accepts all ``names`` (True if unknowable)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return True
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        return True
    return all(n in params for n in names)


def _public(module):
    return ", ".join(n for n in dir(module) if not n.startswith("_"))


def gpu_tools():
    """The GPU tools that import and answer a tiny probe; (tools, skipped)."""
    import cupy

    tools, skipped = [], {}
    probe2 = cupy.asarray([[1, 1, 0, 0], [0, 0, 0, 1], [0, 1, 1, 1], [0, 0, 0, 0]], dtype=cupy.uint8)

    tools.append(Tool(
        "meshccl GPU", "gpu",
        label=lambda x, c: meshccl.label(x, connectivity=c.connectivity, return_num=True),
        timed=lambda x, c: meshccl.label(x, connectivity=c.connectivity),
        api="meshccl.label(x, connectivity=c)", version=meshccl.__version__))

    try:
        from cupyx.scipy import ndimage as cndi

        tools.append(Tool(
            "cupyx", "gpu",
            label=lambda x, c: cndi.label(x, _structure(c)),
            supports=_binary_only,
            api="cupyx.scipy.ndimage.label(x, generate_binary_structure(ndim, c))",
            version=cupy.__version__))
    except Exception as e:
        skipped["cupyx"] = f"import failed: {e!r}"

    try:
        import cucim
        from cucim.skimage.measure import label as cucim_label

        cucim_label(probe2, connectivity=1, return_num=True)
        ver = next((v for v in (_version(d) for d in ("cucim-cu13", "cucim-cu12", "cucim")) if v != "?"),
                   str(getattr(cucim, "__version__", "?")))
        tools.append(Tool(
            "cuCIM", "gpu",
            label=lambda x, c: cucim_label(x, connectivity=c.connectivity, return_num=True),
            api="cucim.skimage.measure.label(x, connectivity=c)", version=ver))
    except Exception as e:
        skipped["cuCIM"] = f"not usable: {e!r}"

    tools.extend(_bkeccl_tools(skipped, probe2))
    tools.extend(_colorcc_tools(skipped, probe2))
    return tools, skipped


def _bkeccl_tools(skipped, probe2):
    """bkeccl.ccl(x, dimensionality='2D'|'3D', output_mode='dense'|'raw'):
    BKE, binary, 8-/26-connectivity only."""
    try:
        import bkeccl
    except Exception as e:
        skipped["bkeccl"] = skipped["bkeccl raw"] = f"import failed: {e!r}"
        return []
    ccl = getattr(bkeccl, "ccl", None)
    if ccl is None or not _has_params(ccl, ("dimensionality", "output_mode")):
        why = f"API not recognised (no ccl(x, dimensionality=, output_mode=)); public names: {_public(bkeccl)}"
        skipped["bkeccl"] = skipped["bkeccl raw"] = why
        return []
    try:
        labels, count = ccl(probe2, dimensionality="2D")
        assert int(count) == 2 and labels.shape == probe2.shape
        ccl(probe2, dimensionality="2D", output_mode="raw")
    except Exception as e:
        skipped["bkeccl"] = skipped["bkeccl raw"] = f"probe failed: {e!r}"
        return []

    def supports(case):
        if case.multi:
            return "binary only"
        if case.ndim not in (2, 3):
            return "2-D / 3-D only"
        if case.connectivity != case.ndim:
            return "full connectivity only"
        return None

    def dense(x, c):
        labels, count = ccl(x, dimensionality=f"{c.ndim}D")
        return labels, int(count)

    def raw(x, c):
        import cupy

        labels = ccl(x, dimensionality=f"{c.ndim}D", output_mode="raw")
        u = cupy.unique(labels)
        return labels, int(u.size) - int(bool((u == 0).any()))

    ver = _version("bkeccl", bkeccl)
    return [
        Tool("bkeccl", "gpu", label=dense, supports=supports,
             timed=lambda x, c: ccl(x, dimensionality=f"{c.ndim}D"),
             api="bkeccl.ccl(x, dimensionality='2D'|'3D')", version=ver),
        Tool("bkeccl raw", "gpu", label=raw, supports=supports,
             timed=lambda x, c: ccl(x, dimensionality=f"{c.ndim}D", output_mode="raw"),
             api="bkeccl.ccl(x, dimensionality=..., output_mode='raw') (sparse labels)", version=ver),
    ]


def _colorcc_tools(skipped, probe2):
    """colorcc.label(rgb_torch_tensor, conn=4|8, ignore=(r, g, b) | None):
    exact-colour labelling of [H, W, 3] uint8 images (2-D only)."""
    try:
        import colorcc
        import torch
    except Exception as e:
        skipped["colorcc"] = f"import failed: {e!r}"
        return []
    fn = getattr(colorcc, "label", None)
    if fn is None or not _has_params(fn, ("conn", "ignore")):
        skipped["colorcc"] = f"API not recognised (no label(img, conn=, ignore=)); public names: {_public(colorcc)}"
        return []

    def to_rgb(x, c):
        import cupy

        rgb = cupy.zeros(x.shape + (3,), dtype=cupy.uint8)
        rgb[..., 0] = x
        return torch.from_dlpack(rgb)

    def label(t, c):
        import cupy

        labels, n = fn(t, conn=4 if c.connectivity == 1 else 8,
                       ignore=None if c.multi else (0, 0, 0))
        return cupy.from_dlpack(labels), int(n)

    def supports(case):
        return None if case.ndim == 2 else "2-D only"

    try:
        class _C:
            connectivity, multi = 1, False
        _, n = label(to_rgb(probe2, _C), _C)
        assert n == 2, f"probe counted {n} components, expected 2"
    except Exception as e:
        skipped["colorcc"] = f"probe failed: {e!r}"
        return []
    return [Tool("colorcc", "gpu", label=label, supports=supports, prepare=to_rgb,
                 api="colorcc.label(rgb, conn=4|8, ignore=(0,0,0) for binary) on the case packed into red",
                 version=_version("colorcc", colorcc))]


def cpu_tools(with_peers=True):
    """meshccl's CPU backend (serial, then on every numba thread) and
    (optionally) the CPU peers that import."""
    import numba

    tools, skipped = [], {}
    tools.append(Tool(
        "meshccl CPU", "cpu",
        label=lambda x, c: meshccl.label(x, connectivity=c.connectivity, return_num=True),
        api="meshccl.label(x, connectivity=c) on NumPy", version=meshccl.__version__))
    tools.append(Tool(
        "meshccl CPU threads", "cpu",
        label=lambda x, c: meshccl.label(x, connectivity=c.connectivity, cpu_threads=0, return_num=True),
        api=(f"meshccl.label(x, connectivity=c, cpu_threads=0) on NumPy, "
             f"{numba.config.NUMBA_NUM_THREADS} numba threads"),
        version=meshccl.__version__))
    if not with_peers:
        for name in CPU_PEERS:
            skipped[name] = "skipped: --no-cpu-peers"
        return tools, skipped

    try:
        import skimage
        from skimage.measure import label as sk_label

        tools.append(Tool(
            "skimage", "cpu",
            label=lambda x, c: sk_label(x, connectivity=c.connectivity, return_num=True),
            api="skimage.measure.label(x, connectivity=c)", version=skimage.__version__))
    except Exception as e:
        skipped["skimage"] = f"import failed: {e!r}"

    try:
        import scipy
        from scipy import ndimage

        tools.append(Tool(
            "scipy", "cpu",
            label=lambda x, c: ndimage.label(x, _structure(c)),
            supports=lambda c: ("binary only (per-value labelling is not comparable)"
                                if c.multi else None),
            api="scipy.ndimage.label(x, generate_binary_structure(ndim, c))",
            version=scipy.__version__))
    except Exception as e:
        skipped["scipy"] = f"import failed: {e!r}"

    try:
        import cv2

        def cv_label(x, c):
            n, labels = cv2.connectedComponents(x, connectivity=4 if c.connectivity == 1 else 8,
                                                ltype=cv2.CV_32S)
            return labels, int(n) - 1

        def cv_supports(c):
            if c.ndim != 2:
                return "2-D only"
            return "binary only" if c.multi else None

        tools.append(Tool("OpenCV", "cpu", label=cv_label, supports=cv_supports,
                          api=f"cv2.connectedComponents(x, 4|8, ltype=CV_32S), {cv2.getNumThreads()} threads",
                          version=cv2.__version__))
    except Exception as e:
        skipped["OpenCV"] = f"import failed: {e!r}"

    try:
        import cc3d

        neighbours = {(2, 1): 4, (2, 2): 8, (3, 1): 6, (3, 2): 18, (3, 3): 26}

        def cc3d_label(x, c):
            labels, n = cc3d.connected_components(
                x, connectivity=neighbours[(c.ndim, c.connectivity)], return_N=True)
            return labels, int(n)

        tools.append(Tool("cc3d", "cpu", label=cc3d_label,
                          supports=lambda c: None if (c.ndim, c.connectivity) in neighbours else "2-D / 3-D only",
                          api="cc3d.connected_components(x, connectivity=4|8|6|18|26, return_N=True)",
                          version=_version("connected-components-3d", cc3d)))
    except Exception as e:
        skipped["cc3d"] = f"import failed: {e!r}"
    return tools, skipped


# --------------------------------------------------------------------------
# Running one case
# --------------------------------------------------------------------------

def _error(e):
    return {"status": "error", "error": f"{type(e).__name__}: {e}",
            "traceback": traceback.format_exc(limit=4)}


def _ok(seconds, runs, count, case):
    return {"status": "ok", "seconds": seconds, "runs": runs,
            "cells_per_s": case.cells / seconds if seconds > 0 else None, "count": count}


def run_case(case, x_dev, x_host, gtools, ctools, skipped, args):
    """Times every tool on one case and checks its labels; returns {tool: result}."""
    res = {name: {"status": "skipped", "reason": why} for name, why in skipped.items()}
    gpu_ref = gpu_ref_count = gpu_host = None

    # --- GPU tools, meshccl first (it is the reference for the others)
    for tool in gtools:
        why = tool.why_not(case)
        if why:
            res[tool.name] = {"status": "n/a", "reason": why}
            continue
        try:
            import cupy

            x = tool.prepared(x_dev, case)
            seconds, runs = time_gpu(lambda: tool.timed_call(x, case), args.repeat, args.min_time)
            labels, count = tool.label(x, case)
            r = _ok(seconds, runs, int(count), case)
            if tool.name == "meshccl GPU":
                gpu_ref, gpu_ref_count = labels, int(count)
                r["check"] = "unchecked"
            elif gpu_ref is not None:
                r["check"] = compare(cupy, gpu_ref, gpu_ref_count, labels, count)
                r["reference"] = "meshccl GPU"
            else:
                r["check"] = "unchecked (no meshccl GPU labels)"
            labels = x = None  # free device memory before the next tool
        except Exception as e:
            r = _error(e)
        res[tool.name] = r
        log(f"  {tool.name:12s} {_fmt_result(r)}")
    if gpu_ref is not None:
        import cupy

        gpu_host = cupy.asnumpy(gpu_ref)
        del gpu_ref
        cupy.get_default_memory_pool().free_all_blocks()

    # --- CPU tools, meshccl CPU first
    ref, ref_count, ref_name = None, None, None
    if gpu_host is not None:
        ref, ref_count, ref_name = gpu_host, gpu_ref_count, "meshccl GPU"
    crop = np.ascontiguousarray(x_host[(slice(0, 32),) * x_host.ndim])
    # meshccl's threads label arrays under 2 * CPU_SLAB_MIN_CELLS serially: its
    # warm-up takes a crop of 4 * CPU_SLAB_MIN_CELLS or more, so that the slab
    # path is compiled before it is timed (a 32^d crop left numba's
    # compilation in the first timed call: 12.8 s, 2026-11-26)
    from meshccl import _tuning

    side = max(32, math.ceil((4 * _tuning.CPU_SLAB_MIN_CELLS) ** (1 / x_host.ndim)))
    big_crop = np.ascontiguousarray(x_host[(slice(0, side),) * x_host.ndim])
    for tool in ctools:
        why = tool.why_not(case)
        if why:
            res[tool.name] = {"status": "n/a", "reason": why}
            continue
        try:
            # warm-up: JIT compilation, first-call costs
            tool.label(big_crop if tool.name == "meshccl CPU threads" else crop, case)
            seconds, runs, out = time_cpu(lambda: tool.label(x_host, case), args.cpu_repeat)
            labels, count = out
            r = _ok(seconds, runs, int(count), case)
            if tool.name == "meshccl CPU":
                if gpu_host is not None:
                    res["meshccl GPU"]["check"] = strict(compare(np, labels, count, gpu_host, gpu_ref_count))
                    res["meshccl GPU"]["reference"] = "meshccl CPU"
                ref, ref_count, ref_name = labels, int(count), "meshccl CPU"
                r["check"] = "pending (against skimage)"
            elif tool.name == "meshccl CPU threads" and ref is not None:
                r["check"] = strict(compare(np, ref, ref_count, labels, count))
                r["reference"] = ref_name
            elif ref is not None:
                r["check"] = compare(np, ref, ref_count, labels, count)
                r["reference"] = ref_name
                if tool.name == "skimage":
                    # The drop-in contract: meshccl equals skimage value for value.
                    for mine in ("meshccl CPU", "meshccl GPU"):
                        m = res.get(mine, {})
                        if m.get("status") == "ok" and m.get("reference") is None:
                            m["check"] = strict(r["check"])
                            m["reference"] = "skimage"
            else:
                r["check"] = "unchecked (no meshccl labels)"
            out = labels = None
        except Exception as e:
            r = _error(e)
        res[tool.name] = r
        log(f"  {tool.name:12s} {_fmt_result(r)}")
    if res.get("meshccl GPU", {}).get("check") == "unchecked":
        res["meshccl GPU"]["check"] = "unchecked (no meshccl CPU / skimage labels)"
    if res.get("meshccl CPU", {}).get("check") == "pending (against skimage)":
        res["meshccl CPU"]["check"] = "unchecked (skimage not run)"
    return res


def _fmt_result(r):
    if r["status"] == "ok":
        return f"{fmt_ms(r['seconds']):>9s} ms  n={r['count']}  ({r['runs']} runs)  {r.get('check', '')}"
    return f"{r['status']}: {r.get('reason') or r.get('error')}"


# --------------------------------------------------------------------------
# Small-image latency
# --------------------------------------------------------------------------

def run_latency(use_gpu, gtools, ctools):
    """Per-call wall time of small blobs images, CuPy in/out (and NumPy)."""
    rows = []
    conn = LATENCY_CONNECTIVITY
    for side in LATENCY_SIDES:
        shape = (side, side)
        case = Case(f"blobs-{side}^2-c{conn}", "blobs", shape, conn)
        row = {"side": side, "shape": list(shape), "connectivity": conn, "tools": {}}
        funcs = []
        if use_gpu:
            import cupy

            x = patterns.blobs(shape, xp=cupy)
            sync = cupy.cuda.Device().synchronize
            by_name = {t.name: t for t in gtools}
            funcs.append(("meshccl GPU", lambda x=x: meshccl.label(x, connectivity=conn), sync))
            funcs.append(("meshccl GPU return_num",
                          lambda x=x: meshccl.label(x, connectivity=conn, return_num=True), sync))
            for name in ("cupyx", "cuCIM"):
                if name in by_name:
                    t = by_name[name]
                    funcs.append((name, lambda x=x, t=t: t.timed_call(x, case), sync))
        xh = patterns.blobs(shape, xp=np)
        for t in ctools:
            if t.name in CPU_MESHCCL + ("skimage",):
                funcs.append((t.name, lambda t=t: t.label(xh, case), lambda: None))
        for name, fn, sync in funcs:
            try:
                s, n = time_latency(fn, sync)
                row["tools"][name] = {"seconds": s, "calls": n}
                log(f"  latency {side:5d}^2 {name:24s} {s * 1e6:9.1f} us ({n} calls)")
            except Exception as e:
                row["tools"][name] = _error(e)
                log(f"  latency {side:5d}^2 {name:24s} error: {e!r}")
        rows.append(row)
    return rows


# --------------------------------------------------------------------------
# Machine information
# --------------------------------------------------------------------------

def _cuda_version(v):
    return f"{v // 1000}.{(v % 1000) // 10}"


def machine_info(use_gpu, gpu_reason):
    import numba

    info = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "command": " ".join(shlex.quote(a) for a in [sys.executable] + sys.argv),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "meshccl": {"version": meshccl.__version__, "path": os.path.dirname(meshccl.__file__),
                    "git": _git_state()},
        "numpy": np.__version__,
        "numba": {"version": numba.__version__, "threads": numba.config.NUMBA_NUM_THREADS},
        "gpu": None,
    }
    if not use_gpu:
        info["gpu_skipped"] = gpu_reason
        return info
    import cupy

    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"]
    info["gpu"] = {
        "name": name.decode() if isinstance(name, bytes) else str(name),
        "device_id": dev.id,
        "compute_capability": f"{props['major']}.{props['minor']}",
        "multiprocessors": props["multiProcessorCount"],
        "memory_bytes": props["totalGlobalMem"],
        "driver_version": _cuda_version(cupy.cuda.runtime.driverGetVersion()),
        "runtime_version": _cuda_version(cupy.cuda.runtime.runtimeGetVersion()),
        "cupy": cupy.__version__,
    }
    return info


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def _git_state():
    """The commit benchmarked: $MESHCCL_COMMIT when set (the device machine
    gets a copy of the working tree whose .git may be stale), else git's."""
    if os.environ.get("MESHCCL_COMMIT"):
        return os.environ["MESHCCL_COMMIT"]
    try:
        head = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return (head or "no commit") + (" (modified)" if dirty else "")
    except Exception:
        return "?"


# --------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------

def fmt3(value):
    """A number with 3 significant digits, without exponent: 0.0203, 1.51, 213, 1500."""
    if value <= 0 or not math.isfinite(value):
        return f"{value:g}"
    digits = 2 - int(math.floor(math.log10(value)))
    return f"{round(value, digits):.{max(digits, 0)}f}"


def fmt_ms(seconds):
    return fmt3(seconds * 1e3)


def fmt_us(seconds):
    return fmt3(seconds * 1e6)


def _cell(r):
    if r is None:
        return ""
    if r["status"] == "ok":
        mark = " ✗" if r.get("check", "").startswith("MISMATCH") else ""
        return fmt_ms(r["seconds"]) + mark
    return {"n/a": "n/a", "skipped": "skip", "error": "error"}.get(r["status"], r["status"])


def speedup(res):
    """(factor, peer): fastest correct GPU peer's time / meshccl GPU's time."""
    mine = res.get("meshccl GPU", {})
    if mine.get("status") != "ok":
        return None, None
    best = None
    for name in GPU_PEERS:
        r = res.get(name, {})
        if r.get("status") == "ok" and not r.get("check", "").startswith("MISMATCH"):
            if best is None or r["seconds"] < best[0]:
                best = (r["seconds"], name)
    if best is None:
        return None, None
    return best[0] / mine["seconds"], best[1]


def columns(results):
    """Tools that ran (or were n/a) in at least one case, in a fixed order."""
    used = set()
    for case in results["cases"]:
        for name, r in case["tools"].items():
            if r["status"] != "skipped":
                used.add(name)
    return [t for t in GPU_TOOLS + CPU_TOOLS if t in used]


def markdown(results):
    m = results["machine"]
    gpu = m["gpu"]
    if gpu:
        machine = (f"{gpu['name']} (driver {gpu['driver_version']}, CUDA runtime "
                   f"{gpu['runtime_version']}, CuPy {gpu['cupy']})")
    else:
        machine = f"no GPU ({m.get('gpu_skipped')})"
    numba_info = m.get("numba")
    threads = f", {numba_info['threads']} numba threads" if numba_info else ""
    lines = [
        "# meshccl benchmark",
        "",
        f"Machine: {machine}; host {m['cpu_count']} CPUs ({m['cpu_model']}){threads}. "
        f"Date: {m['date_utc']}. meshccl {m['meshccl']['version']} at {m['meshccl']['git']}. "
        f"Command: `{m['command']}`",
        "",
    ]
    bw = results.get("copy_bandwidth_bytes_per_s")
    if bw:
        lines.append(f"Device copy bandwidth (1 GiB D2D memcpy, read + write): {bw / 1e12:.2f} TB/s. "
                     "Floor = (1 + 4 bytes per cell) / that bandwidth.")
        lines.append("")
    cols = columns(results)
    lines.append("Median time per call in ms (GPU: CUDA events; CPU: wall clock). "
                 "✗ = labels MISMATCH; n/a = the tool does not do this case.")
    lines.append("")
    with_speedup = any(speedup(c["tools"])[0] for c in results["cases"])
    head = ["case", "floor"] + cols + (["meshccl vs fastest GPU peer"] if with_speedup else [])
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
    for case in results["cases"]:
        res = case["tools"]
        floor = fmt_ms(case["floor_s"]) if case.get("floor_s") else "n/a"
        factor, peer = speedup(res)
        sp = f"{factor:.2f}× ({peer})" if factor else ""
        row = [case["name"], floor] + [_cell(res.get(t)) for t in cols] + ([sp] if with_speedup else [])
        lines.append("| " + " | ".join(row) + " |")

    lines += ["", "## Correctness", "",
              "Against meshccl (meshccl GPU and meshccl CPU threads against meshccl CPU, "
              "meshccl CPU against skimage: all must be identical). Counts must agree.", ""]
    lines.append("| case | " + " | ".join(cols) + " |")
    lines.append("|" + "|".join(["---"] * (len(cols) + 1)) + "|")
    for case in results["cases"]:
        res = case["tools"]
        cells = []
        for t in cols:
            r = res.get(t, {})
            if r.get("status") == "ok":
                cells.append(r.get("check", ""))
            else:
                cells.append(r.get("status", ""))
        lines.append(f"| {case['name']} | " + " | ".join(cells) + " |")

    lat = results.get("latency") or []
    if lat:
        names = []
        for row in lat:
            names += [n for n in row["tools"] if n not in names]
        lines += ["", f"## Small-image latency (blobs, connectivity {LATENCY_CONNECTIVITY})", "",
                  "Wall time per call in µs: perf_counter around N calls in a Python loop, "
                  "then one device synchronise, / N (median of 5 loops). "
                  "GPU tools take and return CuPy arrays; 'meshccl GPU' does not wait for the "
                  "device, 'return_num' does (as cupyx does).", ""]
        lines.append("| size | " + " | ".join(names) + " |")
        lines.append("|---|" + "|".join(["---:"] * len(names)) + "|")
        for row in lat:
            cells = []
            for n in names:
                r = row["tools"].get(n)
                cells.append(fmt_us(r["seconds"]) if r and "seconds" in r else ("error" if r else ""))
            lines.append(f"| {row['side']}² | " + " | ".join(cells) + " |")

    skipped = results.get("skipped_tools") or {}
    if skipped:
        lines += ["", "## Tools not run", ""]
        for name, why in skipped.items():
            lines.append(f"- {name}: {why}")
    failures = results.get("failures") or []
    if failures:
        lines += ["", "## meshccl failures", ""]
        lines += [f"- {f}" for f in failures]
    return "\n".join(lines) + "\n"


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = results["cases"]
    cols = [t for t in columns(results)]
    markers = "o s ^ v D P X * h < > p".split()
    colours = plt.get_cmap("tab20").colors
    fig, ax = plt.subplots(figsize=(max(8, 0.8 * len(cases) + 3), 6))
    xs = np.arange(len(cases))
    width = 0.6
    for i, t in enumerate(cols):
        off = (i - (len(cols) - 1) / 2) * width / max(len(cols), 1)
        px, py = [], []
        for j, case in enumerate(cases):
            r = case["tools"].get(t, {})
            if r.get("status") == "ok" and r.get("cells_per_s"):
                px.append(j + off)
                py.append(r["cells_per_s"])
        if px:
            filled = t in GPU_TOOLS
            ax.plot(px, py, linestyle="none", marker=markers[i % len(markers)], markersize=7,
                    color=colours[(2 * i) % 20 + (i >= 10)], label=t,
                    fillstyle="full" if filled else "none")
    floor_drawn = False
    for j, case in enumerate(cases):
        if case.get("floor_s"):
            ax.hlines(case["cells"] / case["floor_s"], j - 0.45, j + 0.45, colors="k",
                      linestyles="--", label=None if floor_drawn else "floor (copy bandwidth)")
            floor_drawn = True
    ax.set_yscale("log")
    ax.set_xticks(xs)
    ax.set_xticklabels([c["name"] for c in cases], rotation=45, ha="right")
    ax.set_ylabel("throughput (cells / s)")
    gpu = results["machine"]["gpu"]
    ax.set_title(f"Connected-component labelling throughput — {gpu['name'] if gpu else 'CPU only'}")
    ax.grid(True, which="both", axis="y", alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=9)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------

def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="directory for bench.json, bench.md, bench.png (required)")
    ap.add_argument("--quick", action="store_true", help="every side / 4 (1024^2, 128^3, ...): a smoke run")
    ap.add_argument("--cases", default="",
                    help="comma-separated case names, shell patterns or prefixes (e.g. spiral,blobs-*-c1)")
    ap.add_argument("--list-cases", action="store_true", help="print the case names and exit")
    ap.add_argument("--repeat", type=int, default=20,
                    help="minimum timed calls per GPU tool (default 20)")
    ap.add_argument("--cpu-repeat", type=int, default=7,
                    help="timed calls per CPU tool and case (default 7; at least 3 once they "
                         f"add up to {CPU_BUDGET_S:g} s, one above {CPU_SLOW_S:g} s a call)")
    ap.add_argument("--min-time", type=float, default=1.0,
                    help="minimum total timed seconds per GPU tool and case (default 1)")
    ap.add_argument("--cpu-peers", action=argparse.BooleanOptionalAction, default=True,
                    help="time skimage, scipy, OpenCV and cc3d on the host (default on)")
    ap.add_argument("--latency", action=argparse.BooleanOptionalAction, default=True,
                    help="measure small-image latency (default on)")
    ap.add_argument("--no-gpu", action="store_true",
                    help="skip every GPU tool (CPU-only smoke run; also automatic without a GPU)")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    if args.cpu_repeat < 1:
        ap.error("--cpu-repeat must be >= 1")
    if not args.out and not args.list_cases:
        ap.error("--out DIR is required")
    return args


def main(argv=None):
    args = parse_args(argv)
    cases = select_cases(standard_cases(args.quick), args.cases)
    if args.list_cases:
        print("\n".join(c.name for c in cases))
        return 0
    os.makedirs(args.out, exist_ok=True)

    if args.no_gpu:
        use_gpu, gpu_reason = False, "--no-gpu"
    elif meshccl.gpu_available():
        use_gpu, gpu_reason = True, None
    else:
        use_gpu, gpu_reason = False, "CuPy missing or no CUDA device"
        log(f"warning: {gpu_reason}; running the CPU tools only")

    results = {"machine": machine_info(use_gpu, gpu_reason), "cases": [], "skipped_tools": {},
               "failures": []}
    log(f"meshccl benchmark: {len(cases)} cases, GPU {'on' if use_gpu else 'off (' + gpu_reason + ')'}")

    gtools, skipped = [], {}
    if use_gpu:
        import cupy

        xp = cupy
        bw, t = measure_copy_bandwidth()
        results["copy_bandwidth_bytes_per_s"] = bw
        results["copy_bandwidth_probe"] = {"bytes": COPY_BYTES, "median_s": t,
                                           "method": "cudaMemcpyAsync D2D, CUDA events; 2 * bytes / time"}
        log(f"device copy bandwidth: {bw / 1e12:.2f} TB/s (read + write)")
        gtools, skipped = gpu_tools()
    else:
        xp = np
        results["copy_bandwidth_bytes_per_s"] = None
        for name in GPU_TOOLS:
            skipped[name] = f"skipped: {gpu_reason}"
    ctools, cskipped = cpu_tools(args.cpu_peers)
    skipped.update(cskipped)
    results["skipped_tools"] = skipped
    results["tools"] = {t.name: {"device": t.device, "api": t.api, "version": t.version}
                        for t in gtools + ctools}
    for name, why in skipped.items():
        log(f"  not run: {name}: {why}")

    cache = ArrayCache(xp)
    bw = results["copy_bandwidth_bytes_per_s"]
    for case in cases:
        log(f"case {case.name} ({case.cells:,} cells)")
        t0 = time.perf_counter()
        x = cache.get(case)
        x_dev = x if use_gpu else None
        x_host = xp.asnumpy(x) if use_gpu else x
        entry = {
            "name": case.name, "pattern": case.pattern, "shape": list(case.shape),
            "connectivity": case.connectivity, "multi_valued": case.multi,
            "percolation_p": case.p, "cells": case.cells,
            "foreground_fraction": float(np.count_nonzero(x_host)) / case.cells,
            "floor_s": case.cells * 5 / bw if bw else None,
        }
        entry["tools"] = run_case(case, x_dev, x_host, gtools, ctools, skipped, args)
        entry["wall_s"] = time.perf_counter() - t0
        results["cases"].append(entry)
        for name in MESHCCL_TOOLS:
            r = entry["tools"].get(name, {})
            if r.get("status") == "error":
                results["failures"].append(f"{case.name}: {name} error: {r['error']}")
            elif r.get("check", "").startswith("MISMATCH"):
                results["failures"].append(f"{case.name}: {name} {r['check']} (vs {r.get('reference')})")
        del x_host, x_dev, x
        if use_gpu:
            xp.get_default_memory_pool().free_all_blocks()
    cache = None

    if args.latency:
        log("small-image latency")
        results["latency"] = run_latency(use_gpu, gtools, ctools)

    with open(os.path.join(args.out, "bench.json"), "w") as f:
        json.dump(results, f, indent=1, default=_json_default)
    md = markdown(results)
    with open(os.path.join(args.out, "bench.md"), "w") as f:
        f.write(md)
    try:
        plot(results, os.path.join(args.out, "bench.png"))
    except Exception as e:
        log(f"plot failed: {e!r}")
    print(md)
    if results["failures"]:
        log("meshccl FAILED:\n  " + "\n  ".join(results["failures"]))
        return 1
    return 0


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


if __name__ == "__main__":
    sys.exit(main())
