"""Evaluation of GP-SSMs (McHutchon 2014, sec. 3.9; docs/sources/mchutchon.md#evaluation), shared by all GP-SSM work.

* ``one_step_nlp`` (eq. 3.75): from the TRUE previous latent x*_{t-1} the model predicts N(mu*_t, Sigma*_t) for x_t;
  the score is -log int N(y; mu*_t, Sigma*_t) N(y; x*_t, Sigma_nu) dy = -log N(mu*_t; x*_t, Sigma*_t + Sigma_nu) with
  the TRUE observation noise Sigma_nu, averaged per data point (per predicted step)
  (docs/sources/mchutchon.md#evaluation).
* ``latent_log_density``: log density of the true latents under Gaussian smoothing marginals, per data point.
* ``Dynamics``: what every learner's transition reduces to for evaluation, an SE-GP predictor with a linear mean and
  additive noise (the sparse GP-SSM's pseudo-point GP, the AR1-GP's and NIGP's exact GPs); a posterior (PMCMC draws)
  is a stack of them, summarised by the moment-matched mixture.
* ``simulate`` / ``multi_step_scores`` / ``ranks``: moment-matching multi-step simulation from a known start state
  (sec. 3.9.4), scored per step like eq. 3.75, and per-trajectory ranks of several methods (1 = best).
* ``noise_percent_error``: 100 (learnt - true) / true of the total noise std sqrt(sigma_eps^2 + sigma_nu^2).
"""

from collections.abc import Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.stats import rankdata

from zoo import moments
from zoo.gp import mvn_logpdf_chol
from zoo.gp_ssm_view import GPSSMParams, linear_mean_of, pseudo_predictor

__all__ = [
    "Dynamics",
    "dynamics_of",
    "gaussian_score",
    "gpssm_predict",
    "latent_log_density",
    "multi_step_scores",
    "noise_percent_error",
    "one_step_nlp",
    "one_step_scores",
    "point_predict",
    "ranks",
    "simulate",
    "simulate_gpssm",
    "stack_dynamics",
    "transitions",
]

Array = Any


def gaussian_score(mean: Array, cov: Array, truth: Array, obs_var: Array) -> Array:
    """-log N(mean; truth, cov + diag(obs_var)) for one step: mean (D,), cov (D, D), truth (D,), obs_var (D,)."""
    L = jnp.linalg.cholesky(cov + jnp.diag(obs_var))
    return -mvn_logpdf_chol(truth, mean, L)


def transitions(states: Array, lengths: Array, u: Array | None):
    """Pairs (x*_{t-1}, u_{t-1}, x*_t) of every observed transition, flattened: (n, D), (n, U), (n, D)."""
    states = np.asarray(states)
    K, T, D = states.shape
    u = np.zeros((K, T, 0)) if u is None else np.asarray(u)
    keep = (np.arange(1, T)[None, :] < np.asarray(lengths)[:, None]).ravel()
    prev = states[:, :-1].reshape(-1, D)[keep]
    nxt = states[:, 1:].reshape(-1, D)[keep]
    return prev, u[:, :-1].reshape(K * (T - 1), u.shape[-1])[keep], nxt


def one_step_scores(predict, states: Array, lengths: Array, u: Array | None, true_obs_var: Array) -> np.ndarray:
    """Eq. 3.75 per test trajectory, averaged over its transitions: (K,). ``predict(x_prev (D,), u_prev (U,)) ->
    (mean (D,), cov (D, D))`` is the model's predictive of x_t given the true x_{t-1}."""
    states = np.asarray(states)
    K, T, _ = states.shape
    u = np.zeros((K, T, 0)) if u is None else np.asarray(u)
    obs_var = jnp.asarray(true_obs_var)

    def score(x, uu, x_next):
        mean, cov = predict(x, uu)
        return gaussian_score(mean, cov, x_next, obs_var)

    per_step = jax.jit(jax.vmap(jax.vmap(score)))(states[:, :-1], u[:, :-1], states[:, 1:])  # (K, T-1)
    mask = np.arange(1, T)[None, :] < np.asarray(lengths)[:, None]
    return np.where(mask, np.asarray(per_step), 0.0).sum(1) / np.maximum(mask.sum(1), 1)


def one_step_nlp(predict, states: Array, lengths: Array, u: Array | None, true_obs_var: Array) -> float:
    """Mean over all test transitions of eq. 3.75 (see ``one_step_scores`` for ``predict``)."""
    prev, u_prev, nxt = transitions(states, lengths, u)
    obs_var = jnp.asarray(true_obs_var)

    def score(x, uu, x_next):
        mean, cov = predict(x, uu)
        return gaussian_score(mean, cov, x_next, obs_var)

    return float(jnp.mean(jax.jit(jax.vmap(score))(prev, u_prev, nxt)))


class Dynamics(NamedTuple):
    """x_t | x_{t-1}, u_{t-1} ~ N(m(x^) + f(x^), diag(s_f(x^) + noise_var)) with x^ = [x_{t-1}; u_{t-1}], f an SE-GP
    ``predictor`` (zoo.moments) and m the ``mean_fn``; noise_var (D,). Fields may carry a leading draws axis S (a
    stack of posterior draws, see ``stack_dynamics``)."""

    predictor: moments.SEPredictor
    mean_fn: moments.LinearMean
    noise_var: Array


def dynamics_of(g: GPSSMParams) -> Dynamics:
    """The sparse GP-SSM's transition: the pseudo-point GP plus the process noise."""
    return Dynamics(pseudo_predictor(g), linear_mean_of(g), g.process_var)


def stack_dynamics(draws: list[Dynamics]) -> Dynamics:
    """S draws -> one Dynamics with a leading axis S on every field."""
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *draws)


def _as_stack(dynamics: Dynamics) -> Dynamics:
    """A single Dynamics gets a draws axis of 1 (the mean_fn's b is (D,) unstacked, (S, D) stacked)."""
    return jax.tree.map(lambda a: a[None], dynamics) if jnp.ndim(dynamics.mean_fn.b) == 1 else dynamics


def _mixture_moments(means: Array, covs: Array) -> tuple[Array, Array]:
    """Moment-matched Gaussian of an equal-weight mixture: means (S, D), covs (S, D, D) -> (D,), (D, D)."""
    mean = means.mean(0)
    centred = means - mean
    return mean, covs.mean(0) + jnp.einsum("sd,se->de", centred, centred) / means.shape[0]


def point_predict(dynamics: Dynamics):
    """One-step predictive ``(x (D,), u (U,)) -> (mean (D,), cov (D, D))`` from a known x_{t-1}; for a stack of draws,
    the moment-matched mixture over draws."""
    stacked = _as_stack(dynamics)

    def one(d, x, u):
        mean, var = moments.predict_point(d.predictor, jnp.concatenate([x, u]), d.mean_fn)
        return mean, jnp.diag(var + d.noise_var)

    def predict(x, u):
        means, covs = jax.vmap(one, in_axes=(0, None, None))(stacked, x, u)
        return _mixture_moments(means, covs)

    return predict


def gpssm_predict(g: GPSSMParams):
    """The sparse GP-SSM's one-step predictive of x_t from a known x_{t-1}: N(m_f, diag(s_f + process_var))."""
    return point_predict(dynamics_of(g))


def latent_log_density(truth: Array, mean: Array, cov: Array, lengths: Array) -> float:
    """Mean over observed steps of log N(x*_t; m_t, P_t) / D (per data point).

    truth, mean (K, T, D), cov (K, T, D, D), lengths (K,).
    """
    truth, mean, cov = (jnp.asarray(a) for a in (truth, mean, cov))
    D = truth.shape[-1]
    logp = jax.vmap(jax.vmap(lambda x, m, P: mvn_logpdf_chol(x, m, jnp.linalg.cholesky(P))))(truth, mean, cov)
    mask = np.arange(truth.shape[1])[None, :] < np.asarray(lengths)[:, None]
    return float(jnp.sum(jnp.where(mask, logp, 0.0)) / (mask.sum() * D))


def simulate(dynamics: Dynamics, x1: Array, u: Array, num_steps: int) -> tuple[Array, Array]:
    """Moment-matching multi-step simulation from a known start x1 (D,) with known controls u (T, U) (sec. 3.9.4):
    means (T, D) and covariances (T, D, D) of x_1..x_T (x_1 a point mass). One Dynamics (no draws axis)."""
    D = x1.shape[0]

    def step(carry, u_prev):
        m, P = carry
        mu, Sigma = moments.join_state_control(m, P, u_prev)
        mm = moments.predict_moments(dynamics.predictor, mu, Sigma, dynamics.mean_fn)
        new = (mm.mean, mm.cov + jnp.diag(dynamics.noise_var))
        return new, new

    _, (m, P) = jax.lax.scan(step, (x1, jnp.zeros((D, D))), u[: num_steps - 1])
    return jnp.concatenate([x1[None], m]), jnp.concatenate([jnp.zeros((1, D, D)), P])


def simulate_gpssm(g: GPSSMParams, x1: Array, u: Array, num_steps: int) -> tuple[Array, Array]:
    """``simulate`` with the sparse GP-SSM's transition."""
    return simulate(dynamics_of(g), x1, u, num_steps)


def multi_step_scores(
    dynamics: Dynamics | GPSSMParams, states: Array, lengths: Array, u: Array | None, true_obs_var: Array
) -> np.ndarray:
    """Per test trajectory, the mean over steps 2..T_k of eq. 3.75's score of the simulated belief: (K,). A stack of
    draws is simulated draw by draw and scored by the per-step moment-matched mixture."""
    stacked = _as_stack(dynamics_of(dynamics) if isinstance(dynamics, GPSSMParams) else dynamics)
    states = jnp.asarray(states)
    K, T, D = states.shape
    u = jnp.zeros((K, T, 0)) if u is None else jnp.asarray(u)
    obs_var = jnp.asarray(true_obs_var)

    def one(x_true, u_k):
        means, covs = jax.vmap(simulate, in_axes=(0, None, None, None))(stacked, x_true[0], u_k, T)
        m, P = jax.vmap(_mixture_moments, in_axes=(1, 1))(means, covs)
        return jax.vmap(gaussian_score, in_axes=(0, 0, 0, None))(m[1:], P[1:], x_true[1:], obs_var)

    scores = np.asarray(jax.jit(jax.vmap(one))(states, u))
    mask = np.arange(1, T)[None, :] < np.asarray(lengths)[:, None]
    return np.where(mask, scores, 0.0).sum(1) / np.maximum(mask.sum(1), 1)


def ranks(scores: Mapping[str, np.ndarray]) -> dict[str, float]:
    """Average rank of each method over trajectories (1 = lowest score = best; ties share ranks; a failed (NaN)
    simulation ranks last)."""
    names = list(scores)
    table = np.stack([np.asarray(scores[n]) for n in names], axis=1)  # (K, methods)
    table = np.where(np.isnan(table), np.inf, table)
    per_trajectory = np.apply_along_axis(rankdata, 1, table)
    return dict(zip(names, per_trajectory.mean(0).tolist(), strict=True))


def noise_percent_error(learnt_total_std: Array, true_total_std: Array) -> np.ndarray:
    """100 (learnt - true) / true, per state dimension (Table 3.6)."""
    learnt, true = np.asarray(learnt_total_std), np.asarray(true_total_std)
    return 100.0 * (learnt - true) / true
