"""Non-stationary kernels: Lin, and the changepoint CP and change window CW that switch between two kernels.

Duvenaud 2014, App. B (eqs. B.3, B.8-B.10) and sec. 2.3 (eq. 2.19-2.21: multiplying by a known function a(x) gives
a(x) k(x, x') a(x')); the parameterisations the thesis leaves open are fixed in docs/sources/duvenaud.md#changepoint.
Inputs (n, D); Gram matrices (n1, n2).
"""

from typing import Any, ClassVar

import jax

from zoo.kernels.base import Kernel, KernelError, as_inputs, kernel_dataclass

Array = Any


@kernel_dataclass
class Linear(Kernel):
    """Lin: offset^2 + variance * (x - location) . (x' - location).

    Duvenaud eq. B.3 is sigma_f^2 (x - c)(x' - c) (``variance`` = sigma_f^2, ``location`` = c); Franzese eq. 5.4 is
    sigma_0^2 + x . x' (``offset`` = sigma_0, the standard deviation of the intercept; docs/sources/franzese.md).
    Together: Bayesian linear regression with a Gaussian intercept and slope, three identifiable parameters in 1-D
    (the 2 x 2 prior covariance of intercept and slope). Defaults offset 0, location 0: variance * x . x'.
    """

    SYMBOL: ClassVar = "Lin"
    PARAMS: ClassVar = ("variance", "offset", "location")
    variance: Array = 1.0
    offset: Array = 0.0
    location: Array = 0.0

    def gram(self, X1: Array, X2: Array) -> Array:
        return self.offset**2 + self.variance * (X1 - self.location) @ (X2 - self.location).T


def _first_column(kernel: Kernel, X: Array) -> Array:
    X = as_inputs(X)
    if X.shape[1] != 1:
        raise KernelError(
            f"{kernel.SYMBOL} switches along one input, but the inputs have {X.shape[1]} columns; restrict it, "
            f"e.g. {kernel.SYMBOL}(SE, SE)_0."
        )
    return X[:, 0]


def _switch(weight_1: Array, k1: Kernel, k2: Kernel, X1: Array, X2: Array | None, weight_2: Array | None) -> Array:
    """w(x) k1(x, x') w(x') + (1 - w(x)) k2(x, x') (1 - w(x')) (Duvenaud eq. 2.21 twice): (n1, n2)."""
    w2 = weight_1 if weight_2 is None else weight_2
    return weight_1[:, None] * k1(X1, X2) * w2[None, :] + (1.0 - weight_1)[:, None] * k2(X1, X2) * (1.0 - w2)[None, :]


@kernel_dataclass
class Changepoint(Kernel):
    """CP(k1, k2) = s(x) k1(x, x') s(x') + (1 - s(x)) k2(x, x') (1 - s(x')), s(x) = sigmoid((location - x) / width).

    Duvenaud eq. B.8 / 2.19 with a *decreasing* sigmoid, so that k1 applies before the change (x < location) and k2
    after it: CP(k1, k2) reads in the order of the input axis. The thesis writes an increasing sigmoid, under which
    k1 would apply after the change; the grammar's rule (C.4) S -> CP(S, S) is symmetric, so nothing expressible is
    lost (docs/sources/duvenaud.md#changepoint). ``width`` > 0 is the inverse of the thesis's "steepness": the
    switch takes place over a few widths. One-dimensional inputs.
    """

    SYMBOL: ClassVar = "CP"
    PARAMS: ClassVar = ("location", "width")
    CHILDREN: ClassVar = ("first", "second")
    first: Kernel
    second: Kernel
    location: Array = 0.0
    width: Array = 1.0

    def weight(self, X: Array) -> Array:
        """s(x), the weight of ``first``: (n,)."""
        return jax.nn.sigmoid((self.location - _first_column(self, X)) / self.width)

    def __call__(self, X1: Array, X2: Array | None = None) -> Array:
        w2 = None if X2 is None else self.weight(X2)
        return _switch(self.weight(X1), self.first, self.second, X1, X2, w2)

    def diag(self, X: Array) -> Array:
        w = self.weight(X)
        return w**2 * self.first.diag(X) + (1.0 - w) ** 2 * self.second.diag(X)

    def __str__(self) -> str:
        return f"CP({self.first}, {self.second})"


@kernel_dataclass
class ChangeWindow(Kernel):
    """CW(k_in, k_out) = w(x) k_in(x, x') w(x') + (1 - w(x)) k_out(x, x') (1 - w(x')), with the window

        w(x) = sigmoid((x - start) / width) * sigmoid((start + duration - x) / width),

    an increasing sigmoid at ``start`` times a decreasing one at start + ``duration`` (duration > 0, so the ends
    stay ordered; one ``width`` for both edges). The thesis describes CW in words only (ch. 3, rules C.5-C.7);
    this is the form of docs/sources/duvenaud.md#changepoint. CW(S, C) is S inside the window, CW(C, S) outside it.
    One-dimensional inputs.
    """

    SYMBOL: ClassVar = "CW"
    PARAMS: ClassVar = ("start", "duration", "width")
    CHILDREN: ClassVar = ("inside", "outside")
    inside: Kernel
    outside: Kernel
    start: Array = 0.0
    duration: Array = 1.0
    width: Array = 1.0

    def weight(self, X: Array) -> Array:
        """w(x), the weight of ``inside``: (n,)."""
        x = _first_column(self, X)
        rise = jax.nn.sigmoid((x - self.start) / self.width)
        return rise * jax.nn.sigmoid((self.start + self.duration - x) / self.width)

    def __call__(self, X1: Array, X2: Array | None = None) -> Array:
        w2 = None if X2 is None else self.weight(X2)
        return _switch(self.weight(X1), self.inside, self.outside, X1, X2, w2)

    def diag(self, X: Array) -> Array:
        w = self.weight(X)
        return w**2 * self.inside.diag(X) + (1.0 - w) ** 2 * self.outside.diag(X)

    def __str__(self) -> str:
        return f"CW({self.inside}, {self.outside})"
