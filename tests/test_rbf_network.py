"""The Bayesian RBF network (zoo/rbf_network.py; McHutchon eqs. 1.31-1.35) against dense Gaussian algebra."""

import jax
import numpy as np
import pytest
from scipy.stats import multivariate_normal

import inference
import zoo
from zoo import kernels, rbf_network

X = np.array([-2.0, -1.2, 0.0, 0.8, 2.1])[:, None]
Y = np.array([0.5, -0.3, 0.4, 1.0, -0.8])
C = np.linspace(-3.0, 3.0, 10)[:, None]
PARAMS = {"width": np.array([0.7]), "weight_variance": 1.3, "noise": 0.01}


def dense_evidence(weight_variance):
    K = weight_variance * rbf_network.features(X, C, PARAMS["width"]) @ rbf_network.features(X, C, PARAMS["width"]).T
    return multivariate_normal(np.zeros(len(Y)), np.asarray(K) + PARAMS["noise"] * np.eye(len(Y))).logpdf(Y)


def test_predictive_is_eq_1_35_with_the_prior_precision():
    """Eq. 1.35 with A = Phi^T Phi / sn2 + I / sw2 (the printed "+ sw2 I" is an erratum), by explicit inverses."""
    Phi = np.asarray(rbf_network.features(X, C, PARAMS["width"]))
    grid = np.linspace(-6.0, 6.0, 7)[:, None]
    phi = np.asarray(rbf_network.features(grid, C, PARAMS["width"]))
    A = Phi.T @ Phi / PARAMS["noise"] + np.eye(10) / PARAMS["weight_variance"]
    mean, var = jax.jit(rbf_network.predict)(PARAMS, X, C, Y, grid)  # one compilation (cold time)
    np.testing.assert_allclose(mean, phi @ np.linalg.solve(A, Phi.T @ Y) / PARAMS["noise"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(var, np.einsum("nm,nm->n", phi, np.linalg.solve(A, phi.T).T), rtol=1e-9, atol=1e-14)


@pytest.mark.slow  # ~10 s cold: two engine compilations
def test_exact_engine_evidence_and_ml2_with_fixed_sites():
    """The latent form's exact evidence and the collapsed form's ml2 log-likelihood are both log N(y | 0, sw2 Phi
    Phi^T + sn2 I); ml2 with fixed sites must not count their priors in it."""
    run = inference.run("blr/rbf", {"X": X, "C": C, "y": Y}, engine="exact", params=PARAMS, num_samples=10)
    np.testing.assert_allclose(run.posterior.attrs["log_evidence"], dense_evidence(1.3), rtol=1e-10)
    fixed = {"width": PARAMS["width"], "noise": PARAMS["noise"]}
    fit = inference.run(zoo.get("blr/rbf", weights="collapsed"), {"X": X, "C": C, "y": Y}, engine="ml2", params=fixed)
    wv = float(fit.point_estimates["weight_variance"][0])
    np.testing.assert_allclose(float(fit.point_estimates["log_likelihood"][0]), dense_evidence(wv), rtol=1e-8)


def test_dense_tiling_is_the_se_kernel():
    """Sec. 1.4: infinitely many features give the GP; a spacing-0.05 grid reaches the SE kernel to rounding."""
    ell, sf2, spacing = 0.8, 1.7, 0.05
    tiles = np.arange(-12.0, 12.0 + spacing / 2, spacing)[:, None]
    x = np.linspace(-4.0, 4.0, 9)[:, None]
    wv = rbf_network.tiling_weight_variance(sf2, ell, spacing)
    k = rbf_network.degenerate_kernel(x, x, tiles, np.array([ell / np.sqrt(2.0)]), wv)
    np.testing.assert_allclose(k, kernels.SquaredExponential(sf2, np.array([ell]))(x), atol=1e-10)


def test_bad_option_fails_before_compiling():
    with pytest.raises(zoo.errors.OptionError):
        zoo.get("blr/rbf", weights="nope")
