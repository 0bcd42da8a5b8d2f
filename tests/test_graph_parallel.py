"""connected_components(..., cpu_threads=N): the parallel CPU union-find
(plain-store hooks, lost unions found and redone) against scipy and the
serial labels.  ``_DEFER_HOOKS`` makes the races happen on any machine: the
hooks of some edges land only at the end of their chunk, overwriting hooks
stored meanwhile and splitting trees halved past them."""

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import connected_components as scipy_cc

from meshccl import graph_generators as gen
from meshccl._cpu import graph as cpu
from meshccl.graph import Edges, _as_graph, connected_components
from test_graph import forms  # every accepted input form of one graph

THREADS = (0, 2, 3, 7)
PARALLEL_METHODS = ("auto", "unionfind", "async", "ecl")


@st.composite
def graphs(draw):
    """Self-loops, duplicates, isolated vertices, one-way edges; n = 0, 1."""
    n = draw(st.integers(0, 60))
    m = draw(st.integers(0, 150)) if n else 0
    ends = st.lists(st.integers(0, max(n - 1, 0)), min_size=m, max_size=m)
    src = np.array(draw(ends) if n else [], np.int64)
    dst = np.array(draw(ends) if n else [], np.int64)
    return n, src, dst




@pytest.fixture
def defer(monkeypatch):
    def set_(k):
        monkeypatch.setattr(cpu, "_DEFER_HOOKS", k)
    return set_


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(g=graphs(), threads=st.sampled_from(THREADS), method=st.sampled_from(PARALLEL_METHODS),
       delay=st.sampled_from([0, 1, 2, 3]))
def test_matches_scipy(g, threads, method, delay):
    n, src, dst = g
    want_n, want = scipy_cc(sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)))
    old = cpu._DEFER_HOOKS
    cpu._DEFER_HOOKS = delay
    try:
        for name, form in forms(n, src, dst):
            got_n, got = connected_components(form, method=method, cpu_threads=threads)
            assert got_n == want_n, name
            assert got.dtype == np.int32, name
            np.testing.assert_array_equal(got, want, err_msg=name)
    finally:
        cpu._DEFER_HOOKS = old


def test_small_and_empty():
    for t in THREADS:
        assert connected_components(sp.csr_matrix((0, 0)), cpu_threads=t)[0] == 0
        assert connected_components(sp.csr_matrix((1, 1)), cpu_threads=t)[1].tolist() == [0]
        assert connected_components(Edges(np.array([], np.int64), np.array([], np.int64)),
                                    cpu_threads=t)[0] == 0
        assert connected_components(Edges(np.array([2]), np.array([2])),
                                    cpu_threads=t)[1].tolist() == [0, 1, 2]
        assert connected_components(sp.csr_matrix((5, 5)), cpu_threads=t)[1].tolist() == [0, 1, 2, 3, 4]


def _permuted_line(n, seed):
    rng = np.random.default_rng(seed)
    p = rng.permutation(n)
    e = gen.line(n)
    return Edges(p[e.src], p[e.dst], n)


GENERATED = {
    "rmat14": lambda: gen.rmat(14, 8, seed=1),
    "road-like grid": lambda: gen.grid((120, 130), keep=0.55, seed=2),
    "grid": lambda: gen.grid((150, 150)),
    "line": lambda: gen.line(100_000),
    "permuted line": lambda: _permuted_line(50_000, 3),
    "disjoint": lambda: gen.disjoint(7, 3000, seed=3),
    "random": lambda: gen.random_edges(40_000, 20_000, seed=4),
}


@pytest.mark.parametrize("delay", [0, 1, 3])
@pytest.mark.parametrize("name", list(GENERATED))
def test_generated_graphs_equal_serial(name, delay, defer):
    e = GENERATED[name]()
    n = e.n_vertices
    csr = sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(n, n)).tocsr()
    want_n, want = scipy_cc(csr)
    serial = connected_components(e)[1]
    np.testing.assert_array_equal(serial, want)
    defer(delay)
    for form in (e, csr, csr.tocsc()):
        for t in (0, 2, 7):
            got_n, got = connected_components(form, cpu_threads=t)
            assert got_n == want_n
            np.testing.assert_array_equal(got, serial)


@pytest.mark.parametrize("kind", ["edges", "csr"])
def test_lost_hooks_are_redone_and_split_trees_rejoined(kind, defer):
    """Deferred hooks lose unions and split start trees; the rounds repair
    both (the stats say they happened) and the labels stay exact."""
    defer(1)
    seen_lost = seen_split = 0
    for seed in range(6):
        e = gen.random_edges(20_000, 9_000 + 2_000 * seed, seed=seed)
        n = e.n_vertices
        csr = sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(n, n)).tocsr()
        k, arrays, _ = _as_graph(e if kind == "edges" else csr)
        stats = {}
        got_n, got = cpu.components_parallel(k if k == "edges" else "csr", arrays, n, np.int32,
                                             2, stats)
        want_n, want = scipy_cc(csr)
        assert got_n == want_n
        np.testing.assert_array_equal(got, want)
        assert stats["rounds"] >= 2 and stats["lost"][-1] == 0 and stats["split"][-1] == 0
        seen_lost += sum(stats["lost"])
        seen_split += sum(stats["split"])
    assert seen_lost > 0
    if kind == "csr":
        assert seen_split > 0


def test_serial_finish_after_max_rounds(defer, monkeypatch):
    """The permuted line with every hook deferred needs many rounds; capped
    at 2, the pairs left are united serially, still exactly."""
    defer(1)
    monkeypatch.setattr(cpu, "MAX_ROUNDS", 2)
    e = _permuted_line(30_000, 5)
    k, arrays, n = _as_graph(e)
    stats = {}
    got_n, got = cpu.components_parallel(k, arrays, n, np.int32, 2, stats)
    assert stats["rounds"] == 2 and stats["serial_finish"] > 0
    assert got_n == 1
    assert not got.any()


def test_threads_are_restored_and_capped():
    before = numba.get_num_threads()
    e = gen.rmat(10, 8, seed=2)
    stats = {}
    k, arrays, n = _as_graph(e)
    cpu.components_parallel(k, arrays, n, np.int32, 10_000, stats)
    assert stats["threads"] == numba.config.NUMBA_NUM_THREADS
    connected_components(e, cpu_threads=0)
    assert numba.get_num_threads() == before


def test_other_methods_ignore_cpu_threads():
    e = gen.rmat(10, 8, seed=3)
    want = connected_components(e)[1]
    for method in ("kout", "hb", "rem-cas", "jtb", "sv", "edge-lp", "bfs"):
        np.testing.assert_array_equal(connected_components(e, method=method, cpu_threads=2)[1], want)
    np.testing.assert_array_equal(
        connected_components(e, method="unionfind", compression="full", cpu_threads=0)[1], want)


@pytest.mark.parametrize("bad", [-1, 1.5, True, False, "2", None, np.float64(2.0)])
def test_bad_cpu_threads(bad):
    with pytest.raises(ValueError, match=r"cpu_threads must be an int >= 0 \(0: all cores\)"):
        connected_components(sp.eye(3).tocsr(), cpu_threads=bad)


def test_numpy_int_threads_accepted():
    assert connected_components(sp.eye(3).tocsr(), cpu_threads=np.int64(2))[0] == 3
