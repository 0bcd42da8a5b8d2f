"""Error bars for correlated time series: binning and autocorrelation times.

Successive states of a Markov chain are correlated, so the naive standard
error of a mean, ``std / sqrt(n)``, is too small by ``sqrt(2 tau_int)``.
Two standard remedies, used by the physics tests:

- :func:`binning`: cut the series into a fixed number of equal bins; when a
  bin is much longer than the autocorrelation time the bin means are
  nearly independent, and their spread gives the error of the mean
  (Flyvbjerg and Petersen 1989).
- :func:`autocorrelation_time`: the integrated autocorrelation time
  ``tau_int = 1/2 + sum_{t>=1} rho(t)`` summed up to Sokal's
  self-consistent window ``W >= c tau_int(W)``, with the Madras-Sokal error
  ``tau sqrt(2 (2W + 1) / n)`` (Madras and Sokal 1988).

Both take NumPy (host) series: a simulator's ``run(..., record=...)``
returns those.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["binning", "autocorrelation", "autocorrelation_time"]


def _series(series, name="series", least=2):
    x = np.asarray(series, dtype=np.float64).ravel()
    if x.size < least:
        raise ValueError(f"{name} needs at least {least} values, got {x.size}")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} holds NaN or infinite values")
    return x


def binning(series, bins=32):
    """The mean of a correlated series and its standard error, from bin means.

    Parameters
    ----------
    series : array_like
        1-D samples in time order.
    bins : int, optional
        Number of equal, consecutive bins (>= 2; default 32).  The first
        ``len(series) % bins`` samples are dropped so that the bins are
        equal.

    Returns
    -------
    mean : float
        Mean of the samples used.
    error : float
        ``std(bin means, ddof=1) / sqrt(bins)``: the standard error of the
        mean, valid when a bin is many autocorrelation times long.

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.sim.analysis import binning
    >>> mean, error = binning(np.arange(64.0), bins=4)
    >>> mean, round(error, 3)
    (31.5, 10.328)
    """
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 2:
        raise ValueError(f"bins must be an int >= 2, got {bins!r}")
    x = _series(series, least=int(bins))
    n = x.size // bins * bins
    x = x[x.size - n:]
    means = x.reshape(int(bins), -1).mean(axis=1)
    return float(x.mean()), float(means.std(ddof=1) / math.sqrt(bins))


def autocorrelation(series):
    """The normalised autocorrelation function rho(t), t = 0 .. n - 1.

    ``rho(t) = C(t) / C(0)``, ``C(t) = (1/n) sum_s (x_s - xbar)(x_{s+t} - xbar)``
    (the usual biased estimator), computed by FFT with zero padding.  A
    constant series gives rho = 1 at t = 0 and 0 elsewhere.

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.sim.analysis import autocorrelation
    >>> rho = autocorrelation([1.0, -1.0, 1.0, -1.0])
    >>> [round(float(r), 2) for r in rho]
    [1.0, -0.75, 0.5, -0.25]
    """
    x = _series(series)
    n = x.size
    x = x - x.mean()
    if not np.any(x):
        rho = np.zeros(n)
        rho[0] = 1.0
        return rho
    f = np.fft.rfft(x, 2 * n)
    acf = np.fft.irfft(f * np.conj(f), 2 * n)[:n]
    return acf / acf[0]


def autocorrelation_time(series, window=6.0):
    """Integrated autocorrelation time with Sokal's self-consistent window.

    Parameters
    ----------
    series : array_like
        1-D samples, one per step, in time order.
    window : float, optional
        c in ``W >= c tau_int(W)`` (default 6; 4-10 are usual).

    Returns
    -------
    tau : float
        ``1/2 + sum_{t=1}^{W} rho(t)``, in steps (1/2 for independent
        samples).
    error : float
        ``tau * sqrt(2 (2W + 1) / n)``.

    Notes
    -----
    If no window up to n/2 satisfies the condition the series is too short
    for its autocorrelation time; the estimate at W = n/2 is returned (a
    lower bound, biased low).

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.sim.analysis import autocorrelation_time
    >>> rng = np.random.default_rng(0)
    >>> x = np.zeros(20000)
    >>> for t in range(1, x.size):                  # AR(1), rho(t) = 0.9**t
    ...     x[t] = 0.9 * x[t - 1] + rng.normal()
    >>> tau, err = autocorrelation_time(x)
    >>> bool(abs(tau - 9.5) < 4 * err)             # exact: 1/2 + 0.9 / 0.1 = 9.5
    True
    """
    x = _series(series, least=4)
    n = x.size
    if not np.any(x - x.mean()):
        return 0.5, 0.0
    rho = autocorrelation(x)
    tau = 0.5 + np.cumsum(rho[1:])          # tau[w - 1] = tau_int(W = w)
    w = np.arange(1, n)
    ok = np.nonzero(w >= window * tau)[0]
    last = n // 2 - 1
    pick = int(ok[0]) if ok.size and ok[0] <= last else last
    t, big_w = float(tau[pick]), pick + 1
    return t, t * math.sqrt(2.0 * (2 * big_w + 1) / n)
