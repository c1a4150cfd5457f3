"""Scores of a fitted structure, higher is better, all on the log-evidence scale (docs/sources/duvenaud.md#scores).

- ``bic``: log p(y | theta_ML) - |M| / 2 log N (Duvenaud eq. 3.3), |M| = ``zoo.kernels.num_params`` + 1 (noise).
  Free once the candidate is fitted.
- ``laplace``: log p(y | M) = log int p(y | theta) p(theta) dtheta by Laplace's method in NumPyro's unconstrained
  space z (log-transformed positive hyperparameters), with gp/regression's priors on the standardised data
  (LogNormal(0, 1) on every positive hyperparameter, Normal(0, 1) on locations, LogNormal(-2, 1) on the noise;
  docs/sources/duvenaud.md#kernel-priors). The point is the MAP (engine ``ml2``, objective ``map``, started at
  the ML-II optimum); the MAP is taken without the log-Jacobian, so the log integrand
  f(z) = log p(y | z) + log p(z) + log|dtheta/dz| still has a gradient g there, and the second-order expansion
  f(z0) + g.u - u'Hu/2 is integrated exactly: log Z = f(z0) + g'H^-1 g / 2 + d/2 log 2 pi - log|H|^1/2,
  H = -hessian f (``jax.hessian``), log-det and solves by Cholesky. Cost: one more ML-II compile and run, and a
  Hessian (d gradients). A Hessian that is not positive definite is a failure (score -inf, recorded).
- ``tsmc``: log p(y | M) by adaptive tempered SMC from the same prior (engine ``tsmc``, its ``log_evidence``
  attribute: the log of the mean over independent runs of the unbiased evidence estimates). Cost: a tempering
  schedule of tens of steps, each num_particles x num_mcmc_steps x leapfrog gradients.
- ``structure_posterior``: p(M | y) over a set of structures from their log evidences, uniform prior on the set.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from numpyro.infer.util import potential_energy, unconstrain_fn

import inference
import zoo
from inference.core import get_engine, validate_options
from inference.core.program import conditioned_program
from zoo.errors import OptionError

__all__ = [
    "SCORES",
    "bic",
    "check_score_options",
    "gaussian_integral",
    "laplace_log_evidence",
    "structure_posterior",
    "tsmc_log_evidence",
]

SCORES = ("bic", "laplace", "tsmc")


def bic(log_likelihood: float, num_params: int, n: int) -> float:
    """Duvenaud eq. 3.3: log p(D | M) - |M| / 2 log N (higher is better)."""
    return float(log_likelihood - 0.5 * num_params * math.log(n))


def _map_values(spec, data: dict, init: dict, num_steps: int, seed: int) -> dict[str, np.ndarray]:
    idata = inference.run(
        spec, data, engine="ml2", objective="map", seed=seed, num_chains=1, num_steps=num_steps, init=init
    )
    names = [n for n in idata.point_estimates.data_vars if n not in ("log_likelihood", "log_prior", "iterations")]
    return {n: np.asarray(idata.point_estimates[n].values[0], float) for n in names}


def laplace_log_evidence(
    expression: str, X: np.ndarray, y: np.ndarray, init: dict, num_steps: int = 300, seed: int = 0
) -> dict[str, float]:
    """Laplace's log evidence of ``gp/regression`` with kernel ``expression`` on (X (n, D), y (n,)) (module
    docstring); ``init``: constrained values by site name to start the MAP search from (the ML-II optimum).
    Returns ``log_evidence`` and the log integrand at the point, the gradient correction and the dimension."""
    spec = zoo.get("gp/regression", kernel=expression)
    data = {"X": jnp.asarray(X, float), "y": jnp.asarray(y, float)}
    values = _map_values(spec, data, init, num_steps, seed)
    model = conditioned_program(spec)
    z0 = unconstrain_fn(model, ({},), data, values)
    flat, unravel = ravel_pytree(z0)

    def log_integrand(z):
        return -potential_energy(model, ({},), data, unravel(z))

    # One compiled program: op by op, the Hessian of a composite kernel's density dispatched (and compiled)
    # hundreds of small programs, 22-26 s per candidate against 8-9 s (docs/performance.md#laplace-score).
    (f0, g), H = jax.jit(lambda z: (jax.value_and_grad(log_integrand)(z), -jax.hessian(log_integrand)(z)))(flat)
    log_z, correction = gaussian_integral(f0, g, H)
    out = {"log_evidence": log_z, "log_joint": float(f0), "gradient_correction": correction, "dimension": len(flat)}
    if not math.isfinite(log_z):
        out["error"] = "the Hessian of -log p(y, z) is not positive definite"
    return out


def gaussian_integral(f0, g, H) -> tuple[float, float]:
    """(log int exp(f0 + g.u - u'Hu/2) du, g'H^-1 g / 2) for H (d, d) positive definite (Cholesky); -inf when it
    is not. The exact integral of a second-order expansion: f0 + g'H^-1 g / 2 + d/2 log 2 pi - log|H|^1/2."""
    L = jnp.linalg.cholesky(jnp.asarray(H, float))
    if not bool(jnp.all(jnp.isfinite(L))):
        return -math.inf, math.nan
    w = jax.scipy.linalg.solve_triangular(L, jnp.asarray(g, float), lower=True)
    d = L.shape[0]
    correction = 0.5 * float(w @ w)
    return float(f0) + correction + 0.5 * d * math.log(2 * math.pi) - float(jnp.sum(jnp.log(jnp.diag(L)))), correction


def check_score_options(score: str, options: dict) -> None:
    """An ``OptionError`` before any fit for ``score_options`` the score cannot take: ``tsmc``'s are the engine's
    options (validated where every engine option is); ``bic`` and ``laplace`` take none."""
    if score == "tsmc":
        validate_options(get_engine("tsmc"), options)
    elif options:
        raise OptionError(f"score {score!r} takes no score_options, got {sorted(options)}.")


def tsmc_log_evidence(
    expression: str,
    X: np.ndarray,
    y: np.ndarray,
    num_particles: int = 256,
    num_chains: int = 2,
    seed: int = 0,
    **engine_options,
) -> dict[str, float]:
    """The tempered-SMC log evidence of ``gp/regression`` with kernel ``expression`` (engine ``tsmc``; any other
    of its options, e.g. ``num_mcmc_steps``, passed on and validated by the engine)."""
    idata = inference.run(
        zoo.get("gp/regression", kernel=expression),
        {"X": X, "y": y},
        engine="tsmc",
        seed=seed,
        num_chains=num_chains,
        num_particles=num_particles,
        **engine_options,
    )
    return {
        "log_evidence": float(idata.posterior.attrs["log_evidence"]),
        "wall_s": float(idata.posterior.attrs["wall_s"]),
    }


def structure_posterior(log_evidences: dict[str, float]) -> dict[str, float]:
    """p(M | y) = p(y | M) / sum_M' p(y | M') over the given structures (uniform prior on that set), from their log
    evidences (or BIC, its large-N approximation); non-finite evidences get probability 0."""
    names = list(log_evidences)
    values = np.array([log_evidences[n] for n in names], float)
    finite = np.isfinite(values)
    if not finite.any():
        return dict.fromkeys(names, 0.0)
    shifted = np.where(finite, values - values[finite].max(), -np.inf)
    weights = np.exp(shifted)
    return dict(zip(names, (weights / weights.sum()).tolist(), strict=True))
