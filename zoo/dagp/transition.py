"""A trained DAGP as a stochastic transition model (Kaiser 2021, eq. 5.9; docs/sources/kaiser.md#wet-chicken-model):
the per-point marginals of every component GP (flows, log-noise processes, assignment logits), and next-state draws
that sample each component independently, as the thesis's roll-outs do."""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from zoo import sparse as sp
from zoo.dagp.predict import DagpFit
from zoo.kernels import SquaredExponential

Array = Any
RELAXATIONS = ("hard", "straight-through", "concrete")


class Components(NamedTuple):
    """Per point: flow means and variances (n, K, P) (white modes 0, 0), log-noise GP means and variances (n, K, P)
    (homoscedastic: 0, 0), the noise levels s_kp^2 (K, P) and floor, assignment-logit means and variances (n, K).
    A mode's noise variance at x is level exp(g(x)) + floor."""

    f_mean: Array
    f_var: Array
    g_mean: Array
    g_var: Array
    level: Array
    floor: float
    alpha_mean: Array
    alpha_var: Array


def _marginal(p: dict, prefix: str, i: int, kernel_prefix: str, X) -> tuple[Array, Array]:
    kernel = SquaredExponential(p[f"{kernel_prefix}variance_map"][i], p[f"{kernel_prefix}lengthscale_map"][i])
    q = sp.WhitenedQ(p[f"{prefix}_mean"][i], p[f"{prefix}_scale_tril"][i])
    inducing = p["inducing_inputs" if prefix == "q" else f"{prefix.removesuffix('_q')}_inducing_inputs"][i]
    pred = sp.sparse_predict(kernel, inducing, q, X)
    return pred.mean, jnp.maximum(pred.cov, 0.0)


def components(fit: DagpFit, X) -> Components:
    """Marginals of every component GP of a shallow DAGP fit at inputs X (n, D)."""
    p, config = fit.params, fit.config
    if any(d != 1 for d in config.depths):
        raise ValueError("zoo.dagp.transition: deep modes are not supported (their f is not Gaussian).")
    X = jnp.asarray(X)
    n, K, P = X.shape[0], config.num_modes, config.outputs
    zeros = jnp.zeros(n)
    flows, j = [], 0
    for kind in config.kernels:
        for _ in range(P):
            flows.append(_marginal(p, "q", j, "", X) if kind == "se" else (zeros, zeros))
            j += kind == "se"
    if config.heteroscedastic:
        noise = [_marginal(p, "noise_q", i, "noise_", X) for i in range(K * P)]
    else:
        noise = [(zeros, zeros)] * (K * P)
    alpha_mean, alpha_var = assignment_marginals(fit, X)

    def stack(pairs, which, shape):
        return jnp.stack([pair[which] for pair in pairs], -1).reshape(shape)

    return Components(
        stack(flows, 0, (n, K, P)),
        stack(flows, 1, (n, K, P)),
        stack(noise, 0, (n, K, P)),
        stack(noise, 1, (n, K, P)),
        p["noise_map"].reshape(K, P),
        config.noise_floor,
        alpha_mean,
        alpha_var,
    )


def assignment_marginals(fit: DagpFit, X) -> tuple[Array, Array]:
    """Means and variances (n, K) of the assignment logits' marginals q(alpha_n^(k)) at inputs X (n, D)."""
    X = jnp.asarray(X)
    pairs = [_marginal(fit.params, "alpha_q", k, "alpha_", X) for k in range(fit.config.num_modes)]
    return jnp.stack([m for m, _ in pairs], -1), jnp.stack([v for _, v in pairs], -1)


def assignment_probabilities(c: Components, key, num_samples: int = 200) -> Array:
    """E_{q(alpha)}[softmax(alpha)] (n, K) by Monte Carlo (the predictive association of eq. 3.8)."""
    return softmax_expectation(c.alpha_mean, c.alpha_var, key, num_samples)


def softmax_expectation(alpha_mean: Array, alpha_var: Array, key, num_samples: int) -> Array:
    """E[softmax(alpha)] (n, K) for independent alpha_k ~ N(mean, var) (n, K), by ``num_samples`` reparameterised
    draws (differentiable in the means and variances)."""
    draws = alpha_mean + jnp.sqrt(alpha_var) * jax.random.normal(key, (num_samples, *alpha_mean.shape))
    return jax.nn.softmax(draws, -1).mean(0)


def noise_variance(c: Components) -> Array:
    """The noise variance at the log-noise GP's mean (n, K, P) (for plots)."""
    return c.level * jnp.exp(c.g_mean) + c.floor


def sample_next(fit: DagpFit, X, key, relaxation: str = "straight-through", temperature: float = 0.5) -> Array:
    """One draw of the next state (n, P) at inputs X (n, D) (eq. 5.9): every component sampled independently from
    its marginal, alpha -> a mode l ~ Categorical(softmax(alpha)), g -> the noise variance, f -> the flow, and
    s' = sum_k l_k (f_k + sd_k eps_k). All draws are reparameterised, so s' is differentiable in X except through the
    discrete mode: ``relaxation`` "hard" (Gumbel-max, no gradient through l), "concrete" (l a Concrete sample at
    ``temperature``, a soft blend of the modes) or "straight-through" (hard l forward, the Concrete gradient
    backward; docs/sources/kaiser.md#wet-chicken-gradient)."""
    if relaxation not in RELAXATIONS:
        raise ValueError(f"zoo.dagp.transition: relaxation must be one of {RELAXATIONS}, got {relaxation!r}.")
    c = components(fit, X)
    k_alpha, k_gumbel, k_g, k_f, k_eps = jax.random.split(key, 5)
    alpha = c.alpha_mean + jnp.sqrt(c.alpha_var) * jax.random.normal(k_alpha, c.alpha_mean.shape)
    scores = jax.nn.log_softmax(alpha, -1) + jax.random.gumbel(k_gumbel, alpha.shape)
    hard = jax.nn.one_hot(jnp.argmax(scores, -1), alpha.shape[-1])
    soft = jax.nn.softmax(scores / temperature, -1)
    mode = {"hard": hard, "concrete": soft, "straight-through": soft + jax.lax.stop_gradient(hard - soft)}[relaxation]
    g = c.g_mean + jnp.sqrt(c.g_var) * jax.random.normal(k_g, c.g_mean.shape)
    sd = jnp.sqrt(c.level * jnp.exp(g) + c.floor)
    f = c.f_mean + jnp.sqrt(c.f_var) * jax.random.normal(k_f, c.f_mean.shape)
    per_mode = f + sd * jax.random.normal(k_eps, f.shape)
    return jnp.einsum("nk,nkp->np", mode, per_mode)
