"""ML-II of ``gp/regression`` with one kernel structure through ``inference.run`` (engine ``ml2``): restarts are
the chains of one compiled program, a restart outside the bounds is projected back into them, and the best restart
is kept (docs/sources/duvenaud.md#search-choices). One candidate of the structure search, and the figure scripts'
fits of a fixed kernel expression.

Chain 0 starts exactly at the given values (in the search: the candidate's, inherited from the parent where the
operator kept them, drawn on the data's scales where it introduced them, ``scales.py``); chains 1.. start ``jitter``
away in the unconstrained space (ml2's ``init_radius``: a factor exp(N(0, jitter^2)) on positive values, an
N(0, jitter^2) shift of locations on the standardised axis). With ``warm`` (the search's warm start, ``starts.py``)
one restart more starts exactly there.
"""

import dataclasses
from collections.abc import Mapping, Sequence

import jax.numpy as jnp
import numpy as np

import inference
import zoo
from inference.applications.structure_search.bounds import PeriodBounds
from zoo import gp, regression
from zoo.errors import OptionError, ZooError
from zoo.kernels import parse, with_values
from zoo.kernels.base import Kernel
from zoo.kernels.priors import default_values, parametrised_nodes, site_names
from zoo.regression import GP_DEFAULTS
from zoo.structure import program

__all__ = ["DEFAULT_NOISE", "FitFailure", "FitOutcome", "fit_ml2", "log_likelihood_at", "start_values"]

DEFAULT_NOISE = GP_DEFAULTS["noise"]  # gp/regression's start for the noise variance


class FitFailure(ZooError):
    """Every restart of a candidate ended on a non-finite marginal likelihood (after projecting into the bounds)."""


@dataclasses.dataclass(frozen=True)
class FitOutcome:
    kernel: Kernel  # fitted (the best restart)
    noise: float
    log_likelihood: float
    restart_log_likelihoods: list
    wall_s: float
    projected: list = dataclasses.field(default_factory=list)  # per restart: the bounds it broke (empty: none)
    chain: int = 0  # which restart was kept
    compile_s: float = 0.0  # of wall_s: XLA compilation (the rest: the optimisation and Python)
    run_s: float = 0.0  # of wall_s: the compiled program's calls
    warm_chain: int | None = None  # the first restart started from ``warm`` (they come last), if any
    iterations: list = dataclasses.field(default_factory=list)  # optimiser iterations per restart


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
    warm: Kernel | Sequence[Kernel | tuple[Kernel, float | None]] | None = None,
    fixed: Mapping[str, float] | None = None,
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
    be encodable (else ``NotEncodable``). ``warm``: a kernel of the same structure (a warm start, ``starts.py``),
    or several, from each of which one more restart runs, exactly (no jitter), with the same noise start (or, for a
    ``(kernel, noise)`` pair, that noise start). A restart that ends outside ``bounds`` is projected back and
    evaluated there (``bounds.py``); ``FitFailure`` when no restart has a finite log likelihood. ``fixed``: sites
    held at these constrained values (ml2's ``params``; ``gp/regression`` only), e.g. ``lin1_offset=0`` to fit a
    sub-model."""
    if fixed and capacity is not None:
        raise OptionError("fit_ml2: fixed sites are for gp/regression's site names; not with a shared capacity.")
    template = parse(kernel) if isinstance(kernel, str) else kernel
    own = {} if isinstance(kernel, str) else start_values(template)  # a string's sites start at the model defaults
    given = {**own, **({} if noise is None else {"noise": np.asarray(noise, float)}), **(init or {})}
    settings = (X, y, num_steps, seed, optimizer, capacity, dict(fixed or {}))
    logliks, fits, timing, iterations = _run(template, given, restarts, jitter, *settings)
    warm_chain = None
    for item in (warm,) if isinstance(warm, Kernel) else (warm or ()):  # one more restart each, exactly (starts.py)
        start, own_noise = item if isinstance(item, tuple) else (item, None)
        noise_start = given.get("noise", np.asarray(DEFAULT_NOISE)) if own_noise is None else np.asarray(own_noise)
        warm_given = {**start_values(start), "noise": noise_start}
        more, warm_fits, warm_timing, warm_iterations = _run(start, warm_given, 1, 0.0, *settings)
        logliks, fits, warm_chain = np.concatenate([logliks, more]), fits + warm_fits, warm_chain or len(fits)
        iterations = iterations + warm_iterations
        timing = [a + b for a, b in zip(timing, warm_timing, strict=True)]
    projected = [[] if bounds is None else bounds.violations(k) for k, _ in fits]
    for i, broken in enumerate(projected):
        if broken:  # projected back and evaluated there, not dropped (bounds.py)
            inside = bounds.project(fits[i][0])
            fits[i] = (inside, fits[i][1])
            logliks[i] = log_likelihood_at(inside, float(fits[i][1]), X, y)
    if not np.any(np.isfinite(logliks)):
        where = "" if not any(projected) else " (" + "; ".join(sorted({b for lines in projected for b in lines})) + ")"
        raise FitFailure(f"{template}: every restart ended on a non-finite log marginal likelihood{where}.")
    chain = int(np.argmax(np.where(np.isfinite(logliks), logliks, -np.inf)))
    fitted, fitted_noise = fits[chain]
    wall_s, compile_s, run_s = timing
    return FitOutcome(
        fitted,
        float(fitted_noise),
        float(logliks[chain]),
        logliks.tolist(),
        wall_s,
        projected,
        chain,
        compile_s,
        run_s,
        warm_chain,
        iterations,
    )


def _run(template: Kernel, given: dict, restarts: int, jitter: float, X, y, num_steps, seed, optimizer, capacity,
         fixed):  # fmt: skip
    """One ``inference.run`` of ml2 from ``given`` with the sites of ``fixed`` held: (log likelihoods (restarts,),
    [(kernel, noise)] per restart, [wall_s, compile_s, run_s], [iterations] per restart)."""
    if capacity is None:
        expression = str(template)
        model, data = zoo.get("gp/regression", kernel=expression), {"X": X, "y": y}
        start = {name: value for name, value in given.items() if name not in fixed}

        def read(estimates):
            free = {name: estimates[name].values for name in estimates.data_vars}
            return regression.kernel_and_noise({**{k: np.asarray(v, float) for k, v in fixed.items()}, **free},
                                               expression)  # fmt: skip
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
        params=fixed,
    )
    logliks = np.array(idata.point_estimates["log_likelihood"].values, float)  # a copy: projection writes to it
    fits = [read(idata.point_estimates.isel(chain=c)) for c in range(restarts)]
    attrs = idata.posterior.attrs
    iterations = np.asarray(idata.point_estimates["iterations"].values).reshape(-1).astype(int).tolist()
    return logliks, fits, [float(attrs["wall_s"]), float(attrs["compile_s"]), float(attrs["run_s"])], iterations


def log_likelihood_at(kernel: Kernel, noise: float, X: np.ndarray, y: np.ndarray) -> float:
    """log N(y | 0, K + noise I) at the given values: the objective ML-II maximises, evaluated once."""
    return float(gp.log_marginal_likelihood(kernel, jnp.asarray(X), jnp.asarray(y), noise))
