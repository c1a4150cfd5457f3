"""ML-II of ``gp/regression`` with one kernel structure through ``inference.run`` (engine ``ml2``): restarts are
the chains of one compiled program and the best admissible restart is kept (docs/sources/duvenaud.md#search-choices).
One candidate of the structure search, and the figure scripts' fits of a fixed kernel expression.

Chain 0 starts exactly at the given values (in the search: the candidate's, inherited from the parent where the
operator kept them, drawn on the data's scales where it introduced them, ``scales.py``); chains 1.. start ``jitter``
away in the unconstrained space (ml2's ``init_radius``: a factor exp(N(0, jitter^2)) on positive values, an
N(0, jitter^2) shift of locations on the standardised axis).
"""

import dataclasses
from collections.abc import Mapping

import numpy as np

import inference
import zoo
from inference.applications.structure_search.bounds import PeriodBounds, best_admissible
from zoo import regression
from zoo.errors import ZooError
from zoo.kernels import parse, with_values
from zoo.kernels.base import Kernel
from zoo.kernels.priors import default_values, parametrised_nodes, site_names
from zoo.regression import GP_DEFAULTS
from zoo.structure import program

__all__ = ["DEFAULT_NOISE", "FitFailure", "FitOutcome", "fit_ml2", "start_values"]

DEFAULT_NOISE = GP_DEFAULTS["noise"]  # gp/regression's start for the noise variance


class FitFailure(ZooError):
    """Every restart of a candidate ended on a non-finite marginal likelihood or outside the bounds."""


@dataclasses.dataclass(frozen=True)
class FitOutcome:
    kernel: Kernel  # fitted (the best restart)
    noise: float
    log_likelihood: float
    restart_log_likelihoods: list
    wall_s: float
    rejected: list = dataclasses.field(default_factory=list)  # per restart: the bounds it broke (empty: kept)
    chain: int = 0  # which restart was kept
    compile_s: float = 0.0  # of wall_s: XLA compilation (the rest: the optimisation and Python)
    run_s: float = 0.0  # of wall_s: the compiled program's calls


def start_values(kernel: Kernel, noise: float | None = None) -> dict[str, np.ndarray]:
    """Constrained starting values by site name: the kernel's own hyperparameters, and the noise variance if given."""
    values = [np.asarray(getattr(n, p), float) for n in parametrised_nodes(kernel) for p in n.PARAMS]
    start = dict(zip(site_names(kernel), values, strict=True))
    return start if noise is None else {**start, "noise": np.asarray(noise, float)}


def fit_ml2(
    kernel: Kernel | str,
    X: np.ndarray,
    y: np.ndarray,
    noise: float | None = None,
    restarts: int = 3,
    jitter: float = 1.0,
    num_steps: int = 300,
    seed: int = 0,
    bounds: PeriodBounds | None = None,
    init: Mapping[str, float] | None = None,
    optimizer: str = "lbfgs",
    capacity: program.Capacity | None = None,
) -> FitOutcome:
    """ML-II of ``gp/regression`` with ``kernel``'s structure on (X (n, D), y (n,)); the restart with the highest
    log marginal likelihood among those within ``bounds`` (all, without bounds) is kept.

    Chain 0 starts at ``init`` (constrained values by site name, e.g. ``se0_lengthscale``, ``noise``), then for a
    ``Kernel`` at its own hyperparameters and ``noise``, and for the rest (every site of an expression string) at the
    model's defaults (every hyperparameter 1, noise 0.1). ``optimizer``: ml2's, "lbfgs" (optax, restarts vmapped in
    one compiled program) or "host-lbfgs" (scipy's L-BFGS over a compiled value-and-gradient, restarts one after
    another: compiles several times faster; docs/performance.md#structure-search). ``capacity``: fit through
    ``gp/structure``, the program shared by every structure within that capacity (``zoo.structure.program``;
    docs/performance.md#shared-program), instead of ``gp/regression`` compiled for this structure; the kernel must
    be encodable (else ``NotEncodable``)."""
    template = parse(kernel) if isinstance(kernel, str) else kernel
    own = {} if isinstance(kernel, str) else start_values(template)  # a string's sites start at the model defaults
    given = {**own, **({} if noise is None else {"noise": np.asarray(noise, float)}), **(init or {})}
    if capacity is None:
        expression = kernel if isinstance(kernel, str) else str(kernel)
        model, data, start = zoo.get("gp/regression", kernel=expression), {"X": X, "y": y}, given

        def read(estimates):
            return regression.kernel_and_noise(estimates, expression)
    else:
        encoding = program.encode(template, np.shape(X)[1])
        model = zoo.get("gp/structure", slots=capacity.text(), terms=capacity.terms, factors=capacity.factors)
        data = {"X": X, "y": y, **encoding.arrays(capacity)}
        values = encoding.slot_values(template, capacity, {**default_values(template), **given})
        start = {**values, "noise": given.get("noise", DEFAULT_NOISE)}

        def read(estimates):
            values = encoding.kernel_values(template, estimates)
            return with_values(template, values, np.shape(X)[1]), np.asarray(estimates["noise"])

    idata = inference.run(
        model,
        data,
        engine="ml2",
        seed=seed,
        num_chains=restarts,
        num_steps=num_steps,
        init=start,
        init_radius=jitter,
        optimizer=optimizer,
    )
    logliks = np.asarray(idata.point_estimates["log_likelihood"].values, float)
    if not np.any(np.isfinite(logliks)):
        raise FitFailure(f"{template}: every restart ended on a non-finite log marginal likelihood.")
    fits = [read(idata.point_estimates.isel(chain=c)) for c in range(restarts)]
    chain, violations = best_admissible(logliks, [k for k, _ in fits], bounds)
    if chain is None:
        broken = "; ".join(sorted({line for lines in violations for line in lines}))
        raise FitFailure(f"{template}: no restart ended within the periodic kernels' bounds ({broken}).")
    fitted, fitted_noise = fits[chain]
    return FitOutcome(
        fitted,
        float(fitted_noise),
        float(logliks[chain]),
        logliks.tolist(),
        float(idata.posterior.attrs["wall_s"]),
        violations,
        chain,
        float(idata.posterior.attrs["compile_s"]),
        float(idata.posterior.attrs["run_s"]),
    )
