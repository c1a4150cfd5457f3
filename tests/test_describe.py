"""zoo.structure.describe: English descriptions of a kernel's additive components (Duvenaud 2014, ch. 4), and
zoo.structure.rescale (the same covariance in data units).

The sentence table holds kernels with hyperparameters in data units (years) and the sentences the thesis prints for
the same structures: Figs. 4.2-4.8 (solar irradiance, the airline model) and App. D (the solar report), plus the
worked example of sec. 4.1.4. Where the two runs of the solar data print different numbers (1643/1716 in ch. 4,
1644/1719 in App. D) the kernel below carries the numbers of the sentence it is checked against.
The exact checks: the terms' kernels sum to the kernel (Gram matrices to 1e-12), terms without switches are
``zoo.decomposition.components(distribute=True)``, SE x SE merges into the SE with the same Gram, and the rescaled
kernels equal the originals in the other coordinates.
"""

import math

import jax
import numpy as np
import pytest
from scipy.special import ive

import zoo  # noqa: F401  (float64)
from zoo import decomposition
from zoo.kernels import CP, CW, SE, WN, Const, Lin, Per, parse
from zoo.structure import describe as d
from zoo.structure.rescale import rescale_inputs, scale_output

MONTHLY = np.arange(1949.0, 1961.0, 1.0 / 12.0)[:, None]  # airline: 144 months
ANNUAL = np.arange(1610.0, 2012.0, 1.0)[:, None]  # solar: 402 years
WEEKS_6 = 6.0 * 7.0 / 365.25  # years
MONTHS_3_1 = 3.1 / 12.0
# Per's lengthscale (dimensionless) whose small-distance lengthscale l p / (2 pi) is 6.0 weeks at a 1-year period
PER_6_WEEKS = 2.0 * math.pi * WEEKS_6


@jax.jit
def gram(kernel, a, b):
    """k(a, b) in one compiled program (op-by-op evaluation compiles every kernel operation on its own)."""
    return kernel(a, b)


@jax.jit
def training_gram(kernel, a):
    return kernel(a)


@jax.jit
def summed_grams(kernels, a):
    return sum(k(a) for k in kernels)


def window(inside, outside, start, end):
    return CW(inside, outside, start=start, duration=end - start, width=0.5)


AIRLINE = [  # Fig. 4.6 (short), Figs. 4.7-4.8 (long); "linearly increasing" from the posterior slope (+1)
    (Lin(location=1940.0), 1, "A linearly increasing function.", "This component is linearly increasing."),
    (
        SE(lengthscale=40.0) * Per(period=1.0, lengthscale=PER_6_WEEKS) * Lin(location=1940.0),
        0,
        "An approximately periodic function with a period of 1.0 years and with linearly increasing amplitude.",
        "This component is approximately periodic with a period of 1.0 years and varying amplitude. Across periods "
        "the shape of this function varies very smoothly. The amplitude of the function increases linearly. The "
        "shape of this function within each period has a typical lengthscale of 6.0 weeks.",
    ),
    (SE(lengthscale=2.0), 0, "A smooth function.", "This component is a smooth function with a typical lengthscale "
     "of 2.0 years."),
    (
        WN() * Lin(location=1940.0),
        0,
        "Uncorrelated noise with linearly increasing standard deviation.",
        "This component models uncorrelated noise. The standard deviation of the noise increases linearly.",
    ),
]  # fmt: skip

SOLAR = [  # Fig. 4.2 (short), Figs. 4.3-4.5 and App. D (long)
    (Const(), "A constant.", "This component is constant."),
    (
        window(Const(), Const(variance=0.0), 1643.0, 1716.0),
        "A constant. This function applies from 1643 until 1716.",
        "This component is constant. This component applies from 1643 until 1716.",
    ),
    (
        window(Const(variance=0.0), SE(lengthscale=23.1), 1643.0, 1716.0),
        "A smooth function. This function applies until 1643 and from 1716 onwards.",
        "This component is a smooth function with a typical lengthscale of 23.1 years. This component applies until "
        "1643 and from 1716 onwards.",
    ),
    (
        window(Const(variance=0.0), SE(lengthscale=36.9) * Per(period=10.8, lengthscale=5.0), 1643.0, 1716.0),
        "An approximately periodic function with a period of 10.8 years. This function applies until 1643 and from "
        "1716 onwards.",
        "This component is approximately periodic with a period of 10.8 years. Across periods the shape of this "
        "function varies smoothly with a typical lengthscale of 36.9 years. The shape of this function within each "
        "period is very smooth and resembles a sinusoid. This component applies until 1643 and from 1716 onwards.",
    ),
    (  # App. D component 5
        window(Const(variance=0.0), SE(lengthscale=1.2), 1644.0, 1719.0),
        "A rapidly varying smooth function. This function applies until 1644 and from 1719 onwards.",
        "This function is a rapidly varying but smooth function with a typical lengthscale of 1.2 years. This "
        "component applies until 1644 and from 1719 onwards.",
    ),
    (WN(), "Uncorrelated noise.", "This component models uncorrelated noise."),  # App. D component 6
    (  # App. D component 7
        CP(Const(variance=0.0), SE(lengthscale=MONTHS_3_1) * Lin(location=1843.0), location=1751.0, width=0.5),
        "A rapidly varying smooth function with marginal standard deviation increasing linearly away from 1843. This "
        "function applies from 1751 onwards.",
        "This function is a rapidly varying but smooth function with a typical lengthscale of 3.1 months. The "
        "marginal standard deviation of the function increases linearly away from 1843. This component applies from "
        "1751 onwards.",
    ),
    (  # App. D component 8: a window's outside times a changepoint's before
        CP(window(Const(variance=0.0), SE(lengthscale=MONTHS_3_1), 1644.0, 1719.0), Const(variance=0.0),
           location=1751.0, width=0.5),
        "A rapidly varying smooth function. This function applies until 1644 and from 1719 until 1751.",
        "This function is a rapidly varying but smooth function with a typical lengthscale of 3.1 months. This "
        "component applies until 1644 and from 1719 until 1751.",
    ),
]  # fmt: skip


def only_nonzero(kernel):
    """The one term of ``kernel`` whose factors are not a zero constant (the table's switches keep one branch)."""
    parts = [t for t in d.terms(kernel) if not any(isinstance(f, Const) and float(f.variance) == 0 for f in t.factors)]
    assert len(parts) == 1, [str(t) for t in parts]
    return parts[0]


@pytest.mark.parametrize("kernel, slope, short, long", AIRLINE, ids=lambda v: None)
def test_airline_sentences(kernel, slope, short, long):
    [term] = d.terms(kernel)
    text = d.describe_term(term, d.Context.from_inputs(MONTHLY, slope_sign=slope))
    assert (text.short, text.long) == (short, long)


@pytest.mark.parametrize("kernel, short, long", SOLAR, ids=lambda v: None)
def test_solar_sentences(kernel, short, long):
    text = d.describe_term(only_nonzero(kernel), d.Context.from_inputs(ANNUAL))
    assert (text.short, text.long) == (short, long)


def test_worked_example():
    """Sec. 4.1.4: SE x (WN x Lin + CP(C, Per)) -> WN x Lin + SE x sigma + SE x Per x sigma-bar (eqs. 4.4-4.6)."""
    kernel = SE(lengthscale=20.0) * (WN() * Lin(location=1600.0) + CP(Const(), Per(period=11.0), location=1700.0))
    texts = [t.short for t in d.describe(kernel, ANNUAL)]
    assert texts == [
        "Uncorrelated noise with linearly increasing standard deviation.",
        "A smooth function. This function applies until 1700.",
        "An approximately periodic function with a period of 11.0 years. This function applies from 1700 onwards.",
    ]


def test_posterior_slope_names_the_direction():
    """describe() reads the Lin component's posterior mean: rising data give "increasing", falling "decreasing"."""
    x = MONTHLY[:48]
    kernel = Lin(location=1940.0, variance=1.0) + WN(variance=0.01)
    for sign, word in ((1.0, "increasing"), (-1.0, "decreasing")):
        y = sign * (x[:, 0] - 1949.0)
        first = d.describe(kernel, x, y=y, noise=0.01)[0]
        assert first.short == f"A linearly {word} function."


def test_units_and_locations():
    c = d.Context.from_inputs(MONTHLY)
    assert [c.duration(v) for v in (10.8, 1.0, 1.2, MONTHS_3_1, WEEKS_6, 3.0 / 365.25)] == [
        "10.8 years", "1.0 years", "1.2 years", "3.1 months", "6.0 weeks", "3.0 days",
    ]  # fmt: skip
    assert c.location(1955.4567) == "1955.46"  # monthly spacing 0.083: two decimals
    assert d.Context.from_inputs(ANNUAL).location(1643.6) == "1644"
    assert d.Context.from_inputs(ANNUAL, unit="km").duration(2.5) == "2.5 km"


def test_adjective_thresholds():
    """Each adjective switches at its named constant and not elsewhere."""
    c = d.Context.from_inputs(ANNUAL)  # spacing 1 year, span 401 years
    edge = d.RAPID_SAMPLES * c.spacing
    assert "rapidly" in d.describe_term(d.Term((SE(lengthscale=0.99 * edge),)), c).short
    assert "rapidly" not in d.describe_term(d.Term((SE(lengthscale=1.01 * edge),)), c).short
    very = d.VERY_SMOOTH_SPANS * c.span
    for scale, expected in ((1.01 * very, "varies very smoothly."), (0.99 * very, "varies smoothly with")):
        assert expected in d.describe_term(d.Term((SE(lengthscale=scale), Per(period=11.0))), c).long
    # sinusoid: I_2(a) / I_1(a) at the threshold, a = 1 / l^2; bisect for the boundary lengthscale
    lo, hi = 0.1, 100.0
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if ive(2, 1 / mid**2) / ive(1, 1 / mid**2) >= d.SINUSOID_HARMONIC_RATIO else (lo, mid)
    for scale, sinusoid in ((0.99 * lo, False), (1.01 * hi, True)):
        text = d.describe_term(d.Term((Per(period=11.0, lengthscale=scale),)), c).long
        assert ("resembles a sinusoid" in text) == sinusoid


def test_simplification_rules():
    c = d.Context.from_inputs(ANNUAL)
    # WN x stationary = WN; C absorbed; Lin alone with C
    assert d.describe_term(d.Term((WN(), SE(), Per(period=3.0), Const())), c).short == "Uncorrelated noise."
    assert d.describe_term(d.Term((Const(variance=2.0), Lin(location=1500.0))), c).short == "A linear function."
    # SE x SE is one SE with 1/l^2 summed: the same Gram, and the merged lengthscale is printed
    a, b = SE(lengthscale=3.0, variance=2.0), SE(lengthscale=4.0, variance=0.5)
    merged = d.simplify(d.Term((a, b))).local[0]
    x = ANNUAL[:30]
    np.testing.assert_allclose(gram(merged, x, x), gram(a * b, x, x), rtol=1e-12, atol=1e-14)
    assert "2.4 years" in d.describe_term(d.Term((a, b)), c).long  # (1/9 + 1/16)^-1/2 = 2.4
    assert d.describe_term(d.Term((Lin(location=1500.0), Lin(location=1500.0))), c).short == (
        "A polynomial function of degree 2."
    )
    # products of periodic kernels: Table 4.1's post-modifier
    assert d.describe_term(d.Term((Per(period=11.0), Per(period=100.0))), c).short == (
        "A periodic function with a period of 11.0 years modulated by a periodic function with a period of 100.0 years."
    )


@pytest.mark.parametrize(
    "kernel",
    [
        SE(lengthscale=3.0) * (WN() * Lin(location=1700.0) + CP(Const(), Per(period=11.0), location=1800.0)),
        window(SE(lengthscale=2.0) + Const(), Per(period=10.0) * (SE() + Lin(location=1650.0)), 1700.0, 1800.0)
        + CP(window(Const(), SE(), 1650.0, 1700.0), Lin(location=1900.0) * SE(lengthscale=30.0), location=1850.0),
    ],
)
def test_terms_sum_to_the_kernel(kernel):
    x = ANNUAL[::7]
    total = summed_grams(tuple(t.kernel() for t in d.terms(kernel)), x)
    np.testing.assert_allclose(total, training_gram(kernel, x), rtol=1e-12, atol=1e-12)


def test_terms_without_switches_are_the_distributed_components():
    kernel = parse("SE x (Per + Lin) + RQ x (SE + C) + WN")
    assert [str(t.kernel()) for t in d.terms(kernel)] == [
        str(k) for k in decomposition.components(kernel, distribute=True)
    ]


def test_other_input_columns_are_refused():
    with pytest.raises(d.DescriptionError, match="one input column"):
        d.terms(parse("SE_1"))


def test_rescaled_kernels_are_the_same_covariance():
    kernel = (
        CP(SE(lengthscale=0.3) * Per(period=0.2, lengthscale=0.8), Lin(location=0.1, offset=0.4), location=0.2,
           width=0.05)
        + window(Const(), SE(lengthscale=0.5) * Lin(location=-0.3), -0.4, 0.1)
        + WN(variance=0.1)
    )  # fmt: skip
    shift, scale = 1950.0, 7.0
    x_std = np.linspace(-1.0, 1.0, 23)[:, None]
    x = shift + scale * x_std
    moved = rescale_inputs(kernel, shift, scale)
    np.testing.assert_allclose(training_gram(moved, x), training_gram(kernel, x_std), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gram(moved, x, x[::2]), gram(kernel, x_std, x_std[::2]), atol=1e-12)
    scaled = scale_output(moved, 9.0)
    np.testing.assert_allclose(training_gram(scaled, x), 9.0 * training_gram(moved, x), rtol=1e-10, atol=1e-12)


def test_a_period_is_described_by_the_cycle_the_fitted_function_repeats():
    """Issue 43: on Mauna Loa, (C + Per) x SE was fitted with a period of 6.0 years and a Per lengthscale of 0.21
    (many harmonics of similar prior weight), its 6th harmonic carrying the annual cycle, and the report said "a
    period of 6.0 years" of a component plotted as the annual cycle. The description now reads the component's
    posterior mean: an annual cycle under a 6-year kernel period is "1.0 years" (the kernel's period named in the
    paragraph); a genuine 6-year cycle under the same kernel stays "6.0 years"; a 1-year kernel stays 1 year."""
    x = np.arange(1960.0, 1990.0, 1.0 / 12.0)[:, None]
    annual = np.sin(2 * np.pi * x[:, 0]) + 0.4 * np.cos(4 * np.pi * x[:, 0])
    sexennial = np.sin(2 * np.pi * x[:, 0] / 6.0)
    cases = [(6.0, annual, "1.0 years"), (6.0, sexennial, "6.0 years"), (1.0, annual, "1.0 years")]
    for period, y, words in cases:
        kernel = Per(period=period, lengthscale=0.25 if period > 1 else 1.0, variance=1.0)
        text = d.describe(kernel, x, y=y, noise=0.01)[0]
        assert text.short == f"A periodic function with a period of {words}.", (period, text.short)
        assert ("kernel's period is 6.0 years, 6 of these" in text.long) == (period == 6.0 and words == "1.0 years")
