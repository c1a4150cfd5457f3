"""PGAS on the linear-Gaussian SSM: smoothing moments against the RTS smoother (ArviZ MCSE), and invariance of the
exact posterior under one conditional-SMC sweep on a 2-step toy."""

import jax
import jax.numpy as jnp
import numpy as np

import inference
import zoo
from inference.gaussian import kalman
from inference.particles import pgas
from inference.results import diagnostics
from zoo import ssm


def lgssm_problem(num_trajectories: int, num_steps: int, seed: int = 0):
    spec = zoo.get("lgssm")
    view = spec.views["state_space"]
    data = spec.validate(spec.simulate(jax.random.key(seed), num_train=num_trajectories, num_steps=num_steps))
    observed = {k: jnp.asarray(v) for k, v in data.observed.items()}
    theta = ssm.bind(view, dict(spec.default_params), observed)
    return spec, view, data, observed, theta


def test_pgas_smoothing_moments_match_rts():
    spec, view, data, observed, theta = lgssm_problem(2, 10)
    idata = inference.run(spec, data, engine="pgas", num_chains=4, num_warmup=50, num_samples=500, num_particles=20)
    y, mask, u = ssm.trajectories(observed)
    lg = view.linear_gaussian(theta)
    smoothed = jax.vmap(lambda yk, mk, uk: kalman.kalman_smoother(lg, yk, mk, uk)[1])(y, mask, u)
    rts_mean = np.asarray(smoothed.mean)  # (K, T, D)
    rts_sd = np.sqrt(np.asarray(jnp.diagonal(smoothed.cov, axis1=-2, axis2=-1)))

    table = diagnostics.summary(idata, var_names=[ssm.STATES])
    shape = rts_mean.shape
    mean, sd = table["mean"].values.reshape(shape), table["sd"].values.reshape(shape)
    mcse_mean, mcse_sd = table["mcse_mean"].values.reshape(shape), table["mcse_sd"].values.reshape(shape)
    assert table["r_hat"].max() < 1.05
    # 80 coordinates: 4.5 MCSE keeps the family-wise false alarm rate below 0.1 %
    assert np.all(np.abs(mean - rts_mean) < 4.5 * mcse_mean), np.max(np.abs(mean - rts_mean) / mcse_mean)
    assert np.all(np.abs(sd - rts_sd) < 4.5 * mcse_sd), np.max(np.abs(sd - rts_sd) / mcse_sd)


def test_pgas_kernel_leaves_exact_posterior_invariant():
    """Start M independent chains at exact draws of p(x_{1:2} | y_{1:2}), apply one sweep with only N = 3
    particles (so wrong ancestor weights would show), compare first and second moments with the exact ones."""
    _, view, _, observed, theta = lgssm_problem(1, 2, seed=3)
    y, mask, u = (a[0] for a in ssm.trajectories(observed))
    lg = view.linear_gaussian(theta)
    forward, smoothed = kalman.kalman_smoother(lg, y, mask, u)
    M = 6000
    k_exact, k_sweep = jax.random.split(jax.random.key(11))
    start = kalman.backward_sample(k_exact, forward, M)  # (M, 2, D)
    sweep = jax.jit(jax.vmap(lambda k, ref: pgas.conditional_smc_sweep(view, theta, k, ref, y, mask, u, 3)))
    out = np.asarray(sweep(jax.random.split(k_sweep, M), start)).reshape(M, -1)
    assert not np.allclose(out, np.asarray(start).reshape(M, -1))  # the kernel moves

    mean = np.asarray(smoothed.mean).reshape(-1)
    D = smoothed.mean.shape[1]
    cov = np.zeros((2 * D, 2 * D))
    cov[:D, :D], cov[D:, D:] = smoothed.cov[0], smoothed.cov[1]
    cov[:D, D:] = smoothed.cross[0]
    cov[D:, :D] = np.asarray(smoothed.cross[0]).T
    centred = out - mean
    z_mean = centred.mean(0) / np.sqrt(np.diag(cov) / M)
    products = centred[:, :, None] * centred[:, None, :]
    iu = np.triu_indices(2 * D)
    z_cov = (products.mean(0) - cov)[iu] / (products.std(0, ddof=1)[iu] / np.sqrt(M))
    assert np.all(np.abs(z_mean) < 4.0), z_mean
    assert np.all(np.abs(z_cov) < 4.0), z_cov
