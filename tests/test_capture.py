"""meshccl records CUDA graphs only in the main thread
(meshccl/_gpu/capture.py): an open capture makes every other thread's
synchronisation with the GPU fail.  The GPU tests run the failure the
threaded scheduler met (chunks drawn by cuRAND in one worker thread while
another labels) and check that nothing fails and every label is right."""

import threading

import numpy as np
import pytest

import meshccl
from conftest import HAVE_GPU
from test_graph_gpu_emulated import CAPTURE, CAPTURING, emulated  # noqa: F401  (fixture)
from meshccl._gpu import capture

needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")


class Beside:
    """A thread that waits until the block ends (or runs ``work`` in a loop
    until then, collecting what it raises)."""

    def __init__(self, work=None):
        self.work = work
        self.errors = []
        self.rounds = 0
        self.stop = threading.Event()

    def _run(self):
        while not self.stop.is_set():
            if self.work is None:
                self.stop.wait()
                break
            try:
                self.work(self.rounds)
            except Exception as exc:  # (what the main thread reports)
                self.errors.append(f"{type(exc).__name__}: {exc}")
                if len(self.errors) > 20:
                    break
            self.rounds += 1

    def __enter__(self):
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def in_thread(fn):
    """``fn()`` run in a new thread: what it returned, or raises what it raised."""
    out = []

    def run():
        try:
            out.append(("ok", fn()))
        except BaseException as exc:  # (raised again in the caller)
            out.append(("raised", exc))

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    kind, value = out[0]
    if kind == "raised":
        raise value
    return value


def test_may_record_in_the_main_thread_only():
    assert capture.may_record() == (threading.current_thread() is threading.main_thread())
    assert in_thread(capture.may_record) is False


def test_batch_graphs_record_nothing_in_a_worker_thread(emulated):  # noqa: F811
    """Batches that would be recorded (a key's second batch on) launch
    directly in a worker thread, and are recorded in the main thread."""
    from meshccl._gpu.passes import BatchGraphs

    if not capture.may_record():
        pytest.skip("the tests do not run in the main thread here")
    ran = []

    def launch():
        if CAPTURING[0]:
            CAPTURE.append(lambda: ran.append("a"))
        else:
            ran.append("a")

    g = BatchGraphs(4)

    def batches():
        for _ in range(4):
            g.run("a", 4, launch)

    in_thread(batches)
    assert ran == ["a"] * 4 and not g.graphs and g.replayed == 0
    g.run("a", 4, launch)  # recorded, then replayed ...
    g.run("a", 4, launch)  # ... and replayed
    assert ran == ["a"] * 6 and set(g.graphs) == {"a"} and g.replayed == 8


def labelling_beside_syncs(rounds=300, side=96, inputs=6):
    """Labels ``inputs`` volumes in turn in a worker thread (results dropped, so
    the labels come back at the same addresses: what a launch plan records a
    graph at) while another thread synchronises with the GPU in every way a
    user's code does (the device, its own stream through a label count,
    cuRAND generators made, drawn from and dropped).  Returns (labels
    equal to those computed beforehand, the other thread's errors, its
    rounds, graphs its plans recorded meanwhile)."""
    import cupy

    from meshccl._gpu import plan

    rng = np.random.default_rng(7)
    # (uint8: a plan copies bool input to a buffer of its own, one address)
    xs = [cupy.asarray((rng.random((side,) * 3) < 0.3).astype(np.uint8)) for _ in range(inputs)]
    want = [meshccl.label(x, connectivity=1).get() for x in xs]
    small = cupy.asarray(rng.random((64,) * 3) < 0.3)

    def graphs():  # (the calling thread's plans)
        return sum(len(p.at or ()) for p in getattr(plan._local, "plans", {}).values())

    def work(k):  # (on CuPy's default stream, as a Dask task that draws a chunk)
        if k % 3 == 0:
            cupy.cuda.runtime.deviceSynchronize()
        elif k % 3 == 1:
            meshccl.label(small, return_num=True)  # (reads N: waits for its stream)
        else:
            rs = cupy.random.RandomState(k)
            rs.standard_normal((64, 64, 64), dtype=cupy.float32).sum().get()
            del rs

    def labelling():
        equal = True
        before = graphs()
        for k in range(rounds):
            got = meshccl.label(xs[k % inputs], connectivity=1)
            if k % inputs == 0:
                equal = equal and bool(cupy.array_equal(got, cupy.asarray(want[k % inputs])))
            del got
        cupy.cuda.get_current_stream().synchronize()
        return equal, graphs() - before

    with Beside(work) as other:
        equal, recorded = in_thread(labelling)
    return equal, other.errors, other.rounds, recorded


@pytest.mark.gpu
@needs_gpu
def test_labelling_beside_another_threads_syncs():
    """The threaded failure of dask_ooc (CURAND_STATUS_LAUNCH_FAILURE): while
    a plan recorded a graph in one worker thread, another thread's wait for
    the GPU failed.  No plan records in a worker thread now: nothing fails,
    every label is right."""
    equal, errors, rounds, graphs = labelling_beside_syncs()
    assert rounds > 0
    assert errors == []
    assert equal
    assert graphs == 0


def _drawn(noise, seed, block_info=None):
    """A chunk drawn by cuRAND inside the graph (a generator per task, as
    benchmarks/dask_ooc.py once drew them)."""
    import cupy

    info = block_info[None]
    shape = tuple(hi - lo for lo, hi in info["array-location"])
    where = int(np.ravel_multi_index(info["chunk-location"], info["num-chunks"]))
    rs = cupy.random.RandomState(seed * 1_000_003 + where)
    return (rs.standard_normal(shape, dtype=cupy.float32) > noise).view(cupy.uint8)


@pytest.mark.gpu
@needs_gpu
def test_dask_statistics_of_chunks_drawn_in_the_graph():
    """N and the statistics of chunks that the graph draws from cuRAND,
    computed three times under the threaded scheduler, equal to the
    whole-array call each time (while worker threads recorded graphs, every
    such computation ended in CURAND_STATUS_LAUNCH_FAILURE on an H200)."""
    import cupy
    import dask
    import dask.array as da

    import meshccl.dask

    x = da.map_blocks(_drawn, 0.6, 3, dtype=np.uint8,
                      chunks=da.core.normalize_chunks(64, (192,) * 3),
                      meta=cupy.empty((0, 0, 0), cupy.uint8))
    whole = x.compute(scheduler="synchronous")
    _, n, want = meshccl.label(whole, connectivity=1, return_num=True, return_statistics=True)
    for _ in range(3):
        labels, num, stats = meshccl.dask.label(x, connectivity=1, return_num=True,
                                                return_statistics=True, low_memory=True)
        # (arrays first, the delayed statistics last: dask 2026.8 returns a mix
        # grouped by kind, whatever the order asked)
        got_n, got_labels, got = dask.compute(num, labels, stats, scheduler="threads")
        assert int(got_n) == int(n)
        for key in want:
            assert bool(cupy.array_equal(cupy.asarray(got[key]), want[key])), key
        assert bool(cupy.array_equal(got_labels, meshccl.label(whole, connectivity=1)))
