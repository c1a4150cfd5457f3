"""Bounds on the periodic kernels in the structure search (inference/applications/structure_search/bounds.py,
docs/sources/duvenaud.md#period-bounds).

The case that motivated them: on airline (monthly, standardised inputs) the depth-2 search kept Per + RQ with period
0.40 years and Per lengthscale 7e-6, an aliasing optimum that extrapolated worse than SE. Exact checks: that kernel
is flagged and a yearly Per is not; the restart choice skips an inadmissible restart however high its likelihood;
and an ML-II fit started at the degenerate point stays there (the bug) unless the bounds reject it.
"""

import numpy as np
import pytest

from inference.applications.structure_search.bounds import PeriodBounds, best_admissible
from inference.applications.structure_search.fit import FitFailure, fit_ml2
from zoo.kernels import parse
from zoo.kernels.stationary import Periodic

YEARS = 1949 + np.arange(129) / 12.0  # airline's training inputs: monthly
SD = YEARS.std()


def standardised_per(period_years: float, lengthscale: float) -> Periodic:
    """A Per on the standardised axis the search fits on (the period divided by the inputs' sd)."""
    return Periodic(variance=1.0, lengthscale=lengthscale, period=period_years / SD)


@pytest.fixture(scope="module")
def bounds():
    return PeriodBounds.of((YEARS - YEARS.mean()) / SD)


def test_the_airline_aliasing_optimum_is_out_of_bounds_and_a_yearly_period_is_not(bounds):
    degenerate = parse("Per + RQ")
    degenerate = type(degenerate)(standardised_per(0.40, 7e-6), degenerate.right)
    (line,) = bounds.violations(degenerate)
    assert "aliasing" in line
    assert bounds.admissible(standardised_per(1.0, 1.0))
    # Period bounds: 3 months and half the 10.7-year range, with a lengthscale large enough not to alias.
    assert not bounds.admissible(standardised_per(2.5 / 12, 10.0))
    assert bounds.admissible(standardised_per(3.01 / 12, 10.0))
    assert not bounds.admissible(standardised_per(5.4, 1.0))


def test_a_weekly_profile_on_daily_inputs_stays_admissible():
    # l p = 2.1 days: adjacent days correlate exp(-2 sin^2(pi / 7) / 0.3^2) = 0.015, a free weekly profile.
    days = PeriodBounds.of(np.arange(200.0))
    assert days.admissible(Periodic(variance=1.0, lengthscale=0.3, period=7.0))
    assert not days.admissible(Periodic(variance=1.0, lengthscale=0.2, period=7.0))


def test_the_restart_kept_is_the_best_admissible_one(bounds):
    bad, good = standardised_per(0.40, 7e-6), standardised_per(1.0, 1.0)
    chosen, violations = best_admissible([12.0, 5.0, np.nan, 4.0], [bad, good, good, good], bounds)
    assert chosen == 1 and violations[0] and not violations[1]
    assert best_admissible([12.0, 5.0], [bad, good], None)[0] == 0
    assert best_admissible([12.0, np.nan], [bad, good], bounds)[0] is None


def test_a_fit_stuck_at_the_aliasing_optimum_fails_instead_of_being_kept(bounds):
    # y: a yearly cycle plus a trend, standardised; the start is the degenerate Per, from which the gradient is ~0.
    x = (YEARS - YEARS.mean()) / SD
    y = np.sin(2 * np.pi * YEARS) + 0.3 * (YEARS - YEARS.mean())
    y = (y - y.mean()) / y.std()
    start = standardised_per(0.40, 7e-6)
    stuck = fit_ml2(start, x[:, None], y, noise=0.1, restarts=1, num_steps=50)
    assert np.max(np.asarray(stuck.kernel.lengthscale)) < 1e-3  # the bug: without bounds the degenerate optimum is kept
    with pytest.raises(FitFailure, match="aliasing"):
        fit_ml2(start, x[:, None], y, noise=0.1, restarts=1, num_steps=50, bounds=bounds)
