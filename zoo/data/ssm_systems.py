"""Synthetic dynamical systems for the GP state-space models (McHutchon 2014, ch. 3; the
systems and our assumptions: docs/sources/mchutchon.md#kink, docs/sources/mchutchon.md#random-systems,
docs/sources/mchutchon.md#cartpole).

Every generator returns a ``Dataset`` in the SSM layout of ``zoo.ssm`` (y (K, T, E), lengths (K,), u (K, T, U) when
controlled), with train arrays in ``observed``, held-out trajectories in ``test`` and the truth (latent ``states``
(K, T, D), ``test_states``, the true noise levels and transition) in ``truth``.

* ``simulate_view``: draw trajectories from any state-space view (used for the linear-Gaussian system).
* ``kink``: the 1-D kink system. ASSUMED (the formula is not in the thesis; docs/sources/mchutchon.md#kink):
  f(x) = x + 1 for x < 4 and -4 x + 21 for x >= 4, process variance 0.2, observation variance 0.1136 (total std 0.56,
  Table 3.6), x_1 ~ N(0, 1), T = 20, 20 train and 20 test trajectories.
* ``random_gp_system``: the random nonlinear GP systems of sec. 3.6.3 (M14), D = 1..10.
* ``cartpole``: the PILCO cart-pole ODE (M15 defaults), RK4 with zero-order-hold forces.
"""

from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from zoo.errors import DataError
from zoo.kernels import SquaredExponential
from zoo.registry import Dataset, positive_int

Array = Any


def _split_lengths(key: jax.Array, num_trajectories: int, num_steps: int, ragged: bool) -> np.ndarray:
    """Trajectory lengths: all T, or (ragged) uniform in [T/2, T] with the first trajectory of full length T."""
    if not ragged:
        return np.full(num_trajectories, float(num_steps))
    lengths = jax.random.randint(key, (num_trajectories,), max(num_steps // 2, 1), num_steps + 1)
    return np.asarray(lengths.at[0].set(num_steps), dtype=float)


def _finish(states: Array, y: Array, lengths: np.ndarray, u: Array | None = None) -> dict[str, np.ndarray]:
    """Zero the padding past each trajectory's end; numpy arrays in the SSM layout."""
    mask = np.arange(y.shape[1])[None, :] < lengths[:, None]
    out = {"y": np.where(mask[..., None], np.asarray(y), 0.0), "lengths": lengths}
    if u is not None:
        out["u"] = np.where(mask[..., None], np.asarray(u), 0.0)
    out["states"] = np.where(mask[..., None], np.asarray(states), 0.0)
    return out


def _train_test(make: Callable[[jax.Array, int], dict[str, np.ndarray]], key, num_train: int, num_test: int, truth):
    k_train, k_test = jax.random.split(key)
    train, test = make(k_train, num_train), make(k_test, num_test)
    truth = {**truth, "states": train.pop("states"), "test_states": test.pop("states")}
    return Dataset(observed=train, truth=truth, test=test)


# ----------------------------------------------------------------------------------------------------------------
# Generic: trajectories from a state-space view
# ----------------------------------------------------------------------------------------------------------------


@partial(jax.jit, static_argnames=("view", "num_steps", "num_trajectories"))
def simulate_view(key: jax.Array, view, theta, num_steps: int, num_trajectories: int, u: Array | None = None):
    """Draw states (K, T, D) and observations (K, T, E) from ``view`` with parameters ``theta``.

    u: (K, T, U) controls or None (no controls). Compiled once per (view, sizes): run op by op, each distribution's
    sampling ops compiled on their own, a new size took 5-7 s (docs/performance.md#first-call). The view is static,
    hashed by identity, so a caller reuses one view object per system (``zoo.lgssm.lgssm_view`` is cached).
    """
    K, T = num_trajectories, num_steps
    u = jnp.zeros((K, T, 0)) if u is None else jnp.asarray(u)

    def one(key, u_k):
        k0, k_steps, k_obs = jax.random.split(key, 3)
        x1 = view.initial(theta).sample(k0)

        def step(x_prev, inputs):
            k, u_prev = inputs
            x = view.transition(theta, x_prev, u_prev).sample(k)
            return x, x

        _, xs = jax.lax.scan(step, x1, (jax.random.split(k_steps, T - 1), u_k[:-1]))
        states = jnp.concatenate([x1[None], xs])
        y = jax.vmap(lambda k, x: view.emission(theta, x).sample(k))(jax.random.split(k_obs, T), states)
        return states, y

    return jax.vmap(one)(jax.random.split(key, K), u)


# ----------------------------------------------------------------------------------------------------------------
# The kink system (assumed formula, docs/sources/mchutchon.md#kink)
# ----------------------------------------------------------------------------------------------------------------

KINK_PROCESS_VAR = 0.2
KINK_OBS_VAR = 0.1136  # total std sqrt(0.3136) = 0.56, Table 3.6


def kink_function(x: Array) -> Array:
    """ASSUMED kink transition f(x) = x + 1 (x < 4), -4 x + 21 (x >= 4) (Bui's geepee tests).

    (docs/sources/mchutchon.md#kink)
    """
    return jnp.where(x < 4.0, x + 1.0, -4.0 * x + 21.0)


def _scalar_system(key, f: Callable, process_var, obs_var, num_trajectories, num_steps, lengths):
    """x_1 ~ N(0, I); x_t = f(x_{t-1}) + N(0, process_var); y_t = x_t + N(0, obs_var), for K trajectories."""
    k0, k_eps, k_nu = jax.random.split(key, 3)
    K, T = num_trajectories, num_steps
    x1 = jax.random.normal(k0, (K, jnp.shape(process_var)[0]))
    eps = jax.random.normal(k_eps, (T - 1, K, x1.shape[1])) * jnp.sqrt(process_var)

    def step(x, e):
        x = f(x) + e
        return x, x

    _, xs = jax.lax.scan(step, x1, eps)
    states = jnp.concatenate([x1[:, None], jnp.swapaxes(xs, 0, 1)], axis=1)
    y = states + jax.random.normal(k_nu, states.shape) * jnp.sqrt(obs_var)
    return _finish(states, y, lengths)


def kink(key: jax.Array, num_train: int = 20, num_test: int = 20, num_steps: int = 20, ragged: bool = False):
    """The 1-D kink system (ASSUMED, see module docstring): train/test trajectories and the truth."""
    num_train, num_test = positive_int("num_train", num_train), positive_int("num_test", num_test)
    num_steps = positive_int("num_steps", num_steps)
    k_len, k_data = jax.random.split(key)

    def make(k, n):
        lengths = _split_lengths(jax.random.fold_in(k_len, n), n, num_steps, ragged)
        pv, ov = jnp.array([KINK_PROCESS_VAR]), jnp.array([KINK_OBS_VAR])
        return _scalar_system(k, kink_function, pv, ov, n, num_steps, lengths)

    truth = {
        "process_var": np.array([KINK_PROCESS_VAR]),
        "obs_var": np.array([KINK_OBS_VAR]),
        "assumed": "kink formula and noise split are zoo assumptions (docs/sources/mchutchon.md#kink)",
    }
    return _train_test(make, k_data, num_train, num_test, truth)


# ----------------------------------------------------------------------------------------------------------------
# Random nonlinear GP systems (McHutchon sec. 3.6.3, M14: docs/sources/mchutchon.md#random-systems)
# ----------------------------------------------------------------------------------------------------------------


def random_gp_transition(key: jax.Array, state_dim: int) -> dict[str, np.ndarray]:
    """The transition of one random GP system (M14): D independent GPs trained on 10 random pairs.

    Inputs and outputs of the 10 pairs ~ N(0, 2 I); per output e with U_e ~ Uniform[0, 1]: process variance
    exp(-2 - 2 U_e), observation variance exp(-1 - 2 U_e), kernel (training) noise exp(-4 - 2 U_e), squared
    lengthscales D on every input, signal variance exp(-2); every U an independent draw (McHutchon sec. 3.6.3).
    """
    D = positive_int("state_dim", state_dim)
    k_x, k_y, k_u = jax.random.split(key, 3)
    X = jnp.sqrt(2.0) * jax.random.normal(k_x, (10, D))
    Y = jnp.sqrt(2.0) * jax.random.normal(k_y, (10, D))
    U = jax.random.uniform(k_u, (3, D))
    return {
        "train_inputs": np.asarray(X),
        "train_targets": np.asarray(Y),
        "process_var": np.asarray(jnp.exp(-2.0 - 2.0 * U[0])),
        "obs_var": np.asarray(jnp.exp(-1.0 - 2.0 * U[1])),
        "kernel_noise_var": np.asarray(jnp.exp(-4.0 - 2.0 * U[2])),
        "lengthscale": np.full((D, D), np.sqrt(D)),
        "signal_var": np.full(D, np.exp(-2.0)),
    }


def random_gp_predict(system: dict[str, np.ndarray], x: Array) -> tuple[Array, Array]:
    """GP posterior mean (D,) and variance (D,) of the random system's transition at x (D,) (McHutchon sec. 3.6.3:
    the GP's own posterior uncertainty is part of the transition, on top of the process noise)."""
    X, Y = jnp.asarray(system["train_inputs"]), jnp.asarray(system["train_targets"])

    def one_output(sf2, ell, sn2, y):
        kern = SquaredExponential(sf2, ell)
        L = jnp.linalg.cholesky(kern(X) + sn2 * jnp.eye(X.shape[0]))
        k = kern(X, x[None, :])[:, 0]
        alpha = jax.scipy.linalg.cho_solve((L, True), y)
        v = jax.scipy.linalg.solve_triangular(L, k, lower=True)
        return k @ alpha, sf2 - v @ v

    return jax.vmap(one_output)(
        jnp.asarray(system["signal_var"]),
        jnp.asarray(system["lengthscale"]),
        jnp.asarray(system["kernel_noise_var"]),
        Y.T,
    )


def random_gp_system(
    key: jax.Array, state_dim: int = 2, num_train: int = 20, num_test: int = 20, num_steps: int = 20
) -> Dataset:
    """Train/test trajectories of one random GP system (M14; T = 20, x_1 ~ N(0, I)).

    (docs/sources/mchutchon.md#random-systems)
    """
    D = positive_int("state_dim", state_dim)
    num_steps = positive_int("num_steps", num_steps)
    k_sys, k_data = jax.random.split(key)
    system = random_gp_transition(k_sys, D)
    predict = partial(random_gp_predict, system)

    def make(k, n):
        k0, k_eps, k_nu = jax.random.split(k, 3)
        x1 = jax.random.normal(k0, (n, D))
        eps = jax.random.normal(k_eps, (num_steps - 1, n, D))

        def step(x, e):
            mean, var = jax.vmap(predict)(x)
            x = mean + jnp.sqrt(var + system["process_var"]) * e
            return x, x

        _, xs = jax.lax.scan(step, x1, eps)
        states = jnp.concatenate([x1[:, None], jnp.swapaxes(xs, 0, 1)], axis=1)
        y = states + jax.random.normal(k_nu, states.shape) * jnp.sqrt(system["obs_var"])
        return _finish(states, y, np.full(n, float(num_steps)))

    return _train_test(make, k_data, positive_int("num_train", num_train), positive_int("num_test", num_test), system)


# ----------------------------------------------------------------------------------------------------------------
# Cart-pole (M15, the PILCO cart-pole ODE; state order [x, xdot, thetadot, theta]: docs/sources/mchutchon.md#cartpole)
# ----------------------------------------------------------------------------------------------------------------

CARTPOLE = {"length": 0.5, "pole_mass": 0.5, "cart_mass": 0.5, "friction": 0.1, "gravity": 9.82}
CARTPOLE_DT = 0.1
CARTPOLE_MAX_FORCE = 10.0
# Table 4.1 observation noise std, state order [x, xdot, thetadot, theta]: 0.01 m, 0.1 m/s, 10 deg/s, 1 deg.
CARTPOLE_OBS_STD_TABLE_4_1 = np.array([0.01, 0.1, np.deg2rad(10.0), np.deg2rad(1.0)])
# Table 3.6 "true" total noise std, read in state order (x, xdot, thetadot, theta) (the printed header order is
# uncertain); used for ch.3 replication (docs/sources/mchutchon.md#cartpole-data).
CARTPOLE_TOTAL_STD_TABLE_3_6 = np.array([0.1, 0.4, 0.1745, 0.0175])
CARTPOLE_PROCESS_STD = 1e-3  # "small process noise" (docs/sources/mchutchon.md#cartpole-data)


def cartpole_derivative(state: Array, force: Array) -> Array:
    """d/dt [x, xdot, thetadot, theta] of the PILCO uniform-rod cart-pole (theta = 0 upright).

    (docs/sources/mchutchon.md#cartpole)
    """
    _, xdot, thetadot, theta = state
    p = CARTPOLE
    m, M, length, b, g = p["pole_mass"], p["cart_mass"], p["length"], p["friction"], p["gravity"]
    s, c = jnp.sin(theta), jnp.cos(theta)
    xddot = (-2 * m * length * thetadot**2 * s + 3 * m * g * s * c + 4 * force - 4 * b * xdot) / (
        4 * (M + m) - 3 * m * c**2
    )
    thetaddot = (-3 * m * length * thetadot**2 * s * c + 6 * (M + m) * g * s + 6 * (force - b * xdot) * c) / (
        4 * length * (M + m) - 3 * m * length * c**2
    )
    return jnp.stack([xdot, xddot, thetaddot, thetadot])


def cartpole_step(state: Array, force: Array, dt: float = CARTPOLE_DT, substeps: int = 10) -> Array:
    """One zero-order-hold interval: the force is constant over dt; classic RK4 with ``substeps`` steps."""
    h = dt / substeps

    def rk4(x, _):
        k1 = cartpole_derivative(x, force)
        k2 = cartpole_derivative(x + 0.5 * h * k1, force)
        k3 = cartpole_derivative(x + 0.5 * h * k2, force)
        k4 = cartpole_derivative(x + h * k3, force)
        return x + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4), None

    return jax.lax.scan(rk4, state, None, length=substeps)[0]


def cartpole(
    key: jax.Array, num_train: int = 20, num_test: int = 20, num_steps: int = 20, noise: str = "table3.6"
) -> Dataset:
    """Cart-pole trajectories with random zero-order-hold forces U[-10, 10] N (docs/sources/mchutchon.md#cartpole-data).

    Start N([0, 0, 0, pi], 0.1^2 I) (hanging; M15). Process noise std 1e-3 per state; observation noise so that the
    total std is Table 3.6's (``noise="table3.6"``) or Table 4.1's observation noise (``noise="table4.1"``).
    """
    if noise == "table3.6":
        obs_std = np.sqrt(CARTPOLE_TOTAL_STD_TABLE_3_6**2 - CARTPOLE_PROCESS_STD**2)
    elif noise == "table4.1":
        obs_std = CARTPOLE_OBS_STD_TABLE_4_1
    else:
        raise DataError(f"noise must be 'table3.6' or 'table4.1', got {noise!r}")
    num_steps = positive_int("num_steps", num_steps)

    def make(k, n):
        k0, k_u, k_eps, k_nu = jax.random.split(k, 4)
        x1 = jnp.array([0.0, 0.0, 0.0, jnp.pi]) + 0.1 * jax.random.normal(k0, (n, 4))
        u = jax.random.uniform(k_u, (n, num_steps, 1), minval=-CARTPOLE_MAX_FORCE, maxval=CARTPOLE_MAX_FORCE)
        eps = CARTPOLE_PROCESS_STD * jax.random.normal(k_eps, (num_steps - 1, n, 4))

        def step(x, inputs):
            u_prev, e = inputs
            x = jax.vmap(cartpole_step)(x, u_prev[:, 0]) + e
            return x, x

        _, xs = jax.lax.scan(step, x1, (jnp.swapaxes(u[:, :-1], 0, 1), eps))
        states = jnp.concatenate([x1[:, None], jnp.swapaxes(xs, 0, 1)], axis=1)
        y = states + jax.random.normal(k_nu, states.shape) * obs_std
        return _finish(states, y, np.full(n, float(num_steps)), u)

    truth = {
        "process_var": np.full(4, CARTPOLE_PROCESS_STD**2),
        "obs_var": obs_std**2,
        "state_order": "x xdot thetadot theta",
    }
    return _train_test(make, key, positive_int("num_train", num_train), positive_int("num_test", num_test), truth)


def total_noise_std(truth: dict[str, Any]) -> np.ndarray:
    """sqrt(process_var + obs_var) per state dimension (the quantity of Table 3.6)."""
    return np.sqrt(np.asarray(truth["process_var"]) + np.asarray(truth["obs_var"]))
