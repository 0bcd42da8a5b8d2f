"""Numbering of a union-find forest whose roots are smallest indices
(``_kernels/number_roots.cu``): the general lattice chain, the iterative
methods, graphs and launch plans of n-D arrays end here.  Plain images
number their pieces instead (:mod:`.image_plain`)."""

from __future__ import annotations

import numpy as np

from .. import _tuning

from .loader import c_type, kernels
from .timing import run

BLOCK = 256
#: words per block of the long scan (MESHCCL_PIECE_BLOCK in numbering.cuh)
SCAN_BLOCK = 1024


def grid(n: int) -> tuple:
    return ((n + BLOCK - 1) // BLOCK,)


def scratch(n: int, index_dtype):
    """The relabel path's temporary arrays for n elements: root bit masks,
    per-word root counts and their prefix sums (n / 32 entries each), and
    for long arrays the block sums of :func:`scan_words` and their scan
    (2 per 1024 words; else None)."""
    import cupy

    words = (n + 31) // 32
    blocks = -(-words // SCAN_BLOCK)
    return (cupy.empty(words, dtype=cupy.uint32), cupy.empty(words, dtype=index_dtype),
            cupy.empty(words, dtype=index_dtype),
            cupy.empty(2 * blocks, dtype=index_dtype) if words > _tuning.ROOTS_ONE_BLOCK_SCAN_WORDS else None)


def scan_words(index_dtype, words: int):
    """``launch(bits, counts, incl, sums)``: incl[w] = the roots in words
    0..w, where counts[w] = popcount(bits[w]) (meshccl_flatten writes
    both).  Up to ``_tuning.ROOTS_ONE_BLOCK_SCAN_WORDS`` words one block scans counts;
    beyond, three launches: a block sum per 1024 words of bits
    (meshccl_word_sums, into sums[:blocks]), their scan (meshccl_scan_block,
    into sums[blocks:]) and each word's sum (meshccl_rank_words)."""
    index_dtype = np.dtype(index_dtype)
    t = c_type(index_dtype)
    I = index_dtype.type
    if words <= _tuning.ROOTS_ONE_BLOCK_SCAN_WORDS:
        (scan_block,) = kernels("number_roots.cu", f"meshccl_scan_block<{t}>")

        def short(bits, counts, incl, sums):
            scan_block((1,), (1024,), (counts, incl, I(words)))
        return short
    sums_k, scan_block, rank_k = kernels("number_roots.cu", f"meshccl_word_sums<{t}>",
                                         f"meshccl_scan_block<{t}>", f"meshccl_rank_words<{t}>")
    blocks = -(-words // SCAN_BLOCK)

    def long(bits, counts, incl, sums):
        sums_k((blocks,), (SCAN_BLOCK,), (bits, I(words), sums))
        scan_block((1,), (1024,), (sums, sums[blocks:], I(blocks)))
        rank_k((blocks,), (SCAN_BLOCK,), (bits, sums[blocks:], I(words), incl))
    return long


#: a null pointer argument (CuPy passes this 8-byte scalar by value)
NULL = np.uint64(0)


def relabel_steps(P, n: int, buffers=None, base: int = 0, count_out=None, first=False):
    """The relabel path as ``[(name, launch), ...]``; the last returns N.

    ``buffers``: arrays from :func:`scratch` to reuse (else new ones).
    ``base``: added to every label (0: components 1..N and background 0;
    -1: SciPy's 0..N-1 for graphs, which have no background).
    ``count_out``: None, or a one-element int64 CuPy array (a view) that
    also receives N, in the relabel kernel.
    ``first``: first-cell labels (root + 1; images, base 0):
    meshccl_relabel_first, which reads no rank words (the scan still
    gives N).
    """
    t = c_type(P.dtype)
    form = "_first" if first else ""
    flatten, gather = kernels("number_roots.cu", f"meshccl_flatten<{t}>",
                              f"meshccl_relabel{form}<{t}>")
    words = (n + 31) // 32
    bits, counts, incl, sums = buffers if buffers is not None else scratch(n, P.dtype)
    scan = scan_words(P.dtype, words)
    nn = P.dtype.type(n)

    tail = (P.dtype.type(base), NULL if count_out is None else count_out, P.dtype.type(words))

    def label():
        gather(grid(n), (BLOCK,), (P, nn, bits, incl) + tail)
        return incl[-1]

    return [
        ("flatten", lambda: flatten(grid(n), (BLOCK,), (P, nn, bits, counts))),
        ("scan", lambda: scan(bits, counts, incl, sums)),
        ("relabel", label),
    ]


def relabel(P, n: int, timer=None, base: int = 0, count_out=None, first=False):
    """Turn the parent array ``P`` (int32/int64, flat) into labels 1..N in place
    (``base``, ``count_out`` and ``first``: see :func:`relabel_steps`).

    Returns N as a 0-d CuPy array (no host synchronisation).  ``timer``: a
    :class:`.timing.PhaseTimer`, or None.
    """
    result = None
    for name, launch in relabel_steps(P, n, base=base, count_out=count_out, first=first):
        result = run(timer, name, launch)
    return result


def relabel_counted(P, n: int, timer=None):
    """:func:`relabel` (images: base 0) that also counts each label's cells,
    in the kernel that writes the labels (meshccl_relabel_counted).

    Returns (N, counts): N an int (read after the scan, to size the table:
    the call's one wait for the device), counts an int64 CuPy array of
    length N + 1, counts[0] the background (the cells the labels left).
    """
    import cupy

    t = c_type(P.dtype)
    flatten, counted = kernels("number_roots.cu", f"meshccl_flatten<{t}>",
                               f"meshccl_relabel_counted<{t}>")
    words = (n + 31) // 32
    bits, per_word, incl, sums = scratch(n, P.dtype)
    scan = scan_words(P.dtype, words)
    nn = P.dtype.type(n)
    run(timer, "flatten", lambda: flatten(grid(n), (BLOCK,), (P, nn, bits, per_word)))
    run(timer, "scan", lambda: scan(bits, per_word, incl, sums))
    num = int(incl[-1])
    counts = cupy.zeros(num + 1, dtype=cupy.int64)
    run(timer, "relabel", lambda: counted(grid(n), (BLOCK,), (P, nn, bits, incl, counts)))
    counts[0] = n - counts[1:].sum()
    return num, counts
