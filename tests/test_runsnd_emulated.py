"""The pair rules of the runsnd chain (kernels/runsnd_pairs.cuh, which
kernels/runsnd.cu's rows and unions kernels call) on the CPU.

CI has no GPU.  The header is compiled by the host compiler, as the
kernels include it: run_starts makes each word's run starts, word_pairs
the pairs of each word with the rows the structure's row table names
(meshccl._gpu.runs_nd.step_table), and a plain union-find (the larger root
hooked under the smaller, as unionfind.cuh does) unites them.  Each cell's
label is then the rank of its run start's root among the roots: what the
pieces numbering after the kernels computes.  The labels must equal
scipy.ndimage.label's for every kind of structure (without the left
neighbour, diagonals only, the centre alone, random ones), in 1 to 5
axes, rows narrower and wider than a word, odd lengths, densities from
sparse to full -- a rule that drops one pair too many splits a feature."""

import ctypes
import itertools

import numpy as np
import pytest
import scipy.ndimage as ndi

from meshccl import neighbourhood
from meshccl._gpu.runs_nd import STEP, step_table
from conftest import host_library

HARNESS = r"""
#include "runsnd_pairs.cuh"
using meshccl::runsnd::Step;
static long long find(long long* P, long long x) {
    while (P[x] != x) { P[x] = P[P[x]]; x = P[x]; }
    return x;
}
// v: rows x nx bytes (0 / 1); P: parents (n cells); returns the pairs united;
// Batch, Slots: word_pairs' queue of pairs and earlier pairs kept for covering
template <int Batch, int Slots>
static long long label_with(const unsigned char* v, long long rows, long long nx, int xjoin,
                            const Step* steps, int nsteps, const long long* lead_shape,
                            int lead, unsigned* F, unsigned* S, long long* P) {
    const long long ntx = (nx + 31) / 32;
    for (long long bx = 0; bx < ntx; ++bx)
        for (long long r = 0; r < rows; ++r) {
            unsigned m = 0u;
            for (long long c = bx * 32; c < nx && c < bx * 32 + 32; ++c)
                if (v[r * nx + c]) m |= 1u << (c - bx * 32);
            F[bx * rows + r] = m;
            S[bx * rows + r] = meshccl::runsnd::run_starts(m, xjoin != 0);
        }
    for (long long i = 0; i < rows * nx; ++i) P[i] = i;
    long long pairs = 0;
    auto Fr = [&](long long w) { return F[w]; };
    auto Sr = [&](long long w) { return S[w]; };
    auto unite = [&](const long long* qa, const long long* qb, int count) {
        for (int i = 0; i < count; ++i) {
            ++pairs;
            const long long a = find(P, qa[i]), b = find(P, qb[i]);
            if (a != b) P[a > b ? a : b] = a > b ? b : a;
        }
    };
    for (long long bx = 0; bx < ntx; ++bx)
        for (long long r = 0; r < rows; ++r) {
            unsigned lo = 0u, hi = 0u;
            long long t = r;
            for (int k = lead - 1; k >= 0; --k) {
                const long long c = t % lead_shape[k];
                lo |= (c == 0 ? 1u : 0u) << k;
                hi |= (c == lead_shape[k] - 1 ? 1u : 0u) << k;
                t /= lead_shape[k];
            }
            const long long w = bx * rows + r;
            meshccl::runsnd::word_pairs<long long, Batch, Slots>(F[w], S[w], xjoin != 0, r, bx,
                                                                 rows, ntx, nx, lo, hi, steps,
                                                                 nsteps, Fr, Sr, unite);
        }
    // every foreground cell to its run start's root (the label pass's view)
    for (long long bx = 0; bx < ntx; ++bx)
        for (long long r = 0; r < rows; ++r) {
            const unsigned m = F[bx * rows + r], s = S[bx * rows + r];
            for (int b = 0; b < 32; ++b)
                if ((m >> b) & 1u) {
                    const long long c = r * nx + bx * 32 + b;
                    const long long st = r * nx + bx * 32 + meshccl::runsnd::start_at(s, b);
                    P[c] = find(P, st);
                } else if (bx * 32 + b < nx) {
                    P[r * nx + bx * 32 + b] = -1;
                }
        }
    return pairs;
}
#define MESHCCL_LABEL_WITH(NAME, BATCH, SLOTS)                                                 \
    extern "C" long long NAME(const unsigned char* v, long long rows, long long nx, int xjoin, \
                              const Step* steps, int nsteps, const long long* lead_shape,      \
                              int lead, unsigned* F, unsigned* S, long long* P) {              \
        return label_with<BATCH, SLOTS>(v, rows, nx, xjoin, steps, nsteps, lead_shape, lead, F, \
                                        S, P);                                                 \
    }
MESHCCL_LABEL_WITH(label, 1, 0)
MESHCCL_LABEL_WITH(label_queued, 3, 2)
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    lib = host_library(tmp_path_factory, "runsnd_pairs", HARNESS)
    lib.label.restype = ctypes.c_longlong
    lib.label_queued.restype = ctypes.c_longlong
    return lib


def emulate(lib, fg, offsets, queued=False):
    """(labels as scipy numbers them, pairs united) of bool ``fg`` (no axis
    of length 1) under the half neighbourhood ``offsets``; ``queued``: the
    pairs queued 3 at a time before their unites, and 2 earlier pairs kept
    for the cover masks (word_pairs' Batch and Slots; else 1 and all)."""
    shape = fg.shape
    nx = shape[-1]
    rows = fg.size // nx
    xjoin, table = step_table(shape, offsets)
    table = np.ascontiguousarray(table)
    assert table.dtype.itemsize == STEP.itemsize == 48
    lead = np.asarray(shape[:-1] or (1,), dtype=np.int64)
    v = np.ascontiguousarray(fg, dtype=np.uint8)
    words = rows * -(-nx // 32)
    F, S = np.zeros(words, np.uint32), np.zeros(words, np.uint32)
    P = np.zeros(fg.size, np.int64)
    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    pairs = (lib.label_queued if queued else lib.label)(ptr(v), ctypes.c_longlong(rows), ctypes.c_longlong(nx),
                      ctypes.c_int(int(xjoin)), ptr(table), ctypes.c_int(len(table)), ptr(lead),
                      ctypes.c_int(len(shape) - 1), ptr(F), ptr(S), ptr(P))
    roots = np.flatnonzero(P == np.arange(fg.size))
    rank = np.zeros(fg.size + 1, np.int64)
    rank[roots] = np.arange(1, len(roots) + 1)
    labels = np.where(P >= 0, rank[np.maximum(P, 0)], 0).reshape(shape)
    return labels, pairs


def _symmetric(rng, ndim, keep):
    """A random centrosymmetric structure: each opposite pair kept with
    probability ``keep``."""
    half = rng.random(3**ndim // 2) < keep
    return np.concatenate([half, [True], half[::-1]]).reshape((3,) * ndim)


def _kinds(ndim):
    """Structures of every kind in ``ndim`` axes."""
    out = {f"c={c}": ndi.generate_binary_structure(ndim, c) for c in range(1, ndim + 1)}
    centre = np.zeros((3,) * ndim, bool)
    centre[(1,) * ndim] = True
    out["centre only"] = centre
    corners = np.zeros((3,) * ndim, bool)
    corners[(slice(None, None, 2),) * ndim] = True
    out["corners (diagonals only)"] = corners
    diag = np.zeros((3,) * ndim, bool)
    for k in range(3):
        diag[(k,) * ndim] = True
    out["main diagonal"] = diag
    out["anti-diagonal"] = diag[..., ::-1].copy()
    out["odd parity"] = np.indices((3,) * ndim).sum(0) % 2 == 1
    if ndim >= 2:
        nox = ndi.generate_binary_structure(ndim, ndim)
        nox[(1,) * (ndim - 1)] = False  # the whole x line through the centre
        nox[(1,) * ndim] = True
        out["full box without x neighbours"] = nox
        first = np.zeros((3,) * ndim, bool)
        first[(slice(None),) + (1,) * (ndim - 1)] = True
        out["first axis only"] = first
        sides = np.zeros((3,) * ndim, bool)
        sides[(0,) * (ndim - 1) + (slice(None, None, 2),)] = True
        sides[(2,) * (ndim - 1) + (slice(None, None, 2),)] = True
        sides[(1,) * ndim] = True
        out["x - 1 and x + 1 of a row, not x"] = sides
    return out


SHAPES = {1: [(97,), (5,)], 2: [(37, 29), (7, 64), (5, 100), (6, 2)],
          3: [(9, 11, 13), (3, 5, 70), (4, 2, 33), (2, 3, 2)],
          4: [(5, 6, 4, 7), (3, 4, 3, 40), (2, 2, 2, 2)], 5: [(3, 4, 3, 2, 35)]}


def _check(lib, fg, s, name="", queued=False):
    labels, _ = emulate(lib, fg, neighbourhood.structure_offsets(s), queued)
    want, n = ndi.label(fg, s)
    assert labels.max(initial=0) == n, name
    np.testing.assert_array_equal(labels, want, err_msg=f"{name} {fg.shape}")


@pytest.mark.parametrize("ndim", [1, 2, 3, 4, 5])
def test_every_kind_of_structure_equals_scipy(lib, ndim):
    rng = np.random.default_rng(ndim)
    for name, s in _kinds(ndim).items():
        for shape in SHAPES[ndim]:
            for density in (0.1, 0.35, 0.6, 0.9, 1.0):
                _check(lib, rng.random(shape) < density, s, name, queued=density < 0.5)


@pytest.mark.parametrize("ndim", [2, 3, 4])
def test_random_structures_equal_scipy(lib, ndim):
    rng = np.random.default_rng(100 + ndim)
    count = {2: 150, 3: 300, 4: 120}[ndim]
    for k in range(count):
        s = _symmetric(rng, ndim, rng.choice([0.15, 0.5, 0.85]))
        shape = tuple(int(rng.integers(2, 9 if ndim == 4 else 14)) for _ in range(ndim - 1))
        shape += (int(rng.choice([3, 31, 32, 33, 47, 70])),)
        _check(lib, rng.random(shape) < rng.choice([0.2, 0.5, 0.8]), s, f"#{k}: {s.tolist()}",
               queued=k % 2 == 1)


def test_every_3d_structure_on_one_volume(lib):
    """All 2**13 centrosymmetric 3 x 3 x 3 structures (centre set) on one
    volume whose rows span three words."""
    rng = np.random.default_rng(7)
    fg = rng.random((4, 5, 70)) < 0.45
    for bits in range(1 << 13):
        half = np.array([(bits >> k) & 1 for k in range(13)], bool)
        s = np.concatenate([half, [True], half[::-1]]).reshape(3, 3, 3)
        _check(lib, fg, s, f"{bits:013b}")


def test_pairs_are_fewer_than_neighbours(lib):
    """The rules drop the pairs a run already joins: on a full volume at
    connectivity 3 each run (a whole word) unites once with each earlier
    row word it touches, not once per cell."""
    fg = np.ones((4, 4, 64), bool)
    _, pairs = emulate(lib, fg, neighbourhood.half_offsets(3, 3))
    words = 4 * 4 * 2
    assert pairs <= words * 5  # (the left word, and 4 rows: dx 0 only)


def test_step_table():
    xjoin, t = step_table((3, 4, 5), ((-1, -1, 1), (-1, 1, -1), (-1, 1, 0), (0, -1, 0),
                                      (0, 0, -1)))
    assert xjoin
    rows = {int(b): (int(d), int(u), int(x)) for b, d, u, x in
            zip(t["back"], t["down"], t["up"], t["dx"])}
    # (row strides 4 and 1 over the leading axes (3, 4))
    assert rows == {1: (2, 0, 2), 3: (1, 2, 3), 5: (3, 0, 4)}
    assert list(t["back"]) == sorted(t["back"])
    with pytest.raises(ValueError, match="earlier cells"):
        step_table((3, 4), ((1, 0),))
    with pytest.raises(ValueError, match="earlier cells"):
        step_table((3, 4), ((0, 1),))
    assert step_table((5,), ())[0] is False and len(step_table((5,), ())[1]) == 0


def test_all_4d_connectivities_and_sizes(lib):
    rng = np.random.default_rng(9)
    for shape in itertools.product((2, 3), (3,), (2, 5), (31, 33)):
        fg = rng.random(shape) < 0.3
        for c in range(1, 5):
            _check(lib, fg, ndi.generate_binary_structure(4, c), f"c={c}")


def test_rows_at_one_distance_stay_apart(lib):
    """Two earlier rows at the same distance (an axis of length 2: one step
    back in y, or one back in z and one up in y) are two entries of the
    table, each with its own edges and covers."""
    s = np.zeros((3, 3, 3), bool)
    s[1, 0, 1] = s[1, 2, 1] = True  # (0, -1, 0)
    s[0, 2, 1] = s[2, 0, 1] = True  # (-1, +1, 0)
    s[0, 2, 0] = s[2, 0, 2] = True  # (-1, +1, -1)
    s[1, 1, 1] = True
    _, t = step_table((3, 2, 40), neighbourhood.structure_offsets(s))
    assert t["back"].tolist() == [1, 1]
    rng = np.random.default_rng(11)
    for density in (0.3, 0.6, 0.9):
        _check(lib, rng.random((3, 2, 40)) < density, s)
