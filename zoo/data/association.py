"""Data-association benchmarks of Kaiser's DAGP (Kaiser 2021, sec. 3.3): ChoiceNet noise separation, the trimodal toy
and the mixed cart-pole (default and short pole, OpenAI-gym cart-pole equations in JAX).

Every generator returns numpy float64 arrays and the ground-truth labels (which process made each point).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from zoo.errors import DataError
from zoo.registry import positive_int


class LabelledData(NamedTuple):
    """X (N, D), y (N,), labels (N,) int: the index of the process that generated each point."""

    X: np.ndarray
    y: np.ndarray
    labels: np.ndarray


# ----------------------------------------------------------------------------------------------------------------
# ChoiceNet noise separation (Table 3.2; Choi et al. 2018; docs/sources/kaiser.md#noise-separation)


def choicenet_function(x):
    """The noiseless signal cos(pi x / 2) exp(-(x / 2)^2)."""
    return jnp.cos(0.5 * jnp.pi * x) * jnp.exp(-((0.5 * x) ** 2))


def choicenet(key: jax.Array, n: int = 1000, outlier_rate: float = 0.2, signal_std: float = 0.15) -> LabelledData:
    """x ~ U[-3, 3]; y = (1 - d)(f(x) + gamma) + d eps, d ~ Bernoulli(rate), eps ~ U(-1, 3), gamma ~ N(0, 0.15^2).

    labels: 0 = signal, 1 = outlier. Raises DataError for a rate outside [0, 1].
    """
    n = positive_int("n", n)
    if not 0.0 <= float(outlier_rate) <= 1.0:
        raise DataError(f"choicenet: outlier_rate must lie in [0, 1], got {outlier_rate!r}.")
    k_x, k_d, k_eps, k_gamma = jax.random.split(key, 4)
    x = jax.random.uniform(k_x, (n,), minval=-3.0, maxval=3.0)
    outlier = jax.random.bernoulli(k_d, outlier_rate, (n,))
    eps = jax.random.uniform(k_eps, (n,), minval=-1.0, maxval=3.0)
    signal = choicenet_function(x) + signal_std * jax.random.normal(k_gamma, (n,))
    y = jnp.where(outlier, eps, signal)
    return LabelledData(np.asarray(x)[:, None], np.asarray(y), np.asarray(outlier, dtype=int))


def choicenet_test(n: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """The test set: n equally spaced points on [-3, 3] of the noiseless function.

    (docs/sources/kaiser.md#choicenet-metrics)
    """
    x = np.linspace(-3.0, 3.0, positive_int("n", n))
    return x[:, None], np.asarray(choicenet_function(x))


# ----------------------------------------------------------------------------------------------------------------
# Multimodal toy (Fig 3.4; docs/sources/kaiser.md#multimodal)


def multimodal_curves(x):
    """The three curves: sin x; sin x - 2 exp(-(x - 2)^2 / 2); -1 - 3 x / (8 pi) + 0.3 sin 2x. Shape (3, n)."""
    return jnp.stack(
        [
            jnp.sin(x),
            jnp.sin(x) - 2.0 * jnp.exp(-0.5 * (x - 2.0) ** 2),
            -1.0 - 3.0 / (8.0 * jnp.pi) * x + 0.3 * jnp.sin(2.0 * x),
        ]
    )


def multimodal(key: jax.Array, n: int = 350, noise_std: float = 0.005) -> LabelledData:
    """n x-values ~ U[-2 pi, 2 pi], each with all three curves (3 n points), noise N(0, 0.005^2).

    (docs/sources/kaiser.md#multimodal-size)
    """
    n = positive_int("n", n)
    k_x, k_eps = jax.random.split(key)
    x = jax.random.uniform(k_x, (n,), minval=-2.0 * jnp.pi, maxval=2.0 * jnp.pi)
    curves = multimodal_curves(x)  # (3, n)
    y = curves + noise_std * jax.random.normal(k_eps, curves.shape)
    X = np.tile(np.asarray(x), 3)[:, None]
    return LabelledData(X, np.asarray(y).reshape(-1), np.repeat(np.arange(3), n))


# ----------------------------------------------------------------------------------------------------------------
# Mixed cart-pole (Table 3.3; docs/sources/kaiser.md#mixed-cartpole, docs/sources/kaiser.md#cartpole-details)


class CartPole(NamedTuple):
    """Gym CartPole-v1 constants; ``length`` is gym's *half* pole length."""

    gravity: float = 9.8
    masscart: float = 1.0
    masspole: float = 0.1
    length: float = 0.5
    force_mag: float = 10.0
    tau: float = 0.02


DEFAULT_POLE = CartPole()
SHORT_POLE = CartPole(
    masspole=0.05, length=0.1
)  # mass halved, length 0.1 as written (docs/sources/kaiser.md#cartpole-details)


def cartpole_step(system: CartPole, state, force):
    """One Euler step of gym's cart-pole: state (x, x_dot, theta, theta_dot) -> next state.

    (docs/sources/kaiser.md#gym-cartpole)
    """
    x, x_dot, theta, theta_dot = state
    total_mass = system.masscart + system.masspole
    pml = system.masspole * system.length
    sin, cos = jnp.sin(theta), jnp.cos(theta)
    temp = (force + pml * theta_dot**2 * sin) / total_mass
    theta_acc = (system.gravity * sin - cos * temp) / (
        system.length * (4.0 / 3.0 - system.masspole * cos**2 / total_mass)
    )
    x_acc = temp - pml * theta_acc * cos / total_mass
    tau = system.tau
    return jnp.stack([x + tau * x_dot, x_dot + tau * x_acc, theta + tau * theta_dot, theta_dot + tau * theta_acc])


def cartpole_trajectory(system: CartPole, key: jax.Array, num_actions: int = 10, hold: int = 5):
    """One episode: reset ~ U(-0.05, 0.05)^4, then ``num_actions`` uniform actions in {0, 1} (force -/+ force_mag)
    each held ``hold`` steps, never terminated. Returns inputs (num_actions, 5) = (state, action) before each held
    action and the change of pole angle over the ``hold`` steps (num_actions,)
    (docs/sources/kaiser.md#cartpole-details)."""
    k_reset, k_act = jax.random.split(key)
    state0 = jax.random.uniform(k_reset, (4,), minval=-0.05, maxval=0.05)
    actions = jax.random.bernoulli(k_act, 0.5, (num_actions,)).astype(float)

    def held(state, action):
        force = system.force_mag * (2.0 * action - 1.0)
        end = jax.lax.fori_loop(0, hold, lambda _, s: cartpole_step(system, s, force), state)
        return end, (jnp.concatenate([state, action[None]]), end[2] - state[2])

    _, (inputs, delta_theta) = jax.lax.scan(held, state0, actions)
    return inputs, delta_theta


def cartpole(system: CartPole, key: jax.Array, n: int, noise_std: float = 0.01) -> tuple[np.ndarray, np.ndarray]:
    """n transitions (n / 10 episodes of 10 held actions) with N(0, 0.01^2) noise on the angle change: X (n, 5), y."""
    n = positive_int("n", n)
    episodes = -(-n // 10)
    k_ep, k_noise = jax.random.split(key)
    inputs, delta = jax.vmap(lambda k: cartpole_trajectory(system, k))(jax.random.split(k_ep, episodes))
    X, y = inputs.reshape(-1, 5)[:n], delta.reshape(-1)[:n]
    return np.asarray(X), np.asarray(y + noise_std * jax.random.normal(k_noise, y.shape))


def mixed_cartpole(key: jax.Array, n_per_system: int = 500) -> LabelledData:
    """n_per_system transitions from the default and from the short-pole system; labels 0 = default, 1 = short."""
    k_default, k_short = jax.random.split(key)
    X0, y0 = cartpole(DEFAULT_POLE, k_default, n_per_system)
    X1, y1 = cartpole(SHORT_POLE, k_short, n_per_system)
    labels = np.repeat([0, 1], [len(y0), len(y1)])
    return LabelledData(np.concatenate([X0, X1]), np.concatenate([y0, y1]), labels)
