"""The conjugate Gaussian-Wishart (normal-inverse-Wishart) cluster model of the iWMM's latent mixture, and the CRP.

Duvenaud 2014, App. E (eqs. E.2-E.10), in the thesis's parameterisation: mu_c ~ N(u, (r R_c)^-1),
R_c ~ W(S^-1, nu) with W(R | S^-1, nu) proportional to |R|^((nu-Q-1)/2) exp(-tr(S R)/2) (E.3). Cluster parameters
are integrated out, so a cluster is summarised by its sufficient statistics: count n (), sum s (Q,), scatter M (Q, Q)
= sum of x x^T. All functions are pure and work on one cluster; ``vmap`` them over a fixed-size table of K clusters.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln

from zoo.gp import small_cholesky, small_solve_lower

Array = jax.Array


class NIWPrior(NamedTuple):
    """u (Q,): prior mean of mu_c; r: its relative precision; S (Q, Q): Wishart scale (inverse); nu: degrees."""

    u: Array
    r: Array
    S: Array
    nu: Array


class ClusterStats(NamedTuple):
    """Sufficient statistics of one cluster (or, with a leading axis, of K): count (), sum (Q,), scatter (Q, Q)."""

    count: Array
    total: Array
    scatter: Array


def default_prior(Q: int, r: float = 1.0, nu: float | None = None) -> NIWPrior:
    """r = 1, nu = Q, S = I_Q, u = 0: the reference code's defaults (docs/sources/duvenaud.md#iwmm-defaults)."""
    return NIWPrior(jnp.zeros(Q), jnp.asarray(float(r)), jnp.eye(Q), jnp.asarray(float(Q if nu is None else nu)))


def stats_of(X: Array, labels: Array, num_clusters: int) -> ClusterStats:
    """Statistics of every cluster slot from latent points X (N, Q) and integer labels (N,) in [0, K)."""
    onehot = jax.nn.one_hot(labels, num_clusters, dtype=X.dtype)  # (N, K)
    return ClusterStats(onehot.sum(0), onehot.T @ X, jnp.einsum("nk,nq,np->kqp", onehot, X, X))


def posterior(prior: NIWPrior, stats: ClusterStats) -> NIWPrior:
    """Posterior parameters of one cluster (E.5-E.6): r_c, nu_c, u_c and S_c (Murphy 2007)."""
    r_c = prior.r + stats.count
    u_c = (prior.r * prior.u + stats.total) / r_c
    S_c = prior.S + stats.scatter + prior.r * jnp.outer(prior.u, prior.u) - r_c * jnp.outer(u_c, u_c)
    return NIWPrior(u_c, r_c, S_c, prior.nu + stats.count)


def _log_det(A: Array) -> Array:
    return 2.0 * jnp.sum(jnp.log(jnp.diagonal(small_cholesky(A))))


def _log_norm(p: NIWPrior) -> Array:
    """log of the Gaussian-Wishart normaliser up to the pi and data terms: Q/2 log r + nu/2 log|S| - log Gamma_Q."""
    Q = p.u.shape[0]
    q = jnp.arange(1, Q + 1)
    return 0.5 * Q * jnp.log(p.r) + 0.5 * p.nu * _log_det(p.S) - jnp.sum(gammaln((p.nu + 1.0 - q) / 2.0))


def log_marginal(prior: NIWPrior, stats: ClusterStats) -> Array:
    """log p(X_c | S, nu, u, r) of one cluster's points, parameters integrated out (E.4)."""
    Q = prior.u.shape[0]
    return -0.5 * stats.count * Q * jnp.log(jnp.pi) + _log_norm(prior) - _log_norm(posterior(prior, stats))


def log_predictive(prior: NIWPrior, stats: ClusterStats, x: Array) -> Array:
    """log p(x | X_c) for one new point x (Q,) (E.10, with the prefactor pi^(-Q/2): the printed pi^(-N Q/2) is an
    erratum, docs/sources/duvenaud.md#iwmm-errata). Evaluated as the multivariate Student-t it equals,
    t_{nu_c - Q + 1}(u_c, S_c (r_c + 1) / (r_c (nu_c - Q + 1))), with one Q x Q Cholesky factor."""
    p = posterior(prior, stats)
    Q = x.shape[0]
    dof = p.nu - Q + 1.0
    L = small_cholesky(p.S * (p.r + 1.0) / (p.r * dof))  # unrolled for Q <= 3: K of them per point, every sweep
    z = small_solve_lower(L, x - p.u)
    return (
        gammaln((dof + Q) / 2.0)
        - gammaln(dof / 2.0)
        - 0.5 * Q * jnp.log(dof * jnp.pi)
        - jnp.sum(jnp.log(jnp.diagonal(L)))
        - 0.5 * (dof + Q) * jnp.log1p(z @ z / dof)
    )


def log_mixture_marginal(prior: NIWPrior, X: Array, labels: Array, num_clusters: int) -> Array:
    """log p(X | Z) = sum over occupied clusters of (E.4); empty slots contribute exactly 0."""
    stats = stats_of(X, labels, num_clusters)
    return jnp.sum(jax.vmap(lambda s: log_marginal(prior, s))(stats))


def log_crp(labels: Array, eta: Array, num_clusters: int) -> Array:
    """log p(Z | eta) of the partition the labels induce (E.7): Gamma(eta) eta^C / Gamma(eta + N) prod Gamma(N_c)."""
    counts = jnp.bincount(labels, length=num_clusters)
    occupied = counts > 0
    N = labels.shape[0]
    return (
        gammaln(eta)
        - gammaln(eta + N)
        + jnp.sum(jnp.where(occupied, jnp.log(eta) + gammaln(jnp.where(occupied, counts, 1.0)), 0.0))
    )


def with_point(stats: ClusterStats, k: Array, x: Array, sign: float) -> ClusterStats:
    """The K-slot table with x (Q,) added to (sign=+1) or removed from (sign=-1) slot k."""
    return ClusterStats(
        stats.count.at[k].add(sign),
        stats.total.at[k].add(sign * x),
        stats.scatter.at[k].add(sign * jnp.outer(x, x)),
    )


def slot_log_predictives(prior: NIWPrior, stats: ClusterStats, x: Array) -> Array:
    """log p(x | X_k) for every slot k of a K-slot table (K,); an empty slot gives the prior predictive."""
    return jax.vmap(lambda s: log_predictive(prior, s, x))(stats)


def sample_predictive(key: Array, prior: NIWPrior, stats: ClusterStats, num: int) -> Array:
    """num draws (num, Q) from one cluster's Student-t predictive: the marginal of steps 2-4 of E.15
    (R* ~ W(S_c^-1, nu_c), mu* ~ N(u_c, (r_c R*)^-1), x* ~ N(mu*, R*^-1)), drawn as a scale mixture of Gaussians."""
    p = posterior(prior, stats)
    Q = prior.u.shape[0]
    dof = p.nu - Q + 1.0
    L = small_cholesky(p.S * (p.r + 1.0) / (p.r * dof))
    k_g, k_w = jax.random.split(key)
    g = jax.random.normal(k_g, (num, Q))
    w = 2.0 * jax.random.gamma(k_w, dof / 2.0, (num,))  # chi-square with dof degrees of freedom
    return p.u + (g @ L.T) / jnp.sqrt(w / dof)[:, None]
