"""Bounds on the periodic kernels in the structure search (inference/applications/structure_search/bounds.py,
docs/sources/duvenaud.md#period-bounds).

The case that motivated them: on airline (monthly, standardised inputs) the depth-2 search kept Per + RQ with period
0.40 years and Per lengthscale 7e-6, an aliasing optimum that extrapolated worse than SE. Exact checks: that kernel
is flagged and a yearly Per is not; the restart choice skips an inadmissible restart however high its likelihood;
and an ML-II fit started at the degenerate point stays there (the bug) unless the bounds project it back.
"""

import numpy as np
import pytest

from inference.applications.structure_search.bounds import PeriodBounds, best_admissible
from inference.applications.structure_search.fit import FitFailure, fit_ml2, log_likelihood_at
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


def test_a_fit_stuck_at_the_aliasing_optimum_is_projected_back_not_kept_or_dropped(bounds):
    # y: a yearly cycle plus a trend, standardised; the start is the degenerate Per, from which the gradient is ~0.
    x = (YEARS - YEARS.mean()) / SD
    y = np.sin(2 * np.pi * YEARS) + 0.3 * (YEARS - YEARS.mean())
    y = (y - y.mean()) / y.std()
    start = standardised_per(0.40, 7e-6)
    stuck = fit_ml2(start, x[:, None], y, noise=0.1, restarts=1, num_steps=50)
    assert np.max(np.asarray(stuck.kernel.lengthscale)) < 1e-3  # the bug: without bounds the degenerate optimum is kept
    # Issue 43: with bounds the restart is projected into them (period clipped, l raised to 2 dx / p) and its
    # likelihood evaluated there, so the candidate keeps a score instead of failing.
    kept = fit_ml2(start, x[:, None], y, noise=0.1, restarts=1, num_steps=50, bounds=bounds)
    assert bounds.admissible(kept.kernel) and any("aliasing" in b for b in kept.projected[0])
    assert kept.log_likelihood == pytest.approx(log_likelihood_at(kept.kernel, kept.noise, x[:, None], y), abs=1e-9)
    assert kept.log_likelihood < stuck.log_likelihood  # the projected point is not the degenerate optimum


def test_projection_moves_only_what_breaks_a_bound(bounds):
    bad, good = standardised_per(0.40, 7e-6), standardised_per(1.0, 1.0)
    inside = bounds.project(bad + good)
    assert bounds.admissible(inside)
    assert float(inside.left.period) == pytest.approx(float(bad.period))  # 0.40 years is within the period bounds
    assert float(inside.left.lengthscale) * float(inside.left.period) >= 2.0 * bounds.spacing[0]
    assert inside.right == good
    assert float(bounds.project(standardised_per(8.0, 1.0)).period) == pytest.approx(0.5 * bounds.range[0])


def test_every_restart_non_finite_is_a_failure_with_the_reason(monkeypatch):
    from inference.applications.structure_search import fit as fit_module

    def nan_run(template, given, restarts, *args):
        return np.full(restarts, np.nan), [(template, 0.1)] * restarts, [0.0, 0.0, 0.0], [0] * restarts

    monkeypatch.setattr(fit_module, "_run", nan_run)
    with pytest.raises(FitFailure, match="non-finite"):
        fit_ml2("SE", YEARS[:, None], np.sin(YEARS), restarts=2)
