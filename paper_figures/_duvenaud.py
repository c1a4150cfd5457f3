"""ML-II fits of ``gp/regression`` with a kernel expression for the Duvenaud figure scripts, through ``inference.run``
(engine ``ml2``, L-BFGS): restarts are the engine's chains, and the restart with the highest log marginal likelihood is
kept."""

from typing import NamedTuple

import numpy as np

import inference
import zoo
from zoo import kernels, regression
from zoo.kernels.priors import parametrised_nodes


class Fit(NamedTuple):
    kernel: kernels.Kernel  # the fitted kernel (hyperparameters at the ML-II optimum)
    noise: float  # fitted noise variance
    log_likelihood: float  # log p(y | theta) at the optimum (the ML-II log evidence)
    chain: int  # which restart won
    all_log_likelihoods: np.ndarray  # (restarts,)
    wall_s: float


def fit_ml2(
    expression: str, X, y, restarts: int = 1, num_steps: int = 500, seed: int = 0, init: dict | None = None
) -> Fit:
    """ML-II of ``gp/regression`` with kernel ``expression`` on (X (n, D), y (n,)); chain 0 starts at ``init``
    (constrained values by site name) and the model's defaults for the rest (every hyperparameter 1, noise 0.1), the
    others N(0, 1) away in the unconstrained space."""
    idata = inference.run(
        zoo.get("gp/regression", kernel=expression),
        {"X": X, "y": y},
        engine="ml2",
        seed=seed,
        num_chains=restarts,
        num_steps=num_steps,
        init=init or {},
    )
    logliks = np.asarray(idata.point_estimates["log_likelihood"].values, float)
    chain = int(np.nanargmax(logliks))
    kernel, noise = regression.kernel_and_noise(idata.point_estimates.isel(chain=chain), expression)
    return Fit(kernel, float(noise), float(logliks[chain]), chain, logliks, float(idata.posterior.attrs["wall_s"]))


def hyperparameters(fit: Fit) -> dict[str, float]:
    """The fitted hyperparameters, named ``<symbol><node>_<name>`` in reading order as the sample sites are (ARD
    lengthscales one entry per input column), plus the noise variance."""
    values = {}
    for index, node in enumerate(parametrised_nodes(fit.kernel)):
        for param in node.PARAMS:
            value = np.atleast_1d(np.asarray(getattr(node, param), float))
            for d, v in enumerate(value):
                values[f"{node.SYMBOL.lower()}{index}_{param}" + (f"[{d}]" if value.size > 1 else "")] = float(v)
    values["noise"] = fit.noise
    return values
