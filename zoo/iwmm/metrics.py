"""Scores of sec. 7.4: the Rand index of a clustering (Table 7.2) and the leave-one-out KDE baseline (Table 7.3)."""

import numpy as np
from scipy.special import logsumexp


def rand_index(a, b) -> float:
    """Rand (1971): the fraction of point pairs on which two labelings agree (same cluster in both, or in neither)."""
    a, b = np.asarray(a), np.asarray(b)
    same_a = a[:, None] == a[None, :]
    same_b = b[:, None] == b[None, :]
    upper = np.triu_indices(len(a), k=1)
    return float(np.mean(same_a[upper] == same_b[upper]))


def _kde_log_density(Y_eval, Y_train, bandwidth, exclude_self=False):
    D = Y_train.shape[1]
    sq = np.sum((Y_eval[:, None, :] - Y_train[None, :, :]) ** 2, -1)
    log_k = -0.5 * sq / bandwidth**2 - 0.5 * D * np.log(2.0 * np.pi * bandwidth**2)
    n = Y_train.shape[0]
    if exclude_self:
        np.fill_diagonal(log_k, -np.inf)
        n -= 1
    return logsumexp(log_k, axis=1) - np.log(n)


def loo_bandwidth(Y_train, grid=None) -> float:
    """The isotropic Gaussian KDE bandwidth maximising the leave-one-out log density of the training set (Table
    7.3's caption), over a log-spaced grid of 200 values from 1e-3 to 10 (data standardised)."""
    grid = np.logspace(-3, 1, 200) if grid is None else grid
    scores = [np.sum(_kde_log_density(Y_train, Y_train, h, exclude_self=True)) for h in grid]
    return float(grid[int(np.argmax(scores))])


def kde_test_log_density(Y_train, Y_test, bandwidth) -> np.ndarray:
    """log density (M,) of the Gaussian KDE of Y_train (N, D) at Y_test (M, D)."""
    return _kde_log_density(np.asarray(Y_test), np.asarray(Y_train), bandwidth)
