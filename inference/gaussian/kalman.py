"""Kalman filter, Rauch-Tung-Striebel smoother and exact log-likelihood of a linear-Gaussian SSM (the ``kalman``
engine), plus the Gaussian smoothing algebra the moment-matching engines share.

Filter: predict N(A m + B u + b, A P A^T + Q), update by ``zoo.ssm.condition_on_observation`` (McHutchon eq. 3.87);
masked steps (past a trajectory's end) skip the update. The RTS backward pass is written for any Gaussian forward
pass that records the cross-covariance Cov[x_t, x_{t+1} | y_{1:t}] (McHutchon eqs. 3.93-3.97, with the 3.97 typo
fixed: Cov[x_t, x_{t+1} | y_{1:T}] = J_t Sigma_{t+1|T}); for the Kalman filter that cross-covariance is P_{t|t} A^T.
Posterior draws come from the joint smoothing distribution by backward sampling (forward filtering, backward
sampling), so they are exact draws of p(x_{1:T} | y_{1:T}).
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_solve

from inference.core import options as opt
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.program import observed_args
from zoo import ssm

__all__ = [
    "ForwardPass",
    "Smoothed",
    "backward_sample",
    "forward_pass_from_scan",
    "kalman",
    "kalman_filter",
    "kalman_runner",
    "kalman_smoother",
    "masked_update",
    "rts_smoother",
    "smoothing_gains",
]

Array = Any


class ForwardPass(NamedTuple):
    """A Gaussian forward (filtering) pass over T steps of one trajectory.

    filt_mean (T, D), filt_cov (T, D, D): p(x_t | y_{1:t}); pred_mean (T, D), pred_cov (T, D, D): p(x_t | y_{1:t-1})
    (index 0 is the prior p(x_1)); cross (T-1, D, D): Cov[x_t, x_{t+1} | y_{1:t}]; log_lik: sum of the masked
    one-step predictive log densities log p(y_t | y_{1:t-1}).
    """

    filt_mean: Array
    filt_cov: Array
    pred_mean: Array
    pred_cov: Array
    cross: Array
    log_lik: Array


def forward_pass_from_scan(m0: Array, P0: Array, m1: Array, P1: Array, steps: tuple, log_lik: Array) -> ForwardPass:
    """Assemble a ForwardPass from the first update (prior m0, P0 -> m1, P1) and the scan over t = 2..T,
    whose outputs ``steps`` are (filtered mean, filtered cov, predicted mean, predicted cov, cross) per step."""
    fm, fP, pm, pP, cross = steps
    return ForwardPass(
        filt_mean=jnp.concatenate([m1[None], fm]),
        filt_cov=jnp.concatenate([P1[None], fP]),
        pred_mean=jnp.concatenate([m0[None], pm]),
        pred_cov=jnp.concatenate([P0[None], pP]),
        cross=cross,
        log_lik=log_lik,
    )


class Smoothed(NamedTuple):
    """mean (T, D), cov (T, D, D): p(x_t | y_{1:T}); cross (T-1, D, D): Cov[x_t, x_{t+1} | y_{1:T}];
    gain (T-1, D, D): J_t = Cov[x_t, x_{t+1} | y_{1:t}] Sigma_{t+1|t}^{-1}."""

    mean: Array
    cov: Array
    cross: Array
    gain: Array


def masked_update(mean, cov, y, observed, C, d, R):
    """The measurement update when ``observed``, else the prediction unchanged with zero log-likelihood."""
    post_mean, post_cov, log_lik = ssm.condition_on_observation(mean, cov, y, C, d, R)
    return (
        jnp.where(observed, post_mean, mean),
        jnp.where(observed, post_cov, cov),
        jnp.where(observed, log_lik, 0.0),
    )


def kalman_filter(lg: ssm.LinearGaussianSSM, y: Array, mask: Array, u: Array) -> ForwardPass:
    """Exact filter of one trajectory: y (T, E), mask (T,) bool, u (T, U)."""
    m1, P1, ll1 = masked_update(lg.m0, lg.P0, y[0], mask[0], lg.C, lg.d, lg.R)

    def step(carry, inputs):
        m, P, ll = carry
        y_t, m_t, u_prev = inputs
        pred_m = lg.A @ m + lg.B @ u_prev + lg.b
        pred_P = lg.A @ P @ lg.A.T + lg.Q
        pred_P = 0.5 * (pred_P + pred_P.T)
        new_m, new_P, ll_t = masked_update(pred_m, pred_P, y_t, m_t, lg.C, lg.d, lg.R)
        return (new_m, new_P, ll + ll_t), (new_m, new_P, pred_m, pred_P, P @ lg.A.T)

    (_, _, ll), steps = jax.lax.scan(step, (m1, P1, ll1), (y[1:], mask[1:], u[:-1]))
    return forward_pass_from_scan(lg.m0, lg.P0, m1, P1, steps, ll)


def smoothing_gains(forward: ForwardPass) -> Array:
    """J_t = Cov[x_t, x_{t+1} | y_{1:t}] Sigma_{t+1|t}^{-1} (T-1, D, D), by Cholesky solves (no inverse)."""

    def gain(cross, pred_cov):
        L = jnp.linalg.cholesky(pred_cov)
        return cho_solve((L, True), cross.T).T

    return jax.vmap(gain)(forward.cross, forward.pred_cov[1:])


def rts_smoother(forward: ForwardPass) -> Smoothed:
    """Gaussian RTS backward pass (McHutchon eqs. 3.95-3.97, 3.97 corrected) over a Gaussian forward pass."""
    gains = smoothing_gains(forward)

    def step(carry, inputs):
        m_next, P_next = carry
        fm, fP, pm, pP, J = inputs
        m = fm + J @ (m_next - pm)
        P = fP + J @ (P_next - pP) @ J.T
        P = 0.5 * (P + P.T)
        return (m, P), (m, P, J @ P_next)

    last = (forward.filt_mean[-1], forward.filt_cov[-1])
    inputs = (forward.filt_mean[:-1], forward.filt_cov[:-1], forward.pred_mean[1:], forward.pred_cov[1:], gains)
    _, (m, P, cross) = jax.lax.scan(step, last, inputs, reverse=True)
    return Smoothed(
        mean=jnp.concatenate([m, last[0][None]]),
        cov=jnp.concatenate([P, last[1][None]]),
        cross=cross,
        gain=gains,
    )


def backward_sample(key: jax.Array, forward: ForwardPass, num_samples: int) -> Array:
    """Draws (num_samples, T, D) of the joint Gaussian smoothing distribution the forward pass implies:
    x_T ~ N(m_{T|T}, P_{T|T}); x_t | x_{t+1} ~ N(m_{t|t} + J_t (x_{t+1} - m_{t+1|t}), P_{t|t} - J_t X_t^T),
    X_t = Cov[x_t, x_{t+1} | y_{1:t}].
    """
    gains = smoothing_gains(forward)
    T, D = forward.filt_mean.shape
    eps = jax.random.normal(key, (T, num_samples, D))

    def chol(P):
        return jnp.linalg.cholesky(0.5 * (P + P.T) + 1e-12 * jnp.eye(D))

    x_last = forward.filt_mean[-1] + eps[-1] @ chol(forward.filt_cov[-1]).T

    def step(x_next, inputs):
        fm, fP, pm, cross, J, e = inputs
        mean = fm + (x_next - pm) @ J.T
        x = mean + e @ chol(fP - J @ cross.T).T
        return x, x

    inputs = (forward.filt_mean[:-1], forward.filt_cov[:-1], forward.pred_mean[1:], forward.cross, gains, eps[:-1])
    _, xs = jax.lax.scan(step, x_last, inputs, reverse=True)
    return jnp.swapaxes(jnp.concatenate([xs, x_last[None]]), 0, 1)


def kalman_smoother(lg: ssm.LinearGaussianSSM, y: Array, mask: Array, u: Array) -> tuple[ForwardPass, Smoothed]:
    forward = kalman_filter(lg, y, mask, u)
    return forward, rts_smoother(forward)


@program_cache
def kalman_runner(view: ssm.StateSpaceView, num_chains: int, num_samples: int):
    """Jitted ``(key, params, observed) -> (draws (C, S, K, T, D), mean (K, T, D), cov (K, T, D, D), log_lik)``."""

    def run(key, params, observed):
        lg = view.linear_gaussian(ssm.bind(view, params, observed))
        y, mask, u = ssm.trajectories(observed)
        forward, smoothed = jax.vmap(kalman_smoother, in_axes=(None, 0, 0, 0))(lg, y, mask, u)
        keys = jax.random.split(key, y.shape[0])
        draws = jax.vmap(backward_sample, in_axes=(0, 0, None))(keys, forward, num_chains * num_samples)  # (K, S, T, D)
        K, _, T, D = draws.shape
        draws = jnp.swapaxes(draws, 0, 1).reshape(num_chains, num_samples, K, T, D)
        return draws, smoothed.mean, smoothed.cov, jnp.sum(forward.log_lik)

    return jax.jit(run)


@register_engine(
    "kalman",
    requires={"state_space", "linear_gaussian"},
    options={"num_chains": opt.num_chains(1), "num_samples": opt.num_samples(1000), "params": opt.params()},
    summary="Kalman filter + RTS smoother: exact log-likelihood, smoothed moments and exact joint smoothing draws",
    params_role="conditions",
)
def kalman(spec, dataset, key, timer, **options) -> EngineOutput:
    """Posterior ``states`` (chain, draw, K, T, D): exact draws of p(x_{1:T} | y); point_estimates ``states_mean``
    (1, K, T, D) and ``states_cov`` (1, K, T, D, D): the RTS marginals; log_evidence: log p(y | params)."""
    run = kalman_runner(spec.views["state_space"], options["num_chains"], options["num_samples"])
    draws, mean, cov, log_lik = timer.call(run, key, options["params"], observed_args(dataset))
    return EngineOutput(
        posterior={ssm.STATES: draws},
        point_estimates={"states_mean": mean[None], "states_cov": cov[None]},
        log_evidence=float(log_lik),
        num_lik_evals=1,
    )
