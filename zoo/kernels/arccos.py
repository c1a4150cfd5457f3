"""The arc-cosine kernels of orders 0, 1 and 2 (Cho & Saul 2009; Kaiser 2021, sec. 2.4, Fig. 2.6).

k_n(x, x') = variance / pi * (|x~| |x~'|)^n J_n(theta),  cos theta = x~ . x~' / (|x~| |x~'|),

  J_0 = pi - theta,  J_1 = sin theta + (pi - theta) cos theta,  J_2 = 3 sin theta cos theta + (pi - theta)(1 + 2 cos^2),

on the augmented, scaled inputs x~ = (sqrt(weight_variance) * x, sqrt(bias_variance)): so x~ . x~' =
sum_d w_d x_d x'_d + b (docs/sources/kaiser.md#arc-cosine). It is the covariance of an infinitely wide network with
one hidden layer, f(x) = sqrt(2 variance / H) sum_h v_h Theta(w_h . x + b_h) (w_h . x + b_h)^n with v_h ~ N(0, 1),
w_h ~ N(0, diag(weight_variance)), b_h ~ N(0, bias_variance), H -> infinity: order 0 has step units, 1 ReLUs, 2
rectified quadratics. Kaiser gives no formula (GPflow's ``ArcCosine``, the parameterisation used here, is what the
thesis's code base had).

Numerics: with p = x~ . x~' and s = |x~ x~'^T - x~' x~^T|_F / sqrt 2 = |x~| |x~'| sin theta (Lagrange's identity,
a sum of squares, so it is exactly 0 on the diagonal instead of a cancellation's rounding noise), theta =
atan2(s, p) and the (|x~| |x~'|)^n J_n are polynomials in s, p and pi - theta: no division and no arccos, whose
infinite slope at 1 would make every hyperparameter gradient NaN on the diagonal. Memory is O(n1 n2 D^2) for the
identity; fine for the low-dimensional inputs this kernel is used on. Inputs (n, D); Gram matrices (n1, n2).
"""

from typing import Any, ClassVar

import jax.numpy as jnp

from zoo.kernels.base import Kernel, KernelError, as_inputs, kernel_dataclass, safe_sqrt

Array = Any

ORDERS = (0, 1, 2)


def _augment(X: Array, weight_variance: Array, bias_variance: Array) -> Array:
    """x~ = (sqrt(w) x, sqrt(b)): (n, D + 1)."""
    X = as_inputs(X)
    w = jnp.broadcast_to(jnp.asarray(weight_variance, dtype=float), (X.shape[1],))
    bias = jnp.full((X.shape[0], 1), 1.0) * jnp.sqrt(bias_variance)
    return jnp.concatenate([X * jnp.sqrt(w), bias], axis=1)


def angular_parts(A1: Array, A2: Array) -> tuple[Array, Array, Array]:
    """(p, s, theta) of augmented inputs A1 (n1, E), A2 (n2, E): p = a . a', s = |a| |a'| sin theta >= 0 (Lagrange's
    identity |a|^2 |a'|^2 - (a . a')^2 = sum_{i<j} (a_i a'_j - a_j a'_i)^2), theta = atan2(s, p) in [0, pi]."""
    p = A1 @ A2.T
    wedge = A1[:, None, :, None] * A2[None, :, None, :] - A1[:, None, None, :] * A2[None, :, :, None]
    s = safe_sqrt(0.5 * jnp.sum(wedge**2, axis=(-1, -2)))
    return p, s, jnp.arctan2(s, p)


def arc_cosine_gram(order: int, p: Array, s: Array, theta: Array, norms2: Array) -> Array:
    """pi k_n / variance = (|a| |a'|)^n J_n(theta) written in p, s and rest = pi - theta; norms2 = |a|^2 |a'|^2."""
    rest = jnp.pi - theta
    if order == 0:
        return rest
    if order == 1:
        return s + rest * p
    return 3.0 * s * p + rest * (norms2 + 2.0 * p**2)


@kernel_dataclass
class _ArcCosine(Kernel):
    """Shared body; the subclasses fix the order (static) and the grammar's symbol."""

    ORDER: ClassVar[int] = 1
    PARAMS: ClassVar = ("variance", "weight_variance", "bias_variance")
    variance: Array = 1.0
    weight_variance: Array = 1.0
    bias_variance: Array = 1.0

    def gram(self, X1: Array, X2: Array) -> Array:
        A1 = _augment(X1, self.weight_variance, self.bias_variance)
        A2 = _augment(X2, self.weight_variance, self.bias_variance)
        p, s, theta = angular_parts(A1, A2)
        norms2 = jnp.sum(A1**2, 1)[:, None] * jnp.sum(A2**2, 1)[None, :]
        return self.variance / jnp.pi * arc_cosine_gram(self.ORDER, p, s, theta, norms2)

    def diag(self, X: Array) -> Array:
        # theta = 0: J_n(0) = pi (n = 0, 1) and 3 pi (n = 2), so k(x, x) = variance |x~|^{2n} J_n(0) / pi.
        r2 = jnp.sum(_augment(X, self.weight_variance, self.bias_variance) ** 2, 1)
        return self.variance * (3.0 if self.ORDER == 2 else 1.0) * r2**self.ORDER

    def param_shape(self, name: str, D: int) -> tuple[int, ...]:
        """``weight_variance`` is ARD, one per input column (GPflow's ``weight_variances``); the rest scalars."""
        return (D,) if name == "weight_variance" else ()


@kernel_dataclass
class ArcCosine0(_ArcCosine):
    """AC0: step units, k = variance (1 - theta / pi)."""

    SYMBOL: ClassVar = "AC0"
    ORDER: ClassVar = 0


@kernel_dataclass
class ArcCosine1(_ArcCosine):
    """AC1: ReLU units, k = variance / pi |x~| |x~'| (sin theta + (pi - theta) cos theta)."""

    SYMBOL: ClassVar = "AC1"
    ORDER: ClassVar = 1


@kernel_dataclass
class ArcCosine2(_ArcCosine):
    """AC2: rectified quadratic units, k = variance / pi |x~|^2 |x~'|^2 (3 sin cos + (pi - theta)(1 + 2 cos^2))."""

    SYMBOL: ClassVar = "AC2"
    ORDER: ClassVar = 2


BY_ORDER = {0: ArcCosine0, 1: ArcCosine1, 2: ArcCosine2}


def arc_cosine(order: int = 1, variance=1.0, weight_variance=1.0, bias_variance=1.0) -> Kernel:
    """The arc-cosine kernel of ``order`` 0, 1 or 2 (defaults: GPflow's, every variance 1)."""
    if order not in BY_ORDER:
        raise KernelError(f"the arc-cosine kernel has orders {ORDERS} (Cho & Saul 2009), got {order!r}.")
    return BY_ORDER[order](variance, weight_variance, bias_variance)
