"""Kalman filter / RTS smoother / backward sampling against a brute-force dense Gaussian computation."""

import jax
import numpy as np
import pytest

import inference
import zoo
from inference.core.program import observed_args
from inference.gaussian import kalman
from zoo import ssm


def dense_posterior(lg: ssm.LinearGaussianSSM, y, mask, u):
    """Stack x_{1:T} into one Gaussian (mean and covariance by the recursion Cov[x_t, x_s] = A^{t-s} P_s), observe
    the unmasked y_t, condition densely. Returns log p(y_obs), posterior mean (T, D), covariance (T D, T D)."""
    lg = ssm.LinearGaussianSSM(*(np.asarray(a) for a in lg))
    y, mask, u = np.asarray(y), np.asarray(mask), np.asarray(u)
    T, D = y.shape[0], lg.m0.shape[0]
    means, marg = [lg.m0], [lg.P0]
    for t in range(1, T):
        means.append(lg.A @ means[-1] + lg.B @ u[t - 1] + lg.b)
        marg.append(lg.A @ marg[-1] @ lg.A.T + lg.Q)
    S = np.zeros((T * D, T * D))
    for s in range(T):
        block = marg[s]
        for t in range(s, T):
            S[t * D : (t + 1) * D, s * D : (s + 1) * D] = block
            S[s * D : (s + 1) * D, t * D : (t + 1) * D] = block.T
            block = lg.A @ block
    mu = np.concatenate(means)
    rows = [t for t in range(T) if mask[t]]
    H = np.zeros((len(rows) * lg.C.shape[0], T * D))
    for i, t in enumerate(rows):
        H[i * lg.C.shape[0] : (i + 1) * lg.C.shape[0], t * D : (t + 1) * D] = lg.C
    y_obs = np.concatenate([y[t] for t in rows])
    y_mean = H @ mu + np.tile(lg.d, len(rows))
    y_cov = H @ S @ H.T + np.kron(np.eye(len(rows)), lg.R)
    resid = y_obs - y_mean
    _, logdet = np.linalg.slogdet(y_cov)
    log_lik = -0.5 * (resid @ np.linalg.solve(y_cov, resid) + logdet + len(resid) * np.log(2 * np.pi))
    gain = np.linalg.solve(y_cov, H @ S).T
    return log_lik, (mu + gain @ resid).reshape(T, D), S - gain @ H @ S


@pytest.fixture(scope="module")
def problem():
    spec = zoo.get("lgssm/controlled")
    dataset = spec.validate(spec.simulate(jax.random.key(3)))
    observed = observed_args(dataset)
    view = spec.views["state_space"]
    lg = view.linear_gaussian(ssm.bind(view, dict(spec.default_params), observed))
    return spec, dataset, observed, lg


def test_filter_and_smoother_match_dense_conditioning(problem):
    _, _, observed, lg = problem
    y, mask, u = ssm.trajectories(observed)
    smooth = jax.jit(kalman.kalman_smoother)
    for k in range(y.shape[0]):  # trajectories of different lengths: the mask matters
        forward, smoothed = smooth(lg, y[k], mask[k], u[k])
        log_lik, mean, cov = dense_posterior(lg, y[k], mask[k], u[k])
        T, D = mean.shape
        np.testing.assert_allclose(forward.log_lik, log_lik, rtol=1e-10)
        np.testing.assert_allclose(smoothed.mean, mean, atol=1e-10)
        blocks = cov.reshape(T, D, T, D)
        np.testing.assert_allclose(smoothed.cov, np.stack([blocks[t, :, t] for t in range(T)]), atol=1e-10)
        np.testing.assert_allclose(smoothed.cross, np.stack([blocks[t, :, t + 1] for t in range(T - 1)]), atol=1e-10)


def test_engine_draws_follow_the_smoothing_distribution(problem):
    spec, dataset, observed, lg = problem
    idata = inference.run(spec, dataset, engine="kalman", seed=1, num_chains=2, num_samples=2000)
    draws = idata.posterior[ssm.STATES].values.reshape(-1, *dataset.observed["y"].shape[:2], 2)
    n = draws.shape[0]
    mean = idata.point_estimates["states_mean"].values[0]
    var = np.diagonal(idata.point_estimates["states_cov"].values[0], axis1=-2, axis2=-1)
    # Exact independent draws: z-scores of the sample mean are N(0, 1); sample variance has sd var sqrt(2/(n-1)).
    # 4.5 sd over 2 x 320 z-scores keeps the family-wise false-alarm rate near 0.5 % (2 x 320 x 6.8e-6).
    z_mean = (draws.mean(0) - mean) / np.sqrt(var / n)
    z_var = (draws.var(0, ddof=1) - var) / (var * np.sqrt(2.0 / (n - 1)))
    assert np.abs(z_mean).max() < 4.5
    assert np.abs(z_var).max() < 4.5
    y, mask, u = ssm.trajectories(observed)
    expected = sum(dense_posterior(lg, y[k], mask[k], u[k])[0] for k in range(y.shape[0]))
    np.testing.assert_allclose(idata.posterior.attrs["log_evidence"], expected, rtol=1e-10)


def test_kalman_refuses_nonlinear_models():
    from zoo.errors import IncompatibleEngineError

    with pytest.raises(IncompatibleEngineError, match="linear_gaussian"):
        inference.run("gp/regression", engine="kalman")
