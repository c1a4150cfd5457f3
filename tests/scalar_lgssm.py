"""A 1-D linear-Gaussian SSM with the emission gain fixed to 1 (test fixture for the particle engines).

x_1 ~ N(0, 1); x_t = a x_{t-1} + N(0, q); y_t = x_t + N(0, r). Sites: A (1, 1) ~ N(0, 0.5^2), process_var (1,) and
obs_var (1,) ~ LogNormal(log 0.1, 1) -- the priors of ``zoo.lgssm``. Fixing C = 1 removes the (C, x) -> (-C, -x)
symmetry of ``lgssm``, so parameter posteriors and the ML estimate are unimodal and comparable across engines.
"""

from functools import cache

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from zoo import ssm
from zoo.lgssm import simulate_lgssm
from zoo.registry import frozen

TRUE_PARAMS = {"A": np.array([[0.9]]), "process_var": np.array([0.1]), "obs_var": np.array([0.1])}


def _parameters(observed):
    return {
        "A": numpyro.sample("A", dist.Normal(0.0, 0.5).expand([1, 1]).to_event(2)),
        "process_var": numpyro.sample("process_var", dist.LogNormal(jnp.log(0.1), 1.0).expand([1]).to_event(1)),
        "obs_var": numpyro.sample("obs_var", dist.LogNormal(jnp.log(0.1), 1.0).expand([1]).to_event(1)),
    }


def _linear_gaussian(theta) -> ssm.LinearGaussianSSM:
    one = jnp.eye(1)
    return ssm.LinearGaussianSSM(
        m0=jnp.zeros(1),
        P0=one,
        A=theta["A"],
        B=jnp.zeros((1, 0)),
        b=jnp.zeros(1),
        Q=jnp.diag(theta["process_var"]),
        C=one,
        d=jnp.zeros(1),
        R=jnp.diag(theta["obs_var"]),
    )


@cache
def scalar_lgssm_spec() -> ssm.StateSpaceSpec:
    view = ssm.gaussian_view(
        1,
        1,
        0,
        parameters=_parameters,
        initial_moments=lambda theta: (jnp.zeros(1), jnp.eye(1)),
        transition_moments=lambda theta, x, u: (theta["A"] @ x, jnp.diag(theta["process_var"])),
        emission_matrices=lambda theta: (jnp.eye(1), jnp.zeros(1), jnp.diag(theta["obs_var"])),
        linear_gaussian=_linear_gaussian,
    )
    return ssm.StateSpaceSpec(
        name="test/scalar-lgssm",
        summary="1-D linear-Gaussian SSM with C = 1 (test fixture)",
        source="tests/scalar_lgssm.py",
        program=ssm.build_program(view),
        simulate=lambda key, **size: simulate_lgssm(key, 1, 1, 0, **size),
        data_shapes=frozen(ssm.trajectory_shapes(1, 0)),
        default_params=frozen(TRUE_PARAMS),
        capabilities=frozenset({"continuous", "state_space", "linear_gaussian"}),
        views=frozen({"state_space": view}),
    )


def scalar_lgssm_data(num_trajectories: int, num_steps: int, seed: int = 0):
    """Equal-length trajectories y (K, T, 1) of the true system a = 0.9, q = r = 0.1, validated."""
    rng = np.random.default_rng(seed)
    a, q, r = (float(np.ravel(TRUE_PARAMS[n])[0]) for n in ("A", "process_var", "obs_var"))
    x = np.zeros((num_trajectories, num_steps))
    x[:, 0] = rng.normal(size=num_trajectories)
    for t in range(1, num_steps):
        x[:, t] = a * x[:, t - 1] + np.sqrt(q) * rng.normal(size=num_trajectories)
    y = x + np.sqrt(r) * rng.normal(size=x.shape)
    return scalar_lgssm_spec().validate({"y": y[..., None], "lengths": np.full(num_trajectories, float(num_steps))})
