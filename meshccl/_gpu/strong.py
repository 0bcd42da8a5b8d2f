"""Strongly connected components on the GPU: the launches of ``_kernels/strong.cu``.

:func:`strong_components` takes validated CuPy input as
:mod:`meshccl.graph._input` gives it (``"csr"``, ``"csc"`` or ``"edges"``)
on the current device and runs the kernel file's steps: trim,
forward-backward from a pivot, trim again, colouring rounds, then the
numbering by each component's smallest vertex (the shared relabel of
:mod:`.number_roots`).  It needs the graph and its transpose as CSR; the
one it lacks is built on the device (:func:`meshccl._gpu.graph.transpose_csr`
or, from an edge list, :func:`~meshccl._gpu.graph.to_csr`: counting
scatters).  Host synchronisations: the change flags of the trim,
push and backward passes (:func:`.passes.until_settled`: once per growing
batch of passes), the queue lengths of the searches (once per batch of
levels, batches doubling up to :data:`.passes.BATCH_MAX`), and the count of
vertices left after each colouring round.
"""

from __future__ import annotations

import math

import numpy as np

from .graph import BLOCK, _grid, _unpack, to_csr, transpose_csr
from .loader import c_type, kernels
from .number_roots import relabel
from .passes import BATCH_MAX, until_settled

#: strong.cu's CHUNK: the most row entries of one search queue entry
CHUNK = 32


def colour_order(n: int):
    """(a, b, a_inv) of the colouring's priorities (a v + b) mod n, a
    permutation of [0, n) (``strong.cu``'s essay says why): a the integer
    nearest 0.618 n that is coprime to n, b = n // 3, a_inv the inverse of
    a modulo n.  (1, 0, 1), the identity, from 2**32 vertices, where a v
    could overflow 64 bits in the kernel."""
    if n < 3 or n >= 2**32:
        return 1, 0, 1
    a = max(1, round(0.6180339887 * n))
    while math.gcd(a, n) != 1:
        a += 1
    return a, n // 3, pow(a, -1, n)


def graphs(kind, arrays, n):
    """(I, J, (fptr, fidx), (rptr, ridx)): the graph and its transpose as
    CSR (row offsets int64, neighbours of type J) from validated input."""
    I, J, indptr, src, dst = _unpack(kind, arrays, n)
    if indptr is None:  # an edge list
        return I, J, to_csr(src, dst, n), to_csr(dst, src, n)
    given, other = (indptr, dst), transpose_csr(indptr, dst, n)
    if kind == "csc":  # the arrays are the transpose's CSR
        given, other = other, given
    return I, J, given, other


def strong_components(kind, arrays, n, timer=None, info=None):
    """``(count, labels)``: count a Python int, labels a CuPy array of type
    I (int32 below 2**31 vertices) numbered 0..count-1 in order of each
    component's smallest vertex.  ``timer``: a :class:`.timing.PhaseTimer`
    for the steps 'transpose', 'trim', 'fwbw', 'colour' and the relabel's;
    ``info``: a dict that gets ``method_phases`` and ``iterations`` (the
    colouring rounds)."""
    import cupy

    from .timing import run

    I0 = cupy.int32 if n < 2**31 else cupy.int64
    if n == 0:
        if info is not None:
            info.update(method_phases=[], iterations=0)
        return 0, cupy.empty(0, dtype=I0)
    state = {}

    def transpose():
        state["g"] = graphs(kind, arrays, n)

    run(timer, "transpose", transpose)
    I, J, (fptr, fidx), (rptr, ridx) = state["g"]
    ti, tj = c_type(I), c_type(J)
    nn = np.dtype(I).type(n)
    grid = _grid(n, BLOCK, 32)
    (trim, score, seed, expand, fwbw, cinit, push, roots, back, cdone, low_k, point) = kernels(
        "strong.cu", f"meshccl_scc_trim<{ti}, {tj}>", f"meshccl_scc_score<{ti}>",
        f"meshccl_scc_seed<{ti}>", f"meshccl_scc_expand<{ti}, {tj}>", f"meshccl_scc_fwbw<{ti}>",
        f"meshccl_scc_colour_init<{ti}>", f"meshccl_scc_colour_push<{ti}, {tj}>",
        f"meshccl_scc_colour_roots<{ti}>", f"meshccl_scc_colour_back<{ti}, {tj}>",
        f"meshccl_scc_colour_done<{ti}>", f"meshccl_scc_min<{ti}>", f"meshccl_scc_point<{ti}>")
    rep = cupy.full(n, -1, dtype=I)
    mark = cupy.empty(n, dtype=cupy.uint32)  # written by the score and colouring kernels

    def trim_all():
        until_settled(lambda t, flag: trim(grid, (BLOCK,), (fptr, fidx, rptr, ridx, rep, nn, flag)),
                      "strong")

    def forward_backward():
        scores = cupy.empty(n, dtype=cupy.int64)
        score(grid, (BLOCK,), (fptr, rptr, rep, nn, scores, mark))
        pivot = cupy.argmax(scores).astype(cupy.int64).reshape(1)  # stays on the device
        # a queue holds each reached vertex once, as its rows' chunks of at
        # most CHUNK entries: at most n + m / CHUNK entries (strong.cu)
        room = n + int(fidx.size) // CHUNK + 1
        queues = [(cupy.empty(room, dtype=I), cupy.empty(room, dtype=cupy.uint32),
                   cupy.empty(room, dtype=I), cupy.empty(room, dtype=cupy.uint32))
                  for _ in range(2)]
        # queue lengths [slot][direction]: level k reads slot k % 3, counts
        # into slot (k + 1) % 3 and zeroes slot (k + 2) % 3 (strong.cu)
        counts = cupy.zeros((3, 2), dtype=cupy.uint64)
        seed((1,), (32,), (fptr, rptr, pivot, rep, mark, *queues[0], counts[0]))
        level_grid = (_grid(n, BLOCK, 8)[0], 2)
        level, batch = 0, 1
        while True:
            for _ in range(batch):
                a, b = level % 2, 1 - level % 2
                expand(level_grid, (BLOCK,), (fptr, fidx, rptr, ridx, mark, *queues[a],
                                              counts[level % 3], *queues[b],
                                              counts[(level + 1) % 3], counts[(level + 2) % 3]))
                level += 1
            if not counts[level % 3].get().any():  # the queues the next level would read
                break
            batch = min(BATCH_MAX, 2 * batch)
        fwbw(grid, (BLOCK,), (mark, pivot, rep, nn))
        state["levels"] = level

    a, b, a_inv = (np.uint64(x) for x in colour_order(n))

    def colouring():
        colour = cupy.empty(n, dtype=I)
        active = cupy.empty(n, dtype=cupy.uint8)
        left = cupy.zeros(1, dtype=cupy.uint64)
        rounds = 0
        while True:
            rounds += 1
            cinit(grid, (BLOCK,), (rep, colour, active, mark, nn, a, b))
            until_settled(lambda t, flag: push(grid, (BLOCK,), (fptr, fidx, rep, colour, active,
                                                                nn, flag)), "strong")
            roots(grid, (BLOCK,), (rep, colour, mark, nn, a, b))
            until_settled(lambda t, flag: back(grid, (BLOCK,), (rptr, ridx, rep, colour, mark, nn,
                                                                flag)), "strong")
            left.fill(0)
            cdone(grid, (BLOCK,), (mark, colour, rep, nn, a_inv, b, left))
            if not int(left.get()[0]):
                break
        state["rounds"] = rounds

    run(timer, "trim", trim_all)
    run(timer, "fwbw", forward_backward)
    run(timer, "trim", trim_all)
    run(timer, "colour", colouring)

    def smallest():
        low = cupy.full(n, n, dtype=I)
        low_k(grid, (BLOCK,), (rep, low, nn))
        point(grid, (BLOCK,), (rep, low, nn))

    run(timer, "smallest", smallest)
    count = relabel(rep, n, timer, base=-1)
    if info is not None:
        info["method_phases"] = ["transpose", "trim", "fwbw", "colour", "smallest"]
        info["iterations"] = state["rounds"]
    return int(count), rep
