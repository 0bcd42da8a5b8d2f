"""List ranking on the CPU: the compiled core's sequential walk, Wylie's
pointer jumping and the random-splitter (Reid-Miller) method
(``meshccl/_cpu/core/list_rank.hpp``).

Input arrives from :func:`meshccl.graph.list_rank` as an int64 array
``succ`` whose entries are the next element, ``-1`` or the element itself
(a tail).  The core first builds ``nxt`` (``succ`` with every tail written
as ``-1``) and each element's predecessor, checking the values; the three
methods then compute, for every element, its rank (the number of elements
after it in its list) and its tail, and report a cycle; the API turns the
error codes into messages (:func:`meshccl.graph._list_rank.raise_error`).

* ``'sequential'``: the reference and the baseline, on one thread.  Heads
  are the elements nobody points to; each list is walked from its head, its
  elements recorded in order, then ranked from the record
  (length - 1 - position).  Elements no walk reached lie on cycles.
* ``'wylie'``: pointer jumping, double-buffered, one parallel pass per
  round: ``val[i] += val[P[i]]; P[i] = P[P[i]]``, tails pointing at
  themselves with value 0.  Stops after a round that moves no pointer, or
  after ceil(log2 n) + 1 rounds; then every pointer must rest on a real
  tail (``nxt == -1``), else the list had a cycle (a pointer on a cycle of
  length 2^k can rest on itself, which is why the test is on ``nxt``).
* ``'splitters'``: every head and every element whose hash of (seed,
  index) falls in a 1/spacing share is a splitter (SplitMix64's finaliser,
  bit for bit the GPU's in ``meshccl/_kernels/list_rank.cu``, so both
  choose the same splitters); the threads walk the sublists, each from its
  splitter up to the next splitter or the tail, recording each element's
  owner and local distance; the reduced list of splitters (weights: the
  sublist lengths) is ranked by pointer jumping; a last pass adds each
  owner's offset.  An element no walk reached, or a reduced list that does
  not end at a real tail, is a cycle.

Threads are ``std::thread``: at most the number asked for (and the
cores), fewer on short lists; the GIL is released throughout.
"""

from __future__ import annotations

import numpy as np

from .image import _core, cpu_count

#: error codes of :func:`rank` (0: none)
OUT_OF_RANGE, DUPLICATE, CYCLE = 1, 2, 3


def rank(succ, method, threads, seed, spacing, want_tails):
    """Rank the lists of a successor array.

    Parameters
    ----------
    succ : ndarray of int64
        1-D successor array (``-1`` or the element itself at a tail).
    method : {'sequential', 'wylie', 'splitters'}
        The method.
    threads : int
        Threads of 'wylie' and 'splitters': at least 1, at most the cores
        this process may run on (more are read as that many).
    seed : int
        Seed of the splitters' hash, in [0, 2**64).
    spacing : int
        Mean distance between splitters (one element in ``spacing``).
    want_tails : bool
        Also compute each element's tail.

    Returns
    -------
    rank : ndarray of int64 or None
        Elements after each element in its list; None on an error.
    tails : ndarray of int64 or None
        Each element's tail; None without ``want_tails`` or on an error.
    code : int
        0, or :data:`OUT_OF_RANGE`, :data:`DUPLICATE` or :data:`CYCLE`.
    """
    succ = np.ascontiguousarray(succ, dtype=np.int64)
    n = succ.shape[0]
    rank_ = np.empty(n, np.int64)
    tails = np.empty(n, np.int64) if want_tails else None
    threads = max(1, min(int(threads), cpu_count()))
    code = _core.list_rank(succ, method, threads, int(seed), int(spacing), rank_, tails)
    if code:
        return None, None, code
    return rank_, tails, 0


def first_on_cycle(succ):
    """The smallest element on a cycle, for the error message.

    Parameters
    ----------
    succ : ndarray of int64
        A successor array without values out of range or repeats.

    Returns
    -------
    element, length : int, int
        The smallest element on a cycle and the cycle's length, or
        ``(-1, 0)`` when there is no cycle.
    """
    return _core.first_on_cycle(np.ascontiguousarray(succ, dtype=np.int64))
