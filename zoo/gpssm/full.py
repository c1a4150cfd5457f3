"""M9: the full GP-SSM, f integrated out (McHutchon sec. 3.2, eqs. 3.6-3.27; docs/sources/mchutchon.md#gpssm-full).

p(x_{1:T}) = p(x_1) prod_e N(x_{2:T,e}; m_e, K_e(X^, X^) + process_var_e I) with X^ = [x_{1:T-1}, u_{1:T-1}] (eq. 3.27):
non-Markov but an exact density NUTS can target. Trajectories are independent GP draws (each has its own f): the
density is per trajectory; sharing f across trajectories would couple them. y_t = x_t + N(0, diag(obs_var)) (C = I);
x_1 ~ N(m0, P0) fixed per system (docs/sources/mchutchon.md#initial-state). The ``marginal_gp_ssm`` view gives
particle methods the sequential conditionals (eqs. 3.15-3.17).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from zoo import gp, ssm
from zoo.gpssm.parameters import hyper_parameters, mean_parameters
from zoo.kernels import SquaredExponential
from zoo.registry import frozen

Array = Any


class FullGPSSMParams(NamedTuple):
    """theta of M9 (eq. 3.6 plus p(x_1)). D states (E = D observations, C = I), U controls.

    lengthscale (D, D+U), signal_var (D,), process_var (D,), obs_var (D,), mean_A (D, D+U), mean_b (D,), m0 (D,),
    P0 (D, D).
    """

    lengthscale: Array
    signal_var: Array
    process_var: Array
    obs_var: Array
    mean_A: Array
    mean_b: Array
    m0: Array
    P0: Array


def full_parameters(D: int, U: int, mean: str, m0, P0):
    """``parameters(observed) -> FullGPSSMParams``: the parameter sites of M9 (the same sites, in the same order, as
    the program samples)."""

    def parameters(observed=None) -> FullGPSSMParams:
        hypers = hyper_parameters(D, U)
        A, b = mean_parameters(mean, D, U)
        return FullGPSSMParams(**hypers, mean_A=A, mean_b=b, m0=jnp.asarray(m0), P0=jnp.asarray(P0))

    return parameters


def effective_noise(theta: FullGPSSMParams) -> Array:
    """process_var + the relative jitter of ``gp.cholesky`` (JITTER * mean diagonal of K_e + process_var I, which is
    JITTER * (signal_var + process_var) for the SE kernel at any size) (D,). Folding the jitter into the noise keeps
    the masked sub-problems below exactly consistent with the full joint: every prefix of the path is a marginal of
    the same Gaussian."""
    return theta.process_var + gp.JITTER * (theta.signal_var + theta.process_var)


def transition_factors(theta: FullGPSSMParams, path: Array, u: Array, num_transitions):
    """The GP of M9 restricted to the first ``num_transitions`` transitions x_s -> x_{s+1} of one path, in fixed shapes.

    path (T, D), u (T, U), num_transitions () int in [0, T-1] (traceable). With n = T-1 and a = (s < num_transitions):
    inputs X^ (n, D+U) = [x_{1:T-1}, u_{1:T-1}]; per output e the Cholesky factor L (D, n, n) of
    K_e(X^, X^) + noise_e I on the active block and the identity on the inactive one, and the residuals
    r (D, n) = a * (x_{2:T,e} - m_e(X^)). Inactive coordinates then decouple: they contribute exactly -log(2 pi)/2 each
    to a Gaussian log density and nothing to a conditional (no truncation of shapes inside ``scan``).
    Returns (inputs, active (n,), L, r).
    """
    inputs = jnp.concatenate([path[:-1], u[:-1]], axis=-1)
    active = jnp.arange(inputs.shape[0]) < num_transitions
    resid = (path[1:] - inputs @ theta.mean_A.T - theta.mean_b) * active[:, None]
    both = active[:, None] & active[None, :]

    def factor(sf2, ell, noise):
        K = jnp.where(both, SquaredExponential(sf2, ell)(inputs), 0.0) + jnp.diag(jnp.where(active, noise, 1.0))
        return gp.cholesky(K, 0.0)  # jitter already in ``noise`` (effective_noise)

    L = jax.vmap(factor)(theta.signal_var, theta.lengthscale, effective_noise(theta))
    return inputs, active, L, resid.T


def _masked_log_density(L: Array, w: Array, active: Array) -> Array:
    """sum_e log N(r_e; 0, L_e L_e^T) restricted to the active coordinates, from L (D, n, n) and the whitened
    residuals w = L^{-1} r (D, n): the inactive coordinates (identity block, zero residual) are added back."""
    half_log_det = jnp.sum(jnp.log(jnp.diagonal(L, axis1=-2, axis2=-1)))  # the identity block adds 0
    return -0.5 * jnp.sum(w**2) - half_log_det - 0.5 * L.shape[0] * jnp.sum(active) * jnp.log(2.0 * jnp.pi)


def dynamics_log_density(theta: FullGPSSMParams, path: Array, u: Array, num_transitions=None) -> Array:
    """log p(x_{2:n+1} | x_1) = sum_e log N(x_{2:n+1,e}; m_e(X^), K_e(X^, X^) + process_var_e I), n = num_transitions
    (default T-1, the whole path: M9 eq. 3.27 without p(x_1)); X^ = [x_{1:n}, u_{1:n}]. path (T, D), u (T, U) -> ()."""
    num_transitions = path.shape[0] - 1 if num_transitions is None else num_transitions
    _, active, L, r = transition_factors(theta, path, u, num_transitions)
    w = jax.vmap(lambda Le, re: jax.scipy.linalg.solve_triangular(Le, re, lower=True))(L, r)
    return _masked_log_density(L, w, active)


def history_terms(theta: FullGPSSMParams, path: Array, u: Array, t) -> tuple[Array, Array, Array]:
    """The marginalised-GP sequential conditional p(path[t] | path[:t], u[:t]) (eqs. 3.15-3.17 with the
    process noise added; Frigola, Lindsten, Schön & Rasmussen 2013, sec. 3) for one path (T, D) and a 0-based index
    t >= 1 (traceable), and the history's own dynamics density log p(path[1:t] | path[0]) from the same factorisation;
    entries of ``path`` from t on are ignored. Per output e, a GP regression on the history's t-1 transitions:
        mean_e = m_e(x^_{t-1}) + k_*^T (K + noise I)^{-1} r,  var_e = k_** + noise - k_*^T (K + noise I)^{-1} k_*,
    k_* = k_e(X^_{1:t-2}, x^_{t-1}), by Cholesky solves. Returns mean (D,), var (D,), log density ()."""
    inputs, active, L, r = transition_factors(theta, path, u, t - 1)
    query = jnp.concatenate([path[t - 1], u[t - 1]])
    noise = effective_noise(theta)

    def one_output(sf2, ell, a, b, Le, re, ne):
        k = SquaredExponential(sf2, ell)(inputs, query[None])[:, 0] * active
        v = jax.scipy.linalg.solve_triangular(Le, k, lower=True)
        w = jax.scipy.linalg.solve_triangular(Le, re, lower=True)
        return query @ a + b + v @ w, sf2 + ne - v @ v, w

    args = (theta.signal_var, theta.lengthscale, theta.mean_A, theta.mean_b, L, r, noise)
    mean, var, w = jax.vmap(one_output)(*args)
    return mean, var, _masked_log_density(L, w, active)


def history_predictive(theta: FullGPSSMParams, path: Array, u: Array, t) -> tuple[Array, Array]:
    """p(path[t] | path[:t], u[:t]): mean (D,), var (D,) (``history_terms`` without the history's density)."""
    return history_terms(theta, path, u, t)[:2]


def full_log_joint(theta: FullGPSSMParams, states: Array, y: Array, mask: Array, u: Array) -> Array:
    """log p(x_{1:T}, y_{1:T} | theta) of one trajectory: p(x_1) (eq. 3.27) p(x_{2:T} | x_1) and the emission of the
    observed steps. states (T, D), y (T, D), mask (T,), u (T, U) -> ()."""
    log_x1 = gp.mvn_logpdf_chol(states[0], theta.m0, gp.cholesky(theta.P0, 0.0))
    log_emit = dist.Normal(states, jnp.sqrt(theta.obs_var)).to_event(1).log_prob(y)
    return log_x1 + dynamics_log_density(theta, states, u) + jnp.sum(jnp.where(mask, log_emit, 0.0))


@dataclass(frozen=True, eq=False)  # hashed by identity: engines cache compiled functions per view
class MarginalGPSSMView:
    """The ``marginal_gp_ssm`` view of M9, for particle methods on the non-Markov model (PGAS, particle Gibbs).

    ``parameters(observed) -> theta`` (a NumPyro function: the program's parameter sites; ``ssm.bind`` fixes them);
    theta carries ``m0`` (D,), ``P0`` (D, D) of x_1 ~ N(m0, P0) and ``obs_var`` (D,) of y_t = x_t + N(0, diag(obs_var));
    ``history_predictive(theta, path (T, D), u (T, U), t) -> (mean (D,), var (D,))`` of p(path[t] | path[:t]) and
    ``history_terms`` (the same plus the history's dynamics density log p(path[1:t] | path[0]), one factorisation);
    ``dynamics_log_density(theta, path, u, num_transitions)`` = log p(x_{2:n+1} | x_1); ``log_joint(theta, states,
    y, mask, u)`` = log p(x_{1:T}, y_{1:T} | theta) of one trajectory. The program is built from the same functions.
    """

    state_dim: int
    control_dim: int
    parameters: Callable[..., FullGPSSMParams]
    history_predictive: Callable[..., tuple[Array, Array]] = history_predictive
    history_terms: Callable[..., tuple[Array, Array, Array]] = history_terms
    dynamics_log_density: Callable[..., Array] = dynamics_log_density
    log_joint: Callable[..., Array] = full_log_joint


def gpssm_full_program(D: int, U: int, mean: str, m0, P0):
    """M9 (eq. 3.27): per trajectory, x_1 ~ N(m0, P0) and per output e
    x_{2:T,e} ~ N(m_e(X^), K_e(X^, X^) + process_var_e I), X^ = [x_{1:T-1}, u_{1:T-1}]; y_t ~ N(x_t, obs_var).
    Padding: the last states of a short trajectory stay in the GP (future points marginalise out of a GP)."""
    parameters = full_parameters(D, U, mean, m0, P0)

    def program(y=None, lengths=None, u=None):
        K, T = y.shape[:2]
        lengths = jnp.full((K,), T) if lengths is None else lengths
        mask = ssm.observation_mask(lengths, T)
        u = ssm.controls_or_empty(u, K, T)
        theta = parameters()
        with numpyro.plate("trajectories", K):
            x1 = numpyro.sample("x1", dist.MultivariateNormal(theta.m0, theta.P0))
            rest = numpyro.sample("x_rest", dist.Normal(0.0, 1.0).expand([T - 1, D]).to_event(2).mask(False))
        states = jnp.concatenate([x1[:, None], rest], axis=1)
        numpyro.deterministic(ssm.STATES, states)
        log_dyn = jax.vmap(lambda path, uk: dynamics_log_density(theta, path, uk))(states, u)
        numpyro.factor("dynamics", jnp.sum(log_dyn))
        # the emission of padded steps is dropped
        trajectories, steps = numpyro.plate("trajectories_y", K, dim=-2), numpyro.plate("steps_y", T, dim=-1)
        with trajectories, steps, numpyro.handlers.mask(mask=mask):
            numpyro.sample("y", dist.Normal(states, jnp.sqrt(theta.obs_var)).to_event(1), obs=y)

    return program


def full_default_params(D: int, U: int, mean: str) -> dict[str, np.ndarray]:
    """The prior medians of the M9 sites (engines that condition on parameters use them when none are given)."""
    params = {
        "lengthscale": np.ones((D, D + U)),
        "signal_var": np.ones(D),
        "process_var": np.full(D, 0.1),
        "obs_var": np.full(D, 0.1),
    }
    if mean == "linear":
        params.update(mean_A=np.zeros((D, D + U)), mean_b=np.zeros(D))
    return params


def full_gpssm_spec(
    name: str, simulate, state_dim: int, control_dim: int = 0, mean: str = "zero"
) -> ssm.StateSpaceSpec:
    D, U = state_dim, control_dim
    m0, P0 = np.zeros(D), np.eye(D)
    view = MarginalGPSSMView(D, U, full_parameters(D, U, mean, m0, P0))
    return ssm.StateSpaceSpec(
        name=name,
        summary=f"Full GP-SSM (D={D}), transition f integrated out: exact non-Markov density (O(T^3))",
        source="McHutchon 2014, sec. 3.2, eqs. 3.6-3.27 (model M9)",
        program=gpssm_full_program(D, U, mean, m0, P0),
        simulate=simulate,
        data_shapes=frozen(ssm.trajectory_shapes(D, U)),
        default_params=frozen(full_default_params(D, U, mean)),
        capabilities=frozenset({"continuous", "marginal_gp_ssm"}),
        views=frozen({"marginal_gp_ssm": view}),
    )
