"""PGAS and particle Gibbs on the non-Markov full GP-SSM (M9, ``gpssm/full``; ``inference.particles.pgas_marginal``).

* the whole-history ancestor weight equals the ratio of the program's own densities (NumPyro ``log_density``) and
  the product of the sequential conditionals (``history_predictive``);
* on D = 1, T = 4 with fixed hyperparameters the posterior p(x_{1:4} | y_{1:4}) is non-Gaussian (the GP covariance
  depends on x); exact draws come from rejection sampling (prior draws of M9 accepted with probability
  prod_t exp(-(y_t - x_t)^2 / 2r), an independent NumPy implementation); one sweep with N = 3 particles from exact
  draws must keep them exact, and the ``pgas`` engine's chains must match the exact moments within MCSE;
* ``pmcmc`` on ``gpssm/full``: its parameter target is the program's density, and it runs and returns
  hyperparameter and state draws (slow: agreement with NUTS on a tiny case).
"""

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer.util import log_density

import inference
import zoo
from inference.particles import pgas_marginal, pmcmc
from inference.particles.pf import constrain, site_transforms, unconstrain
from inference.results import diagnostics
from zoo import gp, gpssm, ssm
from zoo.errors import OptionError

# D = 1, T = 4, zero mean. Observations close together keep the states in one region, where the GP's output variance
# (2, far above the process noise 0.01) makes every transition inform the others: x_t depends strongly on the whole
# history, so wrong ancestor weights leave a visible bias in the invariance test below (checked with 12000 chains x 5
# and x 15 sweeps: max |z| 7.2-7.5 for weights truncated to one step, the Markov form p(x'_t | x_{1:t-1}); 5.7-7.0
# for the joint density without the division by p(x_{1:t-1}); below 2.2 for the correct weights). obs_var = 0.5
# leaves the dynamics a large share of the posterior and an acceptance rate of ~6 % to the rejection sampler.
PARAMS = {
    "lengthscale": np.array([[1.0]]),
    "signal_var": np.array([2.0]),
    "process_var": np.array([0.01]),
    "obs_var": np.array([0.5]),
}
Y = np.array([1.0, 1.2, 0.9, 1.1])


@cache
def exact_draws(num_draws: int, seed: int = 0) -> np.ndarray:
    """Exact draws (num_draws, T) of p(x_{1:T} | y_{1:T}) for PARAMS by rejection: M9 prior paths drawn sequentially
    (x_1 ~ N(0, 1), then the GP predictive given the path's earlier transitions), accepted with probability
    prod_t exp(-(y_t - x_t)^2 / 2r). NumPy, independent of the library's GP code."""
    rng = np.random.default_rng(seed)
    sf2, ell2 = PARAMS["signal_var"][0], PARAMS["lengthscale"][0, 0] ** 2
    pv, r = PARAMS["process_var"][0], PARAMS["obs_var"][0]
    noise = pv + gp.JITTER * (sf2 + pv)  # the model's effective noise (gpssm.effective_noise)
    T, batch = len(Y), 100_000
    kept, total = [], 0
    while total < num_draws:
        x = np.zeros((batch, T))
        x[:, 0] = rng.normal(size=batch)
        x[:, 1] = np.sqrt(sf2 + noise) * rng.normal(size=batch)
        for t in range(2, T):
            inputs, targets, query = x[:, : t - 1], x[:, 1:t], x[:, t - 1]
            K = sf2 * np.exp(-0.5 * (inputs[:, :, None] - inputs[:, None, :]) ** 2 / ell2) + noise * np.eye(t - 1)
            k = sf2 * np.exp(-0.5 * (inputs - query[:, None]) ** 2 / ell2)
            solved = np.linalg.solve(K, np.stack([targets, k], -1))
            mean = np.sum(k * solved[..., 0], 1)
            var = sf2 + noise - np.sum(k * solved[..., 1], 1)
            x[:, t] = mean + np.sqrt(var) * rng.normal(size=batch)
        accept = rng.uniform(size=batch) < np.exp(-0.5 * np.sum((Y - x) ** 2, 1) / r)
        kept.append(x[accept])
        total += int(accept.sum())
    return np.concatenate(kept)[:num_draws]


def tiny_problem():
    spec = zoo.get("gpssm/full")
    view = spec.views[pgas_marginal.VIEW]
    observed = {"y": jnp.asarray(Y)[None, :, None], "lengths": jnp.array([float(len(Y))])}
    theta = ssm.bind(view, {k: jnp.asarray(v) for k, v in PARAMS.items()}, observed)
    return spec, view, observed, theta


def test_ancestor_weight_is_ratio_of_program_densities():
    """D = 2, U = 1, linear mean: log p(x'_{t:T} | x^j_{1:t-1}) from ``ancestor_log_weights`` equals
    [log p(x^j_{1:t-1}, x'_{t:T}, y_{1:T}) - sum_{s>=t} log p(y_s | x'_s)] - log p(x^j_{1:t-1}, y_{1:t-1}), both from
    NumPyro's log_density of the M9 program (the second on the first t-1 steps), and the sum of the sequential
    conditionals p(x'_s | x_{1:s-1}) for s >= t."""
    D, U, T, N, t = 2, 1, 6, 4, 3
    spec = gpssm.full_gpssm_spec("test/full-2d", None, D, U, mean="linear")
    view = spec.views[pgas_marginal.VIEW]
    rng = np.random.default_rng(1)
    params = {
        "lengthscale": jnp.asarray(rng.uniform(0.5, 2.0, (D, D + U))),
        "signal_var": jnp.asarray(rng.uniform(0.5, 2.0, D)),
        "process_var": jnp.asarray(rng.uniform(0.05, 0.2, D)),
        "obs_var": jnp.asarray(rng.uniform(0.1, 0.3, D)),
        "mean_A": jnp.asarray(0.5 * rng.normal(size=(D, D + U))),
        "mean_b": jnp.asarray(rng.normal(size=D)),
    }
    y, u = jnp.asarray(rng.normal(size=(T, D))), jnp.asarray(rng.normal(size=(T, U)))
    histories, reference = jnp.asarray(rng.normal(size=(N, T, D))), jnp.asarray(rng.normal(size=(T, D)))
    observed = {"y": y[None], "lengths": jnp.array([float(T)]), "u": u[None]}
    theta = ssm.bind(view, params, observed)
    weights = pgas_marginal.ancestor_log_weights(view, theta, histories, reference, u, t)

    def program_log_density(path, steps):
        data = {"y": y[None, :steps], "lengths": jnp.array([float(steps)]), "u": u[None, :steps]}
        sites = {**params, "x1": path[None, 0], "x_rest": path[None, 1:steps]}
        return log_density(spec.program, (), data, sites)[0]

    @jax.jit
    def expected_weights(history):
        joined = jnp.concatenate([history[:t], reference[t:]])
        emission = jnp.sum(jax.scipy.stats.norm.logpdf(y[t:], reference[t:], jnp.sqrt(params["obs_var"])))
        ratio = program_log_density(joined, T) - emission - program_log_density(history, t)
        sequential = 0.0
        for s in range(t, T):
            mean, var = view.history_predictive(theta, joined, u, s)
            sequential += jnp.sum(jax.scipy.stats.norm.logpdf(joined[s], mean, jnp.sqrt(var)))
        return ratio, sequential

    ratio, sequential = jax.vmap(expected_weights)(histories)
    np.testing.assert_allclose(weights, ratio, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(weights, sequential, rtol=1e-9, atol=1e-9)
    # the sweep's path: the history's density from the predictive's own factorisation
    _, _, log_history = pgas_marginal.predictive_each(view, theta, histories, u, t)
    with_history = pgas_marginal.ancestor_log_weights(view, theta, histories, reference, u, t, log_history)
    np.testing.assert_allclose(with_history, weights, rtol=1e-10, atol=1e-10)


def test_pgas_kernel_leaves_exact_posterior_invariant():
    """M independent chains started at exact draws of p(x_{1:4} | y_{1:4}); 10 sweeps with only N = 3 particles (so
    wrong ancestor weights would show); means and second central moments against exact draws (z-scores with the
    standard errors of both independent samples)."""
    _, view, observed, theta = tiny_problem()
    y, mask, u = (a[0] for a in ssm.trajectories(observed))
    M, M_truth, sweeps = 12_000, 100_000, 10

    def chain(key, reference):
        def body(i, ref):
            return pgas_marginal.conditional_smc_sweep(view, theta, jax.random.fold_in(key, i), ref, y, mask, u, 3)

        return jax.lax.fori_loop(0, sweeps, body, reference)

    start = exact_draws(M, seed=1)
    out = np.asarray(jax.jit(jax.vmap(chain))(jax.random.split(jax.random.key(5), M), jnp.asarray(start)[..., None]))
    out = out[..., 0]
    assert np.mean(np.any(out != start, axis=1)) > 0.5  # the kernel moves
    truth = exact_draws(M_truth, seed=2)  # independent of the starting draws
    mean = truth.mean(0)
    iu = np.triu_indices(len(Y))

    def second_moments(x):
        centred = x - mean
        return (centred[:, :, None] * centred[:, None, :])[:, iu[0], iu[1]]

    def z_scores(a, b):
        return (a.mean(0) - b.mean(0)) / np.sqrt(a.var(0) / len(a) + b.var(0) / len(b))

    z_mean, z_cov = z_scores(out, truth), z_scores(second_moments(out), second_moments(truth))
    # 14 statistics at 4 standard errors: family-wise false alarm rate ~0.1 % (they are correlated: less)
    assert np.all(np.abs(z_mean) < 4.0), z_mean
    assert np.all(np.abs(z_cov) < 4.0), z_cov


def test_pgas_engine_matches_exact_posterior():
    spec, _, observed, _ = tiny_problem()
    idata = inference.run(
        spec, observed, engine="pgas", params=PARAMS, num_chains=4, num_warmup=100, num_samples=1500, num_particles=5
    )
    table = diagnostics.summary(idata, var_names=[ssm.STATES])
    truth = exact_draws(100_000, seed=2)
    mean, sd = truth.mean(0), truth.std(0)
    se_mean = sd / np.sqrt(len(truth))
    se_sd = sd / np.sqrt(2 * len(truth))  # Gaussian approximation; negligible next to the chains' MCSE anyway
    assert table["r_hat"].max() < 1.05
    # 4 steps x (mean, sd) = 8 comparisons at 4.5 combined standard errors
    z_mean = (table["mean"].values - mean) / np.hypot(table["mcse_mean"].values, se_mean)
    z_sd = (table["sd"].values - sd) / np.hypot(table["mcse_sd"].values, se_sd)
    assert np.all(np.abs(z_mean) < 4.5), z_mean
    assert np.all(np.abs(z_sd) < 4.5), z_sd


def test_pgas_and_pmcmc_reject_bad_options_on_full_gpssm():
    spec, _, observed, _ = tiny_problem()
    for engine in ("pgas", "pmcmc"):
        with pytest.raises(OptionError):
            inference.run(spec, observed, engine=engine, num_particles=1)
        with pytest.raises(OptionError):
            inference.run(spec, observed, engine=engine, num_samples=0)
    with pytest.raises(OptionError):
        inference.run(spec, observed, engine="pgas", params={"lengthscale": -1.0})


def test_pmcmc_parameter_target_is_program_density():
    """The theta block's target on gpssm/full: log p(theta) + log p(x, y | theta) (minus the log-Jacobian of the
    unconstraining map) equals NumPyro's log_density of the M9 program at (theta, x)."""
    spec, view, observed, _ = tiny_problem()
    params = {k: jnp.asarray(v) * f for (k, v), f in zip(PARAMS.items(), (1.3, 0.7, 2.0, 0.9), strict=True)}
    states = jnp.asarray(np.random.default_rng(4).normal(size=(1, len(Y), 1)))
    transforms = site_transforms(view, observed, tuple(params))
    phi, unravel = unconstrain(transforms, params)
    target = pmcmc.parameter_log_posterior(
        view, transforms, unravel, observed, phi, states, pmcmc.MARGINAL_GP.log_joint
    )
    _, log_jac = constrain(transforms, unravel, phi)
    expected = log_density(spec.program, (), observed, {**params, "x1": states[:, 0], "x_rest": states[:, 1:]})[0]
    np.testing.assert_allclose(target - log_jac, expected, rtol=1e-10)


def test_pmcmc_runs_on_full_gpssm():
    """Smoke: hyperparameter and state draws of the right shapes, finite, with a working theta move."""
    spec = zoo.get("gpssm/full")
    data = spec.simulate(jax.random.key(0))
    observed = {"y": data.observed["y"][:3, :8], "lengths": np.array([8.0, 8.0, 6.0])}
    idata = inference.run(
        spec, observed, engine="pmcmc", num_chains=2, num_warmup=100, num_samples=200, num_particles=5, num_steps=5
    )
    post = idata.posterior
    assert set(PARAMS) <= set(post.data_vars)
    assert post[ssm.STATES].shape == (2, 200, 3, 8, 1)
    assert all(np.all(np.isfinite(post[name].values)) for name in post.data_vars)
    assert 0.05 < float(idata.sample_stats["acceptance_rate"].mean()) < 0.9
    for name in PARAMS:  # theta moves: every chain visits more than a handful of values
        assert all(len(np.unique(chain)) > 20 for chain in post[name].values.reshape(2, 200, -1)[..., 0])


@pytest.mark.slow
def test_pmcmc_matches_nuts_on_tiny_full_gpssm():
    """Hyperparameters and states sampled: pmcmc (PGAS + adaptive MH) against BlackJAX NUTS on the same program
    (K = 1, T = 4), posterior means within 4.5 combined MCSE."""
    spec, _, observed, _ = tiny_problem()
    names = [*PARAMS, ssm.STATES]
    gibbs = inference.run(
        spec, observed, engine="pmcmc", num_chains=4, num_warmup=500, num_samples=4000, num_particles=5, num_steps=5
    )
    nuts = inference.run(spec, observed, engine="nuts", num_chains=4, num_warmup=1000, num_samples=2000)
    a = diagnostics.summary(gibbs, var_names=names)
    b = diagnostics.summary(nuts, var_names=names)
    assert a["r_hat"].max() < 1.05 and b["r_hat"].max() < 1.05
    # 8 means at 4.5 combined MCSE
    z_mean = (a["mean"] - b["mean"]) / np.hypot(a["mcse_mean"], b["mcse_mean"])
    print("pmcmc vs nuts, z of the posterior means:", dict(zip(a.index, np.round(z_mean.values, 2), strict=True)))
    assert np.all(np.abs(z_mean) < 4.5), z_mean
