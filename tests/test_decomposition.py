"""zoo.decomposition: posterior of each summand of a sum kernel (Duvenaud eqs. 2.13-2.18).

The reference for the variances and the cross-covariance is latent augmentation: the joint Gaussian of
(f_1(X), f_1(X*), f_2(X), f_2(X*), y) written out densely (eq. 2.13 with noise) and conditioned on y with a dense
``numpy.linalg.solve``, never the Cholesky path of the code under test.
"""

import jax
import numpy as np
import pytest

import zoo  # noqa: F401  (float64)
from zoo import decomposition as dec
from zoo import gp, kernels
from zoo.kernels import KernelError


def data(n=25, m=15, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, d))
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, -1] ** 2 + 0.1 * rng.normal(size=n)
    X_new = rng.uniform(-3, 3, (m, d))
    return X, y, X_new


def two_components():
    k = kernels.with_values(
        kernels.parse("SE_0 + Lin_1 x SE_1"),
        {"se0_lengthscale": 0.7, "se0_variance": 1.3, "lin1_variance": 0.5, "lin1_offset": 0.3, "se2_lengthscale": 2.0},
        D=2,
    )
    return k, 0.05


def brute_force(k1, k2, X, y, noise, X_new):
    """Dense conditioning of the augmented Gaussian [f1(X), f1(X*), f2(X), f2(X*), y]: means and covariances of
    the latent blocks given y."""
    n, m = len(X), len(X_new)
    Z = np.concatenate([X, X_new])
    K1, K2 = np.asarray(k1(Z, Z)), np.asarray(k2(Z, Z))  # (n + m)^2 each: cross-set calls, so no WN surprises
    zero = np.zeros_like(K1)
    prior = np.block([[K1, zero], [zero, K2]])  # latent (f1(Z), f2(Z)): 2(n + m)
    sel = np.zeros((n, 2 * (n + m)))  # y = f1(X) + f2(X) + eps
    sel[:, :n] = np.eye(n)
    sel[:, n + m : 2 * n + m] = np.eye(n)
    cov_ly = prior @ sel.T
    cov_yy = sel @ prior @ sel.T + noise * np.eye(n)
    mean = cov_ly @ np.linalg.solve(cov_yy, y)
    cov = prior - cov_ly @ np.linalg.solve(cov_yy, cov_ly.T)
    star1 = slice(n, n + m)
    star2 = slice(2 * n + m, 2 * (n + m))
    return {
        "mean1": mean[star1],
        "mean2": mean[star2],
        "cov11": cov[star1, star1],
        "cov22": cov[star2, star2],
        "cov12": cov[star1, star2],
    }


def test_components_flatten_nested_sums_and_restrictions():
    k = kernels.parse("SE_0 + (Lin_1 + Per_0) + (RQ + C)_1")
    assert [str(c) for c in dec.components(k)] == ["SE_0", "Lin_1", "Per_0", "RQ_1", "C_1"]
    assert [str(c) for c in dec.components(kernels.parse("SE x Per"))] == ["SE x Per"]
    assert [str(c) for c in dec.components(kernels.parse("SE x (RQ + Lin)"))] == ["SE x (RQ + Lin)"]
    assert [str(c) for c in dec.components(kernels.parse("SE x (RQ + Lin)"), distribute=True)] == [
        "SE x RQ",
        "SE x Lin",
    ]


def test_restricted_sum_equals_its_components():
    X, _, X_new = data()
    k = kernels.parse("(SE + Lin)_1")
    total = sum(c(X, X_new) for c in dec.components(k))
    np.testing.assert_allclose(total, k(X, X_new), rtol=1e-12)


def test_component_means_sum_to_the_full_posterior_mean():
    X, y, X_new = data()
    k, noise = two_components()
    k = k + kernels.with_values(kernels.parse("Per_0"), {"period": 1.7}, D=2)
    result = dec.decompose(k, X, y, noise, X_new)
    assert result.mean.shape == (3, len(X_new)) and result.var.shape == (3, len(X_new))
    full = gp.predict(k, X, y, noise, X_new, full_cov=False)
    np.testing.assert_allclose(result.mean.sum(0), full.mean, rtol=1e-9, atol=1e-10)
    assert float(result.jitter) == 0.0


def test_two_components_against_latent_augmentation():
    X, y, X_new = data()
    k, noise = two_components()
    k1, k2 = dec.components(k)
    ref = brute_force(k1, k2, X, y, noise, X_new)
    result = dec.decompose(k, X, y, noise, X_new, full_cov=True)
    np.testing.assert_allclose(result.mean[0], ref["mean1"], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(result.mean[1], ref["mean2"], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(result.var[0], np.diag(ref["cov11"]), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(result.var[1], np.diag(ref["cov22"]), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(result.cov[0, 0], ref["cov11"], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(result.cov[0, 1], ref["cov12"], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(result.cov[1, 0], ref["cov12"].T, rtol=1e-7, atol=1e-9)
    # the diagonal blocks' diagonals are the marginal variances; the cross block is not zero (it would be a priori)
    np.testing.assert_allclose(np.diagonal(result.cov[1, 1]), result.var[1], rtol=1e-10)
    assert np.abs(ref["cov12"]).max() > 1e-3


def test_covariance_between_different_input_sets():
    """Fig. 2.8's use: component i on its own grid A, component j on another grid B."""
    X, y, X_new = data()
    k, noise = two_components()
    k1, k2 = dec.components(k)
    factor = dec.factorise(k, X, y, noise)
    A, B = X_new[:5], X_new[5:12]
    full = brute_force(k1, k2, X, y, noise, np.concatenate([A, B]))
    np.testing.assert_allclose(
        dec.component_covariance(factor, k1, A, k2, B, same=False), full["cov12"][:5, 5:], rtol=1e-7, atol=1e-9
    )
    np.testing.assert_allclose(
        dec.component_covariance(factor, k1, A, k1, B, same=True), full["cov11"][:5, 5:], rtol=1e-7, atol=1e-9
    )


def test_single_component_equals_predict():
    X, y, X_new = data()
    k = kernels.with_values(kernels.parse("SE"), {"lengthscale": np.array([0.8, 1.5]), "variance": 2.0}, D=2)
    result = dec.decompose(k, X, y, 0.1, X_new)
    full = gp.predict(k, X, y, 0.1, X_new, full_cov=False)
    assert result.names == ("SE",)
    np.testing.assert_allclose(result.mean[0], full.mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(result.var[0], full.cov, rtol=1e-10, atol=1e-12)


def test_partial_residuals_add_back_to_y():
    X, y, X_new = data()
    k, noise = two_components()
    parts = dec.components(k)
    factor = dec.factorise(k, X, y, noise)
    res = dec.partial_residuals(factor, parts, y)
    own = np.stack([dec.component_mean(factor, c, X) for c in parts])
    # with two components, what is left for one is y minus the other's posterior mean at the data
    np.testing.assert_allclose(res[0], y - own[1], rtol=1e-12)
    np.testing.assert_allclose(res[1], y - own[0], rtol=1e-12)


def test_white_noise_component_keeps_its_prior_at_new_inputs():
    """WN is zero between two input sets, so at new inputs its posterior is its prior: mean 0, variance sigma^2,
    and the full covariance's diagonal agrees with the marginal variance."""
    X, y, X_new = data()
    k = kernels.with_values(kernels.parse("SE_0 + WN"), {"wn1_variance": 0.3}, D=2)
    result = dec.decompose(k, X, y, 0.05, X_new, full_cov=True)
    np.testing.assert_allclose(result.mean[1], 0.0, atol=1e-12)
    np.testing.assert_allclose(result.var[1], 0.3, rtol=1e-12)
    np.testing.assert_allclose(np.diagonal(result.cov[1, 1]), result.var[1], rtol=1e-12)
    np.testing.assert_allclose(np.diagonal(result.cov[0, 0]), result.var[0], rtol=1e-9, atol=1e-12)


def test_jit_over_a_kernel():
    X, y, X_new = data()
    k, noise = two_components()
    fast = jax.jit(lambda kern: dec.decompose(kern, X, y, noise, X_new).var)
    np.testing.assert_allclose(fast(k), dec.decompose(k, X, y, noise, X_new).var, rtol=1e-12)


def test_bad_input():
    X, y, X_new = data(d=2)
    with pytest.raises(KernelError, match="input dimension 3"):
        dec.decompose(kernels.parse("SE_0 + SE_3"), X, y, 0.1, X_new)
    with pytest.raises(KernelError, match="input dimension 1"):
        dec.decompose(kernels.parse("SE_0 + SE_1"), X[:, :1], y, 0.1, X_new[:, :1])
    with pytest.raises(ValueError, match="y must have shape"):
        dec.decompose(kernels.parse("SE_0 + SE_1"), X, y[:-1], 0.1, X_new)
