"""GP regression with given per-point noise variances, and the pieces of the most-likely heteroscedastic GP (MLHGP).

MLHGP (Kersting, Plagemann, Pfaff & Burgard 2007; McHutchon 2014, sec. 2.3, model M6, the baseline of Fig. 2.7 and
Tables 2.1-2.3; docs/sources/mchutchon.md#mlhgp) alternates three GPs: G1 on the data, G2 on empirical log noise
variances, G3 on the data with the noise G2 predicts. The fits are ML-II runs through ``inference.run``
(``inference.applications.mlhgp``); this module holds the model G3 is, and the pure algebra:

- ``gp/fixed-noise``: y ~ N(0, K_SE(X) + diag(noise_var)), ``noise_var`` (N,) observed data, sites ``lengthscale`` (D,)
  and ``variance`` with gp/regression's LogNormal(0, 1) priors; ``collapsed``, so ``ml2`` fits it.
- ``empirical_log_noise``: Kersting's step-2 estimate z_i = log((1/S) sum_s 1/2 (y_i - t_s)^2), t_s ~ G's predictive
  of y at x_i, in its S -> infinity limit z_i = log(((y_i - mu_i)^2 + s_i^2) / 2) (closed form instead of 100 draws).
- ``predict``: the predictive of f at new inputs under per-point training noise.

Shapes: X (N, D), y (N,), noise_var (N,).
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from zoo import gp
from zoo.kernels import SquaredExponential
from zoo.registry import Dataset, ModelSpec, frozen, positive_int, register

Array = Any

__all__ = ["empirical_log_noise", "fixed_noise_gp", "predict", "simulate_heteroscedastic"]


def fixed_noise_gp(X, noise_var, y=None):
    """y ~ N(0, K(X) + diag(noise_var)) with an SE-ARD kernel; the noise is data, not a site."""
    lengthscale = numpyro.sample("lengthscale", dist.LogNormal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    variance = numpyro.sample("variance", dist.LogNormal(0.0, 1.0))
    kernel = SquaredExponential(variance, lengthscale)
    numpyro.sample("y", gp.GaussianEvidence(kernel(X) + jnp.diag(noise_var)), obs=y)


def empirical_log_noise(y: Array, mean: Array, var_y: Array) -> Array:
    """z_i = log(((y_i - mu_i)^2 + s_i^2) / 2): the expectation of Kersting's 1/2 (y_i - t)^2 over t ~ N(mu_i, s_i^2),
    the predictive of y at x_i (noise included). (N,)."""
    return jnp.log(0.5 * ((y - mean) ** 2 + var_y))


def predict(kernel, X: Array, y: Array, noise_var: Array, X_new: Array) -> gp.GaussianPosterior:
    """Posterior of f at X_new (mean (m,), variances (m,)) given training noise variances noise_var (N,)."""
    return gp.predict(kernel, X, y, jnp.asarray(noise_var), X_new, full_cov=False)


def simulate_heteroscedastic(key, n: int = 100) -> Dataset:
    """x ~ U(0, 5), f = sin 2x, noise sd 0.05 + 0.25 x / 5 (rising); noise_var is the truth's."""
    n = positive_int("n", n)
    k_x, k_e = jax.random.split(key)
    x = jnp.sort(jax.random.uniform(k_x, (n,), minval=0.0, maxval=5.0))
    sd = 0.05 + 0.05 * x
    y = jnp.sin(2.0 * x) + sd * jax.random.normal(k_e, (n,))
    return Dataset(
        observed={"X": np.asarray(x)[:, None], "noise_var": np.asarray(sd**2), "y": y}, truth={"f": jnp.sin(2.0 * x)}
    )


register(
    ModelSpec(
        name="gp/fixed-noise",
        summary="GP regression (SE-ARD) with given per-point noise variances (MLHGP's third GP)",
        source="Kersting et al. 2007; McHutchon 2014, sec. 2.3 (model M6)",
        program=fixed_noise_gp,
        simulate=simulate_heteroscedastic,
        data_shapes=frozen({"X": ("N", "D"), "noise_var": ("N",), "y": ("N",)}),
        default_params=frozen({"lengthscale": 1.0, "variance": 1.0}),
        capabilities=frozenset({"continuous", "collapsed"}),
    )
)
