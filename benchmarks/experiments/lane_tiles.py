"""A lane per banded tile (lane_tiles.cu) against runs2d.cu's warp per tile
(H100 experiment, 2026-11-26 night; benchmarks/NOTES.md).

For binary images at connectivity 2, the chain's tile kernel is replaced by
``meshccl_lanetile_band`` (a warp takes 32 tiles side by side, each lane
one tile and its own forest), which writes the slot form of the tile
kernel's output for every tile; the rest of the chain is the library's,
with strips off (the border kernel takes every tile border) and 512 slots
a tile.  For each case it checks, then times (CUDA events behind a busy
kernel, median of 20, two rounds):

  check     the new kernel's F, S, O, A, slots and piece roots against
            runs2d.cu's tile kernel in the same form (strips off, 512
            slots, every tile slotted), and the chain's labels against
            meshccl.label
  ref call  meshccl.label as it is (device ms)
  chains    the whole chain by its launches, with runs2d.cu's tile kernel
            as the library takes it (strips on, 192 slots, its own form),
            and with the lane kernel (strips off, 512 slots); per phase too

    python benchmarks/experiments/lane_tiles.py [--warps 2] [--big]"""
import argparse
from pathlib import Path

import _common  # noqa: F401  (sys.path)
import cupy
import numpy as np

import meshccl
from _common import busy, device_ms
from meshccl import patterns as PT
from meshccl._gpu import loader, mesh23

HERE = Path(__file__).resolve().parent
ap = argparse.ArgumentParser()
ap.add_argument("--warps", type=int, default=2)
ap.add_argument("--reps", type=int, default=20)
ap.add_argument("--big", action="store_true", help="only the 8192^2 timing cases")
ap.add_argument("--profile", action="store_true",
                help="one tile kernel of each kind on percolation .4073 (for ncu), nothing else")
args = ap.parse_args()
W = args.warps
NAME = f"meshccl_lanetile_band<int, {W}>"
mod = cupy.RawModule(code=(HERE / "lane_tiles.cu").read_text(),
                     options=("-std=c++17", f"-I{loader.kernel_dir()}"),
                     name_expressions=[NAME])
lane_k = mod.get_function(NAME)
bad = cupy.zeros(1, dtype=cupy.uint32)
DEFAULTS = (mesh23.RUNS_2D_STRIPS, mesh23.RUNS_2D_SLOTS)


def configure(lane):
    mesh23.RUNS_2D_STRIPS, mesh23.RUNS_2D_SLOTS = (False, 512) if lane else DEFAULTS


def chain(a, lane, slot_tiles=None, form=None):
    """[(name, launch)] of the chain on a (2-D uint8, c2), its label array
    and buffers: with the lane kernel (lane) or runs2d.cu's; in the lane
    kernel's form (strips off, 512 slots: form, default lane) or the
    library's."""
    configure(lane if form is None else form)
    v = a.reshape(-1)
    out = cupy.empty(a.size, dtype=cupy.int32)
    buffers = mesh23.scratch(a.size, out.dtype, a.shape, v.dtype)
    if slot_tiles is None:
        slot_tiles = lane
    steps = list(mesh23.steps(v, out, a.shape, 2, True, np.uint8(0), buffers=buffers,
                              slot_tiles=slot_tiles))
    if lane:
        ny, nx = a.shape
        n = a.size
        words = (n + 31) // 32
        bits, fs = buffers[0], buffers[4]
        rw = mesh23._runs_words(a.shape)
        A, H, F, S = bits[:words], bits[words:2 * words], fs[:rw], fs[rw:2 * rw]
        Q, O = buffers[5], buffers[6]
        ntx, nty = nx // 32, ny // 32
        grid = (-(-ntx // (32 * W)), nty)
        kargs = (v, out, A, H, F, S, np.int32(ny), np.int32(nx), Q, O, np.int32(512), bad)
        steps = [(nm, (lambda: lane_k(grid, (32 * W,), kargs)) if nm == "tile" else f)
                 for nm, f in steps]
    configure(False)
    return steps, out, buffers


def run(steps):
    n = None
    for _, f in steps:
        r = f()
        if r is not None:
            n = r
    return n


def outputs(a, steps, out, buffers):
    """The tile kernel's outputs after running only it."""
    out.fill(-1)
    for nm, f in steps:
        f()
        if nm == "tile":
            break
    n = a.size
    words = (n + 31) // 32
    rw = mesh23._runs_words(a.shape)
    bits, fs = buffers[0], buffers[4]
    S = fs[rw:2 * rw].copy()
    ny, nx = a.shape
    ntx = nx // 32
    # slots: only the used ones (popc of each tile's S)
    cnt = cupy.asnumpy(S).reshape(ntx, ny)
    per_tile = np.array([[sum(bin(int(w)).count("1") for w in cnt[tx, ty * 32:(ty + 1) * 32])
                          for tx in range(ntx)] for ty in range(ny // 32)]) if ntx * ny < 2 ** 20 \
        else None
    Q = cupy.asnumpy(buffers[5]).reshape(ny // 32, ntx, 512)
    used = None
    if per_tile is not None:
        used = np.concatenate([Q[ty, tx, :per_tile[ty, tx]] for ty in range(ny // 32)
                               for tx in range(ntx)])
    A = bits[:words].copy()
    roots = cupy.nonzero(cupy.unpackbits(A.view(cupy.uint8), bitorder="little"))[0]
    return dict(F=fs[:rw].copy(), S=S, A=A, H=bits[words:2 * words].copy(),
                O=buffers[6].copy(), P=out[roots].copy(), roots=roots, Q=used)


def check(name, a):
    ref = meshccl.label(a, connectivity=2)
    ok = True
    o = {}
    for lane in (False, True):
        steps, out, buffers = chain(a, lane, slot_tiles=True, form=True)
        o[lane] = outputs(a, steps, out, buffers)
    for key in ("F", "S", "A", "H", "O", "P", "Q"):
        x, y = o[False][key], o[True][key]
        if x is None:
            continue
        same = (x.shape == y.shape) and bool((cupy.asarray(x) == cupy.asarray(y)).all())
        if not same:
            ok = False
            print(f"  {name}: {key} differs", flush=True)
    steps, out, _ = chain(a, True)
    bad.fill(0)
    n = int(run(steps))
    same = bool((out.reshape(a.shape) == ref).all()) and n == int(ref.max())
    if int(bad[0]):
        print(f"  {name}: bad input flagged", flush=True)
    print(f"check {name}: outputs {'equal' if ok else 'DIFFER'}, labels "
          f"{'equal' if same else 'DIFFER'} (N {n})", flush=True)
    return ok and same


def phases(steps, reps):
    """Device ms of each launch (events between launches, behind a busy
    kernel), medians."""
    names = [nm for nm, _ in steps]
    ev = [cupy.cuda.Event() for _ in range(len(steps) + 1)]
    t = {nm: [] for nm in names}
    t["all"] = []
    run(steps)
    for _ in range(reps):
        busy(0.3)
        ev[0].record()
        for k, (_, f) in enumerate(steps):
            f()
            ev[k + 1].record()
        ev[-1].synchronize()
        for k, nm in enumerate(names):
            t[nm].append(cupy.cuda.get_elapsed_time(ev[k], ev[k + 1]))
        t["all"].append(cupy.cuda.get_elapsed_time(ev[0], ev[-1]))
    return {k: float(np.median(x)) for k, x in t.items()}


if args.profile:
    x = PT.percolation((8192, 8192), 0.4073, xp=cupy).astype(cupy.uint8)
    for lane in (False, True):
        steps, out, _ = chain(x, lane, slot_tiles=True, form=True)
        for nm, f in steps:
            f()
            if nm == "tile":
                break
    cupy.cuda.Device().synchronize()
    raise SystemExit(0)

rng = np.random.default_rng(7)
small = []
for p in (0.1, 0.3, 0.4073, 0.5927, 0.8, 1.0):
    small.append((f"perc 256x512 p={p}", (rng.random((256, 512)) < p).astype(np.uint8)))
alt = np.zeros((64, 64), np.uint8)
alt[:, ::2] = 1
alt[1::2, :] = 0  # 16 band runs in every band, none joined: 256 nodes a tile
small.append(("columns 64^2", alt))
chk = np.indices((96, 128)).sum(0) % 2
small.append(("checker 96x128", chk.astype(np.uint8)))
small.append(("zeros 64^2", np.zeros((64, 64), np.uint8)))
small.append(("wide 32x2048", (rng.random((32, 2048)) < 0.45).astype(np.uint8)))
small.append(("tall 2048x32", (rng.random((2048, 32)) < 0.45).astype(np.uint8)))
if not args.big:
    good = True
    for name, x in small:
        good &= check(name, cupy.asarray(x))
    for name, x in (("spiral 1024^2", PT.spiral(1024, xp=cupy)),
                    ("blobs 1024^2", PT.blobs((1024, 1024), xp=cupy)),
                    ("perc 1024^2 p=.4073", PT.percolation((1024, 1024), 0.4073, xp=cupy))):
        good &= check(name, x.astype(cupy.uint8))
    print("all checks", "passed" if good else "FAILED", flush=True)

cases = [("perc 8192^2 p=.4073", PT.percolation((8192, 8192), 0.4073, xp=cupy)),
         ("perc 8192^2 p=.5927", PT.percolation((8192, 8192), 0.5927, xp=cupy)),
         ("blobs 4096^2", PT.blobs((4096, 4096), xp=cupy)),
         ("spiral 4096^2", PT.spiral(4096, xp=cupy))]
for name, x in cases:
    x = x.astype(cupy.uint8)
    ref = meshccl.label(x, connectivity=2)
    steps, out, _ = chain(x, True)
    run(steps)
    same = bool((out.reshape(x.shape) == ref).all())
    call = device_ms(lambda: meshccl.label(x, connectivity=2), 40)
    # the library's own chain (its tile kernel form: slots only where they
    # fit, as its plan picks them)
    ch_old, _, _ = chain(x, False, slot_tiles=mesh23.chooses_slots(x.shape, x.dtype))
    rows = []
    for rnd in range(2):
        for lane in ((False, True) if rnd == 0 else (True, False)):
            st = chain(x, True)[0] if lane else ch_old
            rows.append((lane, phases(st, args.reps)))
    for lane in (False, True):
        ps = [p for l_, p in rows if l_ == lane]
        keys = list(ps[0])
        txt = " ".join(f"{k} {min(p[k] for p in ps):.4f}-{max(p[k] for p in ps):.4f}"
                       for k in keys)
        print(f"{name:20s} {'lane' if lane else 'warp'} | {txt}", flush=True)
    print(f"{name:20s} ref call device {call:.4f} ms; lane chain labels "
          f"{'equal' if same else 'DIFFER'}", flush=True)
