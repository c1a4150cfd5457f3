"""The mountain car by hand and the bound of policy search as inference (Kaiser 2021, eqs. 6.7-6.9): at lambda = 0
it is -T KL(q || p), and it is linear in lambda (same draws) (slow: ~9 s on a loaded machine)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from inference.applications import policy_inference as pinf
from zoo import sparse as sp
from zoo.data import mountaincar as mc
from zoo.kernels import SquaredExponential


def test_mountain_car_steps_by_hand():
    s = jnp.array([[-0.5, 0.0], [-1.19, -0.02], [0.0, 0.069]])
    a = jnp.array([1.0, -1.0, 3.0])  # the last is clipped to 1
    v = np.array([0.001 - 0.0025 * np.cos(-1.5), 0.0, min(0.069 + 0.001 - 0.0025, 0.07)])
    x = np.array([-0.5 + v[0], -1.2, 0.0 + v[2]])  # the second hits the wall: x = -1.2, v = 0
    np.testing.assert_allclose(mc.step(s, a), np.stack([x, v], -1), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(mc.reward(jnp.array([[0.2, 0.0], [0.55, 0.0]])), [-0.3, 0.0], atol=1e-15)


@pytest.mark.slow
def test_bound_is_linear_in_the_rate_with_the_kl_at_zero():
    prior = pinf.PolicyPrior(SquaredExponential(1.0, jnp.array([0.5, 0.5])), jnp.array([[0.0, 0.0], [0.5, -0.5]]))
    q = sp.WhitenedQ(jnp.array([0.3, -0.2]), jnp.array([[0.8, 0.0], [0.1, 0.9]]))

    def model_step(s, a, key):
        return mc.integrate(s, mc.POWER * (a + 0.1 * jax.random.normal(key, a.shape)))

    s0 = mc.start_states(jax.random.PRNGKey(0), 4)

    @jax.jit
    def at(rate):
        settings = pinf.InferenceSettings(horizon=5, particles=4, rate=rate)
        return pinf.bound(q, prior, model_step, mc.reward, lambda s: s / jnp.array([1.0, 0.07]), s0,
                          jax.random.PRNGKey(1), settings)  # fmt: skip

    b0, b1, b2 = at(0.0), at(1.0), at(2.0)
    np.testing.assert_allclose(b0, -5 * sp.kl_whitened(q), rtol=1e-12)
    np.testing.assert_allclose(b2 - b1, b1 - b0, rtol=1e-10)
    assert b1 - b0 < 0.0  # the mean return of roll-outs short of the goal is negative
