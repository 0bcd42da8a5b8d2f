"""Counter-based random numbers for the simulators: Philox4x32-10.

Every random number a simulator draws is a pure function of a counter and
a key (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as
1, 2, 3", SC11): nothing is carried from one draw to the next, so a cell's
numbers at a step depend only on (seed, step, what is drawn, cell index),
never on the order cells are visited, on the launch shape of a GPU kernel
or on how many steps ran before a checkpoint.  The same function runs on
NumPy (:func:`philox4x32` vectorised, with 32-bit words held in uint64 so
that the 32 x 32-bit products are exact), in the compiled CPU core
(:func:`words` on NumPy input: a loop over the cells calling
``meshccl_philox`` of ``meshccl/_kernels/philox.cuh``) and on CuPy (an
elementwise kernel per number of words returned, calling the same
``meshccl_philox`` with ``__umulhi``, as the Ising kernels do), and they
give the same words, bit for bit.

The layout of the counter used by :func:`words`::

    counter = (index mod 2**32, (index >> 32) << 8 | tag, step mod 2**32, step >> 32)
    key     = (seed mod 2**32, seed >> 32)

``index`` is a cell's flat (C-order) index, or a cluster label; ``tag``
(0..255) says what the draw is for (:data:`TAG_METROPOLIS`, ...), so
different uses of one cell at one step never share a counter.

The rounds follow the published algorithm (multipliers 0xD2511F53 and
0xCD9E8D57, Weyl key increments 0x9E3779B9 and 0xBB67AE85, the key bumped
before every round but the first); ``tests/test_sim.py`` checks them
against the known-answer vectors of Random123's ``tests/kat_vectors``
(DEShawResearch/random123, lines ``philox4x32 7`` and ``philox4x32 10``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["philox4x32", "words", "uniform", "TAG_INIT", "TAG_METROPOLIS", "TAG_BOND",
           "TAG_CLUSTER", "TAG_KAWASAKI", "TAG_FIELD", "TAG_METROPOLIS_TIE"]

#: Philox4x32 round multipliers and key increments (Salmon et al. 2011).
M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
ROUNDS = 10
_MASK = 0xFFFFFFFF

#: what a draw is for: the tag in the counter's second word
TAG_INIT = 1         # initial states
TAG_METROPOLIS = 2   # Metropolis acceptance, 16 bits per cell per sweep
TAG_BOND = 3         # Swendsen-Wang bonds, word k for half offset k
TAG_CLUSTER = 4      # Swendsen-Wang: one draw per cluster, indexed by label
TAG_KAWASAKI = 5     # Kawasaki exchanges, word d for pairs along axis d
TAG_FIELD = 6        # initial concentration fields
TAG_METROPOLIS_TIE = 7  # Metropolis: 16 more bits where the first 16 tie with the threshold

def _cuda_preamble():
    """``meshccl/_kernels/philox.cuh``: the CUDA rounds (``meshccl_philox``), shared
    with the Ising kernels of ``ising.cu``."""
    from .._gpu.loader import kernel_dir

    return (kernel_dir() / "philox.cuh").read_text()


def _cpu_core():
    """The compiled CPU core, whose ``philox_words`` is :func:`words` on NumPy."""
    from .._cpu.image import _core

    return _core


def _module(values):
    for v in values:
        if type(v).__module__.startswith("cupy"):
            import cupy

            return cupy
    return np


def _u64(value):
    """A counter or key word as a uint64 array, or a uint64 scalar for a plain int."""
    if isinstance(value, (int, np.integer)):
        return np.uint64(value)
    return np.asarray(value).astype(np.uint64, copy=False)


def _philox_numpy(counter, key, rounds):
    u32 = np.uint64(32)
    mask = np.uint64(_MASK)
    m0, m1 = np.uint64(M0), np.uint64(M1)
    x0, x1, x2, x3 = (_u64(c) for c in counter)
    k0, k1 = (_u64(k) for k in key)
    for r in range(rounds):
        if r:
            k0 = (k0 + np.uint64(W0)) & mask
            k1 = (k1 + np.uint64(W1)) & mask
        p0 = x0 * m0  # both < 2**32: the product is exact in uint64
        p1 = x2 * m1
        y0 = p1 >> u32
        y0 ^= x1
        y0 ^= k0
        y2 = p0 >> u32
        y2 ^= x3
        y2 ^= k1
        p1 &= mask
        p0 &= mask
        x0, x1, x2, x3 = y0, p1, y2, p0
    shape = np.broadcast_shapes(*(np.shape(c) for c in counter), *(np.shape(k) for k in key))
    return tuple(np.asarray(x).astype(np.uint32) if np.shape(x) == shape
                 else np.broadcast_to(x, shape).astype(np.uint32) for x in (x0, x1, x2, x3))


_cuda_kernels = {}


def _cuda_kernel_for(count):
    """The elementwise Philox kernel writing the first ``count`` words (1..4).

    One kernel per count: a sweep that needs one word per cell writes 4
    bytes per cell, not 16 (the unused words stay in registers).
    """
    import cupy

    kernel = _cuda_kernels.get(count)
    if kernel is None:
        outs = ", ".join(f"uint32 r{j}" for j in range(count))
        body = ("unsigned int w[4];\nmeshccl_philox(c0, c1, c2, c3, k0, k1, rounds, w);\n"
                + "".join(f"r{j} = w[{j}];\n" for j in range(count)))
        kernel = cupy.ElementwiseKernel(
            "uint32 c0, uint32 c1, uint32 c2, uint32 c3, uint32 k0, uint32 k1, int32 rounds",
            outs, body, f"meshccl_philox4x32_{count}", preamble=_cuda_preamble())
        _cuda_kernels[count] = kernel
    return kernel


def _philox_cupy(counter, key, rounds, count=4):
    import cupy

    args = [v.astype(cupy.uint32, copy=False) if isinstance(v, cupy.ndarray) else np.uint32(v)
            for v in (*counter, *key)]
    out = _cuda_kernel_for(count)(*args, np.int32(rounds))
    return (out,) if count == 1 else tuple(out)


def philox4x32(counter, key, rounds=ROUNDS):
    """The Philox4x32 bijection: four 32-bit words from a counter and a key.

    Parameters
    ----------
    counter : sequence of 4 int or array
        The counter's words (values 0..2**32 - 1), broadcast together.
    key : sequence of 2 int or array
        The key's words.
    rounds : int, optional
        Rounds (default 10, Philox4x32-10; 7 is the shortest the authors
        call crush-resistant).

    Returns
    -------
    tuple of 4 arrays
        uint32, of the broadcast shape; CuPy arrays when any input is one
        (the same words, computed by an elementwise kernel).

    Examples
    --------
    >>> from meshccl.sim.random import philox4x32
    >>> [hex(int(w)) for w in philox4x32((0, 0, 0, 0), (0, 0))]
    ['0x6627e8d5', '0xe169c58d', '0xbc57ac4c', '0x9b00dbd8']
    """
    counter, key = tuple(counter), tuple(key)
    if len(counter) != 4 or len(key) != 2:
        raise ValueError(f"Philox4x32 takes 4 counter words and 2 key words, got "
                         f"{len(counter)} and {len(key)}")
    if _module(counter + key) is np:
        return _philox_numpy(counter, key, int(rounds))
    return _philox_cupy(counter, key, int(rounds))


def words(seed, tag, step, index, count=4):
    """The Philox words of cells (or labels) ``index`` at ``step``.

    Parameters
    ----------
    seed : int
        0..2**64 - 1: the key.
    tag : int
        0..255: what the draw is for (``TAG_*``).
    step : int
        0..2**64 - 1.
    index : array of non-negative integers
        Cell indices or labels (below 2**56), NumPy or CuPy.
    count : int, optional
        How many of the four words to return (1..4).

    Returns
    -------
    list of arrays
        ``count`` uint32 arrays of ``index``'s shape and kind.

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.sim.random import words
    >>> w = words(7, 2, 0, np.arange(3))
    >>> len(w), w[0].dtype
    (4, dtype('uint32'))
    """
    xp = _module([index])
    count = int(count)
    if not 1 <= count <= 4:
        raise ValueError(f"count must be 1..4, got {count}")
    tag, step, seed = int(tag), int(step), int(seed)
    if not 0 <= tag <= 255:
        raise ValueError(f"tag must be 0..255, got {tag}")
    for name, v in (("seed", seed), ("step", step)):
        if not 0 <= v < 2**64:
            raise ValueError(f"{name} must be 0..2**64 - 1, got {v}")
    if xp is np:
        idx = np.asarray(index)
        if idx.dtype.kind not in "iu" or not idx.dtype.isnative:
            idx = idx.astype(np.uint64)
        out = np.empty((count, idx.size), dtype=np.uint32)
        core = _cpu_core()
        core.philox_words(np.ascontiguousarray(idx).reshape(-1), tag, step, seed, out,
                          core.isa() != "baseline")
        return [w.reshape(idx.shape) for w in out]
    index = xp.asarray(index)
    step_seed = (step & _MASK, step >> 32), (seed & _MASK, seed >> 32)
    if index.dtype in (np.uint32, np.int32, np.uint16, np.int16, np.uint8, np.int8):
        # indices below 2**32 (non-negative, as documented): the counter's second word is
        # the tag alone, so no 64-bit temporaries (the same words as the general path)
        idx = index.view(np.uint32) if index.dtype == np.int32 else index
        counter = (idx, tag, *step_seed[0])
    else:
        idx = index.astype(np.uint64, copy=False)
        counter = (idx & np.uint64(_MASK), ((idx >> np.uint64(32)) << np.uint64(8))
                   | np.uint64(tag), *step_seed[0])
    return list(_philox_cupy(counter, step_seed[1], ROUNDS, count))


def uniform(w0, w1):
    """Doubles in [0, 1) from two words: 53 random bits, exactly.

    ``((w0 >> 5) * 2**26 + (w1 >> 6)) / 2**53``: integer arithmetic and one
    multiplication by a power of two, so NumPy and CuPy agree bit for bit.

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.sim.random import uniform
    >>> float(uniform(np.uint32(0xFFFFFFFF), np.uint32(0xFFFFFFFF))) < 1.0
    True
    """
    hi = (w0 >> np.uint32(5)).astype(np.float64)
    lo = (w1 >> np.uint32(6)).astype(np.float64)
    return (hi * 67108864.0 + lo) * (1.0 / 9007199254740992.0)
