"""Full-GP DAGP with the assignments summed out, for NUTS on small N, and its posterior predictive mixture."""

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from jax.scipy.special import logsumexp

from zoo import gp
from zoo.dagp.config import dagp_config
from zoo.dagp.predict import DagpPrediction, mixture_log_density
from zoo.kernels import SquaredExponential

Array = Any
# The sites with a leading mode axis (K, ...): relabelling the modes permutes all of them together.
MODE_SITES = (
    "lengthscale",
    "variance",
    "alpha_lengthscale",
    "alpha_variance",
    "noise",
    "f_white",
    "alpha_white",
    "f",
    "alpha",
)


def dagp_exact(X, y=None, num_modes: int = 2):
    """Full-GP DAGP: per mode f^(k) = L_k eps_k and alpha^(k) = L_alpha,k eta_k (non-centred, jittered Cholesky),
    and y_n ~ sum_k softmax(alpha_n)_k N(f_n^(k), s_k^2). Given (f, alpha) the a_n are independent, so this
    per-point mixture *is* the exact sum over the K^N assignments (docs/sources/kaiser.md#dagp-exact).

    Sites: ``lengthscale``, ``variance``, ``alpha_lengthscale``, ``alpha_variance`` (K,) each (1-D inputs use the
    same lengthscale for all dims), ``noise`` (K,), ``f_white`` (K, N), ``alpha_white`` (K, N); ``f``, ``alpha``
    deterministic (K, N). Identical priors for every mode, so the posterior is symmetric under relabelling: NUTS
    chains from overdispersed starts settle in different labellings, so R-hat across chains of a mode's f is large
    while label-invariant quantities (sorted f's, the predictive mixture of ``exact_predict``) are not
    (tests/test_dagp.py::test_label_switching_shows_in_rhat_across_chains, which also records that at N = 40 a chain
    can get stuck in a "crossing" local mode, i.e. the posterior is not always unimodal up to labels).
    """
    config = dagp_config(num_modes)
    K, N = config.num_modes, X.shape[0]
    ls = numpyro.sample("lengthscale", dist.LogNormal(0.0, 1.0).expand([K]).to_event(1))
    var = numpyro.sample("variance", dist.LogNormal(0.0, 1.0).expand([K]).to_event(1))
    als = numpyro.sample("alpha_lengthscale", dist.LogNormal(0.0, 1.0).expand([K]).to_event(1))
    avar = numpyro.sample("alpha_variance", dist.LogNormal(0.0, 1.0).expand([K]).to_event(1))
    noise = numpyro.sample("noise", dist.LogNormal(-2.0, 1.0).expand([K]).to_event(1))
    f_white = numpyro.sample("f_white", dist.Normal(0.0, 1.0).expand([K, N]).to_event(2))
    a_white = numpyro.sample("alpha_white", dist.Normal(0.0, 1.0).expand([K, N]).to_event(2))

    def non_centred(v, ls_k, w_k):
        return gp.cholesky(SquaredExponential(v, ls_k)(X)) @ w_k

    f = numpyro.deterministic("f", jax.vmap(non_centred)(var, ls, f_white))
    alpha = numpyro.deterministic("alpha", jax.vmap(non_centred)(avar, als, a_white))
    components = dist.Normal(f.T, jnp.sqrt(noise))
    numpyro.sample("y", dist.MixtureSameFamily(dist.Categorical(logits=alpha.T), components), obs=y)


def _conditional_from_white(variance, lengthscale, white, X, X_new) -> tuple[Array, Array]:
    """g(X_new) | g(X) = L w for one SE GP: mean A^T w and variance k(x*, x*) - ||a_*||^2 with A = L^{-1} K(X, X_new)
    (L the jittered Cholesky of K(X, X), as in ``dagp_exact``). white (N,) -> (n,), (n,)."""
    kernel = SquaredExponential(variance, lengthscale)
    A = jax.scipy.linalg.solve_triangular(gp.cholesky(kernel(X)), kernel(X, X_new), lower=True)
    return A.T @ white, jnp.maximum(kernel.diag(X_new) - jnp.sum(A**2, 0), 0.0)


def exact_predict(draws: dict, X, X_new, key, num_alpha_samples: int = 32) -> DagpPrediction:
    """The predictive mixture (3.8) of ``dagp/exact`` for each posterior draw: a DagpPrediction with a leading draw
    axis: mean, f_var (S, n, K) of f_*^(k) | f^(k); noise (S, K); weights E[softmax(alpha_*) | alpha] (S, n, K) by
    ``num_alpha_samples`` Monte-Carlo draws of alpha_* | alpha.

    draws: the sites of ``dagp_exact`` flattened over chains, ``lengthscale`` ... ``noise`` (S, K), ``f_white`` and
    ``alpha_white`` (S, K, N); X (N, D) the training inputs, X_new (n, D).
    """
    X, X_new = jnp.asarray(X), jnp.asarray(X_new)
    per_mode = jax.vmap(jax.vmap(_conditional_from_white, (0, 0, 0, None, None)), (0, 0, 0, None, None))
    f_mean, f_var = per_mode(draws["variance"], draws["lengthscale"], draws["f_white"], X, X_new)  # (S, K, n)
    a_mean, a_var = per_mode(draws["alpha_variance"], draws["alpha_lengthscale"], draws["alpha_white"], X, X_new)
    eps = jax.random.normal(key, (num_alpha_samples, *a_mean.shape))
    weights = jax.nn.softmax(a_mean + jnp.sqrt(a_var) * eps, -2).mean(0)  # over the mode axis of (A, S, K, n)
    swap = partial(jnp.swapaxes, axis1=1, axis2=2)
    return DagpPrediction(swap(f_mean), swap(f_var), jnp.asarray(draws["noise"]), swap(weights))


def posterior_mixture_log_density(preds: DagpPrediction, y) -> Array:
    """log (1/S) sum_s p_s(y_n | x_n): the posterior predictive of per-draw mixtures (``exact_predict``) (n,)."""
    per_draw = jax.vmap(mixture_log_density, (0, None))(preds, y)  # (S, n)
    return logsumexp(per_draw, 0) - jnp.log(per_draw.shape[0])
