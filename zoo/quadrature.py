"""Bayesian quadrature: the posterior over an integral Z = int f(x) p(x) dx under a GP prior on f, in closed form for
the SE kernel and Gaussian (mixture) measures (Duvenaud 2014, ch. 8; docs/sources/duvenaud.md#bayesian-quadrature).

- Kernel means and prior variance (8.65-8.66): the SE kernel is k(x, x') = h N(x | x', A) with A = diag(l^2) and
  h = sigma^2 (2 pi)^(D/2) |A|^(1/2); under p = N(b, B), z_i = int k(x, x_i) p(x) dx = h N(x_i | b, A + B) (8.36 with
  the integral of ProdNormZ 8.39, which prints the Gaussian product before integrating: an erratum) and
  V_prior = h N(0 | 0, A + 2 B) (8.80's form). A mixture sum_j a_j N(m_j, C_j) sums these term by term.
- The integral's posterior (8.63-8.64): E[Z | y] = mu M + z^T K^-1 (y - mu), V[Z | y] = V_prior - z^T K^-1 z, with
  a constant prior mean mu (8.33) and M the measure's mass (1 for a density).
- The log-GP model of a non-negative integrand (ch. 8.1-8.2, the thesis's own approximation, not WSABI): a GP on
  log l; the posterior mean of l = exp(log l) is m_exp(x) = exp(m(x) + V(x) / 2) (8.7-8.9); a second GP with a
  constant mean mu_l is put through m_exp at candidate points x_c, giving l_bar (8.10, 8.27-8.30), and
  Z_0 = mu_l M + sum_i beta_i z_i (8.11, 8.33-8.35) is the mean of the integral under the linearisation of Z around
  the posterior mean of log l (8.12-8.23). Its variance (8.49, closed form 8.52-8.57) is the BQ variance of the
  log-GP under the measure w(x) = l_bar(x) p(x); w is again a (signed) Gaussian mixture, so that variance is
  ``integral_posterior``'s with w in place of p.
- Sequential design (8.14): the node that most reduces V[Z], by the rank-one update
  V[Z | X, c] = V[Z | X] - Cov(Z, f(c) | X)^2 / Var(f(c) | X), over a candidate set (no optimiser: a search).
- Marginals over nuisance inputs (ch. 8.13, eqs. 8.104 and 8.136): the posterior of g(x) = int f(x, y) p(y) dy,
  mean sum_i beta_i k_x(x, X_i) z_i^y and covariance k_x(x, x') V_prior^y - z(x)^T K^-1 z(x').

Everything in float64 through Cholesky factors (``zoo.gp.cholesky_with_jitter``: jitter only when K fails to
factorise, reported). Shapes: inputs (n, D), measures with J components.
"""

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_solve, solve_triangular

from zoo import gp
from zoo.kernels import KernelError, SquaredExponential, as_inputs

Array = Any

__all__ = [
    "Integral",
    "LogIntegral",
    "Marginal",
    "Mixture",
    "gaussian",
    "greedy_design",
    "integral_posterior",
    "kernel_mean",
    "log_integral_posterior",
    "marginal_posterior",
    "prior_variance",
    "se_as_gaussian",
    "variance_reduction",
    "weighted_measure",
]


RESOLVED = 1e-10  # posterior / prior variance of f(c) below which f(c) counts as known (relative rounding of K's Schur
# complements is ~1e-16 x its condition number)


class Mixture(NamedTuple):
    """A measure sum_j weights_j N(means_j, covs_j): weights (J,), means (J, D), covs (J, D, D). Weights may be
    negative (l_bar p of the log-GP model)."""

    weights: Array
    means: Array
    covs: Array


class Integral(NamedTuple):
    """Posterior of Z: mean, variance, and the jitter added to K (0 when none)."""

    mean: Array
    var: Array
    jitter: Array


class LogIntegral(NamedTuple):
    """Log-GP quadrature: Z_0 (8.23), the linearised variance (8.49), m_exp at the candidates (8.9), beta (8.30),
    and w = l_bar p (the measure under which the log-GP's BQ variance is 8.49; ``variance_reduction`` under it
    designs the next node)."""

    mean: Array
    var: Array
    m_exp: Array
    beta: Array
    measure: Mixture


class Marginal(NamedTuple):
    """Posterior of g(x) = int f(x, y) p(y) dy at new x: mean (m,), covariance (m, m)."""

    mean: Array
    cov: Array


def gaussian(mean: Array, cov: Array) -> Mixture:
    """N(mean, cov) as a one-component mixture; ``cov`` may be a scalar, (D,) variances or (D, D)."""
    mean = jnp.atleast_1d(jnp.asarray(mean, float))
    cov = jnp.asarray(cov, float)
    cov = cov * jnp.eye(mean.size) if cov.ndim == 0 else (jnp.diag(cov) if cov.ndim == 1 else cov)
    return Mixture(jnp.ones(1), mean[None], cov[None])


def se_as_gaussian(kernel: SquaredExponential, D: int) -> tuple[Array, Array]:
    """(h, A) with k(x, x') = h N(x | x', A): A = diag(l^2) (D, D), h = sigma^2 (2 pi)^(D/2) |A|^(1/2)."""
    if type(kernel) is not SquaredExponential:
        raise KernelError(f"closed-form kernel means are for the SE kernel, got {kernel}.")
    ell2 = jnp.broadcast_to(jnp.asarray(kernel.lengthscale, float) ** 2, (D,))
    h = kernel.variance * (2.0 * jnp.pi) ** (D / 2.0) * jnp.sqrt(jnp.prod(ell2))
    return h, jnp.diag(ell2)


def normal_pdf(X: Array, means: Array, covs: Array) -> Array:
    """N(X_i | means_j, covs_j) for every pair: X (n, D), means (J, D), covs (J, D, D) -> (J, n)."""

    def one(m, S):
        L = jnp.linalg.cholesky(S)
        r = solve_triangular(L, (X - m).T, lower=True)  # (D, n)
        logdet = 2.0 * jnp.sum(jnp.log(jnp.diagonal(L)))
        return jnp.exp(-0.5 * jnp.sum(r**2, 0) - 0.5 * logdet - 0.5 * X.shape[1] * jnp.log(2.0 * jnp.pi))

    return jax.vmap(one)(means, covs)


@jax.jit
def kernel_mean(kernel: SquaredExponential, measure: Mixture, X: Array) -> Array:
    """z_i = int k(x, x_i) dmu(x) = sum_j a_j h N(x_i | m_j, A + C_j) (8.65, 8.36): (n,)."""
    X = as_inputs(X)
    h, A = se_as_gaussian(kernel, X.shape[1])
    return h * measure.weights @ normal_pdf(X, measure.means, measure.covs + A)


@jax.jit
def prior_variance(kernel: SquaredExponential, measure: Mixture) -> Array:
    """V_prior = iint k dmu dmu = sum_{j,j'} a_j a_j' h N(m_j | m_j', A + C_j + C_j') (8.66; 8.80 for one Gaussian)."""
    D = measure.means.shape[1]
    h, A = se_as_gaussian(kernel, D)

    def row(m, C):
        return normal_pdf(m[None], measure.means, measure.covs + C + A)[:, 0]  # (J,)

    pair = jax.vmap(row)(measure.means, measure.covs)  # (J, J)
    return h * measure.weights @ pair @ measure.weights


@jax.jit
def integral_posterior(
    kernel: SquaredExponential, measure: Mixture, X: Array, y: Array, noise: Array = 0.0, prior_mean: Array = 0.0
) -> Integral:
    """The posterior of Z = int f dmu given y = f(X) (+ noise): mean and variance (8.63-8.64, 8.33)."""
    X = as_inputs(X)
    L, added = gp.cholesky_with_jitter(kernel(X) + noise * jnp.eye(X.shape[0]))
    z = kernel_mean(kernel, measure, X)
    mean = prior_mean * jnp.sum(measure.weights) + z @ cho_solve((L, True), y - prior_mean)
    v = solve_triangular(L, z, lower=True)
    return Integral(mean, prior_variance(kernel, measure) - v @ v, added)


@jax.jit
def variance_reduction(
    kernel: SquaredExponential, measure: Mixture, X: Array, candidates: Array, noise: Array = 0.0
) -> Array:
    """V[Z | X] - V[Z | X, c] = Cov(Z, f(c) | X)^2 / (Var(f(c) | X) + noise) for every candidate c: (C,).
    X may have no rows (the prior)."""
    X, C = as_inputs(X), as_inputs(candidates)
    z_c = kernel_mean(kernel, measure, C)
    prior_c = kernel.diag(C)
    var_c = prior_c
    if X.shape[0]:
        L = gp.cholesky_with_jitter(kernel(X) + noise * jnp.eye(X.shape[0]))[0]
        V = solve_triangular(L, kernel(X, C), lower=True)  # (n, C)
        v = solve_triangular(L, kernel_mean(kernel, measure, X), lower=True)
        z_c, var_c = z_c - v @ V, var_c - jnp.sum(V**2, 0)
    return _gain(z_c, var_c, prior_c, noise)


def _gain(cov_z: Array, var: Array, prior: Array, noise: Array) -> Array:
    """cov_z^2 / (var + noise), and 0 where f(c) is already known to rounding (var below RESOLVED x its prior
    variance, e.g. c is a node): there the ratio is rounding over rounding."""
    known = var + noise <= RESOLVED * prior
    return jnp.where(known, 0.0, cov_z**2 / jnp.where(known, 1.0, var + noise))


def greedy_design(
    kernel: SquaredExponential,
    measure: Mixture,
    candidates: Array,
    num: int,
    noise: Array = 0.0,
    X: Array | None = None,
) -> Array:
    """Indices of ``num`` distinct candidates chosen one at a time, each the largest reduction of V[Z] given the nodes
    X (none by default) and those chosen before (8.14: minimise the integral's variance): (num,) ints. V[Z] does not
    depend on the values f(X), so at fixed hyperparameters the design needs no evaluations. One compiled loop of
    rank-one updates of the joint posterior of (f(candidates), Z): after choosing b,
    Sigma <- Sigma - Sigma_b Sigma_b^T / Sigma_bb and s <- s - Sigma_b s_b / Sigma_bb, with s = Cov(f(c), Z)."""
    C = as_inputs(candidates)
    if not 1 <= num <= C.shape[0]:
        raise KernelError(f"greedy_design chooses 1 to {C.shape[0]} of the candidates, asked for {num}.")
    Sigma, s = kernel(C), kernel_mean(kernel, measure, C)
    if X is not None and as_inputs(X).shape[0]:
        Sigma, s = _condition(kernel, measure, as_inputs(X), C, noise)
    return _greedy(Sigma, s, kernel.diag(C), num, noise)


@jax.jit
def _condition(kernel, measure, X, C, noise):
    """Posterior covariance of f(C) and Cov(f(C), Z) given f(X): ((m, m), (m,))."""
    L = gp.cholesky_with_jitter(kernel(X) + noise * jnp.eye(X.shape[0]))[0]
    V = solve_triangular(L, kernel(X, C), lower=True)
    v = solve_triangular(L, kernel_mean(kernel, measure, X), lower=True)
    return kernel(C) - V.T @ V, kernel_mean(kernel, measure, C) - v @ V


@partial(jax.jit, static_argnames=("num",))
def _greedy(Sigma, s, prior, num, noise):
    def step(i, state):
        Sigma, s, chosen = state
        taken = jnp.zeros(s.shape[0], bool).at[chosen].set(jnp.arange(num) < i)
        gain = jnp.where(taken, -jnp.inf, _gain(s, jnp.diagonal(Sigma), prior, noise))
        b = jnp.argmax(gain)
        col = Sigma[:, b] / (Sigma[b, b] + noise)
        return Sigma - jnp.outer(col, Sigma[b]), s - col * s[b], chosen.at[i].set(b)

    return jax.lax.fori_loop(0, num, step, (Sigma, s, jnp.zeros(num, int)))[2]


def weighted_measure(ell_kernel: SquaredExponential, candidates: Array, beta: Array, mu: Array, p: Mixture) -> Mixture:
    """w(x) = l_bar(x) p(x) with l_bar(x) = mu + sum_i beta_i k_l(x, c_i) (8.28) as a mixture: mu p, and for every
    candidate i and component j of p the product h N(x | c_i, A) N(x | m_j, C_j) = h N(c_i | m_j, A + C_j) N(x | m_ij,
    C_ij) with m_ij = C_j (A + C_j)^-1 c_i + A (A + C_j)^-1 m_j and C_ij = A (A + C_j)^-1 C_j (the thesis's ProdNormZ,
    8.39), by Cholesky solves with A + C_j."""
    c = as_inputs(candidates)
    h, A = se_as_gaussian(ell_kernel, c.shape[1])
    scale = h * normal_pdf(c, p.means, p.covs + A)  # (J, n_c)

    def component(m, C):
        factor = (jnp.linalg.cholesky(A + C), True)
        cov = A @ cho_solve(factor, C)
        means = (C @ cho_solve(factor, c.T)).T + A @ cho_solve(factor, m)
        return means, 0.5 * (cov + cov.T)

    means, covs = jax.vmap(component)(p.means, p.covs)  # (J, n_c, D), (J, D, D)
    J, n_c, D = means.shape
    weights = (p.weights[:, None] * scale * beta[None, :]).reshape(-1)
    return Mixture(
        jnp.concatenate([mu * p.weights, weights]),
        jnp.concatenate([p.means, means.reshape(-1, D)]),
        jnp.concatenate([p.covs, jnp.repeat(covs, n_c, axis=0)]),
    )


@jax.jit
def log_integral_posterior(
    log_kernel: SquaredExponential,
    measure: Mixture,
    X: Array,
    log_y: Array,
    candidates: Array,
    ell_kernel: SquaredExponential | None = None,
    ell_mean: Array = 0.0,
    noise: Array = 0.0,
    log_mean: Array = 0.0,
) -> LogIntegral:
    """Z_0 and its linearised variance for a non-negative integrand l = exp(log l), observed as log_y = log l(X)
    (ch. 8.1-8.2). ``candidates`` x_c (the thesis's, unspecified; e.g. a grid over the measure's mass) carry m_exp;
    ``ell_kernel`` (default: the log-GP's kernel) and ``ell_mean`` mu_l define l_bar (8.27); ``log_mean`` is the
    constant prior mean of the GP on log l (the thesis does not say; 0 by default). The covariance of log l, and so
    the variance (8.49), does not depend on it."""
    X, c = as_inputs(X), as_inputs(candidates)
    ell_kernel = log_kernel if ell_kernel is None else ell_kernel
    post = gp.predict(log_kernel, X, log_y - log_mean, noise, c, full_cov=False)
    m_exp = jnp.exp(log_mean + post.mean + 0.5 * jnp.maximum(post.cov, 0.0))  # (8.7-8.9)
    L_ell = gp.cholesky_with_jitter(ell_kernel(c))[0]
    beta = cho_solve((L_ell, True), m_exp - ell_mean)  # (8.30)
    z = kernel_mean(ell_kernel, measure, c)
    Z0 = ell_mean * jnp.sum(measure.weights) + beta @ z  # (8.33-8.35)
    w = weighted_measure(ell_kernel, c, beta, ell_mean, measure)
    var = integral_posterior(log_kernel, w, X, log_y - log_mean, noise).var  # (8.49), (8.52-8.57)
    return LogIntegral(Z0, var, m_exp, beta, w)


@partial(jax.jit, static_argnames=("keep",))
def marginal_posterior(
    kernel: SquaredExponential, X: Array, y: Array, keep: tuple[int, ...], measure: Mixture, X_new: Array, noise=0.0
) -> Marginal:
    """Posterior of g(x) = int f(x, y) p(y) dy over the input columns not in ``keep`` (the nuisance y, measure p on
    them), at X_new (m, len(keep)) (ch. 8.13: mean 8.104, covariance 8.136). SE-ARD factorises over columns, so
    k = k_x k_y with the variance in k_x."""
    X = as_inputs(X)
    D = X.shape[1]
    rest = tuple(d for d in range(D) if d not in keep)
    ell = jnp.broadcast_to(jnp.asarray(kernel.lengthscale, float), (D,))
    k_x = SquaredExponential(kernel.variance, ell[jnp.asarray(keep)])
    k_y = SquaredExponential(1.0, ell[jnp.asarray(rest)])
    Xk, Xr = X[:, jnp.asarray(keep)], X[:, jnp.asarray(rest)]
    L = gp.cholesky_with_jitter(kernel(X) + noise * jnp.eye(X.shape[0]))[0]
    z = k_x(as_inputs(X_new), Xk) * kernel_mean(k_y, measure, Xr)[None, :]  # (m, n): z_i(x) of 8.134
    mean = z @ cho_solve((L, True), y)  # (8.104)
    V = solve_triangular(L, z.T, lower=True)
    return Marginal(mean, k_x(as_inputs(X_new)) * prior_variance(k_y, measure) - V.T @ V)  # (8.136)
