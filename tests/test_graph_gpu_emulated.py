"""The GPU graph path's host side, run without a GPU.

A stand-in ``cupy`` module (NumPy arrays whose type claims to be CuPy's)
and serial Python emulations of the kernels of kernels/graph.cu and
kernels/number_roots.cu let meshccl.graph and meshccl._gpu.graph run end to end
here.  Every launch is checked against the kernel's C signature (pointer
element types, exact NumPy scalar types for int / long long / unsigned long
long arguments, a block of 1024 for the mode kernel), so argument-order or
type slips show up on a CPU-only machine.  The kernels themselves are
tested on the GPU by test_graph_gpu.py; these emulations only mirror them.
"""

import contextlib
import ctypes
import re
import sys
import types

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import connected_components as scipy_cc

from meshccl import _tuning

from conftest import small_graphs


class FakeArray(np.ndarray):
    def get(self):
        return np.asarray(self).copy()

    @property
    def data(self):
        """CuPy's MemoryPointer, as far as graph plans use it."""
        return FakeMemory(self)

    @property
    def device(self):
        return FakeDevice(getattr(self, "device_id", 0))


class FakeDevice:
    """cupy.cuda.Device: ``with`` makes it current (:data:`DEVICES` records
    the ids entered)."""

    def __init__(self, device_id=None):
        self.id = 0 if device_id is None else device_id

    def synchronize(self):
        pass

    def __enter__(self):
        DEVICES.append(self.id)
        return self

    def __exit__(self, *exc):
        pass


DEVICES = []


class FakeMemory:
    def __init__(self, array):
        self.array = array
        self.ptr = array.__array_interface__["data"][0]

    def copy_from_device_async(self, src, size, stream=None):
        dst = np.asarray(self.array).reshape(-1).view(np.uint8)
        dst[:size] = np.asarray(src.array).reshape(-1).view(np.uint8)[:size]

    def copy_to_host_async(self, dst, size, stream=None):
        assert size <= self.array.nbytes
        ctypes.memmove(dst, self.ptr, size)

    def copy_from_host_async(self, src, size, stream=None):
        assert size <= self.array.nbytes
        ctypes.memmove(self.ptr, src, size)


class FakePinned(np.ndarray):
    """cupy.cuda.alloc_pinned_memory's page-locked bytes: a buffer with ``ptr``."""

    @property
    def ptr(self):
        return self.__array_interface__["data"][0]


#: while a stand-in stream records a graph: the launches and fills recorded
#: (nothing runs until the graph is launched, as in CUDA's stream capture)
CAPTURE = []
CAPTURING = [False]


class FakeGraph:
    def __init__(self, ops):
        self.ops = ops
        self.launches = 0

    def launch(self, stream=None):
        self.launches += 1
        for op in self.ops:
            op()


def _filled(f, fill):
    """A stand-in of cupy.zeros / ones / full / arange: while recording, the
    array is made now and filled when the graph runs."""
    def make(*a, **k):
        out = fake(f(*a, **k))
        if CAPTURING[0]:
            out[...] = 0xAB if out.dtype.kind in "iu" else np.nan  # undefined until the graph runs
            CAPTURE.append(lambda: fill(out, a, k))
        return out
    return make


FakeArray.__module__ = "cupy._core.core"
C = {"int": np.int32, "long long": np.int64, "unsigned long long": np.uint64,
     "unsigned": np.uint32, "unsigned int": np.uint32, "unsigned char": np.uint8, "bool": None}


def fake(a):
    return np.asarray(a).view(FakeArray)


def _wrap(f):
    return lambda *a, **k: fake(f(*[np.asarray(x) if isinstance(x, FakeArray) else x for x in a], **k))


def make_cupy():
    cp = types.ModuleType("cupy")
    cp.ndarray = FakeArray
    for name in ("asarray", "ascontiguousarray", "empty", "cumsum", "stack",
                 "diff", "minimum", "concatenate", "searchsorted", "sort", "abs", "isfinite"):
        setattr(cp, name, _wrap(getattr(np, name)))
    cp.zeros = _filled(np.zeros, lambda out, a, k: out.fill(0))
    cp.ones = _filled(np.ones, lambda out, a, k: out.fill(1))
    cp.full = _filled(np.full, lambda out, a, k: out.fill(a[1] if len(a) > 1 else k["fill_value"]))
    cp.arange = _filled(np.arange, lambda out, a, k: out.__setitem__(..., np.arange(*a, **k)))
    pool = types.SimpleNamespace(malloc=lambda size: None, free_all_blocks=lambda: None)
    cp.get_default_memory_pool = lambda: pool
    for name in ("int32", "int64", "uint64", "uint32", "float32", "int8", "uint8"):
        setattr(cp, name, getattr(np, name))
    cp.cuda = types.SimpleNamespace(
        Device=FakeDevice,
        runtime=types.SimpleNamespace(getDeviceProperties=lambda d: {"multiProcessorCount": 2},
                                      getDeviceCount=lambda: 1),
        Stream=FakeStream, Event=FakeEvent, get_current_stream=lambda: FakeStream.current,
        alloc_pinned_memory=lambda size: np.zeros(size, np.uint8).view(FakePinned),
        get_allocator=lambda: pool.malloc, using_allocator=lambda alloc: contextlib.nullcontext())
    return cp


class FakeStream:
    """Streams run nothing here (launches are serial), but check_aside's
    order of events is checked: a stream must wait for the event of the
    other one before it may use what that one wrote."""
    current = None

    def __init__(self, non_blocking=False):
        self.waited = []
        self.ptr = id(self)

    def wait_event(self, event):
        assert event.recorded, "waiting for an event that was never recorded"
        self.waited.append(event)

    def synchronize(self):
        pass  # launches ran when made

    def record(self, event=None):
        event = event or FakeEvent()
        event.record(self)
        return event

    def is_capturing(self):
        return False

    def __enter__(self):
        self.outer, FakeStream.current = FakeStream.current, self
        return self

    def __exit__(self, *exc):
        FakeStream.current = self.outer

    def begin_capture(self):
        assert not CAPTURING[0], "a capture inside a capture"
        CAPTURING[0] = True
        CAPTURE.clear()

    def end_capture(self):
        assert CAPTURING[0], "end_capture without begin_capture"
        CAPTURING[0] = False
        ops = list(CAPTURE)
        CAPTURE.clear()
        return FakeGraph(ops)


FakeStream.current = FakeStream()


class FakeEvent:
    def __init__(self, disable_timing=False):
        self.recorded = None

    def record(self, stream=None):
        self.recorded = stream or FakeStream.current

    def synchronize(self):
        assert self.recorded, "waiting for an event that was never recorded"


# ---------------------------------------------------------------- kernels

def find(P, x):
    while P[x] != x:
        P[x] = P[P[x]]
        x = P[x]
    return x


def in_range(row, n):
    """A row's entries that vertex_of() lets through: values in [0, n)."""
    return [int(u) for u in row if 0 <= int(u) < n]


def unite(P, a, b):
    a, b = find(P, a), find(P, b)
    if a != b:
        P[max(a, b)] = min(a, b)


#: (rule, compression) pairs instantiated in graph.cu (MESHCCL_GRAPH_RULES)
VALID_RULES = {(0, c) for c in range(4)} | {(1, 0), (1, 1), (1, 2), (1, 4)} | \
    {(2, c) for c in range(4)} | {(3, c) for c in range(4)} | {(4, 0), (4, 2)}


def mix64(x):
    """splitmix64's finaliser of graph.cu, on uint64 arrays (wrapping)."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9e3779b97f4a7c15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
        return x ^ (x >> np.uint64(31))


def parse(expr):
    name, targs = re.fullmatch(r"(\w+)<(.*)>", expr).groups()
    return name, [t.strip() for t in targs.split(",")]


def check_args(expr, args, sig):
    assert len(args) == len(sig), f"{expr}: {len(args)} arguments for {len(sig)} parameters"
    for k, (a, (kind, ctype)) in enumerate(zip(args, sig)):
        want = C[ctype]
        if kind == "ptr?" and not isinstance(a, FakeArray):  # may be null: 8 zero bytes
            assert type(a) is np.uint64 and a == 0, f"{expr} argument {k}: {ctype}* or null, got {a!r}"
        elif kind in ("ptr", "ptr?"):
            assert isinstance(a, FakeArray), f"{expr} argument {k}: a device array, got {type(a)}"
            assert a.dtype == want, f"{expr} argument {k}: {ctype}*, got {a.dtype}"
            assert a.flags.c_contiguous, f"{expr} argument {k} is not contiguous"
        else:
            assert type(a) is want, f"{expr} argument {k}: {ctype}, got {type(a).__name__}"


def emulate(expr):
    name, t = parse(expr)
    P_ = ("ptr", t[0])
    if name == "meshccl_flatten":
        sig = [P_, ("val", t[0]), ("ptr", "unsigned"), ("ptr", t[0])]

        def run(P, n, bits, counts):
            for i in range(n):
                P[i] = find(P, i)
            for w in range(len(bits)):
                b = 0
                for i in range(32 * w, min(32 * w + 32, n)):
                    b |= int(P[i] == i) << (i - 32 * w)
                bits[w], counts[w] = b, bin(b).count("1")
    elif name == "meshccl_relabel":
        sig = [P_, ("val", t[0]), ("ptr", "unsigned"), ("ptr", t[0]), ("val", t[0]),
               ("ptr?", "long long"), ("val", t[0])]

        def run(P, n, bits, incl, base, count, words):
            assert words == len(bits)
            if isinstance(count, FakeArray):
                count[0] = incl[words - 1] if words else 0
            for i in range(n):
                r = int(P[i])
                P[i] = incl[r >> 5] - bin(int(bits[r >> 5]) >> (r & 31)).count("1") + 1 + base
    elif name == "meshccl_scan_block":
        sig = [("ptr", t[0]), ("ptr", t[0]), ("val", t[0])]

        def run(counts, incl, words):
            total = 0
            for w in range(int(words)):
                total += int(counts[w])
                incl[w] = total
    elif name == "meshccl_word_sums":
        sig = [("ptr", "unsigned"), ("val", t[0]), ("ptr", t[0])]

        def run(bits, words, sums, grid, block):
            pop = np.array([bin(int(b)).count("1") for b in bits[:int(words)]], np.int64)
            for b in range(grid):
                sums[b] = pop[b * block:(b + 1) * block].sum()
    elif name == "meshccl_rank_words":
        sig = [("ptr", "unsigned"), ("ptr", t[0]), ("val", t[0]), ("ptr", t[0])]

        def run(bits, sums_incl, words, incl, grid, block):
            pop = np.array([bin(int(b)).count("1") for b in bits[:int(words)]], np.int64)
            for b in range(grid):
                part = np.cumsum(pop[b * block:(b + 1) * block])
                incl[b * block:b * block + part.size] = (sums_incl[b - 1] if b else 0) + part
    elif name == "meshccl_graph_ecl_init":
        sig = [("ptr", "long long"), ("ptr", t[1]), P_, ("val", t[0])]

        def run(indptr, indices, P, n):
            for v in range(n):
                row = indices[indptr[v]:min(indptr[v] + 16, indptr[v + 1])]
                P[v] = next((u for u in in_range(row, n) if u < v), v)
    elif name.startswith("meshccl_graph_vertex_") and name != "meshccl_graph_vertex_lp":
        level, mode, sym = name.rsplit("_", 1)[1], int(t[2]), t[3] == "true"
        sig = [("ptr", "long long"), ("ptr", t[1]), P_, ("val", t[0]), ("val", "int"), P_, P_,
               ("ptr", "unsigned long long")]

        def vin_of(P, v, L):
            return mode == 1 and (P[v] == L or find(P, v) == L)

        def take(P, v, u, vin, L):
            if u == v or (mode == 0 and sym and u > v) or (mode == 1 and vin and P[u] == L):
                return
            unite(P, v, u)

        def run(indptr, indices, P, n, skip, big, wl, top):
            L = big[0] if mode == 1 else -1
            if level == "thread":
                for v in range(n):
                    b, e = indptr[v] + skip, indptr[v + 1]
                    if b >= e:
                        continue
                    vin = vin_of(P, v, L)
                    if mode == 1 and sym and vin:
                        continue
                    if e - b > 352:
                        wl[n - 1 - int(top[1])] = v
                        top[1] += 1
                    elif e - b > 16:
                        wl[int(top[0])] = v
                        top[0] += 1
                    else:
                        first = mode == 0
                        for u in in_range(indices[b:e], n):
                            if first and u < v:
                                first = False
                                continue
                            take(P, v, u, vin, L)
            else:
                vs = wl[:int(top[0])] if level == "warp" else [wl[n - 1 - i] for i in range(int(top[1]))]
                for v in vs:
                    vin = vin_of(P, v, L)
                    for u in in_range(indices[indptr[v] + skip:indptr[v + 1]], n):
                        take(P, v, u, vin, L)
    elif name == "meshccl_graph_kout":
        sig = [("ptr", "long long"), ("ptr", t[1]), P_, ("val", t[0]), ("val", "int"), ("val", "int"), P_]

        def run(indptr, indices, P, n, first, k, big):
            L = big[0] if 2 * int(big[1]) >= 1024 else -1  # L's vertices skip (symmetric only)
            for v in range(n):
                if L >= 0 and P[v] == L:
                    continue
                b = indptr[v] + first
                for u in in_range(indices[b:min(b + k, indptr[v + 1])], n):
                    if u != v:
                        unite(P, v, u)
    elif name == "meshccl_graph_compress":
        sig = [P_, ("val", t[0])]

        def run(P, n):
            for v in range(n):
                P[v] = find(P, v)
    elif name == "meshccl_graph_sample_mode":
        sig = [P_, ("val", t[0]), ("val", "int"), ("val", "unsigned long long"), P_]

        def run(P, n, count, seed, big):
            picks = mix64(np.uint64(seed) + np.arange(count, dtype=np.uint64)) % np.uint64(n)
            roots = [find(P, int(x)) for x in picks]
            vals, freq = np.unique(roots, return_counts=True)
            big[0] = vals[np.argmax(freq)]  # the smallest of the most frequent
            big[1] = freq.max()
    elif name == "meshccl_graph_mode":
        sig = [P_, ("val", "int"), P_]

        def run(samples, count, big):
            vals, freq = np.unique(samples[:count], return_counts=True)
            big[0] = vals[np.argmax(freq)]  # the smallest of the most frequent
            big[1] = freq.max()
    elif name == "meshccl_graph_degree":
        sig = [("ptr", t[0]), ("val", "long long"), ("ptr", "unsigned long long")]

        def run(src, m, deg):
            np.add.at(deg, np.asarray(src) + 1, 1)
    elif name == "meshccl_graph_scatter":
        sig = [("ptr", t[0]), ("ptr", t[0]), ("val", "long long"), ("ptr", "unsigned long long"), ("ptr", t[0])]

        def run(src, dst, m, cursor, indices):
            for e in range(m)[::-1]:  # any order: the kernel's is timing-dependent
                indices[cursor[src[e]]] = dst[e]
                cursor[src[e]] += 1
    elif name == "meshccl_graph_scatter_rows":
        sig = [("ptr", "long long"), ("ptr", t[0]), ("val", "long long"),
               ("ptr", "unsigned long long"), ("ptr", t[0])]

        def run(indptr, indices, n, cursor, out):
            for v in range(n)[::-1]:  # any order: the kernel's is timing-dependent
                for e in range(indptr[v], indptr[v + 1]):
                    out[cursor[indices[e]]] = v
                    cursor[indices[e]] += 1
    elif name == "meshccl_graph_rule":
        csr, sym, rule, comp = t[2] == "true", t[3] == "true", int(t[4]), int(t[5])
        assert (rule, comp) in VALID_RULES, f"{expr}: rule {rule} with compression {comp}"
        sig = [("ptr", "long long"), ("ptr", t[1]), ("ptr", t[1]), P_, P_, ("val", t[0]),
               ("val", "long long")]

        def run(indptr, src, dst, P, H, n, m):
            rows = np.repeat(np.arange(n), np.diff(indptr)) if csr else src
            assert len(rows) == m
            if rule == 3:
                assert len(H) == n and (H == -1).all(), "hooks needs H = -1"
            for a, b in zip(rows, dst):
                if a == b or (sym and a < b):
                    continue
                ra, rb = find(P, a), find(P, b)
                if ra != rb:
                    if rule == 4:  # any total order will do: the jtb_* passes fix the roots
                        P[min(ra, rb)] = max(ra, rb)
                    else:
                        P[max(ra, rb)] = min(ra, rb)
                        if rule == 3:
                            H[max(ra, rb)] = min(ra, rb)
    elif name in ("meshccl_graph_jtb_roots", "meshccl_graph_jtb_min", "meshccl_graph_jtb_assign"):
        sig = [P_, P_, ("val", t[0])]
        step = name.rsplit("_", 1)[1]

        def run(P, R, n):
            for v in range(n):
                if step == "roots":
                    r = v
                    while P[r] != r:
                        r = P[r]
                    R[v] = r
                elif step == "min":
                    if R[v] != v:
                        P[R[v]] = min(P[R[v]], v)
                elif R[v] != v:
                    P[v] = P[R[v]]
    elif name == "meshccl_graph_forest":
        csr = t[2] == "true"
        sig = [("ptr", "long long"), ("ptr", t[1]), ("ptr", t[1]), P_, ("val", t[0]),
               ("val", "long long"), ("ptr", "long long"), ("ptr", "unsigned long long")]

        def run(indptr, src, dst, P, n, m, fe, count):
            rows = np.repeat(np.arange(n), np.diff(indptr)) if csr else src
            assert len(rows) == m
            for e in range(m)[::-1]:  # any order
                a, b = find(P, rows[e]), find(P, dst[e])
                if a != b:
                    P[max(a, b)] = min(a, b)
                    fe[int(count[0])] = e
                    count[0] += 1
    elif name == "meshccl_graph_rows":
        sig = [("ptr", "long long"), ("val", "long long"), ("ptr", t[0])]

        def run(indptr, n, rows):
            rows[:] = np.repeat(np.arange(n), np.diff(indptr))
    elif name == "meshccl_graph_edge_lp":
        sym = t[2] == "true"
        sig = [("ptr", t[1]), ("ptr", t[1]), P_, ("val", "long long"), ("ptr", "int")]

        def run(src, dst, P, m, flag):
            for a, b in zip(src, dst):
                if a == b or (sym and a < b):
                    continue
                lo = min(P[a], P[b])
                if P[a] != lo or P[b] != lo:
                    P[a] = P[b] = lo
                    flag[0] = 1
    elif name == "meshccl_graph_vertex_lp":
        sig = [("ptr", "long long"), ("ptr", t[1]), P_, ("val", t[0]), ("ptr", "unsigned char"),
               ("ptr", "unsigned char"), ("ptr", "int")]

        def run(indptr, indices, P, n, active, nxt, flag):
            for v in range(n):
                if not active[v]:
                    continue
                active[v] = 0
                for u in indices[indptr[v]:indptr[v + 1]]:
                    if P[v] < P[u]:
                        P[u] = P[v]
                        nxt[u] = flag[0] = 1
                    elif P[u] < P[v]:
                        P[v] = P[u]
                        nxt[v] = flag[0] = 1
    elif name == "meshccl_graph_bfs_expand":
        sig = [("ptr", "long long"), ("ptr", t[1]), P_, P_, ("ptr", "unsigned long long"), P_,
               ("ptr", "unsigned long long"), P_, P_]

        def run(indptr, indices, P, inq, in_count, out, out_count, label, minv):
            for v in inq[:int(in_count[0])]:
                for u in indices[indptr[v]:indptr[v + 1]]:
                    if P[u] == -1:
                        P[u] = label[0]
                        out[int(out_count[0])] = u
                        out_count[0] += 1
                        minv[0] = min(minv[0], u)
    elif name == "meshccl_graph_bfs_next":
        sig = [P_, ("val", t[0]), ("ptr", "unsigned long long"), P_, ("ptr", "unsigned long long"),
               P_, ("ptr", "long long"), ("ptr", "int")]

        def run(P, n, in_count, out, out_count, label, cursor, flag):
            in_count[0] = 0
            if out_count[0]:
                flag[0] = 1
                return
            free = np.flatnonzero(np.asarray(P[int(cursor[0]):]) == -1)
            if free.size:
                s = int(cursor[0]) + int(free[0])
                P[s] = out[0] = label[0] = s
                out_count[0] = 1
                cursor[0] = s + 1
                flag[0] = 1
            else:
                cursor[0] = n
    elif name == "meshccl_graph_sv_hook":
        sym = t[2] == "true"
        sig = [("ptr", t[1]), ("ptr", t[1]), P_, ("val", "long long"), ("ptr", "int")]

        def run(src, dst, P, m, flag):
            for a, b in zip(src, dst):
                if a == b or (sym and a < b) or P[a] == P[b]:
                    continue
                hi, lo = max(P[a], P[b]), min(P[a], P[b])
                if P[hi] == hi:
                    P[hi] = lo
                    flag[0] = 1
    elif name == "meshccl_graph_sv_jump":
        sig = [P_, ("val", t[0]), ("ptr", "int")]

        def run(P, n, flag):
            for v in range(n):
                if P[P[v]] != P[v]:
                    P[v] = P[P[v]]
                    flag[0] = 1
    elif name == "meshccl_graph_hb_hook":
        sig = [("ptr", "long long"), ("ptr", t[1]), P_, ("val", t[0]), ("val", "int")]

        def run(indptr, indices, P, n, k):
            for v in range(n):
                if P[v] == v:
                    for u in in_range(indices[indptr[v]:min(indptr[v] + k, indptr[v + 1])], n):
                        if u != v:
                            unite(P, v, u)
    elif name == "meshccl_graph_hb_init":
        sig = [("ptr", "long long"), ("ptr", t[1]), P_, ("val", t[0]), P_, ("ptr", "unsigned long long")]

        def run(indptr, indices, P, n, roots, count):
            for v in range(n):
                row = indices[indptr[v]:min(indptr[v] + 16, indptr[v + 1])]
                P[v] = next((u for u in in_range(row, n) if u < v), v)
            # listed in a shuffled order: the GPU's warps take slots in any order
            listed = [v for v in range(n) if P[v] == v and indptr[v + 1] > indptr[v]]
            listed = np.random.default_rng(n).permutation(np.array(listed, dtype=np.int64))
            roots[count[0]:count[0] + listed.size] = listed
            count[0] += listed.size
    elif name == "meshccl_graph_hb_link":
        sig = [("ptr", "long long"), ("ptr", t[1]), P_, ("val", t[0]), ("val", "int"), P_,
               ("ptr", "unsigned long long")]

        def run(indptr, indices, P, n, k, roots, count):
            for v in roots[:int(count[0])]:
                for u in in_range(indices[indptr[v]:min(indptr[v] + k, indptr[v + 1])], n):
                    a, b = int(v), int(u)  # link_min, one thread at a time
                    while a != b:
                        a, b = max(a, b), min(a, b)
                        if P[a] != a:
                            a = int(P[a])
                            continue
                        old = int(P[a])
                        P[a] = min(old, b)
                        if old == a:
                            break
                        a = old
    elif name == "meshccl_graph_pick_source":
        sig = [("ptr", "long long"), ("val", t[0]), P_, ("val", "unsigned long long")]

        def run(indptr, n, out, seed):
            xs = np.random.default_rng(int(seed)).integers(0, n, 1024)
            deg = indptr[xs + 1] - indptr[xs]
            out[0] = min(xs[deg == deg.max()])
    elif name == "meshccl_graph_bfs_seed":
        sig = [P_, P_, P_, ("ptr", "unsigned long long"), P_]

        def run(P, source, frontier, count, minv):
            s = source[0]
            P[s] = frontier[0] = minv[0] = s
            count[0] = 1
    elif name == "meshccl_graph_tile_probe":
        sig = [("ptr", t[0]), ("ptr", t[1]), ("val", "long long"), ("val", "long long"),
               ("val", "int"), ("ptr", "long long"), ("val", "unsigned long long")]

        def run(indptr, indices, n, m, shift, hits, seed):
            s = min(m, 1024)
            e = (mix64(np.uint64(seed) + np.arange(s, dtype=np.uint64)) % np.uint64(m)).astype(np.int64)
            rows = np.clip(np.searchsorted(np.asarray(indptr)[:n], e, side="right") - 1, 0, n - 1)
            u = np.asarray(indices)[e].astype(np.int64)
            hits[0] = int(np.count_nonzero((u >> int(shift)) == (rows >> int(shift))))
    elif name == "meshccl_graph_tile_local":
        sig = [("ptr", "long long"), ("ptr", t[1]), P_, ("val", t[0]), ("val", "int")]

        def run(indptr, indices, P, n, shift, shared_mem):
            tile = 1 << int(shift)
            assert shared_mem == 4 * tile, f"{expr}: {shared_mem} bytes of shared memory"
            for base in range(0, n, tile):
                size = min(tile, n - base)
                S = list(range(size))
                for i in range(size):
                    for u in in_range(indices[indptr[base + i]:indptr[base + i + 1]], n):
                        if 0 <= u - base < size and u - base != i:
                            unite(S, i, u - base)
                for i in range(size):
                    P[base + i] = base + find(S, i)
    elif name == "meshccl_graph_tile_cross":
        sym = t[2] == "true"
        sig = [("ptr", "long long"), ("ptr", t[1]), P_, ("val", t[0]), ("val", "int")]

        def run(indptr, indices, P, n, shift):
            s = int(shift)
            for v in range(n):
                for u in in_range(indices[indptr[v]:indptr[v + 1]], n):
                    if u >> s != v >> s and not (sym and u > v):
                        unite(P, v, u)
    elif name == "meshccl_graph_chain_probe_edges":
        sig = [("ptr", t[0]), ("ptr", t[0]), ("val", "long long"), ("ptr", "long long"),
               ("val", "unsigned long long")]

        def run(src, dst, m, hits, seed):
            s = min(m, 1024)
            e = (mix64(np.uint64(seed) + np.arange(s, dtype=np.uint64)) % np.uint64(m)).astype(np.int64)
            d = np.asarray(dst)[e].astype(np.int64) - np.asarray(src)[e].astype(np.int64)
            hits[0] = int(np.count_nonzero(np.abs(d) == 1))
    elif name == "meshccl_graph_check":
        sig = [("ptr", t[0]), ("val", "long long"), ("ptr", t[1]), ("ptr?", t[1]),
               ("val", "long long"), ("ptr", "long long")]

        def run(indptr, nptr, a, b, m, part, grid, block):
            """Block k's share: the entries e (of indptr's steps: k) with
            (e % threads) // block == k, as the grid-stride loops give it."""
            big = 2**63 - 1
            threads = grid * block
            b = None if isinstance(b, np.uint64) else b
            assert m == a.size and (b is None or b.size == m) and 0 <= nptr <= indptr.size
            ip = np.asarray(indptr)[:nptr]
            drops = np.nonzero(ip[1:] < ip[:-1])[0]
            owner = (np.arange(m) % threads) // block
            for k in range(grid):
                mine = [np.asarray(x)[owner == k] for x in (a, b) if x is not None]
                assert bool(mine[0].size) == (k * block < m)
                seen = mine[0].size > 0
                part[3 * k] = min(min(int(x.min()) for x in mine), big) if seen else big
                part[3 * k + 1] = min(max(int(x.max()) for x in mine), big) if seen else -big - 1
                part[3 * k + 2] = int(np.any((drops % threads) // block == k))
    elif name == "meshccl_graph_check_done":
        sig = [("ptr", "long long"), ("val", "int"), ("ptr", t[0]), ("val", "long long"),
               ("ptr", "long long")]

        def run(part, blocks, indptr, nptr, facts):
            big = 2**63 - 1
            p = np.asarray(part)[:3 * blocks].reshape(-1, 3)
            assert p.shape[0] == blocks >= 1
            facts[0] = min(int(indptr[0]), big) if nptr else 0
            facts[1] = min(int(indptr[nptr - 1]), big) if nptr else 0
            facts[2] = -1 if p[:, 2].any() else 0
            facts[3], facts[4] = p[:, 0].min(), p[:, 1].max()
    elif name == "meshccl_graph_clamp_indptr":
        sig = [("ptr", t[0]), ("val", "long long"), ("val", "long long"), ("ptr", "long long")]

        def run(indptr, nptr, m, out):
            big = 2**63 - 1
            out[:nptr] = [min(max(min(int(x), big), 0), m) for x in indptr[:nptr]]
    elif name == "meshccl_graph_bfs_sample_done":
        sig = [P_, ("val", t[0]), P_]

        def run(P, n, minv):
            P[:] = np.where(np.asarray(P) == -1, np.arange(n), minv[0])
    else:
        raise AssertionError(f"no emulation for {expr}")

    def launch(grid, block, args, shared_mem=0):
        check_args(expr, args, sig)
        assert all(isinstance(g, int) and 0 < g < 2**31 for g in grid), f"{expr}: grid {grid}"
        if name in ("meshccl_graph_mode", "meshccl_graph_sample_mode", "meshccl_graph_pick_source",
                    "meshccl_graph_tile_probe",
                    "meshccl_graph_chain_probe_edges", "meshccl_graph_check_done"):
            assert block == (1024,), f"{expr} needs a block of 1024"
        if name in ("meshccl_graph_bfs_next", "meshccl_graph_pick_source", "meshccl_graph_mode",
                    "meshccl_graph_sample_mode",
                    "meshccl_graph_tile_probe", "meshccl_graph_chain_probe_edges",
                    "meshccl_graph_check_done"):
            assert grid == (1,), f"{expr} runs as one block"
        if name == "meshccl_graph_check":  # its blocks' parts depend on the launch shape
            assert len(block) == 1 and block[0] % 32 == 0 and block[0] <= 1024, f"{expr}: block {block}"
            assert args[-1].size >= 3 * grid[0], f"{expr}: part too small for {grid[0]} blocks"
            run(*args, grid=grid[0], block=block[0])
        elif name == "meshccl_graph_tile_local":  # a block of whole warps, its shared forest
            assert len(block) == 1 and block[0] % 32 == 0 and block[0] <= 1024, f"{expr}: block {block}"
            run(*args, shared_mem=shared_mem)
        elif name in ("meshccl_word_sums", "meshccl_rank_words"):  # blocks of 1024 words
            assert block == (1024,), f"{expr} needs a block of 1024"
            words = int(args[1] if name == "meshccl_word_sums" else args[2])
            assert grid == (-(-words // 1024),), f"{expr}: grid {grid} for {words} words"
            run(*args, grid=grid[0], block=block[0])
        else:
            run(*args)

    def launch_or_record(grid, block, args, shared_mem=0):
        if CAPTURING[0]:
            CAPTURE.append(lambda: launch(grid, block, args, shared_mem))
        else:
            launch(grid, block, args, shared_mem)

    return launch_or_record


@pytest.fixture
def emulated(monkeypatch):
    """meshccl.graph with the stand-in cupy and the emulated kernels."""
    monkeypatch.setitem(sys.modules, "cupy", make_cupy())
    from meshccl._gpu import graph as gpu_graph
    from meshccl._gpu import number_roots as gpu_relabel

    for mod in (gpu_graph, gpu_relabel):
        monkeypatch.setattr(mod, "kernels", lambda filename, *names: tuple(emulate(n) for n in names))
    from meshccl._gpu import graph_plan, staging

    caches = (gpu_graph._sm_count, gpu_graph._dummy, gpu_graph._side_stream,
              graph_plan._capture_stream)
    for c in caches:  # the real CuPy's objects, where GPU tests ran first
        c.cache_clear()
    staging.release()  # (and the real page-locked buffers)
    # no plans unless a test asks (NumPy reuses addresses, and a replay
    # here does not redo casts made while recording)
    with _tuning.override(GRAPH_PLAN_AFTER=0):
        yield
    graph_plan.release()
    CAPTURING[0] = False
    CAPTURE.clear()
    for c in caches:
        c.cache_clear()
    staging.release()


@pytest.fixture
def tune():
    """``tune(NAME=value, ...)``: ``_tuning.override`` until the test ends."""
    with contextlib.ExitStack() as stack:
        yield lambda **values: stack.enter_context(_tuning.override(**values))


def gpu_forms(n, src, dst):
    csr = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr()
    from meshccl.graph import Edges
    yield "tuple", (fake(csr.indptr), fake(csr.indices))
    yield "tuple int64", (fake(csr.indptr.astype(np.int64)), fake(csr.indices.astype(np.int64)))
    yield "tuple uint16", (fake(csr.indptr), fake(csr.indices.astype(np.uint16)))
    yield "edges", Edges(fake(src), fake(dst), n)
    yield "edges int32", Edges(fake(src.astype(np.int32)), fake(dst.astype(np.int32)), n)


def method_and_compression():
    from meshccl.graph import COMPRESSION, METHODS

    return st.sampled_from([(m, c) for m in METHODS for c in (None,) + COMPRESSION[m]])


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(g=small_graphs(30, 60), mc=method_and_compression(), symmetric=st.booleans())
def test_gpu_path_emulated(emulated, g, mc, symmetric):
    from meshccl.graph import connected_components

    method, compression = mc
    n, src, dst = g
    if symmetric:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    want_n, want = scipy_cc(sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)))
    for name, form in gpu_forms(n, src, dst):
        got_n, got = connected_components(form, method=method, symmetric=symmetric,
                                          compression=compression)
        assert isinstance(got, FakeArray) and isinstance(got_n, int), name
        assert got_n == want_n and got.dtype == np.int32, (name, method)
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{name} {method}")


ALL_GPU = ["unionfind", "ecl", "tiles", "kout", "hb", "bfs-sample", "rem-cas", "early", "hooks", "jtb",
           "sv", "edge-lp", "vertex-lp", "bfs-cc"]


@pytest.mark.parametrize("method", ALL_GPU)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_degree_classes_emulated(emulated, method, index_dtype):
    """Hubs of degree 17..352 and above go through the worklist."""
    from meshccl._gpu import graph as gpu

    rng = np.random.default_rng(1)
    n = 1500
    src = np.concatenate([np.full(400, 3), rng.integers(0, n, 100), np.full(40, 700), rng.integers(0, n, 300)])
    dst = np.concatenate([rng.integers(0, n, 400), np.full(100, 9), rng.integers(0, n, 40), rng.integers(0, n, 300)])
    want_n, want = scipy_cc(sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)))
    csr = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr()
    for kind, arrays in (("edges", (fake(src), fake(dst))), ("csr", (fake(csr.indptr), fake(csr.indices)))):
        count, labels = gpu.components(kind, arrays, n, method, index_dtype=index_dtype)
        assert labels.dtype == index_dtype and int(count) == want_n
        np.testing.assert_array_equal(np.asarray(labels), want)


@pytest.mark.parametrize("n", [40_000, 70_000])
def test_long_scan_emulated(emulated, n):
    """The numbering's scan of more than ROOTS_ONE_BLOCK_SCAN_WORDS words (lowered here,
    so that a small graph takes the long path): word sums, their scan, the
    per-word sums, over 2 and 3 blocks of 1024 words, the last one partial;
    labels as SciPy's."""
    from meshccl import _tuning
    from meshccl._gpu import graph as gpu

    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, n, n // 3), rng.integers(0, n, n // 3)
    want_n, want = scipy_cc(sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)))
    with _tuning.override(ROOTS_ONE_BLOCK_SCAN_WORDS=8):
        count, labels = gpu.components("edges", (fake(src), fake(dst)), n, "unionfind")
    assert int(count) == want_n
    np.testing.assert_array_equal(np.asarray(labels), want)


@pytest.mark.parametrize("symmetric", [True, False], ids=["link", "cas"])
def test_hb_hooks_emulated(emulated, symmetric):
    """Both forms of HB's hook step (atomicMin unions over listed roots for
    a graph promised symmetric, GConn's CAS pass for any other) on graphs
    whose roots share entries in other trees: labels equal SciPy's, both
    index types; the CAS pass also on graphs stored one way."""
    from meshccl._gpu import graph as gpu

    rng = np.random.default_rng(3)
    for n, m in ((1, 0), (40, 30), (600, 900), (2000, 5000)):
        src, dst = rng.integers(0, max(n, 1), m), rng.integers(0, max(n, 1), m)
        both = (np.concatenate([src, dst]), np.concatenate([dst, src]))
        for s, d in [both] + ([] if symmetric else [(src, dst)]):
            coo = sp.coo_matrix((np.ones(s.size), (s, d)), shape=(n, n))
            want_n, want = scipy_cc(coo)
            csr = coo.tocsr()
            for index_dtype in (np.int32, np.int64):
                count, labels = gpu.components("csr", (fake(csr.indptr), fake(csr.indices)), n,
                                               "hb", symmetric=symmetric, index_dtype=index_dtype)
                assert int(count) == want_n, (n, symmetric)
                np.testing.assert_array_equal(np.asarray(labels), want)


def _link_min_steps(P, a, b):
    """kernels/graph.cu's link_min as a generator: it yields after each
    access to P (a load, or the atomicMin, which reads and writes at once),
    so a scheduler can interleave many threads between any two accesses."""
    while a != b:
        if a < b:
            a, b = b, a
        p = P[a]
        yield
        if p != a:
            a = p
            continue
        old = P[a]          # atomicMin: read and lower in one step
        P[a] = min(old, b)
        yield
        if old == a:
            return
        a = old


def _root(P, x):
    while P[x] != x:
        x = P[x]
    return x


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 24), data=st.data())
def test_link_min_interleavings(n, data):
    """link_min (the 'link' hook step) under every interleaving hypothesis
    picks: threads each join one pair, starting from a forest whose parents
    are smaller vertices (the start's first-smaller-neighbour pointers), and
    a scheduler runs one access of a random thread at a time.  Every parent
    must stay at or below its vertex at every step, and at the end the sets
    must be the components of the forest's links plus the pairs, each with
    its smallest vertex as root."""
    idx = st.integers(0, n - 1)
    start = data.draw(st.lists(idx, min_size=n, max_size=n))
    P = [min(v, start[v]) for v in range(n)]
    links = [(v, P[v]) for v in range(n) if P[v] != v]
    hub = data.draw(idx)
    pairs = data.draw(st.lists(st.tuples(idx, idx), max_size=30))
    pairs += [(x, hub) for x in data.draw(st.lists(idx, max_size=12))]  # a hot root
    threads = [_link_min_steps(P, a, b) for a, b in pairs]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    while threads:
        k = int(rng.integers(len(threads)))
        try:
            next(threads[k])
        except StopIteration:
            threads.pop(k)
        assert all(P[x] <= x for x in range(n))
    edges = np.array(links + pairs, dtype=np.int64).reshape(-1, 2)
    _count, want = scipy_cc(sp.coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])),
                                          shape=(n, n)), directed=False)
    roots = np.array([_root(P, x) for x in range(n)])
    for x in range(n):
        same = want == want[x]
        assert (roots[same] == roots[x]).all() and (roots[~same] != roots[x]).all()
        assert roots[x] == np.flatnonzero(same)[0]


@pytest.mark.parametrize("symmetric", [True, False])
def test_hb_hook_follows_the_symmetric_promise(emulated, monkeypatch, symmetric):
    """A graph promised symmetric takes HB's
    'link' and the read-only flatten; any other takes GConn's CAS hook and
    the CAS-halving flatten ('link' chains the listed roots of a graph
    stored one way).  Labels equal SciPy's either way."""
    from meshccl import graph_generators as gen
    from meshccl._gpu import graph as gpu

    launched = []
    loader = gpu.kernels
    monkeypatch.setattr(gpu, "kernels", lambda f, *names: launched.extend(names) or loader(f, *names))
    e = gen.grid((30, 40), keep=0.8, seed=1)
    src, dst = (np.concatenate([e.src, e.dst]), np.concatenate([e.dst, e.src])) if symmetric \
        else (e.src, e.dst)
    n = e.n_vertices
    coo = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n))
    want_n, want = scipy_cc(coo)
    csr = coo.tocsr()
    count, labels = gpu.components("csr", (fake(csr.indptr), fake(csr.indices)), n, "hb",
                                   symmetric=symmetric)
    assert int(count) == want_n
    np.testing.assert_array_equal(np.asarray(labels), want)
    hooks = [k for k in launched if k.startswith(("meshccl_graph_hb_link", "meshccl_graph_hb_hook"))]
    flatten = [k for k in launched if k.startswith("meshccl_graph_compress")]
    if symmetric:
        assert hooks == ["meshccl_graph_hb_link<int, int>"] and flatten == ["meshccl_graph_compress<int, true>"]
    else:
        assert hooks == ["meshccl_graph_hb_hook<int, int>"] and flatten == ["meshccl_graph_compress<int, false>"]


def test_device_validation_emulated(emulated):
    """The CuPy branch of the validation (one transfer of reductions)."""
    from meshccl.graph import Edges, connected_components

    with pytest.raises(ValueError, match=r"indices must lie in \[0, 2\), got 7 at position 1"):
        connected_components((fake(np.array([0, 1, 2])), fake(np.array([0, 7]))))
    with pytest.raises(ValueError, match=rf"got {2**64 - 1} at position 1"):
        connected_components((fake(np.array([0, 1, 2], np.uint64)), fake(np.array([0, 2**64 - 1], np.uint64))))
    with pytest.raises(ValueError, match="indptr must not decrease, got 2 then 1 at position 1"):
        connected_components((fake(np.array([0, 2, 1])), fake(np.array([0, 1]))))
    with pytest.raises(ValueError, match=r"dst must lie in \[0, 3\), got -3 at position 1"):
        connected_components(Edges(fake(np.array([0, 1])), fake(np.array([1, -3])), 3))
    with pytest.raises(TypeError, match="all NumPy or all CuPy"):
        connected_components(Edges(fake(np.array([0, 1])), np.array([1, 0])))
    assert connected_components(Edges(fake(np.array([0, 1])), fake(np.array([1, 0]))),
                                method="bfs")[0] == 1
    assert connected_components(Edges(fake(np.array([0, 1])), fake(np.array([1, 0]))), return_labels=False) == 1


CHECK_DTYPES = [np.int32, np.int64, np.uint32, np.uint64]

#: invalid CSR input for the fused validation (test_graph_gpu.py runs them too)
BAD_CSR = [
    (np.array([0, 1, 2, 3, 2]), np.array([0, 1])),           # decrease at the very end
    (np.array([0, 2, 1]), np.array([0, 1])),
    (np.array([1, 2]), np.array([0, 1])),
    (np.array([0, 1, 3]), np.array([0, 1])),
    (np.array([0, 1, 2]), np.array([2, 0])),                 # out of range at the first position
    (np.array([0, 1, 2]), np.array([0, 2])),                 # ... at the last
    (np.array([0, 1, 2]), np.array([0, -1])),                # negative
    (np.array([0, 1, 2]), np.array([-5, 7])),                # negative first, then too large
    (np.array([0, 1, 2], np.uint64), np.array([0, 2**64 - 1], np.uint64)),
    (np.array([0, 2**63 + 1], np.uint64), np.array([0, 1], np.uint64)),
    (np.array([0, 1, 2], np.uint32), np.array([2**32 - 1, 1], np.uint32)),
    (np.array([0, 1, 2], np.int32), np.array([0, 2**31 - 1], np.int32)),
]
#: invalid edge lists (n_vertices last)
BAD_EDGES = [
    (np.array([0, 1, 2]), np.array([1, 2, 5]), 3),            # only dst bad, at the end
    (np.array([0, 1, 2]), np.array([-1, 2, 0]), 3),           # only dst bad, at the start
    (np.array([0, 9, 2]), np.array([1, 2, -4]), 3),           # both bad: src reported
    (np.array([0, 1], np.uint64), np.array([2**64 - 1, 0], np.uint64), 3),
    (np.array([0, 1], np.int32), np.array([1, 7], np.int64), 4),  # two dtypes
    (np.array([3, 1], np.uint32), np.array([1, 0], np.int64), 0),
]


@pytest.mark.parametrize("ptype", CHECK_DTYPES)
@pytest.mark.parametrize("jtype", CHECK_DTYPES)
def test_fused_check_facts_emulated(emulated, ptype, jtype):
    """meshccl._gpu.graph.check's facts equal NumPy's reductions: sizes
    around the stand-in grid (2 multiprocessors x 8 blocks x 256 threads x
    unroll 4 = 16384) so the unrolled steps and their tails both run, a
    decrease only at the very end, extreme values, edge lists of one and of
    two dtypes."""
    from meshccl._gpu import graph as gpu

    big = 2**63 - 1
    rng = np.random.default_rng(7)
    top = np.iinfo(jtype).max
    for m in (0, 1, 5, 4096, 16384, 16385, 50_001):
        a = rng.integers(0, min(top, 2**40), m, dtype=jtype, endpoint=True)
        b = rng.integers(0, min(top, 2**40), m, dtype=jtype, endpoint=True)
        if m > 3:
            a[m // 2], b[-1] = top, np.iinfo(jtype).min  # extremes in the middle and at the end
        indptr = np.sort(rng.integers(0, 1000, m + 1)).astype(ptype)
        if m > 3:
            indptr[-1] = indptr[-2] - 1 if indptr[-2] else 0  # a decrease only at the very end
        got = gpu.check(fake(indptr), fake(a)).get()
        dec = bool(np.any(indptr[1:] < indptr[:-1]))
        lo, hi = (min(int(a.min()), big), min(int(a.max()), big)) if m else (big, -big - 1)
        assert got[:5].tolist() == [int(indptr[0]), int(indptr[-1]), -dec, lo, hi], m
        for other in (jtype, np.int64 if jtype != np.int64 else np.uint32):
            bo = b.astype(other)
            got = gpu.check(None, fake(a), fake(bo)).get()
            lo = min(int(a.min()), int(bo.min())) if m else big
            hi = min(max(int(a.max()), int(bo.max())), big) if m else -big - 1
            assert got[:5].tolist() == [0, 0, 0, lo, hi], (m, other)


def test_fused_validation_emulated(emulated, monkeypatch):
    """The validation of supported types: one fused pass and one transfer
    on the success path (no diff, no astype), the CPU's exact messages on
    the error paths."""
    from meshccl.graph import Edges, connected_components
    from meshccl.graph._input import as_graph as _as_graph

    launched, gets = [], []
    from meshccl._gpu import graph as gpu

    loader = gpu.kernels
    monkeypatch.setattr(gpu, "kernels", lambda f, *names: launched.extend(names) or loader(f, *names))
    monkeypatch.setattr(FakeArray, "get", lambda self: gets.append(self.shape) or np.asarray(self).copy())
    cp = sys.modules["cupy"]
    monkeypatch.delattr(cp, "diff")  # the success path must not need it
    for ptype in CHECK_DTYPES:
        for jtype in CHECK_DTYPES:
            launched.clear()
            gets.clear()
            indptr, indices = np.array([0, 2, 3, 3], ptype), np.array([1, 2, 0], jtype)
            kind, arrays, n = _as_graph((fake(indptr), fake(indices)))
            assert (kind, n) == ("csr", 3) and arrays[1].dtype == jtype
            assert launched == [f"meshccl_graph_check<{C_NAME[ptype]}, {C_NAME[jtype]}>",
                                f"meshccl_graph_check_done<{C_NAME[ptype]}>"]
            assert gets == [(7,)]
            gets.clear()
            kind, arrays, n = _as_graph(Edges(fake(indices), fake(indices[::-1].copy())))
            assert (kind, n) == ("edges", 3) and gets == [(7,)]
    for form, host in [((fake(p), fake(i)), (p, i)) for p, i in BAD_CSR] + \
                      [(Edges(fake(s), fake(d), n), Edges(s, d, n)) for s, d, n in BAD_EDGES]:
        with pytest.raises(ValueError) as want:
            connected_components(host)
        with pytest.raises(ValueError, match=f"^{re.escape(str(want.value))}$"):
            connected_components(form)


def test_auto_probe_first_then_deferred_check_emulated(emulated, monkeypatch):
    """'auto' on CuPy CSR of at most GRAPH_AUTO_TILES_MAX_DEGREE entries per
    vertex: the tile probe runs alone and its count is read at once (one
    scalar); then the method runs with the check beside it (the facts in
    one transfer, after the method): 'ecl' on a graph without locality,
    'tiles' on a path numbered in order (tiles of 32 vertices here).
    Invalid input gets the CPU's exact message either way."""
    from meshccl import graph_generators as gen
    from meshccl._gpu import graph as gpu
    from meshccl.graph import connected_components

    launched, gets, probes = [], [], []
    loader, tile_probe = gpu.kernels, gpu.tile_probe
    monkeypatch.setattr(gpu, "kernels", lambda f, *names: launched.extend(names) or loader(f, *names))
    monkeypatch.setattr(FakeArray, "get", lambda self: gets.append(self.shape) or np.asarray(self).copy())
    monkeypatch.setattr(gpu, "tile_probe", lambda *a, **k: probes.append(k) or tile_probe(*a, **k))
    rng = np.random.default_rng(5)
    n = 300
    random = sp.coo_matrix((np.ones(400), (rng.integers(0, n, 400), rng.integers(0, n, 400))),
                           shape=(n, n)).tocsr()
    line = gen.line(n)
    path = sp.coo_matrix((np.ones(n - 1), (line.src, line.dst)), shape=(n, n)).tocsr()
    with _tuning.override(GRAPH_TILE_SHIFT=5):
        for csr, expect in ((random, "ecl"), (path, "tiles")):
            want_n, want = scipy_cc(csr)
            for ptype, jtype in ((np.int32, np.int32), (np.int64, np.int32), (np.int64, np.int64)):
                launched.clear(), gets.clear(), probes.clear()
                form = (fake(csr.indptr.astype(ptype)), fake(csr.indices.astype(jtype)))
                got_n, got = connected_components(form)
                assert got_n == want_n
                np.testing.assert_array_equal(np.asarray(got), want)
                probe = f"meshccl_graph_tile_probe<{C_NAME[ptype]}, {C_NAME[jtype]}>"
                check = f"meshccl_graph_check<{C_NAME[ptype]}, {C_NAME[jtype]}>"
                assert launched[0] == probe and check in launched
                assert launched.index(probe) < launched.index(check)
                assert probes == [{}]  # alone: not counting into the facts (out=)
                assert gets == [(7,)]  # the facts, once
                assert f"meshccl_graph_clamp_indptr<{C_NAME[ptype]}>" in launched  # deferred
                assert any(k.startswith("meshccl_graph_ecl_init") for k in launched) == \
                    (expect == "ecl")
                assert any(k.startswith("meshccl_graph_tile_local") for k in launched) == \
                    (expect == "tiles")
    for indptr, indices in BAD_CSR:
        with pytest.raises(ValueError) as want_err:
            connected_components((indptr, indices))
        with pytest.raises(ValueError, match=f"^{re.escape(str(want_err.value))}$"):
            connected_components((fake(indptr), fake(indices)))


def test_deferred_check_emulated(emulated, monkeypatch):
    """CuPy CSR for 'ecl', 'kout', 'hb' (and 'auto' above GRAPH_AUTO_CHAIN_MAX_DEGREE
    entries per vertex) is validated without waiting: the check is launched
    on a side stream, which waits for the caller's stream first; the
    methods read rows through meshccl_graph_clamp_indptr's copy; the
    caller's stream waits for the check before the facts come back with the
    count in one transfer.  Invalid input gets the CPU's exact message (its
    kernels ran on clamped rows, skipping values outside [0, n)); other
    methods wait for the facts."""
    from meshccl._gpu import graph as gpu
    from meshccl.graph import connected_components

    launched, gets = [], []
    loader = gpu.kernels
    monkeypatch.setattr(gpu, "kernels", lambda f, *names: launched.extend(names) or loader(f, *names))
    monkeypatch.setattr(FakeArray, "get", lambda self: gets.append(self.shape) or np.asarray(self).copy())
    rng = np.random.default_rng(11)
    n, m = 40, 200
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    sym = sp.coo_matrix((np.ones(2 * m), (np.r_[src, dst], np.r_[dst, src])), shape=(n, n)).tocsr()
    want_n, want = scipy_cc(sym)
    for ptype in CHECK_DTYPES:
        for jtype in CHECK_DTYPES:
            form = (fake(sym.indptr.astype(ptype)), fake(sym.indices.astype(jtype)))
            for method in ("auto", "ecl", "tiles", "kout", "hb", "unionfind"):
                launched.clear()
                gets.clear()
                got_n, got = connected_components(form, method=method, symmetric=True)
                assert got_n == want_n, (ptype, jtype, method)
                np.testing.assert_array_equal(np.asarray(got), want)
                deferred = method != "unionfind"
                assert (f"meshccl_graph_clamp_indptr<{C_NAME[ptype]}>" in launched) == deferred
                side = gpu._side_stream(0)
                if deferred:  # the side stream waited for the caller's, and the caller for it
                    assert side.waited and side.waited[-1].recorded is FakeStream.current
                    assert FakeStream.current.waited[-1].recorded is side
                side.waited.clear()
                FakeStream.current.waited.clear()
                # the facts come back once, after the method (with the
                # count in slot 6) or before it (the count then by int())
                assert gets == [(7,)], (method, gets)
    for indptr, indices in BAD_CSR:
        with pytest.raises(ValueError) as want_err:
            connected_components((indptr, indices))
        for method in ("ecl", "tiles", "kout", "hb"):
            gets.clear()
            with pytest.raises(ValueError, match=f"^{re.escape(str(want_err.value))}$"):
                connected_components((fake(indptr), fake(indices)), method=method)
            assert gets[0] == (7,)
    # the clamped copy: every row inside indices[0, m)
    for ip, m in ((np.array([0, 2, 3, 3]), 3), (np.array([-4, 9, 1, 2]), 3),
                  (np.array([0, 2**64 - 1, 5], np.uint64), 4)):
        got = np.asarray(gpu.clamp_indptr(fake(ip), m))
        np.testing.assert_array_equal(got, np.clip(ip.astype(object), 0, m).astype(np.int64))


C_NAME = {np.int32: "int", np.int64: "long long", np.uint32: "unsigned int",
          np.uint64: "unsigned long long"}


def test_every_compression_launch_emulated(emulated):
    """Every (rule, compression) the host can ask for is an instantiated one."""
    from meshccl.graph import COMPRESSION, Edges, connected_components

    src, dst = np.array([0, 3, 4, 2]), np.array([1, 2, 5, 2])
    for method in ("unionfind", "async", "rem-cas", "early", "hooks", "jtb"):
        for c in COMPRESSION[method]:
            for form in (Edges(fake(src), fake(dst), 7), (fake(np.array([0, 1, 1, 1, 2, 3, 3, 3])),
                                                          fake(np.array([1, 2, 5])))):
                got_n, got = connected_components(form, method=method, compression=c)
                assert got_n == scipy_cc(_as_scipy(form))[0], (method, c)


def _as_scipy(form):
    from meshccl.graph import Edges

    if not isinstance(form, Edges):
        indptr, indices = (np.asarray(a) for a in form)
        n = indptr.size - 1
        return sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(n, n))
    n = form.n_vertices
    return sp.coo_matrix((np.ones(len(form.src)), (np.asarray(form.src), np.asarray(form.dst))),
                         shape=(n, n))


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(g=small_graphs(30, 60))
def test_spanning_forest_emulated(emulated, g):
    from meshccl.graph import Edges, connected_components, spanning_forest

    n, src, dst = g
    want_n, want = scipy_cc(sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)))
    edges = set(zip(src.tolist(), dst.tolist()))
    for name, form in gpu_forms(n, src, dst):
        f = spanning_forest(form)
        assert isinstance(f.src, FakeArray) and f.src.dtype == np.int64, name
        assert f.n_vertices == n and len(f.src) == n - want_n, name
        fs, fd = np.asarray(f.src), np.asarray(f.dst)
        np.testing.assert_array_equal(connected_components(Edges(fs, fd, n))[1], want, err_msg=name)
        assert all(e in edges for e in zip(fs.tolist(), fd.tolist())), name


def test_max_iterations_emulated(emulated):
    from meshccl.errors import NotConverged
    from meshccl.graph import Edges, connected_components

    n = 200
    line = Edges(fake(np.arange(n - 1)[::-1].copy()), fake(np.arange(1, n)[::-1].copy()), n)
    for method in ("edge-lp", "vertex-lp", "bfs-cc", "sv"):
        with pytest.raises(NotConverged, match=f"method='{method}' did not converge within "
                                               "max_iterations=1 passes"):
            connected_components(line, method=method, max_iterations=1)
        assert connected_components(line, method=method, max_iterations=10**6)[0] == 1


def test_auto_runs_the_rule_emulated(emulated, monkeypatch):
    """connected_components(method='auto') runs what _auto_method reports,
    which is choose_method's pick: sampling only for CSR promised symmetric
    ('hb' above 6 entries per vertex, 'kout' above 2.3)."""
    from meshccl._gpu import graph as gpu
    from meshccl.graph import Edges, _auto_method, connected_components

    rng = np.random.default_rng(3)
    n = 200
    src, dst = rng.integers(0, n, 1500), rng.integers(0, n, 1500)
    src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    csr = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr()
    ran = []
    steps = gpu.graph_steps
    monkeypatch.setattr(gpu, "graph_steps", lambda kind, arrays, n, method, *a, **k:
                        ran.append(method) or steps(kind, arrays, n, method, *a, **k))
    ts, td = src[:300], dst[:300]  # about 3 stored entries per vertex, both ways
    thin = sp.coo_matrix((np.ones(600), (np.r_[ts, td], np.r_[td, ts])), shape=(n, n)).tocsr()
    assert 2.3 * n < thin.nnz <= 6 * n < csr.nnz
    path = sp.diags(np.ones(n - 1), 1, format="csr")
    for form, symmetric, expect, ref in (
            ((fake(csr.indptr), fake(csr.indices)), True, "hb", csr),
            ((fake(thin.indptr), fake(thin.indices)), True, "kout", thin),
            ((fake(csr.indptr), fake(csr.indices)), False, "ecl", csr),
            ((fake(path.indptr), fake(path.indices)), False, "tiles", path),
            (Edges(fake(src), fake(dst), n), True, "unionfind", csr)):
        want_n, want = scipy_cc(ref)
        with _tuning.override(GRAPH_TILE_SHIFT=5):  # tiles of 32: the random graphs are not local
            assert _auto_method(form, symmetric=symmetric) == expect
            got_n, got = connected_components(form, symmetric=symmetric)
        assert ran[-1] == expect and got_n == want_n
        np.testing.assert_array_equal(np.asarray(got), want)


def test_graph_bench_gpu_paths_emulated(emulated, monkeypatch, tmp_path):
    """benchmarks/graph_bench.py --gpu and --gpu --papers end to end on tiny
    graphs with the stand-in cupy (plus the few CuPy calls the benchmark
    itself makes): every method's labels checked, 'auto' reported."""
    import importlib.util
    from pathlib import Path

    cp = sys.modules["cupy"]
    for name in ("unique", "bincount"):
        setattr(cp, name, _wrap(getattr(np, name)))
    _fake_events(monkeypatch)
    cp.cuda.runtime.getDeviceProperties = lambda d: {"multiProcessorCount": 2, "name": b"Stand-in"}
    cp.get_default_memory_pool = lambda: types.SimpleNamespace(free_all_blocks=lambda: None)
    cp.__version__ = "stand-in"

    class CSR:
        format = "csr"

        def __init__(self, arg, shape):
            data, self.indices, self.indptr = (fake(a) for a in arg)
            self.shape, self.nnz = shape, self.indices.size

    csp = types.ModuleType("cupyx.scipy.sparse")
    csp.csr_matrix = CSR
    cupyx = types.ModuleType("cupyx")
    cupyx.scipy = types.ModuleType("cupyx.scipy")
    cupyx.scipy.sparse = csp
    for name, mod in (("cupyx", cupyx), ("cupyx.scipy", cupyx.scipy), ("cupyx.scipy.sparse", csp)):
        monkeypatch.setitem(sys.modules, name, mod)

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "graph_bench.py"
    spec = importlib.util.spec_from_file_location("graph_bench_emulated", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    assert bench.main(["--gpu", "--scale", "6", "--ws-vertices", "100", "--reps", "1",
                       "--max-passes", "50", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "graph_bench_gpu.md").read_text()
    assert "MISMATCH" not in text and "'auto' on the CSR" in text
    assert "| RMAT scale 6, edge factor 16 |" in text and "ecl, " in text and "unionfind, " in text
    assert "| Watts–Strogatz, 100 vertices, k=8, p=0.1 |" in text
    assert "| line, 64 vertices | 64 | 63 | 1 |" in text  # one tile: no probe
    assert bench.main(["--gpu", "--papers", "--papers-shrink", "15", "--reps", "1",
                       "--out", str(tmp_path)]) == 0
    text = (tmp_path / "graph_bench_papers_gpu.md").read_text()
    assert "MISMATCH" not in text and "meshccl best / GConn V100" in text
    assert "kout, " in text  # dense symmetric Kronecker graph: 'auto' samples
    for method in bench.PAPER_METHODS:
        assert f"{method} (CSR)" in text
    assert "Phase split" in text and "| validate ms | method steps ms |" in text
    assert "| auto (kout) |" in text and "sample " in text and " + finish " in text


def test_generators_cupy_output_emulated(emulated):
    """xp='cupy' (the stand-in here): the NumPy graph of the same seed, as CuPy arrays."""
    from test_graph import GENERATORS

    for name, make in GENERATORS.items():
        want, got = make("numpy"), make("cupy")
        assert isinstance(got.src, FakeArray) and isinstance(got.dst, FakeArray), name
        assert got.src.dtype == np.int64 and got.n_vertices == want.n_vertices
        np.testing.assert_array_equal(np.asarray(got.src), want.src, err_msg=name)
        np.testing.assert_array_equal(np.asarray(got.dst), want.dst, err_msg=name)


def test_auto_rule_on_benchmark_shapes_emulated(emulated, monkeypatch):
    """What 'auto' picks (through the validation's probe) on small graphs of
    the shapes of benchmarks/graph_bench.py, with tiles of 128 vertices:
    'tiles' where at least half the entries lie inside a tile (in-order
    paths stored one way, reversed or both ways, grids, roads, rings; as
    CSR or CSC), else the density rule -- 'hb' on symmetric graphs above 6
    entries per vertex, 'kout' above 2.3, 'ecl' -- and for edge lists
    'early' on in-order paths, else 'unionfind'; the labels still SciPy's.
    The expected CSR method follows from the exact share of tile-local
    entries (graphs within 0.1 of the threshold, where the 1024 samples may
    go either way, are not judged).  The probe is one launch, only up to
    GRAPH_AUTO_TILES_MAX_DEGREE entries per vertex and beyond one tile."""
    from meshccl import _tuning as t
    from meshccl import graph_generators as gen
    from meshccl._gpu import graph as gpu
    from meshccl.graph import Edges, _auto_method, connected_components

    def sym(e):
        return Edges(np.concatenate([e.src, e.dst]), np.concatenate([e.dst, e.src]), e.n_vertices)

    shift = 7
    line = gen.line(5000)
    cases = [
        ("rmat", gen.rmat(12, 16, seed=1), False, "ecl"),
        ("grid", gen.grid((64, 64)), False, None),
        ("grid, both ways", sym(gen.grid((64, 64))), True, None),
        ("grid 3-D", gen.grid((16, 16, 16)), False, None),
        ("road-like", gen.grid((64, 64), keep=0.55, seed=2), False, None),
        ("watts-strogatz", gen.watts_strogatz(4096, 8, 0.1, seed=5), False, None),
        ("disjoint", gen.disjoint(64, 64, seed=3), False, None),
        ("random", gen.random_edges(4096, 4096, seed=4), False, "ecl"),
        ("papers road", sym(gen.road_grid(70, 2.41, seed=2)), True, None),
        ("papers kron", sym(gen.rmat(12, 48, seed=1)), True, "hb"),
        ("papers social", sym(gen.barabasi_albert_bb(3000, 9, seed=3)), True, "hb"),
        ("line", line, False, "tiles"),
        ("line reversed", Edges(line.dst, line.src, line.n_vertices), False, "tiles"),
        ("line, both ways", sym(line), True, "tiles"),
        ("line, both ways, no promise", sym(line), False, "tiles"),
        ("short line", gen.line(6), False, "ecl"),  # one tile: no probe, the density rule
    ]
    launched = []
    loader = gpu.kernels
    monkeypatch.setattr(gpu, "kernels", lambda f, *names: launched.extend(names) or loader(f, *names))
    judged = set()
    with _tuning.override(GRAPH_TILE_SHIFT=shift):
        for name, e, symmetric, anchor in cases:
            n = e.n_vertices
            coo = sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(n, n))
            want_n, want = scipy_cc(coo)
            csr = coo.tocsr()
            rows = np.repeat(np.arange(n), np.diff(csr.indptr))
            local = np.mean((rows >> shift) == (csr.indices >> shift)) if csr.nnz else 0.0
            dense = csr.nnz > t.GRAPH_AUTO_TILES_MAX_DEGREE * n or n <= 1 << shift
            expect = ("hb" if symmetric and csr.nnz > t.GRAPH_AUTO_HB_MIN_DEGREE * n else
                      "kout" if symmetric and csr.nnz > t.GRAPH_AUTO_KOUT_MIN_DEGREE * n else "ecl")
            if not dense and local >= t.GRAPH_AUTO_TILES_MIN_FRACTION:
                expect = "tiles"
            near = not dense and abs(local - t.GRAPH_AUTO_TILES_MIN_FRACTION) < 0.1
            assert anchor is None or anchor == expect, (name, local)  # the anchors as stated
            for form in ((fake(csr.indptr), fake(csr.indices)),
                         (fake(csr.indptr.astype(np.int64)), fake(csr.indices))):
                launched.clear()
                got = _auto_method(form, symmetric=symmetric)
                if not near:
                    assert got == expect, (name, local)
                    judged.add(got)
                probes = [k for k in launched if k.startswith("meshccl_graph_tile_probe")]
                assert len(probes) == (0 if dense else 1), (name, launched)
            csc = coo.tocsc()
            got_n, got = connected_components((fake(csr.indptr), fake(csr.indices)),
                                              symmetric=symmetric)
            assert got_n == want_n, name
            np.testing.assert_array_equal(np.asarray(got), want, err_msg=name)
            path = name.startswith("line") or name == "short line"
            if name.startswith("line"):
                assert _auto_method((fake(csc.indptr), fake(csc.indices)), symmetric) == "tiles"
            # edge lists: 'early' for the in-order paths (their probe), else 'unionfind'
            assert _auto_method(Edges(fake(e.src), fake(e.dst), n), symmetric) == \
                ("early" if path else "unionfind"), name
        assert judged == {"tiles", "ecl", "hb"}
        # index types the probe kernel is not instantiated for: no probe, the density rule
        csr = sp.coo_matrix((np.ones(line.src.size), (line.src, line.dst)),
                            shape=(5000, 5000)).tocsr()
        assert _auto_method((fake(csr.indptr), fake(csr.indices.astype(np.uint16)))) == "ecl"
        # the internal entry point resolves 'auto' the same way
        launched.clear()
        count, labels = gpu.components("csr", (fake(csr.indptr), fake(csr.indices)), 5000)
        assert int(count) == 1 and launched[0].startswith("meshccl_graph_tile_probe")
        assert launched[1] == "meshccl_graph_tile_local<int, int>"


def _fake_events(monkeypatch):
    """CUDA events of the stand-in cupy: host clock readings."""
    import time

    cp = sys.modules["cupy"]

    class Event(FakeEvent):
        def record(self, stream=None):
            super().record(stream)
            self.t = time.perf_counter()

        def synchronize(self):
            pass

    monkeypatch.setattr(cp.cuda, "Event", Event, raising=False)
    monkeypatch.setattr(cp.cuda, "get_elapsed_time", lambda a, b: (b.t - a.t) * 1e3, raising=False)


@pytest.mark.parametrize("method, phases", [
    ("ecl", ["init", "hook"]), ("unionfind", ["init", "union"]), ("early", ["init", "union"]),
    ("kout", ["sample", "finish"]), ("jtb", ["init", "union", "smallest"]),
    ("sv", ["iterate"]), ("auto", ["init", "hook"])])
def test_return_info_phases_emulated(emulated, monkeypatch, method, phases):
    """return_info=True on the GPU path: validation, each step of the method
    and the relabel phases timed (stand-in events), the method resolved."""
    from meshccl.graph import Edges, connected_components

    _fake_events(monkeypatch)
    rng = np.random.default_rng(5)
    n = 300
    src, dst = rng.integers(0, n, 700), rng.integers(0, n, 700)
    csr = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr()
    want_n, want = scipy_cc(csr)
    got_n, got, info = connected_components((fake(csr.indptr), fake(csr.indices)), method=method,
                                            return_info=True)
    assert got_n == want_n
    np.testing.assert_array_equal(np.asarray(got), want)
    assert info["backend"] == "gpu" and info["method"] == ("ecl" if method == "auto" else method)
    assert info["method_phases"] == phases
    assert set(info["seconds"]) == {"prepare", "label", "validate", *phases, "flatten", "scan",
                                    "relabel"}
    assert all(t >= 0 for t in info["seconds"].values())
    assert info["iterations"] >= (2 if method == "sv" else 1)
    # an edge list through the vertex-centric methods: its CSR build is a step too
    _, _, info = connected_components(Edges(fake(src), fake(dst), n), method="ecl", return_info=True)
    assert info["method_phases"] == ["csr", "init", "hook"]
    count, info = connected_components(Edges(fake(src[:0]), fake(dst[:0]), 0), return_labels=False,
                                       return_info=True)
    assert count == 0 and info["method_phases"] == []


def _permuted_pair(n, m, seed):
    """Two symmetric CSR graphs with n vertices and the same number of
    stored entries (the second is the first with its vertices renumbered)."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    a = sp.coo_matrix((np.ones(2 * m), (np.r_[src, dst], np.r_[dst, src])), shape=(n, n)).tocsr()
    perm = rng.permutation(n)
    b = sp.coo_matrix((np.ones(2 * m), (perm[np.r_[src, dst]], perm[np.r_[dst, src]])),
                      shape=(n, n)).tocsr()
    a.sum_duplicates()
    b.sum_duplicates()
    assert a.nnz == b.nnz
    return a, b


@pytest.mark.parametrize("method", ["auto", "ecl", "tiles", "kout", "hb"])
@pytest.mark.parametrize("itype", [np.int32, np.int64])
def test_graph_plans_emulated(emulated, tune, monkeypatch, method, itype):
    """Repeated calls on the same CuPy CSR buffers: the second records the
    call as a graph (check, method, relabel, nothing run while recording)
    and replays it, later ones only replay -- no kernel looked up, one
    transfer of the facts.  The replay reads the buffers as they are then:
    another graph written into them in place gets its own labels, invalid
    values the direct path's exact error."""
    from meshccl._gpu import graph as gpu
    from meshccl._gpu import graph_plan
    from meshccl.graph import connected_components

    tune(GRAPH_PLAN_AFTER=2)
    looked_up, gets = [], []
    loader = gpu.kernels
    monkeypatch.setattr(gpu, "kernels", lambda f, *names: looked_up.extend(names) or loader(f, *names))
    monkeypatch.setattr(FakeArray, "get", lambda self: gets.append(self.shape) or np.asarray(self).copy())
    a, b = _permuted_pair(300, 900, 7)
    ip, ix = fake(a.indptr.astype(itype)), fake(a.indices.astype(itype))
    plans, _ = graph_plan._tables()
    for call in range(4):
        looked_up.clear()
        gets.clear()
        got_n, got = connected_components((ip, ix), method=method, symmetric=True)
        want_n, want = scipy_cc(a)
        assert got_n == want_n and np.array_equal(np.asarray(got), want), call
        assert gets == [(7,)]
        assert len(plans) == (0 if call == 0 else 1)
        if call >= 2:
            assert looked_up == [], looked_up  # a replay: no launch of its own
    (plan,) = plans.values()
    assert plan.graph.launches == 3
    labels_before = got
    # another graph written into the same buffers
    ip[...] = b.indptr
    ix[...] = b.indices
    got_n, got = connected_components((ip, ix), method=method, symmetric=True)
    want_n, want = scipy_cc(b)
    assert got_n == want_n and np.array_equal(np.asarray(got), want)
    assert plan.graph.launches == 4
    assert got is not labels_before and np.array_equal(np.asarray(labels_before), scipy_cc(a)[1])
    # invalid values in place: the error of a first call
    for bad in ((0, -1), (5, 300)):
        ix[bad[0]] = bad[1]
        with pytest.raises(ValueError) as want_err:
            connected_components((np.asarray(ip), np.asarray(ix)))
        with pytest.raises(ValueError, match=f"^{re.escape(str(want_err.value))}$"):
            connected_components((ip, ix), method=method, symmetric=True)
        ix[...] = b.indices
    ip[3] = ip[2] - 1  # a decreasing indptr
    with pytest.raises(ValueError, match="^indptr must not decrease"):
        connected_components((ip, ix), method=method, symmetric=True)
    assert plan.graph.launches == 7
    ip[...] = b.indptr
    got_n, got = connected_components((ip, ix), method=method, symmetric=True)
    assert got_n == want_n and np.array_equal(np.asarray(got), want)


def test_graph_plan_keys_emulated(emulated, tune, monkeypatch):
    """What a plan is keyed by, when it is recorded, and what is never planned."""
    from meshccl._gpu import graph_plan
    from meshccl.graph import Edges, connected_components, release_plans

    _fake_events(monkeypatch)
    plans, seen = graph_plan._tables()
    a, _ = _permuted_pair(200, 500, 3)
    want_n, want = scipy_cc(a)
    ip, ix = fake(a.indptr), fake(a.indices)

    def run(g=(ip, ix), **kw):
        got_n, got, *_ = connected_components(g, symmetric=True, **kw)
        assert got_n == want_n and np.array_equal(np.asarray(got), want)

    run()
    assert not plans and not seen  # GRAPH_PLAN_AFTER = 0: never
    tune(GRAPH_PLAN_AFTER=1)
    run()
    assert len(plans) == 1 and plans[next(iter(plans))]  # recorded on the first call
    run(method="ecl")
    run(method="kout")  # what 'auto' ran (4.9 entries per vertex): the same plan
    run(method="hb")
    assert len(plans) == 3  # one per method
    run(method="unionfind")  # not a deferred-check method: direct
    run(return_info=True)  # timed phases: direct
    run(Edges(fake(a.tocoo().row), fake(a.tocoo().col), 200))  # edge lists: direct
    assert len(plans) == 3
    ip2, ix2 = fake(a.indptr.copy()), fake(a.indices.copy())  # other buffers, other key
    run((ip2, ix2))
    run((ip2, ix2), method="ecl")
    assert len(plans) == _tuning.GRAPH_MAX_PLANS == 4
    run((ip2, ix2), method="hb")
    assert len(plans) == 4  # the least recently used went
    tune(GRAPH_MAX_PLAN_VERTICES=199)  # a change of the constants drops the plans
    assert not plans and not seen
    run()
    assert not plans and not seen  # too many vertices
    # GRAPH_PLAN_AFTER = 3: counted twice, recorded on the third call
    tune(GRAPH_MAX_PLAN_VERTICES=1 << 23, GRAPH_PLAN_AFTER=3)
    run()
    run()
    assert not plans and list(seen.values()) == [2]
    run()
    assert len(plans) == 1 and not seen

    # recording fails: the direct path, and no second try for that key
    def broken(*a, **k):
        tries.append(1)
        raise RuntimeError("no graphs here")

    tries = []
    release_plans()
    assert not plans and not seen
    tune(GRAPH_PLAN_AFTER=1)
    monkeypatch.setattr(graph_plan, "GraphPlan", broken)
    run()
    run()
    assert tries == [1] and list(plans.values()) == [False]


def test_dense_special_values_emulated(emulated):
    """Dense CuPy input with inf, NaN, |a| <= 1e-8 and complex entries: the
    edges SciPy reads (the same rule as on NumPy, through CuPy's functions)."""
    import warnings

    from meshccl.graph import connected_components
    from test_graph import _dense_cases

    for name, a in _dense_cases():
        if a.dtype == np.longdouble:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            want_n, want = scipy_cc(a)
        got_n, got = connected_components(fake(a))
        assert got_n == want_n, name
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=name)


def test_input_device_is_made_current_emulated(emulated, monkeypatch):
    """CuPy input on another GPU: every entry point works inside
    ``cupy.cuda.Device(<the input's device>)``."""
    from meshccl.graph import Edges, _auto_method, connected_components, spanning_forest

    _fake_events(monkeypatch)
    csr = sp.csr_matrix(([1, 1], ([3, 1], [5, 0])), shape=(7, 7))
    ip, ix, src = fake(csr.indptr), fake(csr.indices), fake(np.array([0, 2]))
    for a in (ip, src):
        a.device_id = 1
    for call in (lambda: connected_components((ip, ix)),
                 lambda: connected_components((ip, ix), method="sv", return_info=True),
                 lambda: connected_components(Edges(src, fake(np.array([1, 3])), 5)),
                 lambda: spanning_forest((ip, ix)),
                 lambda: _auto_method((ip, ix))):
        DEVICES.clear()
        call()
        assert DEVICES == [1]
    DEVICES.clear()
    connected_components(np.eye(3))  # NumPy: no device
    connected_components((fake(csr.indptr), fake(csr.indices)))
    assert DEVICES == [0]
