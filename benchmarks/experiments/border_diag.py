"""Diagnostic (not a variant to keep): the 2-D border kernel's phase time on
the spiral and blobs with its unions replaced (MESHCCL_BORDER_DIAG: 0 as
is, 1 finds without halving stores, 2 full compression, 3 no unions (the
loads and masks only), 4 halving without recording, 5 top seams only, 6
left seams only, 7 top seams of even tile rows, 8 top seams of tile rows
< 64).  Labels are not checked: only 0 labels correctly."""
import _defines
import phases as ph

cases = [(n, a) for n, a in ph.standard_cases(dims=(2,)) if n.startswith(("spiral", "blobs"))]
for rep in range(2):
    for d in (0, 3, 5, 6, 7, 8):
        _defines.use(MESHCCL_BORDER_DIAG=d)
        for name, a in cases:
            r, total = ph.phases(a, 2, "fixed", 10)
            print(f"diag {d} {name:16s} c=2 border {r['border']:.4f} total {total:.4f}", flush=True)
