"""List ranking on the GPU: the launches of ``_kernels/list_rank.cu``.

:func:`rank` takes a CuPy integer array (any integer type: the prepare
kernel reads it as it is) on the current device and runs 'wylie' or
'splitters' (the essay of ``list_rank.cu`` explains both).  Index type I:
int32 below 2**31 elements, int64 beyond.  Host synchronisations: the
splitter count of 'splitters' (``cupy.flatnonzero``) and one read of the
three error flags at the end; invalid input is read by every kernel
without going out of bounds, so its error is raised then.
"""

from __future__ import annotations

import math

import numpy as np

from .loader import c_type, kernels
from .number_roots import NULL

BLOCK = 256
#: blocks per multiprocessor of the grid-stride kernels
BLOCKS_PER_SM = 8
#: threads per block of the walk (one splitter each)
WALK_BLOCK = 128

_sm = {}


def _grid(work):
    import cupy

    dev = cupy.cuda.Device().id
    if dev not in _sm:
        _sm[dev] = int(cupy.cuda.runtime.getDeviceProperties(dev)["multiProcessorCount"])
    return (max(1, min(-(-work // BLOCK), BLOCKS_PER_SM * _sm[dev])),)


def _jump(nxt, weight, n, tail, flags, I):
    """Wylie's rounds over ``nxt`` (-1: end) with ``weight`` (None: 1 per
    element): (rank, tail) -- tail None unless ``tail`` -- the cycle flag
    set in ``flags`` when a pointer does not rest on a real end."""
    import cupy

    ti = c_type(I)
    init, jump = kernels("list_rank.cu", f"meshccl_list_rank_jump_init<{ti}>",
                         f"meshccl_list_rank_jump<{ti}>")
    a = cupy.empty((n, 2), I)
    b = cupy.empty((n, 2), I)
    grid = _grid(n)
    I_ = np.dtype(I).type
    init(grid, (BLOCK,), (nxt, weight if weight is not None else NULL, I_(n), a))
    rounds = max(1, math.ceil(math.log2(max(n, 1))))
    rank = cupy.empty(n, I)
    tails = cupy.empty(n, I) if tail else None
    for k in range(rounds):
        if k == rounds - 1:
            jump(grid, (BLOCK,), (a, NULL, I_(n), nxt, rank, tails if tail else NULL, flags))
        else:
            jump(grid, (BLOCK,), (a, b, I_(n), nxt, NULL, NULL, flags))
            a, b = b, a
    return rank, tails


def rank(succ, method, seed, spacing, want_tails):
    """(rank, tails or None, error code) on the current device; codes as
    :mod:`meshccl._cpu.list_rank`'s (0: none).  ``method``: 'wylie' or
    'splitters'."""
    import cupy

    n = int(succ.size)
    I = np.int32 if n < 2**31 else np.int64
    I_ = np.dtype(I).type
    ti = c_type(I)
    if n == 0:
        return cupy.empty(0, I), (cupy.empty(0, I) if want_tails else None), 0
    prepare, verify = kernels("list_rank.cu",
                              f"meshccl_list_rank_prepare<{ti}, {c_type(succ.dtype)}>",
                              f"meshccl_list_rank_verify<{ti}>")
    flags = cupy.zeros(3, np.int32)
    nxt = cupy.empty(n, I)
    pred = cupy.full(n, -1, I)
    grid = _grid(n)
    succ = cupy.ascontiguousarray(succ)
    prepare(grid, (BLOCK,), (succ, I_(n), nxt, pred, flags))
    verify(grid, (BLOCK,), (nxt, pred, I_(n), flags))
    if method == "wylie":
        rank_, tails = _jump(nxt, None, n, want_tails, flags, I)
    else:
        rank_, tails = _splitters(nxt, pred, n, seed, spacing, want_tails, flags, I)
    f = flags.get()  # the one read of the flags
    code = 1 if f[0] else 2 if f[1] else 3 if f[2] else 0
    return rank_, tails, code


def _splitters(nxt, pred, n, seed, spacing, want_tails, flags, I):
    import cupy

    ti = c_type(I)
    I_ = np.dtype(I).type
    mark, own, walk, expand = kernels(
        "list_rank.cu", *(f"meshccl_list_rank_{k}<{ti}>" for k in ("mark", "own", "walk", "expand")))
    grid = _grid(n)
    flag = cupy.empty(n, np.uint8)
    owner = cupy.empty((n, 2), I)
    mark(grid, (BLOCK,), (pred, I_(n), np.uint64(seed), np.uint64(spacing), flag, owner))
    S = cupy.flatnonzero(flag).astype(np.int64, copy=False)  # (reads the count)
    r = int(S.size)
    rank_ = cupy.empty(n, I)
    tails = cupy.empty(n, I) if want_tails else None
    if r:
        own(_grid(r), (BLOCK,), (S, I_(r), owner))
        rnxt, length, rtail = (cupy.empty(r, I) for _ in range(3))
        walk((max(1, -(-r // WALK_BLOCK)),), (WALK_BLOCK,), (nxt, S, I_(r), owner, rnxt, length,
                                                            rtail))
        E, last = _jump(rnxt, length, r, True, flags, I)
    else:  # no splitter, no head: every element lies on a cycle (expand flags it)
        E = last = rnxt = length = rtail = cupy.zeros(1, I)
    expand(grid, (BLOCK,), (owner, E, last, length, rtail, I_(n), rank_,
                            tails if want_tails else NULL, flags))
    return rank_, tails
