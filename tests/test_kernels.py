"""Every kernel: symmetric, positive semi-definite Gram matrices, diag consistent with the full matrix."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from zoo import kernels as k

X = jax.random.normal(jax.random.key(0), (30, 3))
ARD = jnp.array([0.5, 1.0, 2.0])

KERNELS = {
    "se-iso": k.SquaredExponential(1.3, 0.7),
    "se-ard": k.SquaredExponential(0.8, ARD),
    "matern12": k.Matern12(1.0, ARD),
    "matern32": k.Matern32(2.0, 0.9),
    "matern52": k.Matern52(0.5, ARD),
    "rq": k.RationalQuadratic(1.0, 1.1, alpha=0.7),
    "periodic": k.Periodic(1.0, 0.8, period=2.5),
    "linear": k.Linear(0.6, offset=0.3),
    "constant": k.Constant(0.4),
    "white": k.White(0.2),
    "sum": k.Linear(0.5) + k.Periodic(1.0, 1.0, 3.0),
    "product": k.SquaredExponential(1.0, 2.0) * k.Periodic(1.0, 1.0, 1.5),
    "active-dims": k.SquaredExponential(1.0, 0.5).on([0, 2]) + k.Matern32(1.0, 1.0).on(1),
}


@pytest.mark.parametrize("name", KERNELS)
def test_gram_is_symmetric_psd_and_matches_diag(name):
    kernel = KERNELS[name]
    K = np.asarray(kernel(X))
    assert K.shape == (30, 30)
    np.testing.assert_allclose(K, K.T, atol=1e-12)
    # PSD up to rounding: the smallest eigenvalue may be a few ulps below zero, never materially negative.
    assert np.linalg.eigvalsh(K).min() > -1e-9 * max(1.0, np.abs(K).max())
    np.testing.assert_allclose(np.asarray(kernel.diag(X)), np.diag(K), rtol=1e-12, atol=1e-12)


def test_closed_forms_against_the_definitions():
    x, y = jnp.array([[0.3]]), jnp.array([[1.1]])
    r = 0.8 / 0.7
    np.testing.assert_allclose(k.SquaredExponential(2.0, 0.7)(x, y), 2.0 * np.exp(-0.5 * r**2))
    np.testing.assert_allclose(k.Matern12(2.0, 0.7)(x, y), 2.0 * np.exp(-r))
    np.testing.assert_allclose(k.Matern32(2.0, 0.7)(x, y), 2.0 * (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r))
    np.testing.assert_allclose(
        k.Matern52(2.0, 0.7)(x, y), 2.0 * (1 + np.sqrt(5) * r + 5 * r**2 / 3) * np.exp(-np.sqrt(5) * r)
    )
    np.testing.assert_allclose(k.RationalQuadratic(2.0, 0.7, 3.0)(x, y), 2.0 * (1 + r**2 / 6.0) ** -3.0)
    # MacKay periodic, corrected form of Franzese eq. 5.3: exp(-2 sin^2(pi |x - x'| / p) / l^2)
    np.testing.assert_allclose(
        k.Periodic(2.0, 0.7, 1.5)(x, y), 2.0 * np.exp(-2 * np.sin(np.pi * 0.8 / 1.5) ** 2 / 0.49)
    )
    np.testing.assert_allclose(k.Linear(2.0, 0.5)(x, y), 0.25 + 2.0 * 0.33)


def test_white_noise_only_on_the_training_gram():
    np.testing.assert_allclose(k.White(0.3)(X), 0.3 * np.eye(30))
    assert float(jnp.abs(k.White(0.3)(X, X[:5])).max()) == 0.0


def test_rational_quadratic_tends_to_se_and_matern_is_differentiable_at_zero():
    se, rq = k.SquaredExponential(1.0, 0.9), k.RationalQuadratic(1.0, 0.9, alpha=1e6)
    np.testing.assert_allclose(rq(X), se(X), atol=1e-5)
    grad = jax.grad(lambda ls: k.Matern52(1.0, ls)(X).sum())(1.0)
    assert np.isfinite(grad)
