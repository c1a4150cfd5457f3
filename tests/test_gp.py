"""GP algebra against direct dense formulas (Franzese eqs. 4.6-4.14, 6.2; R&W eq. 2.8)."""

import jax
import jax.numpy as jnp
import numpy as np
from scipy.stats import multivariate_normal

from zoo import gp
from zoo.kernels import Linear, SquaredExponential

key_x, key_y = jax.random.split(jax.random.key(1))
X = jax.random.uniform(key_x, (25, 2), minval=-2, maxval=2)
y = jnp.sin(X[:, 0]) + 0.1 * jax.random.normal(key_y, (25,))
KERNEL = SquaredExponential(1.2, jnp.array([0.7, 1.5]))
NOISE = 0.05


def test_predict_matches_dense_inverse_formulas():
    Xs = jnp.linspace(-3, 3, 7)[:, None] * jnp.ones((1, 2))
    Ky = np.asarray(gp.add_jitter(KERNEL(X) + NOISE * jnp.eye(25)))
    Ks, Kss = np.asarray(KERNEL(X, Xs)), np.asarray(KERNEL(Xs))
    mean = Ks.T @ np.linalg.solve(Ky, np.asarray(y))
    cov = Kss - Ks.T @ np.linalg.solve(Ky, Ks)
    post = gp.predict(KERNEL, X, y, NOISE, Xs)
    np.testing.assert_allclose(post.mean, mean, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(post.cov, cov, rtol=1e-8, atol=1e-10)
    diag = gp.predict(KERNEL, X, y, NOISE, Xs, full_cov=False)
    np.testing.assert_allclose(diag.cov, np.diag(cov), rtol=1e-8, atol=1e-10)


def test_log_marginal_likelihood_matches_scipy():
    Ky = np.asarray(gp.add_jitter(KERNEL(X) + NOISE * jnp.eye(25)))
    expected = multivariate_normal(np.zeros(25), Ky).logpdf(np.asarray(y))
    np.testing.assert_allclose(gp.log_marginal_likelihood(KERNEL, X, y, NOISE), expected, rtol=1e-10)


def test_bayesian_linear_regression_equals_gp_with_linear_kernel():
    design = jnp.concatenate([X, jnp.ones((25, 1))], axis=1)
    prior_cov = jnp.diag(jnp.array([0.5, 2.0, 1.0]))
    post, log_evidence = gp.linear_gaussian_posterior(prior_cov, design, y, NOISE)
    A = np.asarray(design.T @ design / NOISE + jnp.linalg.inv(prior_cov))  # R&W eq. 2.8, dense check only
    np.testing.assert_allclose(post.cov, np.linalg.inv(A), rtol=1e-9)
    np.testing.assert_allclose(post.mean, np.linalg.solve(A, np.asarray(design.T @ y)) / NOISE, rtol=1e-9)
    # The same evidence from the GP view: k(x, x') = x^T Sigma_p x' (docs/sources/franzese.md#blr).
    gram = design @ prior_cov @ design.T + NOISE * jnp.eye(25)
    np.testing.assert_allclose(log_evidence, multivariate_normal(np.zeros(25), np.asarray(gram)).logpdf(y), rtol=1e-10)
    linear = Linear(variance=0.5).on([0]) + Linear(variance=2.0).on([1]) + Linear(variance=0.0, offset=1.0)
    np.testing.assert_allclose(linear(design), design @ prior_cov @ design.T, rtol=1e-12)


def test_small_cholesky_and_solve_match_lapack():
    """The unrolled factorisation and forward substitution for n <= UNROLL_MAX (batched) equal LAPACK's."""
    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 4):
        B = rng.normal(size=(5, n, n))
        A = jnp.asarray(B @ np.swapaxes(B, 1, 2) + n * np.eye(n))
        b = jnp.asarray(rng.normal(size=(5, n)))
        L = gp.small_cholesky(A)
        np.testing.assert_allclose(L, np.linalg.cholesky(np.asarray(A)), rtol=1e-12, atol=1e-12)
        expected = np.linalg.solve(np.asarray(L), np.asarray(b)[..., None])[..., 0]
        np.testing.assert_allclose(gp.small_solve_lower(L, b), expected, rtol=1e-10, atol=1e-12)
