"""Dependent transitions (McHutchon sec. 4.7, zoo.dependent_transitions): the linear model's moments against closed
forms and sampled trajectories, the GP's eqs. 4.47-4.48 against draws of one function per trajectory."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from monte_carlo import assert_mc

import zoo  # noqa: F401  (float64)
from zoo import dependent_transitions as dt
from zoo.moments import exact_gp_predictor


def test_bias_only_system_is_exact_and_independent_is_eq_4_28():
    """With a known (S_a = 0) the state is linear-Gaussian in (x_0, b), so keeping Cov[x, b] is exact at every step:
    x_t = a^t x_0 + b (1 - a^t) / (1 - a). Forgetting it is eq. 4.28's recursion, V_t = a^2 V_{t-1} + S_b."""
    a, mu_b, s_b, m0, s0 = 0.8, 0.5, 0.04, 1.0, 0.01
    system = dt.UncertainLinear(jnp.array([a, mu_b]), jnp.diag(jnp.array([0.0, s_b])), jnp.asarray(m0), s0)
    mean, var = dt.simulate_linear(system, 10)
    t = np.arange(11)
    geometric = (1 - a**t) / (1 - a)
    np.testing.assert_allclose(mean, a**t * m0 + mu_b * geometric, rtol=1e-12)
    np.testing.assert_allclose(var, a ** (2 * t) * s0 + s_b * geometric**2, rtol=1e-12)
    _, var_independent = dt.simulate_linear(system, 10, dependent=False)
    recursion = [s0]
    for _ in range(10):
        recursion.append(a**2 * recursion[-1] + s_b)
    np.testing.assert_allclose(var_independent, recursion, rtol=1e-12)


def test_first_steps_match_eqs_4_32_to_4_37():
    """Step 1: mean 4.32, variance 4.33 with its printed mu_b^2 S_a corrected to mu_x0^2 S_a, Cov[x_1, a] 4.34 and
    Cov[x_1, b] 4.35; step 2's mean 4.37."""
    mu_a, mu_b, s_a, s_b, c_ab, m0, s0 = 0.7, -0.4, 0.05, 0.2, 0.03, 1.3, 0.1
    mean = jnp.array([m0, mu_a, mu_b])
    cov = jnp.array([[s0, 0.0, 0.0], [0.0, s_a, c_ab], [0.0, c_ab, s_b]])
    mean1, cov1 = dt.linear_step(mean, cov)
    np.testing.assert_allclose(mean1[0], mu_a * m0 + mu_b, rtol=1e-14)
    variance = s_a * s0 + mu_a**2 * s0 + m0**2 * s_a + 2 * m0 * c_ab + s_b
    np.testing.assert_allclose(cov1[0], [variance, s_a * m0 + c_ab, c_ab * m0 + s_b], rtol=1e-14)
    mean2, _ = dt.linear_step(mean1, cov1)
    np.testing.assert_allclose(mean2[0], mu_a * (mu_a * m0 + mu_b) + s_a * m0 + c_ab + mu_b, rtol=1e-14)


def test_linear_step_moments_at_any_gaussian_against_monte_carlo():
    """linear_step's mean, variance and Cov[(a, b), y] of y = a x + b at a correlated Gaussian (x, a, b): within 5
    Monte Carlo standard errors of 400,000 draws."""
    mean = jnp.array([0.6, -0.9, 0.3])
    root = jnp.array([[0.5, 0.0, 0.0], [0.2, 0.3, 0.0], [-0.3, 0.1, 0.4]])
    cov = root @ root.T
    new_mean, new_cov = dt.linear_step(mean, cov)
    z = np.asarray(jax.random.multivariate_normal(jax.random.PRNGKey(0), mean, cov, (400_000,)))
    y = z[:, 1] * z[:, 0] + z[:, 2]
    assert_mc(new_mean[0], y, "mean")
    assert_mc(new_cov[0, 0], (y - new_mean[0]) ** 2, "variance")
    assert_mc(new_cov[0, 1:], (y - new_mean[0])[:, None] * (z[:, 1:] - mean[1:]), "Cov[(a, b), y]")
    np.testing.assert_array_equal(new_cov[1:, 1:], cov[1:, 1:])


def test_dependent_simulation_agrees_with_trajectories_where_it_is_exact():
    """Sampled trajectories that keep their (a, b): x_1's mean and variance and x_2's mean are exact under moment
    matching (only products of independent Gaussians enter), so they must agree within Monte Carlo error; the
    independent simulation's x_2 mean differs by Cov[a, x_1] (4.37), here many standard errors."""
    system = dt.random_linear_system(jax.random.PRNGKey(3))
    mean, var = dt.simulate_linear(system, 2)
    x = np.asarray(dt.sample_linear(jax.random.PRNGKey(4), system, 2, 400_000))
    assert_mc(mean[1:], x[:, 1:], "E[x_1], E[x_2]")
    assert_mc(var[1], (x[:, 1] - mean[1]) ** 2, "V[x_1]")
    mean_independent, _ = dt.simulate_linear(system, 2, dependent=False)
    with pytest.raises(AssertionError):
        assert_mc(mean_independent[2], x[:, 2], "independent E[x_2]")


@pytest.fixture(scope="module")
def gp():
    X = jnp.array([[-0.5], [0.3], [1.9], [2.4], [4.5]])
    y = jnp.array([0.5, 0.7, 3.4, 3.9, 3.3])
    return dt.TransitionGP(exact_gp_predictor(X, y, 5.0, 2.0, 0.15), jnp.asarray(0.15))


@pytest.mark.parametrize("x0", [-1.8, 1.2])  # left of the data (f uncertain), and among it
def test_eqs_4_47_4_48_against_draws_of_one_function(gp, x0):
    """E[f_2 | x_0] and V[f_2 | x_0] by 4.47-4.48 (as corrected) against 400,000 draws of x_1 and then f_2 under the
    same function (eq. 4.44); x_2 = f_2 + eps adds Sigma_eps."""
    mean, var = dt.dependent_second_step(gp, jnp.asarray(x0))
    _, x2 = dt.sample_second_state(jax.random.PRNGKey(5), gp, jnp.full(400_000, x0))
    x2 = np.asarray(x2)
    assert_mc(mean, x2, "E[x_2 | x_0]")
    assert_mc(var + gp.noise_var, (x2 - mean) ** 2, "V[x_2 | x_0]")


def test_independent_second_step_is_a_fresh_function_per_step(gp):
    """independent_second_step's moments are those of x_1 ~ N(m(x_0), s(x_0) + Sigma_eps) followed by f_2 drawn
    from the posterior at x_1 with no memory of the first transition; at x_0 = -1.8 they differ from the dependent
    variance by many standard errors."""
    x0 = jnp.asarray(-1.8)
    mean, var = dt.independent_second_step(gp, x0)
    m0, s0 = dt.posterior_mean_var(gp, x0[None])
    k1, k2 = jax.random.split(jax.random.PRNGKey(6))
    x1 = m0 + jnp.sqrt(s0 + gp.noise_var) * jax.random.normal(k1, (400_000,))
    m1, s1 = dt.posterior_mean_var(gp, x1)
    f2 = np.asarray(m1 + jnp.sqrt(s1) * jax.random.normal(k2, x1.shape))
    assert_mc(mean, f2, "E[f_2]")
    assert_mc(var, (f2 - mean) ** 2, "V[f_2]")
    _, dependent_var = dt.dependent_second_step(gp, x0)
    with pytest.raises(AssertionError):
        assert_mc(dependent_var, (f2 - mean) ** 2, "dependent V[f_2]")
