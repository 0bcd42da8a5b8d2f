"""``label(..., return_counts=True)`` on the GPU, its host side and its mask
arithmetic, run without a GPU.

CI has no GPU, so the counted kernels themselves run only on the device
machine (tests/test_counts.py).  Here:

- every launch of the counted chains (meshccl/_gpu/counted.py: the plain
  and lattice chains of image_plain.py with meshccl_clear_counts and their
  ``_counted`` label pass, and the general chain with number_roots.py's
  relabel_counted) is checked against
  its kernel's C signature, parsed from the .cu sources (count, pointer or
  value, element and scalar types), on a stand-in ``cupy`` module whose
  arrays are NumPy arrays and whose fresh arrays hold junk;
- the kernels are emulated only as far as the host's order of things
  shows: N is written by the roots kernel (image_plain.py's chains) or the
  scan (general); on image_plain.py's chains the host reads N after the
  roots kernel and makes a table of N + 1 rows for the launches after it,
  meshccl_clear_counts zeroes rows 0..N and the label pass counts every
  label, 0 included; on the general chain the host reads N, makes and
  zeroes N + 1 rows, and sets row 0 itself;
- the run count of meshccl_label_runs_counted (the foreground cells from a
  run start to before the next start, by masks) is mirrored in Python and
  checked against the label pass's own assignment of cells to runs, on
  random rows and on the rows of bands (runs with holes).
"""

import ctypes
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import meshccl
from meshccl import _tuning, patterns

KERNELS = Path(__file__).resolve().parents[1] / "meshccl" / "_kernels"


# ---------------------------------------------------------------- signatures

def _signatures():
    """{kernel name: [parameter type, ...]} of every __global__ in the sources."""
    out = {}
    # (the lattice features' parameters, a macro in lattice.cuh)
    macro = re.search(r"#define MESHCCL_PLANE_FEATURES\s*\\\n(.*?[^\\])\n",
                      (KERNELS / "lattice.cuh").read_text(), re.S).group(1)
    features = re.sub(r"\s*\\\n\s*", " ", macro).strip()
    for path in KERNELS.glob("*.cu"):
        text = re.sub(r"//[^\n]*", "", path.read_text())
        text = re.sub(r"\bMESHCCL_PLANE_FEATURES\b(?!_)", features, text)
        bounds = r"__launch_bounds__\((?:[^()]|\([^()]*\))*\)\s+"
        for m in re.finditer(r"__global__\s+void\s+(?:" + bounds + r")?(meshccl_\w+)\s*\(", text):
            depth, k = 1, m.end()
            while depth:
                depth += {"(": 1, ")": -1}.get(text[k], 0)
                k += 1
            # (split at commas outside template brackets: Rule<T, Tol>::K)
            params = [p.strip() for p in re.split(r",(?![^<>]*>)", text[m.end():k - 1])]
            types_ = [re.sub(r"\s+", " ", re.sub(r"\b\w+$", "", p.replace("__restrict__", "")))
                      .replace(" *", "*").strip() for p in params]
            out.setdefault(m.group(1), types_)
    return out


SIGNATURES = _signatures()
POINTEE = {"unsigned": np.uint32, "unsigned short": np.uint16, "unsigned long long": np.int64,
           "long long": np.int64, "int": np.int32}
SCALARS = {"int": np.int32, "unsigned": np.uint32, "long long": np.int64, "double": np.float64}


def _check_signature(name, targs, args):
    """``args`` as CuPy would pass them to kernel ``name<targs>``."""
    base = name
    sig = SIGNATURES[base]
    # (parameters from a macro, or of a template type: runs2d.cu's lattice
    # kernels and general.cu's, not checked)
    if any(not t or "(" in t or "<" in t or ">" in t for t in sig):
        return
    assert len(args) == len(sig), f"{name}: {len(args)} arguments for {len(sig)} parameters"
    index = {"int": np.int32, "long long": np.int64}[targs[1] if base.startswith(
        ("meshccl_runs", "meshccl_cells", "meshccl_general")) and "_packed_" not in base
        and base not in ("meshccl_runsnd_unions", "meshccl_runs3d_structure_faces")
        else targs[0]]
    for k, (a, t) in enumerate(zip(args, sig)):
        t = t.replace("const ", "")
        where = f"{name} argument {k} ({t})"
        if t.endswith("*"):
            pointee = t[:-1].strip()
            if isinstance(a, np.uintp):  # a null pointer
                assert a == 0, where
                continue
            assert isinstance(a, FakeArray), f"{where}: got {type(a).__name__}"
            if pointee == "I":
                assert a.dtype == index, f"{where}: got {a.dtype}"
            elif pointee == "unsigned long long":  # (64-bit words, either sign)
                assert a.dtype in (np.int64, np.uint64), f"{where}: got {a.dtype}"
            elif pointee in POINTEE:
                assert a.dtype == POINTEE[pointee], f"{where}: got {a.dtype}"
        elif t == "I":
            assert type(a) is index, f"{where}: got {type(a).__name__}"
        elif t in SCALARS:
            assert type(a) is SCALARS[t], f"{where}: got {type(a).__name__}"


# ---------------------------------------------------------------- stand-in cupy

class FakeArray(np.ndarray):
    def get(self):
        return np.asarray(self).copy()

    def __getitem__(self, key):
        """An element of a 1-D array is a 0-d view, as in CuPy (a launch's
        result is one, read after the kernels ran)."""
        if self.ndim == 1 and isinstance(key, (int, np.integer)):
            k = int(key) + (self.shape[0] if key < 0 else 0)
            if not 0 <= k < self.shape[0]:
                raise IndexError(key)
            return super().__getitem__(slice(k, k + 1)).reshape(())
        return super().__getitem__(key)

    @property
    def data(self):
        """CuPy's MemoryPointer, as far as a Memset uses it."""
        return types.SimpleNamespace(ptr=self.__array_interface__["data"][0])


FakeArray.__module__ = "cupy"


def _fake(a):
    return np.ascontiguousarray(a).view(FakeArray)


class Truth:
    """What the emulated chain computes: the labels of the case (the CPU's)."""
    labels = None
    launches = []


def _fake_cupy():
    cp = types.ModuleType("cupy")
    cp.ndarray = FakeArray
    for t in ("uint8", "uint16", "uint32", "int32", "int64", "bool_"):
        setattr(cp, t, getattr(np, t))

    def empty(shape, dtype=np.float64):
        a = np.empty(shape, dtype=dtype)
        a.fill(-7 if np.dtype(dtype).kind == "i" else 7)  # junk: a read before a write shows
        return a.view(FakeArray)

    cp.empty = empty
    cp.zeros = lambda shape, dtype=np.float64: np.zeros(shape, dtype=dtype).view(FakeArray)
    cp.ones = lambda shape, dtype=np.float64: np.ones(shape, dtype=dtype).view(FakeArray)
    cp.asarray = lambda a, dtype=None: _fake(np.asarray(a, dtype=dtype))
    cp.cuda = types.SimpleNamespace(
        Device=lambda *a: types.SimpleNamespace(id=0),
        get_current_stream=lambda: types.SimpleNamespace(ptr=0, synchronize=lambda: None,
                                                         is_capturing=lambda: False),
        runtime=types.SimpleNamespace(
            memsetAsync=lambda ptr, value, size, stream: ctypes.memset(ptr, value, size)))
    return cp


class Kernel:
    """An emulated kernel: checks its arguments, then does what the host
    can see of it."""

    max_dynamic_shared_size_bytes = 1 << 20

    def __init__(self, expr):
        self.expr = expr
        self.name, targs = re.fullmatch(r"(\w+)<(.*)>", expr).groups()
        self.targs = [t.strip() for t in targs.split(",")]

    def __call__(self, grid, block, args, shared_mem=0):
        _check_signature(self.name, self.targs, args)
        Truth.launches.append(self.name)
        L = Truth.labels.ravel()
        n = L.size
        name = self.name
        if name == "meshccl_piece_roots":  # N in the block sums' scan
            block_incl = args[6]
            block_incl[:] = L.max(initial=0)
        elif name == "meshccl_clear_counts":  # rows 0..N, N read on the device
            counts, total = args
            assert counts.shape == (int(total[0]) + 1,) and total.shape == (1,), \
                "a row a label, and one for the background"
            counts[:] = 0
        elif name == "meshccl_label_runs":
            args[0][:] = L
        elif name == "meshccl_label_runs_counted":
            P, counts = args[0], args[-1]
            num = L.max(initial=0)
            assert counts.shape == (num + 1,) and not counts.any(), \
                "the table: rows 0..N, zeroed (by meshccl_clear_counts)"
            assert Truth.launches[-3] == "meshccl_clear_counts"
            P[:] = L
            counts[:num + 1] += np.bincount(L, minlength=num + 1)  # (row 0 too)
        elif name == "meshccl_general_tile":  # the forest: each cell at its component's first
            P = args[1]
            first = np.full(L.max(initial=0) + 1, -1, np.int64)
            first[L[::-1]] = np.arange(n)[::-1]
            P[:] = np.where(L > 0, first[L], -1)
        elif name == "meshccl_flatten":
            P, _, bits, per_word = args
            roots = (np.asarray(P) == np.arange(n)).astype(np.uint64)
            roots = np.concatenate([roots, np.zeros(-n % 32, np.uint64)]).reshape(-1, 32)
            bits[:] = (roots << np.arange(32, dtype=np.uint64)).sum(axis=1).astype(np.uint32)
            per_word[:] = roots.sum(axis=1)
        elif name == "meshccl_scan_block":
            counts, incl, words = args
            incl[:int(words)] = np.cumsum(counts[:int(words)])
        elif name == "meshccl_word_sums":
            bits, words, sums = args
            pop = np.array([bin(int(b)).count("1") for b in bits[:int(words)]])
            for b in range(grid[0]):
                sums[b] = pop[b * block[0]:(b + 1) * block[0]].sum()
        elif name == "meshccl_rank_words":
            bits, sums_incl, words, incl = args
            pop = np.array([bin(int(b)).count("1") for b in bits[:int(words)]])
            for b in range(grid[0]):
                part = np.cumsum(pop[b * block[0]:(b + 1) * block[0]])
                incl[b * block[0]:b * block[0] + part.size] = (sums_incl[b - 1] if b else 0) + part
        elif name == "meshccl_relabel_counted":  # (as number_roots.cu, lane by lane)
            P, nn, bits, incl, counts = args
            assert counts.shape == (int(incl[-1]) + 1,) and not counts.any()
            for i in range(int(nn)):
                r = int(P[i])
                label = 0 if r < 0 else int(incl[r >> 5]) - bin(int(bits[r >> 5]) >> (r & 31)) \
                    .count("1") + 1
                P[i] = label
                if label > 0:
                    counts[label] += 1


@pytest.fixture
def emulated(monkeypatch):
    cp = _fake_cupy()
    monkeypatch.setitem(sys.modules, "cupy", cp)
    from meshccl._gpu import (image_general, image_plain, iterative, number_roots,
                              runs3d_structure, runs_nd)

    def kernels(source, *names):
        return tuple(Kernel(n) for n in names)

    for mod in (image_plain, number_roots, image_general, iterative, runs_nd, runs3d_structure):
        monkeypatch.setattr(mod, "kernels", kernels)
    image_general._device_geometry.cache_clear()
    image_general._dummy.cache_clear()
    runs_nd._device_table.cache_clear()
    yield cp
    image_general._device_geometry.cache_clear()
    image_general._dummy.cache_clear()
    runs_nd._device_table.cache_clear()


CASES = [
    ("1-D", (np.arange(1000) // 3 % 4).astype(np.uint8), {}),
    ("2-D bytes", patterns.percolation((130, 170), 0.5927, seed=1), {}),
    ("2-D bool", patterns.percolation((64, 100), 0.5, seed=2).astype(bool), dict(connectivity=1)),
    ("2-D wide", patterns.blobs((70, 90), seed=3).astype(np.int32), {}),
    ("2-D all background", np.zeros((40, 50), np.uint8), {}),
    ("3-D bytes", patterns.percolation((9, 40, 50), 0.3116, seed=4), dict(connectivity=1)),
    ("3-D uint16", patterns.blobs((9, 30, 40), seed=5).astype(np.uint16), {}),
    ("4-D", np.random.default_rng(6).integers(0, 2, (3, 4, 5, 6)).astype(np.uint8), {}),
    ("4-D bool", np.random.default_rng(12).random((3, 4, 5, 40)) < 0.3, {}),
    ("4-D bool c1", np.random.default_rng(13).random((2, 3, 4, 64)) < 0.5,
     dict(connectivity=1)),
    ("mask", patterns.blobs((60, 70), seed=7),
     dict(mask=np.random.default_rng(8).random((60, 70)) < 0.8)),
    ("periodic", patterns.percolation((50, 60), 0.5927, seed=9), dict(periodic=True)),
    ("axes", patterns.blobs((5, 30, 40), seed=10), dict(axes=(1, 2))),
    ("long scan", patterns.percolation((130, 170), 0.5927, seed=11),
     dict(mask=np.ones((130, 170), bool))),
    ("3-D mask", patterns.percolation((20, 40, 70), 0.3116, seed=12).astype(np.uint16),
     dict(mask=np.random.default_rng(13).random((20, 40, 70)) < 0.8)),
    ("3-D periodic mask", patterns.blobs((9, 33, 40), seed=14),
     dict(periodic=True, mask=np.random.default_rng(15).random((9, 33, 40)) < 0.8)),
    # (meshccl.ndimage.label's structures: the runs3d-structure and runsnd chains)
    ("3-D structure", np.random.default_rng(16).random((9, 33, 40)) < 0.4,
     dict(structure=np.indices((3, 3, 3)).sum(0) % 2 == 0)),
    ("2-D structure", np.random.default_rng(17).random((40, 70)) < 0.5,
     dict(structure=np.eye(3, dtype=bool))),
]


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("case", [c[0] for c in CASES])
def test_counted_chains_emulated(emulated, case, dtype):
    import dataclasses

    from meshccl import _validate
    from meshccl._gpu import chains

    _, a, kw = next(c for c in CASES if c[0] == case)
    if "structure" in kw:
        import scipy.ndimage as ndi

        from meshccl import neighbourhood

        want = ndi.label(a, kw["structure"])[0]
        offsets = neighbourhood.structure_offsets(kw["structure"])
    else:
        want, offsets = meshccl.label(a, **kw), None
    prob = _validate.prepare(a, None, kw.get("connectivity"), None, periodic=kw.get(
        "periodic", False), mask=kw.get("mask"), axes=kw.get("axes"), return_counts=True,
        offsets=offsets)
    Truth.labels = np.ascontiguousarray(want.reshape(prob.shape)).astype(np.int64)
    Truth.launches = []
    prob = dataclasses.replace(prob, values=_fake(prob.values),
                               mask=None if prob.mask is None else _fake(prob.mask))
    P = emulated.empty(prob.size, dtype=dtype)
    scan = 8 if case == "long scan" else _tuning.ROOTS_ONE_BLOCK_SCAN_WORDS  # (3 launches)
    for slots, share in ((_tuning.RUNS_2D_SLOTS, 0.0), (0, 0.0)):
        with _tuning.override(RUNS_2D_SLOTS=slots, RUNS_2D_SLOTS_SHARE={1: share, 2: share},
                              ROOTS_ONE_BLOCK_SCAN_WORDS=scan):
            num, counts = chains.label(dataclasses.replace(prob, work_dtype=np.dtype(dtype)), P)[:2]
            assert isinstance(num, int) and num == want.max(initial=0)
            assert isinstance(counts, FakeArray) and counts.dtype == np.int64
            np.testing.assert_array_equal(P, Truth.labels.ravel())
            np.testing.assert_array_equal(counts, np.bincount(want.ravel(), minlength=num + 1))
    # (a stack of images over the last axes takes the plain 2-D chain too)
    plain = not {"mask", "periodic"} & set(kw) and (a.ndim <= 3 or a.dtype == bool)
    lattice = {"mask", "periodic"} & set(kw) and a.ndim <= 3
    counted = [k for k in Truth.launches if k.endswith("_counted")]
    if plain or lattice:
        assert counted and set(counted) == {"meshccl_label_runs_counted"}, Truth.launches
        assert "meshccl_label_runs" not in Truth.launches
    else:
        assert set(counted) == {"meshccl_relabel_counted"}, Truth.launches
    # every kernel launched is one the chain's row of the table names
    chain = chains.select(prob).chain
    named = set(re.findall(r"meshccl_\w+", " ".join(chain.steps + (chain.counts,))))
    assert set(Truth.launches) - named <= {"meshccl_clear_counts"}, (chain.name, Truth.launches)


@pytest.mark.parametrize("shape", [(50, 66), (64, 64), (6, 2)])
@pytest.mark.parametrize("phase", ["up", "down"])
@pytest.mark.parametrize("connectivity", [1, 2])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_packed_chain_emulated(emulated, shape, phase, connectivity, dtype):
    """label() of packed Ising spins (meshccl._validate.PackedSpins): the
    packed chain's launches match their kernels' C signatures, the chain's
    row names every kernel, and N and counts come back as on the plain
    chains (rows 0..N of the table, counted by the label pass)."""
    import dataclasses

    from meshccl import _validate
    from meshccl._gpu import chains
    from test_packed_spins import packed_by_hand

    s = np.where(np.random.default_rng(sum(shape)).random(shape) < 0.55, 1, -1).astype(np.int8)
    want = meshccl.label(s > 0 if phase == "up" else s < 0, connectivity=connectivity,
                         periodic=True)
    for counted in (False, True):
        prob = _validate.prepare(_validate.PackedSpins(_fake(packed_by_hand(s)), shape, phase),
                                 None, connectivity, None, periodic=True,
                                 return_counts=counted)
        assert chains.select(prob).chain.name == "runs2d-packed"
        assert prob.values.dtype == np.uint64 and prob.values.size == 2 * shape[0] * -(
            -shape[1] // 32)
        Truth.labels = want.astype(np.int64)
        Truth.launches = []
        P = emulated.empty(prob.size, dtype=dtype)
        num, counts = chains.label(dataclasses.replace(prob, work_dtype=np.dtype(dtype)), P)[:2]
        assert int(num) == want.max(initial=0)
        np.testing.assert_array_equal(P, want.ravel())
        if counted:
            np.testing.assert_array_equal(counts, np.bincount(want.ravel(), minlength=num + 1))
        else:
            assert counts is None
        chain = chains.select(prob).chain
        named = set(re.findall(r"meshccl_\w+", " ".join(chain.steps + (chain.counts,))))
        assert {"meshccl_runs2d_packed_tile", "meshccl_runs2d_packed_border",
                "meshccl_runs2d_packed_wrap"} <= set(Truth.launches)
        assert set(Truth.launches) - named <= {"meshccl_clear_counts"}, Truth.launches


def test_uncounted_program_unchanged(emulated):
    """program() without a table asks for the kernels and arguments it
    always did; with one, meshccl_clear_counts comes right after the roots
    kernel and the label pass takes its _counted form with the table
    last."""
    from meshccl._gpu import image_plain
    from meshccl._gpu.launch import COUNTS, LABELS, VALUES

    for shape, dt in (((100, 130), np.uint8), ((9, 40, 50), np.uint8), ((9, 30, 40), np.uint16),
                      ((1000,), np.int16)):
        for index in (np.int32, np.int64):
            n = int(np.prod(shape))
            buffers = image_plain.scratch(n, index, shape)
            args = (dt, index, n, shape, 1, True, dt(0), buffers)
            plain = image_plain.program(*args)
            table = COUNTS
            counted = image_plain.program(*args, counts=table)
            names = [k for k, _ in plain]
            at = names.index("roots") + 1
            assert [k for k, _ in counted] == names[:at] + ["clear counts"] + names[at:]
            clear = counted.pop(at)[1]
            assert clear.fn.name == "meshccl_clear_counts" and clear.args[0] is table
            stand_in = {id(VALUES): _fake(np.zeros(n, dt)), id(LABELS): _fake(np.zeros(n, index)),
                        id(COUNTS): _fake(np.zeros(n + 1, np.int64))}
            _check_signature(clear.fn.name, clear.fn.targs,
                             tuple(stand_in.get(id(x), x) for x in clear.args))
            assert _same(clear.args[1], plain[-1][1].result.reshape(1))
            for (name, a), (_, b) in zip(plain, counted):
                if not hasattr(a, "fn"):
                    continue
                for launch in (a, b):  # both forms against their C signatures
                    _check_signature(launch.fn.name, launch.fn.targs,
                                     tuple(stand_in.get(id(x), x) for x in launch.args))
                if a.fn.name == "meshccl_label_runs":
                    assert b.fn.name == a.fn.name + "_counted"
                    assert b.fn.targs == a.fn.targs
                    assert b.args[-1] is table and len(b.args) == len(a.args) + 1
                    assert all(_same(x, y) for x, y in zip(a.args, b.args))
                else:
                    assert b.fn.expr == a.fn.expr and len(a.args) == len(b.args)
                    assert all(_same(x, y) for x, y in zip(a.args, b.args))


def _same(x, y):
    """The same kernel argument: one placeholder, a view of the same memory,
    or an equal scalar of one type."""
    if isinstance(x, np.ndarray):
        return (isinstance(y, np.ndarray) and x.dtype == y.dtype and x.shape == y.shape
                and x.__array_interface__["data"] == y.__array_interface__["data"])
    if isinstance(x, np.generic):
        return type(x) is type(y) and x == y
    return x is y


# ---------------------------------------------------------------- the run count's masks

def _popc(x):
    return bin(x & 0xFFFFFFFF).count("1")


def run_cells(f, s, b, width):
    """meshccl_label_runs_counted's count for the run starting at bit b."""
    full = 0xFFFFFFFF
    inside = full if width >= 32 else (1 << width) - 1
    later = s & ~(((2 << b) & full) - 1) & full
    before = ((later & -later) - 1) & full if later else full
    return _popc(f & inside & before & ~((1 << b) - 1))


def label_pass(f, s, width):
    """The label pass's own assignment: cell c belongs to the last run
    start at or before it, if its bit of f is set (runs by their start)."""
    out = {}
    cur = None
    for c in range(32):
        if (s >> c) & 1:
            cur = c
        if c < width and (f >> c) & 1:
            assert cur is not None, "a foreground cell before any run start"
            out[cur] = out.get(cur, 0) + 1
    return out


def band_masks(top, bottom):
    """runs.cuh's band_top and band_firsts (the run starts a band's rows
    store in S)."""
    full = 0xFFFFFFFF
    B = top | bottom
    starts = B & ~(B << 1) & full
    return ((B & ~top) + starts) & top & full, ((B & ~bottom) + starts) & bottom & full


def test_run_count_masks():
    rng = np.random.default_rng(1)
    rows = []
    for _ in range(3000):
        width = int(rng.choice([32, 32, 31, 1, int(rng.integers(1, 33))]))
        inside = (1 << width) - 1
        f = int(rng.integers(0, 2**32)) & inside
        if rng.random() < 0.3:
            f = inside & ~(1 << int(rng.integers(0, 32)))
        eq = int(rng.integers(0, 2**32)) & f & (f << 1)  # equal to the left neighbour
        rows.append((f, f & ~eq & 0xFFFFFFFF, width))
        top = int(rng.integers(0, 2**32)) & inside
        bottom = int(rng.integers(0, 2**32)) & inside
        st, sb = band_masks(top, bottom)
        rows += [(top, st, width), (bottom, sb, width)]
    rows += [(0xFFFFFFFF, 1, 32), (0xFFFFFFFF, 1 << 31 | 1, 32), (1 << 31, 1 << 31, 32),
             (0, 0, 32), (0xFFFFFFFF, 0xFFFFFFFF, 32), (0x5, 0x5, 3)]
    for f, s, width in rows:
        want = label_pass(f, s, width)
        got = {b: run_cells(f, s, b, width) for b in range(32) if (s >> b) & 1 and b < width}
        assert {b: c for b, c in got.items() if c} == want, (hex(f), hex(s), width)
        assert all(got[b] > 0 for b in got), "every run start is a foreground cell"


def test_lattice_and_stack_programs_match_signatures(emulated):
    """The lattice form of the 2-D chain and stacks of images (image_rows)
    pass every kernel the arguments of its C signature: periodic axes, a
    mask, bonds, a tolerance, with one image and with a stack."""
    from meshccl._gpu import image_plain
    from meshccl._gpu.launch import BONDS, LABELS, MASK, VALUES

    shape = (120, 70)
    n = int(np.prod(shape))
    for index in (np.int32, np.int64):
        for image_rows in (None, 1, 24, 37 + 3):
            if image_rows is not None and shape[0] % image_rows:
                continue
            feats = [dict(periodic=1), dict(periodic=2), dict(periodic=3), dict(mask=True),
                     dict(tolerance=1.0, periodic=3), dict(bonds=True, bond_rows=[0, 1, 2, 3])]
            progs = [image_plain.program(np.uint8, index, n, shape, 2, True, np.uint8(0),
                                         image_rows=image_rows)]
            for kw in feats:
                dt = np.float32 if "tolerance" in kw else np.uint8
                key = np.float64(0) if "tolerance" in kw else np.uint8(0)
                progs.append(image_plain.lattice_program(dt, index, n, shape, 2, True, key,
                                                         image_rows=image_rows, **kw))
            for prog in progs:
                for name, launch in prog:
                    if not hasattr(launch, "fn"):
                        continue
                    stand_in = {id(VALUES): _fake(np.zeros(n, np.uint8)),
                                id(LABELS): _fake(np.zeros(n, index)),
                                id(MASK): _fake(np.zeros(n, np.uint8)),
                                id(BONDS): _fake(np.zeros(4 * n, np.uint8))}
                    _check_signature(launch.fn.name, launch.fn.targs,
                                     tuple(stand_in.get(id(x), x) for x in launch.args))
