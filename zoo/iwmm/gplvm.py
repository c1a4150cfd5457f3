"""The GP-LVM warping of the iWMM: D independent GPs with one SE-ARD + white-noise kernel map latent X to Y.

Duvenaud 2014, eqs. 7.1-7.5: p(Y | X, theta) = prod_d N(Y_:d | 0, K), K = k(X, X) + noise I. The thesis's kernel is
the isotropic SE (E.13); ARD lengthscales (one per latent dimension) are this project's choice, reducing to it when
they are equal (docs/sources/duvenaud.md#iwmm-defaults).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_solve, solve_triangular

from zoo.gp import cholesky_with_jitter
from zoo.kernels.base import scaled_sqdist

Array = jax.Array


class WarpParams(NamedTuple):
    """lengthscale (Q,), variance (), noise () of the SE-ARD + white-noise kernel (constrained values)."""

    lengthscale: Array
    variance: Array
    noise: Array


def gram(X1: Array, X2: Array, theta: WarpParams) -> Array:
    """SE-ARD cross-covariance (N1, N2), without the noise."""
    return theta.variance * jnp.exp(-0.5 * scaled_sqdist(X1, X2, theta.lengthscale))


def noisy_gram(X: Array, theta: WarpParams) -> Array:
    """K = k(X, X) + noise I (N, N)."""
    return gram(X, X, theta) + theta.noise * jnp.eye(X.shape[0])


def log_likelihood(Y: Array, X: Array, theta: WarpParams) -> tuple[Array, Array]:
    """(log p(Y | X, theta), jitter added) for Y (N, D), X (N, Q) (eq. 7.5): D independent columns sharing K."""
    N, D = Y.shape
    L, jitter = cholesky_with_jitter(noisy_gram(X, theta))
    W = solve_triangular(L, Y, lower=True)
    log_det = 2.0 * jnp.sum(jnp.log(jnp.diagonal(L)))
    return -0.5 * (N * D * jnp.log(2.0 * jnp.pi) + D * log_det + jnp.sum(W * W)), jitter


def predictive(Y: Array, X: Array, theta: WarpParams, X_new: Array) -> tuple[Array, Array]:
    """GP predictive of y* at latent points X_new (S, Q): mean (S, D) and variance (S,), the variance including the
    white noise (step 5 of E.15); every output dimension shares the variance."""
    L, _ = cholesky_with_jitter(noisy_gram(X, theta))
    Ks = gram(X, X_new, theta)  # (N, S)
    mean = Ks.T @ cho_solve((L, True), Y)
    V = solve_triangular(L, Ks, lower=True)
    var = theta.variance + theta.noise - jnp.sum(V * V, axis=0)
    return mean, var
