"""PILCO policies and their moments at a Gaussian input (McHutchon sec. 4.2-4.4, eq. 4.20;
docs/sources/mchutchon.md#pilco-policies).

A policy maps the observed state y (D,) to U controls u = u_max * squash(z), z = pi~(y):

* ``RBFPolicy``: z_a(y) = sum_i w_ai exp(-1/2 (y - c_i)^T Lambda_a^{-1} (y - c_i)), M centres c shared by the
  outputs (Table 4.1: M = 50), the weights w optimised directly (docs/sources/mchutchon.md#pilco-policies).
* ``PseudoTargetRBF``: the same network parameterised as PILCO's lab code does, by pseudo-targets t: w_a =
  (K_a + sn^2 I)^{-1} t_a with K_a the unit-variance SE Gram of the centres under Lambda_a and sn^2 = 1e-4 (the lab
  code's policy noise sd 0.01, signal sd 1). The same functions for fixed lengthscales, but not the same
  optimisation: the network keeps interpolating t at the centres as the lengthscales move
  (docs/sources/mchutchon.md#pilco-pseudo-targets).
* ``LinearPolicy``: z = W y + b (Table 4.2, "linear with bias term").
* ``MappedPolicy``: either of them seeing a = [A y; sin(P y + o)] instead of y, e.g. sin and cos of the pendulum
  angle in place of the angle (PILCO's ``poli`` with ``gTrig``; not stated in the thesis;
  docs/sources/mchutchon.md#pilco-policies).

squash(z) = (9 sin z + sin 3z) / 8 elementwise (PILCO's ``gSin`` saturation; its range is [-1, 1]).

Moments at y ~ N(m, S): the pre-squash moments are exact (RBF: the GP-mean formulas of ``zoo.moments``; linear:
trivially); the squash's moments are exact given a Gaussian z (``inference.applications.pilco.trig``), which is exact
for the linear
policy and PILCO's moment-matching approximation for the RBF network. Cov[y, u] = Cov[y, z] G (Stein gain G).
A ``MappedPolicy`` takes the exact moments of a (``inference.applications.pilco.inputs``), the inner policy's moments
at a Gaussian a
with those moments (PILCO's approximation), and Cov[y, z] = Cov[y, a] E[grad_a z] (PILCO's chain rule; exact for
the linear policy).
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from inference.applications.pilco import inputs as policy_inputs
from inference.applications.pilco.trig import sin_moments
from zoo import moments

__all__ = [
    "ActionMoments",
    "LinearPolicy",
    "MappedPolicy",
    "PSEUDO_TARGET_NOISE",
    "PseudoTargetRBF",
    "RBFPolicy",
    "SQUASH_FREQUENCIES",
    "SQUASH_WEIGHTS",
    "action",
    "action_moments",
    "as_rbf",
    "init_linear",
    "init_mapped_rbf",
    "init_pseudo_target_rbf",
    "init_rbf",
    "input_dim",
    "num_controls",
    "pre_squash",
    "pre_squash_moments",
    "squash",
    "squash_moments",
    "trainable",
]

Array = Any

SQUASH_FREQUENCIES = jnp.array([1.0, 3.0])
SQUASH_WEIGHTS = jnp.array([9.0 / 8.0, 1.0 / 8.0])


class RBFPolicy(NamedTuple):
    """centres (M, D), weights (U, M), log_lengthscale (U, D)."""

    centres: Array
    weights: Array
    log_lengthscale: Array


class PseudoTargetRBF(NamedTuple):
    """centres (M, D), targets (U, M), log_lengthscale (U, D); the weights are ``as_rbf``'s."""

    centres: Array
    targets: Array
    log_lengthscale: Array


PSEUDO_TARGET_NOISE = 1e-4  # sn^2 over a unit signal variance: the lab code's policy hyp (sd 1 and 0.01)


def as_rbf(policy: PseudoTargetRBF) -> RBFPolicy:
    """The RBF network a pseudo-target policy is: w_a = (K_a + sn^2 I)^{-1} t_a (U Cholesky factors of M x M; the
    ridge sn^2 is the policy's own noise, so the factor exists for any centres)."""
    ell = jnp.exp(policy.log_lengthscale)  # (U, D)
    diff = (policy.centres[:, None, :] - policy.centres[None, :, :])[None] / ell[:, None, None, :]  # (U, M, M, D)
    gram = jnp.exp(-0.5 * jnp.sum(diff**2, -1)) + PSEUDO_TARGET_NOISE * jnp.eye(policy.centres.shape[0])
    weights = jax.vmap(lambda K, t: jax.scipy.linalg.cho_solve((jnp.linalg.cholesky(K), True), t))(gram, policy.targets)
    return RBFPolicy(policy.centres, weights, policy.log_lengthscale)


class LinearPolicy(NamedTuple):
    """W (U, D), b (U,)."""

    W: Array
    b: Array


class MappedPolicy(NamedTuple):
    """policy (an ``RBFPolicy`` or ``LinearPolicy`` over a) seeing a = ``inputs.apply(y)``; only ``policy`` is
    optimised (``trainable``)."""

    policy: Any
    inputs: policy_inputs.InputMap


class ActionMoments(NamedTuple):
    """mean (U,) = E[u], cov (U, U) = Cov[u], input_output (D, U) = Cov[y, u]."""

    mean: Array
    cov: Array
    input_output: Array


def num_controls(policy) -> int:
    if isinstance(policy, MappedPolicy):
        return num_controls(policy.policy)
    return policy.W.shape[0] if isinstance(policy, LinearPolicy) else policy.log_lengthscale.shape[0]


def input_dim(policy) -> int:
    """The dimension of the observed state y the policy takes."""
    if isinstance(policy, MappedPolicy):
        return policy.inputs.A.shape[1]
    return policy.W.shape[1] if isinstance(policy, LinearPolicy) else policy.centres.shape[1]


def trainable(policy) -> tuple[Any, Any]:
    """(the parameters an optimiser moves, ``rebuild(parameters) -> policy``): a mapped policy's input map stays."""
    if isinstance(policy, MappedPolicy):
        return policy.policy, lambda inner: MappedPolicy(inner, policy.inputs)
    return policy, lambda same: same


def squash(z: Array, u_max: float) -> Array:
    """u_max (9 sin z + sin 3z) / 8, elementwise: (..., U) -> (..., U)."""
    return u_max * jnp.sum(SQUASH_WEIGHTS * jnp.sin(z[..., None] * SQUASH_FREQUENCIES), -1)


def pre_squash(policy, y: Array) -> Array:
    """z = pi~(y) at a point y (D,) -> (U,)."""
    if isinstance(policy, MappedPolicy):
        return pre_squash(policy.policy, policy_inputs.apply(policy.inputs, y))
    if isinstance(policy, LinearPolicy):
        return policy.W @ y + policy.b
    if isinstance(policy, PseudoTargetRBF):
        policy = as_rbf(policy)
    ell = jnp.exp(policy.log_lengthscale)  # (U, D)
    d = (y - policy.centres)[None, :, :] / ell[:, None, :]  # (U, M, D)
    return jnp.sum(policy.weights * jnp.exp(-0.5 * jnp.sum(d**2, -1)), -1)


def action(policy, y: Array, u_max: float) -> Array:
    """The control u (U,) at an observed state y (D,)."""
    return squash(pre_squash(policy, y), u_max)


def _rbf_predictor(policy: RBFPolicy) -> moments.SEPredictor:
    """The network as the mean of U SE-GPs with unit signal variance, the factor pair chol = post_sqrt = I (so the
    predictor's W = K^{-1} - B B^T vanishes)."""
    U, M = policy.weights.shape
    eye = jnp.broadcast_to(jnp.eye(M), (U, M, M))
    centres = jnp.broadcast_to(policy.centres, (U, *policy.centres.shape))
    return moments.SEPredictor(centres, policy.weights, eye, eye, jnp.ones(U), jnp.exp(policy.log_lengthscale))


def _rbf_moments(policy: RBFPolicy, m: Array, S: Array) -> moments.GaussianInputMoments:
    """Exact moments of the RBF network at y ~ N(m, S). ``predict_moments`` adds exactly sf2 = 1 as the 'expected
    variance' (``_rbf_predictor``), which is removed here: the network has no posterior variance."""
    mm = moments.predict_moments(_rbf_predictor(policy), m, S)
    U = policy.weights.shape[0]
    return moments.GaussianInputMoments(mm.mean, mm.cov - jnp.eye(U), mm.input_output)


def _mapped_moments(policy: MappedPolicy, m: Array, S: Array) -> moments.GaussianInputMoments:
    """z = pi~(a), a = [A y; sin(P y + o)], y ~ N(m, S) (module docstring)."""
    ma, Sa, cross = policy_inputs.input_moments(policy.inputs, m, S)
    inner = as_rbf(policy.policy) if isinstance(policy.policy, PseudoTargetRBF) else policy.policy
    z = pre_squash_moments(inner, ma, Sa)
    if isinstance(inner, LinearPolicy):
        gradient = inner.W.T
    else:
        gradient = policy_inputs.expected_gradient(_rbf_predictor(inner), ma, Sa)
    return moments.GaussianInputMoments(z.mean, z.cov, cross @ gradient)


def pre_squash_moments(policy, m: Array, S: Array) -> moments.GaussianInputMoments:
    """Exact mean (U,), covariance (U, U) and Cov[y, z] (D, U) of z = pi~(y), y ~ N(m, S) (a mapped policy's:
    PILCO's approximation, module docstring)."""
    if isinstance(policy, MappedPolicy):
        return _mapped_moments(policy, m, S)
    if isinstance(policy, LinearPolicy):
        return moments.GaussianInputMoments(policy.W @ m + policy.b, policy.W @ S @ policy.W.T, S @ policy.W.T)
    return _rbf_moments(as_rbf(policy) if isinstance(policy, PseudoTargetRBF) else policy, m, S)


def squash_moments(m: Array, S: Array, u_max: float) -> tuple[Array, Array, Array]:
    """Mean (U,), covariance (U, U) and Stein gain G (U, U) (Cov[z, u] = S G) of u = squash(z), z ~ N(m, S)."""
    U = m.shape[0]
    P = jnp.kron(jnp.eye(U), SQUASH_FREQUENCIES[:, None])  # (2U, U): rows z_a, 3 z_a
    mean, cov, gain = sin_moments(m, S, P, jnp.zeros(2 * U))
    C = u_max * jnp.kron(jnp.eye(U), SQUASH_WEIGHTS[None, :])  # (U, 2U)
    return C @ mean, C @ cov @ C.T, gain @ C.T


def action_moments(policy, m: Array, S: Array, u_max: float) -> ActionMoments:
    """Moments of u = action(policy, y, u_max) at y ~ N(m, S) (module docstring for which are exact)."""
    z = pre_squash_moments(policy, m, S)
    mean, cov, gain = squash_moments(z.mean, z.cov, u_max)
    return ActionMoments(mean, cov, z.input_output @ gain)


def init_rbf(key, m0: Array, S0: Array, num_controls: int = 1, num_basis: int = 50) -> RBFPolicy:
    """PILCO's initialisation: centres ~ N(m0, S0), weights ~ N(0, 0.1^2), unit lengthscales."""
    k_c, k_w = jax.random.split(key)
    D = m0.shape[0]
    centres = m0 + jax.random.normal(k_c, (num_basis, D)) @ jnp.linalg.cholesky(S0).T
    weights = 0.1 * jax.random.normal(k_w, (num_controls, num_basis))
    return RBFPolicy(centres, weights, jnp.zeros((num_controls, D)))


def init_pseudo_target_rbf(key, m0: Array, S0: Array, num_controls: int = 1, num_basis: int = 50) -> PseudoTargetRBF:
    """PILCO's initialisation of its RBF policy: centres ~ N(m0, S0), pseudo-targets ~ N(0, 0.1^2), unit
    lengthscales (the draws of ``init_rbf``, the weights read as targets)."""
    raw = init_rbf(key, m0, S0, num_controls, num_basis)
    return PseudoTargetRBF(raw.centres, raw.weights, raw.log_lengthscale)


def init_linear(key, state_dim: int, num_controls: int = 1) -> LinearPolicy:
    """Small random weights N(0, 0.1^2) and zero bias."""
    return LinearPolicy(0.1 * jax.random.normal(key, (num_controls, state_dim)), jnp.zeros(num_controls))


def init_mapped_rbf(
    key,
    m0: Array,
    S0: Array,
    inputs: policy_inputs.InputMap,
    num_controls: int = 1,
    num_basis: int = 50,
    pseudo_targets: bool = False,
) -> MappedPolicy:
    """``init_rbf`` over a = inputs.apply(y): centres the images of draws y ~ N(m0, S0) (PILCO draws them from the
    Gaussian with a's moments; the images have exactly a's distribution and need no factor of its near-singular
    covariance), weights (or, with ``pseudo_targets``, PILCO's pseudo-targets) ~ N(0, 0.1^2), unit lengthscales."""
    raw = init_rbf(key, m0, S0, num_controls, num_basis)
    centres = jax.vmap(policy_inputs.apply, in_axes=(None, 0))(inputs, raw.centres)
    network = PseudoTargetRBF if pseudo_targets else RBFPolicy
    return MappedPolicy(network(centres, raw.weights, jnp.zeros((num_controls, centres.shape[1]))), inputs)
