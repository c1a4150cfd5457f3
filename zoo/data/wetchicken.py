"""The true 2-D Wet-Chicken dynamics (Kaiser 2021, eqs. 5.1-5.2; docs/sources/kaiser.md#wet-chicken).

State s = (x, y) (x along the river, the waterfall at x = l = 5; y across it, width w = 5), action a = (a_x, a_y),
reward r(s) = x. One step draws the turbulence tau ~ U(-1, 1) and forms the candidate (5.2)
    x^ = x + (1.5 a_x - 0.5) + v + b tau,   v = 3 y / w,  b = 3.5 - v,        y^ = y + a_y,
then clips and resets as printed in (5.1): x' = 0 if x^ > l (a fall) or x^ < 0, else x^; y' = 0 if x^ > l or
y^ < 0, w if y^ > w, else y^. Actions are clipped to [-1, 1]^2 (docs/sources/kaiser.md#wet-chicken-actions).
"""

from typing import Any

import jax
import jax.numpy as jnp

Array = Any
LENGTH = 5.0  # l: the waterfall is at x = l
WIDTH = 5.0  # w


def candidate_moments(s: Array, a: Array) -> tuple[Array, Array, Array]:
    """(centre c, half-width b, y^) of the candidate (5.2): x^ ~ U(c - b, c + b), y^ deterministic; s, a (..., 2)."""
    a = jnp.clip(a, -1.0, 1.0)
    x, y = s[..., 0], s[..., 1]
    v = 3.0 * y / WIDTH
    return x + (1.5 * a[..., 0] - 0.5) + v, 3.5 - v, y + a[..., 1]


def step(s: Array, a: Array, key) -> Array:
    """One true transition s' (..., 2) of states s and actions a (..., 2) (eqs. 5.1-5.2)."""
    centre, half, y_hat = candidate_moments(s, a)
    tau = jax.random.uniform(key, centre.shape, minval=-1.0, maxval=1.0)
    return clip_and_reset(centre + half * tau, y_hat)


def clip_and_reset(x_hat: Array, y_hat: Array) -> Array:
    """Eq. 5.1 applied to candidates x^, y^ (...): the next state (..., 2)."""
    fell = x_hat > LENGTH
    x_next = jnp.where(fell | (x_hat < 0.0), 0.0, x_hat)
    y_next = jnp.where(fell | (y_hat < 0.0), 0.0, jnp.where(y_hat > WIDTH, WIDTH, y_hat))
    return jnp.stack([x_next, y_next], -1)


def reward(s: Array, a: Array | None = None) -> Array:
    """r(s) = x (...); the action does not enter (accepted so that r fits the reward(s, a) of policy search)."""
    return s[..., 0]


def fall_probability(s: Array, a: Array) -> Array:
    """P(x^ > l | s, a) (...): the uniform candidate's mass beyond the waterfall (closed form of 5.1-5.2)."""
    centre, half, _ = candidate_moments(s, a)
    return jnp.clip((centre + half - LENGTH) / (2.0 * half), 0.0, 1.0)


def mean_next_x(s: Array, a: Array) -> Array:
    """E[x' | s, a] (...): the candidate's uniform density integrated times x^ over [0, l] (falls and x^ < 0 give 0)."""
    centre, half, _ = candidate_moments(s, a)
    lo, hi = jnp.clip(centre - half, 0.0, LENGTH), jnp.clip(centre + half, 0.0, LENGTH)
    return (hi**2 - lo**2) / (4.0 * half)


def uniform_states(key, n: int) -> Array:
    """n states uniform on the river [0, l] x [0, w]: (n, 2)."""
    return jax.random.uniform(key, (n, 2)) * jnp.array([LENGTH, WIDTH])


def batch_transitions(key, n: int) -> tuple[Array, Array, Array]:
    """n uniform random transitions (the batch data of ch. 5.3): s ~ U([0, l] x [0, w]), a ~ U([-1, 1]^2), one true
    step each. Returns states (n, 2), actions (n, 2), next states (n, 2)."""
    k_s, k_a, k_step = jax.random.split(key, 3)
    s = uniform_states(k_s, n)
    a = jax.random.uniform(k_a, (n, 2), minval=-1.0, maxval=1.0)
    return s, a, step(s, a, k_step)


def trajectory(policy, start: Array, key, horizon: int) -> tuple[Array, Array]:
    """Roll-outs of ``policy`` in the true system from each start state (E, 2) for ``horizon`` steps: the states s_t
    and actions a_t of t = 0..horizon-1, each (horizon, E, 2). policy(states (E, 2), key) -> actions (E, 2)."""

    def one(s, k):
        k_a, k_s = jax.random.split(k)
        a = policy(s, k_a)
        return step(s, a, k_s), (s, a)

    _, (states, actions) = jax.lax.scan(one, start, jax.random.split(key, horizon))
    return states, actions


def rollout(policy, start: Array, key, horizon: int) -> tuple[Array, Array]:
    """The rewards r(s_t) and the fall probabilities P(fall | s_t, a_t) (closed form) of ``trajectory``'s roll-outs,
    each (horizon, E)."""
    states, actions = trajectory(policy, start, key, horizon)
    return reward(states), fall_probability(states, actions)


def mean_reward(policy, start: Array, key, horizon: int) -> Array:
    """Mean per-step reward (1/H) sum_{t<H} r(s_t) of roll-outs in the true system from each start state (E, 2):
    (E,). The evaluation of docs/sources/kaiser.md#wet-chicken-return."""
    return rollout(policy, start, key, horizon)[0].mean(0)
