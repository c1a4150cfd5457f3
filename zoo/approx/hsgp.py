"""The Hilbert-space GP approximation (Solin & Sarkka 2020; Riutort-Mayol et al. 2023;
docs/approximations.md#hsgp) of the regression evidence, from ``numpyro.contrib.hsgp``'s eigenfunctions and
spectral densities.

A stationary kernel on the box [-L_1, L_1] x ... x [-L_D, L_D] (inputs centred on the data's midpoint, L_d =
``boundary_factor`` x the data's half-range in column d) is approximated by m^D Laplacian eigenfunctions phi_j
weighted by the spectral density at their frequencies: K ~ Phi diag(S) Phi^T. The periodic kernel has its own
expansion in cosines and sines of multiples of 2 pi / period (Riutort-Mayol App. B), exact as m grows and needing
no box. Sums of such kernels concatenate their bases (independent functions add), and a constant kernel is one
basis column of ones. The evidence N(y | 0, Phi diag(S) Phi^T + noise I) is NumPyro's ``LowRankMultivariateNormal``
(Woodbury and the matrix-determinant lemma: O(N M^2) for M basis functions, no N x N matrix).

Conventions (checked against the dense kernel in ``tests/test_approx.py``): ``numpyro.contrib.hsgp``'s SE and
Matern ``alpha`` is our ``variance`` (the spectral density scales linearly with it) and ``length`` our ARD
``lengthscale``; its periodic ``alpha`` is an amplitude (the coefficients scale with alpha^2), so it gets
sqrt(variance), and its ``w0`` is 2 pi / period. Products of kernels are not supported: the product of two
expansions needs every pair of basis functions (M1 x M2 columns), which defeats the purpose.
"""

import importlib.util
from typing import Any

import jax.numpy as jnp
import numpyro.distributions as dist
from jax.scipy.linalg import cho_solve, solve_triangular
from numpyro.contrib.hsgp.laplacian import eigenfunctions, eigenfunctions_periodic
from numpyro.contrib.hsgp.spectral_densities import (
    diag_spectral_density_matern,
    diag_spectral_density_periodic,
    diag_spectral_density_squared_exponential,
)

from zoo.kernels import (
    ActiveDims,
    Constant,
    Kernel,
    KernelError,
    Matern12,
    Matern32,
    Matern52,
    Periodic,
    SquaredExponential,
    Sum,
)

Array = Any

MAX_INPUTS = 3  # m^D basis functions: beyond 3 inputs the basis outgrows the data (Riutort-Mayol sec. 4)
SUPPORTED = (
    "SE, M12, M32, M52 (1-3 inputs, ARD), Per (one input; needs tensorflow-probability) and C, and sums of these "
    "(e.g. 'SE + M12_0')"
)
_NU = {Matern12: 0.5, Matern32: 1.5, Matern52: 2.5}


def _has_tfp() -> bool:
    return importlib.util.find_spec("tensorflow_probability") is not None


def check_kernel(kernel: Kernel) -> Kernel:
    """``kernel`` if numpyro.contrib.hsgp has an expansion of every term, else a ``KernelError`` naming what is
    supported (called when the model variant is built, before anything is traced)."""
    if isinstance(kernel, Periodic) and not _has_tfp():
        # numpyro.contrib.hsgp computes the periodic coefficients' Bessel functions I_j with TensorFlow Probability,
        # an optional dependency of NumPyro that this project does not pin (JAX has only I_0 and I_1).
        raise KernelError(
            "approx='hsgp' with Per needs tensorflow-probability (numpyro.contrib.hsgp's periodic expansion uses its "
            "Bessel functions), which is not installed; install it, or use approx='dense'."
        )
    if isinstance(kernel, Sum):
        check_kernel(kernel.left)
        check_kernel(kernel.right)
    elif isinstance(kernel, ActiveDims):
        check_kernel(kernel.kernel)
    elif type(kernel) not in (SquaredExponential, *_NU, Periodic, Constant):
        why = " (a product of expansions needs every pair of basis functions)" if kernel.CHILDREN else ""
        raise KernelError(
            f"approx='hsgp' has no expansion of {kernel.SYMBOL if not kernel.CHILDREN else str(kernel)}{why}; "
            f"it supports {SUPPORTED}. Use approx='quasisep' (1-D Matern/Cos sums and products) or approx='dense'."
        )
    return kernel


def check_inputs(kernel: Kernel, D: int) -> None:
    """A ``KernelError`` unless each term sees 1-3 input columns (Per: one), D the columns of the data."""
    if isinstance(kernel, Sum | ActiveDims):
        for child in kernel.CHILDREN:
            check_inputs(getattr(kernel, child), kernel.input_dims(D))
    elif isinstance(kernel, Periodic) and D != 1:
        raise KernelError(f"approx='hsgp': Per takes one input column but sees {D}; restrict it, e.g. Per_0.")
    elif not isinstance(kernel, Constant) and D > MAX_INPUTS:
        raise KernelError(
            f"approx='hsgp': {kernel.SYMBOL} sees {D} input columns; the expansion takes 1-{MAX_INPUTS} "
            f"(m^D basis functions), e.g. restrict it with {kernel.SYMBOL}_{{0,1}} or use approx='dense'."
        )


def _basis(kernel: Kernel, X: Array, half_range: Array, num_basis: int, boundary_factor: float):
    """(Phi (N, M), S (M,)) of ``kernel`` at centred inputs X (N, D), the box half-widths ``half_range`` * c."""
    if isinstance(kernel, Sum):
        parts = [_basis(k, X, half_range, num_basis, boundary_factor) for k in (kernel.left, kernel.right)]
        return jnp.concatenate([p[0] for p in parts], 1), jnp.concatenate([p[1] for p in parts])
    if isinstance(kernel, ActiveDims):
        dims = jnp.asarray(kernel.dims)
        return _basis(kernel.kernel, X[:, dims], half_range[dims], num_basis, boundary_factor)
    if isinstance(kernel, Constant):
        return jnp.ones((X.shape[0], 1)), jnp.reshape(kernel.variance, (1,))
    if isinstance(kernel, Periodic):
        # cos(j w0 x), j = 0..m-1, and sin(j w0 x), j = 1..m-1 (sin(0) = 0 carries nothing), both with the
        # coefficient q_j^2 = variance c_j e^{-a} I_j(a), a = l^-2 (Riutort-Mayol eq. B.6).
        w0 = 2.0 * jnp.pi / jnp.reshape(kernel.period, ())
        q2 = diag_spectral_density_periodic(jnp.sqrt(kernel.variance), jnp.reshape(kernel.lengthscale, ()), num_basis)
        cosines, sines = eigenfunctions_periodic(X[:, 0], w0, num_basis)
        return jnp.concatenate([cosines, sines[:, 1:]], 1), jnp.concatenate([q2, q2[1:]])
    D = X.shape[1]
    ell = boundary_factor * half_range[:, None]  # (D, 1), the shape numpyro.contrib.hsgp takes
    phi = eigenfunctions(X, ell, num_basis)
    lengthscale = jnp.broadcast_to(kernel.lengthscale, (D,))
    if isinstance(kernel, SquaredExponential):
        spd = diag_spectral_density_squared_exponential(kernel.variance, lengthscale, ell, num_basis, D)
    else:
        spd = diag_spectral_density_matern(_NU[type(kernel)], kernel.variance, lengthscale, ell, num_basis, D)
    return phi, spd


def box(X: Array) -> tuple[Array, Array]:
    """(centre (D,), half-range (D,)) of the data X (N, D): the box is centred on the data's midpoint per column; a
    column with a single value gets half-width 1 rather than 0 (the eigenfunctions divide by it)."""
    low, high = jnp.min(X, 0), jnp.max(X, 0)
    half_range = (high - low) / 2.0
    return (low + high) / 2.0, jnp.where(half_range > 0, half_range, 1.0)


def basis(kernel: Kernel, X: Array, num_basis: int, boundary_factor: float, at: Array | None = None):
    """(Phi, S) with K(X) ~ Phi diag(S) Phi^T, the box that of X (``box``); with ``at`` (M, D), Phi at those points
    in X's box (for prediction)."""
    centre, half_range = box(X)
    points = X if at is None else at
    return _basis(kernel, points - centre, half_range, num_basis, boundary_factor)


def predict(kernel: Kernel, X: Array, y: Array, noise: Array, X_new: Array, num_basis: int, boundary_factor: float):
    """(mean (M,), variance (M,)) of f at X_new given y at X under the HSGP prior f = B w, B = Phi diag(sqrt(S)),
    w ~ N(0, I): w | y is Gaussian with precision I + B^T B / noise (Solin & Sarkka 2020, sec. 4), by Cholesky."""
    phi, spd = basis(kernel, X, num_basis, boundary_factor)
    phi_new, _ = basis(kernel, X, num_basis, boundary_factor, at=X_new)
    B, B_new = phi * jnp.sqrt(spd), phi_new * jnp.sqrt(spd)
    L = jnp.linalg.cholesky(jnp.eye(B.shape[1]) + B.T @ B / noise)
    mean_w = cho_solve((L, True), B.T @ y / noise)
    V = solve_triangular(L, B_new.T, lower=True)
    return B_new @ mean_w, jnp.sum(V**2, 0)


def evidence(kernel: Kernel, X: Array, noise: Array, num_basis: int, boundary_factor: float):
    """N(0, Phi diag(S) Phi^T + noise I) over y, as NumPyro's low-rank multivariate normal."""
    check_inputs(kernel, X.shape[1])
    phi, spd = basis(kernel, X, num_basis, boundary_factor)
    return dist.LowRankMultivariateNormal(jnp.zeros(X.shape[0]), phi * jnp.sqrt(spd), jnp.full(X.shape[0], noise))
