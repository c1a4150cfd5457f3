"""The Kronecker fast path: log N(vec Y | 0, B kron K_x + diag(noise) kron I) from two eigendecompositions.

Covariance of ICM with P outputs observed at the same N inputs (docs/sources/franzese.md#icm-kronecker), output-major
order (``zoo.multioutput.base.vec``): Sigma = B kron K_x + D kron I_N, D = diag(noise) > 0 per output.

Per-output noise breaks the plain eigen-trick (B kron K_x + D kron I has no eigenbasis of Kronecker form), but
whitening by D^{-1/2} restores it exactly: Sigma = (D^{1/2} kron I)(B~ kron K_x + I)(D^{1/2} kron I) with
B~ = D^{-1/2} B D^{-1/2}. With B~ = U_b diag(lb) U_b^T and K_x = U_x diag(lx) U_x^T,

    log|Sigma|  = N sum_p log noise_p + sum_{n,p} log(lx_n lb_p + 1),
    quadratic   = sum_{n,p} Z_np^2 / (lx_n lb_p + 1),   Z = U_x^T (Y D^{-1/2}) U_b   (N, P),

exact for any positive noise vector, at O(N^3 + P^3 + N^2 P) instead of O(N^3 P^3). The eigenvalues of the whitened
matrix are >= 1, so no jitter is ever needed. The independent outputs of ``gp/multioutput-tied`` are the special case
B = diag(variance).

The derivative is written by hand (``custom_jvp``), from dlog N = tr(G dSigma) with G = (alpha alpha^T - Sigma^-1)/2:
JAX's derivative of ``eigh`` divides by eigenvalue gaps, which are ~0 among the many tiny eigenvalues of a smooth
kernel's Gram matrix (and exactly 0 for a diagonal B with equal entries), whereas the log-likelihood's derivative
needs only the eigenvalues and the eigenvectors themselves. The rule is linear in the tangents, so reverse mode
(its transpose) works as well as forward mode.
"""

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpyro.distributions as dist
from numpyro.distributions import constraints

from zoo.multioutput.base import check_positive

Array = Any


class WhitenedEigen(NamedTuple):
    """Eigendecompositions of the whitened ICM covariance. s (P,) = noise^-1/2; lb (P,), Ub (P, P) of B~; lx (N,),
    Ux (N, N) of K_x; S (N, P) = lx_n lb_p + 1, the eigenvalues of B~ kron K_x + I (as a matrix over (n, p))."""

    s: Array
    lb: Array
    Ub: Array
    lx: Array
    Ux: Array
    S: Array


def whitened_eigen(B: Array, Kx: Array, noise: Array) -> WhitenedEigen:
    """B (P, P), Kx (N, N), noise (P,) -> ``WhitenedEigen``."""
    s = 1.0 / jnp.sqrt(noise)
    lb, Ub = jnp.linalg.eigh(B * s[:, None] * s[None, :])
    lx, Ux = jnp.linalg.eigh(Kx)
    # Both factors are positive semi-definite; rounding can leave eigenvalues of -1e-16 relative size, which we clip
    # so that S >= 1 holds exactly (the change is below rounding of the log-determinant).
    lb, lx = jnp.maximum(lb, 0.0), jnp.maximum(lx, 0.0)
    return WhitenedEigen(s, lb, Ub, lx, Ux, lx[:, None] * lb[None, :] + 1.0)


def _alpha(e: WhitenedEigen, Y: Array) -> tuple[Array, Array]:
    """(Z, A): Z = U_x^T (Y D^-1/2) U_b and A = Sigma^-1 vec(Y) as an (N, P) matrix."""
    Z = e.Ux.T @ (Y * e.s[None, :]) @ e.Ub
    A = (e.Ux @ (Z / e.S) @ e.Ub.T) * e.s[None, :]
    return Z, A


def _value(e: WhitenedEigen, Z: Array, noise: Array) -> Array:
    N, P = Z.shape
    logdet = N * jnp.sum(jnp.log(noise)) + jnp.sum(jnp.log(e.S))
    return -0.5 * (jnp.sum(Z**2 / e.S) + logdet + N * P * math.log(2.0 * math.pi))


@jax.custom_jvp
def kronecker_log_likelihood(B: Array, Kx: Array, noise: Array, Y: Array) -> Array:
    """log N(vec Y | 0, B kron Kx + diag(noise) kron I_N), exact for any noise (P,) > 0.

    B (P, P) and Kx (N, N) positive semi-definite, Y (N, P) (column p = output p at the N shared inputs)."""
    e = whitened_eigen(B, Kx, noise)
    Z, _ = _alpha(e, Y)
    return _value(e, Z, noise)


def gradients(B: Array, Kx: Array, noise: Array, Y: Array) -> tuple[Array, Array, Array, Array, Array]:
    """(value, dL/dB (P, P), dL/dKx (N, N), dL/dnoise (P,), dL/dY (N, P)), all from one pair of eigendecompositions.

    With G = (alpha alpha^T - Sigma^-1) / 2 in blocks G_pq (N, N) and A the (N, P) matrix of alpha:
    dL/dKx = sum_pq B_pq G_pq = (A B A^T - U_x diag(sum_p lb_p / S_np) U_x^T) / 2,
    dL/dB_pq = tr(G_pq K_x) = (A^T K_x A - (s s^T) o U_b diag(sum_n lx_n / S_np) U_b^T)_pq / 2,
    dL/dnoise_p = tr(G_pp) = (|A_p|^2 - s_p^2 sum_q U_b,pq^2 sum_n 1 / S_nq) / 2, dL/dY = -A.
    """
    e = whitened_eigen(B, Kx, noise)
    Z, A = _alpha(e, Y)
    value = _value(e, Z, noise)
    wx = jnp.sum(e.lb[None, :] / e.S, axis=1)  # (N,)
    dKx = 0.5 * (A @ B @ A.T - (e.Ux * wx[None, :]) @ e.Ux.T)
    wb = jnp.sum(e.lx[:, None] / e.S, axis=0)  # (P,)
    dB = 0.5 * (A.T @ Kx @ A - jnp.outer(e.s, e.s) * ((e.Ub * wb[None, :]) @ e.Ub.T))
    w1 = jnp.sum(1.0 / e.S, axis=0)  # (P,)
    dnoise = 0.5 * (jnp.sum(A**2, axis=0) - e.s**2 * (e.Ub**2 @ w1))
    return value, dB, dKx, dnoise, -A


@kronecker_log_likelihood.defjvp
def _kronecker_jvp(primals, tangents):
    B, Kx, noise, Y = primals
    tB, tKx, tnoise, tY = tangents
    value, dB, dKx, dnoise, dY = gradients(B, Kx, noise, Y)
    # The function sees sym(B), sym(Kx) (eigh symmetrises its input) and the gradients are symmetric, so this inner
    # product is the derivative for any tangent, symmetric or not.
    tangent = jnp.sum(dB * tB) + jnp.sum(dKx * tKx) + jnp.sum(dnoise * tnoise) + jnp.sum(dY * tY)
    return value, tangent


def kronecker_sample(key: Array, B: Array, Kx: Array, noise: Array, sample_shape: tuple = ()) -> Array:
    """Draws of Y (..., N, P) with vec Y ~ N(0, B kron Kx + diag(noise) kron I): Y = U_x (E o sqrt(S)) U_b^T D^1/2,
    E standard normal (the same whitened eigenbasis as the likelihood)."""
    e = whitened_eigen(B, Kx, noise)
    E = jax.random.normal(key, (*sample_shape, *e.S.shape))
    return (e.Ux @ (E * jnp.sqrt(e.S)) @ e.Ub.T) / e.s


class KroneckerNormal(dist.Distribution):
    """Y (N, P) with vec Y ~ N(0, B kron K_x + diag(noise) kron I_N): log density by ``kronecker_log_likelihood``."""

    support = constraints.real_matrix
    arg_constraints = {}

    def __init__(self, B: Array, Kx: Array, noise: Array, validate_args: bool | None = None):
        noise = check_positive("noise", noise, "the Kronecker path whitens by noise^-1/2; use the dense likelihood")
        self.B, self.Kx, self.noise = B, Kx, noise
        super().__init__(batch_shape=(), event_shape=(Kx.shape[-1], B.shape[-1]), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        return kronecker_sample(key, self.B, self.Kx, self.noise, tuple(sample_shape))

    def log_prob(self, value):
        return kronecker_log_likelihood(self.B, self.Kx, self.noise, value)
