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
    """Hawick's spiral: one wall and one corridor winding through the image.

    The 1-cells form one 1-cell-wide square spiral wall and the 0-cells the
    interleaved 1-cell-wide corridor.  Each is a single 4-connected
    component that winds through the whole image: the worst case for label
    propagation.

    Parameters
    ----------
    n : int
        The image is n x n.
    xp : module, optional
        ``numpy`` (default) or ``cupy``: where the array goes (built on the
        host, then copied).

    Returns
    -------
    ndarray
        uint8, 0 and 1.

    Examples
    --------
    >>> import meshccl
    >>> from meshccl.patterns import spiral
    >>> s = spiral(6)
    >>> s
    array([[1, 1, 1, 1, 1, 1],
           [0, 0, 0, 0, 0, 1],
           [1, 1, 1, 1, 0, 1],
           [1, 0, 1, 1, 0, 1],
           [1, 0, 0, 0, 0, 1],
           [1, 1, 1, 1, 1, 1]], dtype=uint8)
    >>> int(meshccl.label(s, connectivity=1).max())
    1
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
    """Bicontinuous domains (Cahn-Hilliard-like).

    Uniform noise, smoothed by a Gaussian of width ``sigma`` (periodic
    edges), thresholded at its median: half the cells are 1.

    Parameters
    ----------
    shape : tuple of int
        Any number of dimensions.
    sigma : float, optional
        Width of the smoothing in cells (the domains' scale).
    seed : int, optional
        Seed of the generator (NumPy's or CuPy's: the same seed gives
        different fields on the two).
    xp : module, optional
        ``numpy`` (default) or ``cupy``: built there.

    Returns
    -------
    ndarray
        uint8, 0 and 1.

    Examples
    --------
    >>> from meshccl.patterns import blobs
    >>> b = blobs((64, 64), seed=0)
    >>> b.dtype, float(b.mean())
    (dtype('uint8'), 0.5)
    """
    f = _smoothed_noise(tuple(shape), sigma, seed, xp)
    return (f > xp.median(f)).astype(xp.uint8)


def percolation(shape, p: float, seed: int = 0, xp=np):
    """Site percolation: each cell is 1 with probability ``p``.

    The thresholds of the square and cubic lattices are in
    :data:`PERCOLATION_THRESHOLD`.

    Parameters
    ----------
    shape : tuple of int
        Any number of dimensions.
    p : float
        Probability of a 1.
    seed : int, optional
        Seed of the generator (NumPy's or CuPy's).
    xp : module, optional
        ``numpy`` (default) or ``cupy``: built there.

    Returns
    -------
    ndarray
        uint8, 0 and 1.

    Examples
    --------
    >>> from meshccl.patterns import PERCOLATION_THRESHOLD, percolation
    >>> a = percolation((1000, 1000), PERCOLATION_THRESHOLD[(2, 1)], seed=0)
    >>> a.dtype, round(float(a.mean()), 2)
    (dtype('uint8'), 0.59)
    """
    rng = np.random.default_rng(seed) if xp is np else xp.random.default_rng(seed)
    return (rng.random(tuple(shape), dtype=xp.float32) < p).astype(xp.uint8)


def potts(shape, q: int = 4, sigma: float = 2.0, seed: int = 0, xp=np):
    """A q-state Potts-like field, labelled by equal value.

    Smoothed noise (as :func:`blobs`) cut at its q-quantiles into the
    values 1..q: no background, each value on about 1/q of the cells.

    Parameters
    ----------
    shape : tuple of int
        Any number of dimensions.
    q : int, optional
        Number of states.
    sigma : float, optional
        Width of the smoothing in cells.
    seed : int, optional
        Seed of the generator (NumPy's or CuPy's).
    xp : module, optional
        ``numpy`` (default) or ``cupy``: built there.

    Returns
    -------
    ndarray
        uint8, values 1..q.

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.patterns import potts
    >>> f = potts((64, 64), q=3, seed=0)
    >>> np.unique(f).tolist()
    [1, 2, 3]
    """
    f = _smoothed_noise(tuple(shape), sigma, seed, xp)
    qs = xp.quantile(f.ravel()[:: max(1, f.size // 1_000_000)], xp.linspace(0, 1, q + 1)[1:-1])
    return (xp.searchsorted(qs, f.ravel()).reshape(f.shape) + 1).astype(xp.uint8)
