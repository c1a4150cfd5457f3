"""``pmcmc`` (particle Gibbs over trajectories and parameters) on a 1-D linear-Gaussian SSM (C = 1, so the
parameter posterior is unimodal). Quick: posterior means and sds of (a, q, r) against the exact ones by quadrature
of prior x Kalman likelihood on a grid, within ArviZ MCSE. Slow: against BlackJAX NUTS on the same program with the
states sampled, within combined MCSE."""

import numpy as np
import pytest
from scalar_lgssm import scalar_lgssm_data, scalar_lgssm_spec

import inference
import zoo
from inference.results import diagnostics
from zoo.errors import OptionError

PARAMETERS = ["A", "process_var", "obs_var"]


def scalar_kalman_log_likelihood(y, a, q, r):
    """log p(y | a, q, r) of x_1 ~ N(0, 1), x_t = a x_{t-1} + N(0, q), y_t = x_t + N(0, r); y (K, T), a, q, r
    broadcastable grids. Sum over the K trajectories."""
    total = 0.0
    for yk in y:
        m, P, ll = 0.0, 1.0, 0.0
        for t, yt in enumerate(yk):
            if t > 0:
                m, P = a * m, a * a * P + q
            S = P + r
            ll = ll - 0.5 * ((yt - m) ** 2 / S + np.log(2 * np.pi * S))
            gain = P / S
            m, P = m + gain * (yt - m), (1 - gain) * P
        total = total + ll
    return total


def exact_posterior_moments(y, points: int = 90):
    """Posterior mean and sd of a, q, r by the midpoint rule on a (a, log q, log r) grid wide enough (> 8 posterior
    sds each way here) that truncation and discretisation errors are far below the MCSE of the chains."""
    a = np.linspace(-0.5, 2.0, points)[:, None, None]
    log_q = np.linspace(-6.0, 1.5, points)[None, :, None]
    log_r = np.linspace(-9.0, 1.5, points)[None, None, :]
    log_prior = -0.5 * (a / 0.5) ** 2 - 0.5 * ((log_q - np.log(0.1)) ** 2 + (log_r - np.log(0.1)) ** 2)
    log_post = log_prior + scalar_kalman_log_likelihood(y, a, np.exp(log_q), np.exp(log_r))
    w = np.exp(log_post - log_post.max())
    w /= w.sum()
    values = {"A": a, "process_var": np.exp(log_q), "obs_var": np.exp(log_r)}
    moments = {}
    for name, v in values.items():
        mean = np.sum(w * v)
        moments[name] = (mean, np.sqrt(np.sum(w * (v - mean) ** 2)))
    return moments


def test_pmcmc_parameter_posterior_matches_quadrature():
    spec = scalar_lgssm_spec()
    data = scalar_lgssm_data(num_trajectories=2, num_steps=25)
    idata = inference.run(
        spec, data, engine="pmcmc", num_chains=4, num_warmup=300, num_samples=3000, num_particles=10, num_steps=10
    )
    table = diagnostics.summary(idata, var_names=PARAMETERS)
    exact = exact_posterior_moments(np.asarray(data.observed["y"])[..., 0])
    assert table["r_hat"].max() < 1.05
    for name, row in zip(PARAMETERS, table.itertuples(), strict=True):
        mean, sd = exact[name]
        # 6 comparisons at 4 MCSE: family-wise false alarm rate ~0.04 %
        assert abs(row.mean - mean) < 4.0 * row.mcse_mean, (name, row.mean, mean, row.mcse_mean)
        assert abs(row.sd - sd) < 4.0 * row.mcse_sd, (name, row.sd, sd, row.mcse_sd)


@pytest.mark.slow
def test_pmcmc_parameter_posterior_matches_nuts():
    spec = scalar_lgssm_spec()
    data = scalar_lgssm_data(num_trajectories=2, num_steps=25)
    gibbs = inference.run(
        spec, data, engine="pmcmc", num_chains=4, num_warmup=300, num_samples=1500, num_particles=15, num_steps=10
    )
    nuts = inference.run(spec, data, engine="nuts", num_chains=4, num_warmup=500, num_samples=1000)
    a = diagnostics.summary(gibbs, var_names=PARAMETERS)
    b = diagnostics.summary(nuts, var_names=PARAMETERS)
    assert a["r_hat"].max() < 1.05 and b["r_hat"].max() < 1.05
    # 3 parameters x (mean, sd) = 6 comparisons; 4 combined MCSE keeps the family-wise false alarm rate ~0.04 %
    z_mean = (a["mean"] - b["mean"]) / np.hypot(a["mcse_mean"], b["mcse_mean"])
    z_sd = (a["sd"] - b["sd"]) / np.hypot(a["mcse_sd"], b["mcse_sd"])
    assert np.all(np.abs(z_mean) < 4.0), z_mean
    assert np.all(np.abs(z_sd) < 4.0), z_sd


def test_pmcmc_rejects_one_particle():
    with pytest.raises(OptionError):
        inference.run(zoo.get("lgssm"), engine="pmcmc", num_particles=1)
