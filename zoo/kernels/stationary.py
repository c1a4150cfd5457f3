"""Stationary base kernels, k(x, x') = k(x - x'): SE, Matern 1/2, 3/2, 5/2, RQ, Per, ZPer, Cos, Const, WN.

Conventions follow GPML (docs/sources/franzese.md#conventions): ``variance`` is the signal variance sigma_f^2 that
Duvenaud's App. B omits "for clarity" (docs/sources/duvenaud.md#base-kernels), SE has the 1/2 in the exponent,
lengthscales may be scalars (isotropic) or (D,) arrays (ARD). Inputs (n, D); Gram matrices (n1, n2).
"""

from typing import Any, ClassVar

import jax.numpy as jnp
from jax.scipy.special import i0e

from zoo.kernels.base import Kernel, KernelError, as_inputs, kernel_dataclass, safe_sqrt, scaled_sqdist

Array = Any


def _one_dimensional(kernel: Kernel, X: Array) -> None:
    if X.shape[1] != 1:
        raise KernelError(
            f"{kernel.SYMBOL} is one-dimensional (Duvenaud App. B) but the inputs have {X.shape[1]} columns; "
            f"restrict it to one, e.g. {kernel.SYMBOL}_0 or .on(0)."
        )


@kernel_dataclass
class Stationary(Kernel):
    """variance * profile(r^2), r the lengthscale-scaled distance."""

    PARAMS: ClassVar = ("lengthscale", "variance")  # the sample-site order gp/regression has always had
    variance: Array = 1.0
    lengthscale: Array = 1.0

    def gram(self, X1: Array, X2: Array) -> Array:
        return self.variance * self.profile(scaled_sqdist(X1, X2, self.lengthscale))

    def profile(self, r2: Array) -> Array:
        raise NotImplementedError

    def diag(self, X: Array) -> Array:
        return jnp.full(as_inputs(X).shape[0], 1.0) * self.variance * self.profile(jnp.zeros(()))


@kernel_dataclass
class SquaredExponential(Stationary):
    """SE: sigma_f^2 exp(-r^2 / 2); ARD with a (D,) lengthscale (Duvenaud App. B and eq. 2.4 corrected,
    Franzese eq. 5.1/6.3, Kaiser eq. 2.38)."""

    SYMBOL: ClassVar = "SE"

    def profile(self, r2: Array) -> Array:
        return jnp.exp(-0.5 * r2)


RBF = SquaredExponential


@kernel_dataclass
class Matern12(Stationary):
    """M12: sigma_f^2 exp(-r) (Franzese eq. 5.2 corrected, nu = 1/2)."""

    SYMBOL: ClassVar = "M12"

    def profile(self, r2: Array) -> Array:
        return jnp.exp(-safe_sqrt(r2))


@kernel_dataclass
class Matern32(Stationary):
    """M32: sigma_f^2 (1 + sqrt3 r) exp(-sqrt3 r) (Franzese eq. 5.2 corrected, nu = 3/2)."""

    SYMBOL: ClassVar = "M32"

    def profile(self, r2: Array) -> Array:
        r = jnp.sqrt(3.0) * safe_sqrt(r2)
        return (1.0 + r) * jnp.exp(-r)


@kernel_dataclass
class Matern52(Stationary):
    """M52: sigma_f^2 (1 + sqrt5 r + 5 r^2 / 3) exp(-sqrt5 r) (Franzese eq. 5.2 corrected, nu = 5/2)."""

    SYMBOL: ClassVar = "M52"

    def profile(self, r2: Array) -> Array:
        r = jnp.sqrt(5.0) * safe_sqrt(r2)
        return (1.0 + r + 5.0 * r2 / 3.0) * jnp.exp(-r)


@kernel_dataclass
class RationalQuadratic(Stationary):
    """RQ: sigma_f^2 (1 + r^2 / (2 alpha))^(-alpha) (Duvenaud App. B); SE as alpha -> infinity."""

    SYMBOL: ClassVar = "RQ"
    PARAMS: ClassVar = ("lengthscale", "variance", "alpha")
    alpha: Array = 1.0

    def profile(self, r2: Array) -> Array:
        return (1.0 + r2 / (2.0 * self.alpha)) ** (-self.alpha)


@kernel_dataclass
class Periodic(Kernel):
    """Per, MacKay's form: sigma_f^2 exp(-2 sum_d sin^2(pi |x_d - x'_d| / p) / l_d^2).

    Duvenaud eq. B.6; Franzese eq. 5.3, corrected (the printed form squares the difference inside the sine and has
    no amplitude; docs/sources/franzese.md#periodic-kernel). Its phase average is not zero: see ``ZeroMeanPeriodic``.
    """

    SYMBOL: ClassVar = "Per"
    PARAMS: ClassVar = ("variance", "lengthscale", "period")
    variance: Array = 1.0
    lengthscale: Array = 1.0
    period: Array = 1.0

    def gram(self, X1: Array, X2: Array) -> Array:
        diff = jnp.abs(X1[:, None, :] - X2[None, :, :])
        s = jnp.sin(jnp.pi * diff / self.period) / self.lengthscale
        return self.variance * jnp.exp(-2.0 * jnp.sum(s**2, -1))

    def diag(self, X: Array) -> Array:
        return jnp.full(as_inputs(X).shape[0], 1.0) * self.variance


@kernel_dataclass
class ZeroMeanPeriodic(Kernel):
    """ZPer, the periodic kernel of the ABCD grammar with its constant component removed (Duvenaud eq. B.11, due to
    J. R. Lloyd; GPML's covPeriodicNoDC; docs/sources/duvenaud.md#zper):

        ZPer(x, x') = sigma_f^2 [exp(cos(2 pi (x - x') / p) / l^2) - I_0(1 / l^2)] / [exp(1 / l^2) - I_0(1 / l^2)]

    I_0 the modified Bessel function of order 0. With a = 1 / l^2 this is computed as
    sigma_f^2 (exp(a (cos - 1)) - i0e(a)) / (1 - i0e(a)), i0e(a) = e^{-a} I_0(a), which neither overflows for short
    lengthscales nor loses the ratio. PSD: exp(a cos t) = I_0(a) + 2 sum_n I_n(a) cos(n t), and ZPer keeps the n >= 1
    terms. Tends to Cos as l -> infinity; can be negative. One-dimensional.
    """

    SYMBOL: ClassVar = "ZPer"
    PARAMS: ClassVar = ("variance", "lengthscale", "period")
    variance: Array = 1.0
    lengthscale: Array = 1.0
    period: Array = 1.0

    def gram(self, X1: Array, X2: Array) -> Array:
        _one_dimensional(self, X1)
        a = 1.0 / jnp.squeeze(jnp.asarray(self.lengthscale)) ** 2
        cos = jnp.cos(2.0 * jnp.pi * (X1[:, None, 0] - X2[None, :, 0]) / self.period)
        dc = i0e(a)
        return self.variance * (jnp.exp(a * (cos - 1.0)) - dc) / (1.0 - dc)

    def diag(self, X: Array) -> Array:
        return jnp.full(as_inputs(X).shape[0], 1.0) * self.variance


@kernel_dataclass
class Cosine(Kernel):
    """Cos: sigma_f^2 cos(2 pi (x - x') / p) (Duvenaud App. B, "sine waves"); one-dimensional."""

    SYMBOL: ClassVar = "Cos"
    PARAMS: ClassVar = ("variance", "period")
    variance: Array = 1.0
    period: Array = 1.0

    def gram(self, X1: Array, X2: Array) -> Array:
        _one_dimensional(self, X1)
        return self.variance * jnp.cos(2.0 * jnp.pi * (X1[:, None, 0] - X2[None, :, 0]) / self.period)

    def diag(self, X: Array) -> Array:
        return jnp.full(as_inputs(X).shape[0], 1.0) * self.variance


@kernel_dataclass
class White(Kernel):
    """WN: sigma_f^2 delta(x = x') (Duvenaud App. B). Taken as independent noise per data point: variance * I on
    the training Gram ``k(X)``, zero between two input sets ``k(X1, X2)`` (as GPML's covNoise, sklearn's
    WhiteKernel), even where two inputs coincide."""

    SYMBOL: ClassVar = "WN"
    PARAMS: ClassVar = ("variance",)
    variance: Array = 1.0

    def __call__(self, X1: Array, X2: Array | None = None) -> Array:
        X1 = as_inputs(X1)
        if X2 is None:
            return self.variance * jnp.eye(X1.shape[0])
        return jnp.zeros((X1.shape[0], as_inputs(X2).shape[0]))

    def diag(self, X: Array) -> Array:
        return jnp.full(as_inputs(X).shape[0], 1.0) * self.variance
