"""Sampling EP's per-sweep trace (``inference.gaussian.sampling_ep.EPResult``: ``mean_by_iter``, ``var_by_iter``,
``slice_ess``; McHutchon 2014 Figs 3.20, 3.26). With EXACT two-slice moments on a scalar linear-Gaussian SSM the
first (undamped) sweep reaches the RTS fixed point, so every sweep's marginals equal the final ones, the last sweep's
entry is the result itself, and the exact estimator's ESS (infinite) is what ``slice_ess`` reports."""

import jax
import jax.numpy as jnp
import numpy as np

from inference.gaussian import kalman
from inference.gaussian import sampling_ep as sep
from zoo import ssm


def test_trace_of_sweeps_matches_the_result_and_the_rts_smoother():
    T, A, Q, R = 6, 0.8, 0.3, 0.2
    y = jnp.asarray(np.random.default_rng(0).normal(size=(T, 1)))
    mask, u = jnp.ones(T, bool), jnp.zeros((T, 0))
    lg = ssm.LinearGaussianSSM(
        m0=jnp.zeros(1),
        P0=jnp.eye(1),
        A=jnp.array([[A]]),
        B=jnp.zeros((1, 0)),
        b=jnp.zeros(1),
        Q=jnp.array([[Q]]),
        C=jnp.eye(1),
        d=jnp.zeros(1),
        R=jnp.array([[R]]),
    )
    exact = sep.linear_gaussian_two_slice(lg.A, lg.b, lg.Q)
    obs = sep.observation_factors(lg.C, jnp.array([R]), y, mask)
    flat = sep.Gaussian(jnp.zeros((T, 1, 1)), jnp.zeros((T, 1)))
    prior = sep.to_natural(lg.m0, lg.P0)
    res = jax.jit(lambda key: sep.ep_smoother(exact, key, prior, obs, mask, u, flat, 3, 0.5, 0.0))(jax.random.key(0))
    assert res.mean_by_iter.shape == (3, T, 1) and res.var_by_iter.shape == (3, T, 1)
    np.testing.assert_allclose(res.mean_by_iter[-1], res.mean, atol=1e-12)
    np.testing.assert_allclose(res.var_by_iter[-1], res.cov[:, :, 0], atol=1e-12)
    _, smoothed = jax.jit(kalman.kalman_smoother)(lg, y, mask, u)
    for it in range(3):
        np.testing.assert_allclose(res.mean_by_iter[it], smoothed.mean, atol=1e-10)
        np.testing.assert_allclose(res.var_by_iter[it], smoothed.cov[:, :, 0], atol=1e-10)
    assert res.slice_ess.shape == (T - 1,) and bool(jnp.all(jnp.isinf(res.slice_ess)))
