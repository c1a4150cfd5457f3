"""Saturating cost and its expectation at a Gaussian state (McHutchon eq. 4.8, sec. 4.2;
docs/sources/mchutchon.md#pilco-cost).

L(x) = 1 - exp(-1/2 |V^T (z(x) - target)|^2), with z(x) = [A x; sin(P x + o)] an augmentation of the state by
sines (and cosines, as sines with offset pi/2) of chosen coordinates, V (n_z, r) a square root of the weight matrix.

* ``state_cost``: z = x (no sines), eq. 4.8's form; E[L] at a Gaussian state is exact.
* ``tip_cost``: the lab code's cart-pole swing-up cost, 1 - exp(-d^2 / (2 a^2)) with d the distance of the pendulum
  tip from its upright position, d^2 = (x_c - l sin theta)^2 + l^2 (1 - cos theta)^2: z = [x_c, sin theta, cos theta],
  target [0, 0, 1]. Its expectation moment-matches z as a Gaussian (exact mean and covariance of z, ``trig``) and
  then applies the Gaussian formula: PILCO's approximation (docs/sources/mchutchon.md#pilco-cost).

E[L] for z ~ N(mu, S) (exact): with T = I + V^T S V (r, r) and r0 = V^T (mu - target),
E[L] = 1 - |T|^{-1/2} exp(-1/2 r0^T T^{-1} r0).
"""

from typing import Any, NamedTuple

import jax.numpy as jnp
from jax.scipy.linalg import cho_solve

from inference.applications.pilco.trig import sin_moments

__all__ = [
    "SaturatingCost",
    "augment",
    "augmented_moments",
    "cost_at",
    "expected_cost",
    "expected_gaussian",
    "state_cost",
    "tip_cost",
]

Array = Any


class SaturatingCost(NamedTuple):
    """A (n_a, D) linear part, P (n_s, D) and offset (n_s,) the sine part, V (n_a + n_s, r), target (n_a + n_s,)."""

    A: Array
    P: Array
    offset: Array
    V: Array
    target: Array


def state_cost(target: Array, weight_sqrt: Array) -> SaturatingCost:
    """L(x) = 1 - exp(-1/2 (x - target)^T V V^T (x - target)): target (D,), weight_sqrt V (D, r)."""
    target = jnp.asarray(target, dtype=float)
    D = target.shape[0]
    return SaturatingCost(jnp.eye(D), jnp.zeros((0, D)), jnp.zeros(0), jnp.asarray(weight_sqrt, dtype=float), target)


def tip_cost(length: float = 0.5, width: float = 0.25, position: int = 0, angle: int = 3, D: int = 4) -> SaturatingCost:
    """The cart-pole swing-up cost (module docstring); l = ``length`` m, a = ``width`` m (lab defaults, M15)."""
    A = jnp.zeros((1, D)).at[0, position].set(1.0)
    P = jnp.zeros((2, D)).at[:, angle].set(1.0)
    # |V^T (z - target)|^2 a^2 = (x - l sin)^2 + l^2 (cos - 1)^2
    V = jnp.array([[1.0, 0.0], [-length, 0.0], [0.0, length]]) / width
    return SaturatingCost(A, P, jnp.array([0.0, jnp.pi / 2]), V, jnp.array([0.0, 0.0, 1.0]))


def augment(cost: SaturatingCost, x: Array) -> Array:
    """z(x) at a point x (D,) -> (n_z,)."""
    return jnp.concatenate([cost.A @ x, jnp.sin(cost.P @ x + cost.offset)])


def cost_at(cost: SaturatingCost, x: Array) -> Array:
    """L(x) at a point x (D,) -> ()."""
    r = cost.V.T @ (augment(cost, x) - cost.target)
    return 1.0 - jnp.exp(-0.5 * jnp.sum(r**2))


def augmented_moments(cost: SaturatingCost, m: Array, S: Array) -> tuple[Array, Array]:
    """Exact mean (n_z,) and covariance (n_z, n_z) of z(x), x ~ N(m, S)."""
    s_mean, s_cov, gain = sin_moments(m, S, cost.P, cost.offset)
    cross = cost.A @ S @ gain
    top = jnp.concatenate([cost.A @ S @ cost.A.T, cross], 1)
    bottom = jnp.concatenate([cross.T, s_cov], 1)
    return jnp.concatenate([cost.A @ m, s_mean]), jnp.concatenate([top, bottom], 0)


def expected_gaussian(V: Array, target: Array, mu: Array, S: Array) -> Array:
    """E[1 - exp(-1/2 |V^T (z - target)|^2)] for z ~ N(mu, S) (module docstring), exact."""
    r = V.shape[1]
    L = jnp.linalg.cholesky(jnp.eye(r) + V.T @ S @ V)
    r0 = V.T @ (mu - target)
    quad = r0 @ cho_solve((L, True), r0)
    return 1.0 - jnp.exp(-jnp.sum(jnp.log(jnp.diagonal(L))) - 0.5 * quad)


def expected_cost(cost: SaturatingCost, m: Array, S: Array) -> Array:
    """E[L(x)], x ~ N(m, S): exact for ``state_cost``, moment-matched in z for costs with sines."""
    mu, Sz = augmented_moments(cost, m, S)
    return expected_gaussian(cost.V, cost.target, mu, Sz)
