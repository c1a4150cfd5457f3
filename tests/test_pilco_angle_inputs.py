"""PILCO dynamics GPs that see sin and cos of an angle (inference/applications/pilco/inputs.py;
docs/sources/mchutchon.md#pilco-angle-inputs): the input moments against Monte Carlo, the chain rule against the
exact input-output covariance, the moment-matched step from a point against particles, and gradients against finite
differences.

Monte Carlo tolerances as in tests/test_pilco.py: |exact - MC| < 5 standard errors of the per-draw mean, per entry.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree
from monte_carlo import assert_mc

import zoo  # noqa: F401  (float64)
from inference.applications.pilco import cost as C
from inference.applications.pilco import inputs, policies
from inference.applications.pilco import trajectory as tr
from zoo import moments

N_MC = 100_000
U_MAX = 10.0


@pytest.fixture(scope="module")
def angle_dynamics():
    """A GP on [x1, x2, x3, u, sin x4, cos x4] (6 inputs, 4 outputs), identity mean on [x; u]."""
    k = jax.random.split(jax.random.PRNGKey(30), 3)
    J = jnp.concatenate(
        [jax.random.normal(k[0], (30, 4)) * jnp.array([1, 1, 1, 2.0]), 5 * jax.random.uniform(k[1], (30, 1))], 1
    )
    amap = inputs.angle_map(5, 3)
    X = jax.vmap(inputs.apply, in_axes=(None, 0))(amap, J)
    Y = 0.3 * jax.random.normal(k[2], (30, 4))
    predictor = moments.exact_gp_predictor(X, Y, 0.2, jnp.array([1.0, 1.5, 1.0, 4.0, 0.8, 0.8]), 0.01)
    dyn = tr.GPDynamics(predictor, moments.identity_mean(4, 1), jnp.full(4, 1e-3), jnp.zeros(4), inputs=amap)
    pol = policies.init_rbf(jax.random.PRNGKey(31), jnp.zeros(4), jnp.eye(4), 1, 20)
    return tr.with_weights(dyn), pol._replace(weights=5.0 * pol.weights)


def test_input_moments_exact():
    m, F = jnp.array([0.1, -0.2, 0.3, 2.9, 1.0]), 0.3 * jax.random.normal(jax.random.PRNGKey(32), (5, 5))
    S = F @ F.T + 0.02 * jnp.eye(5)
    amap = inputs.angle_map(5, 3)
    ma, Sa, cross = inputs.input_moments(amap, m, S)
    j = m + jax.random.normal(jax.random.PRNGKey(33), (N_MC, 5)) @ jnp.linalg.cholesky(S).T
    a = jax.vmap(inputs.apply, in_axes=(None, 0))(amap, j)
    da, dj = a - a.mean(0), j - j.mean(0)
    assert_mc(ma, a, "mean")
    assert_mc(Sa, da[:, :, None] * da[:, None, :], "cov")
    assert_mc(cross, dj[:, :, None] * da[:, None, :], "Cov[j, a]")


def test_expected_gradient_is_the_input_output_gain(angle_dynamics):
    """Stein: Sigma E[grad f] = Cov[a, f] exactly; against ``moments.predict_moments`` at a well-conditioned Sigma."""
    dyn, _ = angle_dynamics
    mu, F = jnp.array([0.1, -0.2, 0.3, 2.0, 0.5, -0.7]), 0.3 * jax.random.normal(jax.random.PRNGKey(34), (6, 6))
    S = F @ F.T + 0.05 * jnp.eye(6)
    exact = moments.predict_moments(dyn.predictor, mu, S).input_output
    np.testing.assert_allclose(S @ inputs.expected_gradient(dyn.predictor, mu, S), exact, rtol=1e-10, atol=1e-14)


def test_identity_map_gives_the_raw_step(angle_dynamics):
    """With a = [x; u] (A = I, no sines) the chain-rule step equals the raw GP's exact step to rounding."""
    _, pol = angle_dynamics
    k = jax.random.split(jax.random.PRNGKey(35), 2)
    X, Y = jax.random.normal(k[0], (25, 5)), 0.3 * jax.random.normal(k[1], (25, 4))
    raw = tr.GPDynamics(
        moments.exact_gp_predictor(X, Y, 0.2, 1.3, 0.01), moments.identity_mean(4, 1), jnp.full(4, 1e-3), jnp.zeros(4)
    )
    ident = raw._replace(inputs=inputs.InputMap(jnp.eye(5), jnp.zeros((0, 5)), jnp.zeros(0)))
    m, S = jnp.array([0.1, -0.2, 0.3, 0.4]), 0.1 * jnp.eye(4)
    for x, y in zip(tr.mm_step(raw, pol, U_MAX, m, S), tr.mm_step(ident, pol, U_MAX, m, S), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-14)


def test_step_from_a_point_matches_particles(angle_dynamics):
    """From a point (S = 1e-12 I, obs_var 0) x_1 is exactly Gaussian: the moment-matched mean and covariance agree
    with 10^5 particles through the same angle-input GP and policy."""
    dyn, pol = angle_dynamics
    cost = C.tip_cost()
    x0, S0 = jnp.array([0.1, 0.2, -0.3, 2.5]), 1e-12 * jnp.eye(4)
    m1, S1 = jax.jit(tr.mm_step, static_argnums=2)(dyn, pol, U_MAX, x0, S0)
    noise = tr.particle_noise(jax.random.PRNGKey(36), N_MC, 1, 4)
    x1 = jax.jit(tr.particle_trajectory, static_argnums=2)(dyn, pol, U_MAX, cost, x0, S0, noise)[0][0]
    d = x1 - x1.mean(0)
    assert_mc(m1, x1, "x_1 mean")
    assert_mc(S1, d[:, :, None] * d[:, None, :], "x_1 cov")


@pytest.mark.slow  # ~10 s of compilation; the moment-matched cost's gradient is checked by default in test_pilco.py
def test_gradient_against_finite_differences(angle_dynamics):
    """Directional derivatives of the 3-step moment-matched cost against central differences (h = 1e-4: O(h^2)
    truncation ~1e-8 relative, rounding ~1e-12), rtol 1e-5."""
    dyn, pol = angle_dynamics
    flat, unravel = ravel_pytree(pol)
    m0, S0 = jnp.array([0.0, 0.0, 0.0, 2.5]), 0.05 * jnp.eye(4)
    fn = jax.jit(jax.value_and_grad(lambda f: tr.expected_total_cost(dyn, unravel(f), U_MAX, C.tip_cost(), m0, S0, 3)))
    _, grad = fn(flat)
    h = 1e-4
    for k in range(2):
        d = jax.random.normal(jax.random.PRNGKey(40 + k), flat.shape)
        fd = (fn(flat + h * d)[0] - fn(flat - h * d)[0]) / (2 * h)
        np.testing.assert_allclose(grad @ d, fd, rtol=1e-5)
