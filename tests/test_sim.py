"""meshccl.sim: Philox known answers, physics checks, conservation, hooks,
checkpoints and bad input.

Physics checks run small lattices on the CPU with fixed seeds; every
comparison allows 4 standard errors, the error computed here from bin
means (meshccl.sim.analysis.binning), plus where said a bound on the
finite-size bias.  GPU tests (marked ``gpu``) compare CuPy runs with NumPy
runs of the same seed.
"""

import itertools
import math
import shutil
import subprocess
import sys
import types

import numpy as np
import pytest

import meshccl
from meshccl import measure
from meshccl._validate import PackedSpins
from meshccl.sim import (CahnHilliard, CallbackError, Clusters, Ising, SimulationError, analysis,
                         exact)
from meshccl.sim import random as sim_random
from conftest import HAVE_GPU

TC = exact.CRITICAL_TEMPERATURE
SIGMAS = 4.0

gpu = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")]


# ---------------------------------------------------------------------------
# Philox4x32
# ---------------------------------------------------------------------------

# Known-answer vectors of Random123 (DEShawResearch/random123, tests/kat_vectors,
# the "philox4x32 7" and "philox4x32 10" lines): rounds, counter, key, expected.
KAT = [
    (7, (0, 0, 0, 0), (0, 0), (0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48)),
    (7, (0xffffffff,) * 4, (0xffffffff,) * 2, (0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662)),
    (7, (0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a)),
    (10, (0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    (10, (0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    (10, (0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]


@pytest.mark.parametrize("rounds, counter, key, expected", KAT)
def test_philox_known_answers(rounds, counter, key, expected):
    out = sim_random.philox4x32(counter, key, rounds)
    assert [int(w) for w in out] == list(expected)
    # the same vectors as arrays, broadcast with an array counter word
    arr = sim_random.philox4x32((np.array([counter[0]] * 3, dtype=np.uint32),) + counter[1:],
                                key, rounds)
    assert all(a.dtype == np.uint32 and a.shape == (3,) for a in arr)
    assert [int(a[1]) for a in arr] == list(expected)


def _cuda_body_on_cpu(tmp_path, inputs):
    """Run meshccl_philox of meshccl/_kernels/philox.cuh (the rounds of
    random.words and of the Ising kernels) compiled as plain C (its host
    branch): one line of words per input."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler")
    src = tmp_path / "philox.c"
    src.write_text(
        "#include <stdio.h>\n"
        + sim_random._cuda_preamble() + "\n"
        "int main(void) {\n"
        "  unsigned int c0, c1, c2, c3, k0, k1, r[4]; int rounds;\n"
        "  while (scanf(\"%x %x %x %x %x %x %d\", &c0, &c1, &c2, &c3, &k0, &k1, &rounds) == 7) {\n"
        "    meshccl_philox(c0, c1, c2, c3, k0, k1, rounds, r);\n"
        "    printf(\"%08x %08x %08x %08x\\n\", r[0], r[1], r[2], r[3]);\n"
        "  }\n  return 0;\n}\n")
    exe = tmp_path / "philox"
    subprocess.run([cc, "-O1", "-o", str(exe), str(src)], check=True, capture_output=True)
    text = "\n".join(" ".join(f"{v:x}" for v in c + k) + f" {r}" for r, c, k in inputs)
    out = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True)
    return [tuple(int(w, 16) for w in line.split()) for line in out.stdout.splitlines()]


def test_philox_cuda_body_compiled_on_cpu(tmp_path):
    """The GPU kernels' Philox (philox.cuh) gives the known answers and NumPy's words."""
    rng = np.random.default_rng(5)
    extra = [(10, tuple(int(v) for v in rng.integers(0, 2**32, 4)),
              tuple(int(v) for v in rng.integers(0, 2**32, 2))) for _ in range(20)]
    inputs = [(r, c, k) for r, c, k, _ in KAT] + extra
    got = _cuda_body_on_cpu(tmp_path, inputs)
    assert got[:len(KAT)] == [e for *_, e in KAT]
    for (r, c, k), words in zip(extra, got[len(KAT):]):
        assert words == tuple(int(w) for w in sim_random.philox4x32(c, k, r))


def test_words_depend_only_on_seed_tag_step_and_index():
    cells = np.arange(600, dtype=np.uint64)
    full = sim_random.words(9, sim_random.TAG_BOND, 123, cells)
    # any subset, order or shape of indices gives each index the same words
    pick = np.array([599, 3, 0, 77, 3])
    part = sim_random.words(9, sim_random.TAG_BOND, 123, pick.reshape(5, 1))
    for a, b in zip(full, part):
        assert np.array_equal(a[pick], b.ravel())
    # and another seed, tag, step or a large index changes them
    for args in [(10, sim_random.TAG_BOND, 123), (9, sim_random.TAG_CLUSTER, 123),
                 (9, sim_random.TAG_BOND, 124), (9, sim_random.TAG_BOND, 123 + 2**32)]:
        other = sim_random.words(*args, cells)
        assert not np.array_equal(other[0], full[0])
    big = sim_random.words(9, sim_random.TAG_BOND, 123, cells + np.uint64(2**32))
    assert not np.array_equal(big[0], full[0])


@pytest.mark.parametrize("dtype", [np.uint64, np.int64, np.uint32, np.int32, np.uint16,
                                   np.int16, np.uint8, np.int8])
def test_words_equal_philox_of_the_documented_counter(dtype):
    """words() (the compiled core on NumPy) gives the Philox words of the documented counter
    for every index dtype, any count, large steps and seeds."""
    top = 2**56 if dtype in (np.uint64, np.int64) else np.iinfo(dtype).max
    idx = np.random.default_rng(1).integers(0, top, 3000, dtype=np.uint64).astype(dtype)
    idx[:3] = [0, 1, top - 1]
    for seed, step, tag in [(0, 0, 1), (2**64 - 1, 2**40 + 3, 255), (7, 2**32, 4)]:
        i64 = idx.astype(np.uint64)
        ref = sim_random.philox4x32(
            (i64 & np.uint64(2**32 - 1), ((i64 >> np.uint64(32)) << np.uint64(8))
             | np.uint64(tag), step & (2**32 - 1), step >> 32), (seed & (2**32 - 1), seed >> 32))
        for count in (1, 2, 3, 4):
            got = sim_random.words(seed, tag, step, idx.reshape(60, 50), count)
            assert len(got) == count
            for g, r in zip(got, ref):
                assert g.dtype == np.uint32 and g.shape == (60, 50)
                assert np.array_equal(g.ravel(), r)
    with pytest.raises(ValueError, match="count"):
        sim_random.words(0, 1, 0, idx, 5)
    for bad, match in [((0, 256, 0), "tag must be 0..255, got 256"),
                       ((-1, 1, 0), "seed must be 0..2\\*\\*64 - 1, got -1"),
                       ((0, 1, 2**64), "step must be 0..2\\*\\*64 - 1, got 18446744073709551616")]:
        with pytest.raises(ValueError, match=match):
            sim_random.words(*bad, idx)


def test_words_of_both_compiled_loops():
    """The core's baseline loop and its AVX-512 one (where the CPU has it)
    give the Philox words of the documented counter, block edges included."""
    from meshccl._cpu.image import _core

    rng = np.random.default_rng(3)
    for n in (0, 1, 511, 512, 513, 1500):
        idx = rng.integers(0, 2**56, n, dtype=np.uint64)
        ref = sim_random.philox4x32(
            (idx & np.uint64(2**32 - 1), ((idx >> np.uint64(32)) << np.uint64(8)) | np.uint64(9),
             5, 2**31), (2**32 - 1, 77))
        for wide in (False, True):
            for count in (1, 4):
                out = np.empty((count, n), dtype=np.uint32)
                _core.philox_words(idx.astype(np.int64), 9, 5 + 2**63, 2**32 - 1 + (77 << 32),
                                   out, wide)
                for got, want in zip(out, ref):
                    assert np.array_equal(got, want), (n, wide, count)


def test_words_look_uniform():
    w = sim_random.words(1, sim_random.TAG_INIT, 0, np.arange(40000))
    for word in w:
        u = word / 2**32
        assert abs(u.mean() - 0.5) < 4 * math.sqrt(1 / 12 / u.size)
        counts = np.bincount(word >> np.uint32(28), minlength=16)     # 16 bins, chi-square
        chi2 = ((counts - u.size / 16) ** 2 / (u.size / 16)).sum()
        assert chi2 < 45                                               # p ~ 1e-4 at 15 dof
    u = sim_random.uniform(w[0], w[1])
    assert u.dtype == np.float64 and 0 <= u.min() and u.max() < 1


# ---------------------------------------------------------------------------
# exact results and analysis helpers
# ---------------------------------------------------------------------------

def _enumerate(shape, temperature, field=0.0, down=None):
    """Exact <E>/N and <M>/N on a small torus by enumeration (the simulators'
    energy: one bond per cell and axis, so sides of 2 count a pair twice)."""
    n = math.prod(shape)
    if down is None:
        conf = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1) * 2 - 1
    else:
        combos = np.array(list(itertools.combinations(range(n), down)))
        conf = np.ones((len(combos), n), dtype=np.int64)
        np.put_along_axis(conf, combos, -1, axis=1)
    s = conf.reshape((-1,) + tuple(shape))
    axes = tuple(range(1, s.ndim))
    energy = -sum((s * np.roll(s, 1, a + 1)).sum(axes) for a in range(len(shape)))
    energy = energy - field * s.sum(axes)
    w = np.exp(-(energy - energy.min()) / temperature)
    w /= w.sum()
    return float((w * energy).sum() / n), float((w * s.sum(axes)).sum() / n)


def test_exact_partition_function_matches_enumeration():
    for rows, cols in [(2, 2), (3, 4), (4, 4), (2, 5)]:
        for k in (0.2, 1 / TC, 0.7):
            n = rows * cols
            conf = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1) * 2 - 1
            s = conf.reshape(-1, rows, cols)
            e = -(s * np.roll(s, 1, 1)).sum((1, 2)) - (s * np.roll(s, 1, 2)).sum((1, 2))
            assert exact.log_partition_function(k, rows, cols) == pytest.approx(
                math.log(np.exp(-k * e).sum()), rel=1e-12)
            assert exact.energy_per_spin(1 / k, (rows, cols)) == pytest.approx(
                _enumerate((rows, cols), 1 / k)[0], abs=1e-8)


def test_exact_values():
    assert exact.energy_per_spin(TC) == pytest.approx(-math.sqrt(2), abs=1e-12)
    # Onsager's energy is continuous through T_c, and the torus tends to it
    assert exact.energy_per_spin(TC * (1 + 1e-7)) == pytest.approx(-math.sqrt(2), abs=1e-5)
    assert exact.energy_per_spin(TC, 256) == pytest.approx(-math.sqrt(2), abs=0.01)
    assert exact.spontaneous_magnetisation(2.0) == pytest.approx(0.911319, abs=1e-6)
    assert exact.spontaneous_magnetisation(TC * 1.0001) == 0.0
    with pytest.raises(ValueError, match="temperature"):
        exact.energy_per_spin(0.0)


def test_analysis_helpers():
    rng = np.random.default_rng(1)
    x = np.zeros(40000)
    for t in range(1, x.size):          # AR(1): tau_int = (1 + a) / (2 (1 - a)) = 9.5
        x[t] = 0.9 * x[t - 1] + rng.normal()
    tau, err = analysis.autocorrelation_time(x)
    assert abs(tau - 9.5) < SIGMAS * err
    mean, error = analysis.binning(x, 40)
    assert error > 3 * x.std() / math.sqrt(x.size)      # ~ sqrt(2 tau) times the naive one
    assert abs(mean) < SIGMAS * error
    assert analysis.autocorrelation_time(rng.normal(size=5000))[0] == pytest.approx(0.5, abs=0.1)
    with pytest.raises(ValueError):
        analysis.binning([1.0, 2.0], 4)
    with pytest.raises(ValueError):
        analysis.autocorrelation_time([1.0, np.nan, 2.0, 3.0])


# ---------------------------------------------------------------------------
# Ising physics
# ---------------------------------------------------------------------------

def _series(algorithm, size, temperature, sweeps, burn=200, seed=1):
    sim = Ising((size, size), temperature=temperature, algorithm=algorithm, seed=seed,
                start="cold")
    sim.run(burn)
    out = sim.run(sweeps, record=("energy", "magnetisation"))
    return out["energy"], np.abs(out["magnetisation"])


# sweeps after 200 of burn-in, on a 16 x 16 torus
SWEEPS_BELOW = {"swendsen-wang": 3000, "metropolis": 4000}
SWEEPS_TC = {"swendsen-wang": 4000, "metropolis": 12000}


@pytest.mark.parametrize("algorithm", ["swendsen-wang", "metropolis"])
def test_onsager_magnetisation_below_tc(algorithm):
    """<|m|> at T = 2.0 (T_c = 2.269) equals Onsager's M = 0.911319.

    Finite-size bias on the 16 x 16 torus: configurations with two
    interfaces (m near 0) weigh about exp(-2 sigma L / T) ~ 7e-4 (interface
    tension sigma = 2 + T ln tanh(1/T) = 0.456), and 40 000 Swendsen-Wang
    sweeps gave <|m|> - M = +0.0003 +- 0.0005; 0.002 is allowed for it.
    The energy is compared with the exact 16 x 16 value (no bias).
    """
    energy, m = _series(algorithm, 16, 2.0, SWEEPS_BELOW[algorithm])
    mean, err = analysis.binning(m)
    assert abs(mean - exact.spontaneous_magnetisation(2.0)) < SIGMAS * err + 0.002, (mean, err)
    mean, err = analysis.binning(energy)
    assert abs(mean - exact.energy_per_spin(2.0, 16)) < SIGMAS * err, (mean, err)


def test_at_tc_energy_and_autocorrelation():
    """At T_c, 16 x 16 (one test, so that the two long runs are made once):

    - <E>/N of each algorithm equals the exact torus value (Kaufman;
      Ferdinand-Fisher), -1.45306, which the error bar separates from the
      infinite lattice's -sqrt(2);
    - tau_int of |m|: Swendsen-Wang about 3 sweeps, Metropolis about 11.
    """
    finite = exact.energy_per_spin(TC, 16)
    taus = {}
    for algorithm in ("swendsen-wang", "metropolis"):
        energy, m = _series(algorithm, 16, TC, SWEEPS_TC[algorithm])
        mean, err = analysis.binning(energy)
        assert abs(mean - finite) < SIGMAS * err, (algorithm, mean, err, finite)
        assert abs(finite + math.sqrt(2)) > SIGMAS * err
        taus[algorithm] = analysis.autocorrelation_time(m)
    (t_sw, e_sw), (t_me, e_me) = taus["swendsen-wang"], taus["metropolis"]
    assert t_me > 2 * t_sw, taus
    assert t_me - t_sw > 3 * math.hypot(e_sw, e_me), taus


TINY = [  # shape, temperature, field, algorithm, sweeps: against enumeration
    ((4, 4), 2.5, 0.3, "metropolis", 2000),
    ((2, 2, 2), 4.0, 0.4, "metropolis", 2000),
    ((4, 4), 2.5, 0.3, "swendsen-wang", 1500),
    ((2, 2, 2), 4.0, -0.4, "swendsen-wang", 1500),
]


@pytest.mark.parametrize("shape, temperature, field, algorithm, sweeps", TINY)
def test_tiny_lattices_sample_the_boltzmann_distribution(shape, temperature, field, algorithm,
                                                         sweeps):
    """<E> and <M> on tori of 8 and 16 spins, with a field, equal exact enumeration."""
    sim = Ising(shape, temperature=temperature, field=field, algorithm=algorithm, seed=4)
    out = sim.run(sweeps, record=("energy", "magnetisation"))
    e_exact, m_exact = _enumerate(shape, temperature, field)
    for name, value in (("energy", e_exact), ("magnetisation", m_exact)):
        mean, err = analysis.binning(out[name])
        assert abs(mean - value) < SIGMAS * err, (name, mean, err, value)


@pytest.mark.parametrize("shape, temperature, down, sweeps", [
    ((4, 4), 2.5, 6, 2000),
    ((4, 4, 4), 3.0, 3, 1500),
])
def test_kawasaki_samples_fixed_magnetisation_ensemble(shape, temperature, down, sweeps):
    """Kawasaki's <E> equals the canonical average over states with ``down`` spins -1."""
    sim = Ising(shape, temperature=temperature, algorithm="kawasaki", seed=2,
                minority=down / math.prod(shape))
    energy = sim.run(sweeps, record="energy")["energy"]
    mean, err = analysis.binning(energy)
    value = _enumerate(shape, temperature, down=down)[0]
    assert abs(mean - value) < SIGMAS * err, (mean, err, value)


@pytest.mark.parametrize("shape", [(16, 16), (8, 8, 8)])
def test_kawasaki_conserves_magnetisation_exactly(shape):
    sim = Ising(shape, temperature=2.0, field=0.5, algorithm="kawasaki", minority=0.3, seed=7)
    down = int((sim.state == -1).sum())
    assert down == round(0.3 * math.prod(shape))
    start = sim.state.copy()
    out = sim.run(30, record="magnetisation")
    assert np.all(out["magnetisation"] == 1 - 2 * down / math.prod(shape))
    assert int((sim.state == -1).sum()) == down
    assert not np.array_equal(sim.state, start)          # it moved


def test_metropolis_and_swendsen_wang_order_below_tc_3d():
    """3-D, T = 3.5 < T_c = 4.51: both keep a cold start ordered (|m| about 0.86 on
    8**3; single sweeps of Metropolis dip to 0.8)."""
    for algorithm in ("metropolis", "swendsen-wang"):
        sim = Ising((8, 8, 8), temperature=3.5, algorithm=algorithm, seed=1, start="cold")
        m = sim.run(30, record="magnetisation")["magnetisation"]
        assert np.abs(m[-10:]).mean() > 0.8 and np.abs(m[-10:]).min() > 0.7, algorithm
        hot = Ising((8, 8, 8), temperature=8.0, algorithm=algorithm, seed=1)
        m = hot.run(30, record="magnetisation")["magnetisation"]
        assert np.abs(m[-10:]).mean() < 0.15, algorithm


def test_swendsen_wang_clusters_are_meshccl_labels():
    """The clusters of a step are label(spins, periodic, bonds) of the step's
    Philox bonds, and every cluster ends with one spin value."""
    sim = Ising((12, 12), temperature=2.3, algorithm="swendsen-wang", seed=3)
    before = sim.state.copy()
    step = sim.step
    sim.run(1)
    # bond k of cell i: word 2 i + k of the step, word (2 i + k) % 4 of call (2 i + k) // 4
    w = sim_random.words(sim.seed, sim_random.TAG_BOND, step, np.arange(72, dtype=np.uint64), 4)
    word = np.stack(w, axis=1).reshape(12, 12, 2)
    p = -math.expm1(-2 / 2.3)
    bonds = np.stack([word[..., k] < math.floor(p * 2**32) for k in range(2)])
    expected = meshccl.label(before, connectivity=1, periodic=True, bonds=bonds)
    clusters = sim.labels("clusters")
    assert clusters.step == 1 and np.array_equal(clusters.labels, expected)
    n = clusters.n
    lo = np.full(n + 1, 2)
    hi = np.full(n + 1, -2)
    np.minimum.at(lo, clusters.labels.ravel(), sim.state.ravel())
    np.maximum.at(hi, clusters.labels.ravel(), sim.state.ravel())
    assert np.array_equal(lo[1:], hi[1:])                  # one value per cluster
    # a bond only joins equal spins of the state it was drawn on
    assert all(np.unique(before[expected == k]).size == 1 for k in range(1, n + 1))


def sw_step_by_graph(spins, seed, step, temperature):
    """A zero-field Swendsen-Wang step written from the documented draws, with SciPy
    for the clusters: bond k of cell x (to x - e_k, ``half_offsets``) is Philox word
    2 i + k (3-D: 3 i + k, i the flat index of x) of the step, open below
    floor(p 2**32) and between equal spins; a cluster's new spin is +1 when
    word 0 of the Philox call at its smallest cell index + 1 is below 2**31."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    shape, nd, n = spins.shape, spins.ndim, spins.size
    calls = nd * -(-n // 4)
    w = np.stack(sim_random.words(seed, sim_random.TAG_BOND, step,
                                  np.arange(calls, dtype=np.uint64), 4), axis=1).reshape(-1)
    threshold = math.floor(-math.expm1(-2 / temperature) * 2**32)
    cells = np.arange(n).reshape(shape)
    rows, cols = [], []
    for k in range(nd):
        other = np.roll(cells, 1, axis=k)             # x - e_k on the torus
        open_ = (w[nd * cells + k] < threshold) & (spins == spins.reshape(-1)[other])
        rows.append(cells[open_])
        cols.append(other[open_])
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    graph = sp.coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    _, comp = connected_components(graph, directed=False)
    first = np.full(comp.max() + 1, n)
    np.minimum.at(first, comp, np.arange(n))
    draw = sim_random.words(seed, sim_random.TAG_CLUSTER, step,
                            (first[comp] + 1).astype(np.uint64), 1)[0]
    return np.where(draw < 2**31, 1, -1).astype(np.int8).reshape(shape)


@pytest.mark.parametrize("shape, temperature", [((9, 7), 2.269), ((16, 33), 2.0),
                                                ((5, 6, 7), 4.5), ((3, 2, 2), 3.0)])
def test_swendsen_wang_sign_is_drawn_at_each_clusters_first_cell(shape, temperature):
    """Every step equals the step written from the draws with SciPy's components: the
    sign rule needs no numbering, only each cluster's first cell (also across the
    periodic wrap)."""
    sim = Ising(shape, temperature=temperature, algorithm="swendsen-wang", seed=2**33 + 7)
    for _ in range(6):
        want = sw_step_by_graph(sim.state, sim.seed, sim.step, temperature)
        sim.run(1)
        assert np.array_equal(sim.state, want), sim.step


def direct_metropolis_sweep(s, table, seed, step):
    """One Metropolis sweep written from the documented draws, cell by cell: cell
    i = x // 2 of colour c in row r (flat over the axes but the last) is nibble t = i % 16
    of packed word G = c rows words + r words + i // 16 (words = ceil(nx / 32)); its
    16-bit uniform is half (t // 4) % 2 of word W = t % 4 + 4 (t // 8) of Philox calls
    2 G (W < 4) and 2 G + 1 (W - 4) (tag TAG_METROPOLIS), its next 16 bits the low half
    of word 0 of call 16 G + t (tag TAG_METROPOLIS_TIE); the cell flips when the 32-bit
    uniform they make is below its (spin, neighbour sum) threshold."""
    shape, nd = s.shape, s.ndim
    nx, ny = shape[-1], shape[-2]
    rows = s.size // nx
    words = -(-(nx // 2) // 16)
    G = np.empty(shape, dtype=np.int64)
    t = np.empty(shape, dtype=np.int64)
    for cell in np.ndindex(shape):
        z = cell[0] if nd == 3 else 0
        c, r, i = sum(cell) & 1, z * ny + cell[-2], cell[-1] // 2
        G[cell], t[cell] = c * rows * words + r * words + i // 16, i % 16
    W = t % 4 + 4 * (t // 8)
    step_words, key = (step & 0xFFFFFFFF, step >> 32), (seed & 0xFFFFFFFF, seed >> 32)
    w = sim_random.philox4x32((2 * G + W // 4, sim_random.TAG_METROPOLIS, *step_words), key)
    word = np.choose(W % 4, w).astype(np.uint64)
    high = np.where((t // 4) % 2 == 1, word >> np.uint64(16), word & np.uint64(0xFFFF))
    extra = sim_random.philox4x32((16 * G + t, sim_random.TAG_METROPOLIS_TIE, *step_words),
                                  key)[0]
    uniform = (high << np.uint64(16)) | (extra.astype(np.uint64) & np.uint64(0xFFFF))
    colour = sum(np.indices(shape)) % 2
    z = 2 * nd
    for c in (0, 1):
        nn = sum(np.roll(s, d, axis=a) for a in range(nd) for d in (1, -1))
        index = (s > 0) * (z + 1) + (nn + z) // 2
        s = np.where((colour == c) & (uniform < np.asarray(table)[index]), -s, s)
    return s.astype(np.int8)


def tie_table(sim):
    """A threshold table for ``sim``'s next sweep whose high 16 bits equal the uniform of
    one colour-0 cell for each (spin, neighbour sum) among them, its low 16 bits random;
    and the number of colour-0 cells whose uniform ties with their threshold."""
    s = np.asarray(sim.state.get() if hasattr(sim.state, "get") else sim.state)
    u = sim._metropolis_uniforms()
    u = np.asarray(u.get() if hasattr(u, "get") else u)
    z = 2 * s.ndim
    nn = sum(np.roll(s, d, axis=a) for a in range(s.ndim) for d in (1, -1))
    index = (s > 0) * (z + 1) + (nn + z) // 2
    colour0 = sum(np.indices(s.shape)) % 2 == 0
    rng = np.random.default_rng(sim.seed)
    table = np.asarray(sim._metropolis.get() if hasattr(sim._metropolis, "get")
                       else sim._metropolis).copy()
    for e in np.unique(index[colour0]):
        first = np.flatnonzero(colour0 & (index == e))[0]
        table[e] = (int(u.flat[first]) << 16) | int(rng.integers(0, 1 << 16))
    ties = int((colour0 & (u == table[index] >> np.uint64(16))).sum())
    return sim.xp.asarray(table), ties


@pytest.mark.parametrize("shape, field", [((6, 10), 0.0), ((4, 66), 0.4), ((2, 2), 0.0),
                                          ((4, 6, 34), 0.3)])
def test_metropolis_draws_as_documented(shape, field):
    """The NumPy sweep (the GPU kernel's reference) equals the sweep written cell by
    cell from the documented counters, also where uniforms tie with thresholds."""
    sim = Ising(shape, temperature=2.2, field=field, seed=2**40 + 9)
    for step in (0, 1, 2**33 + 1):
        sim.step = step
        want = direct_metropolis_sweep(sim.state, sim._metropolis, sim.seed, step)
        assert np.array_equal(sim._metropolis_sweep(), want), step
    saved = sim._metropolis
    sim._metropolis, ties = tie_table(sim)
    assert ties > 0
    want = direct_metropolis_sweep(sim.state, sim._metropolis, sim.seed, sim.step)
    got = sim._metropolis_sweep()
    assert np.array_equal(got, want)
    sim._metropolis = saved


# ---------------------------------------------------------------------------
# Cahn-Hilliard
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape, dtype, tol", [
    ((64, 64), np.float64, 1e-13),
    ((64, 64), np.float32, 2e-6),
    ((16, 16, 16), np.float64, 1e-13),
    ((16, 12, 10), np.float32, 2e-6),
])
def test_cahn_hilliard_conserves_mean_and_lowers_free_energy(shape, dtype, tol):
    sim = CahnHilliard(shape, dt=0.2, mean=-0.2, noise=0.1, dtype=dtype, seed=3)
    assert sim.state.dtype == dtype
    start = sim.mean_concentration()
    assert abs(start + 0.2) < SIGMAS * 0.1 / math.sqrt(3 * math.prod(shape)) + 1e-6
    out = sim.run(150, record=("free_energy", "mean"))
    assert sim.state.dtype == dtype and sim.step == 150
    assert np.abs(out["mean"] - start).max() < tol
    f = out["free_energy"]
    rounding = 1e-12 if dtype == np.float64 else 1e-5
    assert np.all(np.diff(f) <= rounding * np.abs(f[1:]))
    assert f[-1] < 0.9 * f[0]                                # it coarsened


def test_cahn_hilliard_separates_into_plus_minus_one():
    sim = CahnHilliard((48, 48), dt=1.0, seed=1)   # critical quench
    sim.run(400)
    c = sim.state
    assert np.quantile(c, 0.1) < -0.9 and np.quantile(c, 0.9) > 0.9
    a, b = sim.labels("A"), sim.labels("B")
    assert a.n >= 1 and b.n >= 1
    assert measure.largest_fraction(c > 0, connectivity=1, periodic=True) == a.largest_fraction


def test_cahn_hilliard_stabilisation_allows_large_steps():
    with pytest.warns(RuntimeWarning, match="stability bound"):
        plain = CahnHilliard((32, 32), dt=10.0, seed=2)
    with pytest.raises(SimulationError):
        plain.run(200)
    stable = CahnHilliard((32, 32), dt=10.0, stabilisation=1.0, seed=2)
    out = stable.run(200, record="free_energy")
    assert np.all(np.isfinite(out["free_energy"]))
    assert np.all(np.diff(out["free_energy"]) <= 1e-12 * np.abs(out["free_energy"][1:]))


@pytest.mark.parametrize("check_every", [1, 7])
def test_cahn_hilliard_blow_up_is_named_and_state_kept(check_every):
    with pytest.warns(RuntimeWarning, match="stability bound"):
        sim = CahnHilliard((32, 32), dt=10.0, seed=5, check_every=check_every)
    with pytest.raises(SimulationError, match=r"blew up at step \d+.*dt = 10\.0") as info:
        sim.run(500, record="mean")
    bad = info.value.step
    assert 1 <= bad < 500
    assert np.all(np.isfinite(sim.state))
    kept = sim.step
    if check_every == 1:
        assert kept == bad - 1                  # the bad step was never committed
    else:
        assert kept % check_every == 0 and bad - check_every <= kept < bad   # the last check
    assert f"state is kept at step {kept}" in str(info.value)
    assert info.value.record["mean"].shape[0] >= 1
    # the kept state is that of an untroubled run to that step
    with pytest.warns(RuntimeWarning):
        ref = CahnHilliard((32, 32), dt=10.0, seed=5)
    ref.run(kept)
    assert np.array_equal(ref.state, sim.state)


# ---------------------------------------------------------------------------
# hooks: run, iterate, callbacks, progress
# ---------------------------------------------------------------------------

def test_run_labels_every_k_steps_with_measure_statistics():
    sim = Ising((24, 24), temperature=2.2, algorithm="metropolis", seed=8)
    seen = []

    def callback(clusters):
        labels, n = meshccl.label(sim.state > 0, connectivity=1, periodic=True,
                                  return_num=True)
        assert clusters.step == sim.step and clusters.phase == "up"
        assert np.array_equal(clusters.labels, labels) and clusters.n == n
        assert clusters.largest_fraction == measure.largest_fraction(labels, labelled=True)
        hist, edges = clusters.size_histogram()
        ref = measure.size_histogram(labels)
        assert np.array_equal(hist, ref[0]) and np.array_equal(edges, ref[1])
        assert np.array_equal(clusters.counts, measure.statistics(labels)["voxel_counts"])
        assert clusters.statistics()["centroids"].shape == (n + 1, 2)
        seen.append(clusters.step)

    out = sim.run(25, every=5, on_label=callback, label="up", record=["energy"])
    assert seen == [5, 10, 15, 20, 25]
    assert out["energy"].shape == (25,) and out["energy"].dtype == np.float64
    # every counts from the start of the simulation, not of the call
    seen.clear()
    sim.run(12, every=5, on_label=callback)
    assert seen == [30, 35]


def test_iterate_and_labels_of_each_phase():
    sim = Ising((16, 16), temperature=1.8, algorithm="swendsen-wang", seed=2)
    steps = []
    for step, clusters in sim.iterate(40, every=10, label="clusters"):
        assert isinstance(clusters, Clusters) and clusters.step == step == sim.step
        steps.append(step)
        if step == 30:
            break
    assert steps == [10, 20, 30] and sim.step == 30            # stopped where the loop did
    domains = sim.labels("domains", connectivity=2)
    assert np.array_equal(domains.labels, meshccl.label(sim.state, connectivity=2,
                                                        periodic=True))
    up, down = sim.labels("up"), sim.labels("down")
    assert np.array_equal(up.labels > 0, sim.state > 0)
    assert np.array_equal(down.labels > 0, sim.state < 0)
    custom = sim.labels(lambda s: (s > 0).astype(np.uint8) * 3)
    assert np.array_equal(custom.labels, up.labels)
    with pytest.raises(ValueError, match="no Swendsen-Wang step"):
        Ising((8, 8), temperature=2.0, algorithm="sw").labels("clusters")
    metropolis = Ising((8, 8), temperature=2.0)
    with pytest.raises(ValueError, match="runs 'metropolis'"):
        metropolis.run(4, every=2, on_label=print, label="clusters")
    assert metropolis.step == 0


class _Stop(Exception):
    pass


@pytest.mark.parametrize("algorithm", ["metropolis", "swendsen-wang", "kawasaki"])
def test_callback_that_raises_stops_cleanly(algorithm):
    sim = Ising((16, 16), temperature=2.3, algorithm=algorithm, seed=4)

    def callback(clusters):
        if clusters.step == 20:
            raise _Stop("enough")

    with pytest.raises(CallbackError, match=r"_Stop at step 20.*state of step 20") as info:
        sim.run(50, every=10, on_label=callback, record="energy")
    assert isinstance(info.value.__cause__, _Stop)
    assert info.value.step == 20 and sim.step == 20
    assert info.value.record["energy"].shape == (20,)
    ref = Ising((16, 16), temperature=2.3, algorithm=algorithm, seed=4)
    ref.run(20)
    assert np.array_equal(sim.state, ref.state)
    sim.run(30)                                                 # and it resumes
    ref.run(30)
    assert np.array_equal(sim.state, ref.state)


def test_progress_bar(monkeypatch):
    made = []

    class FakeBar:
        def __init__(self, total, **kw):
            self.total, self.n, self.closed = total, 0, False
            made.append(self)

        def update(self, k):
            self.n += k

        def close(self):
            self.closed = True

    fake = types.ModuleType("tqdm.auto")
    fake.tqdm = FakeBar
    monkeypatch.setitem(sys.modules, "tqdm", types.ModuleType("tqdm"))
    monkeypatch.setitem(sys.modules, "tqdm.auto", fake)
    sim = Ising((8, 8), temperature=2.0, seed=1)
    sim.run(5)                                  # short: no bar by default
    assert made == []
    sim.run(5, progress=True)
    assert made[-1].total == 5 and made[-1].n == 5 and made[-1].closed
    sim.run(1000, progress=False)
    assert len(made) == 1
    # no tqdm: no bar; a warning only when one was asked for
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    sim.run(3)
    with pytest.warns(UserWarning, match="tqdm"):
        sim.run(3, progress=True)


# ---------------------------------------------------------------------------
# reproducibility and checkpoints
# ---------------------------------------------------------------------------

ALGORITHMS = ["metropolis", "swendsen-wang", "kawasaki"]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("shape, field", [((16, 16), 0.0), ((8, 8, 8), 0.2)])
def test_ising_reproducible_and_resumes_bit_identically(tmp_path, algorithm, shape, field):
    kw = dict(temperature=2.4, field=field, algorithm=algorithm, seed=11)
    a = Ising(shape, **kw)
    a.run(20)
    b = Ising(shape, **kw)
    b.run(10)
    b.save(tmp_path / "ckpt.npz")
    c = Ising.load(tmp_path / "ckpt.npz")
    assert c.step == 10 and c.algorithm == algorithm and c.field == field
    c.run(10)
    assert np.array_equal(a.state, c.state) and a.state.dtype == np.int8
    other = Ising(shape, **{**kw, "seed": 12})
    other.run(20)
    assert not np.array_equal(a.state, other.state)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cahn_hilliard_resumes_bit_identically(tmp_path, dtype):
    kw = dict(dt=0.3, kappa=0.8, mobility=1.5, mean=0.1, dtype=dtype, seed=2)
    a = CahnHilliard((32, 32), **kw)
    a.run(40)
    b = CahnHilliard((32, 32), **kw)
    b.run(25)
    b.save(tmp_path / "ch")
    c = meshccl.sim.load(tmp_path / "ch.npz")
    assert isinstance(c, CahnHilliard) and c.step == 25 and c.state.dtype == dtype
    c.run(15)
    assert np.array_equal(a.state, c.state)
    with pytest.raises(ValueError, match="CahnHilliard checkpoint, not Ising"):
        Ising.load(tmp_path / "ch.npz")


def test_seeded_initial_states():
    a = Ising((32, 32), temperature=2.0, seed=5).state
    assert np.array_equal(a, Ising((32, 32), temperature=2.0, seed=5).state)
    assert abs(a.mean()) < 0.15
    assert np.all(Ising((8, 8), temperature=2.0, start="cold").state == 1)
    k = Ising((16, 16), temperature=2.0, minority=0.1, seed=3).state
    assert (k == -1).sum() == round(0.1 * 256)
    c = CahnHilliard((16, 16), noise=0.3, mean=0.25, seed=4).state
    assert c.min() >= -0.05 and c.max() < 0.55


# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------

def test_bad_ising_input():
    for t in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="temperature"):
            Ising((8, 8), temperature=t)
    with pytest.raises(TypeError, match="temperature"):
        Ising((8, 8))
    with pytest.raises(TypeError, match="temperature"):
        Ising((8, 8), temperature="hot")
    with pytest.raises(ValueError, match="2-D or 3-D"):
        Ising((8,), temperature=2.0)
    with pytest.raises(ValueError, match="even sides"):
        Ising((8, 7), temperature=2.0)
    with pytest.raises(ValueError, match="multiples of 4"):
        Ising((8, 6), temperature=2.0, algorithm="kawasaki")
    with pytest.raises(ValueError, match="algorithm"):
        Ising((8, 8), temperature=2.0, algorithm="glauber")
    with pytest.raises(TypeError, match="integer array of \\+1 and -1, got dtype float64"):
        Ising(temperature=2.0, spins=np.ones((8, 8)))
    with pytest.raises(TypeError, match="got dtype bool"):
        Ising(temperature=2.0, spins=np.ones((8, 8), dtype=bool))
    with pytest.raises(ValueError, match="only \\+1 and -1"):
        Ising(temperature=2.0, spins=np.zeros((8, 8), dtype=np.int8))
    with pytest.raises(ValueError, match="disagree"):
        Ising((8, 4), temperature=2.0, spins=np.ones((8, 8), dtype=np.int8))
    with pytest.raises(ValueError, match="minority"):
        Ising((8, 8), temperature=2.0, minority=1.5)
    with pytest.raises(ValueError, match="seed"):
        Ising((8, 8), temperature=2.0, seed=-1)
    with pytest.raises(TypeError, match="seed"):
        Ising((8, 8), temperature=2.0, seed=1.5)
    ok = Ising(temperature=2.0, spins=np.where(np.eye(8) > 0, 1, -1))
    assert ok.state.dtype == np.int8
    for algorithm in ("metropolis", "kawasaki", "swendsen-wang"):   # extreme but valid
        for t in (1e-3, 1e6):
            Ising((8, 8), temperature=t, field=5.0, algorithm=algorithm).run(2)


def test_bad_cahn_hilliard_input():
    for name in ("dt", "mobility", "kappa", "dx"):
        with pytest.raises(ValueError, match=name):
            CahnHilliard((8, 8), **{name: 0.0})
    with pytest.raises(ValueError, match="noise"):
        CahnHilliard((8, 8), noise=-1.0)
    with pytest.raises(TypeError, match="float32 or float64"):
        CahnHilliard((8, 8), dtype=np.int32)
    with pytest.raises(TypeError, match="float32 or float64"):
        CahnHilliard((8, 8), dtype=np.float16)
    with pytest.raises(TypeError, match="float32 or float64, got dtype int64"):
        CahnHilliard(concentration=np.zeros((8, 8), dtype=np.int64))
    with pytest.raises(ValueError, match="NaN"):
        CahnHilliard(concentration=np.full((8, 8), np.nan))
    with pytest.raises(ValueError, match="2-D or 3-D"):
        CahnHilliard((4, 4, 4, 4))
    with pytest.raises(TypeError, match="xp"):
        CahnHilliard((8, 8), xp="numpy")


def test_bad_run_arguments():
    sim = Ising((8, 8), temperature=2.0)
    with pytest.raises(ValueError, match="steps"):
        sim.run(-1)
    with pytest.raises(TypeError, match="steps"):
        sim.run(2.5)
    with pytest.raises(ValueError, match="every"):
        sim.run(10, every=0, on_label=print)
    with pytest.raises(ValueError, match="together"):
        sim.run(10, on_label=print)
    with pytest.raises(ValueError, match="together"):
        sim.run(10, every=2)
    with pytest.raises(TypeError, match="callable"):
        sim.run(10, every=2, on_label="print")
    with pytest.raises(ValueError, match="label"):
        sim.run(10, every=2, on_label=print, label="left")
    with pytest.raises(ValueError, match="record"):
        sim.run(10, record=["entropy"])
    with pytest.raises(ValueError, match="connectivity"):
        sim.run(10, every=2, on_label=print, connectivity=3)
    with pytest.raises(TypeError, match="every"):
        sim.iterate(10, None)
    assert sim.step == 0                                        # nothing ran


def test_bad_checkpoints(tmp_path):
    np.savez(tmp_path / "other.npz", a=np.zeros(3))
    with pytest.raises(ValueError, match="not a meshccl.sim checkpoint"):
        meshccl.sim.load(tmp_path / "other.npz")
    sim = Ising((8, 8), temperature=2.0)
    sim.save(tmp_path / "ok.npz")
    with np.load(tmp_path / "ok.npz") as f:
        data = dict(f)
    data["version"] = np.array(99)
    np.savez(tmp_path / "future.npz", **data)
    with pytest.raises(ValueError, match="version 99"):
        meshccl.sim.load(tmp_path / "future.npz")


# ---------------------------------------------------------------------------
# GPU: the CuPy paths against the NumPy ones
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("rounds, counter, key, expected", KAT)
@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_gpu_philox_known_answers(rounds, counter, key, expected):
    import cupy

    words = sim_random.philox4x32((cupy.asarray([counter[0]] * 2, dtype=cupy.uint32),)
                                  + counter[1:], key, rounds)
    assert all(isinstance(w, cupy.ndarray) and w.dtype == cupy.uint32 for w in words)
    assert [int(w[1]) for w in words] == list(expected)
    idx = np.arange(10**5, dtype=np.uint64) * np.uint64(2**20 + 7)
    host = sim_random.words(3, 4, 2**33 + 5, idx)
    dev = sim_random.words(3, 4, 2**33 + 5, cupy.asarray(idx))
    assert all(np.array_equal(h, d.get()) for h, d in zip(host, dev))


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("dtype", [np.uint64, np.uint32, np.int32])
def test_gpu_words_equal_numpy_for_every_count(dtype):
    """The per-count CUDA kernels and the uint32 / int32 (label) fast path give
    NumPy's words."""
    import cupy

    idx = (np.arange(70_000, dtype=np.uint64) * np.uint64(40_009)) % np.uint64(2**31 - 1)
    idx = idx.astype(dtype)
    for count in (1, 2, 3, 4):
        host = sim_random.words(2**40 + 1, 3, 2**33 + 7, idx, count)
        dev = sim_random.words(2**40 + 1, 3, 2**33 + 7, cupy.asarray(idx), count)
        assert len(dev) == count
        assert all(d.dtype == cupy.uint32 and np.array_equal(h, d.get())
                   for h, d in zip(host, dev))


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("shape, field", [((32, 32), 0.0), ((16, 16, 16), 0.3)])
def test_gpu_ising_equals_numpy_bit_for_bit(tmp_path, algorithm, shape, field):
    import cupy

    kw = dict(temperature=2.3 if len(shape) == 2 else 4.4, field=field, algorithm=algorithm,
              seed=21, minority=0.3 if algorithm == "kawasaki" else None)
    cpu = Ising(shape, **kw)
    gpu_ = Ising(shape, xp=cupy, **kw)
    assert isinstance(gpu_.state, cupy.ndarray)
    assert np.array_equal(cpu.state, gpu_.state.get())
    seen = []
    out_c = cpu.run(12, record=("energy", "magnetisation"))
    out_g = gpu_.run(12, every=4, on_label=seen.append, record=("energy", "magnetisation"))
    assert np.array_equal(cpu.state, gpu_.state.get())
    for name in out_c:
        np.testing.assert_allclose(out_c[name], out_g[name], rtol=1e-12, atol=1e-12)
    assert [c.step for c in seen] == [4, 8, 12]
    last = seen[-1]
    assert isinstance(last.labels, cupy.ndarray)
    ref = cpu.labels("up")
    assert np.array_equal(ref.labels, last.labels.get()) and ref.n == last.n
    assert ref.largest_fraction == last.largest_fraction
    assert np.array_equal(ref.size_histogram()[0], last.size_histogram()[0].get())
    # a GPU checkpoint resumes on the CPU, bit for bit, and back
    gpu_.save(tmp_path / "g.npz")
    back = Ising.load(tmp_path / "g.npz")
    again = Ising.load(tmp_path / "g.npz", xp=cupy)
    back.run(3)
    again.run(3)
    cpu.run(3)
    assert np.array_equal(back.state, cpu.state) and np.array_equal(again.state.get(), cpu.state)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("algorithm, shape, field", [
    ("metropolis", (2, 2), 0.0), ("metropolis", (6, 10), 0.0), ("metropolis", (34, 18), 0.5),
    ("metropolis", (6, 10, 14), 0.3), ("metropolis", (2, 4, 6), 0.0),
    ("metropolis", (256, 1032), 0.0), ("metropolis", (40, 24, 72), 0.2),
    ("metropolis", (4, 66), 0.0), ("metropolis", (130, 96), 0.3), ("metropolis", (1024, 2048), 0.0),
    ("swendsen-wang", (7, 9), 0.0), ("swendsen-wang", (5, 3, 7), 0.0),
    ("swendsen-wang", (33, 65), 0.4), ("swendsen-wang", (130, 258), 0.0),
    ("swendsen-wang", (31, 17, 9), 0.0), ("swendsen-wang", (512, 520), 0.0),
    ("swendsen-wang", (2, 9), 0.0), ("swendsen-wang", (97, 3), 0.0),
    ("swendsen-wang", (1031, 2050), 0.0), ("swendsen-wang", (64, 64, 65), 0.0)])
def test_gpu_ising_kernels_equal_numpy_every_sweep(algorithm, shape, field):
    """meshccl/_kernels/ising.cu against the NumPy steps, sweep by sweep: rows that
    are not multiples of 8 or 32 (Metropolis: packed rows whose last word holds 1..15
    cells), odd sides (Swendsen-Wang), 3-D, fields, lattices of many blocks; the spins
    a sweep started from are left as they were."""
    import cupy

    kw = dict(temperature=2.3 if len(shape) == 2 else 4.4, field=field, algorithm=algorithm,
              seed=31)
    cpu = Ising(shape, **kw)
    dev = Ising(shape, xp=cupy, **kw)
    for sweep in range(6):
        before = dev.state
        kept = before.copy()
        cpu.run(1)
        dev.run(1)
        assert np.array_equal(cpu.state, dev.state.get()), sweep
        assert bool((before == kept).all())


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("shape", [(2048, 2048), (1000, 1056), (4096, 64), (64, 4096), (2, 2)])
def test_gpu_metropolis_sweeps_queued_back_to_back(shape):
    """Twelve 2-D sweeps queued without a wait (each colour's launch may start while
    the one before drains): the NumPy sweeps' spins."""
    import cupy

    from meshccl.sim.ising import _MetropolisSweeps, _pack, _unpack

    cpu = Ising(shape, temperature=2.269, field=0.1, seed=2**37 + 3)
    packed = _pack(cupy.asarray(cpu.state))
    sweeps = _MetropolisSweeps(packed, shape, cupy.asarray(cpu._metropolis), cpu.seed)
    for step in range(12):
        sweeps(step)
    cpu.run(12)
    assert np.array_equal(_unpack(packed, shape).get(), cpu.state)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("shape", [(4, 66), (130, 96), (256, 1032), (6, 10, 14), (40, 24, 72)])
def test_gpu_metropolis_two_words_a_thread(shape):
    """The Metropolis kernel's variant with two packed words a thread
    (_tuning.METROPOLIS_WORDS = 2) against the NumPy sweeps, sweep by sweep."""
    import cupy

    from meshccl import _tuning

    kw = dict(temperature=2.3 if len(shape) == 2 else 4.4, field=0.2, seed=33)
    cpu, dev = Ising(shape, **kw), Ising(shape, xp=cupy, **kw)
    with _tuning.override(METROPOLIS_WORDS=2):
        for sweep in range(4):
            cpu.run(1)
            dev.run(1)
            assert np.array_equal(cpu.state, dev.state.get()), sweep


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("shape", [(2, 2), (3, 33), (32, 32), (65, 31), (257, 1000),
                                   (2048, 2080)])
def test_gpu_swendsen_wang_chain_equals_numpy(shape):
    """The 2-D step on the GPU (the labelling chain drawing its bonds in its kernels and
    writing the spins) against the NumPy step, step by step at T_c and below, with the
    step's spins left as they were."""
    import cupy

    for temperature in (2.269, 1.6):
        cpu = Ising(shape, temperature=temperature, algorithm="sw", seed=2**34 + 5)
        dev = Ising(shape, temperature=temperature, algorithm="sw", seed=2**34 + 5,
                    xp=cupy)
        for step in range(4):
            before = dev.state
            kept = before.copy()
            cpu.run(1)
            dev.run(1)
            assert dev._sw_chain() is not None
            assert np.array_equal(cpu.state, dev.state.get()), (temperature, step)
            assert bool((before == kept).all())


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("shape, field", [((40, 70), 0.0), ((9, 12, 7), 0.0), ((33, 65), 0.4)])
def test_gpu_swendsen_wang_clusters_hook_equals_numpy(shape, field):
    """label='clusters' on the GPU: the last step's clusters labelled on demand (h = 0:
    the step itself writes no labels) equal the CPU's, 1..N, step after step; the spins
    stay equal."""
    import cupy

    kw = dict(temperature=2.3 if len(shape) == 2 else 4.4, field=field,
              algorithm="swendsen-wang", seed=77)
    cpu, dev = Ising(shape, **kw), Ising(shape, xp=cupy, **kw)
    seen_c, seen_g = [], []
    cpu.run(9, every=3, on_label=seen_c.append, label="clusters")
    dev.run(9, every=3, on_label=seen_g.append, label="clusters")
    assert [c.step for c in seen_g] == [3, 6, 9]
    for a, b in zip(seen_c, seen_g):
        assert isinstance(b.labels, cupy.ndarray) and a.n == b.n
        assert np.array_equal(a.labels, b.labels.get())
    assert np.array_equal(cpu.state, dev.state.get())


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("shape", [(34, 66), (16, 8, 40)])
def test_gpu_metropolis_packed_state_ties_and_images(shape):
    """The packed kernel where uniforms tie with thresholds (tie_table), then the
    state's views: the hooks' 'up' / 'down' phases (2-D: labelled from the packed words;
    3-D: images written from them), the int8 spins, the magnetisation from bit counts,
    all equal to NumPy's."""
    import cupy

    kw = dict(temperature=2.2, field=0.3, seed=2**35 + 1)
    cpu, dev = Ising(shape, **kw), Ising(shape, xp=cupy, **kw)
    cpu.run(2)
    dev.run(2)
    table, ties = tie_table(cpu)
    assert ties > 0
    cpu._metropolis, dev._metropolis = table, cupy.asarray(table)
    cpu.run(1)
    dev.run(1)
    assert dev._s is None                      # packed: nothing unpacked yet
    for phase, image in (("up", cpu.state > 0), ("down", cpu.state < 0)):
        got = dev._phase_image(phase)
        if len(shape) == 2:
            assert isinstance(got, PackedSpins), phase
        else:
            assert got.dtype == cupy.bool_ and np.array_equal(got.get(), image), phase
        for c in (1, 2):
            assert np.array_equal(dev.labels(phase, connectivity=c).labels.get(),
                                  cpu.labels(phase, connectivity=c).labels), (phase, c)
    assert dev._s is None
    assert dev.magnetisation() == cpu.magnetisation()
    assert dev.state.dtype == cupy.int8 and np.array_equal(dev.state.get(), cpu.state)
    assert dev.energy() == pytest.approx(cpu.energy(), rel=1e-12, abs=1e-12)
    assert np.array_equal(dev.labels("domains").labels.get(), cpu.labels("domains").labels)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("shape", [(16, 8, 40), (8, 6, 64), (4, 4, 2080)])
@pytest.mark.parametrize("phase", ["up", "down"])
def test_gpu_metropolis_3d_hook_image_from_the_sweep(shape, phase):
    """3-D hooks: the sweep before each labelled step writes the phase's image itself;
    the labels, counts and spins equal the CPU run's at every labelled step, and the
    image is the one the unpacking kernel writes."""
    import cupy

    from meshccl.sim.ising import _unpack

    kw = dict(temperature=4.0, field=0.1, seed=2**36 + 7)
    cpu, dev = Ising(shape, **kw), Ising(shape, xp=cupy, **kw)
    seen_c, seen_g, images = [], [], []

    def on_gpu(c):
        seen_g.append(c)
        assert dev._image is not None and dev._image[:2] == (phase, dev.step)
        images.append(bool((dev._image[2] == _unpack(dev._packed, shape, phase)).all()))

    cpu.run(7, every=3, on_label=seen_c.append, label=phase)
    dev.run(7, every=3, on_label=on_gpu, label=phase)
    assert [c.step for c in seen_g] == [3, 6] and all(images)
    for a, b in zip(seen_c, seen_g):
        assert np.array_equal(a.labels, b.labels.get()) and a.n == b.n
    assert dev._image is None            # step 7 was not labelled: no image written
    assert np.array_equal(cpu.state, dev.state.get())


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("n", [1, 7, 8, 255, 256, 257, 2051, 100_003, 1 << 20])
@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_gpu_flip_kernel_equals_numpy(n, dtype):
    """meshccl_ising_flip on label images of runs (1..40 cells, labels
    repeating far apart and across warps): the sign of each cell's label's
    word, as the NumPy flip draws it."""
    import cupy

    from meshccl.sim.ising import _sw_flip_fused

    rng = np.random.default_rng(n)
    runs = rng.integers(1, 40, size=n)
    labels = np.repeat(rng.integers(1, max(2, n // 5), size=n), runs)[:n].astype(dtype)
    sim = Ising((4, 4), temperature=2.3, algorithm="swendsen-wang", seed=2**40 + 3)
    sim.step = 2**33 + 1
    want = sim._sw_flip(labels)
    got = _sw_flip_fused(cupy.asarray(labels), sim.seed, sim.step)
    assert got.dtype == cupy.int8 and np.array_equal(want, got.get())


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(64, 64), (16, 16, 16)])
def test_gpu_cahn_hilliard(tmp_path, dtype, shape):
    import cupy

    kw = dict(dt=0.2, mean=-0.1, dtype=dtype, seed=6)
    cpu = CahnHilliard(shape, **kw)
    dev = CahnHilliard(shape, xp=cupy, **kw)
    assert np.array_equal(cpu.state, dev.state.get())          # the same Philox noise
    out = dev.run(120, record=("free_energy", "mean"))
    cpu.run(120)
    assert dev.state.dtype == dtype
    tol = 1e-9 if dtype == np.float64 else 2e-3                 # FFTs round differently
    np.testing.assert_allclose(dev.state.get(), cpu.state, atol=tol)
    assert np.abs(out["mean"] - out["mean"][0]).max() < (1e-13 if dtype == np.float64 else 2e-6)
    f = out["free_energy"]
    assert np.all(np.diff(f) <= (1e-12 if dtype == np.float64 else 1e-5) * np.abs(f[1:]))
    clusters = dev.labels("A")
    assert isinstance(clusters.labels, cupy.ndarray)
    with pytest.warns(RuntimeWarning):
        blow = CahnHilliard(shape, dt=40.0, seed=5, xp=cupy, dtype=dtype)
    with pytest.raises(SimulationError, match="blew up at step"):
        blow.run(500)
    assert bool(cupy.isfinite(blow.state).all()) and blow.step % blow.check_every == 0


# ---------------------------------------------------------------------------
# documentation
# ---------------------------------------------------------------------------

def test_docstring_examples():
    import doctest

    import meshccl.sim
    from meshccl.sim import cahn_hilliard, hooks, ising

    for module in (meshccl.sim, sim_random, exact, analysis, hooks, ising, cahn_hilliard):
        result = doctest.testmod(module)
        assert result.failed == 0, module.__name__
