"""Reward shaping with a DAGP transition model's drop component (Kaiser 2021, sec. 5.3, eq. 5.14;
docs/sources/kaiser.md#reward-shaping).

The conservative Wet-Chicken reward
    r_cons(s, a) = r_orig(s) (1 - p(drop | s, a)) - r_max p(drop | s, a),   r_orig((x, y)) = x,   r_max = 5   (5.14)
where r_max = max_s r_orig(s) = l (the waterfall's position) and p(drop | s, a) is the model's predictive probability
of the drop mode at the transition's input (s, a): E_{q(alpha)}[softmax(alpha)]_drop (eq. 3.8). The thesis writes
p(drop | s) because the policy fixes a = pi(s); the model's input is (s, a), so the policy's action is plugged in.

The drop mode is the mode the fit learnt as the reset: the thesis's "constant zero function" (Fig 5.4), found as the
mode whose flow mean is nearest the reset state. p(drop | s, a) is estimated by Monte Carlo over the logits' marginals
with a fixed set of standard-normal draws (common random numbers), so the reward is a deterministic, differentiable
function of (s, a) inside the pathwise policy search (eq. 5.13).
"""

from typing import Any

import jax
import jax.numpy as jnp

from zoo.dagp import transition
from zoo.dagp.predict import DagpFit
from zoo.data import wetchicken as wc

__all__ = ["conservative", "conservative_reward", "drop_mode", "drop_probability"]

Array = Any
RESET = (0.0, 0.0)  # where a fall puts the canoe (eq. 5.1)


def conservative(r_orig: Array, p_drop: Array, r_max: float = wc.LENGTH) -> Array:
    """Eq. 5.14: r_orig (1 - p_drop) - r_max p_drop, elementwise (...)."""
    return r_orig * (1.0 - p_drop) - r_max * p_drop


def drop_mode(c: transition.Components, reset=RESET) -> int:
    """The mode whose flow means (c.f_mean, (n, K, P)) are nearest the reset state on average over the n points."""
    return int(jnp.argmin(jnp.abs(c.f_mean - jnp.asarray(reset)).mean((0, 2))))


def drop_probability(fit: DagpFit, states: Array, actions: Array, mode: int, num_samples: int = 64, seed: int = 0):
    """p(drop | s, a) (...): the predictive probability of ``mode`` (eq. 3.8) at inputs (s, a), states and actions
    (..., 2), by ``num_samples`` draws of the logits from a fixed key ``seed`` (deterministic in (s, a))."""
    inputs = jnp.concatenate([states, actions], -1)
    flat = inputs.reshape(-1, inputs.shape[-1])
    mean, var = transition.assignment_marginals(fit, flat)
    p = transition.softmax_expectation(mean, var, jax.random.PRNGKey(seed), num_samples)[:, mode]
    return p.reshape(inputs.shape[:-1])


def conservative_reward(fit: DagpFit, mode: int, num_samples: int = 64):
    """r_cons as a reward(states, actions) -> (...) for ``inference.applications.policy_search`` (eq. 5.14), with
    ``mode`` the fit's drop mode (``drop_mode``)."""

    def reward(states, actions):
        return conservative(wc.reward(states), drop_probability(fit, states, actions, mode, num_samples))

    return reward
