"""Shared GP algebra: Cholesky with jitter, Gaussian conditioning, exact GP posterior and evidence.

All in float64 via Cholesky factors and triangular solves; no explicit inverses. Equations: Franzese 2024,
eqs. 3.7, 4.6-4.14, 6.2; Kaiser 2021, eqs. 2.41-2.49 (docs/sources/franzese.md#gp-regression,
docs/sources/kaiser.md#gp-regression).
"""

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_solve, solve_triangular
from numpyro import distributions as dist
from numpyro.distributions import constraints

from zoo.eager import compiled_when_eager
from zoo.kernels import Kernel

Array = Any

JITTER = 1e-6  # relative to the mean diagonal (1e-6 sigma_v^2, docs/sources/franzese.md#conventions)


@compiled_when_eager
def add_jitter(K: Array, jitter: float = JITTER) -> Array:
    """K + jitter * mean(diag K) * I, so that the Cholesky factor exists for nearly singular K."""
    scale = jnp.mean(jnp.diagonal(K))
    return K + jitter * scale * jnp.eye(K.shape[-1])


@compiled_when_eager
def cholesky(K: Array, jitter: float = JITTER) -> Array:
    """Lower Cholesky factor of K plus relative jitter, always added: (n, n).

    For matrices that are singular up to rounding by construction (K_ZZ of inducing inputs, noise-free prior Grams,
    GP-SSM transition Grams): the jitter is part of those models. For the exact evidence of a GP with noise use
    ``cholesky_with_jitter``, which adds jitter only where the factorisation fails.
    """
    return jnp.linalg.cholesky(add_jitter(K, jitter))


@partial(jax.custom_jvp, nondiff_argnums=(1,))
def cholesky_with_jitter(K: Array, jitter: float = JITTER) -> tuple[Array, Array]:
    """(L, added): the lower Cholesky factor of K (n, n), without jitter when K factorises, else of
    K + jitter * mean(diag K) I; ``added`` is the absolute jitter added to the diagonal (0.0 when none).

    Failure is a NaN in the factor (LAPACK's potrf on a matrix that is not numerically positive definite); the retry
    is a ``lax.cond`` (under ``vmap`` a select of both factors). The derivative is the Cholesky derivative of the
    factor actually returned (Murray 2016: dL = L Phi(L^-1 dA L^-T)), so a failed first attempt never puts NaN into
    gradients.
    """
    L = jnp.linalg.cholesky(K)
    failed = jnp.isnan(L).any()
    L = jax.lax.cond(failed, lambda: jnp.linalg.cholesky(add_jitter(K, jitter)), lambda: L)
    return L, jnp.where(failed, jitter * jnp.mean(jnp.diagonal(K)), 0.0)


@cholesky_with_jitter.defjvp
def _cholesky_with_jitter_jvp(jitter, primals, tangents):
    (K,), (dK,) = primals, tangents
    L, added = cholesky_with_jitter(K, jitter)
    jittered = added > 0.0
    d_added = jnp.where(jittered, jitter * jnp.mean(jnp.diagonal(dK)), 0.0)
    dA = 0.5 * (dK + dK.T) + d_added * jnp.eye(K.shape[-1])
    inner = solve_triangular(L, solve_triangular(L, dA, lower=True).T, lower=True).T  # L^-1 dA L^-T
    phi = jnp.tril(inner) - 0.5 * jnp.diag(jnp.diagonal(inner))
    return (L, added), (L @ phi, d_added)


# Tiny matrices (per-particle covariances of low-dimensional SSMs): unrolled in plain jnp so that a batch of N of them
# is a few elementwise ops XLA fuses, not N LAPACK calls (on CPU a batched potrf/trsm is a loop of one LAPACK call per
# matrix, the dominant cost of a particle step with per-particle covariances). Same algorithm, same rounding order.
UNROLL_MAX = 3


def small_cholesky(A: Array) -> Array:
    """Lower Cholesky factor of A (..., n, n), no jitter: unrolled (Cholesky-Banachiewicz) for n <= UNROLL_MAX, else
    LAPACK. Like ``jnp.linalg.cholesky``, NaN where A is not positive definite."""
    n = A.shape[-1]
    if n > UNROLL_MAX:
        return jnp.linalg.cholesky(A)
    L = [[jnp.zeros_like(A[..., 0, 0]) for _ in range(n)] for _ in range(n)]
    for j in range(n):
        L[j][j] = jnp.sqrt(A[..., j, j] - sum((L[j][k] ** 2 for k in range(j)), jnp.zeros_like(A[..., 0, 0])))
        for i in range(j + 1, n):
            dot = sum((L[i][k] * L[j][k] for k in range(j)), jnp.zeros_like(A[..., 0, 0]))
            L[i][j] = (A[..., i, j] - dot) / L[j][j]
    return jnp.stack([jnp.stack(row, -1) for row in L], -2)


def small_solve_lower(L: Array, b: Array) -> Array:
    """z with L z = b for lower-triangular L (..., n, n) and b (..., n): unrolled forward substitution for
    n <= UNROLL_MAX, else ``solve_triangular``."""
    n = L.shape[-1]
    if n > UNROLL_MAX:
        return solve_triangular(L, b[..., None], lower=True)[..., 0]
    z = []
    for i in range(n):
        dot = sum((L[..., i, k] * z[k] for k in range(i)), jnp.zeros_like(b[..., 0]))
        z.append((b[..., i] - dot) / L[..., i, i])
    return jnp.stack(z, -1)


@compiled_when_eager
def mvn_logpdf_chol(x: Array, mean: Array, L: Array) -> Array:
    """log N(x | mean, L L^T) for a lower Cholesky factor L."""
    alpha = solve_triangular(L, x - mean, lower=True)
    n = x.shape[-1]
    return -0.5 * (alpha @ alpha) - jnp.sum(jnp.log(jnp.diagonal(L))) - 0.5 * n * jnp.log(2.0 * jnp.pi)


class GaussianPosterior(NamedTuple):
    mean: Array  # (n,)
    cov: Array  # (n, n)


@compiled_when_eager
def linear_gaussian_posterior(
    prior_cov: Array, design: Array, obs: Array, noise_var: Array
) -> tuple[GaussianPosterior, Array]:
    """Posterior of w ~ N(0, prior_cov) given obs = design @ w + N(0, noise_var I), and log p(obs).

    Uses the precision form A = design^T design / noise + prior_cov^{-1} (R&W eq. 2.8, Franzese 1.3),
    factorised by Cholesky; shapes: prior_cov (d, d), design (n, d), obs (n,).
    """
    Lp = jnp.linalg.cholesky(prior_cov)
    # Whiten: w = Lp v, v ~ N(0, I); then A_v = I + B^T B / noise with B = design Lp.
    B = design @ Lp
    d = prior_cov.shape[0]
    LA = jnp.linalg.cholesky(jnp.eye(d) + B.T @ B / noise_var)
    mean_v = cho_solve((LA, True), B.T @ obs / noise_var)
    LA_inv_T = solve_triangular(LA, jnp.eye(d), lower=True).T  # columns span cov_v = LA^-T LA^-1
    cov_sqrt = Lp @ LA_inv_T
    posterior = GaussianPosterior(Lp @ mean_v, cov_sqrt @ cov_sqrt.T)
    log_evidence = mvn_logpdf_chol(
        obs, jnp.zeros_like(obs), jnp.linalg.cholesky(B @ B.T + noise_var * jnp.eye(obs.shape[0]))
    )
    return posterior, log_evidence


@partial(jax.custom_jvp, nondiff_argnums=(2,))
def gaussian_log_evidence(r: Array, K: Array, jitter: float = JITTER) -> tuple[Array, Array]:
    """(log N(r | 0, K), jitter added): r (n,), K (n, n); K is factorised by ``cholesky_with_jitter``.

    The derivative is written by hand (Rasmussen & Williams eq. 5.9): d log N = -a.dr + 1/2 tr((a a^T - K^-1) dK)
    with a = K^-1 r. Differentiating through the Cholesky instead transposes its derivative (two triangular solves
    with n right-hand sides and a dense product: 4 n^3 flops on top of the factor's n^3 / 3); here K^-1 costs two
    triangular solves against the identity (2 n^3), so a gradient executes 2.33 n^3 flops rather than 4.33 n^3
    (docs/performance.md#nuts-data-size). A JVP rather than a VJP so that forward mode (``jax.hessian``) works too.
    When the factorisation needed jitter, the value and derivative are those of K + added I, as
    ``cholesky_with_jitter`` defines them.
    """
    L, added = cholesky_with_jitter(K, jitter)
    return mvn_logpdf_chol(r, jnp.zeros_like(r), L), added


@gaussian_log_evidence.defjvp
def _gaussian_log_evidence_jvp(jitter, primals, tangents):
    (r, K), (dr, dK) = primals, tangents
    L, added = cholesky_with_jitter(K, jitter)
    value = mvn_logpdf_chol(r, jnp.zeros_like(r), L)
    alpha = cho_solve((L, True), r)
    outer_minus_inverse = jnp.outer(alpha, alpha) - cho_solve((L, True), jnp.eye(r.shape[0]))
    d_added = jnp.where(added > 0.0, jitter * jnp.mean(jnp.diagonal(dK)), 0.0)
    d_value = -alpha @ dr + 0.5 * jnp.sum(outer_minus_inverse * dK) + 0.5 * jnp.trace(outer_minus_inverse) * d_added
    return (value, added), (d_value, d_added)


def log_marginal_likelihood(
    kernel: Kernel, X: Array, y: Array, noise_var: Array, mean: Array = 0.0, return_jitter: bool = False
) -> Array:
    """log N(y | mean, K + noise I) (Franzese eq. 6.2, Kaiser eq. 2.49 negated), exact: jitter only if K + noise I
    does not factorise (``cholesky_with_jitter``). With ``return_jitter`` the pair (value, jitter added)."""
    K = kernel(X) + noise_var * jnp.eye(y.shape[0])
    value, added = gaussian_log_evidence(y - jnp.broadcast_to(mean, y.shape), K)
    return (value, added) if return_jitter else value


class GaussianEvidence(dist.Distribution):
    """N(loc, K) over (n,) vectors, K (n, n), loc a scalar or (n,), whose log density is ``gaussian_log_evidence`` of
    the residual (its derivative is written by hand: half the flops of differentiating through the Cholesky). For the
    evidence site of collapsed GP models; sampling draws loc + L eps, L the factor ``cholesky_with_jitter`` gives."""

    arg_constraints = {"covariance": constraints.positive_definite, "loc": constraints.real_vector}
    support = constraints.real_vector

    def __init__(self, covariance: Array, loc: Array = 0.0, validate_args=None):
        if jnp.ndim(covariance) != 2:
            raise ValueError(f"GaussianEvidence takes one (n, n) covariance, got shape {jnp.shape(covariance)}")
        self.covariance = covariance
        self.loc = jnp.broadcast_to(loc, covariance.shape[-1:])
        if isinstance(covariance, jax.core.Tracer):
            # In a trace NumPyro's argument check can reject nothing (it acts on concrete results only), yet it
            # evaluates its constants eagerly (``jax.ensure_compile_time_eval``): ~15 small XLA programs per size
            # (docs/performance.md#first-call-eager). A concrete covariance is still checked.
            validate_args = False
        super().__init__(batch_shape=(), event_shape=covariance.shape[-1:], validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        L = cholesky_with_jitter(self.covariance)[0]
        eps = jax.random.normal(key, (*sample_shape, *self.event_shape))
        return self.loc + eps @ L.T

    def log_prob(self, value):
        residual = value - self.loc
        if jnp.ndim(residual) == 1:
            return gaussian_log_evidence(residual, self.covariance)[0]
        flat = residual.reshape(-1, residual.shape[-1])
        return jax.vmap(lambda r: gaussian_log_evidence(r, self.covariance)[0])(flat).reshape(residual.shape[:-1])


def predict(
    kernel: Kernel, X: Array, y: Array, noise_var: Array, X_new: Array, full_cov: bool = True
) -> GaussianPosterior:
    """Posterior of f at X_new (Franzese eqs. 4.13-4.14); add noise_var for y_new.

    Returns mean (m,) and covariance (m, m), or the variances (m,) when ``full_cov`` is False.
    """
    L = cholesky_with_jitter(kernel(X) + noise_var * jnp.eye(y.shape[0]))[0]
    Ks = kernel(X, X_new)
    alpha = cho_solve((L, True), y)
    V = solve_triangular(L, Ks, lower=True)
    mean = Ks.T @ alpha
    if full_cov:
        return GaussianPosterior(mean, kernel(X_new) - V.T @ V)
    return GaussianPosterior(mean, kernel.diag(X_new) - jnp.sum(V**2, 0))


def draws_in_span(K: Array, key: Array, num: int, jitter: float = JITTER) -> Array:
    """``num`` draws f = K L^-T z, L L^T = K + jitter * mean(diag K) I, z ~ N(0, I): (num, n).

    Each draw is a combination of K's columns, so two inputs whose rows of K are equal (x and g(x) under an invariant
    kernel, x and x + p under a periodic one) get equal values to rounding, where L z would differ by the jitter's
    independent noise (~1e-3 sd at the default). The covariance is K (K + eps I)^-1 K = K - eps K (K + eps I)^-1,
    within eps = jitter * mean(diag K) of K in every entry: for prior draws of rank-deficient Grams (symmetric and
    periodic kernels on grids closed under their group).
    """
    L = cholesky(K, jitter)
    z = jax.random.normal(key, (K.shape[0], num), dtype=K.dtype)
    w = solve_triangular(L.T, z, lower=False)  # (n, num)
    # A row-wise reduction sums every row in the same order (a matrix product may tile rows differently), so equal
    # rows of K give bitwise equal values.
    return jnp.sum(K[None, :, :] * w.T[:, None, :], axis=-1)
