"""Piece roots per thread handled together (int32 labels) in
meshccl_piece_roots (MESHCCL_ROOTS_GROUP_32, the "roots" phase) and
meshccl_label_pieces (MESHCCL_LABEL_GROUP_32, "pieces"), on the standard
2-D and 3-D cases (H200 experiment, 2026-11-24).

    python benchmarks/experiments/piece_groups.py [SIZES...]   (default 4 8 16)"""
import sys

import _defines
import phases as ph

cases = ph.standard_cases()
variants = [int(v) for v in sys.argv[1:]] or [4, 8, 16]
for roots in variants:
    for lab in variants:
        if lab <= roots:
            _defines.use(MESHCCL_ROOTS_GROUP_32=roots, MESHCCL_LABEL_GROUP_32=lab)
            ph.report(f"roots={roots:2d} label={lab:2d}", cases, keys=("roots", "pieces"))
