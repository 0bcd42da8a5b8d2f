"""Time each phase of the GPU mesh path with CUDA events on the standard
cases: a diagnostic for benchmarks/NOTES.md.

Both GPU paths for plain images run side by side: 'fixed' (kernels/mesh23.cu
and the pieces path of relabel.cu, what label() uses for 1 to 3 axes) and
'general' (the n-D kernels of mesh.cu, then flatten / scan / relabel).

    python benchmarks/phases.py [--only NAME] [--reps N]
"""

import cupy
import numpy as np

from meshccl import patterns as P
from meshccl._gpu import mesh23
from meshccl._gpu.mesh import mesh_steps
from meshccl._gpu.relabel import relabel_steps


def phases(a, conn, path, reps=10, tiles=None, slot_tiles=True):
    v = a.reshape(-1)
    shape = tuple(s for s in a.shape if s != 1)
    out = cupy.empty(a.size, dtype=cupy.int32)
    if path == "fixed":
        steps = mesh23.steps(v, out, shape, conn, True, np.uint8(0),
                             buffers=mesh23.scratch(a.size, out.dtype, shape, v.dtype), tiles=tiles,
                             slot_tiles=slot_tiles)
    else:
        steps = mesh_steps(v, out, shape, conn, True, np.uint8(0)) + relabel_steps(out, a.size)
    ev = [cupy.cuda.Event() for _ in range(len(steps) + 1)]
    times = {name: [] for name, _ in steps}
    totals = []
    for rep in range(reps + 1):
        ev[0].record()
        for k, (name, f) in enumerate(steps):
            f()
            ev[k + 1].record()
        ev[-1].synchronize()
        if rep == 0:
            continue  # warm-up (compilation, caches)
        for k, (name, _) in enumerate(steps):
            times[name].append(cupy.cuda.get_elapsed_time(ev[k], ev[k + 1]))
        totals.append(cupy.cuda.get_elapsed_time(ev[0], ev[-1]))
    return {k: float(np.median(x)) for k, x in times.items()}, float(np.median(totals))


def standard_cases(dims=(2, 3)):
    """The benchmark's patterns at their standard sizes as CuPy arrays
    (percolation at both thresholds: c1's and the full connectivity's), as (name, array)
    pairs, 2-D and / or 3-D."""
    cases = []
    if 2 in dims:
        cases += [("spiral 4096^2", P.spiral(4096, xp=cupy)),
                  ("blobs 4096^2", P.blobs((4096, 4096), xp=cupy)),
                  ("perc 8192^2 p=.5927", P.percolation((8192, 8192), 0.5927, xp=cupy)),
                  ("perc 8192^2 p=.4073", P.percolation((8192, 8192), 0.4073, xp=cupy)),
                  ("potts4 4096^2", P.potts((4096, 4096), 4, xp=cupy))]
    if 3 in dims:
        cases += [("potts4 256^3", P.potts((256,) * 3, 4, xp=cupy)),
                  ("blobs 512^3", P.blobs((512,) * 3, xp=cupy)),
                  ("perc 512^3 p=.3116", P.percolation((512,) * 3, 0.3116, xp=cupy)),
                  ("perc 512^3 p=.1369", P.percolation((512,) * 3, 0.1369, xp=cupy))]
    return cases


def report(tag, cases, keys=None, reps=10, slot_tiles=True):
    """One line per case and connectivity (1 and full) of the fixed path's
    phases, prefixed by ``tag`` (an experiment's variant); ``keys``: the
    phases to show (all by default), the total always; ``slot_tiles``: the
    2-D tile kernel with slots or without (mesh23.program)."""
    for name, a in cases:
        for c in (1, a.ndim):
            r, total = phases(a, c, "fixed", reps, slot_tiles=slot_tiles)
            shown = r if keys is None else {k: r[k] for k in keys}
            print(f"{tag} {name:20s} c={c} " + " ".join(f"{k} {x:.3f}" for k, x in shown.items())
                  + f" | total {total:.3f}", flush=True)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", default="", help="substring of the case names to run")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--tiles", default="",
                    help="extra tile shapes of the fixed path to try, e.g. '2:32,1,8;3:8,8,16' "
                         "(dimension: rows, planes, warps)")
    ap.add_argument("--no-general", action="store_true", help="skip the general n-D path")
    ap.add_argument("--label-rows", default="",
                    help="tile rows per lane group of meshccl_runs2d_label to try in 2-D, "
                         "e.g. '1,2,4' (int32 labels; default: mesh23.RUNS_LABEL_ROWS)")
    opts = ap.parse_args()
    cases = [("empty 4096^2", cupy.zeros((4096, 4096), cupy.uint8)),
             ("full 4096^2", cupy.ones((4096, 4096), cupy.uint8)),
             ("empty 512^3", cupy.zeros((512,) * 3, cupy.uint8))] + standard_cases()
    print("median ms per phase (CUDA events), int32 labels; total = first to last event")
    for name, a in cases:
        if opts.only not in name or (name.startswith(("empty", "full")) and not opts.only):
            continue
        variants = [("fixed", None)] + [
            ("fixed", tuple(int(x) for x in spec.split(":")[1].split(",")))
            for spec in opts.tiles.split(";") if spec and int(spec.split(":")[0]) == a.ndim]
        if not opts.no_general:
            variants.append(("general", None))
        rows = [int(x) for x in opts.label_rows.split(",") if x] if a.ndim == 2 else []
        default_rows = mesh23.RUNS_LABEL_ROWS[4]
        for c in (1, a.ndim):
            for path, tiles in variants:
                for lr in rows or [None]:
                    mesh23.RUNS_LABEL_ROWS[4] = default_rows if lr is None else lr
                    r, total = phases(a, c, path, opts.reps, tiles)
                    label = path + ("" if tiles is None else "%s" % (tiles,)) + \
                        ("" if lr is None else f" rows {lr}")
                    print(f"{name:22s} c={c} {label:16s} " +
                          " ".join(f"{k} {x:.3f}" for k, x in r.items()) + f" | total {total:.3f}")
                mesh23.RUNS_LABEL_ROWS[4] = default_rows
