"""Neural fitted Q iteration (NFQ; Riedmiller 2005), the model-free baseline of Kaiser 2021 Table 5.1
(docs/sources/kaiser.md#wet-chicken-nfq).

From a batch of transitions (s_n, a_n, s'_n) with rewards r(s_n), NFQ repeats: targets
    q_n = r(s_n) + gamma max_{a' in grid} Q(s'_n, a'),
then refits the Q-network to the targets by least squares. The thesis: 20 iterations, a network with one hidden
layer of 10 sigmoid units. Our choices (the text gives no more): the maximum over a 5 x 5 grid of actions in
[-1, 1]^2, each refit 300 full-batch Adam steps (lr 1e-2) warm-started from the previous network (Riedmiller used
Rprop), inputs (2 s / state_scale - 1, a). The greedy policy takes the arg max over the same grid. All iterations
run in one ``lax.scan``.
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from inference.optimisation import adam_scan

__all__ = ["NfqSettings", "action_grid", "fitted_q_iteration", "greedy_actions", "greedy_values", "q_values"]

Array = Any


class NfqSettings(NamedTuple):
    iterations: int = 20
    hidden: int = 10
    fit_steps: int = 300
    learning_rate: float = 1e-2
    discount: float = 0.9
    grid_points: int = 5


def action_grid(points: int, dim: int = 2) -> Array:
    """The points^dim actions on a regular grid of [-1, 1]^dim: (points^dim, dim)."""
    axes = jnp.meshgrid(*[jnp.linspace(-1.0, 1.0, points)] * dim, indexing="ij")
    return jnp.stack([a.ravel() for a in axes], -1)


def q_values(params, states: Array, actions: Array, state_scale: Array) -> Array:
    """Q(s, a) (...,): sigmoid hidden layer on (2 s / state_scale - 1, a), linear output."""
    (W1, b1), (W2, b2) = params
    h = jax.nn.sigmoid(jnp.concatenate([2.0 * states / state_scale - 1.0, actions], -1) @ W1 + b1)
    return (h @ W2 + b2)[..., 0]


def greedy_values(params, states: Array, grid: Array, state_scale: Array) -> Array:
    """Q(s, a) for every grid action: (n, G)."""
    n, G = states.shape[0], grid.shape[0]
    s = jnp.broadcast_to(states[:, None], (n, G, states.shape[1]))
    return q_values(params, s, jnp.broadcast_to(grid, (n, G, grid.shape[1])), state_scale)


def greedy_actions(params, states: Array, grid: Array, state_scale: Array) -> Array:
    """arg max_a Q(s, a) over the grid: (n, A)."""
    return grid[jnp.argmax(greedy_values(params, states, grid, state_scale), -1)]


def fitted_q_iteration(key, states, actions, next_states, rewards, settings: NfqSettings, state_scale):
    """NFQ on a batch (n, S), (n, A), (n, S), rewards (n,). Returns (Q-network params, the mean squared Bellman
    residual of each iteration's final fit (iterations,))."""
    n_in = states.shape[1] + actions.shape[1]
    k1, k2 = jax.random.split(key)
    params = (
        (jax.random.normal(k1, (n_in, settings.hidden)) / jnp.sqrt(n_in), jnp.zeros(settings.hidden)),
        (jax.random.normal(k2, (settings.hidden, 1)) / jnp.sqrt(settings.hidden), jnp.zeros(1)),
    )
    grid = action_grid(settings.grid_points, actions.shape[1])

    def residual(p, targets):
        return jnp.mean((q_values(p, states, actions, state_scale) - targets) ** 2)

    def iteration(p, _):
        targets = rewards + settings.discount * greedy_values(p, next_states, grid, state_scale).max(-1)

        def gradient(q, _):
            return jax.grad(residual)(q, targets), None

        p, _ = adam_scan(gradient, p, settings.learning_rate, num_steps=settings.fit_steps)
        return p, residual(p, targets)

    return jax.lax.scan(iteration, params, None, length=settings.iterations)
