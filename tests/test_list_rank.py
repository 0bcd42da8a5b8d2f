"""meshccl.graph.list_rank: every method against a pure-Python reference
and the sequential walk; the errors; GPU against CPU (marked gpu)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import HAVE_GPU, examples
from meshccl import _tuning
from meshccl.graph import list_rank

METHODS = ["sequential", "wylie", "splitters", "auto"]
gpu = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")]


def reference(succ):
    """(rank, tail) by following each element to its tail (quadratic)."""
    n = len(succ)
    rank, tail = [0] * n, [0] * n
    for i in range(n):
        j, d = i, 0
        while succ[j] not in (-1, j):
            j, d = succ[j], d + 1
            assert d <= n
        rank[i], tail[i] = d, j
    return np.array(rank), np.array(tail)


def lists(sizes, rng, tail_as_self=False):
    """A successor array of lists of the given sizes over a random numbering."""
    n = int(sum(sizes))
    perm = rng.permutation(n)
    succ = np.empty(n, np.int64)
    k = 0
    for size in sizes:
        part = perm[k:k + size]
        succ[part[:-1]] = part[1:]
        succ[part[-1]] = part[-1] if tail_as_self else -1
        k += size
    return succ


def check(succ, **kw):
    want_rank, want_tail = reference(list(succ))
    for method in METHODS:
        rank, tail = list_rank(succ, method=method, return_tails=True, **kw)
        assert rank.dtype == np.int32 and tail.dtype == np.int32
        np.testing.assert_array_equal(rank, want_rank, err_msg=method)
        np.testing.assert_array_equal(tail, want_tail, err_msg=method)
        head = list_rank(succ, method=method, direction="head", **kw)
        length = np.bincount(want_tail, minlength=len(succ))[want_tail]
        np.testing.assert_array_equal(head, length - 1 - want_rank, err_msg=method)


@pytest.mark.parametrize("threads", [1, 2])
def test_one_list_and_many(threads):
    rng = np.random.default_rng(3)
    check(lists([300], rng), cpu_threads=threads)
    check(lists([1] * 5 + [2, 7, 40, 3, 100], rng, tail_as_self=True), cpu_threads=threads)


def test_length_zero_and_one():
    for method in METHODS:
        r, t = list_rank(np.zeros(0, np.int64), method=method, return_tails=True)
        assert r.shape == t.shape == (0,)
        assert list_rank(np.array([-1]), method=method).tolist() == [0]
        assert list_rank(np.array([0]), method=method, return_tails=True)[1].tolist() == [0]


def test_large_random_permutation_all_methods_agree():
    """Enough elements for many splitters and several jump rounds."""
    rng = np.random.default_rng(7)
    succ = lists([20000, 5000, 1, 1, 2], rng)
    want = list_rank(succ, method="sequential", return_tails=True)
    with _tuning.override(LIST_RANK_CPU_SPACING=16):
        for method in ("wylie", "splitters"):
            for threads in (1, 2):
                got = list_rank(succ, method=method, return_tails=True, cpu_threads=threads, seed=5)
                np.testing.assert_array_equal(got[0], want[0])
                np.testing.assert_array_equal(got[1], want[1])
    # the head of the 20000-list has rank 19999, its tail rank 0
    assert sorted(want[0])[-1] == 19999


@settings(max_examples=examples(60))
@given(st.lists(st.integers(1, 12), min_size=1, max_size=8), st.integers(0, 2**32),
       st.integers(1, 4))
def test_hypothesis_lists(sizes, seed, spacing):
    rng = np.random.default_rng(seed)
    succ = lists(sizes, rng, tail_as_self=bool(seed % 2))
    with _tuning.override(LIST_RANK_CPU_SPACING=spacing):
        check(succ, seed=seed, cpu_threads=2)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64])
def test_integer_dtypes(dtype):
    succ = np.array([2, 1, 4, 3, 1])  # 0 -> 2 -> 4 -> 1, and 3 alone
    for method in METHODS:
        assert list_rank(succ.astype(dtype), method=method).tolist() == [3, 0, 2, 0, 1]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("succ, message", [
    ([1, 2, 0], r"without cycles: element 0 lies on a cycle of length 3 \(0 -> 1 -> 2 -> 0\)"),
    ([-1, 2, 1], r"element 1 lies on a cycle of length 2"),
    ([1, -1, 3, 4, 2], r"element 2 lies on a cycle of length 3"),
    ([1, 5, -1], r"must lie in \[0, 3\) or be -1 \(a tail\), got 5 at position 1"),
    ([1, -2, -1], r"got -2 at position 1"),
    ([2, 2, -1], r"must not repeat an element .* got 2 at positions 0 and 1"),
])
def test_errors(method, succ, message):
    with pytest.raises(ValueError, match=message):
        list_rank(np.array(succ), method=method, cpu_threads=2)


def test_errors_long_cycle_among_lists():
    rng = np.random.default_rng(1)
    succ = lists([50, 60], rng)
    cyc = np.arange(110, 150)
    succ = np.concatenate([succ, np.roll(cyc, -1)])
    with _tuning.override(LIST_RANK_CPU_SPACING=1000):  # (no splitter on the cycle)
        for method in METHODS:
            with pytest.raises(ValueError, match="element 110 lies on a cycle of length 40"):
                list_rank(succ, method=method, cpu_threads=2)


def test_bad_types_and_options():
    with pytest.raises(TypeError, match="successor must hold integers, got dtype float64"):
        list_rank(np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match=r"successor must be 1-D, got shape \(1, 2\)"):
        list_rank(np.array([[1, -1]]))
    with pytest.raises(ValueError, match="method must be one of"):
        list_rank(np.array([-1]), method="jump")
    with pytest.raises(ValueError, match="device must be one of"):
        list_rank(np.array([-1]), device="tpu")
    with pytest.raises(ValueError, match="seed must be None or an int >= 0, got -1"):
        list_rank(np.array([-1]), seed=-1)
    with pytest.raises(ValueError, match="direction must be"):
        list_rank(np.array([-1]), direction="up")
    with pytest.raises(ValueError, match="got 18446744073709551615 at position 0"):
        list_rank(np.array([2**64 - 1, 0], np.uint64))


def test_auto_rule():
    from meshccl.graph._list_rank import _auto

    assert _auto(1 << 20, False, 1) == "sequential"
    assert _auto(1 << 20, False, 2) == "splitters"
    assert _auto(100, False, 2) == "sequential"
    assert _auto((1 << 20) + 1, True, 1) == "splitters"
    assert _auto(1 << 20, True, 1) == "wylie"
    assert _auto(100, True, 1) == "wylie"


# --------------------------------------------------------------------- GPU


needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("method", ["wylie", "splitters", "auto"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.int16])
@pytest.mark.parametrize("spacing", [1, 3, 64])
def test_gpu_matches_cpu(method, dtype, spacing):
    import cupy

    rng = np.random.default_rng(11)
    for sizes in ([1], [2], [3000], [1] * 50 + [17, 300, 2, 4000], [1000] * 5):
        # unsigned successors cannot hold -1: their tails point to themselves
        self_tails = len(sizes) % 2 == 0 or np.dtype(dtype).kind == "u"
        succ = lists(sizes, rng, tail_as_self=self_tails).astype(dtype)
        want = list_rank(succ, method="sequential", return_tails=True)
        with _tuning.override(LIST_RANK_GPU_SPACING=spacing):
            rank, tail = list_rank(cupy.asarray(succ), method=method, return_tails=True, seed=3)
            assert isinstance(rank, cupy.ndarray) and rank.dtype == np.int32
            np.testing.assert_array_equal(rank.get(), want[0])
            np.testing.assert_array_equal(tail.get(), want[1])
            head = list_rank(cupy.asarray(succ), method=method, direction="head")
            np.testing.assert_array_equal(
                head.get(), list_rank(succ, method="sequential", direction="head"))
            # NumPy in, run on the GPU, NumPy out
            np.testing.assert_array_equal(list_rank(succ, method=method, device="gpu"), want[0])


@pytest.mark.gpu
@needs_gpu
def test_gpu_large_random_list():
    import cupy

    succ = lists([1 << 20, 12345, 1, 1], np.random.default_rng(2))
    want = list_rank(succ, method="sequential", return_tails=True)
    for method in ("wylie", "splitters"):
        rank, tail = list_rank(cupy.asarray(succ), method=method, return_tails=True)
        np.testing.assert_array_equal(rank.get(), want[0])
        np.testing.assert_array_equal(tail.get(), want[1])


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("method", ["wylie", "splitters"])
@pytest.mark.parametrize("succ, message", [
    ([1, 2, 0], "element 0 lies on a cycle of length 3"),
    ([-1, 2, 1], "element 1 lies on a cycle of length 2"),
    ([1, 5, -1], r"got 5 at position 1"),
    ([2, 2, -1], r"got 2 at positions 0 and 1"),
])
def test_gpu_errors(method, succ, message):
    import cupy

    for spacing in (1, 1000):
        with _tuning.override(LIST_RANK_GPU_SPACING=spacing):
            with pytest.raises(ValueError, match=message):
                list_rank(cupy.asarray(np.array(succ)), method=method)
    with pytest.raises(ValueError, match="got 18446744073709551615 at position 0"):
        list_rank(cupy.asarray(np.array([2**64 - 1, 0], np.uint64)), method=method)
