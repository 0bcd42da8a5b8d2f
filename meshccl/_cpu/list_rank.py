"""List ranking on the CPU (numba): the sequential walk, Wylie's pointer
jumping and the random-splitter (Reid-Miller) method.

Input arrives from :func:`meshccl.graph.list_rank` as an int64 array
``succ`` whose entries are the next element, ``-1`` or the element itself
(a tail).  Every function works on ``nxt``: ``succ`` with every tail written
as ``-1``, built by :func:`_prepare`, which also checks the values.  The
three methods then compute, for every element, its rank (the number of
elements after it in its list) and its tail, and report a cycle; the API
turns the error codes into messages (:func:`errors`).

* ``'sequential'`` (:func:`_rank_sequential`): the reference and the
  baseline.  Heads are the elements nobody points to; each list is walked
  from its head, its elements recorded in order in a buffer, then ranked
  from the buffer (length - 1 - position).  Elements no walk reached lie
  on cycles.
* ``'wylie'`` (:func:`_jump`): pointer jumping, double-buffered, one
  ``prange`` pass per round: ``val[i] += val[P[i]]; P[i] = P[P[i]]``,
  tails pointing at themselves with value 0.  Stops after a round that moves
  no pointer, or after ceil(log2 n) + 1 rounds; then every pointer must
  rest on a real tail (``nxt == -1``), else the list had a cycle (a pointer
  on a cycle of length 2^k can rest on itself, which is why the test is on
  ``nxt``, not on ``P``).
* ``'splitters'`` (:func:`_walk`, :func:`_expand`): every head and every
  element whose hash of (seed, index) falls in a 1/spacing share is a
  splitter; one ``prange`` iteration per splitter walks its sublist up to
  the next splitter or the tail, recording each element's owner and local
  distance; the reduced list of splitters (weights: the sublist lengths) is
  ranked by :func:`_jump`; a last pass adds each owner's offset.  An element
  no walk reached, or a reduced list that does not end at a real tail, is a
  cycle.

The parallel functions run inside :func:`meshccl._cpu.regions.numba_region`;
where no region may run the caller falls back to the sequential walk (the
same ranks).  One numba specialisation each: int64 arrays.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .regions import numba_region

#: error codes of :func:`rank` (0: none)
OUT_OF_RANGE, DUPLICATE, CYCLE = 1, 2, 3


@njit(cache=True, parallel=True)
def _prepare(succ, nxt, pred):
    """nxt (tails as -1) and pred (the predecessor of each element, -1 for
    a head); returns (out-of-range count, duplicate count).  Two elements
    with the same successor race for ``pred``; the loser is found by the
    second pass (an aligned 8-byte store is atomic, so one of them wins)."""
    n = succ.shape[0]
    for i in prange(n):
        pred[i] = -1
    bad = 0
    for i in prange(n):
        s = succ[i]
        if s == -1 or s == i:
            nxt[i] = -1
        elif s < 0 or s >= n:
            nxt[i] = -1
            bad += 1
        else:
            nxt[i] = s
            pred[s] = i
    dup = 0
    for i in prange(n):
        s = nxt[i]
        if s >= 0 and pred[s] != i:
            dup += 1
    return bad, dup


@njit(cache=True)
def _rank_sequential(nxt, pred, rank, tails, order, want_tails):
    """The sequential walk; returns how many elements the walks reached
    (fewer than n: the rest lie on cycles)."""
    n = nxt.shape[0]
    reached = 0
    for h in range(n):
        if pred[h] != -1:
            continue
        length = 0
        j = h
        while j != -1:
            order[length] = j
            length += 1
            j = nxt[j]
        t = order[length - 1]
        for k in range(length):
            rank[order[k]] = length - 1 - k
        if want_tails:
            for k in range(length):
                tails[order[k]] = t
        reached += length
    return reached


@njit(cache=True, parallel=True)
def _jump_init(nxt, weight, P, val):
    """P: nxt with ends pointing at themselves; val: the weight of the
    element P points to (1 for each element when ``weight`` is empty: the
    plain list), 0 at ends."""
    n = nxt.shape[0]
    plain = weight.shape[0] == 0
    for i in prange(n):
        s = nxt[i]
        if s < 0:
            P[i] = i
            val[i] = 0
        else:
            P[i] = s
            val[i] = 1 if plain else weight[s]


@njit(cache=True, parallel=True)
def _jump_round(P, val, P2, val2):
    """One round of pointer jumping; returns how many pointers moved."""
    n = P.shape[0]
    moved = 0
    for i in prange(n):
        p = P[i]
        pp = P[p]
        P2[i] = pp
        val2[i] = val[i] + val[p]
        if pp != p:
            moved += 1
    return moved


@njit(cache=True, parallel=True)
def _at_ends(nxt, P):
    """How many pointers rest on an element that is not a real end."""
    bad = 0
    for i in prange(P.shape[0]):
        if nxt[P[i]] != -1:
            bad += 1
    return bad


def _jump(nxt, weight):
    """(val, P, ok): Wylie's pointer jumping over ``nxt`` (-1: end) with
    element weights (empty: 1 each); val[i] is the summed weight of the
    elements after i, P[i] its end; ok False when some element lies on a
    cycle.  Rounds: until none moves a pointer, at most ceil(log2 n) + 1."""
    n = nxt.shape[0]
    P, val = np.empty(n, np.int64), np.empty(n, np.int64)
    P2, val2 = np.empty(n, np.int64), np.empty(n, np.int64)
    _jump_init(nxt, weight, P, val)
    for _ in range(max(1, math.ceil(math.log2(max(n, 1)))) + 1):
        moved = _jump_round(P, val, P2, val2)
        P, P2, val, val2 = P2, P, val2, val
        if moved == 0:
            break
    return val, P, _at_ends(nxt, P) == 0


@njit(cache=True, inline="always")
def _mix(x):
    """SplitMix64's finaliser (the same as list_rank.cu's)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit(cache=True, parallel=True)
def _mark(pred, seed, spacing, flag):
    """flag[i] = 1 for the splitters: heads and a 1/spacing share by hash."""
    for i in prange(pred.shape[0]):
        h = _mix(np.uint64(seed) + np.uint64(i + 1) * np.uint64(0x9E3779B97F4A7C15))
        flag[i] = 1 if pred[i] == -1 or h % np.uint64(spacing) == 0 else 0


@njit(cache=True, parallel=True)
def _walk(nxt, S, owner, local, rnxt, weight, rtail):
    """One iteration per splitter t: walk from S[t] to the next splitter
    (rnxt[t] its number) or to the tail (rnxt[t] = -1, rtail[t] the tail),
    writing owner and local distance of every element passed; weight[t] the
    sublist's length.  A walk round a cycle stops at its own splitter
    (rnxt[t] = t, no tail): :func:`_jump` then finds no real end."""
    for t in prange(S.shape[0]):
        j = S[t]
        d = 0
        rtail[t] = -1
        while True:
            local[j] = d
            s = nxt[j]
            if s < 0:
                rnxt[t] = -1
                rtail[t] = j
                break
            o = owner[s]
            if o >= 0:
                rnxt[t] = o
                break
            owner[s] = t
            j = s
            d += 1
        weight[t] = d + 1


@njit(cache=True, parallel=True)
def _expand(owner, local, E, Pf, weight, rtail, rank, tails, want_tails):
    """rank[i] = (elements after i's sublist) + (after i inside it); tails
    from the reduced list's end; returns how many elements no walk reached."""
    lost = 0
    for i in prange(owner.shape[0]):
        o = owner[i]
        if o < 0:
            lost += 1
            continue
        rank[i] = E[o] + weight[o] - 1 - local[i]
        if want_tails:
            tails[i] = rtail[Pf[o]]
    return lost


def _splitters(nxt, pred, seed, spacing, rank, tails, want_tails):
    """The random-splitter method; returns whether every element was ranked."""
    n = nxt.shape[0]
    flag = np.empty(n, np.uint8)
    _mark(pred, seed, spacing, flag)
    S = np.flatnonzero(flag).astype(np.int64)
    r = S.size
    owner = np.full(n, -1, np.int64)
    owner[S] = np.arange(r, dtype=np.int64)
    local = np.empty(n, np.int64)
    rnxt, weight, rtail = (np.empty(r, np.int64) for _ in range(3))
    _walk(nxt, S, owner, local, rnxt, weight, rtail)
    E, Pf, ok = _jump(rnxt, weight)
    lost = _expand(owner, local, E, Pf, weight, rtail, rank, tails, want_tails)
    return ok and lost == 0


def rank(succ, method, threads, seed, spacing, want_tails):
    """(rank, tails or None, error code) of validated-shape int64 ``succ``
    on ``threads`` numba threads; ``method`` is 'sequential', 'wylie' or
    'splitters'.  Ranks and tails are int64; on an error code they mean
    nothing."""
    n = succ.shape[0]
    nxt = np.empty(n, np.int64)
    pred = np.empty(n, np.int64)
    with numba_region(threads) as ok:
        if not ok:  # (beside another region, or a forked child: the serial walk)
            method = "sequential"
            bad, dup = _prepare_serial(succ, nxt, pred)
        else:
            bad, dup = _prepare(succ, nxt, pred)
        if bad:
            return None, None, OUT_OF_RANGE
        if dup:
            return None, None, DUPLICATE
        tails = np.empty(n if want_tails else 0, np.int64)
        if method == "sequential":
            rank_ = np.empty(n, np.int64)
            reached = _rank_sequential(nxt, pred, rank_, tails, np.empty(n, np.int64),
                                       want_tails)
            good = reached == n
        elif method == "wylie":
            rank_, P, good = _jump(nxt, np.empty(0, np.int64))
            tails = P
        else:
            rank_ = np.empty(n, np.int64)
            good = _splitters(nxt, pred, seed, spacing, rank_, tails, want_tails)
    if not good:
        return None, None, CYCLE
    return rank_, (tails if want_tails else None), 0


@njit(cache=True)
def _prepare_serial(succ, nxt, pred):
    """:func:`_prepare` without threads (where no numba region may run)."""
    n = succ.shape[0]
    bad = 0
    dup = 0
    for i in range(n):
        pred[i] = -1
    for i in range(n):
        s = succ[i]
        if s == -1 or s == i:
            nxt[i] = -1
        elif s < 0 or s >= n:
            nxt[i] = -1
            bad += 1
        else:
            nxt[i] = s
            if pred[s] != -1:
                dup += 1
            pred[s] = i
    return bad, dup


@njit(cache=True)
def first_on_cycle(succ):
    """(element, cycle length) of the smallest element on a cycle of a
    valid successor array (no repeats, in range), or (-1, 0).  The error
    path's exact message."""
    n = succ.shape[0]
    pred = np.full(n, -1, np.int64)
    for i in range(n):
        s = succ[i]
        if s != -1 and s != i:
            pred[s] = i
    seen = np.zeros(n, np.uint8)
    for h in range(n):
        if pred[h] == -1:
            j = h
            while True:
                seen[j] = 1
                s = succ[j]
                if s == -1 or s == j:
                    break
                j = s
    for i in range(n):
        if not seen[i]:
            length = 1
            j = succ[i]
            while j != i:
                j = succ[j]
                length += 1
            return i, length
    return -1, 0
