"""DAGP's predictive mixture (Kaiser 2021, eq. 3.8) from a fit's params, and the log densities that score it."""

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

from zoo import deep_gp
from zoo import sparse as sp
from zoo.dagp.config import DagpConfig
from zoo.kernels import SquaredExponential

Array = Any
LOG_2PI = math.log(2.0 * math.pi)
DRAW_BATCH = 16  # draws through a deep mode's inner layers evaluated at once in ``predict``


class DagpFit(NamedTuple):
    """One trained DAGP: every param of model and guide (constrained), and the configuration it was trained with."""

    params: dict
    config: DagpConfig


def fit_from(idata, config: DagpConfig, chain: int = 0) -> DagpFit:
    """Chain ``chain``'s fit from an ``svi`` result with ``guide="model"`` (its point_estimates group)."""
    estimates = idata.point_estimates.isel(chain=chain)
    return DagpFit({name: jnp.asarray(estimates[name].values) for name in estimates.data_vars}, config)


class DagpPrediction(NamedTuple):
    """Per test point and mode: f means (n, K), f variances (n, K), noise variances (K,) and the predictive
    assignment probabilities E[softmax(alpha_*)] (n, K). White modes have mean 0 and f variance 0. With a deep mode
    the f means and variances have a leading draw axis (S, n, K): each mode's predictive is then the equal-weight
    mixture over its S draws (eq. 2.90; shallow modes repeat their one Gaussian)."""

    mean: Array
    f_var: Array
    noise: Array
    weights: Array


def predict(fit_: DagpFit, X_new, key, num_samples: int = 200) -> DagpPrediction:
    """The predictive mixture (eq. 3.8): per-mode SVGP Gaussians (a deep mode: ``num_samples`` draws through its
    inner layers, eq. 2.90) and Monte-Carlo assignment probabilities from ``num_samples`` draws of alpha_*."""
    p, config = fit_.params, fit_.config
    X_new = jnp.asarray(X_new)
    n, deep = X_new.shape[0], any(d > 1 for d in config.depths)
    modes, j = [], 0
    for k, kind in enumerate(config.kernels):
        if kind == "se":
            mode_key = jax.random.fold_in(key, j + 1)
            modes.append(_signal_predictive(p, j, config.depths[k] - 1, X_new, mode_key, num_samples))
            j += 1
        else:
            modes.append((jnp.zeros(n), jnp.zeros(n)))
    shape = (num_samples, n) if deep else (n,)
    means = [jnp.broadcast_to(mean, shape) for mean, _ in modes]
    variances = [jnp.broadcast_to(var, shape) for _, var in modes]
    alpha_mean, alpha_var = [], []
    for k in range(config.num_modes):
        kernel = SquaredExponential(p["alpha_variance_map"][k], p["alpha_lengthscale_map"][k])
        q = sp.WhitenedQ(p["alpha_q_mean"][k], p["alpha_q_scale_tril"][k])
        pred = sp.sparse_predict(kernel, p["alpha_inducing_inputs"][k], q, X_new)
        alpha_mean.append(pred.mean)
        alpha_var.append(pred.cov)
    am, asd = jnp.stack(alpha_mean, -1), jnp.sqrt(jnp.maximum(jnp.stack(alpha_var, -1), 0.0))
    draws = am + asd * jax.random.normal(key, (num_samples, *am.shape))
    weights = jax.nn.softmax(draws, -1).mean(0)
    return DagpPrediction(jnp.stack(means, -1), jnp.maximum(jnp.stack(variances, -1), 0.0), p["noise_map"], weights)


def _mode_log_densities(pred: DagpPrediction, y) -> Array:
    """log p_k(y_n) of every mode's predictive (n, K): a Gaussian, or the mixture over a deep prediction's draws."""
    var = pred.f_var + pred.noise
    log_comp = -0.5 * (LOG_2PI + jnp.log(var) + (jnp.asarray(y)[:, None] - pred.mean) ** 2 / var)
    if log_comp.ndim == 3:  # (S, n, K): equal-weight mixture over the draws
        return logsumexp(log_comp, 0) - jnp.log(log_comp.shape[0])
    return log_comp


def mixture_log_density(pred: DagpPrediction, y) -> Array:
    """log sum_k w_k p_k(y) per test point (n,), p_k = N(y | mean_k, f_var_k + noise_k) (or its draws' mixture)."""
    return logsumexp(jnp.log(pred.weights) + _mode_log_densities(pred, y), -1)


def mode_log_density(pred: DagpPrediction, y, k: int) -> Array:
    """log p_k(y): the predictive of one mode alone (n,)."""
    return _mode_log_densities(pred, y)[:, k]


def _signal_predictive(p: dict, j: int, inner_count: int, X_new, key, num_samples: int) -> tuple[Array, Array]:
    """Signal mode j's q(f_*) at X_new: mean and variance (n,) of its SVGP (shallow), or (S, n) for S draws through
    its ``inner_count`` inner layers (``deep_gp.propagate``) followed by its last layer."""
    kernel = SquaredExponential(p["variance_map"][j], p["lengthscale_map"][j])
    q = sp.WhitenedQ(p["q_mean"][j], p["q_scale_tril"][j])

    def last_layer(H):
        pred = sp.sparse_predict(kernel, p["inducing_inputs"][j], q, H)
        return pred.mean, pred.cov

    if inner_count == 0:
        return last_layer(X_new)
    layers = [deep_gp.layer_from_params(p, layer, True, prefix=f"mode{j}_") for layer in range(1, inner_count + 1)]

    def one_draw(draw_key):
        eps = jax.random.normal(draw_key, (inner_count, *X_new.shape))
        return last_layer(deep_gp.propagate(layers, X_new, list(eps)))

    # Batched over draws: one vmap over all S draws holds (S, n, M, D) kernel intermediates at once, 20 GB for the
    # cart-pole's 500 draws at 10,000 test points.
    return jax.lax.map(one_draw, jax.random.split(key, num_samples), batch_size=DRAW_BATCH)


def training_assignments(fit_: DagpFit) -> Array:
    """q(a_n) = softmax(assignment logits): (N, K)."""
    return jax.nn.softmax(fit_.params["assignment_logits"], -1)
