"""Kernels of transformed inputs, k(g(x), g(x')), and the priors on cylinders, toruses and Moebius strips built from
them (Duvenaud 2014, secs. 2.7.2 and 2.8, eq. 2.42, Figs 2.11-2.12; docs/sources/duvenaud.md#manifold-kernels).

- ``Circular(kernel, period, periodic_dims)``: each periodic column x_d goes to the circle (cos(2 pi x_d / p),
  sin(2 pi x_d / p)), the others pass unchanged. With SE inside this is MacKay's construction of Per (2.42): SE on
  the circle with lengthscale l is exp(-2 sin^2(pi (x - x') / p) / l^2), Per with the same l and p. On two columns:
  periodic in one the cylinder (SE_0 x Per_1), in both the torus (Per_0 x Per_1), as sec. 2.8 names them.
- ``MoebiusMap(kernel, period)``: two periodic columns go to (z_0 + z_1, z_0 z_1) with z_d = exp(2 pi i x_d / p), as
  four real columns. The pair of symmetric polynomials determines the unordered pair {z_0, z_1}, so this embeds the
  torus modulo the swap, Sym^2(S^1), which is the Moebius strip, in R^4: the thesis's three symmetries of sec. 2.8.1
  by the projection recipe (2.39). The thesis gives the symmetries and not the kernel; ``moebius`` builds the
  sum-over-orbit kernel (2.36) on the torus by default, this map is the alternative.

Inputs (n, D); the inner kernel sees the embedded columns (``input_dims``), so a sampled ARD lengthscale has one
entry per embedded column; for the stationary (MacKay) form the cosine and sine of one column share a lengthscale
(the constructors below use a scalar lengthscale).
"""

from typing import Any, ClassVar

import jax.numpy as jnp

from zoo.kernels.base import Kernel, KernelError, Sum, as_inputs, kernel_dataclass
from zoo.kernels.stationary import SquaredExponential
from zoo.kernels.symmetric import Symmetrised, swap_group

Array = Any


class Embedded(Kernel):
    """k(g(x), g(x')) for a map g of the inputs; subclasses define ``embed(X) -> (n, E)``."""

    CHILDREN: ClassVar = ("kernel",)

    def embed(self, X: Array) -> Array:
        raise NotImplementedError

    def __call__(self, X1: Array, X2: Array | None = None) -> Array:
        return self.kernel(self.embed(as_inputs(X1)), None if X2 is None else self.embed(as_inputs(X2)))

    def diag(self, X: Array) -> Array:
        return self.kernel.diag(self.embed(as_inputs(X)))

    def _inner(self) -> str:
        return f"({self.kernel})" if isinstance(self.kernel, Sum) else str(self.kernel)


def _check_columns(kernel: Kernel, dims: tuple[int, ...], D: int) -> None:
    if not dims or len(set(dims)) != len(dims) or min(dims) < 0:
        raise KernelError(f"{kernel.SYMBOL}: periodic columns must be distinct non-negative indices, got {dims}.")
    if max(dims) >= D:
        raise KernelError(
            f"{kernel.SYMBOL} makes column {max(dims)} periodic, but the inputs have {D} (counted from 0)."
        )


@kernel_dataclass
class Circular(Embedded):
    """``kernel`` of the inputs with columns ``periodic_dims`` (static) mapped onto circles of period ``period``."""

    SYMBOL: ClassVar = "Circ"
    PARAMS: ClassVar = ("period",)
    kernel: Kernel
    period: Array = 1.0
    periodic_dims: tuple[int, ...] = (0,)

    def embed(self, X: Array) -> Array:
        _check_columns(self, self.periodic_dims, X.shape[1])
        columns = []
        for d in range(X.shape[1]):
            if d in self.periodic_dims:
                angle = 2.0 * jnp.pi * X[:, d] / self.period
                columns += [jnp.cos(angle), jnp.sin(angle)]
            else:
                columns.append(X[:, d])
        return jnp.stack(columns, 1)

    def input_dims(self, D: int) -> int:
        return D + len(self.periodic_dims)

    def param_shape(self, name: str, D: int) -> tuple[int, ...]:
        return ()  # one period for every periodic column

    def __str__(self) -> str:
        return f"Circ{list(self.periodic_dims)}{self._inner()}"


@kernel_dataclass
class MoebiusMap(Embedded):
    """``kernel`` of (Re, Im of z_0 + z_1, Re, Im of z_0 z_1), z_d = exp(2 pi i x_d / p), for columns ``dims``
    (static, two); other columns pass unchanged after them."""

    SYMBOL: ClassVar = "Moeb"
    PARAMS: ClassVar = ("period",)
    kernel: Kernel
    period: Array = 1.0
    dims: tuple[int, int] = (0, 1)

    def embed(self, X: Array) -> Array:
        _check_columns(self, self.dims, X.shape[1])
        if len(self.dims) != 2:
            raise KernelError(f"the Moebius map glues two periodic columns, got {self.dims}.")
        a, b = (2.0 * jnp.pi * X[:, d] / self.period for d in self.dims)
        rest = [X[:, d] for d in range(X.shape[1]) if d not in self.dims]
        return jnp.stack([jnp.cos(a) + jnp.cos(b), jnp.sin(a) + jnp.sin(b), jnp.cos(a + b), jnp.sin(a + b), *rest], 1)

    def input_dims(self, D: int) -> int:
        return D + 2

    def param_shape(self, name: str, D: int) -> tuple[int, ...]:
        return ()

    def __str__(self) -> str:
        return f"Moeb{list(self.dims)}{self._inner()}"


def cylinder(lengthscale: float = 1.0, period: float = 1.0, variance: float = 1.0) -> Kernel:
    """SE on (x_0, circle(x_1)): periodic in x_1 only; equals SE_0 x Per_1 with the same lengthscale (sec. 2.8)."""
    return Circular(SquaredExponential(variance, lengthscale), period, periodic_dims=(1,))


def torus(lengthscale: float = 1.0, period: float = 1.0, variance: float = 1.0) -> Kernel:
    """SE on (circle(x_0), circle(x_1)): periodic in both; equals Per_0 x Per_1 (sec. 2.8)."""
    return Circular(SquaredExponential(variance, lengthscale), period, periodic_dims=(0, 1))


def moebius(lengthscale: float = 1.0, period: float = 1.0, variance: float = 1.0, method: str = "sum") -> Kernel:
    """A kernel with the symmetries of sec. 2.8.1: periodic in x_0 and in x_1 with one period, and symmetric under
    x_0 <-> x_1. ``method`` "sum" (default; the torus kernel summed over the swap orbit, 2.36), "product" (2.40) or
    "map" (``MoebiusMap``, a projection). Projecting the torus kernel's inputs to [min, max] is not offered: the swap's
    fundamental domain is not one of the periodic shifts, so that kernel loses the periodicity."""
    if method == "map":
        return MoebiusMap(SquaredExponential(variance, lengthscale), period)
    if method not in ("sum", "product"):
        raise KernelError(f"the Moebius kernel's method is 'sum', 'product' or 'map', got {method!r}.")
    return Symmetrised(torus(lengthscale, period, variance), swap_group(2), method)
