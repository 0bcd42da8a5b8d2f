"""connected_components(..., cpu_threads=N): the parallel CPU union-find
(CAS hooks; the 'local' scheme with serial unions inside vertex ranges and
the cross edges after, or the one-pass 'cas' scheme) against scipy and the
serial labels.  Tuning overrides run either scheme on any graph
(``GRAPH_CPU_LOCAL_CROSS`` 1.0: always 'local', -1.0: always 'cas'),
``GRAPH_CPU_PARALLEL_MIN_WORK = 0`` keeps small graphs off the serial
shortcut and a small cross-edge buffer makes the ranges stop early."""

import contextlib
import os

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import connected_components as scipy_cc

from meshccl import _tuning
from meshccl import graph_generators as gen
from meshccl._cpu import graph as cpu
from meshccl.graph import Edges, connected_components
from meshccl.graph._input import as_graph as _as_graph

from conftest import small_graphs
from test_graph import forms  # every accepted input form of one graph

THREADS = (0, 2, 3, 7)
PARALLEL_METHODS = ("auto", "unionfind", "async", "ecl")




def parallel_settings(name=None, buffer_min=None):
    """Parallel code on graphs of any size, with the scheme ('local',
    'cas'; None: the sample decides) and the cross-edge buffer given."""
    values = {"GRAPH_CPU_PARALLEL_MIN_WORK": 0}
    if name is not None:
        values["GRAPH_CPU_LOCAL_CROSS"] = {"local": 1.0, "cas": -1.0}[name]
    if buffer_min is not None:
        values.update(GRAPH_CPU_CROSS_BUFFER_MIN=buffer_min, GRAPH_CPU_CROSS_BUFFER_DIV=1 << 40)
    return _tuning.override(**values)


@pytest.fixture
def scheme():
    """``scheme(name, buffer_min)``: :func:`parallel_settings` until the test ends."""
    with contextlib.ExitStack() as stack:
        yield lambda *how: stack.enter_context(parallel_settings(*how))


SCHEMES = [(None, None), ("local", None), ("local", 0), ("local", 2), ("cas", None)]


#: the forms the parallel code tells apart: CSR, the transpose CSR of a
#: CSC, an edge list (test_graph.py checks that every other form becomes one)
PARALLEL_FORMS = ("csr", "csc", "edges")


# (each call starts the core's threads: well under a millisecond)
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(g=small_graphs(60, 150), threads=st.sampled_from(THREADS),
       method=st.sampled_from(PARALLEL_METHODS), how=st.sampled_from(SCHEMES))
def test_matches_scipy(g, threads, method, how):
    n, src, dst = g
    want_n, want = scipy_cc(sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)))
    with parallel_settings(*how):
        for name, form in ((k, f) for k, f in forms(n, src, dst) if k in PARALLEL_FORMS):
            got_n, got = connected_components(form, method=method, cpu_threads=threads)
            assert got_n == want_n, name
            assert got.dtype == np.int32, name
            np.testing.assert_array_equal(got, want, err_msg=name)


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


GENERATED.update({
    "grid 3-D": lambda: gen.grid((30, 31, 32)),
    "watts-strogatz": lambda: gen.watts_strogatz(30_000, 8, 0.1, seed=5),
    "road grid": lambda: gen.road_grid(200, 2.41, seed=2),
    "barabasi-albert": lambda: gen.barabasi_albert_bb(8000, 9, seed=3),
    "reversed line": lambda: Edges(gen.line(60_000).dst, gen.line(60_000).src, 60_000),
})


@pytest.mark.parametrize("how", SCHEMES)
@pytest.mark.parametrize("name", list(GENERATED))
def test_generated_graphs_equal_serial(name, how, scheme):
    e = GENERATED[name]()
    n = e.n_vertices
    csr = sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(n, n)).tocsr()
    want_n, want = scipy_cc(csr)
    serial = connected_components(e)[1]
    np.testing.assert_array_equal(serial, want)
    scheme(*how)
    for form in (e, csr, csr.tocsc()):
        for t in (0, 3, 7):  # all cores, and counts that split the vertices unevenly
            got_n, got = connected_components(form, cpu_threads=t)
            assert got_n == want_n
            np.testing.assert_array_equal(got, serial)


def _stats(e, threads=2, kind="csr"):
    n = e.n_vertices
    csr = sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(n, n)).tocsr()
    k, arrays, _ = _as_graph(e if kind == "edges" else csr)
    stats = {}
    got_n, got = cpu.components_parallel(k if k == "edges" else "csr", arrays, n, np.int32,
                                         threads, stats)
    want_n, want = scipy_cc(csr)
    assert got_n == want_n
    np.testing.assert_array_equal(got, want)
    return stats


@pytest.mark.parametrize("threads", [2, 3])
def test_scheme_follows_locality(threads):
    """Grids, roads, lines and small worlds numbered with locality take the
    'local' scheme with few cross edges; R-MAT, shuffled trees and random
    edges take the one-pass 'cas'; edge lists always 'cas'."""
    for e in (gen.grid((300, 300)), gen.grid((300, 300), keep=0.55, seed=2), gen.line(200_000),
              gen.road_grid(300, 2.41, seed=2), gen.watts_strogatz(100_000, 8, 0.05, seed=5)):
        st_ = _stats(e, threads)
        assert st_["scheme"] == "local" and st_["stopped"] == 0
        assert st_["cross"] < 0.1 * e.src.size
    for e in (gen.rmat(16, 8, seed=1), gen.disjoint(16, 8000, seed=3),
              gen.random_edges(100_000, 100_000, seed=4)):
        assert _stats(e, threads)["scheme"] == "cas"
    # edge lists: by position; a path is local, a grid (columns, then rows) is not
    st_ = _stats(gen.line(200_000), threads, "edges")
    assert st_["scheme"] == "local" and st_["cross"] < 100
    assert _stats(gen.grid((300, 300)), threads, "edges")["scheme"] == "cas"
    assert _stats(gen.rmat(16, 8, seed=1), threads, "edges")["scheme"] == "cas"


def test_full_buffers_stop_ranges(scheme):
    """A range whose cross-edge buffer fills up stops; its remaining
    vertices are united in phase 2 with CAS hooks, still exactly."""
    scheme("local", 8)
    for e in (gen.rmat(14, 8, seed=1), _permuted_line(50_000, 7), gen.grid((200, 200))):
        for kind in ("csr", "edges"):
            for t in (2, 3):
                st_ = _stats(e, t, kind)
                assert st_["scheme"] == "local"
                if e.n_vertices != 40_000 or kind == "edges":
                    assert st_["stopped"] > 0


def test_chunk_boundaries(scheme):
    """Lines and grids of every small size around the chunk boundaries."""
    scheme("local")
    for n in list(range(2, 70)) + [127, 128, 129, 1000, 1001]:
        for t in (3, 7):  # 24 and 56 chunks: empty, one-vertex and uneven ranges
            e = gen.line(n)
            got_n, got = connected_components(e.__class__(e.dst, e.src, n), cpu_threads=t)
            assert got_n == 1 and not got.any()
            csr = sp.coo_matrix((np.ones(n - 1), (e.src, e.dst)), shape=(n, n)).tocsr()
            got_n, got = connected_components(csr, cpu_threads=t)
            assert got_n == 1 and not got.any()
            g = gen.grid((n, 3))
            m = sp.coo_matrix((np.ones(g.src.size), (g.src, g.dst)), shape=(3 * n,) * 2).tocsr()
            assert connected_components(m.T.tocsr(), cpu_threads=t)[0] == 1


def test_one_thread_and_small_graphs_run_serially():
    e = gen.grid((300, 300))
    assert _stats(e, 1)["scheme"] == "serial"
    assert _stats(gen.line(1000), 2)["scheme"] == "serial"
    assert _stats(gen.line(1), 2)["scheme"] == "serial"


def test_threads_are_capped_and_joined():
    """More threads than cores run on the cores; the core's threads end
    with the call (no thread outlives it)."""
    from meshccl._cpu.image import cpu_count

    def os_threads():  # the process's threads, Python's or not (Linux)
        return len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 0

    before = os_threads()
    e = gen.rmat(10, 8, seed=2)
    stats = {}
    k, arrays, n = _as_graph(e)
    with _tuning.override(GRAPH_CPU_PARALLEL_MIN_WORK=0):
        cpu.components_parallel(k, arrays, n, np.int32, 10_000, stats)
        connected_components(e, cpu_threads=0)
    assert stats["threads"] == cpu_count()
    assert stats["scheme"] != "serial" or cpu_count() == 1
    assert os_threads() == before


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
