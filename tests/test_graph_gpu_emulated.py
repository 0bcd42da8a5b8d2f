"""The GPU graph path's host side, run without a GPU.

A stand-in ``cupy`` module (NumPy arrays whose type claims to be CuPy's)
and serial Python emulations of the kernels of kernels/graph.cu and
kernels/relabel.cu let meshccl.graph and meshccl._gpu.graph run end to end
here.  Every launch is checked against the kernel's C signature (pointer
element types, exact NumPy scalar types for int / long long / unsigned long
long arguments, a block of 1024 for the mode kernel), so argument-order or
type slips show up on a CPU-only machine.  The kernels themselves are
tested on the GPU by test_graph_gpu.py; these emulations only mirror them.
"""

import re
import sys
import types

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import connected_components as scipy_cc


class FakeArray(np.ndarray):
    def get(self):
        return np.asarray(self).copy()


FakeArray.__module__ = "cupy._core.core"
C = {"int": np.int32, "long long": np.int64, "unsigned long long": np.uint64,
     "unsigned": np.uint32, "bool": None}


def fake(a):
    return np.asarray(a).view(FakeArray)


def _wrap(f):
    return lambda *a, **k: fake(f(*[np.asarray(x) if isinstance(x, FakeArray) else x for x in a], **k))


def make_cupy():
    cp = types.ModuleType("cupy")
    cp.ndarray = FakeArray
    for name in ("asarray", "ascontiguousarray", "zeros", "empty", "arange", "cumsum", "stack",
                 "diff", "minimum", "ones"):
        setattr(cp, name, _wrap(getattr(np, name)))
    for name in ("int32", "int64", "uint64", "uint32", "float32", "int8"):
        setattr(cp, name, getattr(np, name))
    cp.cuda = types.SimpleNamespace(
        Device=lambda *a: types.SimpleNamespace(id=0, synchronize=lambda: None),
        runtime=types.SimpleNamespace(getDeviceProperties=lambda d: {"multiProcessorCount": 2},
                                      getDeviceCount=lambda: 1))
    return cp


# ---------------------------------------------------------------- kernels

def find(P, x):
    while P[x] != x:
        P[x] = P[P[x]]
        x = P[x]
    return x


def unite(P, a, b):
    a, b = find(P, a), find(P, b)
    if a != b:
        P[max(a, b)] = min(a, b)


def parse(expr):
    name, targs = re.fullmatch(r"(\w+)<(.*)>", expr).groups()
    return name, [t.strip() for t in targs.split(",")]


def check_args(expr, args, sig):
    assert len(args) == len(sig), f"{expr}: {len(args)} arguments for {len(sig)} parameters"
    for k, (a, (kind, ctype)) in enumerate(zip(args, sig)):
        want = C[ctype]
        if kind == "ptr":
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
        sig = [P_, ("val", t[0]), ("ptr", "unsigned"), ("ptr", t[0])]

        def run(P, n, bits, incl):
            for i in range(n):
                r = int(P[i])
                P[i] = incl[r >> 5] - bin(int(bits[r >> 5]) >> (r & 31)).count("1") + 1
    elif name == "meshccl_graph_ecl_init":
        sig = [("ptr", "long long"), ("ptr", t[1]), P_, ("val", t[0])]

        def run(indptr, indices, P, n):
            for v in range(n):
                P[v] = next((u for u in indices[indptr[v]:indptr[v + 1]] if u < v), v)
    elif name.startswith("meshccl_graph_vertex_"):
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
                        for u in indices[b:e]:
                            if first and u < v:
                                first = False
                                continue
                            take(P, v, u, vin, L)
            else:
                vs = wl[:int(top[0])] if level == "warp" else [wl[n - 1 - i] for i in range(int(top[1]))]
                for v in vs:
                    vin = vin_of(P, v, L)
                    for u in indices[indptr[v] + skip:indptr[v + 1]]:
                        take(P, v, u, vin, L)
    elif name == "meshccl_graph_edges":
        csr, sym = t[2] == "true", t[3] == "true"
        sig = [("ptr", "long long"), ("ptr", t[1]), ("ptr", t[1]), P_, ("val", t[0]), ("val", "long long")]

        def run(indptr, src, dst, P, n, m):
            rows = np.repeat(np.arange(n), np.diff(indptr)) if csr else src
            assert len(rows) == m
            for a, b in zip(rows, dst):
                if a != b and not (sym and a < b):
                    unite(P, a, b)
    elif name == "meshccl_graph_kout":
        sig = [("ptr", "long long"), ("ptr", t[1]), P_, ("val", t[0]), ("val", "int")]

        def run(indptr, indices, P, n, k):
            for v in range(n):
                for u in indices[indptr[v]:min(indptr[v] + k, indptr[v + 1])]:
                    if u != v:
                        unite(P, v, u)
    elif name == "meshccl_graph_compress":
        sig = [P_, ("val", t[0])]

        def run(P, n):
            for v in range(n):
                P[v] = find(P, v)
    elif name == "meshccl_graph_sample":
        sig = [P_, ("val", t[0]), P_, ("val", "int"), ("val", "unsigned long long")]

        def run(P, n, out, count, seed):
            rng = np.random.default_rng(int(seed))
            for i in range(count):
                out[i] = find(P, int(rng.integers(0, n)))
    elif name == "meshccl_graph_mode":
        sig = [P_, ("val", "int"), P_]

        def run(samples, count, big):
            vals, freq = np.unique(samples[:count], return_counts=True)
            big[0] = vals[np.argmax(freq)]
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
    else:
        raise AssertionError(f"no emulation for {expr}")

    def launch(grid, block, args, shared_mem=0):
        check_args(expr, args, sig)
        assert all(isinstance(g, int) and 0 < g < 2**31 for g in grid), f"{expr}: grid {grid}"
        if name == "meshccl_graph_mode":
            assert block == (1024,), f"{expr} needs a block of 1024"
        run(*args)

    return launch


@pytest.fixture
def emulated(monkeypatch):
    """meshccl.graph with the stand-in cupy and the emulated kernels."""
    monkeypatch.setitem(sys.modules, "cupy", make_cupy())
    from meshccl._gpu import graph as gpu_graph
    from meshccl._gpu import relabel as gpu_relabel

    for mod in (gpu_graph, gpu_relabel):
        monkeypatch.setattr(mod, "kernels", lambda filename, *names: tuple(emulate(n) for n in names))
    gpu_graph._sm_count.cache_clear()
    gpu_graph._dummy.cache_clear()
    yield
    gpu_graph._sm_count.cache_clear()
    gpu_graph._dummy.cache_clear()


@st.composite
def graphs(draw):
    n = draw(st.integers(0, 30))
    m = draw(st.integers(0, 60)) if n else 0
    ends = st.lists(st.integers(0, max(n - 1, 0)), min_size=m, max_size=m)
    return n, np.array(draw(ends) if n else [], np.int64), np.array(draw(ends) if n else [], np.int64)


def gpu_forms(n, src, dst):
    csr = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr()
    from meshccl.graph import Edges
    yield "tuple", (fake(csr.indptr), fake(csr.indices))
    yield "tuple int64", (fake(csr.indptr.astype(np.int64)), fake(csr.indices.astype(np.int64)))
    yield "tuple uint16", (fake(csr.indptr), fake(csr.indices.astype(np.uint16)))
    yield "edges", Edges(fake(src), fake(dst), n)
    yield "edges int32", Edges(fake(src.astype(np.int32)), fake(dst.astype(np.int32)), n)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(g=graphs(), method=st.sampled_from(["auto", "unionfind", "ecl", "kout"]), symmetric=st.booleans())
def test_gpu_path_emulated(emulated, g, method, symmetric):
    from meshccl.graph import connected_components

    n, src, dst = g
    if symmetric:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    want_n, want = scipy_cc(sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)))
    for name, form in gpu_forms(n, src, dst):
        got_n, got = connected_components(form, method=method, symmetric=symmetric)
        assert isinstance(got, FakeArray) and isinstance(got_n, int), name
        assert got_n == want_n and got.dtype == np.int32, (name, method)
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{name} {method}")


@pytest.mark.parametrize("method", ["unionfind", "ecl", "kout"])
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
    with pytest.raises(NotImplementedError, match="runs on the CPU only"):
        connected_components(Edges(fake(np.array([0, 1])), fake(np.array([1, 0]))), method="bfs")
    assert connected_components(Edges(fake(np.array([0, 1])), fake(np.array([1, 0]))), return_labels=False) == 1
