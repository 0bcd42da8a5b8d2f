"""Generated test patterns: Hawick's spiral, smoothed-noise blobs, site
percolation and Potts-like multi-valued fields.

Each function takes ``xp`` (``numpy`` or ``cupy``) so the benchmark can build
large cases directly on the GPU.  All are seeded and deterministic for a
given ``xp``.
"""

from __future__ import annotations

import numpy as np

#: Site-percolation thresholds (square / cubic lattices) per connectivity.
PERCOLATION_THRESHOLD = {(2, 1): 0.5927, (2, 2): 0.4073, (3, 1): 0.3116, (3, 3): 0.1369}


def spiral(n: int, xp=np) -> "np.ndarray":
    """Hawick's spiral: an ``n x n`` uint8 image whose 1-cells form one
    1-cell-wide square spiral wall and whose 0-cells form the interleaved
    1-cell-wide corridor.  Each is a single 4-connected component that winds
    through the whole image: the worst case for label propagation.
    """
    img = np.zeros((n, n), dtype=np.uint8)
    r = c = 0
    dr, dc = 0, 1
    length = n - 1
    seg = 0
    img[0, 0] = 1
    while length > 0:
        img_r = r + dr * length
        img_c = c + dc * length
        rs, re = sorted((r, img_r))
        cs, ce = sorted((c, img_c))
        img[rs:re + 1, cs:ce + 1] = 1
        r, c = img_r, img_c
        dr, dc = dc, -dr  # turn clockwise
        seg += 1
        if seg >= 3 and seg % 2 == 1:
            length -= 2
    return xp.asarray(img)


def _smoothed_noise(shape, sigma, seed, xp):
    if xp is np:
        from scipy import ndimage
        rng = np.random.default_rng(seed)
        return ndimage.gaussian_filter(rng.random(shape, dtype=np.float32), sigma, mode="wrap")
    from cupyx.scipy import ndimage as cndi
    rng = xp.random.default_rng(seed)
    return cndi.gaussian_filter(rng.random(shape, dtype=xp.float32), sigma, mode="wrap")


def blobs(shape, sigma: float = 4.0, seed: int = 0, xp=np):
    """Bicontinuous domains (Cahn-Hilliard-like): Gaussian-smoothed uniform
    noise thresholded at its median; uint8 0/1."""
    f = _smoothed_noise(tuple(shape), sigma, seed, xp)
    return (f > xp.median(f)).astype(xp.uint8)


def percolation(shape, p: float, seed: int = 0, xp=np):
    """Site percolation: each cell is 1 with probability ``p``; uint8 0/1."""
    rng = np.random.default_rng(seed) if xp is np else xp.random.default_rng(seed)
    return (rng.random(tuple(shape), dtype=xp.float32) < p).astype(xp.uint8)


def potts(shape, q: int = 4, sigma: float = 2.0, seed: int = 0, xp=np):
    """A q-state Potts-like field: smoothed noise cut at its q-quantiles into
    values 1..q (no background), uint8; labelled by equal value."""
    f = _smoothed_noise(tuple(shape), sigma, seed, xp)
    qs = xp.quantile(f.ravel()[:: max(1, f.size // 1_000_000)], xp.linspace(0, 1, q + 1)[1:-1])
    return (xp.searchsorted(qs, f.ravel()).reshape(f.shape) + 1).astype(xp.uint8)
