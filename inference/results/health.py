"""Health checks of a finished run: the engine's own diagnostics against stated thresholds, one warning per failure.

``inference.run`` calls ``check(idata)`` on every result, logs each problem as one line on stderr (logger
``inference.health``; silence it with ``logging.getLogger("inference.health").setLevel(logging.ERROR)``) and records
the lines in the result's attribute ``health`` (a JSON list; empty when the run passed), which ``zoo bench`` reports
as a column (docs/architecture.md#health).

Thresholds and their sources:

- R-hat (rank-normalised, split, folded; ArviZ) > ``RHAT_MAX`` = 1.01: Vehtari, Gelman, Simpson, Carpenter and
  Buerkner (2021), "Rank-normalization, folding, and localization: an improved R-hat for assessing convergence of
  MCMC", Bayesian Analysis 16(2), 667-718, sec. 4.3 ("use the sample only if R-hat < 1.01"). The same paper's
  ESS rule follows.
- bulk or tail ESS < ``ESS_PER_CHAIN_MIN`` = 100 per chain (400 for four chains): the same paper, sec. 4.3; Stan's
  ``monitor``/``summary`` and posteriordb's reference posteriors (Magnusson et al. 2024, "posteriordb: testing,
  benchmarking and developing Bayesian inference algorithms") use the same two rules.
- divergent transitions > 0 after warm-up: Stan Reference Manual, "Divergent transitions" (any divergence means the
  sampler missed part of the posterior; the draws are biased).
- E-BFMI < ``EBFMI_MIN`` = 0.2 in any chain: Betancourt (2016), "Diagnosing suboptimal cotangent disintegrations in
  Hamiltonian Monte Carlo", arXiv:1604.00695, with the threshold of Stan's ``check_energy`` (Betancourt's Stan case
  studies' ``stan_utility``).
- SVI loss not converged: the mean ELBO of the last tenth of the steps is above that of the tenth before the half-way
  point by more than ``SVI_REL`` = 1 % of its size (Stan ADVI's relative tolerance ``tol_rel_obj`` = 0.01, Kucukelbir
  et al. 2017, JMLR 18(14), sec. 3.4) and by more than ``SVI_Z`` = 3 standard errors (so the ELBO estimate's noise
  does not trigger it) and by at least ``SVI_MIN_NATS`` = 0.5 nats (so that a model whose ELBO is near 0 does not
  trip the relative rule on the fraction of a nat that a decaying learning rate buys once the fit has converged):
  the second half of the run still improved the fit, which may have stopped only because the learning rate decayed.
  A run too short to move at all (tens of steps) can look flat; R-hat across ``num_chains`` independent fits catches
  fits that disagree.
- SMC and particle-filter degeneracy: fewer than ``DISTINCT_MIN`` = 10 % of a run's draws are distinct (the final
  particle population of tempered SMC collapsed onto a few particles; the particle filter's paths share a few
  ancestors, the path degeneracy of Doucet and Johansen (2011), "A tutorial on particle filtering and smoothing",
  sec. 4.3 -- use ``pgas`` for smoothing).
- Pareto k > ``PARETO_K_MAX`` = 0.7 of the importance weights of a run that reports them (``sample_stats.log_weight``,
  chain x draw): Vehtari, Simpson, Gelman, Yao and Gabry (2024), "Pareto smoothed importance sampling", JMLR 25(72),
  sec. 3; Yao, Vehtari, Simpson and Gelman (2018), "Yes, but did it work?: evaluating variational inference", ICML.
  No engine of the zoo reports importance weights yet; the check runs for any result that does.

R-hat and ESS are checked where a run has more than ``MIN_DRAWS`` draws per chain (point estimates have none);
R-hat only with more than one chain (``svi``'s chains are independent fits: R-hat flags optima that disagree).
"""

import json
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

RHAT_MAX = 1.01
ESS_PER_CHAIN_MIN = 100
EBFMI_MIN = 0.2
SVI_Z = 3.0
SVI_REL = 0.01
SVI_MIN_NATS = 0.5
DISTINCT_MIN = 0.1
PARETO_K_MAX = 0.7
MIN_DRAWS = 4
DEGENERACY_ENGINES = frozenset({"tsmc", "pf"})


class _StderrHandler(logging.Handler):
    """Writes to the ``sys.stderr`` of the moment (pytest's capture, a redirected stream), one line per record."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            print(self.format(record), file=sys.stderr, flush=True)
        except Exception:
            self.handleError(record)


def stderr_logger(name: str) -> logging.Logger:
    """A logger that prints its records as plain lines on stderr unless the application configured it."""
    logger = logging.getLogger(name)
    if not logger.handlers:
        logger.addHandler(_StderrHandler())
        logger.propagate = False
        logger.setLevel(logging.INFO)
    return logger


LOG = stderr_logger("inference.health")


@dataclass(frozen=True)
class Problem:
    """One failed check: which check, the variable, the value found and the threshold, and the warning line."""

    check: str
    variable: str
    value: float
    threshold: float
    message: str


def check(idata: Any) -> list[Problem]:
    """Every failed health check of ``idata`` (an InferenceData from ``inference.run``), in a fixed order."""
    attrs = idata.posterior.attrs
    engine = str(attrs.get("engine", "?"))
    problems: list[Problem] = []
    for checker in CHECKS:
        try:
            problems += checker(idata, engine)
        except Exception as exc:  # a check that cannot digest a result must not lose the run: say so instead
            name = checker.__name__.strip("_")
            problems.append(
                Problem(name, "", np.nan, np.nan, f"health check {name} failed: {type(exc).__name__}: {exc}")
            )
    return problems


def _sampling_diagnostics(idata: Any, engine: str) -> list[Problem]:
    from inference.results import diagnostics

    chains, draws = idata.posterior.sizes["chain"], idata.posterior.sizes["draw"]
    if draws < MIN_DRAWS or not idata.posterior.data_vars:
        return []
    table = diagnostics.component_diagnostics(idata)
    variables = np.array([str(label).split("[", 1)[0] for label in table.index])
    problems = []
    rules: list[tuple[str, str, float, Callable]] = [
        ("ess_bulk", "bulk ESS", ESS_PER_CHAIN_MIN * chains, np.less),
        ("ess_tail", "tail ESS", ESS_PER_CHAIN_MIN * chains, np.less),
    ]
    if chains > 1:
        rules.insert(0, ("r_hat", "R-hat", RHAT_MAX, np.greater))
    for column, name, threshold, fails in rules:
        values = table[column].to_numpy(dtype=float)
        bad = fails(values, threshold) & np.isfinite(values)
        for variable in dict.fromkeys(variables[bad]):
            rows = variables == variable
            worst_at = np.nanargmax(values[rows]) if fails is np.greater else np.nanargmin(values[rows])
            worst, label = values[rows][worst_at], table.index[rows][worst_at]
            count = int(bad[rows].sum())
            where = "" if rows.sum() == 1 else f" (worst {label}; {count} of {int(rows.sum())} components)"
            sign = ">" if fails is np.greater else "<"
            shown = f"{worst:.3f}" if column == "r_hat" else f"{worst:.3g}"  # R-hat 1.0104 is not 1.01
            limit = f"{threshold:.2f}" if column == "r_hat" else f"{threshold:.0f} ({ESS_PER_CHAIN_MIN} per chain)"
            problems.append(
                Problem(
                    column,
                    variable,
                    float(worst),
                    threshold,
                    f"{name} {shown} {sign} {limit} for {variable}{where}",
                )
            )
    return problems


def _divergences(idata: Any, engine: str) -> list[Problem]:
    if "sample_stats" not in idata.groups() or "diverging" not in idata.sample_stats:
        return []
    diverging = np.asarray(idata.sample_stats["diverging"], dtype=bool)
    count = int(diverging.sum())
    if count == 0:
        return []
    message = f"{count} divergent transitions after warm-up ({count / diverging.size:.1%} of draws)"
    return [Problem("divergences", "(sampler)", float(count), 0.0, message)]


def bfmi(energy: np.ndarray) -> np.ndarray:
    """E-BFMI per chain of an energy array (chain, draw): mean squared energy change over the energy variance
    (Betancourt 2016, eq. 3.1 estimated as in Stan's ``check_energy``)."""
    energy = np.asarray(energy, dtype=float)
    return np.sum(np.diff(energy, axis=1) ** 2, axis=1) / energy.shape[1] / np.var(energy, axis=1)


def _energy(idata: Any, engine: str) -> list[Problem]:
    if "sample_stats" not in idata.groups() or "energy" not in idata.sample_stats:
        return []
    energy = np.asarray(idata.sample_stats["energy"])
    if energy.shape[1] < MIN_DRAWS:
        return []
    values = bfmi(energy)
    low = np.flatnonzero(values < EBFMI_MIN)
    if not len(low):
        return []
    worst = float(values[low].min())
    chains = ", ".join(map(str, low))
    message = (
        f"E-BFMI {worst:.3f} < {EBFMI_MIN} in chain(s) {chains}: the momentum resampling explores the energy badly"
    )
    return [Problem("ebfmi", "(sampler)", worst, EBFMI_MIN, message)]


def still_improving(elbo: np.ndarray) -> tuple[bool, float, float]:
    """(whether an ELBO trace (step,) still rose in the second half of the optimisation, the z-score of the rise, the
    rise relative to the final ELBO): the mean of the last tenth of the steps against the tenth before the half-way
    point, by a two-sample z-test."""
    elbo = np.asarray(elbo, dtype=float)
    elbo = elbo[np.isfinite(elbo)]
    window = len(elbo) // 10
    if window < 5:
        return False, np.nan, np.nan
    middle, last = elbo[4 * window : 5 * window], elbo[-window:]
    rise = last.mean() - middle.mean()
    relative = rise / max(abs(last.mean()), 1.0)
    se = np.sqrt(last.var(ddof=1) / window + middle.var(ddof=1) / window)
    z = rise / se if se > 0 else (np.inf if rise > 0 else 0.0)
    return bool(z > SVI_Z and relative > SVI_REL and rise > SVI_MIN_NATS), float(z), float(relative)


def _svi_convergence(idata: Any, engine: str) -> list[Problem]:
    if "optimization" not in idata.groups() or "elbo" not in idata.optimization:
        return []
    traces = np.asarray(idata.optimization["elbo"])
    rising = []
    for chain, trace in enumerate(traces):
        improving, z, relative = still_improving(trace)
        if improving:
            rising.append((chain, z, relative))
    if not rising:
        return []
    worst = max(relative for *_, relative in rising)
    chains = ", ".join(str(c) for c, *_ in rising)
    message = (
        f"SVI loss not converged in chain(s) {chains}: the ELBO rose by {worst:.1%} (> {SVI_REL:.0%}, > {SVI_MIN_NATS} "
        f"nats and > {SVI_Z:g} standard errors) between the middle and the end of the optimisation; raise num_steps"
    )
    return [Problem("svi_convergence", "elbo", worst, SVI_REL, message)]


def _degeneracy(idata: Any, engine: str) -> list[Problem]:
    if engine not in DEGENERACY_ENGINES:
        return []
    draws = idata.posterior.sizes["draw"]
    problems = []
    for name, values in idata.posterior.data_vars.items():
        array = np.asarray(values).reshape(values.shape[0], draws, -1)
        distinct = min(len(np.unique(chain, axis=0)) for chain in array)
        if distinct < DISTINCT_MIN * draws:
            what = "particles" if engine == "tsmc" else "paths"
            message = (
                f"{engine} degeneracy: only {distinct} distinct {what} of {draws} in a run for {name} "
                f"(< {DISTINCT_MIN:.0%})"
            )
            problems.append(Problem("degeneracy", name, float(distinct), DISTINCT_MIN * draws, message))
    return problems


def _pareto_k(idata: Any, engine: str) -> list[Problem]:
    if "sample_stats" not in idata.groups() or "log_weight" not in idata.sample_stats:
        return []
    from inference.results import diagnostics

    k = diagnostics.pareto_k(np.asarray(idata.sample_stats["log_weight"]).ravel())
    if not k > PARETO_K_MAX:
        return []
    message = f"Pareto k {k:.2f} > {PARETO_K_MAX} of the importance weights: the estimates are unreliable"
    return [Problem("pareto_k", "log_weight", float(k), PARETO_K_MAX, message)]


CHECKS = (_sampling_diagnostics, _divergences, _energy, _svi_convergence, _degeneracy, _pareto_k)


def messages(problems: list[Problem]) -> list[str]:
    return [problem.message for problem in problems]


def announce(engine: str, model: str, problems: list[Problem]) -> None:
    for problem in problems:
        LOG.warning(f"warning: {engine} on {model}: {problem.message}")


def from_attrs(attrs: Any) -> list[str]:
    """The warning lines recorded on a result (empty for a healthy run or one written before the checks existed)."""
    return list(json.loads(attrs.get("health", "[]")))
