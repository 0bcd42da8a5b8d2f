"""GPU side of the one relabel path (``kernels/relabel.cu``)."""

from __future__ import annotations

from .loader import c_type, kernels
from .timing import run

BLOCK = 256


def grid(n: int) -> tuple:
    return ((n + BLOCK - 1) // BLOCK,)


def relabel_steps(P, n: int):
    """The relabel path as ``[(name, launch), ...]``; the last returns N."""
    import cupy

    t = c_type(P.dtype)
    flatten, gather = kernels("relabel.cu", f"meshccl_flatten<{t}>", f"meshccl_relabel<{t}>")
    words = (n + 31) // 32
    bits = cupy.empty(words, dtype=cupy.uint32)
    counts = cupy.empty(words, dtype=P.dtype)
    nn = P.dtype.type(n)
    state = {}

    def scan():
        state["incl"] = cupy.cumsum(counts, dtype=P.dtype)

    def label():
        gather(grid(n), (BLOCK,), (P, nn, bits, state["incl"]))
        return state["incl"][-1]

    return [
        ("flatten", lambda: flatten(grid(n), (BLOCK,), (P, nn, bits, counts))),
        ("scan", scan),
        ("relabel", label),
    ]


def relabel(P, n: int, timer=None):
    """Turn the parent array ``P`` (int32/int64, flat) into labels 1..N in place.

    Returns N as a 0-d CuPy array (no host synchronisation).  ``timer``: a
    :class:`.timing.PhaseTimer`, or None.
    """
    result = None
    for name, launch in relabel_steps(P, n):
        result = run(timer, name, launch)
    return result
