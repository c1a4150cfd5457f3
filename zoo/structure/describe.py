"""Automatic description of a kernel's additive components in English (Duvenaud 2014, ch. 4, secs. 4.1.1-4.1.4).

1. **Sum of products** (sec. 4.1.1, eq. 4.5): ``terms`` distributes products over sums (through
   ``zoo.decomposition.components``) and splits every changepoint and change window into its two sigmoid-weighted
   branches, CP(k1, k2) = s k1 s + s' k2 s' (the thesis's sigma and sigma-bar), so each term is a product of base
   kernels times switches. ``Term.kernel`` is that term as a kernel (a branch kept, the other one a zero constant):
   the terms' kernels sum to the original kernel exactly, and each is one component of the decomposition and report.
2. **Simplification** (sec. 4.1.1): SE x SE -> one SE (1/l^2 adds up), WN x any stationary kernel -> WN, C factors
   absorbed; what is left has the form (4.1) K x prod Lin x prod sigma.
3. **Head noun and modifiers** (Tables 4.1-4.2, ordering 4.3: Per, WN, SE, C, prod Lin, prod sigma) with the
   extensions of sec. 4.1.3: parameter adjectives ("rapidly varying"), parameter values in data units ("a period of
   10.8 years"), the posterior slope of a Lin component ("a linearly increasing function"), pre-modifiers
   ("approximately periodic" for SE x Per), and the changepoint phrases "This function applies from A until B".

Each term gets a **short** description (the executive summary's bullets, Figs. 4.2, 4.6) and a **long** one (the
component sections of App. D and Figs. 4.3-4.5, 4.7-4.8), worded as the thesis prints them. Thresholds for adjectives
are the named constants below, each with its source; docs/sources/duvenaud.md#description lists every choice the
thesis leaves open (RQ and Matern kernels, which the thesis does not describe, units, rounding).

One input column (the time axis): a kernel on another column is a ``DescriptionError``.
"""

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import ive

from zoo import decomposition
from zoo.errors import ZooError
from zoo.kernels import (
    ActiveDims,
    Changepoint,
    ChangeWindow,
    Constant,
    Cosine,
    Kernel,
    Linear,
    Matern12,
    Matern32,
    Matern52,
    Periodic,
    Product,
    RationalQuadratic,
    SquaredExponential,
    Sum,
    White,
    ZeroMeanPeriodic,
)

Array = Any

# "Rapidly varying" when an SE (or RQ / Matern) lengthscale is shorter than this many sampling intervals (median
# spacing of x). The thesis gives no threshold; 5 is the project's default (docs/sources/duvenaud.md#description).
RAPID_SAMPLES = 5.0
# "Across periods the shape of this function varies very smoothly" (no lengthscale printed, Fig. 4.7) when the SE
# lengthscale of SE x Per exceeds this many data spans; else "varies smoothly with a typical lengthscale of ...".
# Our default: a lengthscale beyond the span of the data is not resolved by it (docs/sources/duvenaud.md#description).
VERY_SMOOTH_SPANS = 1.0
# Per's shape within a period "is very smooth and resembles a sinusoid" (Fig. 4.5) when the variance of its second
# harmonic is below this fraction of the first's: Per = exp(-a) exp(a cos(2 pi r / p)), a = 1 / l^2, whose Fourier
# weights are I_n(a), so the ratio is I_2(a) / I_1(a) (~ a / 4 for small a). Our default
# (docs/sources/duvenaud.md#description).
SINUSOID_HARMONIC_RATIO = 0.05
# A periodic component is described by period p / k when its posterior mean's power at the harmonics k, 2k, 3k, ...
# of the kernel's period p is at least this share of its power at all harmonics (``_dominant_harmonic``): a Per
# fitted with period 6 years and a short lengthscale (many harmonics of similar prior weight) that carries an annual
# cycle in its 6th harmonic repeats every year, and is described so (issue 43: Mauna Loa's (C + Per) x SE).
HARMONIC_SHARE = 0.8
MAX_HARMONICS = 24
# How locations are rounded: to the decimal place of the sampling interval (annual data: whole years, "1644").
# Durations in years are printed in the largest unit in which they read at least MIN_COUNT (one decimal):
# calibrated to the thesis's printed values "1.0 years", "1.2 years", "3.1 months", "6.0 weeks" (Figs. 4.6-4.7, App. D).
TIME_UNITS = (
    ("years", 1.0, 1.0),
    ("months", 1.0 / 12.0, 2.0),
    ("weeks", 7.0 / 365.25, 1.0),
    ("days", 1.0 / 365.25, 0.0),
)


class DescriptionError(ZooError):
    """A kernel the description rules do not cover (e.g. one acting on a second input column)."""


# -- 1. sum of products ------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Switch:
    """One branch of a changepoint or change window: ``node`` (the CP / CW with its fitted location and width) and
    ``branch`` 0 (CP: before the change; CW: inside the window) or 1 (CP: after; CW: outside)."""

    node: Changepoint | ChangeWindow
    branch: int

    def wrap(self, inner: Kernel) -> Kernel:
        """``inner`` weighted by this branch's sigmoid: the node with ``inner`` on this branch, zero on the other."""
        zero = Constant(variance=0.0)
        pair = (inner, zero) if self.branch == 0 else (zero, inner)
        fields = ("first", "second") if isinstance(self.node, Changepoint) else ("inside", "outside")
        return dataclasses.replace(self.node, **dict(zip(fields, pair, strict=True)))

    def intervals(self) -> list[tuple[float, float]]:
        """Where this branch applies (its weight above 1/2), as open intervals of the input axis."""
        inf = math.inf
        if isinstance(self.node, Changepoint):
            at = _scalar(self.node.location)
            return [(-inf, at)] if self.branch == 0 else [(at, inf)]
        start = _scalar(self.node.start)
        end = start + _scalar(self.node.duration)
        return [(start, end)] if self.branch == 0 else [(-inf, start), (end, inf)]


@dataclasses.dataclass(frozen=True)
class Term:
    """One additive component: a product of base kernels (``factors``) on the branches ``switches``."""

    factors: tuple[Kernel, ...]
    switches: tuple[Switch, ...] = ()

    def kernel(self) -> Kernel:
        """The term as a kernel: the product of its factors wrapped in each switch (weights multiply, so the order
        does not matter)."""
        kernel = functools.reduce(Product, self.factors)
        for switch in self.switches:
            kernel = switch.wrap(kernel)
        return kernel

    def __str__(self) -> str:
        names = [str(f) for f in self.factors]
        names += [f"{'sigma' if s.branch == 0 else 'sigma-bar'}[{s.node.SYMBOL}]" for s in self.switches]
        return " x ".join(names)


def terms(kernel: Kernel) -> list[Term]:
    """The additive components of ``kernel`` as a sum of products (eq. 4.5), left to right: products distributed
    over sums (``zoo.decomposition.components(kernel, distribute=True)``, eq. 3.4) and switches split into branches."""
    return [term for part in decomposition.components(kernel, distribute=True) for term in _expand(part)]


def _expand(kernel: Kernel) -> list[Term]:
    if isinstance(kernel, Sum):
        return _expand(kernel.left) + _expand(kernel.right)
    if isinstance(kernel, Product):
        return [
            Term(a.factors + b.factors, a.switches + b.switches)
            for a in _expand(kernel.left)
            for b in _expand(kernel.right)
        ]
    if isinstance(kernel, ActiveDims):
        if kernel.dims != (0,):
            raise DescriptionError(
                f"descriptions are written for one input column (the time axis); {kernel} acts on {kernel.dims}."
            )
        return _expand(kernel.kernel)
    if isinstance(kernel, Changepoint | ChangeWindow):
        children = (kernel.first, kernel.second) if isinstance(kernel, Changepoint) else (kernel.inside, kernel.outside)
        return [
            Term(term.factors, term.switches + (Switch(kernel, branch),))
            for branch, child in enumerate(children)
            for term in _expand(child)
        ]
    return [Term((kernel,))]


# -- 2. simplification -------------------------------------------------------------------------------------------

LOCAL = (SquaredExponential, RationalQuadratic, Matern12, Matern32, Matern52)
PERIODIC = (Periodic, ZeroMeanPeriodic, Cosine)


class Simplified(NamedTuple):
    """A term in the form (4.1): what each kind of factor contributes after the rules of sec. 4.1.1."""

    noise: bool  # a WN factor: the whole stationary part is WN
    local: list[Kernel]  # SE (all SEs merged into one), RQ, Matern factors
    periodic: list[Kernel]  # Per, ZPer, Cos factors
    linear: list[Linear]
    switches: tuple[Switch, ...]
    other: list[Kernel]  # factors no rule covers, described by eq. 4.2


def simplify(term: Term) -> Simplified:
    """Rules of sec. 4.1.1 on one term: SE x SE = SE (1/l^2 adds), WN x stationary = WN, C absorbed."""
    factors = list(term.factors)
    linear = [f for f in factors if isinstance(f, Linear)]
    if any(isinstance(f, White) for f in factors):
        other = [f for f in factors if not isinstance(f, (Linear, White, Constant, *LOCAL, *PERIODIC))]
        return Simplified(True, [], [], linear, term.switches, other)
    ses = [f for f in factors if isinstance(f, SquaredExponential)]
    local = [f for f in factors if isinstance(f, LOCAL) and not isinstance(f, SquaredExponential)]
    if ses:
        inverse_square = sum(1.0 / _scalar(f.lengthscale) ** 2 for f in ses)
        variance = math.prod(_scalar(f.variance) for f in ses)
        local = [SquaredExponential(variance=variance, lengthscale=inverse_square**-0.5), *local]
    periodic = [f for f in factors if isinstance(f, PERIODIC)]
    other = [f for f in factors if not isinstance(f, (Linear, Constant, *LOCAL, *PERIODIC))]
    return Simplified(False, local, periodic, linear, term.switches, other)


# -- 3. words ----------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Context:
    """What the words depend on besides the kernel: the data's input range and spacing, the unit of x, and the sign
    of the posterior slope of a Lin component (+1, -1; 0 when unknown)."""

    x_min: float
    x_max: float
    spacing: float  # median distance between consecutive sorted inputs
    unit: str = "years"
    slope_sign: int = 0
    harmonic: int = 1  # of a periodic component's kernel period that its posterior mean repeats with (1: the period)

    @classmethod
    def from_inputs(cls, X: Array, unit: str = "years", slope_sign: int = 0) -> "Context":
        x = np.sort(np.asarray(X, dtype=float).reshape(len(X), -1)[:, 0])
        if x.size < 2 or not np.all(np.isfinite(x)):
            raise DescriptionError("descriptions need at least two finite inputs (the data's range and spacing).")
        steps = np.diff(x)
        spacing = float(np.median(steps[steps > 0])) if np.any(steps > 0) else 1.0
        return cls(float(x[0]), float(x[-1]), spacing, unit, slope_sign)

    @property
    def span(self) -> float:
        return self.x_max - self.x_min

    def duration(self, value: float) -> str:
        """A length of the input axis in words: "10.8 years", "3.1 months", "6.0 weeks" (TIME_UNITS for years)."""
        if self.unit == "years":
            for name, size, min_count in TIME_UNITS:
                count = round(value / size, 1)
                if count >= min_count:
                    return f"{count:.1f} {name}"
        return f"{value:.3g} {self.unit}"

    def location(self, value: float) -> str:
        """A point of the input axis, rounded to the decimal place of the sampling interval ("1644")."""
        decimals = max(0, math.ceil(-math.log10(self.spacing) - 1e-9)) if self.spacing > 0 else 2
        return f"{value:.{decimals}f}"


class Description(NamedTuple):
    term: Term
    short: str  # one line of the executive summary, e.g. "A smooth function. This function applies until 1643."
    long: str  # the component's paragraph, e.g. "This component is a smooth function with a typical lengthscale ..."


def describe_term(term: Term, context: Context) -> Description:
    """Short and long English descriptions of one component (secs. 4.1.2-4.1.4)."""
    s = simplify(term)
    if s.noise:
        short, long = _noise(s, context)
    elif s.periodic:
        short, long = _periodic(s, context)
    elif s.local:
        short, long = _smooth(s, context)
    elif s.linear:
        short, long = _linear(s, context)
    else:
        short, long = "A constant", ["This component is constant."]
    extra = _other(s, context)
    short += extra[0]
    long += extra[1]
    where = _applies(s.switches, context)
    if where:
        short += f". This function applies {where}"
        long.append(f"This component applies {where}.")
    return Description(term, short + ".", " ".join(long))


def describe(
    kernel: Kernel,
    X: Array,
    unit: str = "years",
    y: Array | None = None,
    noise: float | None = None,
    means: Array | None = None,
) -> list[Description]:
    """Descriptions of every component of ``kernel`` (``terms`` order) on inputs X (n, 1) in data units.

    A component headed by Lin gets the sign of its posterior mean's slope ("a linearly increasing function") from
    ``means`` (J, n), the components' posterior means at X, or computed from y (n,) and the noise variance; with
    neither it is "a linear function".
    """
    parts = terms(kernel)
    base = Context.from_inputs(X, unit)
    X = np.asarray(X, float).reshape(len(X), -1)
    if means is None and y is not None and noise is not None:
        heads = tuple(term.kernel() for term in parts if _reads_mean(simplify(term)))
        found = iter(np.asarray(_means_at_data(kernel, heads, X, np.asarray(y, float), noise)) if heads else ())
        means = [next(found) if _reads_mean(simplify(term)) else None for term in parts]
    out = []
    for j, term in enumerate(parts):
        context, s = base, simplify(term)
        if means is not None and means[j] is not None and _linear_head(s):
            context = dataclasses.replace(base, slope_sign=_slope_sign(X[:, 0], np.asarray(means[j])))
        elif means is not None and means[j] is not None and s.periodic and not s.noise:
            period = _scalar(s.periodic[0].period)
            context = dataclasses.replace(base, harmonic=_dominant_harmonic(X[:, 0], np.asarray(means[j]), period))
        out.append(describe_term(term, context))
    return out


def _reads_mean(s: "Simplified") -> bool:
    """Whether the words of a component depend on its posterior mean: a Lin head's slope, a periodic head's
    dominant harmonic."""
    return _linear_head(s) or (bool(s.periodic) and not s.noise)


def _dominant_harmonic(x: np.ndarray, mean: np.ndarray, period: float) -> int:
    """The k >= 1 such that the harmonics k, 2k, 3k, ... of ``period`` hold at least ``HARMONIC_SHARE`` of the power
    of ``mean`` (n,) at inputs x (n,) over harmonics 1..K (least squares on cos and sin of 2 pi j x / period, K up to
    the Nyquist frequency of the median spacing, at most ``MAX_HARMONICS``); the largest such k, 1 when none.
    The component then repeats every period / k."""
    steps = np.diff(np.sort(x))
    spacing = float(np.median(steps[steps > 0])) if np.any(steps > 0) else 0.0
    K = min(MAX_HARMONICS, int(period / (2.0 * spacing))) if spacing > 0 else 0
    if K < 2:
        return 1
    j = np.arange(1, K + 1)
    phase = 2.0 * np.pi * np.outer(x, j) / period
    design = np.column_stack([np.ones_like(x), np.cos(phase), np.sin(phase)])
    coef = np.linalg.lstsq(design, mean, rcond=None)[0]
    power = coef[1 : K + 1] ** 2 + coef[K + 1 :] ** 2
    total = power.sum()
    if not total > 0:
        return 1
    for k in range(K, 1, -1):
        if power[k - 1 :: k].sum() >= HARMONIC_SHARE * total:
            return k
    return 1


@jax.jit
def _means_at_data(kernel: Kernel, parts: tuple[Kernel, ...], X: Array, y: Array, noise: Array) -> Array:
    """(J, n) posterior means of ``parts`` at the data, one compiled program (``zoo.decomposition``, eq. 2.17)."""
    factor = decomposition.factorise(kernel, X, y, noise)
    return jnp.stack([decomposition.component_mean(factor, part, X) for part in parts])


def _linear_head(s: Simplified) -> bool:
    return bool(s.linear) and not (s.noise or s.periodic or s.local)


def _slope_sign(x: np.ndarray, mean: np.ndarray) -> int:
    slope = np.polyfit(x, mean, 1)[0]
    return int(np.sign(slope))


def _noise(s: Simplified, c: Context) -> tuple[str, list[str]]:
    short, long = "Uncorrelated noise", ["This component models uncorrelated noise."]
    if len(s.linear) == 1:
        trend = _trend(s.linear[0], c)
        short += f" with {trend.adjective('standard deviation')}"
        long.append(f"The standard deviation of the noise {trend.verb}.")
    elif s.linear:
        short += " with polynomially varying standard deviation"
        long.append(f"The standard deviation of the noise varies polynomially (degree {len(s.linear)}).")
    return short, long


def _smooth(s: Simplified, c: Context) -> tuple[str, list[str]]:
    head, *rest = s.local
    noun, scale = _local_noun(head)
    rapid = scale < RAPID_SAMPLES * c.spacing
    short = f"A rapidly varying {noun}" if rapid else f"{_article(noun).capitalize()} {noun}"
    if rapid:
        long = [f"This function is a rapidly varying but {noun} with a typical lengthscale of {c.duration(scale)}."]
    else:
        long = [f"This component is {_article(noun)} {noun} with a typical lengthscale of {c.duration(scale)}."]
    if isinstance(head, RationalQuadratic):
        long.append(
            f"Its variation mixes lengthscales around this one (rational quadratic, alpha = {_scalar(head.alpha):.3g})."
        )
    for extra in rest:  # a second local kernel of another kind: Table 4.1's SE post-modifier
        short += " whose shape changes smoothly"
        long.append(
            f"Its shape also changes smoothly with a typical lengthscale of {c.duration(_local_noun(extra)[1])}."
        )
    if len(s.linear) == 1:
        trend = _trend(s.linear[0], c)
        short += f" with {trend.adjective('marginal standard deviation')}"
        long.append(f"The marginal standard deviation of the function {trend.verb}.")
    elif s.linear:
        short += " with polynomially varying amplitude"
        long.append(f"The amplitude of the function varies polynomially (degree {len(s.linear)}).")
    return short, long


def _periodic(s: Simplified, c: Context) -> tuple[str, list[str]]:
    head, *more = s.periodic
    period = c.duration(_scalar(head.period) / c.harmonic)
    approximately = bool(s.local)
    shape = "sinusoidal" if isinstance(head, Cosine) else "periodic"
    if approximately:
        short = f"An approximately {shape} function with a period of {period}"
        first = f"This component is approximately {shape} with a period of {period}"
    else:
        short = f"A {shape} function with a period of {period}"
        first = f"This component is {shape} with a period of {period}"
    long = []
    if s.linear:
        short += " and with " + (
            _trend(s.linear[0], c).adjective("amplitude") if len(s.linear) == 1 else "polynomially varying amplitude"
        )
        first += " and varying amplitude"
    long.append(first + ".")
    if c.harmonic > 1:
        long.append(
            f"(Its kernel's period is {c.duration(_scalar(head.period))}, {c.harmonic} of these cycles: the fitted "
            f"function's harmonics are multiples of the {_ordinal(c.harmonic)}.)"
        )
    if approximately:
        across, *rest = s.local
        scale = _local_noun(across)[1]
        if scale > VERY_SMOOTH_SPANS * c.span:
            long.append("Across periods the shape of this function varies very smoothly.")
        else:
            long.append(
                f"Across periods the shape of this function varies smoothly with a typical lengthscale of "
                f"{c.duration(scale)}."
            )
        for extra in rest:
            long.append(
                f"Its shape also changes smoothly with a typical lengthscale of {c.duration(_local_noun(extra)[1])}."
            )
    if len(s.linear) == 1:
        long.append(f"The amplitude of the function {_trend(s.linear[0], c).verb}.")
    elif s.linear:
        long.append(f"The amplitude of the function varies polynomially (degree {len(s.linear)}).")
    long.append(_within_period(head, c))
    for extra in more:  # Table 4.1's Per post-modifier; eq. 4.2's "worst case" for products of periodic kernels
        short += f" modulated by a periodic function with a period of {c.duration(_scalar(extra.period))}"
        long.append(
            f"It is modulated by (multiplied by a function drawn from) a periodic function with a period of "
            f"{c.duration(_scalar(extra.period))}."
        )
    return short, long


def _ordinal(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def _within_period(kernel: Kernel, c: Context) -> str:
    if isinstance(kernel, Cosine):
        return "The shape of this function within each period is a sinusoid."
    a = 1.0 / _scalar(kernel.lengthscale) ** 2
    if ive(2, a) / ive(1, a) < SINUSOID_HARMONIC_RATIO:
        return "The shape of this function within each period is very smooth and resembles a sinusoid."
    # Per = exp(-2 sin^2(pi r / p) / l^2) ~ exp(-r^2 / (2 (l p / 2 pi)^2)) for r << p: a lengthscale l p / (2 pi).
    within = _scalar(kernel.lengthscale) * _scalar(kernel.period) / (2.0 * math.pi)
    return f"The shape of this function within each period has a typical lengthscale of {c.duration(within)}."


def _linear(s: Simplified, c: Context) -> tuple[str, list[str]]:
    if len(s.linear) > 1:
        return f"A polynomial function of degree {len(s.linear)}", [
            f"This component is a polynomial function of degree {len(s.linear)}."
        ]
    if c.slope_sign > 0:
        return "A linearly increasing function", ["This component is linearly increasing."]
    if c.slope_sign < 0:
        return "A linearly decreasing function", ["This component is linearly decreasing."]
    return "A linear function", ["This component is a linear function."]


def _other(s: Simplified, c: Context) -> tuple[str, list[str]]:
    """Factors no rule covers: eq. 4.2's worst case, "multiplied by a function drawn from GP(0, k)"."""
    short, long = "", []
    for kernel in s.other:
        short += f" multiplied by a function drawn from a GP with kernel {kernel}"
        long.append(f"It is multiplied by a function drawn from a GP with kernel {kernel} (eq. 4.2).")
    return short, long


class Trend(NamedTuple):
    adjective_form: str  # "linearly increasing" or "increasing linearly away from 1843"
    verb: str  # "increases linearly" or "increases linearly away from 1843"
    before_noun: bool

    def adjective(self, noun: str) -> str:
        return f"{self.adjective_form} {noun}" if self.before_noun else f"{noun} {self.adjective_form}"


def _trend(lin: Linear, c: Context) -> Trend:
    """How a Lin factor's |x - location| scales the amplitude over the data: it grows away from the location."""
    at = _scalar(lin.location)
    if at <= c.x_min:
        return Trend("linearly increasing", "increases linearly", True)
    if at >= c.x_max:
        return Trend("linearly decreasing", "decreases linearly", True)
    where = c.location(at)
    return Trend(f"increasing linearly away from {where}", f"increases linearly away from {where}", False)


def _local_noun(kernel: Kernel) -> tuple[str, float]:
    """(noun, lengthscale) of a local kernel: SE and RQ "smooth function" (RQ: our choice, sec. 4.4 leaves it out),
    Matern 1/2 "rough function", 3/2 and 5/2 "moderately smooth function" (our choice)."""
    noun = "smooth function"
    if isinstance(kernel, Matern12):
        noun = "rough function"
    elif isinstance(kernel, Matern32 | Matern52):
        noun = "moderately smooth function"
    return noun, _scalar(kernel.lengthscale)


def _applies(switches: Sequence[Switch], c: Context) -> str:
    """ "from 1644 until 1713", "until 1644 and from 1719 onwards", ... ("" when the term applies everywhere on the
    data). The branches' intervals are intersected, then clipped to the data's range."""
    region = [(-math.inf, math.inf)]
    for switch in switches:
        region = [(max(a, b), min(e, f)) for a, e in region for b, f in switch.intervals() if max(a, b) < min(e, f)]
    if not switches:
        return ""
    clipped = [(a, e) for a, e in region if e > c.x_min and a < c.x_max]
    if not clipped:
        return "nowhere on the data (its switches exclude each other or lie outside the data)"
    phrases = []
    for a, e in sorted(clipped):
        starts, ends = a > c.x_min, e < c.x_max
        if starts and ends:
            phrases.append(f"from {c.location(a)} until {c.location(e)}")
        elif starts:
            phrases.append(f"from {c.location(a)} onwards")
        elif ends:
            phrases.append(f"until {c.location(e)}")
    if not phrases:
        return ""
    return phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]


def _article(noun: str) -> str:
    return "an" if noun[0] in "aeiou" else "a"


def _scalar(value: Array) -> float:
    return float(np.squeeze(np.asarray(value, dtype=float)))
