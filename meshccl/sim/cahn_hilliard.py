"""Cahn-Hilliard spinodal decomposition of a quenched binary alloy.

The concentration c (c = +1 pure A, c = -1 pure B) on a periodic 2-D or
3-D grid follows

    dc/dt = M lap(c**3 - c - kappa lap c)

(mobility M, gradient-energy coefficient kappa), the conserved gradient
flow of the free energy

    F = sum_x dx**d [ (c**2 - 1)**2 / 4 + kappa / 2 |grad c|**2 ].

Time steps are semi-implicit and spectral (Chen and Shen 1998): the stiff
fourth-order term is implicit, the bulk term explicit, with an optional
linear stabilisation A (Zhu, Chen, Shen and Tikare 1999; Shen and Yang
2010) that adds ``A lap(c_{n+1} - c_n)`` on the right:

    c^_{n+1} = ((1 + dt M A k**2) c^_n - dt M k**2 FFT(c_n**3 - c_n))
               / (1 + dt M A k**2 + dt M kappa k**4)

with k the wavenumbers of the grid (spacing dx).  The k = 0 mode is left
as it is, so the mean concentration is conserved to rounding.  Without
stabilisation (A = 0, the default) linearising about c = +-1 (where
f'' = 2) gives the bound dt < 2 kappa / M for stability (a larger dt warns at
construction: the free energy then oscillates and rises, and from about
3-4 times the bound the field blows up); A >= 1 removes it for |c| <= 1
(larger steps then cost accuracy, not stability).  A blow-up is caught: the state is checked for NaN and
infinity (every step on NumPy, every ``check_every`` steps on CuPy from
a flag kept on the device) and :class:`~meshccl.sim.SimulationError` names
the first bad step, with the state rolled back to the last good one.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from . import random as _random
from .hooks import Simulation, SimulationError, _array_module, _count, _real, _xp_of, register

__all__ = ["CahnHilliard"]

#: steps between blow-up checks on CuPy (each check reads one flag)
GPU_CHECK_EVERY = 50


@register
class CahnHilliard(Simulation):
    """Cahn-Hilliard quench of a binary alloy on a periodic 2-D or 3-D grid.

    Parameters
    ----------
    shape : tuple of int, optional
        ``(n0, n1)`` or ``(n0, n1, n2)``, each >= 2.  Not needed with
        ``concentration``.
    mobility : float, optional
        M > 0 (default 1).
    kappa : float, optional
        Gradient-energy coefficient > 0 (default 1); interfaces are about
        ``sqrt(2 kappa)`` wide.
    dt : float, optional
        Time step > 0 (default 0.1).  Without ``stabilisation`` keep
        ``dt < 2 kappa / mobility``.
    mean : float, optional
        Composition of the quench: the mean of the initial c (default 0,
        a critical quench).
    noise : float, optional
        The initial c is ``mean + noise * (2 u - 1)``, u uniform in
        [0, 1) from Philox (default 0.05); the mean is then ``mean``
        within about ``noise / sqrt(N)``.
    stabilisation : float, optional
        The linear stabilisation A >= 0 (default 0).
    dx : float, optional
        Grid spacing > 0 (default 1).
    dtype : {numpy.float64, numpy.float32}, optional
        Precision of c and of the transforms.
    seed : int, optional
        0..2**64 - 1: fixes the initial noise.
    concentration : array, optional
        An initial field instead (float32 or float64, finite; copied).
        Gives the shape, the dtype and, without ``xp``, the device.
    xp : module, optional
        ``numpy`` (default) or ``cupy``.
    check_every : int, optional
        Steps between blow-up checks (default 1 on NumPy,
        ``GPU_CHECK_EVERY`` on CuPy).  Runs also check before labelling,
        before saving and at their end.

    Attributes
    ----------
    state : array
        The concentration (the live array).
    step : int
        Time steps done; the time is ``step * dt``.

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.sim import CahnHilliard
    >>> sim = CahnHilliard((64, 64), dt=0.5, seed=1)
    >>> out = sim.run(400, record=["free_energy", "mean"])
    >>> bool(np.all(np.diff(out["free_energy"]) <= 0))
    True
    >>> float(abs(out["mean"][-1] - out["mean"][0])) < 1e-12
    True
    >>> clusters = sim.labels("A")              # the A-rich domains, periodic
    >>> clusters.n > 0
    True
    """

    kind = "cahn-hilliard"
    PHASES = ("A", "B")
    OBSERVABLES = ("free_energy", "mean")
    DEFAULT_PHASE = "A"

    def __init__(self, shape=None, *, mobility=1.0, kappa=1.0, dt=0.1, mean=0.0, noise=0.05,
                 stabilisation=0.0, dx=1.0, dtype=np.float64, seed=0, concentration=None,
                 xp=None, check_every=None):
        xp = _array_module(xp, concentration)
        super().__init__(xp, seed)
        self.mobility = _real(mobility, "mobility", positive=True)
        self.kappa = _real(kappa, "kappa", positive=True)
        self.dt = _real(dt, "dt", positive=True)
        self.mean = _real(mean, "mean")
        self.noise = _real(noise, "noise", nonnegative=True)
        self.stabilisation = _real(stabilisation, "stabilisation", nonnegative=True)
        self.dx = _real(dx, "dx", positive=True)
        if concentration is not None:
            if _xp_of(concentration) is not xp:
                raise TypeError(f"concentration is a {type(concentration).__module__} array "
                                f"but xp is {xp.__name__}")
            if concentration.dtype not in (np.float32, np.float64):
                raise TypeError(f"concentration must be float32 or float64, got dtype "
                                f"{concentration.dtype}")
            if shape is not None and tuple(shape) != tuple(concentration.shape):
                raise ValueError(f"shape {tuple(shape)} and concentration of shape "
                                 f"{tuple(concentration.shape)} disagree")
            shape, dtype = tuple(concentration.shape), concentration.dtype
        if shape is None:
            raise TypeError("CahnHilliard needs a shape or an initial concentration")
        self._shape = self._check_shape(shape)
        try:
            self.dtype = np.dtype(dtype)
        except TypeError:
            raise TypeError(f"dtype must be float32 or float64, got {dtype!r}") from None
        if self.dtype not in (np.float32, np.float64):
            raise TypeError(f"dtype must be float32 or float64, got {self.dtype}")
        bound = 2.0 * self.kappa / self.mobility
        if self.stabilisation == 0 and self.dt > bound:
            warnings.warn(f"dt = {self.dt} is beyond the stability bound dt < 2 kappa / mobility "
                          f"= {bound:g} of the unstabilised scheme: expect growing "
                          "oscillations, a rising free energy or a blow-up; set "
                          "stabilisation=1 or more, or a smaller dt", RuntimeWarning,
                          stacklevel=2)
        default_check = 1 if xp is np else GPU_CHECK_EVERY
        self.check_every = default_check if check_every is None else _count(
            check_every, "check_every", 1)

        if concentration is not None:
            if not bool(xp.isfinite(concentration).all()):
                raise ValueError("concentration holds NaN or infinite values")
            self._c = concentration.astype(self.dtype, copy=True)
        else:
            cells = xp.arange(math.prod(self._shape), dtype=np.uint64).reshape(self._shape)
            w = _random.words(self.seed, _random.TAG_FIELD, 0, cells, 2)
            u = _random.uniform(w[0], w[1])
            self._c = (self.mean + self.noise * (2.0 * u - 1.0)).astype(self.dtype)
        self._operators()
        self._first_bad = None       # device flag: first non-finite step (-1: none)
        self._good = None            # (step, copy of c) at the last check, with check_every > 1

    @staticmethod
    def _check_shape(shape):
        try:
            shape = tuple(int(n) for n in shape)
        except TypeError:
            raise TypeError(f"shape must be a tuple of 2 or 3 ints, got {shape!r}") from None
        if len(shape) not in (2, 3):
            raise ValueError(f"the Cahn-Hilliard grid is 2-D or 3-D, got shape {shape}")
        if min(shape) < 2:
            raise ValueError(f"every side of the grid must be >= 2, got shape {shape}")
        return shape

    def _operators(self):
        """k**2 on the rfft grid, the step's two coefficients and Parseval's weights."""
        nd = len(self._shape)
        ks = [2 * np.pi * np.fft.fftfreq(n, d=self.dx) for n in self._shape[:-1]]
        ks.append(2 * np.pi * np.fft.rfftfreq(self._shape[-1], d=self.dx))
        k2 = sum((k ** 2).reshape([k.size if a == d else 1 for a in range(nd)])
                 for d, k in enumerate(ks))
        k2 = np.broadcast_to(k2, tuple(k.size for k in ks))
        dm = self.dt * self.mobility
        den = 1.0 + dm * self.stabilisation * k2 + dm * self.kappa * k2 ** 2
        xp, dt = self.xp, self.dtype
        self._a = xp.asarray(((1.0 + dm * self.stabilisation * k2) / den).astype(dt))
        self._b = xp.asarray((dm * k2 / den).astype(dt))
        # |grad c|^2 summed over the grid = (1/N) sum over all k of k^2 |c^_k|^2; the rfft
        # half holds the conjugate columns once, so they count twice
        n_last = self._shape[-1]
        weight = np.full(n_last // 2 + 1, 2.0)
        weight[0] = 1.0
        if n_last % 2 == 0:
            weight[-1] = 1.0
        self._k2w = xp.asarray(k2 * weight)
        self._axes = tuple(range(nd))

    # -- state and observables ---------------------------------------------------
    @property
    def state(self):
        return self._c

    @property
    def time(self):
        """``step * dt``."""
        return self.step * self.dt

    def free_energy(self):
        """F = sum dx^d [(c^2 - 1)^2 / 4 + kappa / 2 |grad c|^2] (spectral gradient), a float."""
        return float(self._observe("free_energy"))

    def mean_concentration(self):
        """The mean of c, as a float (float64 sum)."""
        return float(self._observe("mean"))

    def _observe(self, name):
        xp, c = self.xp, self._c
        if name == "mean":
            return c.sum(dtype=np.float64) / c.size
        c64 = c.astype(np.float64)
        bulk = ((c64 * c64 - 1.0) ** 2).sum() / 4.0
        chat = xp.fft.rfftn(c64, axes=self._axes)
        grad = (self._k2w * (chat.real ** 2 + chat.imag ** 2)).sum() / c.size
        return (bulk + 0.5 * self.kappa * grad) * self.dx ** len(self._shape)

    def _phase_image(self, phase):
        return self._c > 0 if phase == "A" else self._c < 0

    # -- dynamics ------------------------------------------------------------------
    def _advance(self):
        xp, c, axes = self.xp, self._c, self._axes
        if self.check_every > 1 and self._good is None:
            self._good = (self.step, c.copy())
        with np.errstate(over="ignore", invalid="ignore"):   # a blow-up is reported below
            chat = xp.fft.rfftn(c, axes=axes)
            bulk = xp.fft.rfftn(c * c * c - c, axes=axes)
            new = xp.fft.irfftn(self._a * chat - self._b * bulk, s=self._shape, axes=axes)
            new = new.astype(self.dtype, copy=False)
            total = new.sum()
        n = self.step + 1
        finite = xp.isfinite(total)
        if self._first_bad is None:
            self._first_bad = xp.full((), -1, dtype=np.int64)
        self._first_bad = xp.where((self._first_bad < 0) & ~finite, n, self._first_bad)
        if n % self.check_every == 0:
            self._verify()   # before committing: a bad step found now is never committed
            if self.check_every > 1:
                self._good = (n, new.copy())
        self._c = new
        self.step = n

    def _verify(self):
        if self._first_bad is None:
            return
        bad = int(self._first_bad)
        if bad < 0:
            return
        if self._good is not None:
            self.step, self._c = self._good[0], self._good[1].copy()
        self._first_bad = None
        m, k = self.mobility, self.kappa
        raise SimulationError(
            f"Cahn-Hilliard blew up at step {bad}: the concentration became NaN or infinite. "
            f"dt = {self.dt} is too large for this scheme with mobility = {m}, kappa = {k}"
            + (f" and stabilisation = {self.stabilisation}" if self.stabilisation else
               f" (without stabilisation keep dt < 2 kappa / mobility = {2 * k / m:g}, or "
               "set stabilisation=1 or more)")
            + f"; the state is kept at step {self.step}, the last one checked finite.", bad)

    # -- checkpoints -----------------------------------------------------------------
    def _params(self):
        return {"mobility": self.mobility, "kappa": self.kappa, "dt": self.dt,
                "mean": self.mean, "noise": self.noise, "stabilisation": self.stabilisation,
                "dx": self.dx, "check_every": self.check_every}

    @classmethod
    def _from_checkpoint(cls, params, state, xp, seed):
        params = dict(params)
        if xp is not np and params.get("check_every") == 1:
            params["check_every"] = None  # the device's own default
        return cls(concentration=state, xp=xp, seed=seed, **params)
