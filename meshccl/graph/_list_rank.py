"""List ranking: :func:`list_rank` (the API, its checks and messages).

The backends are :mod:`meshccl._cpu.list_rank` (the compiled core) and
:mod:`meshccl._gpu.list_rank` (CuPy, ``_kernels/list_rank.cu``); both
report invalid input as an error code, and the messages are built here
from the input itself (only on the error path).  ``docs/graph.md``
("List ranking") explains the definitions, the methods and the
measurements behind 'auto'.
"""

from __future__ import annotations

import numpy as np

from .. import _interop, _tuning
from ._input import is_cupy

#: accepted ``method=`` values
LIST_RANK_METHODS = ("auto", "wylie", "splitters", "sequential")
_DEVICES = ("auto", "cpu", "gpu")
_SEED = 0  # seed=None: splitters from a fixed seed, so timings repeat


def list_rank(successor, *, method="auto", device="auto", seed=None, return_tails=False,
              direction="tail", cpu_threads=1):
    """Rank every element of a set of linked lists.

    Parameters
    ----------
    successor : 1-D array of int, NumPy or CuPy (or a PyTorch / JAX array)
        ``successor[i]`` is the element after ``i`` in its list; a tail
        (the last element of a list) has ``successor[i] == i`` or ``-1``
        (both accepted, mixed freely).  The array may hold any number of
        lists: every element belongs to exactly one, so no two elements may
        share a successor and following successors from any element must
        reach a tail.
    method : {'auto', 'wylie', 'splitters', 'sequential'}, optional
        'wylie': Wylie's pointer jumping (O(n log n) work, ceil(log2 n)
        rounds); 'splitters': Reid-Miller's random splitters (O(n) expected
        work: sublists walked in parallel from random splitters, the
        reduced list of splitters ranked by pointer jumping); 'sequential':
        one walk per list on one CPU thread (the reference; runs on the CPU
        whatever ``device`` says).  'auto' (default): 'splitters' on the
        GPU; on the CPU 'sequential' with ``cpu_threads=1``, else
        'splitters' from ``LIST_RANK_CPU_SPLITTERS_MIN`` elements
        (``docs/graph.md``: "List ranking").  Every method returns the
        same ranks.
    device : {'auto', 'cpu', 'gpu'}, optional
        Where to run: 'auto' (default) on the input's side (NumPy: CPU,
        CuPy: its GPU).  The result is always on the input's side.
    seed : int, optional
        Seed of the splitter choice of 'splitters' (a hash of (seed,
        index), the same on CPU and GPU); the ranks never depend on it,
        only the time.  Default None: a fixed seed.
    return_tails : bool, optional
        Also return each element's list, named by its tail (the list's
        last element), which every method finds at no extra cost.
    direction : {'tail', 'head'}, optional
        'tail' (default): ``rank[i]`` is the number of elements after
        ``i`` in its list (its distance to the tail: the tail has rank 0,
        the head ``length - 1``), the usual definition (JaJa; Dehne and
        Yogaratnam).  'head': the distance from the head instead
        (``length - 1 - rank``; one more pass).
    cpu_threads : int, optional
        Threads of the CPU's 'wylie' and 'splitters' (and of 'auto'): 1
        (default) or more, 0 every core this process may run on.

    Returns
    -------
    rank : ndarray of int32 (int64 from 2**31 elements)
        On the input's side (CuPy for CuPy input; a tensor / JAX array for
        PyTorch / JAX input).
    tails : ndarray, same type
        Only with ``return_tails=True``: the tail of each element's list.

    Raises
    ------
    TypeError
        ``successor`` does not hold integers.
    ValueError
        ``successor`` is not 1-D, holds a value outside [0, n) other than
        -1, repeats an element (two elements with the same successor), or
        contains a cycle; or an option is invalid.  The message names the
        value and its position.

    Notes
    -----
    On the GPU the call reads device flags once at the end (twice for
    'splitters', which also reads its splitter count) to raise errors;
    invalid input never makes a kernel read out of bounds.

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.graph import list_rank
    >>> list_rank(np.array([2, 1, 4, 3, 1]))  # list 0 -> 2 -> 4 -> 1, and 3 alone
    array([3, 0, 2, 0, 1], dtype=int32)
    >>> list_rank(np.array([2, 1, 4, 3, 1]), return_tails=True, method="splitters")
    (array([3, 0, 2, 0, 1], dtype=int32), array([1, 1, 1, 3, 1], dtype=int32))
    >>> list_rank(np.array([2, -1, 4, -1, 1]), direction="head", method="wylie")
    array([0, 3, 1, 0, 2], dtype=int32)
    >>> list_rank(np.array([1, 2, 0]))
    Traceback (most recent call last):
    ...
    ValueError: successor must describe lists without cycles: element 0 lies on a cycle of length 3 (0 -> 1 -> 2 -> 0)
    """
    foreign = _interop.unwrap(successor, "successor")
    if foreign is not None:  # a PyTorch / JAX / DLPack array: its NumPy or CuPy view, and back
        array, back = foreign
        return _interop.rewrap(list_rank(array, method=method, device=device, seed=seed,
                                         return_tails=return_tails, direction=direction,
                                         cpu_threads=cpu_threads), back)
    method, device, seed = _check_options(method, device, seed, direction, cpu_threads)
    if is_cupy(successor):
        import cupy

        succ = cupy.asarray(successor)
        on_gpu_input = True
    else:
        succ = np.asarray(successor)
        on_gpu_input = False
    if succ.ndim != 1:
        raise ValueError(f"successor must be 1-D, got shape {succ.shape}")
    if succ.dtype.kind not in "iu":
        raise TypeError(f"successor must hold integers, got dtype {succ.dtype}")
    n = int(succ.size)
    run_gpu = (device == "gpu" or (device == "auto" and on_gpu_input)) and method != "sequential"
    if method == "auto":
        method = _auto(n, run_gpu, cpu_threads)
    want_tails = return_tails or direction == "head"
    if run_gpu:
        rank, tails = _on_gpu(succ, on_gpu_input, method, seed, want_tails)
    else:
        rank, tails = _on_cpu(succ, on_gpu_input, method, seed, want_tails, cpu_threads)
    if direction == "head" and n:  # length - 1 - rank, the length counted per tail
        xp = _xp(rank)
        length = xp.bincount(tails, minlength=n)[tails]
        rank = (length - 1 - rank).astype(rank.dtype, copy=False)
    return (rank, tails) if return_tails else rank


def _xp(a):
    if is_cupy(a):
        import cupy

        return cupy
    return np


def _check_options(method, device, seed, direction, cpu_threads):
    if not isinstance(method, str) or method not in LIST_RANK_METHODS:
        raise ValueError(f"method must be one of {LIST_RANK_METHODS}, got {method!r}")
    if not isinstance(device, str) or device not in _DEVICES:
        raise ValueError(f"device must be one of {_DEVICES}, got {device!r}")
    if direction not in ("tail", "head"):
        raise ValueError(f"direction must be 'tail' or 'head', got {direction!r}")
    if seed is None:
        seed = _SEED
    elif isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be None or an int >= 0, got {seed!r}")
    if (isinstance(cpu_threads, (bool, np.bool_)) or not isinstance(cpu_threads, (int, np.integer))
            or cpu_threads < 0):
        raise ValueError(f"cpu_threads must be an int >= 0 (0: all cores), got {cpu_threads!r}")
    if device == "gpu":
        from ..labelling import gpu_available

        if not gpu_available():
            raise RuntimeError("device='gpu' needs CuPy and a CUDA GPU")
    return method, device, int(seed) % (1 << 64)


def _auto(n, on_gpu, cpu_threads):
    """The rule of method='auto' (docs/graph.md: "List ranking")."""
    if on_gpu:
        return "wylie" if n <= _tuning.LIST_RANK_GPU_WYLIE_MAX else "splitters"
    if cpu_threads == 1 or n < _tuning.LIST_RANK_CPU_SPLITTERS_MIN:
        return "sequential"
    return "splitters"


def _out_dtype(n):
    return np.int32 if n < 2**31 else np.int64


def _on_cpu(succ, on_gpu_input, method, seed, want_tails, cpu_threads):
    from .._cpu import list_rank as backend
    from .._cpu.image import cpu_count

    host = succ.get() if on_gpu_input else succ
    n = host.size
    if host.dtype.kind == "u" and n and int(host.max()) >= n:  # (before wrapping to int64)
        raise_error(host, backend.OUT_OF_RANGE)
    threads = cpu_threads or cpu_count()
    rank, tails, code = backend.rank(host.astype(np.int64, copy=False), method, threads, seed,
                                     _tuning.LIST_RANK_CPU_SPACING, want_tails)
    if code:
        raise_error(host, code)
    out = _out_dtype(n)
    rank = rank.astype(out, copy=False)
    tails = tails.astype(out, copy=False) if want_tails else None
    if on_gpu_input:
        import cupy

        rank = cupy.asarray(rank)
        tails = cupy.asarray(tails) if want_tails else None
    return rank, tails


def _on_gpu(succ, on_gpu_input, method, seed, want_tails):
    import cupy

    from .._gpu import list_rank as backend

    dev = succ if on_gpu_input else cupy.asarray(succ)
    with cupy.cuda.Device(dev.device.id):
        rank, tails, code = backend.rank(dev, method, seed, _tuning.LIST_RANK_GPU_SPACING,
                                         want_tails)
    if code:
        raise_error(dev.get(), code)
    if not on_gpu_input:
        rank = rank.get()
        tails = tails.get() if want_tails else None
    return rank, tails


def raise_error(succ, code):
    """The ValueError of invalid host ``succ`` whose backend reported
    ``code`` (:mod:`meshccl._cpu.list_rank`'s codes); recomputes the exact
    value and position from the input."""
    from .._cpu import list_rank as backend

    n = succ.size
    if succ.dtype.kind == "u":
        bad = succ >= n
    else:
        bad = (succ < -1) | (succ >= n)
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise ValueError(f"successor must lie in [0, {n}) or be -1 (a tail), "
                         f"got {int(succ[pos])} at position {pos}")
    s = succ.astype(np.int64)
    idx = np.arange(n)
    inner = (s != -1) & (s != idx)
    vals = s[inner]
    if vals.size:
        uniq, counts = np.unique(vals, return_counts=True)
        if (counts > 1).any():
            v = int(uniq[np.argmax(counts > 1)])
            a, b = np.flatnonzero(inner & (s == v))[:2]
            raise ValueError(f"successor must not repeat an element (every element follows at "
                             f"most one other), got {v} at positions {a} and {b}")
    first, length = backend.first_on_cycle(s)
    if first >= 0:
        shown, j = [first], int(s[first])
        while j != first and len(shown) < 6:
            shown.append(j)
            j = int(s[j])
        path = " -> ".join(map(str, shown)) + (f" -> {first}" if j == first else " -> ...")
        raise ValueError(f"successor must describe lists without cycles: element {first} lies "
                         f"on a cycle of length {length} ({path})")
    raise AssertionError(f"list ranking reported error {code} on valid input")  # pragma: no cover
