"""The most-likely heteroscedastic GP, MLHGP (Kersting, Plagemann, Pfaff & Burgard 2007; McHutchon 2014, sec. 2.3,
the heteroscedastic baseline of Fig. 2.7 and Tables 2.1-2.3; docs/sources/mchutchon.md#mlhgp).

    1. G1: a homoscedastic GP on the data (``ml2`` on ``gp/regression``);
    2. z_i = log(((y_i - mu_i)^2 + s_i^2) / 2), mu_i, s_i^2 G1's predictive of y at x_i (``zoo.heteroscedastic``);
    3. G2: a GP on {x_i, z_i - mean(z)} (``ml2`` on ``gp/regression``; the constant mean(z) is added back);
    4. G3: a GP on the data with noise variances r_i = exp(G2's mean at x_i) (``ml2`` on ``gp/fixed-noise``);
    5. G1 := G3 and repeat from 2, ``iterations`` times (the thesis: convergence is not guaranteed; Kersting et al.
       iterate until it converges; a fixed count here, 5 by default, every iterate returned for inspection).

Prediction at x*: N(mu_3(x*), s_3^2(x*) + exp(mu_2(x*) + mean(z))). Each fit is one ``inference.run``, so this is an
application; the compiled ``ml2`` programs are reused across iterations (same shapes).
"""

from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

import inference
from zoo import gp, heteroscedastic, regression
from zoo.kernels import SquaredExponential

__all__ = ["ITERATIONS", "MLHGP", "fit", "noise_sd", "predict"]

Array = Any
ITERATIONS = 5


class MLHGP(NamedTuple):
    """One iterate: G3's kernel and training noise variances r (N,), G2's kernel, noise and targets z - z_mean (N,),
    z_mean, and G3's log evidence log N(y | 0, K + diag(r))."""

    X: Array
    y: Array
    kernel: Any
    noise_var: Array
    noise_kernel: Any
    noise_noise: Array
    z_centred: Array
    z_mean: float
    log_evidence: float


def _ml2(model, data, seed):
    run = inference.run(model, data, engine="ml2", seed=seed)
    return run.point_estimates.isel(chain=0)


def fit(X: Array, y: Array, iterations: int = ITERATIONS, seed: int = 0) -> list[MLHGP]:
    """MLHGP on X (N, D), y (N,): the iterates of ``iterations`` >= 1 rounds of steps 2-4 (the last is the fit)."""
    if int(iterations) < 1:
        raise ValueError(f"mlhgp: iterations must be >= 1, got {iterations!r}.")
    X, y = jnp.asarray(X, float), jnp.asarray(y, float)
    kernel, noise = regression.kernel_and_noise(_ml2("gp/regression", {"X": X, "y": y}, seed))
    pred = gp.predict(kernel, X, y, noise, X, full_cov=False)
    mean, var_y = pred.mean, pred.cov + noise
    history = []
    for it in range(int(iterations)):
        z = heteroscedastic.empirical_log_noise(y, mean, var_y)
        z_mean = float(jnp.mean(z))
        noise_kernel, noise_noise = regression.kernel_and_noise(
            _ml2("gp/regression", {"X": X, "y": z - z_mean}, seed + 1 + it)
        )
        log_r = gp.predict(noise_kernel, X, z - z_mean, noise_noise, X, full_cov=False).mean + z_mean
        r = jnp.exp(log_r)
        est = _ml2("gp/fixed-noise", {"X": X, "noise_var": r, "y": y}, seed + 100 + it)
        kernel = SquaredExponential(jnp.asarray(est["variance"]), jnp.asarray(est["lengthscale"]))
        pred = heteroscedastic.predict(kernel, X, y, r, X)
        mean, var_y = pred.mean, pred.cov + r
        evidence = float(gp.log_marginal_likelihood(kernel, X, y, r))
        history.append(MLHGP(X, y, kernel, r, noise_kernel, noise_noise, z - z_mean, z_mean, evidence))
    return history


def predict(model: MLHGP, X_new: Array) -> tuple[Array, Array]:
    """Predictive mean and variance of y at X_new (m, D): G3's f plus G2's noise, exp(mu_2(x*) + z_mean)."""
    X_new = jnp.asarray(X_new, float)
    f = heteroscedastic.predict(model.kernel, model.X, model.y, model.noise_var, X_new)
    log_r = gp.predict(model.noise_kernel, model.X, model.z_centred, model.noise_noise, X_new, full_cov=False).mean
    return f.mean, f.cov + jnp.exp(log_r + model.z_mean)


def noise_sd(model: MLHGP) -> np.ndarray:
    """The training noise standard deviations sqrt(r) (N,)."""
    return np.sqrt(np.asarray(model.noise_var))
