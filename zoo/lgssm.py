"""Linear-Gaussian state-space model (the exact reference of the SSM engines: Kalman filter / RTS smoother).

x_1 ~ N(0, I); x_t = A x_{t-1} + B u_{t-1} + N(0, diag(process_var)); y_t = C x_t + N(0, diag(obs_var)).
Parameter sites (constrained values, priors): A (D, D) ~ N(0, 0.5^2) entries, B (D, U) ~ N(0, 1) (controlled models
only), C (E, D) ~ N(0, 1), process_var (D,) and obs_var (E,) ~ LogNormal(log 0.1, 1).
The program is built from the state-space view (``zoo.ssm.build_program``).
"""

from functools import cache, partial

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from zoo import ssm
from zoo.data.ssm_systems import _finish, _split_lengths, simulate_view
from zoo.registry import Dataset, frozen, positive_int, register

INITIAL_VAR = 1.0


def _parameters(D: int, E: int, U: int, observed):
    theta = {
        "A": numpyro.sample("A", dist.Normal(0.0, 0.5).expand([D, D]).to_event(2)),
        "C": numpyro.sample("C", dist.Normal(0.0, 1.0).expand([E, D]).to_event(2)),
        "process_var": numpyro.sample("process_var", dist.LogNormal(jnp.log(0.1), 1.0).expand([D]).to_event(1)),
        "obs_var": numpyro.sample("obs_var", dist.LogNormal(jnp.log(0.1), 1.0).expand([E]).to_event(1)),
    }
    theta["B"] = numpyro.sample("B", dist.Normal(0.0, 1.0).expand([D, U]).to_event(2)) if U else jnp.zeros((D, 0))
    return theta


def _linear_gaussian(D: int, theta) -> ssm.LinearGaussianSSM:
    E = theta["C"].shape[0]
    return ssm.LinearGaussianSSM(
        m0=jnp.zeros(D),
        P0=INITIAL_VAR * jnp.eye(D),
        A=theta["A"],
        B=theta["B"],
        b=jnp.zeros(D),
        Q=jnp.diag(theta["process_var"]),
        C=theta["C"],
        d=jnp.zeros(E),
        R=jnp.diag(theta["obs_var"]),
    )


@cache
def lgssm_view(state_dim: int, obs_dim: int, control_dim: int = 0) -> ssm.StateSpaceView:
    """The state-space view of the linear-Gaussian SSM with D states, E observations and U controls (one object per
    sizes: engines and the simulator cache their compiled programs per view)."""
    D, E, U = state_dim, obs_dim, control_dim
    lg = partial(_linear_gaussian, D)

    def transition_moments(theta, x, u):
        p = lg(theta)
        return p.A @ x + p.B @ u + p.b, p.Q

    def emission_matrices(theta):
        p = lg(theta)
        return p.C, p.d, p.R

    return ssm.gaussian_view(
        D,
        E,
        U,
        parameters=partial(_parameters, D, E, U),
        initial_moments=lambda theta: (lg(theta).m0, lg(theta).P0),
        transition_moments=transition_moments,
        emission_matrices=emission_matrices,
        linear_gaussian=lg,
    )


def true_params(state_dim: int, obs_dim: int, control_dim: int = 0) -> dict[str, np.ndarray]:
    """The linear system the generator uses: A = 0.95 R(0.3) in its leading 2x2 block (a damped rotation), 0.9 on the
    remaining diagonal; C = the first E rows of I (padded); B = 0.5; process and observation variance 0.1."""
    D, E, U = state_dim, obs_dim, control_dim
    A = 0.9 * np.eye(D)
    if D >= 2:
        c, s = np.cos(0.3), np.sin(0.3)
        A[:2, :2] = 0.95 * np.array([[c, -s], [s, c]])
    params = {"A": A, "C": np.eye(E, D), "process_var": np.full(D, 0.1), "obs_var": np.full(E, 0.1)}
    if U:
        params["B"] = np.full((D, U), 0.5)
    return params


def simulate_lgssm(
    key, state_dim: int, obs_dim: int, control_dim: int, num_train: int = 4, num_test: int = 4, num_steps: int = 20
) -> Dataset:
    """Train/test trajectories of the linear system ``true_params``; ragged lengths in [T/2, T]; controls N(0, 1)."""
    view = lgssm_view(state_dim, obs_dim, control_dim)
    params = true_params(state_dim, obs_dim, control_dim)
    theta = ssm.bind(view, params, {})
    T = positive_int("num_steps", num_steps)

    def make(k, n):
        k_len, k_u, k_sim = jax.random.split(k, 3)
        u = jax.random.normal(k_u, (n, T, control_dim)) if control_dim else None
        states, y = simulate_view(k_sim, view, theta, T, n, u)
        return _finish(states, y, _split_lengths(k_len, n, T, ragged=True), u)

    k_train, k_test = jax.random.split(key)
    train, test = make(k_train, positive_int("num_train", num_train)), make(k_test, positive_int("num_test", num_test))
    truth = {**params, "states": train.pop("states"), "test_states": test.pop("states")}
    return Dataset(observed=train, truth=truth, test=test)


def lgssm_spec(name: str, state_dim: int = 2, obs_dim: int = 2, control_dim: int = 0) -> ssm.StateSpaceSpec:
    """An (unregistered) linear-Gaussian SSM spec of the given sizes."""
    view = lgssm_view(state_dim, obs_dim, control_dim)
    return ssm.StateSpaceSpec(
        name=name,
        summary=f"Linear-Gaussian SSM (D={state_dim}, E={obs_dim}, U={control_dim}); exact by Kalman filter/RTS",
        source="McHutchon 2014, eqs. 3.1-3.5 with linear f and g (exact SSM reference, docs/architecture.md#exactness)",
        program=ssm.build_program(view),
        simulate=partial(simulate_lgssm, state_dim=state_dim, obs_dim=obs_dim, control_dim=control_dim),
        data_shapes=frozen(ssm.trajectory_shapes(obs_dim, control_dim)),
        default_params=frozen(true_params(state_dim, obs_dim, control_dim)),
        capabilities=frozenset({"continuous", "state_space", "linear_gaussian"}),
        views=frozen({"state_space": view}),
    )


LGSSM = register(lgssm_spec("lgssm", 2, 2, 0))
LGSSM_CONTROLLED = register(lgssm_spec("lgssm/controlled", 2, 2, 1))
