"""Words per thread of meshccl_piece_roots and meshccl_label_pieces in the
2-D chain with slots (mesh23.PIECE_WORDS): 1 (a 4096^2 image's 524 288
words take two waves of threads) against 2 (one wave).  Event-timed call and
device ms on the standard cases (2-D and 3-D, connectivity 1 and full), two
rounds in alternating order, labels equal; the cases whose calls take the
chain without slots (or 3-D) run the same kernels under both.  (H100
experiment, 2026-11-26; its first run, results/h100-2026-11-26/piece_words/
everywhere.log, had 2 words in every chain.)

    python benchmarks/experiments/piece_words.py"""
import _common  # noqa: F401  (sys.path)
from _common import alternate
from meshccl._gpu import mesh23, plan
import phases as ph

VARIANTS = {"1 word": 1, "2 words": 2}


def use(name):
    mesh23.PIECE_WORDS = VARIANTS[name]
    plan._local.__dict__.pop("plans", None)


alternate(ph.standard_cases(), VARIANTS, use)
use("2 words")
