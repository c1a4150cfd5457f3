"""Warm starts: each expansion of a fitted parent started from the parent's optimum (docs/sources/duvenaud.md#search).

The grammar's candidates already carry the parent's fitted values in the part they copy (``zoo.structure.grammar``);
here the part an operator introduces is made *neutral* instead of random, so that the child starts at (or near) its
parent's likelihood and ML-II can only climb from there:

- a new summand (C.1, and the B of C.11's S x (B + C)) at a small variance;
- a new product factor (C.2) near the identity: variance 1 and a long lengthscale (SE, RQ, Matern, Per), Lin as
  offset^2 = 1 with a small slope variance, C at 1; C.11's C at 1;
- a changepoint CP(S, S) (C.4) switching beyond the data's end, so its first argument (the parent) applies everywhere;
  a window CW(S, S) or CW(S, C) (C.5, C.6) covering the data, CW(C, S) (C.7) lying beyond it.

Each nesting candidate gets two such points. The *start* keeps the new part a little away from the neutral value
(variance 0.01 of Var(y), lengthscales 10 x the range, switches 5 widths past the data): the gradient with respect to
a log variance is proportional to the variance, so a start at the limit would look like an optimum to L-BFGS and never
grow the new part. The *limit* is the neutral point itself (variance 1e-8, lengthscales 1e4 x the range, switches 50
widths away): the parent's function within ~1e-6 nats, a point of the child's parameter space that the search uses to
check nesting and as the child's floor (``search.py``).

A new periodic component's period comes from the data, not a random draw: the peak of the periodogram of the parent's
residuals y - E[f | y] within the admissible periods (``bounds.py``), and, where it differs, a second start at the
peak of the data's periodogram after a smooth trend is removed (``trend_residual_period``): a flexible parent (RQ on
Mauna Loa) nearly interpolates the series, so its residuals keep mostly the highest frequencies and their peak can
sit at the shortest admissible period, while the annual cycle is plain in the detrended data
(docs/performance.md#random-starts). A new non-periodic lengthscale is the geometric mean of 2 x the spacing and the
range (the middle of the factory's draws, ``scales.py``).

Depth 1 has no parent, so a base periodic kernel gets its data-driven starts from the data alone (``base_starts``):
the three highest peaks of the periodogram of y and the highest of the detrended y, its variance Var(y) and
lengthscale 1. Random periods alone often missed the basin of a periodic truth: greedy then picked Per x SE at depth
2 for a Per series whose own Per fit had ended far below the truth's refit
(docs/performance.md#structure-recovery-first-pass).
"""

import dataclasses

import jax
import numpy as np

from inference.applications.structure_search.bounds import MAX_PERIOD_FRACTION, MIN_PERIOD_SPACINGS
from inference.applications.structure_search.scales import Scales
from zoo.kernels import SE
from zoo.kernels.base import Constant, Kernel
from zoo.kernels.nonstationary import Changepoint, ChangeWindow
from zoo.structure.grammar import Factory, Grammar, expand

__all__ = [
    "NESTING",
    "NeutralFactory",
    "WarmStart",
    "base_starts",
    "data_periods",
    "residual_period",
    "same_period",
    "trend_residual_period",
    "warm_starts",
]

# Operators whose child contains the parent as a limit of the new part's parameters (module docstring); C.3 and C.8
# replace a part, C.9 and C.10 remove one.
NESTING = frozenset({"C.1", "C.2", "C.4", "C.5", "C.6", "C.7", "C.11"})
# (start, limit) of each neutral value; module docstring for why the start is not the limit.
SMALL_VARIANCE = {"start": 1e-2, "limit": 1e-8}
LONG = {"start": 10.0, "limit": 1e4}  # lengthscales, x the input range (Per: unitless, x 1)
SWITCH_WIDTHS = {"start": 5.0, "limit": 50.0}  # how far past the data a switch lies, in its widths
# Depth 1's periodic starts: the periodogram's highest peaks. A draw of Per (lengthscale ~1) can carry more power at
# its second harmonic than at its period, so the highest peak alone can be half the period (module docstring).
BASE_PEAKS = 3
PERIOD_TOLERANCE = 0.02  # two data-driven periods closer than this (relative) give one start


@dataclasses.dataclass(frozen=True)
class NeutralFactory(Factory):
    """Makes the new part of a candidate neutral (module docstring). ``role``: "summand" or "factor" (how ``base``
    kernels are used); ``strength``: "start" or "limit"; ``period``: the new periodic kernels' period (standardised
    units; None: the geometric middle of the admissible periods)."""

    scales: Scales = None
    role: str = "summand"
    strength: str = "start"
    period: float | None = None

    def _period(self, d: int) -> float:
        if self.period is not None:
            return float(self.period)
        R, dx = float(self.scales.range[d]), float(self.scales.spacing[d])
        return float(np.sqrt(MIN_PERIOD_SPACINGS * dx * MAX_PERIOD_FRACTION * R))

    def base(self, cls: type, dim: int | None) -> Kernel:
        d = 0 if dim is None else dim
        R, dx = float(self.scales.range[d]), float(self.scales.spacing[d])
        small, long = SMALL_VARIANCE[self.strength], LONG[self.strength]
        factor = self.role == "factor"
        values = {}
        for name in cls.PARAMS:
            if name == "variance":
                # Lin's variance is its slope's: small in both roles (a factor is then ~offset^2 = 1)
                values[name] = small if (not factor or cls.SYMBOL == "Lin") else 1.0
            elif name == "lengthscale" and cls.SYMBOL in ("Per", "ZPer"):
                values[name] = long if factor else 1.0
            elif name == "lengthscale":
                values[name] = long * R if factor else float(np.sqrt(2 * dx * R))
            elif name == "period":
                values[name] = self._period(d)
            elif name == "alpha":
                values[name] = 1.0
            elif name == "location":
                values[name] = 0.0
            elif name == "offset":
                values[name] = 1.0 if factor else float(np.sqrt(small))
        kernel = cls(**values)
        return kernel if dim is None else kernel.on(dim)

    def constant(self) -> Kernel:
        return Constant(1.0)  # C.11's S x (B + C) ~ S, and CW's constant side (unused where the window lies)

    def _switch(self) -> tuple[float, float, float, float]:
        low, high, R = float(self.scales.low[0]), float(self.scales.high[0]), float(self.scales.range[0])
        width = R / 20
        return low, high, width, SWITCH_WIDTHS[self.strength] * width

    def changepoint(self, first: Kernel, second: Kernel) -> Kernel:
        # s(x) = sigmoid((location - x) / width) ~ 1 on the data: the first argument (a copy of S) everywhere
        _, high, width, margin = self._switch()
        return Changepoint(first, second, location=high + margin, width=width)

    def window(self, inside: Kernel, outside: Kernel) -> Kernel:
        low, high, width, margin = self._switch()
        if _made_here(inside) and not _made_here(outside):  # C.7, CW(C, S): the window off the data
            return ChangeWindow(inside, outside, start=high + margin, duration=high - low, width=width)
        # C.5 and C.6, CW(S, .): a window covering the data, so the inside (S) applies everywhere
        return ChangeWindow(inside, outside, start=low - margin, duration=high - low + 2 * margin, width=width)


def _made_here(kernel: Kernel) -> bool:
    """Whether ``kernel`` is ``NeutralFactory.constant()``'s C (a parent's fitted C is told apart by its value)."""
    return type(kernel) is Constant and float(np.asarray(kernel.variance)) == 1.0


@dataclasses.dataclass(frozen=True)
class WarmStart:
    """A nesting candidate's start and limit (module docstring), both of its structure; ``more``: further starts
    (the same structure at another data-driven period). A depth-1 start (``base_starts``) nests nothing: no limit."""

    start: Kernel
    limit: Kernel | None
    more: tuple[Kernel, ...] = ()

    @property
    def starts(self) -> tuple[Kernel, ...]:
        return (self.start, *self.more)


def residual_period(kernel: Kernel, noise: float, X: np.ndarray, y: np.ndarray) -> float | None:
    """The period (X's units) of the highest peak of the periodogram of the residuals y - E[f | y] of
    GP(0, kernel) + N(0, noise) on one input column, among the admissible periods [3 dx, R / 2] (``bounds.py``);
    None for several columns, or when the residuals carry no power."""
    if X.shape[1] != 1:
        return None
    K = np.asarray(kernel(X), float) + noise * np.eye(len(y))
    return _periodogram_peak(X[:, 0], noise * np.linalg.solve(K, y))  # y - K_f (K_f + noise I)^-1 y


def data_periods(X: np.ndarray, y: np.ndarray, count: int = BASE_PEAKS) -> list[float]:
    """The periods of the ``count`` highest admissible peaks of the periodogram of y minus its mean, highest first
    (one input column; else none)."""
    return _periodogram_peaks(X[:, 0], y - y.mean(), count) if X.shape[1] == 1 else []


def trend_residual_period(X: np.ndarray, y: np.ndarray) -> float | None:
    """The period of the highest admissible peak of the periodogram of y minus a smooth trend: the residuals of a GP
    with an SE kernel of lengthscale the longest admissible period (R / 2) and signal and noise variances Var(y), on
    y minus its mean. Its spectral density at the lowest admissible frequency is exp(-2 pi^2) ~ 3e-9 of its peak, so
    the trend takes no admissible period's power. None for several columns or no power."""
    if X.shape[1] != 1:
        return None
    variance = float(np.var(y)) or 1.0
    trend = SE(lengthscale=MAX_PERIOD_FRACTION * float(np.ptp(X[:, 0])), variance=variance)
    return residual_period(trend, variance, X, y - y.mean())


def same_period(a: float, b: float) -> bool:
    """Whether two data-driven periods are one start: within ``PERIOD_TOLERANCE`` of each other."""
    return abs(a / b - 1) < PERIOD_TOLERANCE


def _same_values(a: Kernel, b: Kernel) -> bool:
    """Whether two kernels of one structure have the same hyperparameters (kernels are pytrees)."""
    return all(np.allclose(u, v) for u, v in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))


def _periodogram_peak(x: np.ndarray, residual: np.ndarray) -> float | None:
    """The period of the highest peak of the periodogram of ``residual`` (n,) at inputs ``x`` (n,) among the
    admissible periods [3 dx, R / 2]; None when it carries no power."""
    peaks = _periodogram_peaks(x, residual, 1)
    return peaks[0] if peaks else None


def _periodogram_peaks(x: np.ndarray, residual: np.ndarray, count: int) -> list[float]:
    """The periods of the ``count`` highest local maxima of the periodogram of ``residual`` (n,) at inputs ``x``
    (n,) among the admissible periods [3 dx, R / 2], highest first; empty when it carries no power."""
    steps = np.diff(np.unique(x))
    R, dx = float(np.ptp(x)), float(steps.min())
    low, high = 1.0 / (MAX_PERIOD_FRACTION * R), 1.0 / (MIN_PERIOD_SPACINGS * dx)
    # Frequencies 1 / (4 R) apart: a quarter of the periodogram's resolution 1 / R, so no peak falls between two.
    frequencies = np.arange(low, high, 1.0 / (4 * R)) if high > low else np.array([low])
    phase = 2 * np.pi * np.outer(frequencies, x - x.mean())
    power = (np.cos(phase) @ residual) ** 2 + (np.sin(phase) @ residual) ** 2
    if not np.all(np.isfinite(power)) or power.max() <= 0:
        return []
    padded = np.concatenate([[-np.inf], power, [-np.inf]])
    local = np.flatnonzero((power > padded[:-2]) & (power >= padded[2:]))
    return [float(1.0 / frequencies[i]) for i in local[np.argsort(power[local])[::-1][:count]]]


def warm_starts(
    parent: Kernel, grammar: Grammar, scales: Scales, period: float | None, more_periods: tuple[float, ...] = ()
) -> dict[str, WarmStart]:
    """By candidate key, the warm start of each candidate of ``parent`` (fitted) that a nesting operator made; a
    candidate whose start changes with the new periodic part's period gets one more start per ``more_periods``."""
    made = {}
    for role in ("summand", "factor"):
        for strength in ("start", "limit"):
            factory = NeutralFactory(scales, role, strength, period)
            made[role, strength] = {c.key: c for c in expand(parent, grammar, factory)}
        for i, other in enumerate(more_periods):
            factory = NeutralFactory(scales, role, "start", other)
            made[role, "start", i] = {c.key: c for c in expand(parent, grammar, factory)}
    out = {}
    for key, cand in made["summand", "start"].items():
        if cand.operator in NESTING:
            role = "factor" if cand.operator == "C.2" else "summand"
            start = made[role, "start"][key].kernel
            more = tuple(
                made[role, "start", i][key].kernel
                for i in range(len(more_periods))
                if not _same_values(made[role, "start", i][key].kernel, start)
            )
            out[key] = WarmStart(start, made[role, "limit"][key].kernel, more)
    return out


def base_starts(grammar: Grammar, scales: Scales, periods: tuple[float | None, ...]) -> dict[str, WarmStart]:
    """By candidate key, the data-driven starts of depth 1's periodic base kernels (module docstring): one per
    distinct period of ``periods`` (standardised units; the data's periodogram peaks; None skipped), variance 1
    (= Var(y)), lengthscale 1, no limit. Empty without a period."""
    distinct = []
    for period in periods:
        if period is not None and not any(same_period(period, p) for p in distinct):
            distinct.append(float(period))
    if not distinct:
        return {}
    starts = {}
    for cand in expand(None, grammar, NeutralFactory(scales, "summand", "start")):
        params = type(cand.kernel).PARAMS
        if "period" in params:
            full = {"variance": 1.0} if "variance" in params else {}
            first, *more = (dataclasses.replace(cand.kernel, period=p, **full) for p in distinct)
            starts[cand.key] = WarmStart(first, None, tuple(more))
    return starts
