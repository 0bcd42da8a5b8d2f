"""The run kernels' piece roots labelled in the walks' launch
(meshccl_piece_labels, a decoupled look-back over the blocks' root counts)
against the two launches it replaces (meshccl_piece_roots, then
meshccl_label_pieces): event-timed call and device ms on the standard cases
(2-D and 3-D, connectivity 1 and full), two rounds in alternating order,
labels equal.  (H100 experiment, 2026-11-26: slower on every case, so the
kernel was reverted; check out 7ebf9fd, where mesh23.PIECE_LABELS exists,
to re-run it.  benchmarks/NOTES.md has the figures.)

    python benchmarks/experiments/piece_labels.py"""
import _common  # noqa: F401  (sys.path)
from _common import alternate
from meshccl._gpu import mesh23, plan
import phases as ph

VARIANTS = {"two launches": False, "one launch": True}


def use(name):
    mesh23.PIECE_LABELS = VARIANTS[name]
    plan._local.__dict__.pop("plans", None)


alternate(ph.standard_cases(), VARIANTS, use)
use("one launch")
