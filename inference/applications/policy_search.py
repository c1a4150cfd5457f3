"""Model-based policy search by pathwise gradients through sampled roll-outs (Kaiser 2021, eqs. 5.10-5.13;
docs/sources/kaiser.md#wet-chicken-policy-search).

The expected discounted return of a deterministic policy pi_theta in a stochastic transition model q(s' | s, a),
    E[J(theta)] ~= 1/P sum_p sum_{t=0}^T gamma^t r(s_t^p, a_t^p),   a_t^p = pi_theta(s_t^p),
    s_{t+1}^p ~ q(. | s_t^p, a_t^p),                                                                          (5.12)
with initial states s_0^p drawn from a pool (the training data's states), is maximised with its reparameterised
gradient (5.13): every draw of the model is a differentiable function of (s, a) and standard noise, so autodiff
through the sampled roll-outs gives an unbiased gradient of the sampled objective. Adam (optax), every iteration a
fresh set of P roll-outs, all iterations in one ``lax.scan``.

The policy is an MLP on the state scaled to [-1, 1] (``state_scale``), ReLU hidden layers, and tanh outputs, so
actions lie in [-1, 1]^A (the squashing is our choice: docs/sources/kaiser.md#wet-chicken-policy-search).
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from inference.optimisation import adam_scan

__all__ = ["PolicySettings", "init_policy", "policy_actions", "policy_search", "sampled_return"]

Array = Any


class PolicySettings(NamedTuple):
    """horizon T (transitions per roll-out), discount gamma, particles P (roll-outs per iteration), Adam's learning
    rate and iterations (Kaiser 2021, ch. 5.3: T = 5, P = 20, gamma = 0.9; rate and iterations not given)."""

    horizon: int = 5
    discount: float = 0.9
    particles: int = 20
    learning_rate: float = 1e-3
    iterations: int = 2000


def init_policy(key, sizes: tuple[int, ...]) -> list[tuple[Array, Array]]:
    """MLP weights for layer sizes (in, hidden..., out): He-uniform weights, zero biases."""
    params = []
    keys = jax.random.split(key, len(sizes) - 1)
    for k, n_in, n_out in zip(keys, sizes[:-1], sizes[1:], strict=True):
        bound = jnp.sqrt(6.0 / n_in)
        params.append((jax.random.uniform(k, (n_in, n_out), minval=-bound, maxval=bound), jnp.zeros(n_out)))
    return params


def policy_actions(params, states: Array, state_scale: Array) -> Array:
    """pi(s) (..., A): ReLU hidden layers on 2 s / state_scale - 1, tanh outputs in [-1, 1]."""
    h = 2.0 * states / state_scale - 1.0
    for W, b in params[:-1]:
        h = jax.nn.relu(h @ W + b)
    W, b = params[-1]
    return jnp.tanh(h @ W + b)


def sampled_return(params, step, reward, s0: Array, key, settings: PolicySettings, state_scale: Array) -> Array:
    """(1/P) sum_p sum_{t=0}^T gamma^t r(s_t^p, a_t^p) for P roll-outs from s0 (P, S) (eq. 5.12), a_t = pi(s_t);
    step(s, a, key) -> s'; reward(s, a) -> (P,) (a reward of the state alone ignores a; the conservative reward
    (5.14) uses it, ``zoo.dagp.reward_shaping``)."""

    def one(s, inputs):
        t, k = inputs
        a = policy_actions(params, s, state_scale)
        return step(s, a, k), settings.discount**t * reward(s, a)

    times = jnp.arange(settings.horizon)
    s_final, rewards = jax.lax.scan(one, s0, (times, jax.random.split(key, settings.horizon)))
    a_final = policy_actions(params, s_final, state_scale)
    total = rewards.sum(0) + settings.discount**settings.horizon * reward(s_final, a_final)
    return total.mean()


def policy_search(key, step, reward, initial_pool: Array, settings: PolicySettings, sizes, state_scale):
    """Maximise the sampled return (5.12) by its pathwise gradient (5.13): every iteration draws P initial states
    from ``initial_pool`` (N, S) and P roll-outs of ``step``. Returns (policy params, return estimate per
    iteration (iterations,))."""
    k_init, k_loop = jax.random.split(key)
    params = init_policy(k_init, tuple(sizes))

    def loss(p, k):
        k_s0, k_roll = jax.random.split(k)
        s0 = initial_pool[jax.random.randint(k_s0, (settings.particles,), 0, initial_pool.shape[0])]
        return -sampled_return(p, step, reward, s0, k_roll, settings, state_scale)

    def gradient(p, k):
        value, grad = jax.value_and_grad(loss)(p, k)
        return grad, -value

    params, returns = adam_scan(gradient, params, settings.learning_rate, jax.random.split(k_loop, settings.iterations))
    return params, returns
