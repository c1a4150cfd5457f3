"""Kernels as values: the base class, the pytree registration, and the algebra (+, x, scalars, active dimensions).

A kernel is a frozen dataclass registered as a JAX pytree: its hyperparameters (``PARAMS``) and child kernels
(``CHILDREN``) are the pytree's children, everything else (``dims`` of an active-dimension restriction) is static
structure. So ``jit``, ``vmap`` and ``grad`` take kernels as arguments, and ``jax.grad(f)(k)`` is a kernel of
gradients. ``k(X1, X2)`` is the (n1, n2) Gram matrix and ``k(X)`` the (n, n) training one; inputs are (n, D) arrays
(a 1-D array is read as D = 1).

Algebra (Duvenaud 2014, secs. 2.2-2.4, eqs. 2.2-2.3; docs/sources/duvenaud.md#kernel-algebra): ``k1 + k2`` is the
kernel of the sum of independent functions, ``k1 * k2`` the product kernel; a number c on either side is the
constant kernel ``Const(c)`` (``2.0 * k`` = Const(2) x k, ``k + 1.0`` = k + Const(1)); ``sum([k1, k2])`` works
(its start value 0 is the additive identity); ``k.on(dims)`` restricts k to input columns ``dims``. Any other
operand is a ``TypeError``.
"""

import dataclasses
import numbers
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from zoo.eager import compile_methods
from zoo.errors import ZooError

Array = Any


class KernelError(ZooError):
    """A kernel that does not fit its inputs or has invalid hyperparameters."""


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


def safe_sqrt(x: Array) -> Array:
    """sqrt with a finite derivative at 0 (the diagonal): zeros are routed through a harmless value."""
    positive = x > 0.0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, x, 1.0)), 0.0)


def kernel_dataclass(cls):
    """Frozen dataclass registered as a pytree: ``PARAMS`` and ``CHILDREN`` are data, other fields static."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    data = [*cls.PARAMS, *cls.CHILDREN]
    meta = [f.name for f in dataclasses.fields(cls) if f.name not in data]
    return jax.tree_util.register_dataclass(cls, data_fields=data, meta_fields=meta)


def is_scalar(value: Any) -> bool:
    """A real number (Python, NumPy or a 0-d array): promoted to the constant kernel in ``+`` and ``*``."""
    if isinstance(value, bool):
        return False
    if isinstance(value, numbers.Real):
        return True
    return hasattr(value, "shape") and hasattr(value, "dtype") and value.shape == () and value.dtype.kind in "fiu"


class Kernel:
    """Base class. Subclasses set ``SYMBOL`` (grammar name), ``PARAMS`` (hyperparameter fields) and ``CHILDREN``
    (kernel fields), and define ``gram(X1, X2)`` on (n, D) arrays (or override ``__call__`` when they must know
    that X2 is absent, as WN does)."""

    SYMBOL: ClassVar[str] = "?"
    PARAMS: ClassVar[tuple[str, ...]] = ()
    CHILDREN: ClassVar[tuple[str, ...]] = ()
    __array_ufunc__ = None  # numpy scalars defer to our reflected operators (2.0 * k with a np.float64)

    def __init_subclass__(cls, **kwargs):
        # A base kernel's Gram evaluated outside jit is one program per shape (zoo.eager). Not a composite's: the
        # structures of a search are many, each evaluated once, and a program per structure cost more than its
        # operations compiled one by one, which every structure shares (docs/performance.md#test-suite).
        super().__init_subclass__(**kwargs)
        if not cls.CHILDREN:
            compile_methods(cls, ("__call__", "gram", "diag"))

    def __call__(self, X1: Array, X2: Array | None = None) -> Array:
        X1 = as_inputs(X1)
        X2 = X1 if X2 is None else as_inputs(X2)
        return self.gram(X1, X2)

    def gram(self, X1: Array, X2: Array) -> Array:
        raise NotImplementedError

    def diag(self, X: Array) -> Array:
        """The diagonal of ``k(X)`` without forming it where the kernel knows how: (n,)."""
        X = as_inputs(X)
        return jnp.diagonal(self(X))

    # -- algebra -------------------------------------------------------------------------------------------------

    def __add__(self, other: Any) -> "Kernel":
        return Sum(self, _operand(other, "+"))

    def __radd__(self, other: Any) -> "Kernel":
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self  # sum([k1, k2]) starts from 0
        return Sum(_operand(other, "+"), self)

    def __mul__(self, other: Any) -> "Kernel":
        return Product(self, _operand(other, "*"))

    def __rmul__(self, other: Any) -> "Kernel":
        return Product(_operand(other, "*"), self)

    def on(self, dims: Any) -> "Kernel":
        """This kernel applied to input columns ``dims`` only (active dimensions; the subscript of SE_2)."""
        dims = tuple(int(d) for d in jnp.atleast_1d(jnp.asarray(dims)))
        if not dims or min(dims) < 0:
            raise KernelError(f"active dimensions must be non-negative column indices, got {dims}.")
        return ActiveDims(self, dims)

    def __str__(self) -> str:
        return self.SYMBOL

    def input_dims(self, D: int) -> int:
        """How many input columns this kernel's own hyperparameters see when the data have D."""
        return D

    def param_shape(self, name: str, D: int) -> tuple[int, ...]:
        """Shape of hyperparameter ``name`` as a sample site when the kernel sees D input columns: an ARD
        ``lengthscale`` is (D,), every other one a scalar; a kernel with vector hyperparameters overrides this
        (the additive kernel's order variances, ``zoo.kernels.additive``)."""
        return (D,) if name == "lengthscale" else ()


@kernel_dataclass
class Constant(Kernel):
    """C: sigma_f^2 (Duvenaud App. B, a constant offset); the kernel a number becomes in ``+`` and ``*``."""

    SYMBOL: ClassVar = "C"
    PARAMS: ClassVar = ("variance",)
    variance: Array = 1.0

    def gram(self, X1: Array, X2: Array) -> Array:
        return jnp.full((X1.shape[0], X2.shape[0]), 1.0) * self.variance

    def diag(self, X: Array) -> Array:
        return jnp.full(as_inputs(X).shape[0], 1.0) * self.variance


def _operand(other: Any, op: str) -> Kernel:
    if isinstance(other, Kernel):
        return other
    if is_scalar(other):
        return Constant(other)
    raise TypeError(
        f"a kernel can be combined with {op} only with another kernel or a number, got {type(other).__name__}."
    )


def _atom(kernel: Kernel) -> str:
    """The kernel's text, parenthesised when it is a sum (inside a product or under a subscript)."""
    return f"({kernel})" if isinstance(kernel, Sum) else str(kernel)


@kernel_dataclass
class Sum(Kernel):
    """k_a + k_b (Duvenaud eq. 2.2): the kernel of f_a + f_b for independent f_a, f_b."""

    CHILDREN: ClassVar = ("left", "right")
    left: Kernel
    right: Kernel

    def __call__(self, X1: Array, X2: Array | None = None) -> Array:
        # Dispatch through __call__ so a White term still sees X2 is None (the training Gram).
        return self.left(X1, X2) + self.right(X1, X2)

    def diag(self, X: Array) -> Array:
        return self.left.diag(X) + self.right.diag(X)

    def __str__(self) -> str:
        return f"{self.left} + {self.right}"


@kernel_dataclass
class Product(Kernel):
    """k_a x k_b (Duvenaud eq. 2.3): positive definite when both factors are."""

    CHILDREN: ClassVar = ("left", "right")
    left: Kernel
    right: Kernel

    def __call__(self, X1: Array, X2: Array | None = None) -> Array:
        return self.left(X1, X2) * self.right(X1, X2)

    def diag(self, X: Array) -> Array:
        return self.left.diag(X) * self.right.diag(X)

    def __str__(self) -> str:
        return f"{_atom(self.left)} x {_atom(self.right)}"


@kernel_dataclass
class ActiveDims(Kernel):
    """``kernel`` applied to the input columns ``dims`` (static); printed with a subscript, SE_0 or SE_{0,2}."""

    CHILDREN: ClassVar = ("kernel",)
    kernel: Kernel
    dims: tuple[int, ...]

    def _pick(self, X: Array) -> Array:
        X = as_inputs(X)
        if max(self.dims) >= X.shape[1]:
            raise KernelError(
                f"kernel {self} acts on input dimension {max(self.dims)}, but the inputs have {X.shape[1]} "
                f"(dimensions are counted from 0)."
            )
        return X[:, jnp.asarray(self.dims)]

    def __call__(self, X1: Array, X2: Array | None = None) -> Array:
        return self.kernel(self._pick(X1), None if X2 is None else self._pick(X2))

    def diag(self, X: Array) -> Array:
        return self.kernel.diag(self._pick(X))

    def input_dims(self, D: int) -> int:
        return len(self.dims)

    def __str__(self) -> str:
        inner = self.kernel
        text = f"({inner})" if isinstance(inner, (Sum, Product, ActiveDims)) else str(inner)
        sub = str(self.dims[0]) if len(self.dims) == 1 else "{" + ",".join(map(str, self.dims)) + "}"
        return f"{text}_{sub}"
