"""Exact results for the 2-D Ising model on the square lattice (J > 0, no field).

What the tests and examples compare the simulators with:

- :data:`CRITICAL_TEMPERATURE`: ``T_c = 2 J / ln(1 + sqrt 2)`` (Kramers and
  Wannier 1941; Onsager 1944).
- :func:`spontaneous_magnetisation`: Onsager's (and Yang's 1952)
  ``M(T) = (1 - sinh(2 J / T)**-4)**(1/8)`` below T_c, 0 above.
- :func:`energy_per_spin`: on the infinite lattice, Onsager's internal
  energy ``u = -J coth(2K) [1 + (2/pi) (2 tanh(2K)**2 - 1) K(k)]`` with
  ``k = 2 sinh(2K) / cosh(2K)**2`` (K the complete elliptic integral of the
  first kind), ``u(T_c) = -sqrt(2) J``; on a finite L x M torus, the
  derivative of Kaufman's (1949) exact partition function, the finite-size
  values Ferdinand and Fisher (1969) expanded.

Energies are per spin, E = -J sum over nearest-neighbour pairs s_i s_j.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["CRITICAL_TEMPERATURE", "spontaneous_magnetisation", "energy_per_spin",
           "log_partition_function"]

#: T_c of the square-lattice Ising model in units of J / k_B.
CRITICAL_TEMPERATURE = 2.0 / math.log(1.0 + math.sqrt(2.0))


def _positive(value, name):
    value = float(value)
    if not value > 0 or not math.isfinite(value):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return value


def spontaneous_magnetisation(temperature, coupling=1.0):
    """Onsager's spontaneous magnetisation per spin of the infinite square lattice.

    Parameters
    ----------
    temperature : float
        T > 0, in units of J / k_B.
    coupling : float, optional
        J > 0.

    Returns
    -------
    float
        ``(1 - sinh(2 J / T)**-4)**(1/8)`` below T_c, 0.0 at and above it.

    Examples
    --------
    >>> from meshccl.sim.exact import spontaneous_magnetisation
    >>> round(spontaneous_magnetisation(2.0), 6)
    0.911319
    """
    t = _positive(temperature, "temperature")
    j = _positive(coupling, "coupling")
    s = math.sinh(2.0 * j / t)
    if s <= 1.0:
        return 0.0
    return (1.0 - s ** -4) ** 0.125


def _signed_logsumexp(logs, signs):
    top = max(logs)
    total = sum(s * math.exp(v - top) for v, s in zip(logs, signs))
    if total <= 0:
        raise ArithmeticError("the partition function's terms cancelled")
    return top + math.log(total)


def log_partition_function(coupling_over_t, rows, columns):
    """ln Z of the Ising model on a rows x columns torus, exactly (Kaufman 1949).

    ``Z = 1/2 (2 sinh 2K)**(mn/2) (Z1 + Z2 + Z3 + Z4)`` with
    ``Z1, Z2 = prod_r 2 cosh, 2 sinh (m gamma_{2r+1} / 2)`` and
    ``Z3, Z4 = prod_r 2 cosh, 2 sinh (m gamma_{2r} / 2)`` over r = 0..n-1,
    ``cosh gamma_l = cosh 2K coth 2K - cos(pi l / n)`` and
    ``gamma_0 = 2K + ln tanh K`` (negative above T_c, which makes Z4
    negative there), m = rows, n = columns.

    Parameters
    ----------
    coupling_over_t : float
        K = J / T > 0.
    rows, columns : int
        The torus' sides (>= 2).

    Returns
    -------
    float

    Examples
    --------
    >>> import math
    >>> from meshccl.sim.exact import log_partition_function
    >>> z = math.exp(log_partition_function(0.3, 2, 2))   # 2 x 2 torus: 2 e^{8K} + 12 + 2 e^{-8K}
    >>> round(z, 6), round(2 * math.exp(2.4) + 12 + 2 * math.exp(-2.4), 6)
    (34.227789, 34.227789)
    """
    k = _positive(coupling_over_t, "coupling_over_t")
    m, n = int(rows), int(columns)
    if m < 2 or n < 2:
        raise ValueError(f"the torus needs sides >= 2, got {m} x {n}")
    c = math.cosh(2 * k) / math.tanh(2 * k)
    gammas = [2 * k + math.log(math.tanh(k))]
    gammas += [math.acosh(c - math.cos(math.pi * l / n)) for l in range(1, 2 * n)]
    logs, signs = [], []
    for parity in (1, 0):
        g = [gammas[2 * r + parity] for r in range(n)]
        # products of 2 cosh(x) and 2 sinh(x), x = m gamma / 2, as logs with signs
        x = [0.5 * m * v for v in g]
        logs.append(sum(abs(v) + math.log1p(math.exp(-2 * abs(v))) for v in x))
        signs.append(1.0)
        if any(v == 0 for v in x):
            continue  # a zero factor: this product vanishes
        logs.append(sum(abs(v) + math.log(-math.expm1(-2 * abs(v))) for v in x))
        signs.append(float(np.prod([math.copysign(1.0, v) for v in x])))
    return (-math.log(2) + 0.5 * m * n * math.log(2 * math.sinh(2 * k))
            + _signed_logsumexp(logs, signs))


def energy_per_spin(temperature, size=None, coupling=1.0):
    """The exact mean energy per spin of the square-lattice Ising model.

    Parameters
    ----------
    temperature : float
        T > 0 (units of J / k_B).
    size : int or (int, int), optional
        None (default): the infinite lattice (Onsager).  An int L or a pair
        (rows, columns): that torus, from Kaufman's partition function
        (:func:`log_partition_function`, differentiated numerically to
        about 1e-9).
    coupling : float, optional
        J > 0.

    Returns
    -------
    float
        ``<E> / N`` with E = -J sum_<ij> s_i s_j.

    Examples
    --------
    >>> from meshccl.sim.exact import energy_per_spin, CRITICAL_TEMPERATURE
    >>> round(energy_per_spin(CRITICAL_TEMPERATURE), 6)
    -1.414214
    >>> round(energy_per_spin(CRITICAL_TEMPERATURE, 16), 4)   # the 16 x 16 torus
    -1.4531
    """
    t = _positive(temperature, "temperature")
    j = _positive(coupling, "coupling")
    kk = j / t
    if size is None:
        k = 2 * math.sinh(2 * kk) / math.cosh(2 * kk) ** 2
        if abs(k - 1.0) < 1e-12:
            return -math.sqrt(2.0) * j
        from scipy.special import ellipk

        elliptic = float(ellipk(k * k))
        return (-j / math.tanh(2 * kk)
                * (1 + 2 / math.pi * (2 * math.tanh(2 * kk) ** 2 - 1) * elliptic))
    rows, columns = (size, size) if np.isscalar(size) else tuple(size)
    h = 1e-5 * kk
    d = (log_partition_function(kk + h, rows, columns)
         - log_partition_function(kk - h, rows, columns)) / (2 * h)
    return -j * d / (int(rows) * int(columns))
