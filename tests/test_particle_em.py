"""PGAS-EM and PSAEM on a 1-D linear-Gaussian SSM against the exact maximum-likelihood estimate.

Reference: the ML estimate of (A, process_var, obs_var) (C fixed at 1: with P0 fixed, the scale of x and C are only
weakly identified) by L-BFGS on the exact Kalman log-likelihood. Error model: each EM run ends at the EM fixed point
(= the ML estimate) plus Monte Carlo noise from the finite number of PGAS trajectories in its last M-steps; over R
independent runs (chains) the mean of the final estimates must be within 4 standard errors (sd over runs / sqrt(R))
of the ML estimate, per parameter (3 parameters: a false-alarm rate below 0.1 % for a normal mean; the sd itself is
estimated from R = 8 runs, whose t_7 tail at 4 is 0.5 %). Non-convergence of EM would show as a failure, not be
absorbed by the tolerance. The closed-form M-step itself is checked exactly against weighted least squares.
"""

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest
import scipy.optimize

import inference
import zoo
from inference.applications import ar1
from inference.gaussian import kalman
from inference.particles import particle_em
from zoo import lgssm, ssm
from zoo.errors import OptionError

SPEC = lgssm.lgssm_spec("lgssm/1d", 1, 1, 0)
NAMES = ("A", "process_var", "obs_var")
START = {"A": [[0.5]], "C": [[1.0]], "process_var": [0.3], "obs_var": [0.3]}
RUNS = 8


@cache
def problem():
    data = SPEC.validate(SPEC.simulate(jax.random.key(0), num_train=2, num_steps=50))
    return data, {k: jnp.asarray(v) for k, v in data.observed.items()}


def exact_ml(observed) -> dict[str, float]:
    view = SPEC.views["state_space"]

    def nll(z):
        params = {
            "A": z[0].reshape(1, 1),
            "C": jnp.ones((1, 1)),
            "process_var": jnp.exp(z[1:2]),
            "obs_var": jnp.exp(z[2:3]),
        }
        lg = view.linear_gaussian(ssm.bind(view, params, observed))
        y, mask, u = ssm.trajectories(observed)
        return -jnp.sum(jax.vmap(lambda a, b, c: kalman.kalman_filter(lg, a, b, c).log_lik)(y, mask, u))

    f = jax.jit(jax.value_and_grad(nll))
    res = scipy.optimize.minimize(lambda z: tuple(map(np.asarray, f(jnp.asarray(z)))), [0.5, -1.0, -1.0], jac=True)
    assert res.success
    return {"A": res.x[0], "process_var": np.exp(res.x[1]), "obs_var": np.exp(res.x[2])}


def check_against_ml(idata, ml):
    for name in NAMES:
        runs = np.asarray(idata.point_estimates[name]).reshape(RUNS)
        se = runs.std(ddof=1) / np.sqrt(RUNS)
        assert abs(runs.mean() - ml[name]) < 4 * se, (name, runs.mean(), ml[name], se)


# EM from START converges slowly on this problem: after 25 PGAS-EM iterations (or 35 PSAEM ones, 15 of them with
# gamma = 1) the runs' mean still sat 2-5 standard errors from the ML estimate on every seed tried (A above,
# process_var below), the same before and after the particle filter's rewrite, so those settings passed by the luck
# of one seed. With 80 full iterations, and 150 PSAEM ones of which 80 are full, the bias is below the runs' spread
# (|z| < 1.5 on seeds 0-2).


def test_pgas_em_recovers_exact_ml():
    data, observed = problem()
    idata = inference.run(
        SPEC,
        data,
        engine="pgas-em",
        num_chains=RUNS,
        num_steps=80,
        num_samples=5,
        num_particles=10,
        params=START,
        fixed=("C",),
    )
    check_against_ml(idata, exact_ml(observed))
    assert idata.posterior[ssm.STATES].shape == (RUNS, 5, 2, 50, 1)


def test_psaem_recovers_exact_ml():
    """gamma_j = 1 for the first 80 iterations (PGAS-EM burn-in), then (j - 80)^-0.7 for 70 more."""
    data, observed = problem()
    idata = inference.run(
        SPEC,
        data,
        engine="psaem",
        num_chains=RUNS,
        num_steps=150,
        full_steps=80,
        num_samples=5,
        num_particles=10,
        params=START,
        fixed=("C",),
    )
    check_against_ml(idata, exact_ml(observed))


def test_linear_gaussian_m_step_is_weighted_least_squares():
    """Exact check of the closed-form M-step on random samples and weights: A, C by weighted normal equations."""
    _, observed = problem()
    samples = jax.random.normal(jax.random.key(3), (4, 2, 50, 1))
    weights = jnp.array([0.1, 0.2, 0.3, 0.4])
    params = {k: jnp.asarray(v, dtype=float) for k, v in START.items()}
    new = particle_em.linear_gaussian_m_step(params, frozenset({"C"}), samples, weights, observed)
    y, mask, _ = ssm.trajectories(observed)
    w = (weights[:, None, None] * mask[None, :, 1:]).reshape(-1)
    xp, xn = samples[:, :, :-1].reshape(-1), samples[:, :, 1:].reshape(-1)
    A = np.sum(w * xp * xn) / np.sum(w * xp * xp)
    np.testing.assert_allclose(new["A"][0, 0], A, rtol=1e-8)
    np.testing.assert_allclose(new["process_var"][0], np.sum(w * (xn - A * xp) ** 2) / np.sum(w), rtol=1e-8)
    we = (weights[:, None, None] * mask[None]).reshape(-1)
    res = (y[None] - samples).reshape(-1)
    np.testing.assert_allclose(new["obs_var"][0], np.sum(we * res**2) / np.sum(we), rtol=1e-8)
    assert new["C"] is params["C"]


@pytest.mark.parametrize("gp_prior", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_gp_ssm_pseudo_targets_maximise_q(gp_prior):
    """The closed-form pseudo-targets of the sparse GP-SSM are the stationary point of Q (ML) or of Q + log N(F~ |
    m(X~), K(X~, X~)) (MAP, ``gp_prior``): the gradient there is ~0 against its size at the start, and nearby F~ are
    worse. Samples: the observations of the kink plus noise (any trajectories define a valid Q)."""
    spec = zoo.get("gpssm/sparse")
    view = spec.views["state_space"]
    observed = {k: jnp.asarray(v) for k, v in ar1.prepare(spec, spec.simulate(jax.random.key(0))).observed.items()}
    params = {k: jnp.asarray(v) for k, v in ar1.initial_params(spec.views["gp_ssm"], observed).items()}
    y = jnp.where(jnp.isfinite(observed["y"]), observed["y"], 0.0)
    samples = y[None] + 0.3 * jax.random.normal(jax.random.key(1), (3, *y.shape))
    weights = jnp.array([0.5, 0.3, 0.2])

    def objective(F):
        q = particle_em.monte_carlo_q(view, {**params, "pseudo_targets": F}, observed, samples, weights)
        if not gp_prior:
            return q
        theta = ssm.bind(view, params, observed)
        g, L = theta["gpssm"], theta["predictor"].chol
        mean = (g.pseudo_inputs @ g.mean_A.T + g.mean_b).T
        return q + jnp.sum(jax.vmap(lambda m, l, f: dist.MultivariateNormal(m, scale_tril=l).log_prob(f))(mean, L, F))

    F_star = jax.jit(particle_em.closed_form_pseudo_targets, static_argnums=(0, 5))(
        view, params, samples, weights, observed, gp_prior
    )
    grad, objective = jax.jit(jax.grad(objective)), jax.jit(objective)
    assert jnp.linalg.norm(grad(F_star)) < 1e-6 * jnp.linalg.norm(grad(params["pseudo_targets"]))
    for k in range(3):
        nearby = F_star + 0.05 * jax.random.normal(jax.random.key(10 + k), F_star.shape)
        assert objective(nearby) < objective(F_star)


def test_step_sizes_and_option_errors():
    gammas = particle_em.step_sizes(8, 3, 0.7)
    np.testing.assert_allclose(gammas, [1, 1, 1, 1, 2**-0.7, 3**-0.7, 4**-0.7, 5**-0.7])
    weights = jnp.zeros(3)
    for slot, g in enumerate([1.0, 0.5, 0.25]):
        weights = particle_em.slot_weights(weights, slot, g)
    np.testing.assert_allclose(weights, [0.375, 0.375, 0.25])  # gamma^_{kj} sums to one
    data, _ = problem()
    with pytest.raises(OptionError, match="num_particles"):
        inference.run(SPEC, data, engine="pgas-em", num_particles=1)
    with pytest.raises(OptionError, match="fixed"):
        inference.run(SPEC, data, engine="pgas-em", fixed=("nope",))
    with pytest.raises(OptionError, match="step_size_exponent"):
        inference.run(SPEC, data, engine="psaem", step_size_exponent=0.4)
    with pytest.raises(OptionError, match="pseudo_target_prior"):
        inference.run(SPEC, data, engine="pgas-em", pseudo_target_prior="gp")
