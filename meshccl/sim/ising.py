"""The Ising model on periodic square and simple-cubic lattices.

``E = -J sum_<ij> s_i s_j - h sum_i s_i`` with spins s = +-1 (int8), one
bond per nearest-neighbour pair of the torus.  Three dynamics:

- ``'metropolis'``: single-spin flips on a checkerboard.  The cells of one
  colour (even or odd coordinate sum) have neighbours only of the other
  colour, so a colour is updated all at once from the other's fixed
  spins: colour 0, then colour 1, is one sweep.  The acceptance
  ``min(1, exp(-dE / T))`` is read from a table of the 2 (2d + 1)
  possible (spin, neighbour sum) pairs, as 32-bit integer thresholds
  ``floor(p 2**32)``, and compared with a 32-bit uniform of which only
  the high 16 bits are drawn unless they equal the threshold's (see
  :meth:`Ising._metropolis_uniforms`): the acceptance is exactly
  ``floor(p 2**32) / 2**32`` at an eighth of a Philox call per cell.
- ``'kawasaki'``: spin exchange between unequal nearest neighbours, which
  conserves the magnetisation exactly.  Pairs along axis d starting at
  cells with ``x_d = p (mod 4)`` and ``x_j = q_j (mod 2)`` for the other
  axes are disjoint and none of their cells neighbours a cell of another
  pair, so each such sub-lattice is updated at once: 4 * 2**(d-1)
  sub-lattices per axis, and every bond of the lattice is offered once per
  sweep.  An exchange is accepted with the heat-bath probability
  ``1 / (1 + exp(dE / T))``: with Metropolis's ``min(1, exp(-dE / T))``
  every dE = 0 move would be taken, and in a fixed order of sub-lattices
  an isolated minority spin would walk a fixed, periodic path.
- ``'swendsen-wang'``: bonds between equal neighbours open with
  ``p = 1 - exp(-2 J / T)`` (one Philox word per bond, four bonds a
  call), clusters come from
  ``meshccl.label(spins, connectivity=1, periodic=True, bonds=bonds)``
  (every cell is labelled: spins are never 0), and each cluster is set to
  +1 with probability ``1 / (1 + exp(-2 h n / T))`` (n its cells; 1/2 at
  h = 0, the same as flipping it with probability 1/2), from one Philox
  draw per cluster.  At h = 0 the draw's counter is the cluster's
  first-cell label (its first cell's flat index + 1,
  ``numbering='first-cell'``), which needs no numbering 1..N: on CuPy
  2-D lattices the labelling chain writes the new spins in its last pass
  and no labels at all (:mod:`meshccl._gpu.cluster_flip`).  With a field
  the counter is the label 1..N, whose cluster sizes the probability
  needs.  ``label='clusters'`` hooks get the last step's clusters
  numbered 1..N, labelled when asked for from the spins the step started
  from and its bonds, drawn again.

Random numbers come from :mod:`meshccl.sim.random`, indexed by (seed, step,
cell or label); thresholds are integers computed once on the host.  So a
NumPy and a CuPy run of the same seed give the same spins, bit for bit,
and a run resumed from a checkpoint continues exactly.  On CuPy the
Metropolis sweep, the bonds and the flip (h = 0; 3-D, or lattices of 2**31
cells or more) are the kernels of ``meshccl/_kernels/ising.cu``, which
draw the same words.  The Metropolis
kernel keeps the spins packed, 4 bits a spin, one array per colour (the
layout of :func:`_packed_geometry`); ``state`` unpacks them when read.  The
labelling hooks' phases (``'up'``, ``'down'``) are labelled from the packed
words in 2-D (:class:`meshccl._validate.PackedSpins`: the label chain reads
them, no image is written); in 3-D the last launch of the sweep before a
labelled step writes the phase's bool image as it writes its words
(``meshccl_ising_multispin``'s image argument), with no pass of its own.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from .. import _tuning
from .._validate import PackedSpins
from ..labelling import label as _label
from ..neighbourhood import half_offsets
from . import random as _random
from .hooks import Clusters, Simulation, _array_module, _real, _xp_of, register

__all__ = ["Ising", "ALGORITHMS"]

ALGORITHMS = ("metropolis", "kawasaki", "swendsen-wang")
_ALIASES = {"sw": "swendsen-wang", "swendsen_wang": "swendsen-wang"}
_ONE = 2**32  # thresholds: accept when a 32-bit word is below threshold


def _threshold(p):
    """floor(p 2**32), clipped to [0, 2**32] (2**32: always; 0: never)."""
    if not p > 0:
        return 0
    if p >= 1:
        return _ONE
    return min(_ONE, int(math.floor(p * _ONE)))


def _wraps(xp, shape):
    """Per axis, the index vectors of the next and the previous cell on the torus."""
    return [(xp.asarray((np.arange(n) + 1) % n), xp.asarray((np.arange(n) - 1) % n))
            for n in shape]


def _shift(a, wraps, axis, step):
    """``a`` at x + step e_axis (step +1 or -1), periodic: ``np.roll(a, -step, axis)``.

    ``take`` with a small index vector: an order of magnitude faster than
    ``roll`` on small NumPy arrays, and the same on CuPy.
    """
    return a.take(wraps[axis][0 if step > 0 else 1], axis=axis)


# Threads per block of the kernels in meshccl/_kernels/ising.cu (meshccl_ising_flip's
# shared memory is sized for 8 warps).
_BLOCK = 256
# The most blocks along a grid's y or z.
_GRID_Y = 65535


def _philox_words(step, seed, tag):
    """The scalar Philox words of a kernel launch: tag, step (2 words), seed (2 words)."""
    tag, k0, k1 = _key_words(int(seed), tag)
    step = int(step)
    return tag, np.uint32(step & 0xFFFFFFFF), np.uint32(step >> 32), k0, k1


@functools.lru_cache(maxsize=64)
def _key_words(seed, tag):
    """The tag and the seed's two words as uint32 scalars (made once: a Metropolis sweep's
    host time counts at 4096**2)."""
    return np.uint32(tag), np.uint32(seed & 0xFFFFFFFF), np.uint32(seed >> 32)


def _grid(threads):
    return (max(1, -(-threads // _BLOCK)),)


def _aligned(a, alignment):
    """``a`` C-contiguous from an address that is a multiple of ``alignment`` (the
    kernels' vector loads): ``a`` itself, or a copy for a view."""
    if a.flags.c_contiguous and a.data.ptr % alignment == 0:
        return a
    return a.copy(order="C")


# The packed Metropolis spins (meshccl/_kernels/ising.cu): cells of one colour per 64-bit
# word, 4 bits each.
_WORD_CELLS = 16
# meshccl_ising_unpack's outputs: int8 spins, the bool images s > 0 and s < 0
_UNPACK = {"spins": np.int32(0), "up": np.int32(1), "down": np.int32(2)}


@functools.lru_cache(maxsize=None)
def _packed_geometry(shape):
    """``(nx, ny, nz, rows, words)`` of the packed Metropolis spins of a lattice.

    Colour c of row r = (z, y) (``rows = nz ny``; 2-D: nz = 1) holds the
    cells ``x = 2 i + (c ^ ((y + z) & 1))``, i < nx / 2, cell i in nibble
    i % 16 of word i // 16 of ``words = ceil(nx / 32)``: the arrays are
    (2, rows, words) uint64, and word G of it (flat) draws the 16-bit
    uniforms 16 G .. 16 G + 15 of a sweep (:meth:`Ising._metropolis_uniforms`).
    """
    nz, ny, nx = (1,) + shape if len(shape) == 2 else shape
    return nx, ny, nz, nz * ny, -(-(nx // 2) // _WORD_CELLS)


@functools.lru_cache(maxsize=None)
def _packable(shape):
    """True when the kernels' uint32 counter indices (up to 16 per packed word)
    cover the lattice (fewer than about 2**32 cells) and the Metropolis launch's
    grid reaches every word (:func:`_multispin_launch`)."""
    _, _, _, rows, words = _packed_geometry(shape)
    return 2 * _WORD_CELLS * rows * words <= 2**32 and _multispin_block(words) is not None


def _multispin_block(words, per_thread=1):
    """meshccl_ising_multispin's block (threads across a row, rows) for rows of
    ``words`` packed words, ``per_thread`` words a thread: 32 threads of 8 rows, or as
    many as a row needs (a power of two) and more rows, or 256 threads of one row for
    rows too long for 65,535 blocks of 32; None when no block covers the row within
    the grid's limit."""
    threads = -(-words // per_thread)
    across = min(32, 1 << max(0, threads - 1).bit_length())
    if -(-threads // across) > _GRID_Y:
        across = _BLOCK
    if -(-threads // across) > _GRID_Y:
        return None
    return across, _BLOCK // across


def _pack(s):
    """CuPy int8 spins -> the (2, rows, words) uint64 packed colours (meshccl_ising_pack)."""
    import cupy

    from .._gpu.loader import kernels

    (kernel,) = kernels("ising.cu", "meshccl_ising_pack")
    nx, ny, _, rows, words = _packed_geometry(tuple(s.shape))
    packed = cupy.empty((2, rows, words), dtype=np.uint64)
    kernel(_grid(packed.size), (_BLOCK,), (_aligned(s, 1), packed, np.int32(nx), np.int32(ny),
                                           np.uint32(rows), np.uint32(words)))
    return packed


def _unpack(packed, shape, what="spins"):
    """The lattice from the packed colours (meshccl_ising_unpack): int8 spins
    (``what='spins'``) or the bool image of s > 0 (``'up'``) or s < 0 (``'down'``)."""
    import cupy

    from .._gpu.loader import kernels

    (kernel,) = kernels("ising.cu", "meshccl_ising_unpack")
    nx, ny, _, rows, words = _packed_geometry(shape)
    out = cupy.empty(shape, dtype=np.int8 if what == "spins" else bool)
    kernel(_grid(rows * words), (_BLOCK,), (packed, out, np.int32(nx), np.int32(ny),
                                           np.uint32(rows), np.uint32(words), _UNPACK[what]))
    return out


def _metropolis_sweep_packed(packed, shape, table, seed, step, image=None, phase="up"):
    """One checkerboard Metropolis sweep of the packed colours ``packed``, in place:
    ``meshccl_ising_multispin`` for colour 0, then colour 1.  The uniforms and
    thresholds of :meth:`Ising._metropolis_uniforms`: the same spins as the NumPy
    sweep.  ``image``: a C-contiguous bool array of the lattice's shape that the
    colour-1 launch fills with the new spins' ``phase`` (``'up'``: s > 0, ``'down'``:
    s < 0)."""
    _MetropolisSweeps(packed, shape, table, seed)(step, image, phase)
    return packed


class _MetropolisSweeps:
    """The launches of packed Metropolis sweeps of one lattice, table and seed:
    ``sweeps(step, image=None, phase='up')`` queues sweep ``step``; with
    ``image`` (C-contiguous bool, the lattice's shape) its last launches also
    write the new spins' phase into it, as ``_unpack(packed, shape, phase)``
    would (a byte a cell written, no pass over the words of its own).

    On CuPy the arguments are packed once into 8-byte slots and each launch is
    one driver call that rewrites the step's two words first
    (:func:`.._gpu.launch.slot_launcher`; a CuPy kernel call converts every
    argument each time, and at 4096**2 that host time is a sweep's GPU time);
    from Hopper on every launch may start while the kernel before it drains
    (the kernel waits for it in ``grid_entry()`` before reading a spin; after a
    kernel that does not say it may, the launch waits for that kernel's end).
    Arrays without device addresses (the kernel tests' NumPy stand-in) go
    through the kernel's own call with the same arguments.  ``planes``: the
    most planes of a launch (default the grid's limit, 65,535).
    """

    def __init__(self, packed, shape, table, seed, planes=None):
        from .._gpu.loader import kernels

        per_thread = int(_tuning.METROPOLIS_WORDS)
        if per_thread not in (1, 2):
            raise ValueError(f"METROPOLIS_WORDS must be 1 or 2, got {per_thread}")
        name, launches, sizes = _multispin_launch(shape, planes or _GRID_Y, per_thread)
        (kernel,) = kernels("ising.cu", name)
        tag, k0, k1 = _key_words(int(seed), _random.TAG_METROPOLIS)
        self.key = (packed, table, int(seed), per_thread)
        self.calls = [(kernel, grid, block,
                       [packed, table, *sizes[:3], z0, sizes[3], colour, tag, _TIE_TAG,
                        np.uint32(0), np.uint32(0), k0, k1, np.uintp(0), np.uint32(0)])
                      for colour in _COLOUR for grid, block, z0 in launches]
        self.last = len(launches)  # the colour-1 launches: the calls from len - last on
        self.sends = None
        if hasattr(packed, "data") and hasattr(packed.data, "ptr"):
            from .._gpu.launch import pack_arguments, slot_launcher

            self.sends = []
            for kernel, grid, block, args in self.calls:
                slots = pack_arguments(args)[0]
                self.sends.append((slots, slot_launcher(kernel, grid, block, slots,
                                                        follows=True)))

    def __call__(self, step, image=None, phase="up"):
        lo, hi = step & 0xFFFFFFFF, (step >> 32) & 0xFFFFFFFF
        flip = _IMAGE_FLIP[phase]
        first_image = len(self.calls) - self.last
        if self.sends is None:
            for j, (kernel, grid, block, args) in enumerate(self.calls):
                args[_STEP_ARG], args[_STEP_ARG + 1] = np.uint32(lo), np.uint32(hi)
                with_image = image is not None and j >= first_image
                args[_IMAGE_ARG] = image if with_image else np.uintp(0)
                args[_IMAGE_ARG + 1] = np.uint32(flip if with_image else 0)
                kernel(grid, block, tuple(args))
            return
        import cupy

        stream = cupy.cuda.get_current_stream().ptr
        ptr = 0 if image is None else image.data.ptr
        for j, (slots, send) in enumerate(self.sends):
            slots[_STEP_ARG], slots[_STEP_ARG + 1] = lo, hi
            if j >= first_image:
                slots[_IMAGE_ARG], slots[_IMAGE_ARG + 1] = ptr, flip
            send(stream)


# the position of the step's low word and of the image among meshccl_ising_multispin's
# arguments; the image's flip for each phase
_STEP_ARG = 10
_IMAGE_ARG = 14
_IMAGE_FLIP = {"up": 0, "down": 1}


@functools.lru_cache(maxsize=None)
def _multispin_launch(shape, planes=_GRID_Y, per_thread=1):
    """meshccl_ising_multispin's name, launches (grid, block, first plane) and size
    arguments (half, ny, nz, words) for a lattice shape (once per shape: at 4096**2 a
    sweep's host time is as long as its GPU time).  A thread per ``per_thread`` packed
    words of a row of the active colour: the grid's x over the rows of a plane, y over
    a row's words, z over the planes, in launches of at most ``planes`` planes."""
    nx, ny, nz, _, words = _packed_geometry(shape)
    across, down = _multispin_block(words, per_thread)  # (fewer threads fit as well)
    launches = tuple(((-(-ny // down), -(-words // (across * per_thread)),
                       min(planes, nz - z0)), (across, down), np.int32(z0))
                     for z0 in range(0, nz, planes))
    return (f"meshccl_ising_multispin<{len(shape)}, {per_thread}>", launches,
            (np.int32(nx // 2), np.int32(ny), np.int32(nz), np.uint32(words)))


_TIE_TAG = np.uint32(_random.TAG_METROPOLIS_TIE)
_COLOUR = (np.int32(0), np.int32(1))


@functools.lru_cache(maxsize=None)
def _popcount_sum():
    """A CuPy reduction: the number of set bits of a uint64 array (the +1 spins of
    the packed colours, whose padding nibbles are 0)."""
    import cupy

    return cupy.ReductionKernel("uint64 w", "int64 n", "__popcll(w)", "a + b", "n = a", "0",
                                "meshccl_popcount_sum")


def _sw_bonds_fused(bonds, threshold, seed, step):
    """Swendsen-Wang bonds of CuPy cells (fewer than 2**32) written into
    ``bonds`` ((nd,) + shape bool, C order) by ``meshccl_ising_bonds``: the
    words of :meth:`Ising._sw_bonds`."""
    from .._gpu.loader import kernels

    nd = bonds.shape[0]
    (kernel,) = kernels("ising.cu", f"meshccl_ising_bonds<{nd}>")
    n = bonds[0].size
    quads = -(-n // 4)
    kernel(_grid(quads), (_BLOCK,), (bonds, np.uint64(n), np.uint64(quads), np.uint64(threshold),
                                     *_philox_words(step, seed, _random.TAG_BOND)))
    return bonds


def _sw_flip_fused(labels, seed, step):
    """Every cell's new spin (h = 0) from its int32 / uint32 label by
    ``meshccl_ising_flip``: +1 where word 0 of the label's Philox call (as
    :func:`.random.words` draws labels) is below 2**31, else -1."""
    import cupy

    from .._gpu.loader import c_type, kernels

    (kernel,) = kernels("ising.cu", f"meshccl_ising_flip<{c_type(labels.dtype)}>")
    labels = _aligned(labels, 16)
    out = cupy.empty(labels.shape, dtype=np.int8)
    n = labels.size
    kernel(_grid(-(-n // 8)), (_BLOCK,), (labels, out, np.uint64(n),
                                         *_philox_words(step, seed, _random.TAG_CLUSTER)))
    return out


def _neighbour_sum(s, wraps):
    total = None
    for axis in range(s.ndim):
        part = _shift(s, wraps, axis, 1) + _shift(s, wraps, axis, -1)
        total = part if total is None else total + part
    return total


@register
class Ising(Simulation):
    """The Ising model on a periodic 2-D or 3-D lattice.

    Parameters
    ----------
    shape : tuple of int, optional
        ``(L0, L1)`` or ``(L0, L1, L2)``; each side >= 2, even for
        ``'metropolis'`` (the checkerboard must close), a multiple of 4 for
        ``'kawasaki'``.  Not needed with ``spins``.
    temperature : float
        T > 0, in units of J / k_B (2-D T_c = 2.269185...,
        ``meshccl.sim.exact.CRITICAL_TEMPERATURE``).
    field : float, optional
        h (default 0).  Kawasaki dynamics conserve the magnetisation, so
        the field changes no move there (only the reported energy).
    coupling : float, optional
        J (default 1; negative for an antiferromagnet, not with
        ``'swendsen-wang'``).
    algorithm : {'metropolis', 'kawasaki', 'swendsen-wang'}, optional
        The dynamics (``'sw'`` for short); see the module notes.
    seed : int, optional
        0..2**64 - 1: with the step it fixes every random number.
    start : {'hot', 'cold'}, optional
        Initial spins: independent +-1 with probability 1/2 (default), or
        all +1.
    minority : float, optional
        Start instead with exactly ``round(minority * N)`` spins -1 at
        random cells, the rest +1: the fixed volume fraction of the minority
        phase that Kawasaki dynamics keep.
    spins : array, optional
        Initial spins: an integer NumPy or CuPy array of +-1 (copied to
        int8).  Gives the shape and, without ``xp``, the device.
    xp : module, optional
        ``numpy`` (default) or ``cupy``.

    Attributes
    ----------
    state : array
        The spins, int8 +-1 (read it, do not write it: on CuPy the Metropolis
        dynamics keep the spins packed, 4 bits a spin, and ``state`` is
        unpacked from them when first read after a sweep).
    step : int
        Sweeps done.

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.sim import Ising
    >>> sim = Ising((32, 32), temperature=2.0, algorithm="swendsen-wang", seed=1)
    >>> out = sim.run(200, record=["magnetisation"])
    >>> round(float(np.abs(out["magnetisation"][100:]).mean()), 2)
    0.91
    >>> k = Ising((16, 16), temperature=1.5, algorithm="kawasaki", minority=0.25, seed=2)
    >>> _ = k.run(10)
    >>> int((k.state == -1).sum())             # 64 = 0.25 * 256, conserved
    64
    """

    kind = "ising"
    PHASES = ("up", "down", "domains", "clusters")
    OBSERVABLES = ("energy", "magnetisation")
    DEFAULT_PHASE = "up"

    def __init__(self, shape=None, temperature=None, *, field=0.0, coupling=1.0,
                 algorithm="metropolis", seed=0, start="hot", minority=None, spins=None,
                 xp=None):
        xp = _array_module(xp, spins)
        super().__init__(xp, seed)
        if temperature is None:
            raise TypeError("Ising needs a temperature (T > 0, in units of J / k_B)")
        self.temperature = _real(temperature, "temperature")
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0 (units of J / k_B), got "
                             f"{self.temperature!r}")
        self.field = _real(field, "field")
        self.coupling = _real(coupling, "coupling")
        if not isinstance(algorithm, str) or _ALIASES.get(algorithm, algorithm) not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
        self.algorithm = _ALIASES.get(algorithm, algorithm)
        if self.algorithm == "swendsen-wang" and self.coupling < 0:
            raise ValueError("swendsen-wang needs a ferromagnetic coupling (J >= 0), got "
                             f"{self.coupling!r}")

        if spins is not None:
            if shape is not None and tuple(shape) != tuple(spins.shape):
                raise ValueError(f"shape {tuple(shape)} and spins of shape "
                                 f"{tuple(spins.shape)} disagree")
            shape = tuple(spins.shape)
        if shape is None:
            raise TypeError("Ising needs a shape or initial spins")
        self._shape = self._check_shape(shape, self.algorithm)
        # flat cell indices, the Philox counters' index: uint32 where they fit (no 64-bit
        # temporaries on the GPU; the same words as uint64)
        n_cells = math.prod(self._shape)
        self._cells = xp.arange(n_cells, dtype=np.uint32 if n_cells <= 2**32 else np.uint64
                                ).reshape(self._shape)
        self._wraps = _wraps(xp, self._shape)

        if spins is not None:
            if start != "hot" or minority is not None:
                raise ValueError("give either spins or start/minority, not both")
            self._s = self._check_spins(spins, xp)
        else:
            self._s = self._initial(start, minority)
        self._tables()
        # Swendsen-Wang: the last step's clusters (labelled when asked for), the spins and
        # step they came from, and the GPU chain of the step (made at the first)
        self._last_clusters = self._sw_drawn = self._flip_chain = None
        # on CuPy Metropolis, the packed colours (from the first sweep on; then _s is an
        # unpacked copy, None until read)
        self._packed = None
        self._sweeps = None   # their launches (_MetropolisSweeps), made at the first sweep
        # 3-D packed sweeps: the phase whose image the next sweep writes (the run loop
        # says when a labelled step comes), and (phase, step, image) written by the last
        self._image_due = self._image = self._image_buffer = None
        # lazily: the Philox calls of a Metropolis sweep, each cell's place in its
        # stream of 16-bit uniforms and its tie counter; the calls of the bond words
        self._metropolis_calls = self._stream_pos = self._tie_pos = self._bond_calls = None

    # -- validation and set-up ---------------------------------------------------
    @staticmethod
    def _check_shape(shape, algorithm):
        try:
            shape = tuple(int(n) for n in shape)
        except TypeError:
            raise TypeError(f"shape must be a tuple of 2 or 3 ints, got {shape!r}") from None
        if len(shape) not in (2, 3):
            raise ValueError(f"the Ising lattice is 2-D or 3-D, got shape {shape}")
        if min(shape) < 2:
            raise ValueError(f"every side of the lattice must be >= 2, got shape {shape}")
        if algorithm == "metropolis" and any(n % 2 for n in shape):
            raise ValueError(f"metropolis updates a checkerboard, which needs even sides on a "
                             f"periodic lattice; got shape {shape}")
        if algorithm == "kawasaki" and any(n % 4 for n in shape):
            raise ValueError(f"kawasaki updates pairs on sub-lattices of period 4, which needs "
                             f"sides that are multiples of 4; got shape {shape}")
        return shape

    def _check_spins(self, spins, xp):
        if _xp_of(spins) is not xp:
            raise TypeError(f"spins is a {type(spins).__module__} array but xp is "
                            f"{xp.__name__}")
        if spins.dtype.kind not in "iu":
            hint = " (use np.where(b, 1, -1))" if spins.dtype.kind == "b" else ""
            raise TypeError(f"spins must be an integer array of +1 and -1, got dtype "
                            f"{spins.dtype}{hint}")
        ok = bool(((spins == 1) | (spins == -1)).all()) if spins.dtype.kind == "i" else False
        if not ok:
            raise ValueError("spins must hold only +1 and -1")
        return spins.astype(np.int8, order="C", copy=True)

    def _initial(self, start, minority):
        xp = self.xp
        if minority is not None:
            if start != "hot":
                raise ValueError("give either start or minority, not both")
            f = _real(minority, "minority")
            if not 0 <= f <= 1:
                raise ValueError(f"minority must be a fraction in [0, 1], got {minority!r}")
            n = self._cells.size
            k = int(round(f * n))
            w = _random.words(self.seed, _random.TAG_INIT, 0, self._cells.ravel(), 1)[0]
            # unique keys (draw, cell): the k smallest are the minority, on any backend
            keys = (w.astype(np.uint64) << np.uint64(32)) | self._cells.ravel()
            order = xp.argsort(keys)
            s = xp.ones(n, dtype=np.int8)
            s[order[:k]] = -1
            return s.reshape(self._shape)
        if start == "hot":
            w = _random.words(self.seed, _random.TAG_INIT, 0, self._cells, 1)[0]
            return xp.where(w < np.uint32(2**31), np.int8(1), np.int8(-1)).astype(np.int8)
        if start == "cold":
            return xp.ones(self._shape, dtype=np.int8)
        raise ValueError(f"start must be 'hot' or 'cold', got {start!r}")

    def _tables(self):
        """Integer acceptance thresholds, computed on the host (identical on every backend)."""
        xp, t, j, h = self.xp, self.temperature, self.coupling, self.field
        z = 2 * len(self._shape)
        # metropolis: index (s > 0) * (z + 1) + (nn + z) / 2, dE = 2 s (J nn + h)
        table = []
        for s in (-1, 1):
            for nn in range(-z, z + 1, 2):
                de = 2.0 * s * (j * nn + h)
                table.append(_ONE if de <= 0 else _threshold(math.exp(-de / t)))
        self._metropolis = xp.asarray(np.array(table, dtype=np.uint64))
        # kawasaki: index (m + 2(z - 1)) / 2, m = s_a (A - B), dE = 2 J m; heat-bath
        # acceptance 1 / (1 + exp(dE / T)) (docs/decisions.md: "kawasaki by heat bath")
        table = []
        for m in range(-2 * (z - 1), 2 * (z - 1) + 1, 2):
            x = 2.0 * j * m / t
            table.append(_ONE if x < -700 else 0 if x > 700 else
                         _threshold(1.0 / (1.0 + math.exp(x))))
        self._kawasaki = xp.asarray(np.array(table, dtype=np.uint64))
        # swendsen-wang: bonds, and P(cluster -> +1) by cluster size n
        self._bond = np.uint64(_threshold(-math.expm1(-2.0 * j / t)) if j > 0 else 0)
        if h == 0:
            self._up = None
        else:
            # beyond n_sat the threshold is 0 or 2**32 in float64 already
            n_sat = min(self._cells.size, int(math.ceil(40.0 * t / (2 * abs(h)))) + 1)
            n = np.arange(n_sat + 1, dtype=np.float64)
            p = 1.0 / (1.0 + np.exp(-2.0 * h * n / t))
            self._up = xp.asarray(np.array([_threshold(v) for v in p], dtype=np.uint64))

    # -- state and observables ---------------------------------------------------
    @property
    def state(self):
        if self._s is None:
            self._s = _unpack(self._packed, self._shape)
        return self._s

    @property
    def shape(self):
        return self._shape

    def energy(self):
        """Energy per spin, ``(-J sum_<ij> s_i s_j - h sum s_i) / N``, as a float."""
        return float(self._observe("energy"))

    def magnetisation(self):
        """Mean spin, as a float."""
        return float(self._observe("magnetisation"))

    def _observe(self, name):
        n = math.prod(self._shape)
        if name == "magnetisation" and self._s is None:
            return (2 * _popcount_sum()(self._packed) - n) / n
        s = self.state
        if name == "magnetisation":
            return s.sum(dtype=np.int64) / n
        bonds = sum((s * _shift(s, self._wraps, axis, 1)).sum(dtype=np.int64)
                    for axis in range(s.ndim))
        return (-self.coupling * bonds - self.field * s.sum(dtype=np.int64)) / n

    def _check_phase(self, phase):
        if phase == "clusters" and self.algorithm != "swendsen-wang":
            raise ValueError(f"label='clusters' labels Swendsen-Wang clusters; this simulation "
                             f"runs {self.algorithm!r}")

    def _before_label(self, phase):
        # 3-D packed Metropolis: the next sweep writes the phase's image as it goes
        if phase in ("up", "down") and len(self._shape) == 3 and self.algorithm == "metropolis":
            self._image_due = phase

    def _phase_image(self, phase):
        if phase in ("up", "down") and self._s is None:
            if len(self._shape) == 2:   # the packed words themselves: no image written
                return PackedSpins(self._packed, self._shape, phase)
            if self._image is not None and self._image[:2] == (phase, self.step):
                return self._image[2]   # written by the sweep that made this step
            return _unpack(self._packed, self._shape, phase)   # no int8 spins on the way
        if phase == "up":
            return self.state > 0
        if phase == "down":
            return self.state < 0
        if phase == "domains":
            return self.state
        if self._sw_clusters() is None:
            raise ValueError("label='clusters' labels the Swendsen-Wang clusters of the last "
                             f"step: there is no Swendsen-Wang step since the start or the "
                             f"load (step {self.step})")
        return self._last_clusters

    # -- dynamics ----------------------------------------------------------------
    def _advance(self):
        self._image = None
        if self.algorithm == "metropolis":
            s = self._metropolis_sweep()
        elif self.algorithm == "kawasaki":
            s = self._kawasaki_sweep()
        else:
            s = self._swendsen_wang_step()
        self._s = s
        self._image_due = None
        self.step += 1

    def _colours(self):
        if not hasattr(self, "_colour"):
            xp = self.xp
            parity = sum(xp.arange(n).reshape([n if a == d else 1 for a in range(len(self._shape))])
                         for d, n in enumerate(self._shape)) % 2
            self._colour = [xp.broadcast_to(parity == c, self._shape) for c in (0, 1)]
        return self._colour

    def _metropolis_sweep(self):
        """One sweep; on CuPy the packed kernel (returns None: the spins are in
        ``_packed``), else array expressions drawing the same uniforms."""
        xp, s = self.xp, self._s
        if xp is not np and _packable(self._shape):
            if self._packed is None:
                self._packed = _pack(s)
            sweeps = self._sweeps
            if sweeps is None or sweeps.key[0] is not self._packed \
                    or sweeps.key[1] is not self._metropolis or sweeps.key[2] != self.seed \
                    or sweeps.key[3] != _tuning.METROPOLIS_WORDS:
                sweeps = self._sweeps = _MetropolisSweeps(self._packed, self._shape,
                                                          self._metropolis, self.seed)
            phase, self._image_due = self._image_due, None
            if phase is None:
                sweeps(self.step)
                return None
            # (one buffer, kept: the labelling reads it and keeps only its labels)
            image = self._image_buffer
            if image is None or image.shape != self._shape:
                image = self._image_buffer = xp.empty(self._shape, dtype=bool)
            sweeps(self.step, image, phase)
            self._image = (phase, self.step + 1, image)
            return None
        z = 2 * s.ndim
        u = self._metropolis_uniforms()
        high = (self._metropolis >> np.uint64(16)).astype(np.uint32)   # 2**16: always
        for colour in self._colours():
            nn = _neighbour_sum(s, self._wraps)
            index = (s > 0).astype(np.int8) * np.int8(z + 1) + (nn + np.int8(z)) // np.int8(2)
            cut = high[index]
            accept = u < cut
            tie = colour & (u == cut)
            if bool(tie.any()):
                extra = _random.words(self.seed, _random.TAG_METROPOLIS_TIE, self.step,
                                      self._tie_pos[tie], 1)[0]
                low = self._metropolis[index[tie]] & np.uint64(0xFFFF)
                accept[tie] = (extra & np.uint32(0xFFFF)) < low
            s = xp.where(colour & accept, -s, s)
        return s

    def _metropolis_uniforms(self):
        """Each cell's 16-bit uniform of this sweep (uint16 array of the lattice's shape).

        The sweep's stream of 16-bit uniforms: Philox calls 0, 1, 2, ... (tag
        TAG_METROPOLIS), each call's words 0..3, each word's low then high half.
        Packed word G (:func:`_packed_geometry`) takes calls 2G and 2G + 1, the
        stream's elements 16 G .. 16 G + 15; its nibble t, cell i = 16 k + t of
        colour c in row r (``G = c rows words + r words + k``), takes element
        ``16 G + 2 W + (t >> 2) % 2``, half (t >> 2) % 2 of word ``W = t % 4 + 4
        (t >> 3)`` of the word's 8 (so nibbles t and t + 4, 16 bits apart in the
        packed word, share a word).  A cell accepts when its uniform u is below
        ``threshold >> 16``; when u equals it (1 in 65,536), word 0 of Philox
        call ``16 G + t`` with tag TAG_METROPOLIS_TIE gives 16 more bits,
        compared with the threshold's low 16: u and these bits are one 32-bit
        uniform against the 32-bit threshold, so the acceptance keeps the
        thresholds' resolution, 2**-32.
        """
        xp, shape = self.xp, self._shape
        if self._stream_pos is None:
            nx, ny, _, rows, words = _packed_geometry(shape)
            r = np.arange(rows, dtype=np.int64).reshape(rows, 1)
            x = np.arange(nx, dtype=np.int64).reshape(1, nx)
            colour = (x + r % ny + r // ny) & 1
            i = x >> 1
            packed_word = colour * (rows * words) + r * words + (i >> 4)
            t = i & 15
            half = 2 * ((t & 3) + 4 * (t >> 3)) + ((t >> 2) & 1)
            pos = (_WORD_CELLS * packed_word + half).reshape(shape)
            tie = (_WORD_CELLS * packed_word + t).reshape(shape)
            calls = 2 * 2 * rows * words
            dt = np.uint32 if 8 * calls <= 2**32 else np.uint64
            self._stream_pos = xp.asarray(pos.astype(dt))
            self._tie_pos = xp.asarray(tie.astype(dt))
            self._metropolis_calls = xp.arange(calls, dtype=dt)
        w = _random.words(self.seed, _random.TAG_METROPOLIS, self.step, self._metropolis_calls,
                          4)
        # little-endian words seen as 16-bit halves: low half first, on any host
        halves = xp.stack(w, axis=1).astype("<u4", copy=False).view("<u2")
        return halves.reshape(-1)[self._stream_pos]

    def _sublattices(self):
        """(axis, mask) for every sub-lattice of non-touching pairs."""
        if not hasattr(self, "_subs"):
            xp, shape = self.xp, self._shape
            nd = len(shape)
            coords = [xp.arange(n).reshape([n if a == d else 1 for a in range(nd)])
                      for d, n in enumerate(shape)]
            subs = []
            for d in range(nd):
                others = [a for a in range(nd) if a != d]
                for p in range(4):
                    for q in itertools.product((0, 1), repeat=nd - 1):
                        m = coords[d] % 4 == p
                        for a, qa in zip(others, q):
                            m = m & (coords[a] % 2 == qa)
                        subs.append((d, m))
            self._subs = subs
        return self._subs

    def _kawasaki_sweep(self):
        xp, s = self.xp, self._s
        z = 2 * s.ndim
        u = _random.words(self.seed, _random.TAG_KAWASAKI, self.step, self._cells, s.ndim)
        for d, mask in self._sublattices():
            nn = _neighbour_sum(s, self._wraps)
            sb = _shift(s, self._wraps, d, 1)        # partner b = a + e_d
            a_sum = nn - sb                          # a's neighbours but b
            b_sum = _shift(nn, self._wraps, d, 1) - s  # b's neighbours but a
            m = s * (a_sum - b_sum)                  # dE = 2 J m
            index = (m + np.int8(2 * (z - 1))) // np.int8(2)
            accept = mask & (s != sb) & (u[d] < self._kawasaki[index])
            swap = accept | _shift(accept, self._wraps, d, -1)  # a and its partner
            s = xp.where(swap, -s, s)
        return s

    def _swendsen_wang_step(self):
        # the clusters hook labels the step's clusters only when asked (_sw_clusters)
        self._sw_drawn, self._last_clusters = (self._s, self.step), None
        return self._sw_spins()

    def _sw_spins(self):
        """The step's new spins: on the GPU chain that draws the bonds where it reads
        them and writes the spins in its last pass (2-D, h = 0), else bonds
        (:meth:`_sw_bonds`), labels (:meth:`_sw_labels`), then the flip."""
        flip = self._sw_chain()
        if flip is not None:
            return flip(self._s, self._bond, _philox_words(self.step, self.seed, _random.TAG_BOND),
                        _philox_words(self.step, self.seed, _random.TAG_CLUSTER))
        return self._sw_flip(self._sw_labels(self._sw_bonds()))

    def _sw_chain(self):
        """The GPU chain that writes the new spins in its label pass
        (:class:`meshccl._gpu.cluster_flip.ClusterFlip`): CuPy, 2-D, h = 0,
        fewer than 2**31 cells; else None (labels, then the flip)."""
        if self._flip_chain is None:
            self._flip_chain = False
            if (self.xp is not np and self._up is None and len(self._shape) == 2
                    and self._cells.size < 2**31):
                from .._gpu.cluster_flip import ClusterFlip

                try:
                    self._flip_chain = ClusterFlip(self._shape)
                except ValueError:  # (another chain labels this shape)
                    pass
        return self._flip_chain or None

    # The parts of a Swendsen-Wang step, apart so that benchmarks/sim_bench.py can time
    # each (bond drawing; clusters and spins) on the step's own code.
    def _sw_bonds(self, step=None):
        """bonds[k] joins x and x + half_offsets(nd, 1)[k] with p = 1 - exp(-2J/T)
        (``step``: the step whose bonds, default this one)."""
        xp, nd = self.xp, len(self._shape)
        step = self.step if step is None else step
        # bonds[k] joins x and x + half_offsets(nd, 1)[k]; label() joins only equal spins
        assert len(half_offsets(nd, 1)) == nd
        bonds = xp.empty((nd,) + self._shape, dtype=bool)
        if xp is not np and self._cells.dtype == np.uint32:
            return _sw_bonds_fused(bonds, self._bond, self.seed, step)
        # bond k of cell i is word w = nd i + k of the step's stream: word w % 4 of the
        # Philox call w // 4 (4 cells take nd calls; meshccl_ising_bonds draws them together)
        n = self._cells.size
        calls = nd * -(-n // 4)
        if self._bond_calls is None:
            self._bond_calls = xp.arange(calls, dtype=self._cells.dtype)
        w = _random.words(self.seed, _random.TAG_BOND, step, self._bond_calls, 4)
        for c in range(4):              # cells 4 t + c: word nd c + k of the quad t's calls
            for k in range(nd):
                call, word = divmod(nd * c + k, 4)
                cells = bonds[k].reshape(-1)[c::4]
                xp.less(w[word][call::nd][:cells.size], self._bond, out=cells)
        return bonds

    def _sw_labels(self, bonds):
        """The clusters: ``meshccl.label`` of the spins with the bonds, on the torus;
        labelled by first cells (root index + 1) at h = 0, where only a sign per
        cluster is drawn, else 1..N (the field needs each cluster's size)."""
        return _label(self._s, connectivity=1, periodic=True, bonds=bonds,
                      numbering="first-cell" if self._up is None else "raster")

    def _sw_flip(self, labels):
        """Each cluster set to +1 with P(n), from one Philox draw per cluster indexed by
        its label (first-cell labels at h = 0: the cluster's first cell index + 1)."""
        xp = self.xp
        if self._up is None and xp is not np and labels.dtype in (np.int32, np.uint32):
            return _sw_flip_fused(labels, self.seed, self.step)
        draw = _random.words(self.seed, _random.TAG_CLUSTER, self.step, labels, 1)[0]
        if self._up is None:
            up = draw < np.uint32(2**31)
        else:
            clusters = Clusters(labels, self.step + 1, "clusters")
            self._last_clusters = clusters       # (numbered 1..N: the hook's own labels)
            size = clusters.counts[labels]       # each cell's cluster size (meshccl.measure)
            up = draw < self._up[xp.minimum(size, self._up.shape[0] - 1)]
        return xp.where(up, np.int8(1), np.int8(-1)).astype(np.int8, copy=False)

    def _sw_clusters(self):
        """The last step's clusters (``label='clusters'``), labelled 1..N when first
        asked for: the step's bonds are drawn again (counter-based) on the spins it
        started from."""
        if self._last_clusters is None and self._sw_drawn is not None:
            s, step = self._sw_drawn
            labels = _label(s, connectivity=1, periodic=True, bonds=self._sw_bonds(step))
            self._last_clusters = Clusters(labels, step + 1, "clusters")
        return self._last_clusters

    # -- checkpoints ---------------------------------------------------------------
    def _params(self):
        return {"temperature": self.temperature, "field": self.field,
                "coupling": self.coupling, "algorithm": self.algorithm}

    @classmethod
    def _from_checkpoint(cls, params, state, xp, seed):
        return cls(temperature=params["temperature"], field=params["field"],
                   coupling=params["coupling"], algorithm=params["algorithm"], seed=seed,
                   spins=state, xp=xp)
