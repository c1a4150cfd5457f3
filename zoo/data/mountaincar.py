"""The mountain car (Moore 1990; Sutton & Barto's constants), the system of Kaiser 2021 sec. 6.3, Figs 6.5-6.6
(docs/sources/kaiser.md#policy-inference; the thesis gives no constants).

State s = (x, v), action a in [-1, 1] (clipped):
    v' = clip(v + 0.001 a - 0.0025 cos(3 x), -0.07, 0.07),   x' = clip(x + v', -1.2, 0.6),   v' = 0 at the left wall,
goal x >= 0.5. Reward r(s) = -max(0.5 - x, 0) (the distance short of the goal), so max_s r(s) = 0 as eq. 6.4 assumes.
Start states x_0 ~ U(-0.6, -0.4), v_0 = 0.
"""

from typing import Any

import jax
import jax.numpy as jnp

Array = Any
X_MIN, X_MAX, V_MAX, GOAL = -1.2, 0.6, 0.07, 0.5
POWER, GRAVITY = 0.001, 0.0025
STATE_LOW, STATE_HIGH = jnp.array([X_MIN, -V_MAX]), jnp.array([X_MAX, V_MAX])


def velocity_change(s: Array, a: Array) -> Array:
    """v' - v before the speed limit: 0.001 a - 0.0025 cos(3 x) (...), a clipped to [-1, 1]."""
    return POWER * jnp.clip(a, -1.0, 1.0) - GRAVITY * jnp.cos(3.0 * s[..., 0])


def integrate(s: Array, dv: Array) -> Array:
    """The next state (..., 2) from s (..., 2) and a velocity change dv (...): speed limit, position clip, wall."""
    v = jnp.clip(s[..., 1] + dv, -V_MAX, V_MAX)
    x = jnp.clip(s[..., 0] + v, X_MIN, X_MAX)
    v = jnp.where((x <= X_MIN) & (v < 0.0), 0.0, v)
    return jnp.stack([x, v], -1)


def step(s: Array, a: Array) -> Array:
    """One true transition s' (..., 2) of states s (..., 2) and actions a (...)."""
    return integrate(s, velocity_change(s, a))


def reward(s: Array) -> Array:
    """r(s) = -max(0.5 - x, 0) (...)."""
    return -jnp.maximum(GOAL - s[..., 0], 0.0)


def start_states(key, n: int) -> Array:
    """n start states (n, 2): x ~ U(-0.6, -0.4), v = 0."""
    return jnp.stack([jax.random.uniform(key, (n,), minval=-0.6, maxval=-0.4), jnp.zeros(n)], -1)


def random_transitions(key, n: int) -> tuple[Array, Array, Array]:
    """n transitions from states uniform on the state box and actions uniform on [-1, 1]: states (n, 2), actions
    (n,), velocity changes (n,) (the quantity a dynamics model learns)."""
    k_s, k_a = jax.random.split(key)
    s = STATE_LOW + (STATE_HIGH - STATE_LOW) * jax.random.uniform(k_s, (n, 2))
    a = jax.random.uniform(k_a, (n,), minval=-1.0, maxval=1.0)
    return s, a, velocity_change(s, a)


def rollout(policy, start: Array, horizon: int) -> Array:
    """States s_1..s_T (T, E, 2) of the deterministic policy(states (E, 2)) -> actions (E,) in the true system."""

    def one(s, _):
        s_next = step(s, policy(s))
        return s_next, s_next

    return jax.lax.scan(one, start, None, length=horizon)[1]
