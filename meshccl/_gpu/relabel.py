"""GPU side of the one relabel path (``kernels/relabel.cu``)."""

from __future__ import annotations

from .loader import c_type, kernels
from .timing import run

BLOCK = 256
#: Word counts up to this many are scanned by one block (meshccl_scan_block);
#: longer ones by CuPy's cumsum.
BLOCK_SCAN_WORDS = 16384


def grid(n: int) -> tuple:
    return ((n + BLOCK - 1) // BLOCK,)


def scratch(n: int, index_dtype):
    """The relabel path's temporary arrays for n elements: root bit masks,
    per-word root counts and their prefix sums (n / 32 entries each)."""
    import cupy

    words = (n + 31) // 32
    return (cupy.empty(words, dtype=cupy.uint32), cupy.empty(words, dtype=index_dtype),
            cupy.empty(words, dtype=index_dtype) if words <= BLOCK_SCAN_WORDS else None)


def relabel_steps(P, n: int, buffers=None):
    """The relabel path as ``[(name, launch), ...]``; the last returns N.

    ``buffers``: arrays from :func:`scratch` to reuse (else new ones).
    """
    import cupy

    t = c_type(P.dtype)
    flatten, gather, scan_block = kernels("relabel.cu", f"meshccl_flatten<{t}>",
                                          f"meshccl_relabel<{t}>", f"meshccl_scan_block<{t}>")
    words = (n + 31) // 32
    bits, counts, incl = buffers if buffers is not None else scratch(n, P.dtype)
    nn = P.dtype.type(n)
    state = {"incl": incl}

    def scan():
        if incl is not None:
            scan_block((1,), (1024,), (counts, incl, P.dtype.type(words)))
        else:
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
