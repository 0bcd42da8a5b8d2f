"""Image moments of every label: the per-label sums, and what follows from them.

:func:`label_sums` is the one reduction: a single pass over the label
image that adds, for every label, the monomials ``x_0**p_0 * ... *
x_{d-1}**p_{d-1}`` of its cells' coordinates relative to the label's box
origin (the "local" coordinates of skimage's ``moments``), optionally
weighted by the intensity, and the squared deviations of the intensity
from a per-label mean.  Everything else here -- central, normalised and Hu
moments, inertia tensors and their eigenvalues -- is array arithmetic on
the resulting (labels x terms) table, written once over an array module
``xp`` (NumPy or CuPy), so the CPU and GPU run the same code.

Local coordinates keep the sums small (a label's extent, not the image's)
and the unweighted ones exact integers in float64 while they stay below
2**53.  Central moments come from the raw ones by the binomial expansion
about the (local) centroid.
"""

from __future__ import annotations

import itertools
from math import comb

import numpy as np

#: cells per chunk of the reduction on the CPU (bounds the temporary arrays)
CHUNK = 1 << 20
#: on the GPU: fewer, larger launches (a 3-D chunk holds ~10 float64 arrays, 0.3 GB)
GPU_CHUNK = 1 << 22


def exponents(ndim, order, *, total=False):
    """Multi-indices ``p`` with every ``p_d <= order`` (skimage's moment
    array, in ``numpy.ndindex`` order); ``total=True``: only those with
    ``sum(p) <= order``."""
    out = []
    for p in itertools.product(range(order + 1), repeat=ndim):
        if not total or sum(p) <= order:
            out.append(p)
    return out


def closure(terms):
    """The terms and every multi-index below one of them (what the central
    moments of ``terms`` need), in sorted order."""
    out = set()
    for p in terms:
        out.update(itertools.product(*(range(e + 1) for e in p)))
    return sorted(out)


def label_sums(xp, labels, row_of, origin, plain=(), weighted=(), intensity=None, mean=None,
               chunk=None):
    """One pass over ``labels``: per-row sums of monomials of local coordinates.

    Parameters
    ----------
    xp : module
        numpy or cupy (the arrays' module).
    labels : ndarray
        Integer labels, any shape.
    row_of : ndarray
        int64 lookup, label -> output row (-1: not wanted, e.g. background).
    origin : ndarray
        int64 (rows, ndim): each row's coordinate origin (its box's first cell).
    plain, weighted : sequence of tuple
        Multi-indices: ``plain`` sums ``prod x**p`` over each row's cells,
        ``weighted`` sums ``w * prod x**p`` (``w`` the intensity).
    intensity : ndarray, optional
        Same shape as ``labels``; needed by ``weighted`` and ``mean``.
    mean : ndarray, optional
        float64 (rows,): adds the sums of ``(w - mean[row])**2``.
    chunk : int, optional
        Cells taken at a time (bounds the temporary arrays); default
        :data:`CHUNK` on NumPy, :data:`GPU_CHUNK` otherwise.

    Returns
    -------
    dict
        ``plain`` (rows, len(plain)), ``weighted`` (rows, len(weighted)),
        ``spread`` (rows,) where asked for; float64.
    """
    shape = tuple(labels.shape)
    ndim = len(shape)
    rows = origin.shape[0]
    flat = labels.reshape(-1)
    if flat.dtype == np.bool_:
        flat = flat.view(np.uint8)
    values = intensity.reshape(-1) if intensity is not None else None
    plain, weighted = list(plain), list(weighted)
    sums = {"plain": xp.zeros((rows, len(plain))), "weighted": xp.zeros((rows, len(weighted)))}
    if mean is not None:
        sums["spread"] = xp.zeros(rows)
    top = [max([p[d] for p in plain + weighted], default=0) for d in range(ndim)]
    n = flat.shape[0]
    if chunk is None:
        chunk = CHUNK if xp is np else GPU_CHUNK
    for start in range(0, n if rows else 0, chunk):
        stop = min(start + chunk, n)
        row = row_of[flat[start:stop].astype(np.int64)]
        keep = xp.nonzero(row >= 0)[0]
        if keep.shape[0] == 0:
            continue
        row = row[keep]
        index = keep + start
        # local coordinates, last axis first (C order)
        powers = [None] * ndim
        for d in range(ndim - 1, -1, -1):
            c = (index % shape[d] - origin[row, d]).astype(np.float64)
            index = index // shape[d]
            powers[d] = [None, c]
            for _ in range(2, top[d] + 1):
                powers[d].append(powers[d][-1] * c)

        def monomial(p):
            v = None
            for d, e in enumerate(p):
                if e:
                    v = powers[d][e] if v is None else v * powers[d][e]
            return v

        w = values[start:stop][keep].astype(np.float64) if values is not None else None
        for j, p in enumerate(plain):
            v = monomial(p)
            sums["plain"][:, j] += (xp.bincount(row, minlength=rows) if v is None
                                    else xp.bincount(row, weights=v, minlength=rows))
        for j, p in enumerate(weighted):
            v = monomial(p)
            sums["weighted"][:, j] += xp.bincount(row, weights=w if v is None else w * v,
                                                  minlength=rows)
        if mean is not None:
            dev = w - mean[row]
            sums["spread"] += xp.bincount(row, weights=dev * dev, minlength=rows)
    return sums


def scale(xp, table, terms, spacing):
    """Moments in index units -> in spacing units: column ``p`` times
    ``prod spacing**p``."""
    factors = [float(np.prod([s**e for s, e in zip(spacing, p)])) for p in terms]
    return table * xp.asarray(factors)[None, :]


def central(xp, raw, terms, centre):
    """Central moments from raw ones.

    ``raw`` (m, T) holds the raw moments of ``terms`` (closed under going
    down, see :func:`closure`); ``centre`` (m, ndim) the centroid in the
    same coordinates.  Returns (m, T): sum over the cells of
    ``prod (x - centre)**p``, expanded binomially.  First-order central
    moments are 0; the zeroth is the raw one; the others are NaN where the
    centre is not finite (a weighted centroid of zero total weight).
    """
    col = {p: j for j, p in enumerate(terms)}
    ndim = centre.shape[1]
    top = [max([p[d] for p in terms], default=0) for d in range(ndim)]
    neg = [[None] + [(-centre[:, d]) ** e for e in range(1, top[d] + 1)] for d in range(ndim)]
    finite = xp.all(xp.isfinite(centre), axis=1)
    out = []
    for p in terms:
        order = sum(p)
        if order == 0:
            out.append(raw[:, col[p]])
            continue
        if order == 1:  # (0 exactly: the sum of x - mean x)
            out.append(xp.where(finite, 0.0, xp.nan))
            continue
        acc = None
        for k in itertools.product(*(range(e + 1) for e in p)):
            term = raw[:, col[k]]
            coef = 1
            for d in range(ndim):
                if p[d] > k[d]:
                    coef *= comb(p[d], k[d])
                    term = term * neg[d][p[d] - k[d]]
            term = term * coef if coef != 1 else term
            acc = term if acc is None else acc + term
        out.append(xp.where(finite, acc, xp.nan))
    return xp.stack(out, axis=1) if out else raw[:, :0]


def normalized(xp, mu, terms, spacing):
    """skimage's ``moments_normalized``: ``mu_p / min(spacing)**|p| /
    mu_0**(|p| / ndim + 1)`` for ``|p| >= 2``, NaN below."""
    ndim = len(terms[0])
    mu0 = mu[:, terms.index((0,) * ndim)]
    low = float(min(spacing))
    out = []
    for j, p in enumerate(terms):
        k = sum(p)
        if k < 2:
            out.append(xp.full(mu.shape[0], xp.nan))
        else:
            out.append((mu[:, j] / low**k) / mu0 ** (k / ndim + 1))
    return xp.stack(out, axis=1)


def hu(xp, nu, terms):
    """Hu's seven invariants of 2-D normalised central moments (columns of
    ``nu`` named by ``terms``; ``(i, j)``: power i of axis 0, j of axis 1)."""
    col = {p: j for j, p in enumerate(terms)}

    def n(i, j):
        return nu[:, col[(i, j)]]

    n20, n02, n11 = n(2, 0), n(0, 2), n(1, 1)
    n30, n03, n21, n12 = n(3, 0), n(0, 3), n(2, 1), n(1, 2)
    a, b = n30 + n12, n21 + n03          # the two sums
    c, d = n30 - 3 * n12, 3 * n21 - n03  # the two differences
    diff = n20 - n02
    h = [
        n20 + n02,
        diff * diff + 4 * n11 * n11,
        c * c + d * d,
        a * a + b * b,
        c * a * (a * a - 3 * b * b) + d * b * (3 * a * a - b * b),
        diff * (a * a - b * b) + 4 * n11 * a * b,
        d * a * (a * a - 3 * b * b) - c * b * (3 * a * a - b * b),
    ]
    return xp.stack(h, axis=1)


def inertia_tensor(xp, mu, terms):
    """skimage's ``inertia_tensor`` of each row: (m, ndim, ndim) from the
    central moments of order 0 and 2 (spacing units)."""
    col = {p: j for j, p in enumerate(terms)}
    ndim = len(terms[0])

    def unit(*axes):
        p = [0] * ndim
        for a in axes:
            p[a] += 1
        return mu[:, col[tuple(p)]]

    mu0 = unit()
    second = [unit(d, d) for d in range(ndim)]
    total = sum(second[1:], second[0]) if ndim else xp.zeros(mu.shape[0])
    rows = []
    for d in range(ndim):
        row = []
        for e in range(ndim):
            row.append((total - second[d]) / mu0 if d == e else -unit(d, e) / mu0)
        rows.append(xp.stack(row, axis=1))
    return xp.stack(rows, axis=1)


def eigenvalues(xp, tensor):
    """Eigenvalues of each symmetric tensor, clipped at 0, largest first."""
    if tensor.shape[0] == 0:
        return xp.zeros(tensor.shape[:2])
    ev = xp.linalg.eigvalsh(tensor)
    return xp.maximum(ev, 0.0)[:, ::-1]
