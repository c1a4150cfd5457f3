"""What the Gaussian approximations of a latent GP (``laplace``, ``ep``) share: likelihood derivatives, the
Gaussian over f given site precisions, draws from it, predictions, and the engine wrapper that turns a fit into an
``EngineOutput`` (docs/sources/nonconjugate.md#shared).

A fit is f ~ N(mu, Sigma) with Sigma = (K^-1 + W)^-1 for a diagonal W >= 0 of site precisions (Laplace: the negative
Hessian of log p(y|f) at the mode; EP: the site precisions tau~). With L_K L_K^T = K,
K^-1 + W = L_K^-T C L_K^-1, C = I + L_K^T W L_K, so Sigma = L_K C^-1 L_K^T and draws are mu + L_K L_C^-T eps: one
Cholesky of a matrix whose eigenvalues are >= 1 (R&W sec. 3.4.3 use B = I + W^1/2 K W^1/2 for the same reason;
C is similar to B, and |C| = |B|). C stays positive definite for a negative W as long as K^-1 + W is, which is what
the Student-t Laplace fit needs.
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_solve, solve_triangular

from inference.core.api import EngineOutput

Array = Any


__all__ = ["GaussianFit", "b_factor", "b_variance", "c_factor", "covariance", "derivatives", "draws", "output"]


def derivatives(log_likelihood, f: Array) -> tuple[Array, Array, Array]:
    """(log p(y_i|f_i), d/df_i, d^2/df_i^2), each (N,), by autodiff of the elementwise log-likelihood: its Hessian
    is diagonal, so the Hessian-vector product with ones is the diagonal."""

    def total(g):
        return log_likelihood(g).sum()

    grad = jax.grad(total)
    d1, d2 = jax.jvp(grad, (f,), (jnp.ones_like(f),))
    return log_likelihood(f), d1, d2


def c_factor(L_K: Array, w: Array) -> Array:
    """Lower Cholesky factor of C = I + L_K^T diag(w) L_K (NaN where C is not positive definite)."""
    C = jnp.eye(L_K.shape[0]) + (L_K.T * w) @ L_K
    return jnp.linalg.cholesky(C)


def b_factor(K: Array, w: Array) -> Array:
    """Lower Cholesky factor of B = I + W^1/2 K W^1/2 (R&W eq. 3.26), for w >= 0."""
    s = jnp.sqrt(w)
    return jnp.linalg.cholesky(jnp.eye(K.shape[0]) + s[:, None] * K * s[None, :])


def b_variance(L_B: Array, w: Array, k_cross: Array, k_diag: Array) -> Array:
    """Predictive variance k** - v^T v, v = L_B \\ (W^1/2 k*) (R&W Alg. 3.2 lines 5-6, Alg. 3.6 lines 5-6): (M,).
    k_cross: K(X, X*) (N, M)."""
    v = solve_triangular(L_B, jnp.sqrt(w)[:, None] * k_cross, lower=True)
    return k_diag - jnp.sum(v**2, axis=0)


class GaussianFit(NamedTuple):
    """f | y ~ N(mean, L_K C^-1 L_K^T) (module docstring); ``test_mean``, ``test_var`` of f* and ``y_test_mean`` =
    E[y*] at the test inputs (empty arrays without test inputs); ``stats``: per-fit scalars reported as point
    estimates (iterations, convergence, ...)."""

    mean: Array
    L_K: Array
    L_C: Array
    log_evidence: Array
    test_mean: Array
    test_var: Array
    y_test_mean: Array
    stats: dict


def draws(key, fit: GaussianFit, num_chains: int, num_samples: int) -> Array:
    """(num_chains, num_samples, N) draws of f from the fit: mean + L_K L_C^-T eps."""
    eps = jax.random.normal(key, (num_chains, num_samples, fit.mean.shape[0]))
    z = solve_triangular(fit.L_C, eps.reshape(-1, fit.mean.shape[0]).T, lower=True, trans=1)
    return (fit.mean[:, None] + fit.L_K @ z).T.reshape(eps.shape)


def covariance(fit: GaussianFit) -> Array:
    """Sigma = L_K C^-1 L_K^T, for tests and reports (N, N)."""
    return fit.L_K @ cho_solve((fit.L_C, True), fit.L_K.T)


def output(fit: GaussianFit, sites: dict, num_chains: int, extra: dict | None = None) -> EngineOutput:
    """The EngineOutput of a Gaussian fit: draws of the latent sites (each (chain, draw, ...)), and point estimates
    ``f_mean`` (the fit's mean of f), ``f_test_mean``, ``f_test_var``, ``y_test_mean`` (with test inputs), the
    fit's ``stats`` and ``extra`` (e.g. type-II ML hyperparameters), one row per chain (all equal: the fit is
    deterministic)."""
    point = {"f_mean": fit.mean, **fit.stats, **(extra or {})}
    if fit.test_mean.shape[0]:
        point.update(f_test_mean=fit.test_mean, f_test_var=fit.test_var, y_test_mean=fit.y_test_mean)
    point = {name: jnp.broadcast_to(value, (num_chains, *jnp.shape(value))) for name, value in point.items()}
    return EngineOutput(posterior=sites, point_estimates=point, log_evidence=float(fit.log_evidence))
