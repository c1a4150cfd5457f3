"""The cart-pole swing-up plant of McHutchon's ch. 4 (Table 4.1, M15; docs/sources/mchutchon.md#pilco-plant).

The ODE is ``zoo.data.ssm_systems``'s PILCO cart-pole (the same system the ch. 3 data come from): state
[x, xdot, thetadot, theta], theta = 0 upright, forces held over dt = 0.1 s, integrated by fixed-step classic RK4
(10 substeps per interval; diffrax is not installed). Table 4.1: horizon 50 steps, observation noise std 0.01 m,
0.1 m/s, 10 deg/s, 1 deg. Start N([0, 0, 0, pi], 0.1^2 I), |F| <= 10 N (lab defaults, M15). No process noise:
the thesis's plant is the ODE with noisy observations.

``rollout`` is pure JAX: one trial of ``horizon`` steps under a controller that sees only the noisy observation.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from inference.applications.pilco.cost import SaturatingCost, tip_cost
from zoo.data import ssm_systems

__all__ = ["ANGLE", "OBS_STD_TABLE_4_1", "SwingUp", "Trial", "random_controller", "rollout", "trials_as_data"]

Array = Any

OBS_STD_TABLE_4_1 = ssm_systems.CARTPOLE_OBS_STD_TABLE_4_1
ANGLE = 3  # the pendulum angle's index in the state


@dataclass(frozen=True, eq=False)
class SwingUp:
    """Settings of the swing-up task. ``noise_factor`` scales the observation noise *variance* (Fig 4.8's panels)."""

    horizon: int = 50
    dt: float = ssm_systems.CARTPOLE_DT
    u_max: float = ssm_systems.CARTPOLE_MAX_FORCE
    m0: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 0.0, np.pi]))
    S0: np.ndarray = field(default_factory=lambda: 0.1**2 * np.eye(4))
    noise_factor: float = 1.0
    cost: SaturatingCost = field(default_factory=tip_cost)

    @property
    def obs_std(self) -> np.ndarray:
        return np.sqrt(self.noise_factor) * OBS_STD_TABLE_4_1

    @property
    def state_dim(self) -> int:
        return 4


class Trial(NamedTuple):
    """One roll-out: states (T+1, D) true, y (T+1, D) observed, u (T, U) applied (u[t] drives x_t -> x_{t+1})."""

    states: Array
    y: Array
    u: Array


def rollout(
    controller: Callable[[Array, Array], Array],
    key: Array,
    m0: Array,
    S0: Array,
    obs_std: Array,
    horizon: int,
    dt: float = ssm_systems.CARTPOLE_DT,
) -> Trial:
    """A trial on the true ODE: x_0 ~ N(m0, S0), y_t = x_t + nu_t, u_t = controller(y_t, key_t),
    x_{t+1} = ODE(x_t, u_t)."""
    k0, k_obs, k_ctl = jax.random.split(key, 3)
    D = m0.shape[0]
    x0 = m0 + jnp.linalg.cholesky(S0) @ jax.random.normal(k0, (D,))
    nu = obs_std * jax.random.normal(k_obs, (horizon + 1, D))

    def step(x, inputs):
        nu_t, k_t = inputs
        y = x + nu_t
        u = controller(y, k_t)
        return ssm_systems.cartpole_step(x, u[0], dt), (x, y, u)

    xT, (xs, ys, us) = jax.lax.scan(step, x0, (nu[:-1], jax.random.split(k_ctl, horizon)))
    return Trial(jnp.concatenate([xs, xT[None]]), jnp.concatenate([ys, (xT + nu[-1])[None]]), us)


def random_controller(u_max: float) -> Callable[[Array, Array], Array]:
    """Independent uniform forces U[-u_max, u_max] each step (PILCO's initial random roll-outs)."""
    return lambda y, key: jax.random.uniform(key, (1,), minval=-u_max, maxval=u_max)


def trials_as_data(trials: list[Trial]) -> dict[str, np.ndarray]:
    """The SSM data layout (docs/architecture.md#state-space-view): y (K, T+1, D), u (K, T+1, U) (last step padded
    with 0: no transition follows it), lengths (K,)."""
    y = np.stack([np.asarray(t.y) for t in trials])
    u = np.stack([np.concatenate([np.asarray(t.u), np.zeros((1, t.u.shape[1]))]) for t in trials])
    return {"y": y, "u": u, "lengths": np.full(len(trials), float(y.shape[1]))}
