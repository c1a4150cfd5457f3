"""Symmetric and manifold kernels (zoo/kernels/symmetric.py, zoo/kernels/manifold.py; Duvenaud 2014, secs. 2.7-2.8).

Draws are drawn by ``zoo.gp.draws_in_span`` (combinations of the Gram's columns), whose values at x and g(x) are
equal when the kernel's rows are: so the symmetry of the draws is the kernel's invariance, to rounding (1e-12). Each
check is also run on a kernel without the symmetry, where it must fail."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest

from zoo import gp
from zoo import kernels as K
from zoo.kernels import KernelError

TOL = 1e-12


def grid(n, lo, hi):
    g = np.linspace(lo, hi, n)
    return np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)


def swap_index(n):
    """Index of the swapped point (x_1, x_0) in ``grid(n, ...)``'s row order."""
    return np.arange(n * n).reshape(n, n).T.reshape(-1)


def symmetry_error(kernel, X, image_index, key=0):
    f = np.asarray(gp.draws_in_span(kernel(X), jax.random.PRNGKey(key), 3))
    return float(np.max(np.abs(f - f[:, image_index])) / np.std(f))


def test_group_generation_and_composition():
    shift = K.shift_group(4)
    assert len(shift) == 4  # the D cyclic shifts of eq. 2.46
    x = np.arange(4.0)[None, :]
    images = {tuple(np.asarray(g(x))[0]) for g in shift.elements}
    assert images == {(0, 1, 2, 3), (1, 2, 3, 0), (2, 3, 0, 1), (3, 0, 1, 2)}
    a, b = shift.elements[1], K.SignedPermutation((0, 1, 2, 3), (-1, 1, 1, 1))
    np.testing.assert_array_equal(np.asarray(a.then(b)(x)), np.asarray(b(a(x))))
    assert len(K.generate([a, b])) == 4 * 16  # shifts and every sign pattern
    with pytest.raises(KernelError, match="not closed"):
        K.Group((K.SignedPermutation((0, 1, 2), (1, 1, 1)), K.SignedPermutation((1, 2, 0), (1, 1, 1))))


@pytest.mark.parametrize("method", ["sum", "projection", "product"])
def test_swap_symmetric_draws_and_sparse_spectrum(method):
    # spacing 0.5 against lengthscale 0.5: the plain SE Gram has full numerical rank, so the spectrum test can fail
    n = 12
    X, swapped = grid(n, -3.0, 3.0), swap_index(n)
    kernel = K.Symmetrised(K.SE(lengthscale=0.5), K.swap_group(), method)
    assert symmetry_error(kernel, X, swapped) < TOL
    assert symmetry_error(K.SE(lengthscale=0.5), X, swapped) > 0.1
    orbits = n * (n + 1) // 2
    for k, sparse in ((kernel, True), (K.SE(lengthscale=0.5), False)):
        eig = np.sort(np.linalg.eigvalsh(np.asarray(k(X))))[::-1]
        assert eig[-1] > -1e-12 * eig[0]  # positive semi-definite
        assert (eig[orbits] < 1e-12 * eig[0]) == sparse  # rank <= number of orbits


def test_reflection_and_shift_groups():
    x = (np.arange(-20, 21) * 0.1)[:, None]  # exactly closed under x -> -x (linspace is not): row i <-> 40 - i
    kernel = K.Symmetrised(K.SE(), K.reflection_group(), "sum")  # eq. 2.44
    assert symmetry_error(kernel, x, np.arange(41)[::-1]) < TOL
    projected = K.Symmetrised(K.SE(), K.reflection_group(), "projection")
    np.testing.assert_allclose(projected(x), K.SE()(np.abs(x)), atol=1e-14)  # A_G(x) = -|x|, stationary k
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    shifted = np.concatenate([X, np.roll(X, -1, axis=1)])  # shift(x, 1) of eq. 2.46
    k3 = K.Symmetrised(K.M52(), K.shift_group(3), "sum")
    assert symmetry_error(k3, shifted, np.r_[np.arange(20, 40), np.arange(20)]) < TOL


def test_sum_doubles_variance_and_product_is_se_of_orbit_average():
    se = K.SE(lengthscale=0.7)
    diagonal, far = np.array([[0.3, 0.3]]), np.array([[-3.0, 3.0]])
    k_sum = K.Symmetrised(se, K.swap_group(), "sum")
    ratio = float(k_sum.diag(diagonal)[0] / k_sum.diag(far)[0])
    assert ratio == pytest.approx(2.0, rel=1e-6)  # "the marginal variance is doubled near x = y" (sec. 2.7.1)
    # prod_{g,g'} SE(gx, g'x') = SE_{l/|G|}(Px, Px') s(x) s(x'), P the orbit average, s(x) = exp(-|G|^2 |x-Px|^2 / 2l^2)
    rng = np.random.default_rng(1)
    X1, X2 = rng.normal(size=(7, 2)), rng.normal(size=(5, 2))
    k_prod = K.Symmetrised(se, K.swap_group(), "product")
    P = lambda X: np.repeat(X.mean(1, keepdims=True), 2, 1)  # noqa: E731
    s = lambda X: np.exp(-2.0 * np.sum((X - P(X)) ** 2, 1) / 0.7**2)  # noqa: E731
    closed = np.asarray(K.SE(lengthscale=0.35)(P(X1), P(X2))) * s(X1)[:, None] * s(X2)[None, :]
    np.testing.assert_allclose(k_prod(X1, X2), closed, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(k_prod.diag(X1), np.diag(np.asarray(k_prod(X1))), rtol=1e-14)
    assert float(k_prod.diag(far)[0]) < 1e-10  # zero variance away from x_0 = x_1 (Fig. 2.10, right)


def test_composes_with_the_algebra_jit_grad_and_sites():
    kernel = K.Symmetrised(K.SE(), K.swap_group(), "sum") * K.Lin() + K.moebius()
    X = np.random.default_rng(2).normal(size=(6, 2))
    np.testing.assert_allclose(jax.jit(lambda k, X: k(X))(kernel, X), kernel(X), rtol=1e-13)
    grads = jax.jit(jax.grad(lambda k: jnp.sum(k(X))))(kernel)
    assert all(np.all(np.isfinite(leaf)) for leaf in jax.tree_util.tree_leaves(grads))
    with numpyro.handlers.seed(rng_seed=0), numpyro.handlers.trace() as trace:
        K.sample_sites(kernel, D=2)
    assert list(trace) == K.site_names(kernel)
    assert trace["se3_lengthscale"]["value"].shape == (4,)  # the torus's SE sees four embedded columns


def test_manifold_kernels_equal_the_algebra_and_are_periodic_where_they_should_be():
    rng = np.random.default_rng(3)
    X1, X2 = rng.uniform(-2, 2, size=(9, 2)), rng.uniform(-2, 2, size=(8, 2))
    l, p = 0.6, 1.7
    per = K.Per(lengthscale=l, period=p)
    np.testing.assert_allclose(K.Circular(K.SE(lengthscale=l), p)(X1[:, :1], X2[:, :1]), per(X1[:, :1], X2[:, :1]))
    pairs = {
        "cylinder": (K.cylinder(l, p), K.SE(lengthscale=l).on(0) * per.on(1), (False, True)),
        "torus": (K.torus(l, p), per.on(0) * per.on(1), (True, True)),
        "moebius": (K.moebius(l, p), None, (True, True)),
        "moebius-product": (K.moebius(l, p, method="product"), None, (True, True)),
        "moebius-map": (K.moebius(l, p, method="map"), None, (True, True)),
    }
    for name, (kernel, algebra, periodic) in pairs.items():
        if algebra is not None:
            np.testing.assert_allclose(kernel(X1, X2), algebra(X1, X2), rtol=1e-12, err_msg=name)
        base = np.asarray(kernel(X1, X2))
        for d, expect in enumerate(periodic):
            moved = np.asarray(kernel(X1 + p * np.eye(2)[d], X2))
            assert (np.max(np.abs(moved - base)) < TOL) == expect, (name, d)
        eig = np.linalg.eigvalsh(np.asarray(kernel(np.concatenate([X1, X2]))))
        assert eig[0] > -1e-12 * eig[-1], name  # PSD
    for name in ("moebius", "moebius-product", "moebius-map"):
        kernel = pairs[name][0]
        np.testing.assert_allclose(kernel(X1[:, ::-1], X2), kernel(X1, X2), atol=TOL, err_msg=name)
    assert np.max(np.abs(np.asarray(K.torus(l, p)(X1[:, ::-1], X2) - K.torus(l, p)(X1, X2)))) > 0.1


def test_periodic_draws_have_sparse_fourier_spectra():
    # 16 points per period, two periods on each axis: a draw periodic in an axis has power only at even frequencies
    n, p = 32, 1.0
    g = np.arange(n) * (2 * p / n)
    X = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    for kernel, periodic in ((K.torus(0.5, p), (True, True)), (K.cylinder(0.5, p), (False, True))):
        f = np.asarray(gp.draws_in_span(kernel(X), jax.random.PRNGKey(4), 1))[0].reshape(n, n)
        power = np.abs(np.fft.fft2(f)) ** 2
        for axis, expect in enumerate(periodic):
            odd = np.take(power, np.arange(1, n, 2), axis=axis).sum() / power.sum()
            assert (odd < 1e-20) == expect, (kernel, axis, odd)


def test_bad_input():
    with pytest.raises(KernelError, match="method"):
        K.Symmetrised(K.SE(), K.swap_group(), "average")
    with pytest.raises(KernelError, match="acts on 2"):
        K.Symmetrised(K.SE(), K.swap_group(), "sum")(np.zeros((3, 3)))
    with pytest.raises(KernelError, match="column 1"):
        K.cylinder()(np.zeros((3, 1)))
    with pytest.raises(KernelError, match="'sum', 'product' or 'map'"):
        K.moebius(method="projection")
