"""Where the time of meshccl_runs2d_label (the "cells" phase) goes: the
kernel as it is, then with its second load (a run start's piece root's
label) left out, with both P loads left out (labels wrong: timing only),
against a plain fill of the same int32 array (cupy) and a copy of it: the
store-only floor of the pass (H200 experiment, 2026-11-24).

    python benchmarks/experiments/label_pass.py
    python benchmarks/experiments/label_pass.py --once VARIANT [--only CASE]
        (one labelling per case at connectivity 1, for Nsight Compute)"""
import sys

from _common import recompile, time_ms
import cupy
import phases as ph

from meshccl._gpu import loader

_source = loader.source
HOP2 = "if (((s[k] & ~a[k]) >> (c0 + j)) & 1u) lab[k][j] = P[lab[k][j]];"
HOP1 = "lab[k][j] = ((s[k] >> (c0 + j)) & 1u) ? P[rowbase[k] + c0 + j] : (I)0;"
DIV = "const I y = (I)(g / ntx), bx = (I)g - y * ntx;"
DIV32 = ("const unsigned gu = (unsigned)g; const I y = (I)(gu / (unsigned)ntx), "
         "bx = (I)(gu - (unsigned)y * (unsigned)ntx);")
STORE = "reinterpret_cast<VT*>(dst)[v] = x;"
variants = {
    "as is": [],
    "32-bit div": [(DIV, DIV32)],
    "stcs": [(STORE, "__stcs(reinterpret_cast<VT*>(dst) + v, x);")],
    "both": [(DIV, DIV32), (STORE, "__stcs(reinterpret_cast<VT*>(dst) + v, x);")],
    "no 2nd load": [(HOP2, "")],
    "no P loads": [(HOP2, ""), (HOP1, "lab[k][j] = ((s[k] >> (c0 + j)) & 1u) ? rowbase[k] + c0 + j : (I)0;")],
}


def use(repl):
    def source(filename):
        text = _source(filename)
        if filename == "relabel.cu":
            for a, b in repl:
                assert a in text, a
                text = text.replace(a, b)
        return text
    loader.source = source
    recompile()




cases = [c for c in ph.standard_cases() if c[0].startswith(("blobs", "potts4", "perc 8192^2 p=.4073"))]
if "--once" in sys.argv:
    use(variants[sys.argv[sys.argv.index("--once") + 1]])
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else ""
    for name, a in cases:
        if only in name:
            ph.phases(a, 1, "fixed", reps=0)
    sys.exit(0)
for name, a in cases:
    x = cupy.empty(a.size, cupy.int32)
    y = cupy.empty(a.size, cupy.int32)
    print(f"{name:22s} fill {time_ms(lambda: x.fill(7)):.3f}  copy {time_ms(lambda: y.__setitem__(Ellipsis, x)):.3f}"
          f"  ({a.size * 4 / 1e6:.0f} MB of int32)", flush=True)
from meshccl._gpu import mesh23  # noqa: E402

for tag in ("no 2nd load", "no P loads"):
    use(variants[tag])
    ph.report(f"{tag:12s}", cases, keys=("cells",))
for rep in range(2):
    for tag in ("as is", "32-bit div", "stcs", "both"):
        use(variants[tag])
        ph.report(f"{tag:12s}", cases, keys=("cells",))
    use([])
    mesh23.RUNS_LABEL_CELLS[4] = 8
    ph.report(f"{'8 per lane':12s}", cases, keys=("cells",))
    mesh23.RUNS_LABEL_CELLS[4] = 4
