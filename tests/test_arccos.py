"""The arc-cosine kernels (``zoo.kernels.arccos``; Cho & Saul 2009, Kaiser Fig. 2.6).

* PSD Gram matrices, diag = the Gram's diagonal, in the kernel algebra and the grammar (AC0, AC1, AC2).
* The closed form equals the covariance of an infinitely wide one-hidden-layer network: per pair of inputs, the mean
  of 2 variance phi(w.x~) phi(w.x~') over H = 200 000 random units (phi = step, ReLU, rectified square) lies within
  4.5 Monte Carlo standard errors (the products' sd / sqrt(H)); the same tolerance rejects the kernel of the
  neighbouring order, so the check has power.
* The printed form with arccos; hyperparameter gradients are finite on the diagonal (atan2 of Lagrange's identity).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from zoo import kernels as k
from zoo.kernels.base import KernelError

X = jax.random.normal(jax.random.key(3), (25, 2)) * jnp.array([1.5, 0.7])
W_VAR, B_VAR, VAR = jnp.array([0.8, 2.0]), 0.5, 1.3
UNITS = 200_000
Z = 4.5


def _features(order, A, W):
    """phi(W A^T) for the step (0), ReLU (1) and rectified square (2): (H, n)."""
    pre = W @ A.T
    return jnp.where(pre > 0, pre**order, 0.0)


@pytest.mark.parametrize("order", [0, 1, 2])
def test_gram_is_psd_symmetric_and_diag_consistent(order):
    kernel = k.arc_cosine(order, VAR, W_VAR, B_VAR)
    K = np.asarray(kernel(X))
    np.testing.assert_allclose(K, K.T, atol=1e-12)
    assert np.linalg.eigvalsh(K).min() > -1e-9 * np.abs(K).max()
    np.testing.assert_allclose(np.asarray(kernel.diag(X)), np.diag(K), rtol=1e-12)


@pytest.mark.parametrize("order", [0, 1, 2])
def test_closed_form_is_the_covariance_of_an_infinitely_wide_network(order):
    """k(x, x') = 2 variance E_w[phi(w.x~) phi(w.x~')], w ~ N(0, diag(weight_variance, bias_variance)) (Cho & Saul
    eq. 1 with the factor 2 of their normalisation); the Monte Carlo mean over UNITS units, per pair of 12 points."""
    Xs = X[:12]
    A = jnp.concatenate([Xs, jnp.ones((12, 1))], 1)
    W = jax.random.normal(jax.random.key(order), (UNITS, 3)) * jnp.sqrt(jnp.array([*W_VAR, B_VAR]))
    phi = _features(order, A, W)
    # mean and sd over units of the products 2 variance phi_i phi_j, by matrix products (no (H, n, n) array)
    mc = np.asarray(2.0 * VAR * phi.T @ phi / UNITS)
    second = np.asarray((2.0 * VAR) ** 2 * (phi**2).T @ phi**2 / UNITS)
    se = np.sqrt(np.maximum(second - mc**2, 0.0) / (UNITS - 1))
    exact = np.asarray(k.arc_cosine(order, VAR, W_VAR, B_VAR)(Xs))
    z = np.abs(mc - exact) / se
    assert z.max() < Z, z.max()
    # Power: the neighbouring order's kernel (rescaled to the same diagonal) is far outside the tolerance.
    other = np.asarray(k.arc_cosine(1 if order != 1 else 2, VAR, W_VAR, B_VAR)(Xs))
    d = np.sqrt(np.diag(exact) / np.diag(other))
    assert (np.abs(mc - other * np.outer(d, d)) / se).max() > 10 * Z


def test_printed_arccos_form_and_orders():
    x, y = np.array([0.4, -1.2]), np.array([1.1, 0.3])
    a, b = np.append(x * np.sqrt(W_VAR), np.sqrt(B_VAR)), np.append(y * np.sqrt(W_VAR), np.sqrt(B_VAR))
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    t = np.arccos(a @ b / (na * nb))
    J = {
        0: np.pi - t,
        1: np.sin(t) + (np.pi - t) * np.cos(t),
        2: 3 * np.sin(t) * np.cos(t) + (np.pi - t) * (1 + 2 * np.cos(t) ** 2),
    }
    for n in (0, 1, 2):
        value = float(k.arc_cosine(n, VAR, W_VAR, B_VAR)(x[None], y[None])[0, 0])
        np.testing.assert_allclose(value, VAR / np.pi * (na * nb) ** n * J[n], rtol=1e-12)
    assert str(k.parse("AC1 + SE x AC0")) == "AC1 + SE x AC0"
    with pytest.raises(KernelError, match="orders"):
        k.arc_cosine(3)


def test_gradients_are_finite_on_the_diagonal_and_weights_are_ard_sites():
    for n in (0, 1, 2):
        grads = jax.jit(jax.grad(lambda kern: kern(X[:6]).sum()))(k.arc_cosine(n, VAR, W_VAR, B_VAR))
        assert all(np.all(np.isfinite(np.asarray(g))) for g in jax.tree.leaves(grads))
    assert k.num_params(k.AC1(), D=3) == 3 + 2
    assert k.site_names(k.AC2()) == ["variance", "weight_variance", "bias_variance"]
