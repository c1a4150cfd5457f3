"""Particle filters on the linear-Gaussian SSM against the Kalman filter (exact log-likelihood and its gradient).

Unbiasedness is checked where it holds, in exp space: over R independent runs the mean of exp(loglik - kalman)
must be within 4 Monte Carlo standard errors of 1. The Fisher-identity score is consistent, not unbiased, so it is
checked against the exact gradient of the Kalman log-likelihood within 4 MCSE plus nothing else; the path
estimator's O(1/N) bias is far below that MCSE at these sizes (T <= 10, N = 300).
"""

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import inference
import zoo
from inference.gaussian import kalman
from inference.particles import pf
from zoo import ssm
from zoo.errors import OptionError

NUM_RUNS = 300


@cache
def problem(num_trajectories: int, num_steps: int):
    spec = zoo.get("lgssm")
    view = spec.views["state_space"]
    data = spec.validate(spec.simulate(jax.random.key(0), num_train=num_trajectories, num_steps=num_steps))
    observed = {k: jnp.asarray(v) for k, v in data.observed.items()}
    return spec, view, data, observed


def kalman_log_likelihood(view, params, observed):
    theta = ssm.bind(view, params, observed)
    y, mask, u = ssm.trajectories(observed)
    lg = view.linear_gaussian(theta)
    return jnp.sum(jax.vmap(lambda yk, mk, uk: kalman.kalman_filter(lg, yk, mk, uk).log_lik)(y, mask, u))


@cache
def repeated_log_likelihood(view, num_particles: int, method: str, resampler: str):
    def one(key, params, observed):
        theta = ssm.bind(view, params, observed)
        y, mask, u = ssm.trajectories(observed)
        run = jax.vmap(
            lambda k, yk, mk, uk: pf.particle_filter(view, theta, k, yk, mk, uk, num_particles, method, resampler)
        )
        return jnp.sum(run(jax.random.split(key, y.shape[0]), y, mask, u).log_likelihood)

    return jax.jit(jax.vmap(one, in_axes=(0, None, None)))


@pytest.mark.parametrize(
    "method, resampler, num_particles",
    [
        ("bootstrap", "systematic", 200),
        pytest.param("bootstrap", "multinomial", 200, marks=pytest.mark.slow),
        pytest.param("bootstrap", "stratified", 200, marks=pytest.mark.slow),
        ("fully_adapted", "systematic", 20),
    ],
)
def test_log_likelihood_unbiased_in_exp_space(method, resampler, num_particles):
    spec, view, _, observed = problem(2, 10)
    params = dict(spec.default_params)
    exact = float(jax.jit(lambda p: kalman_log_likelihood(view, p, observed))(params))  # one program, not one per op
    run = repeated_log_likelihood(view, num_particles, method, resampler)
    log_lik = np.asarray(run(jax.random.split(jax.random.key(7), NUM_RUNS), params, observed))
    ratio = np.exp(log_lik - exact)
    mcse = ratio.std(ddof=1) / np.sqrt(NUM_RUNS)
    assert log_lik.std() < 1.5, "too noisy for an exp-space check; the MCSE would be unreliable"
    assert abs(ratio.mean() - 1.0) < 4 * mcse, (ratio.mean(), mcse)


@pytest.mark.slow
def test_fully_adapted_filter_beats_bootstrap_variance():
    spec, view, _, observed = problem(2, 10)
    params = dict(spec.default_params)
    keys = jax.random.split(jax.random.key(8), 100)
    sd_boot = np.std(repeated_log_likelihood(view, 200, "bootstrap", "systematic")(keys, params, observed))
    sd_adapted = np.std(repeated_log_likelihood(view, 200, "fully_adapted", "systematic")(keys, params, observed))
    assert sd_adapted < sd_boot


def test_score_matches_kalman_gradient():
    """Fisher-identity score (Algorithm 4, corrected) vs jax.grad of the exact Kalman log-likelihood, w.r.t. the
    unconstrained parameters (log variances, raw A and C)."""
    spec, view, _, observed = problem(2, 10)
    params = {k: jnp.asarray(v) for k, v in spec.default_params.items()}
    phi0, to_params = pf.parameter_transform(view, observed, params)
    exact = jax.jit(jax.grad(lambda phi: kalman_log_likelihood(view, to_params(phi), observed)))(phi0)

    def score(key):
        return pf.log_likelihood_and_score(
            view, to_params, observed, phi0, key, 300, "fully_adapted", "systematic", "path"
        )[1]

    runs = 64
    scores = np.asarray(jax.jit(jax.vmap(score))(jax.random.split(jax.random.key(9), runs)))
    mcse = scores.std(axis=0, ddof=1) / np.sqrt(runs)
    assert np.all(np.abs(scores.mean(axis=0) - exact) < 4 * mcse + 1e-9), (scores.mean(axis=0), exact, mcse)


# The engine run is slow: the pf engine on this state-space view runs by default in
# tests/test_own_model.py::test_a_plain_state_space_program_with_a_view_runs_the_particle_filter (its log-likelihood
# against the Kalman filter's; docs/performance.md#test-suite).
@pytest.mark.slow
def test_pf_engine_draws_states():
    spec, _, data, _ = problem(2, 10)
    idata = inference.run(spec, data, engine="pf", num_chains=2, num_particles=100, num_samples=5)
    assert idata.posterior[ssm.STATES].shape == (2, 5, 2, 10, 2)
    assert np.isfinite(idata.posterior.attrs["log_evidence"])


def test_pf_engine_option_errors():
    spec, _, data, _ = problem(2, 10)
    with pytest.raises(OptionError, match="num_particles"):
        inference.run(spec, data, engine="pf", num_particles=1)
    with pytest.raises(OptionError, match="resampling"):
        inference.run(spec, data, engine="pf", resampling="residualx")


# ----------------------------------------------------------------------------------------------------------------
# Building blocks: O(N) systematic resampling, AS241 normals
# ----------------------------------------------------------------------------------------------------------------


def test_systematic_resampling_is_unbiased_and_matches_the_searchsorted_form():
    """E[offspring of i] = M W_i. Systematic offspring counts are floor(M W_i) or that plus one, so each count is a
    Bernoulli(frac(M W_i)) shift: its Monte Carlo error over R keys is sqrt(f (1 - f) / R), tolerance 5 of those."""
    from blackjax.smc import resampling

    weights = jnp.array([0.5, 0.2, 0.15, 0.1, 0.04, 0.009, 0.001, 0.0])
    R = 4000
    for M in (8, 13):
        keys = jax.random.split(jax.random.key(7), R)
        ancestors = jax.jit(jax.vmap(lambda k, m=M: pf.systematic(k, weights, m)))(keys)
        assert ancestors.shape == (R, M) and int(ancestors.min()) >= 0 and int(ancestors.max()) < weights.shape[0]
        counts = np.stack([np.bincount(a, minlength=weights.shape[0]) for a in np.asarray(ancestors)])
        expected = M * np.asarray(weights)
        assert np.all((counts >= np.floor(expected)) & (counts <= np.floor(expected) + 1))
        f = expected - np.floor(expected)
        tolerance = 5 * np.sqrt(f * (1 - f) / R) + 1e-12
        assert np.all(np.abs(counts.mean(0) - expected) <= tolerance), (counts.mean(0), expected)
        # the same law as blackjax's O(N log N) form; with the same uniform, the same indices
        reference = jax.jit(jax.vmap(lambda k, m=M: resampling.systematic(k, weights, m)))(keys[:200])
        np.testing.assert_array_equal(np.asarray(ancestors[:200]), np.asarray(reference))


def test_standard_normal_inverse_cdf_and_law():
    from scipy import special, stats

    p = np.concatenate([np.logspace(-300, -1, 400), np.linspace(0.01, 0.99, 999), 1 - np.logspace(-16, -1, 200)])
    exact = special.ndtri(p)
    got = np.asarray(pf.ndtri(jnp.asarray(p)))
    assert np.max(np.abs(got - exact) / np.maximum(np.abs(exact), 1e-3)) < 1e-14
    z = np.asarray(pf.standard_normal(jax.random.key(0), (200_000,)))
    assert np.all(np.isfinite(z))
    assert stats.kstest(z, "norm").pvalue > 1e-3
    assert abs(z.mean()) < 5 / np.sqrt(z.size) and abs(z.var() - 1) < 5 * np.sqrt(2 / z.size)


def test_inverse_cdf_categorical_is_unbiased():
    """Frequencies of ``pf.categorical`` (PGAS's ancestor sampling) against softmax(log_weights): binomial error
    sqrt(p (1 - p) / R), tolerance 5 of those; a zero weight is never drawn."""
    log_weights = jnp.log(jnp.array([0.4, 0.3, 0.2, 0.06, 0.03, 0.01, 0.0]))
    R = 20000
    uniforms = jax.random.uniform(jax.random.key(3), (R,))
    draws = jax.jit(jax.vmap(lambda u: pf.categorical(u, log_weights)))(uniforms)
    frequencies = np.bincount(np.asarray(draws), minlength=7) / R
    p = np.asarray(jnp.exp(log_weights))
    assert frequencies[-1] == 0.0
    assert np.all(np.abs(frequencies - p) <= 5 * np.sqrt(p * (1 - p) / R) + 1e-12), (frequencies, p)


def test_multinomial_from_uniforms_is_unbiased_and_matches_blackjax():
    """Mean offspring counts of ``pf.multinomial`` (PGAS's CSMC resampling) against M W_i, multinomial error
    sqrt(M W_i (1 - W_i) / R), tolerance 5 of those; ancestors sorted; the same law as blackjax's multinomial."""
    weights = jnp.array([0.5, 0.2, 0.15, 0.1, 0.04, 0.009, 0.001, 0.0])
    R, M = 4000, 9
    uniforms = jax.random.uniform(jax.random.key(5), (R, M + 1))
    ancestors = np.asarray(jax.jit(jax.vmap(lambda u: pf.multinomial(u, weights, M)))(uniforms))
    assert np.all(np.diff(ancestors, axis=1) >= 0)
    counts = np.stack([np.bincount(a, minlength=weights.shape[0]) for a in ancestors])
    w = np.asarray(weights)
    assert counts[:, -1].sum() == 0
    tolerance = 5 * np.sqrt(M * w * (1 - w) / R) + 1e-12
    assert np.all(np.abs(counts.mean(0) - M * w) <= tolerance), (counts.mean(0), M * w)
