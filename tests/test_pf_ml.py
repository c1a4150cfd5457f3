"""``pf-ml`` on the 1-D linear-Gaussian SSM (C = 1, ``tests/scalar_lgssm.py``): the learned parameters agree with
the exact ML estimate (L-BFGS on the Kalman log-likelihood) within Monte Carlo error.

Two Monte Carlo errors, both estimated here, in the unconstrained space phi = (a, log r, log q) (ravel order of
the parameter names, sorted): (1) the spread of the Polyak-averaged estimate over independent chains, and (2) the
uncertainty of where the expected forward-smoothing score vanishes: its mean over R filter runs at the exact ML
point has covariance S / R, which moves the root by H^-1 (S / R) H^-1 (H the Hessian of the exact log-likelihood).
The score's O(1/N) bias is thereby tested too: a bias larger than a few of these standard errors fails."""

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
from scalar_lgssm import TRUE_PARAMS, scalar_lgssm_data, scalar_lgssm_spec

import inference
from inference.gaussian import kalman
from inference.particles import pf
from zoo import ssm

NUM_PARTICLES = 50
SCORE_RUNS = 64
NUM_CHAINS = 6


@cache
def problem():
    spec = scalar_lgssm_spec()
    view = spec.views["state_space"]
    data = scalar_lgssm_data(num_trajectories=2, num_steps=25, seed=1)
    observed = {k: jnp.asarray(v) for k, v in data.observed.items()}
    phi0, to_params = pf.parameter_transform(view, observed, {k: jnp.asarray(v) for k, v in TRUE_PARAMS.items()})
    return spec, view, data, observed, phi0, to_params


def exact_log_likelihood(view, to_params, observed, phi):
    theta = ssm.bind(view, to_params(phi), observed)
    y, mask, u = ssm.trajectories(observed)
    lg = view.linear_gaussian(theta)
    return jnp.sum(jax.vmap(lambda yk, mk, uk: kalman.kalman_filter(lg, yk, mk, uk).log_lik)(y, mask, u))


def exact_ml(view, to_params, observed, phi0):
    """(phi_ml (P,), Hessian of -log-likelihood at phi_ml (P, P)) by L-BFGS with exact gradients."""
    loss = jax.jit(jax.value_and_grad(lambda phi: -exact_log_likelihood(view, to_params, observed, phi)))
    result = scipy.optimize.minimize(
        lambda p: tuple(np.asarray(v) for v in loss(p)), np.asarray(phi0), jac=True, method="L-BFGS-B", tol=1e-12
    )
    assert result.success, result.message
    # jitted: the eager Hessian of the Kalman filter dispatches (and compiles) op by op, 3x slower
    hessian = jax.jit(jax.hessian(lambda phi: -exact_log_likelihood(view, to_params, observed, phi)))(
        jnp.asarray(result.x)
    )
    return result.x, np.asarray(hessian)


def test_pf_ml_recovers_exact_ml_estimate():
    spec, view, data, observed, phi0, to_params = problem()
    phi_ml, hessian = exact_ml(view, to_params, observed, phi0)

    def score(key):
        return pf.log_likelihood_and_score(
            view, to_params, observed, jnp.asarray(phi_ml), key, NUM_PARTICLES, "fully_adapted", "systematic"
        )[1]

    scores = np.asarray(jax.jit(jax.vmap(score))(jax.random.split(jax.random.key(4), SCORE_RUNS)))
    root_cov = np.linalg.solve(hessian, np.linalg.solve(hessian, np.cov(scores.T) / SCORE_RUNS).T)

    idata = inference.run(
        spec, data, engine="pf-ml", num_chains=NUM_CHAINS, num_particles=NUM_PARTICLES, num_steps=100, seed=2
    )
    learned = {name: jnp.asarray(idata.posterior[name].values[:, 0]) for name in TRUE_PARAMS}
    transforms = pf.site_transforms(view, observed, tuple(learned))
    phi_chains = np.asarray(jax.vmap(lambda p: pf.unconstrain(transforms, p)[0])(learned))  # (C, P)
    chain_var = phi_chains.var(axis=0, ddof=1) / NUM_CHAINS
    z = (phi_chains.mean(axis=0) - phi_ml) / np.sqrt(chain_var + np.diag(root_cov))
    # 3 coordinates at 4 standard errors (the chain spread has only C - 1 = 5 degrees of freedom, hence not less)
    assert np.all(np.abs(z) < 4.0), (z, phi_chains.mean(axis=0), phi_ml)


def test_pf_ml_compiles_once_per_configuration():
    spec, _, data, _, _, _ = problem()
    first = inference.run(spec, data, engine="pf-ml", num_chains=1, num_particles=4, num_steps=2, seed=0)
    second = inference.run(spec, data, engine="pf-ml", num_chains=1, num_particles=4, num_steps=2, seed=1)
    assert first.posterior.attrs["compile_s"] > 0.0
    assert second.posterior.attrs["compile_s"] == 0.0
