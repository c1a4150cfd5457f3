"""Sequential Bayesian quadrature with hyperparameters fitted by ML-II (Duvenaud 2014, ch. 8;
docs/sources/duvenaud.md#bayesian-quadrature): evaluate the integrand at the nodes, fit the SE kernel through
``inference.run`` (``gp/regression``, ``ml2``, noise held fixed), choose the next batch of nodes by the greedy
reduction of the integral's variance (8.14, ``zoo.quadrature.greedy_design``), repeat; at every size of a schedule
the posterior of Z = int f(x) p(x) dx. ``log=True`` models a positive integrand by the thesis's log-GP (ch. 8.1-8.2,
``zoo.quadrature.log_integral_posterior``): the GP is on log f, Z's mean is Z_0 and its variance the linearised one,
and the nodes reduce that variance (w = l_bar p held at each batch's start, since a new node's value is unknown when
it is chosen).

The algebra is ``zoo.quadrature``; this module decides what to evaluate and fits, so it lives in ``inference/``
(docs/architecture.md#data-flow). Defaults the thesis leaves open (docs/sources/duvenaud.md#fig-bayesian-quadrature):
the first ``first`` nodes by the greedy design under SE with unit hyperparameters; two ML-II starts; the log-GP's
prior mean at the mean of the observed log values; l_bar's kernel SE with half the log-GP's lengthscale; its
candidates a grid over the measure's mean +- 5 sd spaced by a quarter of the log-GP's lengthscale (one-dimensional
measures; give ``candidates`` otherwise). Shapes: pool (P, D), nodes (n, D).
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import inference
from zoo import quadrature as bq
from zoo import regression
from zoo.errors import OptionError
from zoo.kernels import SquaredExponential

__all__ = ["Step", "candidate_grid", "ell_kernel", "fit_se", "log_posterior", "sequential"]

Array = Any


class Step(NamedTuple):
    """The posterior of Z after ``n`` evaluations: mean, sd (NaN when a linearised variance came out negative by
    cancellation), the nodes (n, D), the values modelled there (f, or log f), and the fitted kernel (of f or of
    log f; the log-GP's prior mean is the mean of the log values)."""

    n: int
    mean: float
    sd: float
    nodes: np.ndarray
    values: np.ndarray
    kernel: SquaredExponential


def fit_se(X: np.ndarray, y: np.ndarray, noise: float, starts: int = 2, seed: int = 0) -> SquaredExponential:
    """SE variance and (ARD) lengthscale by ML-II through ``inference.run``, the noise variance held at ``noise``;
    the best of ``starts`` starts (scipy L-BFGS, one after another)."""
    result = inference.run(
        "gp/regression",
        {"X": np.asarray(X, float), "y": np.asarray(y, float)},
        engine="ml2",
        seed=seed,
        num_chains=starts,
        optimizer="host-lbfgs",
        params={"noise": noise},
    )
    est = result.point_estimates
    best = int(np.nanargmax(np.asarray(est["log_likelihood"])))
    values = {name: np.asarray(est[name][best]) for name in ("lengthscale", "variance")} | {"noise": noise}
    return regression.kernel_and_noise(values)[0]


def ell_kernel(log_kernel: SquaredExponential) -> SquaredExponential:
    """l_bar's kernel (8.27): SE with half the log-GP's lengthscale. exp sharpens the features of log f (a peak of
    height a in log f is about sqrt(a) times narrower in f); l_bar only interpolates m_exp, so its variance does not
    matter (noise-free interpolation)."""
    return SquaredExponential(1.0, log_kernel.lengthscale / 2.0)


def candidate_grid(log_kernel: SquaredExponential, measure: bq.Mixture, width: float = 5.0) -> np.ndarray:
    """Where m_exp is put through (8.10): a grid over the measure's mean +- ``width`` sd, spaced by a quarter of the
    log-GP's lengthscale, 9 to 201 points. One-dimensional measures with one component."""
    if measure.means.shape != (1, 1):
        raise OptionError("candidate_grid builds candidates for a one-dimensional Gaussian measure; pass candidates.")
    centre, sd = float(measure.means[0, 0]), float(np.sqrt(measure.covs[0, 0, 0]))
    lengthscale = float(np.max(np.asarray(log_kernel.lengthscale)))
    num = int(np.clip(np.ceil(8.0 * width * sd / lengthscale), 9, 201))
    return np.linspace(centre - width * sd, centre + width * sd, num)[:, None]


def log_posterior(
    log_kernel: SquaredExponential,
    measure: bq.Mixture,
    X: np.ndarray,
    log_y: np.ndarray,
    noise: float,
    candidates: np.ndarray | None = None,
) -> bq.LogIntegral:
    """``zoo.quadrature.log_integral_posterior`` with this module's defaults: the log-GP's prior mean at the mean of
    log_y, l_bar's kernel ``ell_kernel``, the candidates ``candidate_grid`` unless given."""
    grid = candidate_grid(log_kernel, measure) if candidates is None else candidates
    return bq.log_integral_posterior(
        log_kernel, measure, X, log_y, grid, ell_kernel(log_kernel), noise=noise, log_mean=float(np.mean(log_y))
    )


def sequential(
    f: Callable[[np.ndarray], np.ndarray],
    measure: bq.Mixture,
    pool: np.ndarray,
    schedule: list[int],
    noise: float = 1e-8,
    log: bool = False,
    first: int = 4,
    candidates: np.ndarray | None = None,
) -> list[Step]:
    """BQ of int f dp at every size of ``schedule`` (increasing, the first >= ``first``): f maps nodes (n, D) to
    values (n,) (positive when ``log``); nodes come from ``pool`` (P, D)."""
    pool = np.asarray(pool, float)
    steps_ok = all(b > a for a, b in zip(schedule, schedule[1:], strict=False))
    if not schedule or first < 1 or schedule[0] < first or not steps_ok:
        raise OptionError(f"schedule must increase and start at or above first = {first}, got {schedule}.")
    if schedule[-1] > pool.shape[0]:
        raise OptionError(f"the schedule asks for {schedule[-1]} nodes, the pool has {pool.shape[0]}.")

    def target(X):
        values = np.asarray(f(X), float)
        return np.log(values) if log else values

    def fit(X, y):
        return fit_se(X, y - np.mean(y) if log else y, noise)  # the log-GP's mean: that of the log values

    X = pool[np.asarray(bq.greedy_design(SquaredExponential(), measure, pool, first, noise))]
    y = target(X)
    kernel = fit(X, y)
    steps = []
    for n in schedule:
        if len(X) < n:
            weights = log_posterior(kernel, measure, X, y, noise, candidates).measure if log else measure
            new = pool[np.asarray(bq.greedy_design(kernel, weights, pool, n - len(X), noise, X))]
            X, y = np.concatenate([X, new]), np.concatenate([y, target(new)])
            kernel = fit(X, y)
        if log:
            result = log_posterior(kernel, measure, X, y, noise, candidates)
        else:
            result = bq.integral_posterior(kernel, measure, X, y, noise)
        var = float(result.var)
        steps.append(Step(n, float(result.mean), float(np.sqrt(var)) if var >= 0 else float("nan"), X, y, kernel))
    return steps
