"""Time each kernel of the GPU chains with CUDA events on the standard cases.

A maintainer's diagnostic: which phase of a call costs what.  Two chains run
side by side on every case: 'plain' (what ``label()`` takes: runs2d.cu /
runs3d.cu for 1 to 3 axes, runsnd.cu for bool 4-D, then number_pieces.cu) and 'general'
(general.cu, then number_roots.cu: what periodic axes, masks, bonds,
tolerance and n-D arrays take).  A tuning constant can be varied with
``--set NAME=VALUE`` (meshccl._tuning.override; VALUE is a Python literal).

    python benchmarks/phases.py [--only NAME] [--reps N] [--no-general] [--dims 2,3]
    python benchmarks/phases.py --only blobs --set 'RUNS_LABEL_ROWS={4: 2, 8: 1}'
    python benchmarks/phases.py --dims 4 --no-general  # runsnd.cu: 4-D site percolation
    python benchmarks/phases.py --dims 4 --no-general --vary '' \
        --vary 'RUNSND_UNITE_BATCH={1: 1, 2: 1, 3: 1, 4: 1}'

Each ``--vary 'NAME=VALUE;NAME=VALUE'`` runs every case again with those
constants on top of ``--set`` ('' : none), in one process.
"""

import ast
import dataclasses
import functools

import cupy
import numpy as np

from meshccl import _tuning, _validate
from meshccl import patterns as P
from meshccl._gpu import chains, image_plain, runs_nd


def phases(a, conn, chain, reps=10, slot_tiles=True, first=False):
    """Median ms per phase and of the whole chain, int32 labels.  ``chain``:
    'plain' (the chain meshccl._gpu.chains.select names) or 'general'."""
    prob = _validate.prepare(a, None, conn, None,
                             numbering="first-cell" if first else "raster")
    case = chains.select(prob)
    if case.chain.name == "runsnd":
        buffers = runs_nd.scratch(a.size, prob.work_dtype, case.shape)
    else:
        buffers = image_plain.scratch(a.size, prob.work_dtype, case.shape)
    if chain == "general":
        case = dataclasses.replace(case, chain=chains.CHAINS["general"], shape=prob.shape,
                                   image_rows=None)
        buffers = None
    out = cupy.empty(a.size, dtype=prob.work_dtype)
    steps = [(name, functools.partial(launch, prob.values, out, None, None))
             for name, launch in chains.program(case, prob, buffers=buffers,
                                                slot_tiles=slot_tiles)]
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
    (percolation at both thresholds: c1's and the full connectivity's), as
    (name, array) pairs, 2-D, 3-D and / or 4-D (bool site percolation near
    the threshold of the full connectivity, as structures_bench.py's 4-D
    rows: the runsnd chain)."""
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
    if 4 in dims:
        from bench import PERCOLATION_4D_C4

        for side in (48, 128):
            x = cupy.random.default_rng(7).random((side,) * 4, dtype=cupy.float32)
            cases.append((f"perc {side}^4 p={PERCOLATION_4D_C4}", x < PERCOLATION_4D_C4))
    return cases


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="substring of the case names to run")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--no-general", action="store_true", help="skip the general chain")
    ap.add_argument("--first", action="store_true",
                    help="also the first-cell chains (label(..., numbering='first-cell'))")
    ap.add_argument("--dims", default="2,3", help="standard cases of these dimensions")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="a meshccl._tuning constant for this run (repeatable)")
    ap.add_argument("--vary", action="append", default=[], metavar="NAME=VALUE;...",
                    help="run the cases again with these constants (repeatable; '' none)")
    opts = ap.parse_args(argv)

    def parsed(items):
        out = {}
        for item in items:
            if item.strip():
                name, _, value = item.partition("=")
                out[name.strip()] = ast.literal_eval(value.strip())
        return out

    settings = parsed(opts.set)
    variants = [parsed(v.split(";")) for v in opts.vary] or [{}]
    cases = [("empty 4096^2", cupy.zeros((4096, 4096), cupy.uint8)),
             ("full 4096^2", cupy.ones((4096, 4096), cupy.uint8)),
             ("empty 512^3", cupy.zeros((512,) * 3, cupy.uint8))]
    cases += standard_cases(tuple(int(d) for d in opts.dims.split(",")))
    print("median ms per phase (CUDA events), int32 labels; total = first to last event")
    chains = ["plain"] + ([] if opts.no_general else ["general"])
    for variant in variants:
        if len(variants) > 1:
            print("with", variant or "the defaults", flush=True)
        with _tuning.override(**settings, **variant):
            for name, a in cases:
                if opts.only not in name or (name.startswith(("empty", "full"))
                                             and not opts.only):
                    continue
                for c in (1, a.ndim) if a.ndim <= 3 else (a.ndim,):
                    for chain in chains + [ch + " first" for ch in chains if opts.first]:
                        r, total = phases(a, c, chain.split()[0], opts.reps,
                                          first=chain.endswith("first"))
                        print(f"{name:22s} c={c} {chain:14s} " +
                              " ".join(f"{k} {x:.3f}" for k, x in r.items()) +
                              f" | total {total:.3f}", flush=True)


if __name__ == "__main__":
    main()
