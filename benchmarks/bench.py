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
* **Peak device memory** of every GPU tool on every case (``--no-memory``:
  not measured): one more call after the timed ones, under a CuPy memory
  hook (:class:`meshccl._gpu.timing.PeakMemory`) that counts the bytes the call takes from
  CuPy's pool and gives back, from the call's start -- the pool's cached
  blocks and the input are not counted, the label output is, and so is
  the scratch a meshccl launch plan keeps (the call builds its plan anew).  Recorded with
  the output's bytes and the ratio of the two; a tool whose output is not
  memory of CuPy's pool (another allocator) is reported without a number.
* **CPU tools** on a NumPy copy: meshccl.label (CPU backend) serially and
  on every core (``cpu_threads=0``; the thread count is recorded), and as peers
  skimage.measure.label, scipy.ndimage.label, cv2.connectedComponents and
  cc3d.connected_components.  Each is warmed up on a small crop (first-call
  costs), then timed with ``time.perf_counter``: the median of
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

More case sets (issues 45 and 56), chosen with ``--sets`` (default: standard only):

* **shapes** (:func:`shape_cases`): tall and wide 2-D arrays (2^21 x 32 blobs
  and its transpose, 1 000 000 x 64 site percolation at the threshold and its
  transpose), sizes that are no multiple of a tile (4999 x 3001, 301 x 509 x
  613, percolation at the threshold), 4-D 64^4 (blobs at connectivity 1 and
  4, percolation near the threshold of each), a multi-valued uint16 volume
  (256^3, 40 values) and thin slabs (4 x 4096 x 4096, 4096 x 4096 x 4,
  blobs).  The same GPU tools, timing and checks as the standard cases; the
  floor counts the input's bytes (2 for uint16); a second floor counts a read
  of every neighbour (80 in 4-D at connectivity 4); meshccl is compared with
  the fastest GPU peer whose labels are dense (1..N).  meshccl CPU (serial) is
  the reference; the CPU peers run only on cases of at most
  ``--cpu-peer-cells`` cells.  Writes bench-shapes.json/.md/.png.
* **lattice** (:func:`lattice_cases`): random spins at half filling, 4096^2
  and 256^3, connectivity 1, background -1: the plain call, then periodic
  (all axes, axis 0, the last axis), bonds, periodic + bonds,
  Swendsen-Wang bonds, two masks, a tolerance on a float field (against the
  plain call on that field) and axes=(1, 2) batches, each against the plain
  call on the same array; labels identical to meshccl CPU's.  Writes
  bench-lattice.json/.md/.png.
* **memory** (:func:`memory_cases`, issue 56): site percolation at the
  threshold, 1024^3 at connectivity 1 and 3 and 16384^2 at connectivity 2
  (uint8): every GPU tool's peak device memory and time, meshccl CPU
  (serial) as the reference, no CPU peer; then every form of meshccl call
  (:data:`MEMORY_CALLS`, cases ``call-*``: plain 2-D / 3-D, bool, Potts,
  int32 values, first-cell labels, counts, statistics, ``return_info``,
  other output dtypes, ``axes``, 4-D, a structure) at 4096^2 / 256^3 /
  64^4, meshccl GPU only, with the largest blocks held at each call's peak
  and where they were allocated, checked against meshccl CPU (every core).
  Writes bench-memory.json/.md/.png (the peak ÷ label output per tool and
  case).

For these sets ``--min-time`` defaults to 0.5 s and ``--cpu-repeat`` to 1
(the CPU calls are the reference, not the subject).

Outputs (in ``--out DIR``): ``bench.json`` (machine, versions, command line,
every number), ``bench.md`` (tables; also printed to stdout at the end) and
``bench.png`` (throughput per case on a log axis, with the floor); the other
sets' ``bench-<set>.*`` likewise.

Usage::

    python benchmarks/bench.py --out out/bench            # full run (GPU machine)
    python benchmarks/bench.py --out /tmp/b --quick       # smaller sizes
    python benchmarks/bench.py --out /tmp/b --quick --no-gpu   # CPU-only smoke run
    python benchmarks/bench.py --out /tmp/b --cases spiral,potts4-4096^2-c1
    python benchmarks/bench.py --out out/bench --sets shapes,lattice   # the issue-45 sets
    python benchmarks/bench.py --out /tmp/b --sets shapes,lattice --shrink 256 --no-gpu  # tiny
    python benchmarks/bench.py --out out/bench --sets memory   # issue 56's peak memory cases
"""

from __future__ import annotations

import argparse
import dataclasses
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
from meshccl._gpu.timing import PeakMemory  # noqa: E402
from meshccl.neighbourhood import half_neighbourhood_size, half_offsets  # noqa: E402

CPU_SLOW_S = 5.0          # a CPU call slower than this is timed once
CPU_BUDGET_S = 4.0        # CPU calls of one tool and case stop (after 3) once they add up to this
GPU_MAX_RUNS = 2000       # cap on timed GPU calls per tool and case
COPY_BYTES = 1 << 30      # size of the bandwidth probe (1 GiB)
LATENCY_SIDES = (64, 256, 512, 1024)
LATENCY_CONNECTIVITY = 1  # cupyx's default structure

GPU_TOOLS = ("meshccl GPU", "meshccl first-cell", "cupyx", "cuCIM", "bkeccl", "bkeccl raw",
             "colorcc")
CPU_MESHCCL = ("meshccl CPU", "meshccl CPU threads")
CPU_PEERS = ("skimage", "scipy", "OpenCV", "cc3d")
CPU_TOOLS = CPU_MESHCCL + CPU_PEERS
GPU_PEERS = tuple(t for t in GPU_TOOLS if not t.startswith("meshccl"))
MESHCCL_TOOLS = ("meshccl GPU",) + CPU_MESHCCL


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------

class _Shaped:
    """``ndim`` and ``cells`` of a case with a ``shape``."""

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def cells(self):
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass
class Case(_Shaped):
    name: str
    pattern: str            # 'spiral', 'blobs', 'percolation', 'potts', 'levels'
    shape: tuple
    connectivity: int
    multi: bool = False     # multi-valued (equal-value labelling), no background
    p: float | None = None  # percolation probability
    sigma: float | None = None   # blobs / levels: smoothing width (None: the pattern's default)
    q: int | None = None         # levels: number of values
    dtype: str = "uint8"         # the array's dtype
    transpose: bool = False      # the transpose of the array of shape[::-1]

    @property
    def itemsize(self):
        return np.dtype(self.dtype).itemsize

    @property
    def neighbours(self):
        """Cells in the full neighbourhood at this connectivity (4, 8, 6, 26, ..., 80)."""
        return 2 * half_neighbourhood_size(self.ndim, self.connectivity)


def _shape_name(shape):
    return f"{shape[0]}^{len(shape)}" if len(set(shape)) == 1 else "x".join(map(str, shape))


def standard_cases(quick=False, shrink=None):
    """The cases of DESIGN.md section 4, each at connectivity 1 and ndim.
    Every side is divided by ``shrink`` (4 with ``quick``)."""
    k = shrink or (4 if quick else 1)
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


#: Site-percolation threshold of the 4-D hypercubic lattice, nearest
#: neighbours (connectivity 1): about 0.1969 (published Monte Carlo estimates,
#: e.g. Paul, Ziff and Stanley 2001, agree to these digits).
PERCOLATION_4D_C1 = 0.1969
#: Near the threshold with all 80 neighbours (connectivity 4): not a measured
#: value, the large-z form p_c ~ 1 - exp(-16 eta_c / z), 16 eta_c = 2.086, of
#: Xun, Hao and Ziff (arXiv:2109.11195) at z = 80.  At 64^4 (NumPy seed 0) the
#: largest cluster has 602 cells at p = 0.022, 39435 here, 284648 at 0.03.
PERCOLATION_4D_C4 = round(1 - math.exp(-2.086 / 80), 4)
#: The case sets of ``--sets``, in the order they run.
SETS = ("standard", "shapes", "lattice", "memory")


def _div(side, k, lo=8):
    """``side`` divided by the shrink factor ``k``, at least ``lo``; an odd
    side stays odd (the odd sizes are the point of those cases)."""
    if k == 1:
        return side
    out = max(lo, side // k)
    return out | 1 if side % 2 else out


def shape_cases(shrink=1):
    """The 'shapes' set (issue 45, point 2): tall and wide 2-D arrays, sizes
    that are no multiple of a tile, 4-D, a multi-valued uint16 volume and
    thin 3-D slabs.  Long sides are divided by ``shrink`` (thin axes -- 32,
    64, 4 -- keep their length, odd sides stay odd).  The generators are
    described by :func:`generator_text`."""
    d = functools.partial(_div, k=shrink)
    tall, rows = d(1 << 21), d(1_000_000)
    specs = [
        # (pattern, shape, connectivities, Case keywords)
        ("blobs", (tall, 32), (1, 2), dict(sigma=4.0)),
        ("blobs", (32, tall), (1, 2), dict(sigma=4.0, transpose=True)),
        ("percolation", (rows, 64), (1, 2), {}),
        ("percolation", (64, rows), (1, 2), dict(transpose=True)),
        ("percolation", (d(4999), d(3001)), (1, 2), {}),
        ("percolation", (d(301), d(509), d(613)), (1, 3), {}),
        ("blobs", (d(64),) * 4, (1, 4), dict(sigma=2.0)),
        ("percolation", (d(64),) * 4, (1, 4), {}),
        ("levels", (d(256),) * 3, (1, 3), dict(q=40, sigma=2.0, dtype="uint16", multi=True)),
        ("blobs", (4, d(4096), d(4096)), (1, 3), dict(sigma=2.0)),
        ("blobs", (d(4096), d(4096), 4), (1, 3), dict(sigma=2.0)),
    ]
    cases = []
    for pattern, shape, conns, kw in specs:
        ndim = len(shape)
        for conn in conns:
            p = None
            if pattern == "percolation":
                p = ({1: PERCOLATION_4D_C1, 4: PERCOLATION_4D_C4}[conn] if ndim == 4
                     else patterns.PERCOLATION_THRESHOLD[(ndim, conn)])
            label = f"levels{kw['q']}u16" if pattern == "levels" else pattern
            cases.append(Case(f"{label}-{_shape_name(shape)}-c{conn}", pattern, shape, conn, p=p, **kw))
    return cases


def memory_cases(shrink=1):
    """The 'memory' set (issue 56, point 9): the three cases whose peak
    device memory the issue quotes -- site percolation at the threshold,
    1024^3 at connectivity 1 and 3 and 16384^2 at connectivity 2, uint8 as
    the standard cases.  Sides / ``shrink``."""
    d = functools.partial(_div, k=shrink)
    specs = [((d(1024),) * 3, 1), ((d(1024),) * 3, 3), ((d(16384),) * 2, 2)]
    return [Case(f"percolation-{_shape_name(shape)}-c{conn}", "percolation", shape, conn,
                 p=patterns.PERCOLATION_THRESHOLD[(len(shape), conn)])
            for shape, conn in specs]


#: The call forms of the memory set (issue 56, point 9), each measured for
#: meshccl GPU only (the forms a recent change concerns first, so that a
#: run cut short has them): (name, pattern, shape (at shrink 1), connectivity,
#: input dtype, what the call does, keyword arguments).  'structure':
#: meshccl.ndimage.label with a structure no connectivity names (the row
#: table chain); every other form is meshccl.label.  The lattice features
#: (periodic axes, masks, bonds, tolerance, stacks) are measured by the
#: lattice set.
MEMORY_CALLS = (
    ("plain-2d-c1", "percolation", (4096, 4096), 1, "uint8", "plain", {}),
    ("bool-2d-c1", "percolation", (4096, 4096), 1, "bool", "bool input", {}),
    ("bool-3d-c1", "percolation", (256, 256, 256), 1, "bool", "bool input", {}),
    ("counts-2d-c1", "percolation", (4096, 4096), 1, "uint8", "return_counts=True",
     {"return_counts": True}),
    ("counts-3d-c1", "percolation", (256, 256, 256), 1, "uint8", "return_counts=True",
     {"return_counts": True}),
    ("plain-3d-c1", "percolation", (256, 256, 256), 1, "uint8", "plain", {}),
    ("4d-bool-c1", "percolation", (64, 64, 64, 64), 1, "bool", "4-D bool (the row-table chain)",
     {}),
    ("bool-periodic-2d-c1", "percolation", (4096, 4096), 1, "bool", "bool input, periodic=True",
     {"periodic": True}),
    ("bool-periodic-3d-c1", "percolation", (256, 256, 256), 1, "bool",
     "bool input, periodic=True", {"periodic": True}),
    ("bool-bg1-4d-c1", "percolation", (64, 64, 64, 64), 1, "bool",
     "4-D bool, background=1 (the row-table chain)", {"background": 1}),
    ("structure-3d", "percolation", (256, 256, 256), 1, "bool",
     "ndimage.label, a structure of the 6 faces and the 4 in-plane diagonals (row-table chain)",
     {"structure": "faces+xy-diagonals"}),
    ("statistics-2d-c1", "percolation", (4096, 4096), 1, "uint8", "return_statistics=True",
     {"return_statistics": True}),
    ("statistics-3d-c1", "percolation", (256, 256, 256), 1, "uint8", "return_statistics=True",
     {"return_statistics": True}),
    ("plain-2d-c2", "percolation", (4096, 4096), 2, "uint8", "plain", {}),
    ("plain-3d-c3", "percolation", (256, 256, 256), 3, "uint8", "plain", {}),
    ("potts4-2d-c1", "potts", (4096, 4096), 1, "uint8", "4 values, equal-value labelling", {}),
    ("potts4-3d-c1", "potts", (256, 256, 256), 1, "uint8", "4 values, equal-value labelling", {}),
    ("potts4-i32-2d-c1", "potts", (4096, 4096), 1, "int32", "int32 values", {}),
    ("first-cell-2d-c1", "percolation", (4096, 4096), 1, "uint8", "numbering='first-cell'",
     {"numbering": "first-cell"}),
    ("first-cell-3d-c1", "percolation", (256, 256, 256), 1, "uint8", "numbering='first-cell'",
     {"numbering": "first-cell"}),
    ("info-2d-c1", "percolation", (4096, 4096), 1, "uint8", "return_info=True (no plan)",
     {"return_info": True}),
    ("info-3d-c1", "percolation", (256, 256, 256), 1, "uint8", "return_info=True (no plan)",
     {"return_info": True}),
    ("int64-out-2d-c1", "percolation", (4096, 4096), 1, "uint8", "dtype=int64",
     {"dtype": "int64"}),
    ("uint32-out-2d-c1", "percolation", (4096, 4096), 1, "uint8", "dtype=uint32",
     {"dtype": "uint32"}),
    ("axes-02-3d-c1", "percolation", (256, 256, 256), 1, "uint8",
     "axes=(0, 2) (the general chain)", {"axes": (0, 2)}),
    ("4d-c1", "percolation", (64, 64, 64, 64), 1, "uint8", "4-D uint8 (the general chain)", {}),
    ("4d-c4", "percolation", (64, 64, 64, 64), 4, "uint8", "4-D uint8 (the general chain)", {}),
)


@dataclass
class MemoryCall(_Shaped):
    """A call form of the memory set (:data:`MEMORY_CALLS`)."""

    name: str          # 'call-counts-2d-c1'
    pattern: str
    shape: tuple
    connectivity: int
    dtype: str
    call: str          # in words
    kw: dict

    @property
    def array_case(self):
        """The :class:`Case` whose array the call labels."""
        ndim = self.ndim
        p = None
        if self.pattern == "percolation":
            p = ({1: PERCOLATION_4D_C1, 4: PERCOLATION_4D_C4}[self.connectivity] if ndim == 4
                 else patterns.PERCOLATION_THRESHOLD[(ndim, self.connectivity)])
        return Case(self.name, self.pattern, self.shape, self.connectivity, p=p,
                    dtype=self.dtype, multi=self.pattern == "potts")


def memory_calls(shrink=1):
    """The call forms of the memory set, named 'call-...'; sides / ``shrink``
    (4-D sides at least 8)."""
    d = functools.partial(_div, k=shrink)
    return [MemoryCall(f"call-{name}", pattern, tuple(d(s) for s in shape), conn, dtype, call,
                       dict(kw))
            for name, pattern, shape, conn, dtype, call, kw in MEMORY_CALLS]


def _memory_structure(ndim):
    """The 'structure' call's structure: the faces and the in-plane (last
    two axes) diagonals, which no connectivity names."""
    s = np.zeros((3,) * ndim, dtype=bool)
    centre = (1,) * ndim
    s[centre] = True
    for axis in range(ndim):
        for d in (0, 2):
            k = list(centre)
            k[axis] = d
            s[tuple(k)] = True
    for a in (0, 2):
        for b in (0, 2):
            s[centre[:-2] + (a, b)] = True
    return s


def memory_call(case, x, device):
    """``case``'s call on ``x``: a function of no arguments returning what
    meshccl returns.  ``device``: 'gpu' (x a CuPy array) or 'cpu' (NumPy,
    on every core)."""
    kw = dict(case.kw)
    if "structure" in kw:
        from meshccl import ndimage as mndi

        structure = _memory_structure(case.ndim)
        return lambda: mndi.label(x, structure)
    if "dtype" in kw:
        kw["dtype"] = np.dtype(kw["dtype"])
    if device == "cpu":
        kw["cpu_threads"] = 0
    return lambda: meshccl.label(x, connectivity=case.connectivity, **kw)


def output_bytes(out):
    """The bytes of every array a call returned (labels, counts, the
    statistics' columns; views of one array counted once)."""
    arrays = []
    for item in out if isinstance(out, tuple) else (out,):
        if isinstance(item, dict):
            if "seconds" not in item:  # (return_info's dict holds no output array)
                arrays += list(item.values())
        elif hasattr(item, "nbytes"):
            arrays.append(item)
    bases = {}
    for a in arrays:
        base = a if getattr(a, "base", None) is None else a.base
        bases[id(base)] = base.nbytes
    return sum(bases.values())


def memory_outputs(case, out):
    """(labels, N or None, counts or None) of a call's result."""
    kw = case.kw
    if "structure" in kw:
        return out[0], int(out[1]), None
    if not isinstance(out, tuple):
        return out, None, None
    labels, rest = out[0], out[1:]
    counts = None
    if kw.get("return_counts"):
        counts = rest[0]
    elif kw.get("return_statistics"):
        counts = rest[0]["voxel_counts"]
    return labels, None, counts


def run_memory_call(case, x_dev, x_host, args):
    """meshccl GPU's time and peak device memory on one call form, checked
    against meshccl CPU (identical labels and counts)."""
    res = {}
    host = None
    if x_dev is not None:
        try:
            import cupy

            fn = memory_call(case, x_dev, "gpu")
            seconds, runs = time_gpu(fn, args.repeat, args.min_time)
            memory = call_memory(fn, trace=True) if args.memory else {}
            out = fn()
            labels, count, counts = memory_outputs(case, out)
            if memory.get("peak_bytes") is not None:
                memory["outputs_bytes"] = output_bytes(out)
                memory["peak_outputs_ratio"] = memory["peak_bytes"] / memory["outputs_bytes"]
            out = None
            if count is None:
                count = int(labels.max()) if labels.size else 0
            r = _ok(seconds, runs, count, case)
            r.update(memory)
            host = (cupy.asnumpy(labels), count,
                    None if counts is None else cupy.asnumpy(counts))
            r["check"] = "unchecked"
            labels = counts = fn = None
        except Exception as e:
            r = _error(e)
        record_result(res, "meshccl GPU", r)
    try:
        t0 = time.perf_counter()
        labels, count, counts = memory_outputs(case, memory_call(case, x_host, "cpu")())
        seconds = time.perf_counter() - t0
        if count is None:
            count = int(labels.max()) if labels.size else 0
        r = _ok(seconds, 1, count, case)
        r["check"] = "reference"
        if host is not None:
            if case.kw.get("numbering") == "first-cell":
                check = "identical" if np.array_equal(labels, host[0]) else \
                    "MISMATCH (first-cell labels differ)"
            else:
                check = compare(np, labels, count, host[0], host[1])
            if check == "identical" and counts is not None and not np.array_equal(
                    np.asarray(counts), host[2]):
                check = "MISMATCH (counts differ)"
            strictly_checked(res["meshccl GPU"], check, "meshccl CPU")
    except Exception as e:
        r = _error(e)
    record_result(res, "meshccl CPU", r)
    return res


def generator_text(case):
    """How the case's array is made, in words (for the tables)."""
    if case.pattern == "spiral":
        text = "Hawick's spiral"
    elif case.pattern == "blobs":
        text = (f"smoothed noise (uniform, Gaussian σ={case.sigma or 4:g}, periodic), "
                "1 above its median: half the cells, bicontinuous domains")
    elif case.pattern == "percolation":
        text = f"site percolation, each cell 1 with p={case.p:g}"
        known = {v: k for k, v in patterns.PERCOLATION_THRESHOLD.items()}
        if case.p in known:
            nd, c = known[case.p]
            text += f" (threshold of the {'square' if nd == 2 else 'cubic'} lattice at c{c})"
        elif case.p == PERCOLATION_4D_C1:
            text += " (threshold of the 4-D hypercubic lattice at c1)"
        elif case.p == PERCOLATION_4D_C4:
            text += (" (near the 4-D threshold with all 80 neighbours: the large-z estimate "
                     "1 − exp(−2.086/80) of Xun, Hao and Ziff, not a measured value)")
    elif case.pattern == "potts":
        text = "4-state Potts field: smoothed noise cut at its quartiles into 1..4"
    elif case.pattern == "levels":
        text = (f"{case.q} values, no background: an 8-level and a 5-level quantile cut of two "
                f"independent smoothed noises (σ={case.sigma:g} and {1.5 * case.sigma:g}) "
                "combined into 1..40, times 1601 (uint16 up to 64040)")
    else:
        text = case.pattern
    if case.transpose:
        text += f"; the transpose of the {'x'.join(map(str, case.shape[::-1]))} array"
    return text + f"; {case.dtype}"


def select_cases(cases, spec, required=True):
    """Keep the cases matching any comma-separated token: an exact name, a
    shell pattern (``blobs-*-c1``) or a name prefix (``spiral``).  With
    ``required`` a spec that matches nothing is an error."""
    if not spec:
        return cases
    tokens = [t.strip() for t in spec.split(",") if t.strip()]
    chosen = [c for c in cases
              if any(c.name == t or fnmatch.fnmatchcase(c.name, t) or c.name.startswith(t)
                     for t in tokens)]
    if not chosen and required:
        raise SystemExit(f"--cases {spec!r} matches none of: {', '.join(c.name for c in cases)}")
    return chosen


def _levels(shape, q, sigma, xp):
    """The 'levels' pattern: 40 values from two independent quantile cuts."""
    assert q == 40, q
    a = patterns.potts(shape, q=8, sigma=sigma, seed=0, xp=xp).astype(xp.uint16)
    b = patterns.potts(shape, q=5, sigma=1.5 * sigma, seed=1, xp=xp).astype(xp.uint16)
    return ((a - 1) * 5 + b) * xp.uint16(1601)


def generate(case, xp):
    """The case's array (uint8, or ``case.dtype``) on ``xp``'s device."""
    shape = tuple(case.shape[::-1]) if case.transpose else tuple(case.shape)
    extra = {} if case.sigma is None else {"sigma": case.sigma}
    if case.pattern == "spiral":
        x = patterns.spiral(shape[0], xp=xp)
    elif case.pattern == "blobs":
        x = patterns.blobs(shape, xp=xp, **extra)
    elif case.pattern == "percolation":
        x = patterns.percolation(shape, case.p, xp=xp)
    elif case.pattern == "potts":
        x = patterns.potts(shape, q=4, xp=xp)
    elif case.pattern == "levels":
        x = _levels(shape, case.q, case.sigma, xp)
    else:
        raise ValueError(case.pattern)
    if case.transpose:
        x = xp.ascontiguousarray(x.T)
    return x.astype(case.dtype, copy=False)


class ArrayCache:
    """Holds the last generated array, so the c1 and cN variants of a
    pattern (same array unless it is percolation) are generated once."""

    def __init__(self, xp):
        self.xp, self.key, self.value = xp, None, None

    def get(self, case):
        key = (case.pattern, case.shape, case.p, case.sigma, case.q, case.dtype, case.transpose)
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
# Device memory
# --------------------------------------------------------------------------

#: Issue 56: a call's peak device memory at most this many times its label
#: output (the labels array can be the union-find forest itself).
MEMORY_TARGET = 1.25


def _allocation_site():
    """The innermost frames of meshccl's code on the stack, as 'file:line'
    (a block's allocation site, for :class:`PeakMemory`'s ``at_peak``),
    or the caller's."""
    frames = [f for f in traceback.extract_stack()[:-3]
              if os.sep + "meshccl" + os.sep in f.filename
              and os.sep + "benchmarks" + os.sep not in f.filename]
    if not frames:
        frames = traceback.extract_stack()[-6:-3]
    return " < ".join(f"{os.path.relpath(f.filename, REPO)}:{f.lineno}"
                      for f in reversed(frames[-3:]))


def _labels_of(out):
    """The label array of a tool's return value: ``labels`` or ``(labels, count)``."""
    return out[0] if isinstance(out, tuple) else out


def _device_pointer(a):
    """The device address of an array's data (CuPy, PyTorch, Numba: anything
    with ``__cuda_array_interface__``), None when it has none."""
    iface = getattr(a, "__cuda_array_interface__", None)
    return None if iface is None else int(iface["data"][0])


def measure_memory(fn, trace=False):
    """Peak device memory of one call ``fn()`` (returning labels or (labels,
    count)) beyond what exists before it: {'peak_bytes', 'labels_bytes'
    (the output's nbytes), 'peak_ratio' (peak / labels)}.  When the output
    is not memory the call took from CuPy's pool, the tool allocates
    elsewhere and the pool's count would be wrong: peak_bytes and
    peak_ratio are then None and 'peak_note' says why.  ``trace``: also
    'peak_blocks', the blocks held at the peak as [bytes, allocation
    site] (:class:`PeakMemory`)."""
    import gc

    import cupy

    from meshccl import _tuning

    gc.collect()  # garbage from before is freed now, not inside the window
    cupy.cuda.Device().synchronize()
    # (override() drops this thread's launch plans: meshccl's call builds its
    # plan inside the window, so what a plan keeps for later calls counts)
    with PeakMemory(_allocation_site if trace else None) as mem, _tuning.override():
        out = fn()
        cupy.cuda.Device().synchronize()
    labels = _labels_of(out)
    record = {"peak_bytes": None, "labels_bytes": int(labels.nbytes), "peak_ratio": None}
    ptr = _device_pointer(labels)
    if ptr is None:
        record["peak_note"] = f"the output ({type(labels).__name__}) has no device address"
    elif not mem.holds(ptr):
        record["peak_note"] = ("its output is not memory of CuPy's pool (another allocator), "
                               "so the pool's count would miss it")
    else:
        record["peak_bytes"] = int(mem.peak)
        if trace:
            record["peak_blocks"] = [[int(b), where] for b, where in mem.at_peak]
        if labels.nbytes:
            record["peak_ratio"] = mem.peak / labels.nbytes
    return record


def _unmeasured(why):
    return {"peak_bytes": None, "labels_bytes": None, "peak_ratio": None, "peak_note": why}


def call_memory(fn, trace=False):
    """:func:`measure_memory`, with a failure of the extra call recorded
    as the reason there is no number (the timing stands)."""
    try:
        return measure_memory(fn, trace)
    except Exception as e:
        return _unmeasured(f"the measured call failed: {type(e).__name__}: {e}")


def tool_memory(tool, x, case):
    """The peak device memory of ``tool``'s timed call on ``x``: one more
    call, after its timing (the timed calls run without the hook), or why
    it cannot be measured."""
    if tool.memory:
        return _unmeasured(tool.memory)
    return call_memory(lambda: tool.timed_call(x, case))


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


def strictly_checked(result, check, reference):
    """Record in a tool's ``result`` the ``check`` of its labels against
    ``reference``'s, read by :func:`strict`."""
    result["check"] = strict(check)
    result["reference"] = reference


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
    skip: object = None             # skip(case) -> None or why it is skipped (not run, by choice)
    memory: str | None = None       # why its device memory cannot be measured (None: it can)

    def why_not(self, case):
        return self.supports(case) if self.supports else None

    def why_skipped(self, case):
        return self.skip(case) if self.skip else None

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


def _as_bool_beyond_3d(x, case):
    """skimage (and its port, cuCIM) label non-bool input in 1-3 dimensions
    only: beyond, binary 0/1 uint8 cases are given as a bool view (no copy,
    same components and numbering)."""
    if case.ndim > 3 and not case.multi and x.dtype == np.uint8:
        return x.view(bool)
    return x


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
    # the partition-only output (issue 45): compared with bkeccl's raw labels
    tools.append(Tool(
        "meshccl first-cell", "gpu",
        label=lambda x, c: meshccl.label(x, connectivity=c.connectivity, return_num=True,
                                         numbering="first-cell"),
        timed=lambda x, c: meshccl.label(x, connectivity=c.connectivity, numbering="first-cell"),
        api="meshccl.label(x, connectivity=c, numbering='first-cell')",
        version=meshccl.__version__))

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
            prepare=_as_bool_beyond_3d,
            api="cucim.skimage.measure.label(x, connectivity=c) (a bool view of binary input beyond 3-D)",
            version=ver))
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
                 version=_version("colorcc", colorcc),
                 memory="allocates with PyTorch's caching allocator, which CuPy's pool does not see")]


def cpu_tools(with_peers=True):
    """meshccl's CPU backend (serial, then on every core) and (optionally)
    the CPU peers that import."""
    from meshccl._cpu.image import cpu_count

    tools, skipped = [], {}
    tools.append(Tool(
        "meshccl CPU", "cpu",
        label=lambda x, c: meshccl.label(x, connectivity=c.connectivity, return_num=True),
        api="meshccl.label(x, connectivity=c) on NumPy", version=meshccl.__version__))
    tools.append(Tool(
        "meshccl CPU threads", "cpu",
        label=lambda x, c: meshccl.label(x, connectivity=c.connectivity, cpu_threads=0, return_num=True),
        api=(f"meshccl.label(x, connectivity=c, cpu_threads=0) on NumPy, "
             f"{cpu_count()} threads"),
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
            label=lambda x, c: sk_label(_as_bool_beyond_3d(x, c), connectivity=c.connectivity,
                                        return_num=True),
            api="skimage.measure.label(x, connectivity=c) (a bool view of binary input beyond 3-D)",
            version=skimage.__version__))
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
            seconds, runs = time_gpu(lambda: tool.timed_call(x, case), args.repeat,
                                     1.0 if args.min_time is None else args.min_time)
            memory = tool_memory(tool, x, case) if args.memory else {}
            labels, count = tool.label(x, case)
            r = _ok(seconds, runs, int(count), case)
            r.update(memory)
            r["dense"] = _dense(labels, count)
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
        record_result(res, tool.name, r)
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
        why = tool.why_skipped(case)
        if why:
            res[tool.name] = {"status": "skipped", "reason": why}
            continue
        try:
            # warm-up: JIT compilation, first-call costs
            tool.label(big_crop if tool.name == "meshccl CPU threads" else crop, case)
            seconds, runs, out = time_cpu(lambda: tool.label(x_host, case),
                                          7 if args.cpu_repeat is None else args.cpu_repeat)
            labels, count = out
            r = _ok(seconds, runs, int(count), case)
            if tool.name == "meshccl CPU":
                if gpu_host is not None:
                    strictly_checked(res["meshccl GPU"],
                                     compare(np, labels, count, gpu_host, gpu_ref_count),
                                     "meshccl CPU")
                ref, ref_count, ref_name = labels, int(count), "meshccl CPU"
                r["check"] = "pending (against skimage)"
            elif tool.name == "meshccl CPU threads" and ref is not None:
                strictly_checked(r, compare(np, ref, ref_count, labels, count), ref_name)
            elif ref is not None:
                r["check"] = compare(np, ref, ref_count, labels, count)
                r["reference"] = ref_name
                if tool.name == "skimage":
                    # The drop-in contract: meshccl equals skimage value for value.
                    for mine in ("meshccl CPU", "meshccl GPU"):
                        m = res.get(mine, {})
                        if m.get("status") == "ok" and m.get("reference") is None:
                            strictly_checked(m, r["check"], "skimage")
            else:
                r["check"] = "unchecked (no meshccl labels)"
            out = labels = None
        except Exception as e:
            r = _error(e)
        record_result(res, tool.name, r)
    if res.get("meshccl GPU", {}).get("check") == "unchecked":
        res["meshccl GPU"]["check"] = "unchecked (no meshccl CPU / skimage labels)"
    if res.get("meshccl CPU", {}).get("check") == "pending (against skimage)":
        res["meshccl CPU"]["check"] = "unchecked (skimage not run)"
    return res


def _dense(labels, count):
    """True when the labels are 1..count (as skimage's), False for sparse
    labels (bkeccl's raw output), None when it cannot be told."""
    try:
        return int(count) == 0 or int(labels.max()) == int(count)
    except Exception:
        return None


def record_result(res, name, r):
    """Store the result ``r`` of the tool ``name`` in ``res`` and log it."""
    res[name] = r
    log(f"  {name:12s} {_fmt_result(r)}")


def _fmt_result(r):
    if r["status"] == "ok":
        peak = ""
        if r.get("peak_bytes") is not None:
            peak = f"  peak {_memory_cell(r)}"
        elif r.get("peak_note"):
            peak = f"  peak not measured ({r['peak_note']})"
        return (f"{fmt_ms(r['seconds']):>9s} ms  n={r['count']}  ({r['runs']} runs)  "
                f"{r.get('check', '')}{peak}")
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
# The 'lattice' set: lattice features against a plain call on the same array
# --------------------------------------------------------------------------

#: Bond probability of the bonds cases: Swendsen-Wang's 1 - exp(-2 beta J)
#: at beta J = 0.44 (near the 2-D Ising critical point, 0.4407).
BOND_P = 1 - math.exp(-2 * 0.44)
#: Tolerance cases: the field's values lie in [0, 16); the tolerance is the
#: median |difference| of neighbours along axis 0, so about half of the
#: neighbour pairs join.
FIELD_RANGE = 16.0
LATTICE_TARGET = 1.3      # issue 45: a lattice feature within 1.3x of the plain call
LATTICE_CONNECTIVITY = 1
LATTICE_BACKGROUND = -1   # spins: both values are clusters (no background)

#: variant -> (the call's keyword arguments in words, the array it labels)
LATTICE_VARIANTS = {
    "plain": ("(none)", "spins"),
    "periodic": ("periodic=True", "spins"),
    "periodic-axis0": ("periodic on axis 0 only", "spins"),
    "periodic-last": ("periodic on the last axis only", "spins"),
    "bonds": ("bonds=B (random, p=%.3f)" % BOND_P, "spins"),
    "periodic-bonds": ("periodic=True, bonds=B (random, p=%.3f)" % BOND_P, "spins"),
    "swendsen-wang": ("periodic=True, bonds=B & (equal spins): Swendsen-Wang clusters", "spins"),
    "mask-disc": ("mask = a centred disc / ball (radius 0.9 of the half side)", "spins"),
    "mask-random": ("mask = random, 90% of the cells", "spins"),
    "float-plain": ("(none) on the float field: its truncation to integers", "field"),
    "tolerance": ("tolerance=t on the float field", "field"),
    "axes": ("axes=(1, 2): each image of the stack on its own", "spins"),
    "axes-periodic": ("axes=(1, 2), periodic=(False, True, True)", "spins"),
}
#: The plain call each variant is compared with (same array, no feature).
LATTICE_PLAIN = {"float-plain": None, "plain": None, "tolerance": "float-plain"}


@dataclass
class LatticeCase(_Shaped):
    name: str          # 'lattice-4096^2-periodic'
    group: str         # the array's shape name: '4096^2'
    shape: tuple
    variant: str       # a key of LATTICE_VARIANTS

    @property
    def call(self):
        return LATTICE_VARIANTS[self.variant][0]

    @property
    def array(self):
        return LATTICE_VARIANTS[self.variant][1]

    @property
    def plain(self):
        """The name of the matching plain case (None for a plain case)."""
        v = LATTICE_PLAIN.get(self.variant, "plain")
        return None if v is None else f"lattice-{self.group}-{v}"


def lattice_cases(shrink=1):
    """The 'lattice' set (issue 45, point 3): random spins at half filling
    at 4096^2 and 256^3 (and a 64 x 512 x 512 stack for axes=), connectivity
    1, every lattice feature and its plain call.  Sides / ``shrink``."""
    d = functools.partial(_div, k=shrink)
    every = ["plain", "periodic", "periodic-axis0", "periodic-last", "bonds", "periodic-bonds",
             "swendsen-wang", "mask-disc", "mask-random", "float-plain", "tolerance"]
    groups = [((d(4096),) * 2, every),
              ((d(256),) * 3, every + ["axes", "axes-periodic"]),
              ((max(4, 64 // shrink), d(512), d(512)), ["plain", "axes", "axes-periodic"])]
    cases = []
    for shape, variants in groups:
        g = _shape_name(shape)
        cases += [LatticeCase(f"lattice-{g}-{v}", g, shape, v) for v in variants]
    return cases


def select_lattice_cases(cases, spec):
    """select_cases for the lattice set, keeping the plain case of every
    case chosen (its ratio needs it)."""
    chosen = select_cases(cases, spec, required=False)
    names = {c.name for c in chosen} | {c.plain for c in chosen if c.plain}
    return [c for c in cases if c.name in names]


class LatticeInputs:
    """The arrays of one group (one shape), made on ``xp``'s device when
    first asked for: spins, bonds, Swendsen-Wang bonds, the masks, the float
    field and its tolerance."""

    def __init__(self, shape, xp):
        self.shape, self.xp, self.values = tuple(shape), xp, {}

    def __getitem__(self, key):
        if key not in self.values:
            self.values[key] = getattr(self, "_" + key.replace("-", "_"))()
        return self.values[key]

    def _rng(self, seed):
        xp = self.xp
        return np.random.default_rng(seed) if xp is np else xp.random.default_rng(seed)

    def _spins(self):
        return patterns.percolation(self.shape, 0.5, seed=0, xp=self.xp)

    def _bonds(self):
        k = len(half_offsets(len(self.shape), LATTICE_CONNECTIVITY))
        return self._rng(1).random((k,) + self.shape, dtype=self.xp.float32) < BOND_P

    def _sw_bonds(self):
        """The random bonds, kept only between equal spins (the neighbour of
        bond k at x is x + half_offsets[k], wrapped: periodic lattice)."""
        xp, spins = self.xp, self["spins"]
        out = self["bonds"].copy()
        axes = tuple(range(len(self.shape)))
        for k, delta in enumerate(half_offsets(len(self.shape), LATTICE_CONNECTIVITY)):
            out[k] &= spins == xp.roll(spins, tuple(-d for d in delta), axis=axes)
        return out

    def _disc(self):
        xp = self.xp
        r2 = 0
        for axis, n in enumerate(self.shape):
            c = (xp.arange(n, dtype=xp.float32) + 0.5 - n / 2) / (n / 2)
            r2 = r2 + (c * c).reshape((-1,) + (1,) * (len(self.shape) - axis - 1))
        disc = r2 <= 0.81  # (a new array: writeable; a read-only mask is another numba type)
        assert disc.shape == self.shape
        return disc

    def _random_mask(self):
        return self._rng(2).random(self.shape, dtype=self.xp.float32) < 0.9

    def _field(self):
        """Smoothed noise (sigma 2, periodic), standardised to mean 8 and
        standard deviation 2, clipped to [0, 16): float32."""
        xp = self.xp
        f = patterns._smoothed_noise(self.shape, 2.0, 3, xp)
        f = (f - f.mean()) / f.std() * 2 + FIELD_RANGE / 2
        return xp.clip(f, 0, np.float32(FIELD_RANGE - 1e-3)).astype(xp.float32)

    def _tolerance(self):
        f = self["field"]
        head = f[: min(f.shape[0], 257)]
        t = float(self.xp.median(self.xp.abs(self.xp.diff(head, axis=0))))
        return float(f"{t:.2g}")

    def host(self):
        """The same inputs on the host (NumPy copies, made when first asked
        for), for the CPU reference; the inputs themselves without a GPU."""
        return self if self.xp is np else _HostInputs(self)


class _HostInputs:
    def __init__(self, dev):
        self.dev, self.values = dev, {}

    def __getitem__(self, key):
        if key not in self.values:
            v = self.dev[key]
            self.values[key] = v if isinstance(v, float) else self.dev.xp.asnumpy(v)
        return self.values[key]


def lattice_call(case, inp):
    """(array, keyword arguments) of ``case``'s meshccl.label call, from
    the LatticeInputs ``inp`` (the device's or the host's)."""
    nd = case.ndim
    v = case.variant
    kw = {}
    if v == "periodic":
        kw["periodic"] = True
    elif v == "periodic-axis0":
        kw["periodic"] = (True,) + (False,) * (nd - 1)
    elif v == "periodic-last":
        kw["periodic"] = (False,) * (nd - 1) + (True,)
    elif v == "bonds":
        kw["bonds"] = inp["bonds"]
    elif v == "periodic-bonds":
        kw.update(periodic=True, bonds=inp["bonds"])
    elif v == "swendsen-wang":
        kw.update(periodic=True, bonds=inp["sw-bonds"])
    elif v == "mask-disc":
        kw["mask"] = inp["disc"]
    elif v == "mask-random":
        kw["mask"] = inp["random-mask"]
    elif v == "tolerance":
        kw["tolerance"] = inp["tolerance"]
    elif v == "axes":
        kw["axes"] = (1, 2)
    elif v == "axes-periodic":
        kw.update(axes=(1, 2), periodic=(False, True, True))
    elif v not in ("plain", "float-plain"):
        raise ValueError(v)
    return inp[case.array], kw


def _crop_call(x, kw, side=16):
    """A small copy of a call's arrays for numba's warm-up (the same
    signature, so nothing is compiled or loaded from numba's cache in the
    timed call): every axis subsampled to about ``side`` cells, which keeps
    a bit of everything the whole has (masked and open cells, ...)."""
    crop = tuple(slice(None, None, max(1, n // side)) for n in x.shape)
    out = dict(kw)
    if "mask" in kw:
        out["mask"] = np.ascontiguousarray(kw["mask"][crop])
    if "bonds" in kw:
        out["bonds"] = np.ascontiguousarray(kw["bonds"][(slice(None),) + crop])
    return np.ascontiguousarray(x[crop]), out


def lattice_bytes(case, x, kw):
    """Bytes per cell a call must move at least: its inputs once (the
    array, a mask, the bond flags) and int32 labels once."""
    n = x.dtype.itemsize + 4
    if "mask" in kw:
        n += 1
    if "bonds" in kw:
        n += kw["bonds"].shape[0]
    return n


def run_lattice_case(case, inp_dev, inp_host, peers, args):
    """Times meshccl.label(x, background=-1, connectivity=1, **features) on
    the GPU (when ``inp_dev``), labels the same on the CPU backend (the
    reference: identical labels) and, for plain calls, with skimage."""
    res = {}
    conn, bg = LATTICE_CONNECTIVITY, LATTICE_BACKGROUND
    gpu_host = gpu_count = None
    if inp_dev is not None:
        try:
            import cupy

            x, kw = lattice_call(case, inp_dev)
            seconds, runs = time_gpu(lambda: meshccl.label(x, bg, connectivity=conn, **kw),
                                     args.repeat, args.min_time)
            memory = (call_memory(lambda: meshccl.label(x, bg, connectivity=conn, **kw))
                      if args.memory else {})
            labels, count = meshccl.label(x, bg, True, conn, **kw)
            r = _ok(seconds, runs, int(count), case)
            r.update(memory)
            gpu_host, gpu_count = cupy.asnumpy(labels), int(count)
            r["check"] = "unchecked"
            labels = x = kw = None
        except Exception as e:
            r = _error(e)
        record_result(res, "meshccl GPU", r)

    xh, kwh = lattice_call(case, inp_host)
    try:
        xc, kwc = _crop_call(xh, kwh)
        meshccl.label(xc, bg, True, conn, **kwc)  # warm-up: numba's compilation
        seconds, runs, out = time_cpu(lambda: meshccl.label(xh, bg, True, conn, **kwh),
                                      args.cpu_repeat)
        labels, count = out
        r = _ok(seconds, runs, int(count), case)
        r["check"] = "reference (no peer does this call)"
        if gpu_host is not None:
            strictly_checked(res["meshccl GPU"], compare(np, labels, count, gpu_host, gpu_count),
                             "meshccl CPU")
    except Exception as e:
        r, labels = _error(e), None
    record_result(res, "meshccl CPU", r)

    sk = peers.get("skimage")
    if case.variant in ("plain", "float-plain") and sk is not None and labels is not None:
        if case.cells > args.cpu_peer_cells:
            res["skimage"] = {"status": "skipped",
                              "reason": f"over {args.cpu_peer_cells:,} cells (--cpu-peer-cells)"}
        else:
            try:
                seconds, runs, out = time_cpu(lambda: sk(xh, background=bg, connectivity=conn,
                                                         return_num=True), args.cpu_repeat)
                r = _ok(seconds, runs, int(out[1]), case)
                r["check"] = compare(np, labels, res["meshccl CPU"]["count"], out[0], out[1])
                r["reference"] = "meshccl CPU"
                strictly_checked(res["meshccl CPU"], r["check"], "skimage")
            except Exception as e:
                r = _error(e)
            record_result(res, "skimage", r)
    return res


# --------------------------------------------------------------------------
# Machine information
# --------------------------------------------------------------------------

def _cuda_version(v):
    return f"{v // 1000}.{(v % 1000) // 10}"


def machine_info(use_gpu, gpu_reason):
    from meshccl._cpu.image import cpu_count

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
        "cpu_threads": cpu_count(),  # (cpu_threads=0; runs before 2026-11-30: "numba")
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
        "l2_bytes": props.get("l2CacheSize"),
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


def speedup(res, dense_only=False):
    """(factor, peer): fastest correct GPU peer's time / meshccl GPU's time.
    ``dense_only``: among the peers whose labels were dense (1..N)."""
    mine = res.get("meshccl GPU", {})
    if mine.get("status") != "ok":
        return None, None
    best = None
    for name in GPU_PEERS:
        r = res.get(name, {})
        if r.get("status") == "ok" and not r.get("check", "").startswith("MISMATCH"):
            if dense_only and not r.get("dense"):
                continue
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


def _machine_lines(results, title):
    m = results["machine"]
    gpu = m["gpu"]
    if gpu:
        machine = (f"{gpu['name']} (driver {gpu['driver_version']}, CUDA runtime "
                   f"{gpu['runtime_version']}, CuPy {gpu['cupy']})")
    else:
        machine = f"no GPU ({m.get('gpu_skipped')})"
    n = m.get("cpu_threads", m.get("numba", {}).get("threads"))
    threads = f", {n} CPU threads" if n else ""
    return [
        title,
        "",
        f"Machine: {machine}; host {m['cpu_count']} CPUs ({m['cpu_model']}){threads}. "
        f"Date: {m['date_utc']}. meshccl {m['meshccl']['version']} at {m['meshccl']['git']}. "
        f"Command: `{m['command']}`",
        "",
    ]


def _correctness_lines(results, cols, intro):
    lines = ["", "## Correctness", "", intro, ""]
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
    return lines


def _tail_lines(results):
    lines = []
    skipped = results.get("skipped_tools") or {}
    if skipped:
        lines += ["", "## Tools not run", ""]
        for name, why in skipped.items():
            lines.append(f"- {name}: {why}")
    failures = results.get("failures") or []
    if failures:
        lines += ["", "## meshccl failures", ""]
        lines += [f"- {f}" for f in failures]
    return lines


def _time_table_lines(results, cols):
    """The table of median times per case and tool, with the floor and
    meshccl's ratio to the fastest GPU peer."""
    lines = ["Median time per call in ms (GPU: CUDA events; CPU: wall clock). "
             "✗ = labels MISMATCH; n/a = the tool does not do this case.", ""]
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
    return lines


def fmt_bytes(n):
    """Bytes in decimal units with 3 significant digits: 4.29 GB, 268 MB, 512 B."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{fmt3(n / size)} {unit}"
    return f"{int(n)} B"


def _memory_cell(r):
    """A tool's peak device memory and its ratio to its label output
    ('7.50 GB (1.75×)'), '—' where it cannot be measured, the tool's status
    where it did not run, '' where memory was not measured (--no-memory)."""
    if r is None:
        return ""
    if r["status"] != "ok":
        return _cell(r)
    if r.get("peak_bytes") is not None:
        ratio = r.get("peak_ratio")
        return fmt_bytes(r["peak_bytes"]) + (f" ({ratio:.2f}×)" if ratio is not None else "")
    return "—" if r.get("peak_note") else ""


MEMORY_HEADING = "## Peak device memory per call"
MEMORY_TEXT = (
    "Peak device memory of one call beyond its input, in a call of its own after the timed "
    "calls (which run without it): the high-water mark of the bytes the call holds from "
    "CuPy's memory pool, counted from the call's start. A CuPy memory hook adds every block "
    "the pool hands out during the call (in the pool's sizes, multiples of 512 bytes) and "
    "subtracts it when given back, so blocks the pool keeps cached are not counted, nor is "
    "the input, made before the call; the label output, still held at the end, is. In "
    "brackets: that peak ÷ the bytes of the tool's own label output (`labels.nbytes`); the "
    "labels column is meshccl GPU's output. GB = 10⁹ bytes. Target (issue 56): meshccl GPU at "
    f"most {MEMORY_TARGET:g}× its labels. Memory a tool takes outside CuPy's pool (another "
    "allocator, cudaMalloc in a compiled extension) is not seen: where the output itself is "
    "not pool memory, the cell is — (below: why); a tool that took its output from the pool "
    "but scratch elsewhere would show too little.")


def _memory_lines(results, cols, always=False):
    """The 'Peak device memory per call' section: per case, each GPU
    tool's peak and ratio, and meshccl's verdict against MEMORY_TARGET.
    Nothing when no GPU tool was measured, unless ``always`` (then a line
    saying so)."""
    gpu_cols = [t for t in cols if t in GPU_TOOLS]
    measured = any("peak_bytes" in c["tools"].get(t, {})
                   for c in results["cases"] for t in gpu_cols)
    if not measured:
        if not always:
            return []
        why = ("no GPU in this run" if not results["machine"].get("gpu")
               else "no GPU tool measured (--no-memory, or none ran)")
        return ["", MEMORY_HEADING, "", f"Not measured: {why}."]
    lines = ["", MEMORY_HEADING, "", MEMORY_TEXT, ""]
    head = ["case", "labels"] + gpu_cols + [f"meshccl ≤ {MEMORY_TARGET:g}×"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|---|" + "|".join(["---:"] * (len(head) - 2)) + "|---|")
    notes = {}
    for case in results["cases"]:
        res = case["tools"]
        mine = res.get("meshccl GPU", {})
        labels, ratio = mine.get("labels_bytes"), mine.get("peak_ratio")
        verdict = ("✓" if ratio <= MEMORY_TARGET else "✗") if ratio is not None else ""
        row = ([case["name"], fmt_bytes(labels) if labels else ""]
               + [_memory_cell(res.get(t)) for t in gpu_cols] + [verdict])
        lines.append("| " + " | ".join(row) + " |")
        for t in gpu_cols:
            r = res.get(t, {})
            if r.get("status") == "ok" and r.get("peak_bytes") is None and r.get("peak_note"):
                notes.setdefault(t, []).append(r["peak_note"])
    if notes:
        lines += ["", "— = not measured:", ""]
        lines += [f"- {t}: {'; '.join(dict.fromkeys(n))}" for t, n in notes.items()]
    return lines


def markdown_memory(results):
    """bench-memory.md: the peak device memory of issue 56's three large
    cases, then their times and the correctness table."""
    lines = _machine_lines(results, "# meshccl benchmark: peak device memory per call")
    cases = "; ".join(f"{c['name']} ({' × '.join(map(str, c['shape']))}: {c['generator']})"
                      for c in results["cases"])
    lines.append(f"Cases: {cases}.")
    cols = columns(results)
    lines += _memory_lines(results, cols, always=True)
    lines += ["", "## Time per call", ""]
    bw = results.get("copy_bandwidth_bytes_per_s")
    if bw:
        lines += [f"Device copy bandwidth (1 GiB D2D memcpy, read + write): {bw / 1e12:.2f} TB/s. "
                  "Floor = (1 + 4 bytes per cell) / that bandwidth.", ""]
    st = results["settings"]
    lines += [f"GPU tools: at least {st['repeat']} calls and {st['min_time']:g} s per tool and "
              f"case after a warm-up; meshccl CPU (the reference): {st['cpu_repeat']} call(s).", ""]
    lines += _time_table_lines(results, cols)
    lines += _correctness_lines(
        results, cols,
        "meshccl GPU against meshccl CPU (must be identical), every GPU peer against meshccl "
        "GPU ('same partition' is enough). Counts must agree.")
    lines += _memory_call_lines(results)
    lines += _tail_lines(results)
    return "\n".join(lines) + "\n"


def _memory_call_lines(results):
    """The memory set's call forms: meshccl GPU's peak, ratio, time and
    check per form, and the three largest blocks held at the peak."""
    calls = results.get("calls") or []
    if not calls:
        return []
    lines = ["", "## Peak device memory per call form (meshccl GPU)", "",
             "The same count as above, for each form of call meshccl serves (the lattice "
             "features are in bench-lattice.md). Labels: the output's bytes (`labels.nbytes`); "
             "peak ÷ labels in brackets. Blocks at the peak: the largest blocks held at the "
             "high-water mark, with the meshccl line that allocated each (innermost first). "
             "Outputs: the labels and whatever else the call returns (counts, statistics), "
             "the peak ÷ those in brackets, and the verdict against them. "
             "Check: meshccl GPU against meshccl CPU, labels and counts identical.", "",
             "| case | call | labels | peak | outputs | "
             f"≤ {MEMORY_TARGET:g}× | time (ms) | check | largest blocks at the peak |",
             "|---|---|---:|---:|---:|---|---:|---|---|"]
    for c in calls:
        r = c["tools"].get("meshccl GPU", {})
        labels, ratio = r.get("labels_bytes"), r.get("peak_outputs_ratio")
        verdict = ("✓" if ratio <= MEMORY_TARGET else "✗") if ratio is not None else ""
        outputs = (f"{fmt_bytes(r['outputs_bytes'])} ({ratio:.2f}×)"
                   if ratio is not None else "")
        blocks = "; ".join(f"{fmt_bytes(b)} {where}" for b, where in r.get("peak_blocks", [])[:3])
        shape = " × ".join(map(str, c["shape"]))
        lines.append(f"| {c['name']} | {c['call']}; {shape} {c['dtype']}, c{c['connectivity']} "
                     f"| {fmt_bytes(labels) if labels else ''} | {_memory_cell(r) if r else ''} "
                     f"| {outputs} | {verdict} | {_cell(r) if r else ''} | {r.get('check', '')} "
                     f"| {blocks} |")
    return lines


def markdown(results):
    lines = _machine_lines(results, "# meshccl benchmark")
    bw = results.get("copy_bandwidth_bytes_per_s")
    if bw:
        lines.append(f"Device copy bandwidth (1 GiB D2D memcpy, read + write): {bw / 1e12:.2f} TB/s. "
                     "Floor = (1 + 4 bytes per cell) / that bandwidth.")
        lines.append("")
    cols = columns(results)
    lines += _time_table_lines(results, cols)

    raw = []
    for case in results["cases"]:
        a, b = case["tools"].get("meshccl first-cell", {}), case["tools"].get("bkeccl raw", {})
        if a.get("status") == "ok" and b.get("status") == "ok":
            raw.append(f"{case['name']} {b['seconds'] / a['seconds']:.2f}×")
    if raw:
        lines += ["", "Partition-only output, meshccl first-cell against bkeccl raw (bkeccl's "
                  "time ÷ meshccl's; both unnumbered partitions): " + ", ".join(raw) + "."]

    lines += _memory_lines(results, cols)
    lines += _correctness_lines(
        results, cols,
        "Against meshccl (meshccl GPU and meshccl CPU threads against meshccl CPU, "
        "meshccl CPU against skimage: all must be identical). Counts must agree.")

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

    lines += _tail_lines(results)
    return "\n".join(lines) + "\n"


#: issue 45's targets for the shapes: meshccl GPU at least this much faster
#: than the fastest dense GPU peer, and at most this many times the floor.
SHAPES_PEER_TARGET = 2.0
SHAPES_FLOOR_TARGET = 15.0


def _targets(case):
    """'✓', or what misses issue 45's targets ('' without a GPU time)."""
    res = case["tools"]
    mine = res.get("meshccl GPU", {})
    if mine.get("status") != "ok":
        return ""
    missed = []
    factor, _ = speedup(res, dense_only=True)
    if factor is not None and factor < SHAPES_PEER_TARGET:
        missed.append("peer")
    if case.get("floor_s") and mine["seconds"] / case["floor_s"] > SHAPES_FLOOR_TARGET:
        missed.append("floor")
    if mine.get("check", "").startswith("MISMATCH"):
        missed.append("labels")
    return "✗ " + ", ".join(missed) if missed else "✓"


def markdown_shapes(results):
    """bench-shapes.md: the shapes set's timing table (with the floors and
    issue 45's targets), its cases, the correctness table."""
    lines = _machine_lines(results, "# meshccl benchmark: shapes beyond the standard cases")
    bw = results.get("copy_bandwidth_bytes_per_s")
    cols = columns(results)
    gpu_cols = [t for t in cols if t in GPU_TOOLS]
    cpu_cols = [t for t in cols if t in CPU_TOOLS]
    if bw:
        lines += [f"Device copy bandwidth (1 GiB D2D memcpy, read + write): {bw / 1e12:.2f} TB/s. "
                  "**floor** = (input bytes + 4 bytes of int32 label) per cell / that bandwidth "
                  "(1 + 4 bytes; 2 + 4 for uint16). **nbr floor** = (n neighbours × input bytes + "
                  "4) per cell / that bandwidth: what reading every neighbour of every cell from "
                  "memory once, and writing its label once, would take -- for the 4-D case at "
                  "connectivity 4, the floor that its 80 neighbour reads imply (see the note "
                  "below the table).", ""]
    lines += ["Median time per call in ms (GPU: CUDA events after a warm-up; CPU: wall clock). "
              f"GPU tools: at least {results['settings']['repeat']} calls and "
              f"{results['settings']['min_time']:g} s per tool and case. CPU tools: "
              f"{results['settings']['cpu_repeat']} call(s) after a warm-up on a crop; meshccl CPU "
              "is the reference the GPU's labels must equal; the CPU peers run on cases of at most "
              f"{results['settings']['cpu_peer_cells']:,} cells (larger: 'skip'). "
              "✗ = labels MISMATCH; n/a = the tool does not do this case. "
              "**vs fastest dense peer**: the time of the fastest GPU peer whose labels are 1..N "
              "(bkeccl raw's are not) and that found the same components, ÷ meshccl GPU's; "
              "**vs fastest peer**: any GPU peer. **issue 45**: ✓ when meshccl GPU is at least "
              f"{SHAPES_PEER_TARGET:g}× the fastest dense peer and at most "
              f"{SHAPES_FLOOR_TARGET:g}× the floor (else what it misses).", ""]
    head = (["case", "floor"] + gpu_cols + ["× floor", "nbr floor", "× nbr floor",
                                            "vs fastest dense peer", "vs fastest peer", "issue 45"]
            + cpu_cols)
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
    for case in results["cases"]:
        res = case["tools"]
        mine = res.get("meshccl GPU", {})
        t = mine.get("seconds") if mine.get("status") == "ok" else None
        floor, nbr = case.get("floor_s"), case.get("neighbour_floor_s")
        dense, dpeer = speedup(res, dense_only=True)
        anyf, apeer = speedup(res)
        row = ([case["name"], fmt_ms(floor) if floor else "n/a"]
               + [_cell(res.get(c)) for c in gpu_cols]
               + [f"{t / floor:.1f}×" if t and floor else "",
                  fmt_ms(nbr) if nbr else "n/a",
                  f"{t / nbr:.2f}×" if t and nbr else "",
                  f"{dense:.2f}× ({dpeer})" if dense else "",
                  f"{anyf:.2f}× ({apeer})" if anyf else "",
                  _targets(case)]
               + [_cell(res.get(c)) for c in cpu_cols])
        lines.append("| " + " | ".join(row) + " |")

    nbr_notes = [c for c in results["cases"] if c["ndim"] >= 4 and c["connectivity"] == c["ndim"]]
    for c in nbr_notes:
        n, b = c["neighbours"], c["itemsize"]
        line = (f"Note on {c['name']} ({n} neighbours a cell): its nbr floor is "
                f"({n} × {b} + 4) = {n * b + 4} bytes a cell")
        if bw:
            line += f", {fmt_ms(c['cells'] * (n * b + 4) / bw)} ms at the copy bandwidth"
        half = n // 2
        line += (f". That counts every neighbour read as a read from device memory. Two things "
                 f"make it a reference rather than a bound: the union-find needs each neighbour "
                 f"pair once, from its later cell (the half neighbourhood, {half} offsets), "
                 f"so a kernel without any reuse reads ({half} + 1) × {b} + 4 = "
                 f"{(half + 1) * b + 4} bytes a cell")
        if bw:
            line += f" ({fmt_ms(c['cells'] * ((half + 1) * b + 4) / bw)} ms)"
        l2 = (results["machine"].get("gpu") or {}).get("l2_bytes")
        size = c["cells"] * b / 2**20
        where = (f"; the input, {size:.1f} MiB, {'fits' if size * 2**20 <= l2 else 'does not fit'} "
                 f"in this device's {l2 / 2**20:.0f} MiB L2" if l2 else "")
        line += ("; and a tiled kernel reads a cell's neighbours from shared memory or L2"
                 f"{where}, so what device memory must move stays the floor's (input + 4) bytes "
                 f"a cell. The floor column is the lower bound; the nbr floor is what {n} "
                 "neighbour reads from memory a cell would cost.")
        lines += ["", line]

    lines += ["", "## Cases", "",
              "Generated on the device (NumPy without one), seeded. Components: meshccl's count "
              "(equal-value components for the multi-valued volume).", "",
              "| case | shape | cells | connectivity (neighbours) | generator | non-zero | components |",
              "|---|---|---:|---|---|---:|---:|"]
    for c in results["cases"]:
        res = c["tools"]
        count = next((res[t]["count"] for t in ("meshccl GPU", "meshccl CPU")
                      if res.get(t, {}).get("status") == "ok"), "")
        lines.append(f"| {c['name']} | {' × '.join(map(str, c['shape']))} | {c['cells']:,} | "
                     f"{c['connectivity']} ({c['neighbours']}) | {c['generator']} | "
                     f"{c['foreground_fraction']:.3f} | {count} |")

    lines += _memory_lines(results, cols)
    lines += _correctness_lines(
        results, cols,
        "meshccl GPU against meshccl CPU (must be identical), meshccl CPU against skimage where "
        "skimage ran (must be identical), every peer against meshccl ('same partition' is "
        "enough). Counts must agree.")
    lines += _tail_lines(results)
    return "\n".join(lines) + "\n"


def markdown_lattice(results):
    """bench-lattice.md: each lattice feature's time against the plain call
    on the same array."""
    lines = _machine_lines(results, "# meshccl benchmark: lattice features against a plain call")
    st = results["settings"]
    bw = results.get("copy_bandwidth_bytes_per_s")
    lines += [
        f"Every call: `meshccl.label(x, background={LATTICE_BACKGROUND}, "
        f"connectivity={LATTICE_CONNECTIVITY}, **features)`. x = random spins at half "
        "filling (uint8 0/1, each 1 with p = 0.5; background -1, so both spin values form "
        "clusters), or for the tolerance cases a float32 field (smoothed noise, σ = 2, "
        f"periodic, scaled to mean {FIELD_RANGE / 2:g} and standard deviation 2, clipped to "
        f"[0, {FIELD_RANGE:g})). Features: bonds B random with p = 1 − exp(−2·0.44) = "
        f"{BOND_P:.4f}, in the layout of `meshccl.neighbourhood.half_offsets(ndim, 1)`; "
        "Swendsen–Wang: the same bonds kept only between equal spins (neighbours wrapped; the "
        "clusters are those of periodic + B, as unequal spins never join, but fewer bonds are "
        "open); "
        "mask: a centred disc / ball of radius 0.9 of the half side, or random with 90% "
        "of the cells; tolerance t = the median |difference| of neighbours along axis 0 "
        "(about half the pairs join), rounded to 2 digits.", "",
        "**× plain** = the time ÷ the time of the matching plain call on the same array: the "
        "spins' plain call; for the tolerance, the plain call on the same float field (which "
        "labels its truncation to integers); for axes=, the plain 3-D call on the same "
        f"stack. Target (issue 45): ≤ {LATTICE_TARGET:g}×. GPU: CUDA events, median of at "
        f"least {st['repeat']} calls and {st['min_time']:g} s after a warm-up. meshccl CPU: "
        f"{st['cpu_repeat']} call(s) after a warm-up on a crop (periodic lattices run "
        "serially): the reference the GPU's labels must equal value for value; on the plain "
        "calls also checked identical to skimage."
        + (" **floor** = (bytes of the inputs a cell: the array, a mask byte, one byte per "
           f"bond + 4 bytes of int32 label) / the copy bandwidth, {bw / 1e12:.2f} TB/s."
           if bw else ""), ""]
    gpu = any(c["tools"].get("meshccl GPU", {}).get("status") == "ok" for c in results["cases"])
    head = ["case", "call", "meshccl GPU", "plain", "× plain", f"≤ {LATTICE_TARGET:g}×",
            "floor", "× floor", "components", "check", "meshccl CPU", "CPU × plain", "skimage"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|---|---|" + "---:|" * 7 + "---|" + "---:|" * 3)
    by_name = {c["name"]: c for c in results["cases"]}
    for c in results["cases"]:
        res = c["tools"]
        g = res.get("meshccl GPU", {})
        cpu = res.get("meshccl CPU", {})
        plain = by_name.get(c["plain"]) if c["plain"] else None
        pg = plain["tools"].get("meshccl GPU", {}) if plain else {}
        pc = plain["tools"].get("meshccl CPU", {}) if plain else {}
        ratio = g["seconds"] / pg["seconds"] if g.get("status") == pg.get("status") == "ok" else None
        cratio = (cpu["seconds"] / pc["seconds"]
                  if cpu.get("status") == pc.get("status") == "ok" else None)
        floor = c.get("floor_s")
        count = g.get("count", cpu.get("count", ""))
        check = g.get("check", "") if gpu else cpu.get("check", "")
        if gpu and cpu.get("reference") == "skimage":
            check += f"; CPU vs skimage: {cpu['check']}"
        row = [c["name"], c["call"], _cell(g) if g else "skip",
               (_cell(pg) if pg else "") if plain else "—",
               f"{ratio:.2f}×" if ratio else ("—" if not plain else ""),
               ("✓" if ratio <= LATTICE_TARGET else "✗") if ratio else "",
               fmt_ms(floor) if floor else "n/a",
               f"{g['seconds'] / floor:.1f}×" if floor and g.get("status") == "ok" else "",
               str(count), check, _cell(cpu),
               f"{cratio:.2f}×" if cratio else ("—" if not plain else ""),
               _cell(res.get("skimage")) if res.get("skimage") else ""]
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "Shapes: " + "; ".join(
        f"{g} = {' × '.join(map(str, s))} ({n:,} cells)"
        for g, s, n in dict.fromkeys((c["group"], tuple(c["shape"]), c["cells"])
                                     for c in results["cases"]))]
    tol = {c["group"]: c["tolerance"] for c in results["cases"] if c.get("tolerance") is not None}
    if tol:
        lines[-1] += ". Tolerances: " + "; ".join(f"{g}: t = {t:g}" for g, t in tol.items())
    lines += _memory_lines(results, ["meshccl GPU"])
    lines += _tail_lines(results)
    return "\n".join(lines) + "\n"


def plot(results, path, title="Connected-component labelling throughput"):
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
    ax.set_title(f"{title} — {gpu['name'] if gpu else 'CPU only'}")
    ax.grid(True, which="both", axis="y", alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=9)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def plot_lattice(results, path):
    """Each lattice case's time ÷ its plain call's (GPU; the CPU's without
    one), grouped by array, with the 1.3x target."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_name = {c["name"]: c for c in results["cases"]}
    gpu = any(c["tools"].get("meshccl GPU", {}).get("status") == "ok" for c in results["cases"])
    tool = "meshccl GPU" if gpu else "meshccl CPU"
    names, ratios, colours = [], [], []
    groups = list(dict.fromkeys(c["group"] for c in results["cases"]))
    cmap = plt.get_cmap("tab10").colors
    for c in results["cases"]:
        if not c["plain"] or c["plain"] not in by_name:
            continue
        r, pr = c["tools"].get(tool, {}), by_name[c["plain"]]["tools"].get(tool, {})
        if r.get("status") == pr.get("status") == "ok":
            names.append(c["name"].removeprefix("lattice-"))
            ratios.append(r["seconds"] / pr["seconds"])
            colours.append(cmap[groups.index(c["group"]) % 10])
    fig, ax = plt.subplots(figsize=(max(8, 0.45 * len(names) + 3), 5))
    ax.bar(np.arange(len(names)), ratios, color=colours)
    ax.axhline(1.0, color="k", linewidth=0.8)
    ax.axhline(LATTICE_TARGET, color="r", linestyle="--", label=f"target {LATTICE_TARGET:g}× plain")
    ax.set_xticks(np.arange(len(names)))
    ax.set_xticklabels(names, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel(f"time ÷ plain call ({tool})")
    g = results["machine"]["gpu"]
    ax.set_title(f"meshccl lattice features against a plain call — {g['name'] if g else 'CPU only'}")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def plot_memory(results, path):
    """Each GPU tool's peak device memory ÷ its label output, per case,
    with 1 (the output alone) and issue 56's target."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = results["cases"] + results.get("calls", [])
    tools = [t for t in GPU_TOOLS
             if any(c["tools"].get(t, {}).get("peak_ratio") is not None for c in cases)]
    fig, ax = plt.subplots(figsize=(max(7, 1.6 * len(cases) + 3), 5))
    width = 0.8 / max(len(tools), 1)
    colours = plt.get_cmap("tab10").colors
    for i, t in enumerate(tools):
        xs, ys = [], []
        for j, c in enumerate(cases):
            ratio = c["tools"].get(t, {}).get("peak_ratio")
            if ratio is not None:
                xs.append(j + (i - (len(tools) - 1) / 2) * width)
                ys.append(ratio)
        ax.bar(xs, ys, width, label=t, color=colours[i % 10])
    ax.axhline(1.0, color="k", linewidth=0.8)
    ax.axhline(MEMORY_TARGET, color="r", linestyle="--", label=f"target {MEMORY_TARGET:g}× (meshccl)")
    ax.set_xticks(np.arange(len(cases)))
    ax.set_xticklabels([c["name"] for c in cases], rotation=30, ha="right")
    ax.set_ylabel("peak device memory ÷ label output")
    g = results["machine"]["gpu"]
    ax.set_title(f"Peak device memory per call — {g['name'] if g else 'no GPU'}")
    ax.grid(True, axis="y", alpha=0.3)
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
    ap.add_argument("--sets", default="standard",
                    help="comma-separated case sets to run: standard (bench.*), shapes "
                         "(bench-shapes.*), lattice (bench-lattice.*), memory (bench-memory.*: "
                         "the peak device memory of issue 56's three large cases); default standard")
    ap.add_argument("--quick", action="store_true", help="every side / 4 (1024^2, 128^3, ...): a smoke run")
    ap.add_argument("--shrink", type=int, default=None,
                    help="every side / K (--quick is 4; the thin axes of the shapes set keep "
                         "their length, odd sides stay odd): tiny runs for tests")
    ap.add_argument("--cases", default="",
                    help="comma-separated case names, shell patterns or prefixes (e.g. spiral,blobs-*-c1)")
    ap.add_argument("--list-cases", action="store_true", help="print the case names and exit")
    ap.add_argument("--repeat", type=int, default=20,
                    help="minimum timed calls per GPU tool (default 20)")
    ap.add_argument("--cpu-repeat", type=int, default=None,
                    help="timed calls per CPU tool and case (default 7 for the standard set, at "
                         f"least 3 once they add up to {CPU_BUDGET_S:g} s, one above {CPU_SLOW_S:g} s "
                         "a call; default 1 for the other sets)")
    ap.add_argument("--min-time", type=float, default=None,
                    help="minimum total timed seconds per GPU tool and case (default 1 for the "
                         "standard set, 0.5 for the others)")
    ap.add_argument("--cpu-peers", action=argparse.BooleanOptionalAction, default=True,
                    help="time skimage, scipy, OpenCV and cc3d on the host (default on)")
    ap.add_argument("--cpu-peer-cells", type=int, default=20_000_000,
                    help="shapes and lattice sets: run the CPU peers only on cases of at most "
                         "this many cells (default 20000000)")
    ap.add_argument("--latency", action=argparse.BooleanOptionalAction, default=True,
                    help="measure small-image latency (default on; with the standard set)")
    ap.add_argument("--memory", action=argparse.BooleanOptionalAction, default=True,
                    help="measure each GPU tool's peak device memory in one more call per case, "
                         "after its timing (default on)")
    ap.add_argument("--no-gpu", action="store_true",
                    help="skip every GPU tool (CPU-only smoke run; also automatic without a GPU)")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    if args.cpu_repeat is not None and args.cpu_repeat < 1:
        ap.error("--cpu-repeat must be >= 1")
    if args.shrink is not None and args.shrink < 1:
        ap.error("--shrink must be >= 1")
    sets = [t.strip() for t in args.sets.split(",") if t.strip()]
    unknown = [t for t in sets if t not in SETS]
    if unknown or not sets:
        ap.error(f"--sets takes some of {', '.join(SETS)}; got {args.sets!r}")
    args.sets = [t for t in SETS if t in sets]
    if not args.out and not args.list_cases:
        ap.error("--out DIR is required")
    return args


def _set_args(args, name):
    """The arguments of one set, its defaults filled in."""
    out = argparse.Namespace(**vars(args))
    standard = name == "standard"
    if out.min_time is None:
        out.min_time = 1.0 if standard else 0.5
    if out.cpu_repeat is None:
        out.cpu_repeat = 7 if standard else 1
    return out


@dataclass
class Env:
    """What every set shares: the device, the tools, the machine."""
    use_gpu: bool
    gpu_reason: str | None
    xp: object
    machine: dict
    bandwidth: float | None
    probe: dict | None
    gtools: list
    ctools: list
    skipped: dict


def _base_results(env, skipped=None, tools=None, settings=(), args=None):
    """A set's results before its cases: the machine, the copy bandwidth,
    the ``skipped`` tools (name: why), the ``settings`` (names of ``args``)
    and each of ``tools``' device, API and version."""
    results = {"machine": env.machine, "cases": [],
               "skipped_tools": {} if skipped is None else skipped, "failures": []}
    results["copy_bandwidth_bytes_per_s"] = env.bandwidth
    if env.probe:
        results["copy_bandwidth_probe"] = env.probe
    if settings:
        results["settings"] = {k: getattr(args, k) for k in settings}
    if tools is not None:
        results["tools"] = {t.name: {"device": t.device, "api": t.api, "version": t.version}
                            for t in tools}
    return results


def _note_failures(results, name, res, tools=MESHCCL_TOOLS):
    for tool in tools:
        r = res.get(tool, {})
        if r.get("status") == "error":
            results["failures"].append(f"{name}: {tool} error: {r['error']}")
        elif r.get("check", "").startswith("MISMATCH"):
            results["failures"].append(f"{name}: {tool} {r['check']} (vs {r.get('reference')})")


def _write(results, out, stem, md, plotter):
    with open(os.path.join(out, stem + ".json"), "w") as f:
        json.dump(results, f, indent=1, default=_json_default)
    with open(os.path.join(out, stem + ".md"), "w") as f:
        f.write(md)
    try:
        plotter(results, os.path.join(out, stem + ".png"))
    except Exception as e:
        log(f"plot failed: {e!r}")
    print(md)


def _case_entry(case, x_host, bw):
    return {
        "name": case.name, "pattern": case.pattern, "shape": list(case.shape),
        "connectivity": case.connectivity, "multi_valued": case.multi,
        "percolation_p": case.p, "cells": case.cells,
        "foreground_fraction": float(np.count_nonzero(x_host)) / case.cells,
        "floor_s": case.cells * (case.itemsize + 4) / bw if bw else None,
    }


def _run_cases(cases, args, env, results, gtools, ctools, skipped, extra=None):
    """Generates, times and checks each case into results['cases']."""
    xp = env.xp
    cache = ArrayCache(xp)
    bw = env.bandwidth
    for case in cases:
        log(f"case {case.name} ({case.cells:,} cells)")
        t0 = time.perf_counter()
        x = cache.get(case)
        x_dev = x if env.use_gpu else None
        x_host = xp.asnumpy(x) if env.use_gpu else x
        entry = _case_entry(case, x_host, bw)
        if extra:
            entry.update(extra(case))
        entry["tools"] = run_case(case, x_dev, x_host, gtools, ctools, skipped, args)
        entry["wall_s"] = time.perf_counter() - t0
        results["cases"].append(entry)
        _note_failures(results, case.name, entry["tools"])
        del x_host, x_dev, x
        if env.use_gpu:
            xp.get_default_memory_pool().free_all_blocks()
    cache = None


def run_standard(cases, args, env):
    """The standard cases (and the small-image latency): bench.json etc."""
    results = _base_results(env, env.skipped, env.gtools + env.ctools)
    _run_cases(cases, args, env, results, env.gtools, env.ctools, env.skipped)
    if args.latency:
        log("small-image latency")
        results["latency"] = run_latency(env.use_gpu, env.gtools, env.ctools)
    _write(results, args.out, "bench", markdown(results), plot)
    return results


def _over(limit):
    return lambda case: (f"skipped: over {limit:,} cells (--cpu-peer-cells)"
                         if case.cells > limit else None)


def run_shapes(cases, args, env):
    """The shapes set: every GPU tool, meshccl CPU (the reference) and the
    CPU peers on the cases up to --cpu-peer-cells; bench-shapes.*."""
    ctools = [dataclasses.replace(t, skip=_over(args.cpu_peer_cells)) if t.name in CPU_PEERS else t
              for t in env.ctools if t.name != "meshccl CPU threads"]
    skipped = dict(env.skipped)
    skipped["meshccl CPU threads"] = "not in this set (meshccl CPU, serial, is the reference)"
    results = _base_results(env, skipped, env.gtools + ctools, (
        "repeat", "min_time", "cpu_repeat", "cpu_peer_cells", "shrink", "quick"), args)

    def extra(case):
        bw = env.bandwidth
        n = case.neighbours
        return {"generator": generator_text(case), "dtype": case.dtype, "itemsize": case.itemsize,
                "ndim": case.ndim, "neighbours": n, "sigma": case.sigma, "q": case.q,
                "transpose": case.transpose,
                "neighbour_floor_s": case.cells * (n * case.itemsize + 4) / bw if bw else None}

    _run_cases(cases, args, env, results, env.gtools, ctools, skipped, extra)
    _write(results, args.out, "bench-shapes", markdown_shapes(results),
           functools.partial(plot, title="Shapes beyond the standard cases: throughput"))
    return results


def run_lattice(cases, args, env):
    """The lattice set: meshccl GPU with each feature and its plain call,
    meshccl CPU as the reference, skimage on the plain calls; bench-lattice.*."""
    results = _base_results(env, settings=(
        "repeat", "min_time", "cpu_repeat", "cpu_peer_cells", "shrink", "quick"), args=args)
    results["settings"].update(connectivity=LATTICE_CONNECTIVITY, background=LATTICE_BACKGROUND,
                               bond_p=BOND_P)
    skipped = {k: v for k, v in env.skipped.items() if k in ("meshccl GPU", "skimage")}
    peers = {}
    if any(t.name == "skimage" for t in env.ctools):
        from skimage.measure import label as sk_label

        peers["skimage"] = sk_label
    results["skipped_tools"] = skipped
    bw = env.bandwidth
    for group in dict.fromkeys(c.group for c in cases):
        members = [c for c in cases if c.group == group]
        inp_dev = LatticeInputs(members[0].shape, env.xp)
        inp_host = inp_dev.host()
        for case in members:
            log(f"case {case.name} ({case.cells:,} cells): {case.call}")
            t0 = time.perf_counter()
            res = run_lattice_case(case, inp_dev if env.use_gpu else None, inp_host, peers, args)
            x, kw = lattice_call(case, inp_host)
            entry = {"name": case.name, "group": group, "shape": list(case.shape),
                     "variant": case.variant, "call": case.call, "plain": case.plain,
                     "dtype": str(x.dtype), "cells": case.cells,
                     "tolerance": kw.get("tolerance"),
                     "bytes_per_cell": lattice_bytes(case, x, kw),
                     "floor_s": case.cells * lattice_bytes(case, x, kw) / bw if bw else None,
                     "tools": res, "wall_s": time.perf_counter() - t0}
            results["cases"].append(entry)
            _note_failures(results, case.name, res, ("meshccl GPU", "meshccl CPU"))
            x = kw = None
        inp_dev = inp_host = None
        if env.use_gpu:
            env.xp.get_default_memory_pool().free_all_blocks()
    _write(results, args.out, "bench-lattice", markdown_lattice(results), plot_lattice)
    return results


def run_memory(cases, args, env):
    """The memory set: every GPU tool's time and peak device memory on
    issue 56's three large cases, meshccl CPU (serial) as the reference
    the GPU's labels must equal; no CPU peer; bench-memory.*."""
    ctools = [t for t in env.ctools if t.name == "meshccl CPU"]
    skipped = {k: v for k, v in env.skipped.items() if k in GPU_TOOLS + ("meshccl CPU",)}
    results = _base_results(env, skipped, env.gtools + ctools, (
        "repeat", "min_time", "cpu_repeat", "shrink", "quick", "memory"), args)

    def extra(case):
        return {"generator": generator_text(case), "dtype": case.dtype}

    calls = [c for c in cases if isinstance(c, MemoryCall)]
    cases = [c for c in cases if not isinstance(c, MemoryCall)]
    _run_cases(cases, args, env, results, env.gtools, ctools, skipped, extra)
    for case in results["cases"]:
        cpu = case["tools"].get("meshccl CPU", {})
        if cpu.get("check") == "unchecked (skimage not run)":  # (no skimage in this set)
            cpu["check"] = "reference"
    results["calls"] = []
    for call in calls:
        log(f"call {call.name} ({call.cells:,} cells): {call.call}")
        t0 = time.perf_counter()
        x_dev = generate(call.array_case, env.xp)
        x_host = env.xp.asnumpy(x_dev) if env.use_gpu else x_dev
        res = run_memory_call(call, x_dev if env.use_gpu else None, x_host, args)
        results["calls"].append({"name": call.name, "shape": list(call.shape),
                                 "connectivity": call.connectivity, "dtype": call.dtype,
                                 "call": call.call, "kw": {k: str(v) for k, v in call.kw.items()},
                                 "generator": generator_text(call.array_case),
                                 "cells": call.cells, "tools": res,
                                 "wall_s": time.perf_counter() - t0})
        _note_failures(results, call.name, res, ("meshccl GPU", "meshccl CPU"))
        x_dev = x_host = None
        if env.use_gpu:
            env.xp.get_default_memory_pool().free_all_blocks()
        # (as it goes: a run cut short keeps the calls done so far)
        _write(results, args.out, "bench-memory", markdown_memory(results), plot_memory)
    _write(results, args.out, "bench-memory", markdown_memory(results), plot_memory)
    return results


def main(argv=None):
    args = parse_args(argv)
    k = args.shrink or (4 if args.quick else 1)
    chosen = {}
    if "standard" in args.sets:
        chosen["standard"] = select_cases(standard_cases(shrink=k), args.cases, required=False)
    if "shapes" in args.sets:
        chosen["shapes"] = select_cases(shape_cases(k), args.cases, required=False)
    if "lattice" in args.sets:
        chosen["lattice"] = select_lattice_cases(lattice_cases(k), args.cases)
    if "memory" in args.sets:
        chosen["memory"] = select_cases(memory_cases(k) + memory_calls(k), args.cases,
                                        required=False)
    if not any(chosen.values()):
        makers = {"standard": lambda: standard_cases(shrink=k), "shapes": lambda: shape_cases(k),
                  "lattice": lambda: lattice_cases(k),
                  "memory": lambda: memory_cases(k) + memory_calls(k)}
        every = [c.name for name in args.sets for c in makers[name]()]
        raise SystemExit(f"--cases {args.cases!r} matches no case of --sets "
                         f"{','.join(args.sets)}; the cases: {', '.join(every)}")
    if args.list_cases:
        print("\n".join(c.name for cases in chosen.values() for c in cases))
        return 0
    os.makedirs(args.out, exist_ok=True)

    if args.no_gpu:
        use_gpu, gpu_reason = False, "--no-gpu"
    elif meshccl.gpu_available():
        use_gpu, gpu_reason = True, None
    else:
        use_gpu, gpu_reason = False, "CuPy missing or no CUDA device"
        log(f"warning: {gpu_reason}; running the CPU tools only")

    machine = machine_info(use_gpu, gpu_reason)
    count = sum(len(v) for v in chosen.values())
    log(f"meshccl benchmark: {count} cases ({', '.join(f'{s}: {len(v)}' for s, v in chosen.items())}), "
        f"GPU {'on' if use_gpu else 'off (' + gpu_reason + ')'}")

    gtools, skipped, bw, probe = [], {}, None, None
    if use_gpu:
        import cupy

        xp = cupy
        bw, t = measure_copy_bandwidth()
        probe = {"bytes": COPY_BYTES, "median_s": t,
                 "method": "cudaMemcpyAsync D2D, CUDA events; 2 * bytes / time"}
        log(f"device copy bandwidth: {bw / 1e12:.2f} TB/s (read + write)")
        gtools, skipped = gpu_tools()
    else:
        xp = np
        for name in GPU_TOOLS:
            skipped[name] = f"skipped: {gpu_reason}"
    ctools, cskipped = cpu_tools(args.cpu_peers)
    skipped.update(cskipped)
    for name, why in skipped.items():
        log(f"  not run: {name}: {why}")
    env = Env(use_gpu, gpu_reason, xp, machine, bw, probe, gtools, ctools, skipped)

    runners = {"standard": run_standard, "shapes": run_shapes, "lattice": run_lattice,
               "memory": run_memory}
    failures = []
    for name, cases in chosen.items():
        if not cases:
            log(f"set {name}: no case matches --cases {args.cases!r}")
            continue
        log(f"set {name}: {len(cases)} cases")
        t0 = time.perf_counter()
        results = runners[name](cases, _set_args(args, name), env)
        log(f"set {name}: {time.perf_counter() - t0:.0f} s")
        failures += [f"{name}: {f}" if name != "standard" else f for f in results["failures"]]
    if failures:
        log("meshccl FAILED:\n  " + "\n  ".join(failures))
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
