"""Draws from the iWMM's generative process (zoo/iwmm/prior.py): the CRP's expected number of clusters, the NIW
precision's mean, and the warp's covariance, each against its closed form within Monte Carlo error."""

import numpy as np

from zoo.iwmm import gplvm, niw, prior


def test_crp_partition_counts_match_the_closed_form():
    rng = np.random.default_rng(0)
    n, eta, draws = 50, 2.0, 800
    K = np.array([prior.crp_labels(rng, n, eta).max() + 1 for _ in range(draws)])
    se = K.std(ddof=1) / np.sqrt(draws)
    assert abs(K.mean() - prior.expected_clusters(n, eta)) < 4 * se
    labels = prior.crp_labels(rng, n, eta)
    assert labels[0] == 0 and np.all(np.diff(np.maximum.accumulate(labels)) <= 1)  # new clusters numbered in order


def test_niw_precision_mean_is_nu_times_inverse_scale():
    rng = np.random.default_rng(1)
    p = niw.NIWPrior(np.zeros(2), np.asarray(1.0), np.array([[2.0, 0.5], [0.5, 1.0]]), np.asarray(5.0))
    R = np.stack([np.linalg.inv(prior.niw_draw(rng, p)[1]) for _ in range(2000)])
    z = (R.mean(0) - 5.0 * np.linalg.inv(np.asarray(p.S))) / (R.std(0, ddof=1) / np.sqrt(len(R)))
    assert np.max(np.abs(z)) < 4


def test_warp_draws_have_the_kernel_covariance():
    rng = np.random.default_rng(2)
    X = np.array([[0.0], [0.5], [2.0]])
    theta = gplvm.WarpParams(np.ones(1), np.asarray(1.5), np.asarray(0.1))
    Y, jitter = prior.warp(rng, X, theta, 4000)  # 4000 independent output columns: draws of the (3,) vector
    K = np.asarray(gplvm.noisy_gram(X, theta))
    se = np.sqrt((K**2 + np.outer(np.diag(K), np.diag(K))) / Y.shape[1])  # sd of a sample covariance entry
    assert jitter == 0.0 and np.max(np.abs(np.cov(Y) - K) / se) < 4.5
