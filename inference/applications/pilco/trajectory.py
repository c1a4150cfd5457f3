"""Policy evaluation on a GP dynamics model: moment matching (McHutchon sec. 4.4, eqs. 4.19-4.23) and particles
(sec. 4.6, M18); docs/sources/mchutchon.md#pilco-simulation.

Dynamics: x_{t+1} | x_t, u_t ~ N(m([x; u]) + f([x; u]), diag(s_f + noise_var)), f an SE-GP ``predictor``
(``zoo.moments``) and m the linear mean (identity for PILCO: the GP models the state change). The controller sees
y_t = x_t + nu_t, nu ~ N(0, diag(obs_var)) (eq. 4.19).

Moment matching, one step from x_t ~ N(m, S):
  y ~ N(m, S + Sigma_nu); (E u, V u, Cov[y, u]) from the policy (eq. 4.20);
  Cov[x, u] = S (S + Sigma_nu)^{-1} Cov[y, u]  (exact: E[x | y] is linear in y);
  [x; u] ~ N(joint) (eq. 4.21, the moment-matching approximation); x_{t+1} ~ N(GP moments at the joint) (eq. 4.22);
  Lbar_{t+1} = E[L(x_{t+1})] (eq. 4.23). Total: sum_{t=1}^T Lbar_t (eq. 4.8).
Particles (M18): x_0^i ~ N(m0, S0); u^i = pi(x^i + nu^i); x_{t+1}^i ~ N(GP predictive at [x^i; u^i]) with frozen
standard normals, so the Monte Carlo cost is a deterministic, differentiable function of the policy (pathwise
gradients, PEGASUS).
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_solve

from inference.applications.pilco import cost as costs
from inference.applications.pilco import inputs as gp_inputs
from inference.applications.pilco import policies
from zoo import moments

__all__ = [
    "GPDynamics",
    "ParticleNoise",
    "expected_total_cost",
    "mm_step",
    "mm_trajectory",
    "particle_noise",
    "particle_total_cost",
    "particle_trajectory",
    "state_action",
    "with_weights",
]

Array = Any


class GPDynamics(NamedTuple):
    """predictor: SE-GP over [x; u] (D outputs); mean_fn: linear mean; noise_var (D,) added to every prediction;
    obs_var (D,): the observation noise the controller sees; weights: ``moments.variance_weights(predictor)``
    (D, M, M) or None (then formed once per trajectory, ``with_weights``); jitter (D,): what the factorisation of
    each output's Gram matrix needed (0: none; ``zoo.gp.cholesky_with_jitter``); inputs: what the GP sees of [x; u]
    (``inference.applications.pilco.inputs.InputMap``; None: [x; u] itself). The mean is always a function of [x; u]."""

    predictor: moments.SEPredictor
    mean_fn: moments.LinearMean
    noise_var: Array
    obs_var: Array
    weights: Array | None = None
    jitter: Array | None = None
    inputs: gp_inputs.InputMap | None = None


def with_weights(dyn: GPDynamics) -> GPDynamics:
    """``dyn`` with the expected-variance weights formed (once per model, not once per step)."""
    return dyn if dyn.weights is not None else dyn._replace(weights=moments.variance_weights(dyn.predictor))


def state_action(dyn: GPDynamics, policy, u_max: float, m: Array, S: Array) -> tuple[Array, Array]:
    """The joint Gaussian over [x; u] (eqs. 4.19-4.21): mean (D+U,), covariance (D+U, D+U)."""
    Sy = S + jnp.diag(dyn.obs_var)
    act = policies.action_moments(policy, m, Sy, u_max)
    cross = S @ cho_solve((jnp.linalg.cholesky(Sy), True), act.input_output)
    return moments.join_state_control(m, S, act.mean, act.cov, cross)


def mm_step(dyn: GPDynamics, policy, u_max: float, m: Array, S: Array) -> tuple[Array, Array]:
    """x_{t+1} ~ N(mean (D,), cov (D, D)) from x_t ~ N(m, S) (eq. 4.22)."""
    mj, Sj = state_action(dyn, policy, u_max, m, S)
    if dyn.inputs is None:
        mm = moments.predict_moments(dyn.predictor, mj, Sj, dyn.mean_fn, dyn.weights)
        mean, cov = mm.mean, mm.cov
    else:  # the GP at the moment-matched GP input, Cov[[x; u], f] by the chain rule
        # (inference.applications.pilco.inputs)
        ma, Sa, cross = gp_inputs.input_moments(dyn.inputs, mj, Sj)
        mm = moments.predict_moments(dyn.predictor, ma, Sa, None, dyn.weights)
        A, b = dyn.mean_fn
        AC = A @ cross @ gp_inputs.expected_gradient(dyn.predictor, ma, Sa)
        mean = mm.mean + A @ mj + b
        cov = mm.cov + A @ Sj @ A.T + AC + AC.T
    cov = cov + jnp.diag(dyn.noise_var)
    return mean, 0.5 * (cov + cov.T)


def mm_trajectory(dyn: GPDynamics, policy, u_max: float, cost, m0: Array, S0: Array, horizon: int):
    """Moment-matched state marginals means (T, D), covs (T, D, D) of x_1..x_T and expected costs (T,)."""
    dyn = with_weights(dyn)

    def step(carry, _):
        m, S = mm_step(dyn, policy, u_max, *carry)
        return (m, S), (m, S, costs.expected_cost(cost, m, S))

    _, (means, covs, expected) = jax.lax.scan(step, (m0, S0), None, length=horizon)
    return means, covs, expected


def expected_total_cost(dyn: GPDynamics, policy, u_max: float, cost, m0: Array, S0: Array, horizon: int) -> Array:
    """sum_{t=1}^T E[L(x_t)] under moment matching (eq. 4.8)."""
    return jnp.sum(mm_trajectory(dyn, policy, u_max, cost, m0, S0, horizon)[2])


class ParticleNoise(NamedTuple):
    """Frozen standard normals: init (N, D), obs (T, N, D), process (T, N, D)."""

    init: Array
    obs: Array
    process: Array


def particle_noise(key: Array, num_particles: int, horizon: int, state_dim: int) -> ParticleNoise:
    k0, k1, k2 = jax.random.split(key, 3)
    shape = (horizon, num_particles, state_dim)
    return ParticleNoise(
        jax.random.normal(k0, (num_particles, state_dim)), jax.random.normal(k1, shape), jax.random.normal(k2, shape)
    )


def particle_trajectory(dyn: GPDynamics, policy, u_max: float, cost, m0: Array, S0: Array, noise: ParticleNoise):
    """Particles (T, N, D) of x_1..x_T and the Monte Carlo expected cost per step (T,) (M18)."""
    x0 = m0 + noise.init @ jnp.linalg.cholesky(S0).T

    def one(x, nu, eps):
        u = policies.action(policy, x + jnp.sqrt(dyn.obs_var) * nu, u_max)
        j = jnp.concatenate([x, u])
        a = j if dyn.inputs is None else gp_inputs.apply(dyn.inputs, j)
        mean, var = moments.predict_point(dyn.predictor, a, None)
        mean = mean + dyn.mean_fn.A @ j + dyn.mean_fn.b
        return mean + jnp.sqrt(var + dyn.noise_var) * eps

    def step(x, inputs):
        x = jax.vmap(one)(x, *inputs)
        return x, (x, jnp.mean(jax.vmap(costs.cost_at, in_axes=(None, 0))(cost, x)))

    _, (xs, expected) = jax.lax.scan(step, x0, (noise.obs, noise.process))
    return xs, expected


def particle_total_cost(dyn: GPDynamics, policy, u_max: float, cost, m0: Array, S0: Array, noise: ParticleNoise):
    """sum_{t=1}^T of the particle estimate of E[L(x_t)] (M18); differentiable in the policy for fixed ``noise``."""
    return jnp.sum(particle_trajectory(dyn, policy, u_max, cost, m0, S0, noise)[1])
