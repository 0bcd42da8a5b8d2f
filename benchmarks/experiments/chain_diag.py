"""DIAGNOSTIC (labels wrong under the variants): how much of the 2-D c2
cases' time hangs on (1) the border kernel's long walks -- unions whose
finds take more than MESHCCL_BORDER_BOUND parent loads are dropped -- and
(2) the label pass's last dependent load (MESHCCL_LABEL_DIAG 1: a run
start that is not a piece root keeps its piece root as its label, no load
of the piece root's P).  The upper bounds on what a bounded-walk border
with deferred unions, or slots that hold labels, could give.  Phases and
device time per variant.  (H200 experiment, 2026-11-25.)

    python benchmarks/experiments/chain_diag.py"""
import _defines
from _common import device_ms
import meshccl
from meshccl._gpu import plan
import phases as ph

VARIANTS = {"as is": {}, "bound 8": {"MESHCCL_BORDER_BOUND": 8},
            "bound 16": {"MESHCCL_BORDER_BOUND": 16}, "bound 32": {"MESHCCL_BORDER_BOUND": 32},
            "label diag": {"MESHCCL_LABEL_DIAG": 1}}
cases = [c for c in ph.standard_cases((2,)) if "potts" not in c[0] and ".5927" not in c[0]]
for rnd in range(2):
    for v, d in (VARIANTS.items() if rnd == 0 else list(VARIANTS.items())[::-1]):
        _defines.use(**d)
        plan._local.__dict__.pop("plans", None)
        for name, a in cases:
            c = 2
            dev = device_ms(lambda: meshccl.label(a, connectivity=c))
            t, total = ph.phases(a, c, "fixed", reps=20)
            print(f"{v:11s} {name:22s} c={c} device {dev:.4f} | "
                  + " ".join(f"{k} {x:.4f}" for k, x in t.items()) + f" | total {total:.4f}",
                  flush=True)
