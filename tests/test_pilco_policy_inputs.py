"""PILCO policies that see sin and cos of the pendulum angle (``inference.applications.pilco.policies.MappedPolicy``;
docs/sources/mchutchon.md#pilco-policies): the linear policy's pre-squash moments are exact, the RBF network's are
exact at a Gaussian input with the mapped input's moments and its Cov[y, z] is the chain rule's, and gradients of
a moment-matched cost through the mapped policy match finite differences.

Monte Carlo tolerances as in tests/test_pilco.py: |exact - MC| < 5 standard errors of the per-draw mean, per entry.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree
from monte_carlo import assert_mc

import zoo  # noqa: F401  (float64)
from inference.applications import pilco
from inference.applications.pilco import cost as C
from inference.applications.pilco import inputs, plant, policies
from inference.applications.pilco import trajectory as tr
from zoo import moments
from zoo.errors import OptionError

N_MC = 100_000
U_MAX = 10.0
ANGLE_MAP = inputs.angle_map(4, 3)  # [x, xdot, thetadot, sin theta, cos theta] from [x, xdot, thetadot, theta]


@pytest.fixture(scope="module")
def state():
    m = jnp.array([0.1, -0.2, 0.3, 2.9])
    F = 0.3 * jax.random.normal(jax.random.PRNGKey(50), (4, 4))
    S = F @ F.T + 0.02 * jnp.eye(4)
    y = m + jax.random.normal(jax.random.PRNGKey(51), (N_MC, 4)) @ jnp.linalg.cholesky(S).T
    return m, S, y


@pytest.fixture(scope="module")
def mapped_rbf(state):
    m, S, _ = state
    pol = policies.init_mapped_rbf(jax.random.PRNGKey(52), m, S, ANGLE_MAP, num_controls=2, num_basis=30)
    inner = pol.policy._replace(weights=10.0 * pol.policy.weights, log_lengthscale=pol.policy.log_lengthscale - 0.5)
    return pol._replace(policy=inner)


def covariances(u, v):
    du, dv = u - u.mean(0), v - v.mean(0)
    return du[:, :, None] * dv[:, None, :]


def test_mapped_linear_policy_pre_squash_moments_exact(state):
    """z = W a + b is linear in a, whose moments and Cov[y, a] are exact: so are z's."""
    m, S, y = state
    W = jnp.array([[0.5, -0.3, 0.2, 0.4, -0.6], [0.1, 0.2, -0.4, 0.3, 0.7]])
    pol = policies.MappedPolicy(policies.LinearPolicy(W, jnp.array([0.3, -1.0])), ANGLE_MAP)
    z = jax.vmap(policies.pre_squash, in_axes=(None, 0))(pol, y)
    mm = policies.pre_squash_moments(pol, m, S)
    assert_mc(mm.mean, z, "mean")
    assert_mc(mm.cov, covariances(z, z), "cov")
    assert_mc(mm.input_output, covariances(y, z), "Cov[y, z]")


def test_mapped_rbf_moments_are_those_at_the_matched_gaussian_input(state, mapped_rbf):
    """PILCO's approximation made explicit: draw (y, a) jointly Gaussian with y's moments, a's exact moments and
    Cov[y, a]; then z(a) has exactly the returned mean and covariance, and Cov[y, z] = Cov[y, a] E[grad z]."""
    m, S, _ = state
    ma, Sa, cross = inputs.input_moments(ANGLE_MAP, m, S)
    joint_mean = jnp.concatenate([m, ma])
    joint_cov = jnp.block([[S, cross], [cross.T, Sa]])
    w, V = jnp.linalg.eigh(joint_cov)  # positive semi-definite: a's sin and cos of one angle are nearly dependent
    draws = joint_mean + (jax.random.normal(jax.random.PRNGKey(53), (N_MC, 9)) * jnp.sqrt(jnp.clip(w, 0))) @ V.T
    y, a = draws[:, :4], draws[:, 4:]
    z = jax.vmap(policies.pre_squash, in_axes=(None, 0))(mapped_rbf.policy, a)
    mm = policies.pre_squash_moments(mapped_rbf, m, S)
    assert_mc(mm.mean, z, "mean")
    assert_mc(mm.cov, covariances(z, z), "cov")
    assert_mc(mm.input_output, covariances(y, z), "Cov[y, z]")


def test_mapped_rbf_point_action_uses_the_map(mapped_rbf):
    y = jnp.array([0.2, -0.1, 0.5, 2.0 + 2 * jnp.pi])
    same = jnp.array([0.2, -0.1, 0.5, 2.0])  # one turn of the pendulum apart: the same physical state
    np.testing.assert_allclose(
        policies.action(mapped_rbf, y, U_MAX), policies.action(mapped_rbf, same, U_MAX), rtol=1e-12
    )
    assert policies.input_dim(mapped_rbf) == 4 and policies.num_controls(mapped_rbf) == 2


@pytest.mark.slow  # ~15 s of compilation; the moment-matched cost's gradient is checked by default in test_pilco.py
def test_gradient_through_a_mapped_policy_against_finite_differences(state):
    """Directional derivatives of a 3-step moment-matched cost (raw-input GP) with respect to the mapped policy's
    parameters, against central differences, rtol 1e-5; the map itself is not a parameter. h = 1e-5: the
    difference's O(h^2) error is 3e-5 relative at h = 1e-4 along the first direction (it falls 10x per 3x smaller h
    down to 1e-5, measured), rounding ~1e-16 |f| / h ~ 1e-9 relative."""
    k = jax.random.split(jax.random.PRNGKey(54), 2)
    X, Y = jax.random.normal(k[0], (25, 5)), 0.3 * jax.random.normal(k[1], (25, 4))
    dyn = tr.with_weights(
        tr.GPDynamics(
            moments.exact_gp_predictor(X, Y, 0.2, 1.3, 0.01),
            moments.identity_mean(4, 1),
            jnp.full(4, 1e-3),
            jnp.full(4, 1e-4),
        )
    )
    m0, S0 = jnp.array([0.0, 0.0, 0.0, 2.5]), 0.05 * jnp.eye(4)
    pol = policies.init_mapped_rbf(jax.random.PRNGKey(55), m0, S0, ANGLE_MAP, 1, 20)
    parameters, rebuild = policies.trainable(pol)
    flat, unravel = ravel_pytree(parameters)
    assert flat.shape == (20 * 5 + 20 + 5,)  # centres, weights, lengthscales: no entry of the map
    cost = C.tip_cost()
    fn = jax.jit(jax.value_and_grad(lambda f: tr.expected_total_cost(dyn, rebuild(unravel(f)), U_MAX, cost, m0, S0, 3)))
    _, grad = fn(flat)
    h = 1e-5
    for i in range(2):
        d = jax.random.normal(jax.random.PRNGKey(56 + i), flat.shape)
        fd = (fn(flat + h * d)[0] - fn(flat - h * d)[0]) / (2 * h)
        np.testing.assert_allclose(grad @ d, fd, rtol=1e-5)


def test_the_loop_builds_a_mapped_policy_and_refuses_a_mapped_linear_one():
    task = plant.SwingUp(horizon=5)
    with pytest.raises(OptionError, match="angle inputs"):
        pilco.control_loop(task, model="ar-gp", policy_kind="linear", policy_angle_inputs=True, num_iterations=0)


def test_pseudo_targets_are_interpolated_and_the_moments_are_the_networks(state):
    """PILCO's parameterisation: the network satisfies (K + sn^2 I) w = t, so z(c_i) + sn^2 w_i = t_i exactly at every
    centre; its moments (also mapped) are those of the RBF network with those weights, Monte Carlo included."""
    m, S, y = state
    pol = policies.init_pseudo_target_rbf(jax.random.PRNGKey(57), m, S, num_controls=2, num_basis=30)
    pol = pol._replace(targets=10.0 * pol.targets, log_lengthscale=pol.log_lengthscale + jnp.array([[0.3], [-0.4]]))
    network = policies.as_rbf(pol)
    at_centres = jax.vmap(policies.pre_squash, in_axes=(None, 0))(pol, pol.centres)  # (M, U)
    np.testing.assert_allclose(at_centres.T + policies.PSEUDO_TARGET_NOISE * network.weights, pol.targets, rtol=1e-9)
    mm = policies.pre_squash_moments(pol, m, S)
    z = jax.vmap(policies.pre_squash, in_axes=(None, 0))(pol, y)
    assert_mc(mm.mean, z, "mean")
    assert_mc(mm.cov, covariances(z, z), "cov")
    mapped = policies.init_mapped_rbf(jax.random.PRNGKey(58), m, S, ANGLE_MAP, 1, 20, pseudo_targets=True)
    as_weights = mapped._replace(policy=policies.as_rbf(mapped.policy))
    ours, theirs = policies.action_moments(mapped, m, S, U_MAX), policies.action_moments(as_weights, m, S, U_MAX)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert policies.input_dim(mapped) == 4 and policies.num_controls(pol) == 2


def test_the_loop_builds_a_pseudo_target_policy():
    task = plant.SwingUp(horizon=5)
    for angle in (False, True):
        out = pilco.control_loop(task, model="ar-gp", policy_kind="rbf-targets", policy_angle_inputs=angle,
                                 num_random=1, num_iterations=0)  # fmt: skip
        assert len(out.trials) == 1 and not out.predicted
