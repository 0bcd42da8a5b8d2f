"""The GPU side of IncrementalConnectivity run without a GPU: the stand-in
``cupy`` and kernel emulations of test_graph_gpu_emulated.py, plus a serial
emulation of ``meshccl_incr_batch`` (kernels/incremental.cu), so that
meshccl._gpu.incremental's host code -- launch arguments checked against
the kernel's C signature, growth, validation, reads -- runs end to end
here.  The kernel itself is tested on a GPU by test_incremental.py."""

import sys

import numpy as np
import pytest
from scipy.sparse.csgraph import connected_components as scipy_cc
import scipy.sparse as sp

from meshccl.graph import COMPRESSION, INCREMENTAL_METHODS, Edges, IncrementalConnectivity

import test_graph_gpu_emulated as emu
from test_graph_gpu_emulated import emulated  # noqa: F401,F811  (the fixture)

RULES = [(m, c) for m in INCREMENTAL_METHODS if m != "async" for c in COMPRESSION[m]]
LAUNCHES = []


def emulate_incr(expr):
    """meshccl_incr_batch run serially in operation order (a union hooks
    the larger root under the smaller, for every rule: the host's JTB
    passes accept any forest), else the graph emulations."""
    name, t = emu.parse(expr)
    if name != "meshccl_incr_batch":
        return emu.emulate(expr)
    rule, comp = int(t[2]), int(t[3])
    assert (rule, comp) in emu.VALID_RULES, expr
    I = ("ptr", t[0])
    sig = [("ptr?", "unsigned char"), ("ptr", t[1]), ("ptr", t[1]), ("val", "long long"),
           ("val", "int"), I, I, ("val", t[0]), ("ptr?", t[0]), ("ptr?", t[0]), ("ptr?", "bool")]

    def launch(grid, block, args, shared_mem=0):
        emu.check_args(expr, args, sig)
        assert len(grid) == 1 and 0 < grid[0] < 2**31 and block == (256,)
        kinds, src, dst, m, mask, P, H, n, FS, FD, out = args
        LAUNCHES.append((expr, int(mask)))
        assert m == src.size == dst.size and mask in (1, 2, 3)
        null = lambda a: isinstance(a, np.uint64)  # noqa: E731
        assert null(FS) == null(FD)
        for e in range(int(m)):
            kind = int(kinds[e]) if not null(kinds) else (1 if mask == 2 else 0)
            if kind > 1 or not (mask >> kind) & 1:
                continue
            x, y = int(src[e]), int(dst[e])
            valid = 0 <= x < n and 0 <= y < n
            if kind:
                out[e] = valid and (x == y or emu.find(P, x) == emu.find(P, y))
                continue
            if not null(out):
                out[e] = False
            if not valid or x == y:
                continue
            a, b = emu.find(P, x), emu.find(P, y)
            if a != b:
                h, r = max(a, b), min(a, b)
                if rule == 3:
                    assert H[h] == -1
                    H[h] = r
                P[h] = r
                if not null(FS):
                    FS[h], FD[h] = x, y

    return launch


@pytest.fixture
def incr(emulated, monkeypatch):  # noqa: F811
    cp = sys.modules["cupy"]
    for name, f in (("count_nonzero", np.count_nonzero), ("flatnonzero", np.flatnonzero)):
        monkeypatch.setattr(cp, name, emu._wrap(f), raising=False)
    for name in ("bool_", "int16", "uint16"):
        monkeypatch.setattr(cp, name, getattr(np, name), raising=False)
    monkeypatch.setitem(emu.C, "bool", np.bool_)
    from meshccl._gpu import incremental

    monkeypatch.setattr(incremental, "kernels", lambda filename, *names: tuple(emulate_incr(n) for n in names))
    LAUNCHES.clear()
    return cp


def reference(n, src, dst):
    g = sp.coo_matrix((np.ones(len(src)), (np.asarray(src), np.asarray(dst))), shape=(n, n))
    return scipy_cc(g, directed=False)


def check_state(cc, src, dst):
    n = cc.n_vertices
    count, labels = reference(n, src, dst)
    assert cc.n_components == count
    got = cc.labels()
    assert isinstance(got, emu.FakeArray)
    assert got.dtype == np.int32 and np.array_equal(np.asarray(got), labels)
    if not cc.keeps_forest:  # (Rem's splicing keeps none)
        return
    f = cc.forest_edges()
    assert isinstance(f.src, emu.FakeArray) and f.src.dtype == np.int64
    fs, fd = np.asarray(f.src), np.asarray(f.dst)
    assert fs.size == n - count
    assert set(zip(fs.tolist(), fd.tolist())) <= set(zip(np.asarray(src).tolist(), np.asarray(dst).tolist()))
    fcount, flabels = reference(n, fs, fd)
    assert fcount == count and np.array_equal(flabels, labels)


@pytest.mark.parametrize("method,compression", RULES)
def test_batches_emulated(incr, method, compression):
    rng = np.random.default_rng(1)
    n = 40
    cc = IncrementalConnectivity(n, method=method, compression=compression, device="gpu")
    src, dst = np.empty(0, np.int64), np.empty(0, np.int64)
    for size in (0, 5, 30, 60):
        s, d = rng.integers(0, n + 10, size), rng.integers(0, n, size)  # growth too
        cc.insert(emu.fake(s), emu.fake(d))
        src, dst = np.concatenate([src, s]), np.concatenate([dst, d])
        check_state(cc, src, dst)
        u, v = rng.integers(0, cc.n_vertices, 30), rng.integers(0, cc.n_vertices, 30)
        labels = reference(cc.n_vertices, src, dst)[1]
        ans = cc.connected(emu.fake(u), emu.fake(v))
        assert isinstance(ans, emu.FakeArray) and ans.dtype == bool
        assert np.array_equal(np.asarray(ans), labels[u] == labels[v])
    # a mixed batch: one launch (Rem's rule: inserts, then queries)
    LAUNCHES.clear()
    kinds = rng.random(50) < 0.5
    s, d = rng.integers(0, n, 50), rng.integers(0, n, 50)
    got = np.asarray(cc.process((emu.fake(kinds), emu.fake(s), emu.fake(d))))
    assert [mask for _, mask in LAUNCHES] == ([1, 2] if method == "rem-cas" else [3])
    src, dst = np.concatenate([src, s[~kinds]]), np.concatenate([dst, d[~kinds]])
    after = reference(cc.n_vertices, src, dst)[1]
    assert not got[~kinds].any()
    if method == "rem-cas":  # inserts first: every query sees them all
        assert np.array_equal(got[kinds], after[s[kinds]] == after[d[kinds]])
    check_state(cc, src, dst)


def test_unchecked_calls_never_read_the_device(incr, monkeypatch):
    """check=False: one launch per batch and no read; check=True reads the
    facts once; the arrays are cast as the kernel wants them."""
    reads = []
    monkeypatch.setattr(emu.FakeArray, "get", lambda self: reads.append(self.shape) or np.asarray(self).copy())
    cc = IncrementalConnectivity(10, device="gpu")
    LAUNCHES.clear()
    cc.insert(emu.fake(np.array([0, 1], np.int64)), emu.fake(np.array([1, 2], np.int64)), check=False)
    cc.connected(emu.fake(np.array([0], np.int32)), emu.fake(np.array([2], np.int32)), check=False)
    cc.process((emu.fake(np.array([1], np.uint8)), emu.fake(np.array([0])), emu.fake(np.array([9]))),
               check=False)
    assert reads == [] and len(LAUNCHES) == 3
    assert LAUNCHES[0][0] == "meshccl_incr_batch<int, long long, 0, 1>"
    assert LAUNCHES[1][0] == "meshccl_incr_batch<int, int, 0, 1>"
    cc.insert(emu.fake(np.array([3], np.int8)), emu.fake(np.array([4], np.uint16)))
    assert len(reads) == 1 and LAUNCHES[-1][0] == "meshccl_incr_batch<int, int, 0, 1>"
    # out of range with check=False: skipped
    cc.insert(emu.fake(np.array([0, 50, -3])), emu.fake(np.array([5, 1, 2])), check=False)
    assert np.asarray(cc.labels()).tolist() == [0, 0, 0, 1, 1, 0, 2, 3, 4, 5]


def test_growth_and_errors_emulated(incr):
    empty = IncrementalConnectivity(0, device="gpu")
    assert empty.n_components == 0 and empty.labels().size == 0
    assert empty.forest_edges().src.size == 0
    assert empty.connected(emu.fake(np.array([2])), emu.fake(np.array([2]))).tolist() == [True]
    assert empty.n_vertices == 3
    cc = IncrementalConnectivity(3, device="gpu", method="hooks")
    cc.insert(emu.fake(np.array([0, 70])), emu.fake(np.array([2, 1])))
    assert cc.n_vertices == 71
    check_state(cc, [0, 70], [2, 1])
    assert cc.add_vertices(200) == 71 and cc.n_components == 69 + 200
    cc.insert(emu.fake(np.array([270])), emu.fake(np.array([0])))
    check_state(cc, [0, 70, 270], [2, 1, 0])
    with pytest.raises(ValueError, match="dst must hold vertex numbers >= 0, got -4 at position 1"):
        cc.insert(emu.fake(np.array([0, 1])), emu.fake(np.array([1, -4])))
    fixed = IncrementalConnectivity(4, device="gpu", grow=False)
    with pytest.raises(ValueError, match=r"u must lie in \[0, n_vertices\) = \[0, 4\), got 4 at position 0"):
        fixed.connected(emu.fake(np.array([4], np.uint64)), emu.fake(np.array([0])))
    with pytest.raises(ValueError, match=r"kinds must be 0 \(insert\) or 1 \(query\), got 7 at position 1"):
        fixed.process((emu.fake(np.array([0, 7])), emu.fake(np.array([0, 1])), emu.fake(np.array([1, 2]))))
    assert fixed.n_components == 4


def test_numpy_into_gpu_and_from_graph_emulated(incr):
    cc = IncrementalConnectivity(5, device="gpu")
    cc.insert(np.array([0, 3]), np.array([1, 4]))  # NumPy: copied over
    assert isinstance(cc.labels(), emu.FakeArray)
    indptr, indices = np.array([0, 1, 1, 3, 3]), np.array([1, 0, 3])
    g = IncrementalConnectivity.from_graph((emu.fake(indptr), emu.fake(indices)))
    assert g.device == "gpu"
    check_state(g, [0, 2, 2], [1, 0, 3])
    e = IncrementalConnectivity.from_graph(Edges(emu.fake(np.array([4])), emu.fake(np.array([2])), 6),
                                           method="jtb")
    check_state(e, [4], [2])


def test_incremental_bench_gpu_paths_emulated(incr, monkeypatch, tmp_path):
    """benchmarks/incremental_bench.py --quick end to end on tiny graphs
    with the stand-in cupy: every table and the plot written, every
    component count checked."""
    import importlib.util
    import time
    import types
    from pathlib import Path

    from meshccl import graph_generators as gen

    cp = incr

    class Event(emu.FakeEvent):
        def record(self, stream=None):
            super().record(stream)
            self.t = time.perf_counter()

        def synchronize(self):
            pass

    class RandomState:
        def __init__(self, seed):
            self.rng = np.random.default_rng(seed)

        def permutation(self, n):
            return emu.fake(self.rng.permutation(n))

        def randint(self, lo, hi, size, dtype=np.int64):
            return emu.fake(self.rng.integers(lo, hi, size, dtype=dtype))

    monkeypatch.setattr(cp.cuda, "Event", Event)
    monkeypatch.setattr(cp.cuda, "get_elapsed_time", lambda a, b: (b.t - a.t) * 1e3, raising=False)
    monkeypatch.setattr(cp.cuda.runtime, "getDeviceProperties",
                        lambda d: {"multiProcessorCount": 2, "name": b"Stand-in"})
    monkeypatch.setattr(cp, "random", types.SimpleNamespace(RandomState=RandomState), raising=False)
    monkeypatch.setattr(cp, "__version__", "stand-in", raising=False)

    class RawModule:  # the benchmark's floors: the XOR of what each kernel reads
        def __init__(self, code):
            assert "meshccl_bench_read_parents" in code

        def get_function(self, name):
            def run(grid, block, args):
                assert name.startswith("meshccl_bench_read_") and block == (256,)
                s, d, q = np.asarray(args[0]), np.asarray(args[1]), int(args[2])
                assert s.dtype == np.int32 and q == s.size // 4
                s, d = s[:4 * q], d[:4 * q]
                if name.endswith("parents"):
                    s, d = np.asarray(args[3])[s], np.asarray(args[3])[d]
                args[-1][0] = np.bitwise_xor.reduce(s ^ d) if s.size else 0

            return run

    monkeypatch.setattr(cp, "RawModule", RawModule, raising=False)
    monkeypatch.setattr(cp, "get_default_memory_pool",
                        lambda: types.SimpleNamespace(free_all_blocks=lambda: None))

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "incremental_bench.py"
    spec = importlib.util.spec_from_file_location("incremental_bench_emulated", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.setattr(bench, "graphs", lambda quick, keep: [
        ("R-MAT 6", lambda: gen.rmat(6, edge_factor=2, seed=1)),
        ("grid 6²", lambda: gen.grid((6, 6), keep=0.6, seed=3))])
    monkeypatch.setattr(bench, "floor_us", lambda calls=1000, f=bench.floor_us: f(calls=3))
    monkeypatch.setattr(bench, "RULES", ["unionfind", "jtb"])
    plots = []  # (matplotlib takes seconds here; the plot's input is checked instead)
    monkeypatch.setattr(bench, "plot", lambda res, sizes, ratios, path: plots.append((res, path)))
    bench.main(["--quick", "--reps", "1", "--out", str(tmp_path)])
    text = (tmp_path / "incremental.md").read_text()
    assert "## R-MAT 6: 64 vertices, 128 edges, " in text and "## grid 6²: 36 vertices" in text
    assert " check=True | " in text and " forest=False | " in text  # the fastest variant's
    assert "| jtb/splitting | " in text and "| insert, check=True | " in text
    assert "| unionfind/full | " in text and "rem-cas" not in text
    assert "a mixed stream" in text and "Floors of one batch: edges read, " in text
    assert "against `GRAPH_INCR_BLOCKS_PER_SM`" in text
    assert (tmp_path / "incremental.json").stat().st_size > 100
    (res, png), = plots
    assert png == tmp_path / "incremental.png" and len(res["graphs"]) == 2
    assert set(res["graphs"][0]["ratio"]) == {"unionfind/" + res["graphs"][0]["fastest"]["unionfind"],
                                              "jtb/" + res["graphs"][0]["fastest"]["jtb"]}
    # several batches per point (the tiny graphs fit one batch of 10**3)
    src = emu.fake(np.arange(40, dtype=np.int32))
    dst = emu.fake((np.arange(40, dtype=np.int32) + 1) % 50)
    rate, count = bench.streamed(50, src, dst, "early", "halving", 7, 3, 1, True)
    assert count is None and rate > 0  # 3 batches of 7 fed: not every edge
    rate, count = bench.streamed(50, src, dst, "early", "halving", 7, 100, 1, False)
    assert count == 10
    ops = bench.mixed_ops(50, src, dst, 0.5)  # two queries per insert
    assert ops[0].size == 120 and int(np.asarray(ops[0]).sum()) == 80
    rate, count = bench.mixed_streamed(50, ops, "rem-cas", "splicing", 16, 3, 1)
    assert count is None and rate > 0
    rate, count = bench.mixed_streamed(50, ops, "rem-cas", "splicing", 16, 100, 1)
    assert count == 10
    with pytest.raises(SystemExit):
        bench.main(["--graphs", "rmat,road", "--out", str(tmp_path)])


def test_int64_parents_emulated(incr):
    """The int64 instantiations (parents of 2**31 vertices and more), on a
    small structure forced to int64: launch types, labels, forest."""
    from meshccl._gpu.incremental import State

    st = State(20, "hooks", "halving", True, index_dtype=np.int64)
    LAUNCHES.clear()
    st.batch(None, emu.fake(np.array([0, 5, 7], np.int32)), emu.fake(np.array([5, 9, 19], np.int32)),
             1, False)
    st.grow(25)
    out = st.batch(emu.fake(np.array([0, 1], np.uint8)), emu.fake(np.array([24, 0], np.int64)),
                   emu.fake(np.array([0, 9], np.int64)), 3, True)
    assert [e for e, _ in LAUNCHES] == ["meshccl_incr_batch<long long, long long, 3, 1>"] * 2
    assert np.asarray(out).tolist() == [False, True]
    count, labels = st.labels()
    assert labels.dtype == np.int64 and count == 21
    assert st.count() == 21 and st.P.dtype == np.int64 and st.H.dtype == np.int64
    src, dst = st.forest_edges()
    assert sorted(zip(np.asarray(src).tolist(), np.asarray(dst).tolist())) == [
        (0, 5), (5, 9), (7, 19), (24, 0)]


@pytest.mark.parametrize("name, args", [
    ("test_batches_give_scipy_components", ("gpu", "unionfind", "halving")),
    ("test_batches_give_scipy_components", ("gpu", "rem-cas", "splicing")),
    ("test_batches_give_scipy_components", ("gpu", "jtb", "none")),
    ("test_generated_graphs_in_batches", ("gpu", "hooks")),
    ("test_labels_and_reads_leave_the_structure", ("gpu",)),
    ("test_mixed_batch_bounds", ("gpu",)),
    ("test_from_graph_every_input", ("gpu", "tuple")),
    ("test_from_graph_every_input", ("gpu", "edges")),
    ("test_growth", ("gpu",)),
    ("test_dtypes", ("gpu",)),
    ("test_no_forest_still_labels", ("gpu",)),
    ("test_gpu_results_stay_on_the_device_and_inputs_move", ()),
    ("test_gpu_errors_and_unchecked_input", ()),
    ("test_gpu_int64_parents", ("early", "full")),
])
def test_gpu_cases_on_the_stand_in(incr, name, args):
    """test_incremental.py's GPU cases (the small ones) on the stand-in
    cupy: the host path as a GPU run takes it."""
    import test_incremental

    getattr(test_incremental, name)(*args)
