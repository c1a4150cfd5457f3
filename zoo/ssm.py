"""State-space models: the state-space view and the NumPyro program built from it.

Contract: docs/architecture.md#state-space-view.

The view is the one definition of an SSM; the program is assembled from it with NumPyro's ``scan``, so the two
cannot drift apart (``tests/test_ssm.py`` checks that both give the same log density).

Data layout (every SSM in the zoo), K trajectories padded to a common length T:

* ``y`` (K, T, E): observations; entries past a trajectory's end are padding (any finite value, e.g. 0).
* ``lengths`` (K,): the number of observed steps T_k of each trajectory, 1 <= T_k <= T (a float array holding
  integers, like every observed array of the zoo).
* ``u`` (K, T, U), only for models with controls: u[k, t] drives the transition from x_t to x_{t+1}
  (McHutchon eq. 3.1: x_t = f(x_{t-1}, u_{t-1}) + eps_t). Models without controls take no ``u``; their view
  functions receive a zero-length control vector of shape (0,).

Padding: past T_k the latent states keep following the transition but the emission is masked out. Future states
do not change the posterior of the observed part (they integrate to one), the density stays proper for NUTS, and a
particle filter that skips the weight update on masked steps returns the log-likelihood of the observed part.

View contract (``StateSpaceView``), for one particle; engines ``vmap`` over particles and trajectories:

* ``parameters(observed) -> theta``: a NumPyro function that samples the parameter sites from their priors
  (constrained values; supports are the sites' ``support``) and returns the pytree ``theta`` the functions below
  take (it may hold fixed quantities derived from the data, e.g. pseudo-inputs). ``bind(view, params, observed)``
  gives ``theta`` for fixed parameter values.
* ``initial(theta)``: p(x_1), event shape (D,).
* ``transition(theta, x_prev (D,), u_prev (U,))``: p(x_t | x_{t-1}, u_{t-1}), event shape (D,).
* ``emission(theta, x (D,))``: p(y_t | x_t), event shape (E,).
* when the emission is linear-Gaussian and the transition Gaussian, the fully adapted pieces
  ``predictive(theta, x_prev, u_prev)`` = p(y_t | x_{t-1}) (event (E,)) and
  ``proposal(theta, x_prev, u_prev, y_t)`` = p(x_t | x_{t-1}, y_t) (event (D,)) (McHutchon eq. 3.113), else None.
* ``linear_gaussian(theta) -> LinearGaussianSSM`` for models the Kalman filter solves exactly, else None.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro import handlers
from numpyro.contrib.control_flow import scan
from numpyro.distributions.batch_util import promote_batch_shape

from zoo.errors import DataError, OptionError
from zoo.gp import small_cholesky, small_solve_lower
from zoo.registry import Dataset, ModelSpec

Array = Any

# Sample-site names of every SSM program: x1 (K, D), y1 (K, E), then from the scan x (T-1, K, D), y (T-1, K, E);
# the deterministic site "states" (K, T, D) is the latent path in data layout, the name engines report.
STATES = "states"


class LinearGaussianSSM(NamedTuple):
    """x_1 ~ N(m0, P0); x_t = A x_{t-1} + B u_{t-1} + b + N(0, Q); y_t = C x_t + d + N(0, R).

    Shapes: m0 (D,), P0 (D, D), A (D, D), B (D, U), b (D,), Q (D, D), C (E, D), d (E,), R (E, E).
    """

    m0: Array
    P0: Array
    A: Array
    B: Array
    b: Array
    Q: Array
    C: Array
    d: Array
    R: Array


@dataclass(frozen=True, eq=False)  # hashed by identity: engines cache compiled functions per view
class StateSpaceView:
    """The state-space view of an SSM (see the module docstring for the contract)."""

    state_dim: int
    obs_dim: int
    control_dim: int
    parameters: Callable[[Mapping[str, Any]], Any]
    initial: Callable[[Any], dist.Distribution]
    transition: Callable[[Any, Array, Array], dist.Distribution]
    emission: Callable[[Any, Array], dist.Distribution]
    predictive: Callable[[Any, Array, Array], dist.Distribution] | None = None
    proposal: Callable[[Any, Array, Array, Array], dist.Distribution] | None = None
    linear_gaussian: Callable[[Any], LinearGaussianSSM] | None = None


# ----------------------------------------------------------------------------------------------------------------
# Gaussian SSMs: the view from moment functions
# ----------------------------------------------------------------------------------------------------------------


def gaussian_view(
    state_dim: int,
    obs_dim: int,
    control_dim: int,
    parameters: Callable[[Mapping[str, Any]], Any],
    initial_moments: Callable[[Any], tuple[Array, Array]],
    transition_moments: Callable[[Any, Array, Array], tuple[Array, Array]],
    emission_matrices: Callable[[Any], tuple[Array, Array, Array]],
    linear_gaussian: Callable[[Any], LinearGaussianSSM] | None = None,
) -> StateSpaceView:
    """A view whose transition is Gaussian, N(m(x, u), S(x, u)), and whose emission is y = C x + d + N(0, R).

    initial_moments(theta) -> (m0 (D,), P0 (D, D)); transition_moments(theta, x, u) -> (mean (D,), cov (D, D));
    emission_matrices(theta) -> (C (E, D), d (E,), R (E, E)). Gives all five distributions, the fully adapted
    pieces included.
    """

    def initial(theta):
        m0, P0 = initial_moments(theta)
        return dist.MultivariateNormal(m0, scale_tril=small_cholesky(P0))

    def transition(theta, x_prev, u_prev):
        mean, cov = transition_moments(theta, x_prev, u_prev)
        return dist.MultivariateNormal(mean, scale_tril=small_cholesky(cov))

    def emission(theta, x):
        C, d, R = emission_matrices(theta)
        return dist.MultivariateNormal(C @ x + d, scale_tril=small_cholesky(R))

    def predictive(theta, x_prev, u_prev):
        mean, cov = transition_moments(theta, x_prev, u_prev)
        y_mean, y_cov, _ = _predict_observation(mean, cov, *emission_matrices(theta))
        return dist.MultivariateNormal(y_mean, scale_tril=small_cholesky(y_cov))

    def proposal(theta, x_prev, u_prev, y_t):
        mean, cov = transition_moments(theta, x_prev, u_prev)
        post_mean, post_cov, _ = condition_on_observation(mean, cov, y_t, *emission_matrices(theta))
        return dist.MultivariateNormal(post_mean, scale_tril=small_cholesky(post_cov))

    return StateSpaceView(
        state_dim=state_dim,
        obs_dim=obs_dim,
        control_dim=control_dim,
        parameters=parameters,
        initial=initial,
        transition=transition,
        emission=emission,
        predictive=predictive,
        proposal=proposal,
        linear_gaussian=linear_gaussian,
    )


def _predict_observation(mean, cov, C, d, R):
    """y = C x + d + N(0, R) with x ~ N(mean, cov): mean (E,), cov (E, E), and the Cholesky factor of cov."""
    y_cov = C @ cov @ C.T + R
    y_cov = 0.5 * (y_cov + y_cov.T)
    return C @ mean + d, y_cov, small_cholesky(y_cov)


def condition_on_observation(mean, cov, y, C, d, R):
    """Kalman measurement update (McHutchon eq. 3.87 / 3.113): x | y for x ~ N(mean, cov), y = C x + d + N(0, R).

    Returns the posterior mean (D,), covariance (D, D) and log N(y; C mean + d, C cov C^T + R). The covariance uses
    the Joseph form, which stays symmetric positive semi-definite in floating point.
    """
    y_mean, y_cov, L = _predict_observation(mean, cov, C, d, R)
    # G = cov C^T (C cov C^T + R)^-1 by two triangular solves per column of C cov (no inverse)
    solve = jax.vmap(lambda col: small_solve_lower(L.T[::-1, ::-1], small_solve_lower(L, col)[::-1])[::-1], 1, 1)
    gain = solve(C @ cov).T
    post_mean = mean + gain @ (y - y_mean)
    I_GC = jnp.eye(mean.shape[0]) - gain @ C
    post_cov = I_GC @ cov @ I_GC.T + gain @ R @ gain.T
    resid = small_solve_lower(L, y - y_mean)
    log_lik = -0.5 * resid @ resid - jnp.sum(jnp.log(jnp.diagonal(L))) - 0.5 * y.shape[0] * jnp.log(2.0 * jnp.pi)
    return post_mean, 0.5 * (post_cov + post_cov.T), log_lik


# ----------------------------------------------------------------------------------------------------------------
# Parameters
# ----------------------------------------------------------------------------------------------------------------


def parameter_sites(view: StateSpaceView, observed: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The parameter sample sites of ``view.parameters``: name -> {"shape", "fn"} (one trace with seed 0)."""
    trace = handlers.trace(handlers.seed(view.parameters, 0)).get_trace(observed)
    return {
        name: {"shape": jnp.shape(site["value"]), "fn": site["fn"]}
        for name, site in trace.items()
        if site["type"] == "sample" and not site["is_observed"]
    }


def bind(view: StateSpaceView, params: Mapping[str, Any], observed: Mapping[str, Any]) -> Any:
    """``theta`` for fixed parameter values: ``view.parameters(observed)`` with every site conditioned on ``params``.

    Traceable (use inside jit). Raises OptionError, at trace time, when a parameter site is missing from ``params``.
    """
    trace = handlers.trace(handlers.condition(handlers.seed(view.parameters, 0), data=params)).get_trace(observed)
    missing = [n for n, s in trace.items() if s["type"] == "sample" and not s["is_observed"] and n not in params]
    if missing:
        raise OptionError(f"parameters {missing} are not given; pass them in params (or rely on model defaults).")
    return handlers.condition(handlers.seed(view.parameters, 0), data=params)(observed)


# ----------------------------------------------------------------------------------------------------------------
# Data helpers
# ----------------------------------------------------------------------------------------------------------------


def observation_mask(lengths: Array, num_steps: int) -> Array:
    """(K, T) boolean: True where step t < T_k is observed."""
    return jnp.arange(num_steps)[None, :] < jnp.asarray(lengths)[:, None]


def controls_or_empty(u: Array | None, num_trajectories: int, num_steps: int) -> Array:
    """``u`` (K, T, U), or a (K, T, 0) array for models without controls."""
    return jnp.zeros((num_trajectories, num_steps, 0)) if u is None else jnp.asarray(u)


def trajectories(observed: Mapping[str, Any]) -> tuple[Array, Array, Array]:
    """(y (K, T, E), mask (K, T) bool, u (K, T, U)) from an SSM's observed arrays."""
    y = jnp.asarray(observed["y"])
    K, T = y.shape[:2]
    return y, observation_mask(observed["lengths"], T), controls_or_empty(observed.get("u"), K, T)


def check_trajectories(model: str, observed: Mapping[str, Any], control_dim: int) -> None:
    """Errors specific to SSM data (after the generic shape/NaN checks): lengths must be integers in [1, T] and
    controls must have the model's dimension."""
    if "u" in observed and np.shape(observed["u"])[-1] != control_dim:
        raise DataError(
            f"{model}: controls u have {np.shape(observed['u'])[-1]} dimensions per step, but the model takes "
            f"{control_dim} (u must be (K, T, {control_dim}))."
        )
    if "lengths" not in observed:
        return
    lengths = np.asarray(observed["lengths"], dtype=float)
    T = np.shape(observed["y"])[1] if "y" in observed else None
    if np.any(lengths != np.round(lengths)):
        raise DataError(f"{model}: trajectory lengths must be whole numbers, got {lengths.tolist()}.")
    if np.any(lengths < 1):
        bad = np.flatnonzero(lengths < 1).tolist()
        raise DataError(f"{model}: trajectories {bad} have length 0; every trajectory needs at least one step.")
    if T is not None and np.any(lengths > T):
        raise DataError(f"{model}: lengths {lengths.tolist()} exceed the padded length T={T} of y.")


@dataclass(frozen=True, eq=False)
class StateSpaceSpec(ModelSpec):
    """A ModelSpec whose data are SSM trajectories; ``validate`` adds the trajectory checks (lengths, controls)."""

    def validate(self, data: "Dataset | Mapping[str, Any]") -> Dataset:
        dataset = data if isinstance(data, Dataset) else Dataset(observed=dict(data))
        control_dim = self.views["state_space"].control_dim if "state_space" in self.views else _control_dim(self)
        for arrays in (dataset.observed, dataset.test):
            if "u" in arrays and control_dim == 0:
                raise DataError(f"{self.name}: the model takes no controls, but data 'u' was given.")
            if "u" in arrays and np.ndim(arrays["u"]) == 3:
                check_trajectories(self.name, {"u": arrays["u"]}, control_dim)
        checked = super().validate(dataset)
        check_trajectories(self.name, checked.observed, control_dim)
        if checked.test:
            check_trajectories(self.name, checked.test, control_dim)
        return checked


def _control_dim(spec: ModelSpec) -> int:
    shape = spec.data_shapes.get("u")
    return 0 if shape is None else int(shape[-1])


def trajectory_shapes(obs_dim: int, control_dim: int, extra: Mapping[str, tuple] | None = None) -> dict[str, tuple]:
    """``data_shapes`` of an SSM: y (K, T, E), lengths (K,), u (K, T, U) when U > 0, plus ``extra``."""
    shapes = {"y": ("K", "T", obs_dim), "lengths": ("K",)}
    if control_dim > 0:
        shapes["u"] = ("K", "T", control_dim)
    shapes.update(extra or {})
    return shapes


# ----------------------------------------------------------------------------------------------------------------
# The program built from the view, and the view's own log density
# ----------------------------------------------------------------------------------------------------------------


def _batched(make: Callable[..., dist.Distribution], in_axes, *args) -> dist.Distribution:
    """The distribution ``make(*args)`` for a batch of particles: vmapped over ``in_axes``, batch shape promoted."""
    return promote_batch_shape(jax.vmap(make, in_axes=in_axes)(*args))


DEFAULT_PRIOR_STEPS = 20  # trajectory length for prior predictive draws (y=None, no controls)


def build_program(view: StateSpaceView) -> Callable[..., None]:
    """The NumPyro program ``program(y=None, lengths=None, u=None, **extra)`` of the SSM defined by ``view``.

    Sites: the parameter sites of ``view.parameters``; x1 (K, D), y1 (K, E); from ``scan`` over t = 2..T,
    x (T-1, K, D) and y (T-1, K, E); deterministic ``states`` (K, T, D). With ``y=None`` observations are sampled
    (prior predictive): K from ``lengths`` (default 1) and T from ``u`` or ``DEFAULT_PRIOR_STEPS``.
    """

    def program(y=None, lengths=None, u=None, **extra):
        observed = {"y": y, "lengths": lengths, "u": u, **extra}
        theta = view.parameters(observed)
        if y is not None:
            K, T = y.shape[:2]
        elif u is not None:
            K, T = u.shape[:2]
        else:
            K, T = (1 if lengths is None else jnp.shape(lengths)[0]), DEFAULT_PRIOR_STEPS
        lengths = jnp.full((K,), T) if lengths is None else lengths
        mask = observation_mask(lengths, T)
        u = controls_or_empty(u, K, T)
        with numpyro.plate("trajectories", K):
            x1 = numpyro.sample("x1", view.initial(theta))
            with handlers.mask(mask=mask[:, 0]):
                numpyro.sample("y1", _batched(view.emission, (None, 0), theta, x1), obs=None if y is None else y[:, 0])
        if T == 1:
            numpyro.deterministic(STATES, x1[:, None, :])
            return

        def step(x_prev, inputs):
            u_prev, y_t, m_t = inputs
            with numpyro.plate("trajectories", K):
                x = numpyro.sample("x", _batched(view.transition, (None, 0, 0), theta, x_prev, u_prev))
                with handlers.mask(mask=m_t):
                    numpyro.sample("y", _batched(view.emission, (None, 0), theta, x), obs=y_t)
            return x, x

        time_major = (jnp.swapaxes(u[:, :-1], 0, 1), None if y is None else jnp.swapaxes(y[:, 1:], 0, 1), mask[:, 1:].T)
        _, xs = scan(step, x1, time_major)
        numpyro.deterministic(STATES, jnp.concatenate([x1[:, None], jnp.swapaxes(xs, 0, 1)], axis=1))

    return program


def trajectory_log_density(view: StateSpaceView, theta: Any, states: Array, y: Array, mask: Array, u: Array) -> Array:
    """log p(x_{1:T}, y_{1:T} | theta) of one trajectory with the emission masked past its end, from the view alone.

    states (T, D), y (T, E), mask (T,), u (T, U).
    """
    log_init = view.initial(theta).log_prob(states[0])
    log_trans = jax.vmap(lambda xp, up, x: view.transition(theta, xp, up).log_prob(x))(states[:-1], u[:-1], states[1:])
    log_emit = jax.vmap(lambda x, yt: view.emission(theta, x).log_prob(yt))(states, y)
    return log_init + jnp.sum(log_trans) + jnp.sum(jnp.where(mask, log_emit, 0.0))


def log_joint(view: StateSpaceView, theta: Any, states: Array, observed: Mapping[str, Any]) -> Array:
    """Sum over trajectories of ``trajectory_log_density``; states (K, T, D)."""
    y, mask, u = trajectories(observed)
    per_trajectory = jax.vmap(trajectory_log_density, in_axes=(None, None, 0, 0, 0, 0))
    return jnp.sum(per_trajectory(view, theta, states, y, mask, u))


def program_sites_from_states(states: Array) -> dict[str, Array]:
    """The program's latent sites x1 (K, D) and x (T-1, K, D) from a path ``states`` (K, T, D)."""
    sites = {"x1": states[:, 0]}
    if states.shape[1] > 1:
        sites["x"] = jnp.swapaxes(states[:, 1:], 0, 1)
    return sites


def pad_trajectories(arrays: list[Array]) -> tuple[np.ndarray, np.ndarray]:
    """Stack trajectories of different lengths, each (T_k, ...), into (K, max T_k, ...) zero-padded, plus lengths."""
    if not arrays:
        raise DataError("no trajectories given")
    lengths = np.array([len(a) for a in arrays], dtype=float)
    if np.any(lengths < 1):
        raise DataError("trajectories of length 0 cannot be padded; every trajectory needs at least one step.")
    T = int(lengths.max())
    trailing = np.shape(arrays[0])[1:]
    padded = np.zeros((len(arrays), T, *trailing))
    for k, a in enumerate(arrays):
        padded[k, : len(a)] = np.asarray(a)
    return padded, lengths
