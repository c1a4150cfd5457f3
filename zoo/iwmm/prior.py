"""Draws from the iWMM's generative process (Duvenaud 2014, secs. 7.2-7.3, Figs 7.1-7.3): a CRP partition (E.7),
normal-inverse-Wishart cluster parameters (E.2-E.3), latent points, and a GP-LVM warp drawn jointly at those points
(eqs. 7.1-7.5). Host-side NumPy draws from a ``numpy.random.Generator``: nothing here is fitted.

Shapes: X (N, Q) latent points, labels (N,) integers from 0 in order of first appearance, Y (N, D).
"""

import numpy as np
from scipy.stats import wishart

from zoo.gp import cholesky_with_jitter
from zoo.iwmm import gplvm
from zoo.iwmm.niw import NIWPrior

__all__ = ["crp_labels", "expected_clusters", "latent_mixture", "niw_draw", "warp"]


def crp_labels(rng: np.random.Generator, n: int, eta: float) -> np.ndarray:
    """A partition of n points from the Chinese restaurant process with concentration eta (E.7): point i joins
    cluster k with probability n_k / (i + eta), a new one with eta / (i + eta)."""
    labels = np.zeros(n, dtype=np.int64)
    counts: list[int] = []
    for i in range(n):
        weights = np.array([*counts, eta], float) / (i + eta)
        k = int(rng.choice(len(weights), p=weights))
        if k == len(counts):
            counts.append(0)
        counts[k] += 1
        labels[i] = k
    return labels


def expected_clusters(n: int, eta: float) -> float:
    """E[number of clusters] of a CRP partition of n points: sum_{i=0}^{n-1} eta / (eta + i)."""
    return float(np.sum(eta / (eta + np.arange(n))))


def niw_draw(rng: np.random.Generator, prior: NIWPrior) -> tuple[np.ndarray, np.ndarray]:
    """(mean (Q,), covariance (Q, Q)) of one cluster: precision R ~ W(S^-1, nu), mean ~ N(u, (r R)^-1) (E.2-E.3)."""
    S, nu = np.asarray(prior.S, float), float(prior.nu)
    R = np.atleast_2d(wishart(df=nu, scale=np.linalg.inv(S)).rvs(random_state=rng))
    cov = np.linalg.inv(R)
    mean = rng.multivariate_normal(np.asarray(prior.u, float), cov / float(prior.r))
    return mean, cov


def latent_mixture(
    rng: np.random.Generator, n: int, prior: NIWPrior, eta: float
) -> tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """(X (n, Q), labels (n,), [(mean, covariance)] per cluster): the DP mixture of Gaussians of the latent space."""
    labels = crp_labels(rng, n, eta)
    params = [niw_draw(rng, prior) for _ in range(labels.max() + 1)]
    X = np.stack([rng.multivariate_normal(*params[k]) for k in labels])
    return X, labels, params


def warp(rng: np.random.Generator, X: np.ndarray, theta: gplvm.WarpParams, D: int) -> tuple[np.ndarray, float]:
    """(Y (N, D), jitter): D independent GP draws with the warp's SE-ARD kernel, jointly at the rows of X, plus the
    white noise (eq. 7.5: Y_:d ~ N(0, k(X, X) + noise I)). The jitter is what the Cholesky factor needed (0 if
    none)."""
    L, jitter = cholesky_with_jitter(gplvm.noisy_gram(np.asarray(X, float), theta))
    return np.asarray(L) @ rng.standard_normal((X.shape[0], D)), float(jitter)
