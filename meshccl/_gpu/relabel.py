"""GPU side of the one relabel path (``kernels/relabel.cu``)."""

from __future__ import annotations

from .loader import c_type, kernels

BLOCK = 256


def grid(n: int) -> tuple:
    return ((n + BLOCK - 1) // BLOCK,)


def relabel(P, n: int):
    """Turn the parent array ``P`` (int32/int64, flat) into labels 1..N in place.

    Returns N as a 0-d CuPy array (no host synchronisation).
    """
    import cupy

    t = c_type(P.dtype)
    flatten, gather = kernels("relabel.cu", f"meshccl_flatten<{t}>", f"meshccl_relabel<{t}>")
    words = (n + 31) // 32
    bits = cupy.empty(words, dtype=cupy.uint32)
    counts = cupy.empty(words, dtype=P.dtype)
    nn = P.dtype.type(n)
    flatten(grid(n), (BLOCK,), (P, nn, bits, counts))
    incl = cupy.cumsum(counts, dtype=P.dtype)
    gather(grid(n), (BLOCK,), (P, nn, bits, incl))
    return incl[-1]
