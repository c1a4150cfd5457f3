"""Covariance functions and their algebra (pure jnp; Franzese 2024, ch. 5; Kaiser 2021, sec. 2.4).
See docs/sources/franzese.md#kernels.

A kernel is a small object holding its hyperparameters; ``k(X1, X2)`` returns the (n1, n2) Gram matrix and
``k(X)`` the symmetric (n, n) one. Inputs are (n, D) arrays (a 1-D array is read as D = 1). Kernels
combine with ``+`` and ``*``, and ``k.on(dims)`` restricts a kernel to some input dimensions.
Lengthscales may be scalars (isotropic) or (D,) arrays (ARD). Conventions follow GPML: ``variance`` is
the signal variance sigma_v^2, SE has the 1/2 in the exponent (docs/sources/franzese.md#conventions).
"""

from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp

Array = Any


def as_inputs(X: Array) -> Array:
    """Inputs as a float (n, D) array."""
    X = jnp.asarray(X, dtype=float)
    return X[:, None] if X.ndim == 1 else X


def scaled_sqdist(X1: Array, X2: Array, lengthscale: Array) -> Array:
    """Squared distances of inputs divided by their lengthscales: (n1, n2).

    Summed from differences rather than |a|^2 + |b|^2 - 2 a.b: the expansion leaves rounding noise of
    ~1e-15 where the distance is 0, which the square root of the Matern kernels turns into ~1e-8 errors.
    """
    diff = (X1[:, None, :] - X2[None, :, :]) / lengthscale
    return jnp.sum(diff**2, -1)


def _safe_sqrt(x: Array) -> Array:
    # sqrt has an infinite derivative at 0 (the diagonal); route zeros through a harmless value.
    positive = x > 0.0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, x, 1.0)), 0.0)


class Kernel:
    def __call__(self, X1: Array, X2: Array | None = None) -> Array:
        X1 = as_inputs(X1)
        X2 = X1 if X2 is None else as_inputs(X2)
        return self.gram(X1, X2)

    def gram(self, X1: Array, X2: Array) -> Array:
        raise NotImplementedError

    def diag(self, X: Array) -> Array:
        """The diagonal of ``k(X)`` without forming it: (n,)."""
        X = as_inputs(X)
        return jnp.diagonal(self.gram(X, X))

    def __add__(self, other: "Kernel") -> "Kernel":
        return Sum(self, other)

    def __mul__(self, other: "Kernel") -> "Kernel":
        return Product(self, other)

    def on(self, dims: Any) -> "Kernel":
        """This kernel applied to input columns ``dims`` only (active dimensions)."""
        return ActiveDims(self, tuple(int(d) for d in jnp.atleast_1d(jnp.asarray(dims))))


@dataclass(frozen=True)
class Sum(Kernel):
    left: Kernel
    right: Kernel

    def __call__(self, X1: Array, X2: Array | None = None) -> Array:
        # Dispatch through __call__ so a White term still sees X2 is None (the training Gram).
        return self.left(X1, X2) + self.right(X1, X2)

    def diag(self, X: Array) -> Array:
        return self.left.diag(X) + self.right.diag(X)


@dataclass(frozen=True)
class Product(Kernel):
    left: Kernel
    right: Kernel

    def __call__(self, X1: Array, X2: Array | None = None) -> Array:
        return self.left(X1, X2) * self.right(X1, X2)

    def diag(self, X: Array) -> Array:
        return self.left.diag(X) * self.right.diag(X)


@dataclass(frozen=True)
class ActiveDims(Kernel):
    kernel: Kernel
    dims: tuple[int, ...]

    def __call__(self, X1: Array, X2: Array | None = None) -> Array:
        pick = jnp.asarray(self.dims)
        X1 = as_inputs(X1)[:, pick]
        return self.kernel(X1, None if X2 is None else as_inputs(X2)[:, pick])

    def diag(self, X: Array) -> Array:
        return self.kernel.diag(as_inputs(X)[:, jnp.asarray(self.dims)])


@dataclass(frozen=True)
class Stationary(Kernel):
    """variance * profile(r), r the lengthscale-scaled distance."""

    variance: Array = 1.0
    lengthscale: Array = 1.0

    def gram(self, X1: Array, X2: Array) -> Array:
        return self.variance * self.profile(scaled_sqdist(X1, X2, self.lengthscale))

    def profile(self, r2: Array) -> Array:
        raise NotImplementedError

    def diag(self, X: Array) -> Array:
        return jnp.full(as_inputs(X).shape[0], 1.0) * self.variance * self.profile(jnp.zeros(()))


class SquaredExponential(Stationary):
    """sigma_v^2 exp(-r^2 / 2), SE/RBF; ARD with a (D,) lengthscale (Franzese eq. 6.3, Kaiser eq. 2.38)."""

    def profile(self, r2: Array) -> Array:
        return jnp.exp(-0.5 * r2)


RBF = SquaredExponential


class Matern12(Stationary):
    """sigma_v^2 exp(-r) (Franzese eq. 5.2 corrected, nu = 1/2)."""

    def profile(self, r2: Array) -> Array:
        return jnp.exp(-_safe_sqrt(r2))


class Matern32(Stationary):
    """sigma_v^2 (1 + sqrt3 r) exp(-sqrt3 r) (nu = 3/2)."""

    def profile(self, r2: Array) -> Array:
        r = jnp.sqrt(3.0) * _safe_sqrt(r2)
        return (1.0 + r) * jnp.exp(-r)


class Matern52(Stationary):
    """sigma_v^2 (1 + sqrt5 r + 5 r^2 / 3) exp(-sqrt5 r) (nu = 5/2)."""

    def profile(self, r2: Array) -> Array:
        r = jnp.sqrt(5.0) * _safe_sqrt(r2)
        return (1.0 + r + 5.0 * r2 / 3.0) * jnp.exp(-r)


@dataclass(frozen=True)
class RationalQuadratic(Stationary):
    """sigma_v^2 (1 + r^2 / (2 alpha))^(-alpha); SE as alpha -> infinity."""

    alpha: Array = 1.0

    def profile(self, r2: Array) -> Array:
        return (1.0 + r2 / (2.0 * self.alpha)) ** (-self.alpha)


@dataclass(frozen=True)
class Periodic(Kernel):
    """MacKay's periodic kernel sigma_v^2 exp(-2 sum_d sin^2(pi |x_d - x'_d| / p) / l_d^2).

    Franzese eq. 5.3, corrected (the printed form squares the difference inside the sine and has no amplitude;
    docs/sources/franzese.md#periodic-kernel).
    """

    variance: Array = 1.0
    lengthscale: Array = 1.0
    period: Array = 1.0

    def gram(self, X1: Array, X2: Array) -> Array:
        diff = jnp.abs(X1[:, None, :] - X2[None, :, :])
        s = jnp.sin(jnp.pi * diff / self.period) / self.lengthscale
        return self.variance * jnp.exp(-2.0 * jnp.sum(s**2, -1))

    def diag(self, X: Array) -> Array:
        return jnp.full(as_inputs(X).shape[0], 1.0) * self.variance


@dataclass(frozen=True)
class Linear(Kernel):
    """offset^2 + variance * x . x' (Franzese eq. 5.4 with a slope variance; Bayesian linear regression)."""

    variance: Array = 1.0
    offset: Array = 0.0

    def gram(self, X1: Array, X2: Array) -> Array:
        return self.offset**2 + self.variance * X1 @ X2.T


@dataclass(frozen=True)
class Constant(Kernel):
    variance: Array = 1.0

    def gram(self, X1: Array, X2: Array) -> Array:
        return jnp.full((X1.shape[0], X2.shape[0]), 1.0) * self.variance


@dataclass(frozen=True)
class White(Kernel):
    """Independent noise: variance * I on the training Gram ``k(X)``, zero between distinct input sets."""

    variance: Array = 1.0

    def __call__(self, X1: Array, X2: Array | None = None) -> Array:
        X1 = as_inputs(X1)
        if X2 is None:
            return self.variance * jnp.eye(X1.shape[0])
        return jnp.zeros((X1.shape[0], as_inputs(X2).shape[0]))

    def diag(self, X: Array) -> Array:
        return jnp.full(as_inputs(X).shape[0], 1.0) * self.variance
