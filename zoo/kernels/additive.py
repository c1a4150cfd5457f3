"""The additive kernel of all interaction orders (Duvenaud 2014, ch. 6, eqs. 6.4-6.15), and its dropout reading
(sec. 6.4.2, eqs. 6.21-6.23, with corrected weights).

Each input dimension d has a one-dimensional base kernel k_d(x_d, x'_d) with output variance fixed to 1 and its own
lengthscale (the thesis's experimental setting, sec. 6.6); the order-n kernel is sigma_n^2 e_n(k_1, ..., k_D) with e_n
the n-th elementary symmetric polynomial (6.6, 6.9-6.13), and the additive kernel sums orders 1..R, R <= D (the
maximum order). Two ways to compute e_0..e_R, both O(D R) per Gram entry after the D base Grams:

- ``esp_newton_girard``: the Newton-Girard formulae (6.14) from the power sums s_a = sum_d k_d^a;
- ``esp_recursion``: the dynamic programme over dimensions E_n <- E_n + k_d E_{n-1} (one dimension at a time, no
  subtraction, so no cancellation; docs/sources/duvenaud.md#additive-kernel).

``esp_brute_force`` sums the products over all subsets (itertools); it is the reference both are checked against.
``Additive`` is a kernel value of ``zoo.kernels``: a pytree with hyperparameters ``lengthscale`` (D,) and ``variance``
(R,) (the order variances sigma_1^2..sigma_R^2), so it takes part in ``+``, ``*``, ``on(dims)``, ``jit`` and ``grad``
and gets sample sites of those shapes (``param_shape``). Inputs (n, D); Gram matrices (n1, n2).
"""

import itertools
from math import comb
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from zoo.kernels.base import Kernel, KernelError, as_inputs, kernel_dataclass
from zoo.kernels.stationary import Matern12, Matern32, Matern52, SquaredExponential

Array = Any

# One-dimensional base kernels with unit variance and one lengthscale (their ``profile`` of r^2).
BASE_KERNELS = {"SE": SquaredExponential, "M12": Matern12, "M32": Matern32, "M52": Matern52}
METHODS = ("recursion", "newton_girard")


def esp_recursion(ks: Array, max_order: int) -> Array:
    """e_0..e_R of the base-kernel values ks (D, ...) -> (R + 1, ...), by E_n^(d) = E_n^(d-1) + k_d E_{n-1}^(d-1)
    over d = 1..D with E_0 = 1 (docs/sources/duvenaud.md#additive-kernel): only sums of products of non-negative
    terms when the k_d are, so no cancellation."""
    ks = jnp.asarray(ks)
    start = jnp.zeros((max_order + 1, *ks.shape[1:]), ks.dtype).at[0].set(1.0)

    def add_dimension(E, k):
        return E.at[1:].add(k * E[:-1]), None

    E, _ = jax.lax.scan(add_dimension, start, ks, unroll=True)  # D is small and static: one fused loop body
    return E


def esp_newton_girard(ks: Array, max_order: int) -> Array:
    """e_0..e_R by the Newton-Girard formulae (Duvenaud eq. 6.14): e_n = (1/n) sum_{a=1}^n (-1)^(a-1) e_{n-a} s_a,
    s_a = sum_d k_d^a. ks (D, ...) -> (R + 1, ...). Alternating sums: loses digits when the terms nearly cancel
    (high orders of small k_d); kept as the thesis's algorithm and a cross-check of ``esp_recursion``."""
    ks = jnp.asarray(ks)
    power_sums = [jnp.sum(ks**a, axis=0) for a in range(1, max_order + 1)]
    e = [jnp.ones(ks.shape[1:], ks.dtype)]
    for n in range(1, max_order + 1):
        e.append(sum((-1) ** (a - 1) * e[n - a] * power_sums[a - 1] for a in range(1, n + 1)) / n)
    return jnp.stack(e)


def esp_brute_force(ks: np.ndarray, max_order: int) -> np.ndarray:
    """e_0..e_R as the sum over all subsets of size n of the product of their k_d (eqs. 6.6, 6.9-6.13): the
    2^D-term reference. ks (D, ...) -> (R + 1, ...), NumPy."""
    ks = np.asarray(ks, float)
    out = np.zeros((max_order + 1, *ks.shape[1:]))
    for n in range(max_order + 1):
        for subset in itertools.combinations(range(ks.shape[0]), n):
            out[n] += np.prod(ks[list(subset)], axis=0)
    return out


def order_variance_shares(order_variances: Array, D: int) -> np.ndarray:
    """Share of the prior variance of f(x) contributed by each order n = 1..R: sigma_n^2 C(D, n) / sum_m
    sigma_m^2 C(D, m), since each unit-variance base kernel is 1 at x = x' and e_n(1, ..., 1) = C(D, n). Table 6.1's
    "percentage of variance contributed by each order" read this way (docs/sources/duvenaud.md#table-6-1)."""
    v = np.asarray(order_variances, float)
    weights = v * np.array([comb(D, n) for n in range(1, v.size + 1)])
    return weights / weights.sum()


@kernel_dataclass
class Additive(Kernel):
    """k(x, x') = sum_{n=1}^R sigma_n^2 e_n(k_1(x_1, x'_1), ..., k_D(x_D, x'_D)) (Duvenaud eqs. 6.4-6.7, 6.14).

    ``lengthscale``: (D,) (or a scalar for all dimensions); ``variance``: (R,) order variances sigma_1^2..sigma_R^2
    (or a scalar for all orders); ``max_order`` R (static, 1 <= R <= D); ``base``: the base kernel's symbol (SE, M12,
    M32, M52), one for every dimension or a tuple of D (static); ``method``: "recursion" (default, stable) or
    "newton_girard" (6.14). With SE bases, R = 1 is the first-order model sigma_1^2 sum_d SE_d (GP-1st) and the
    order-D term alone is SE-ARD with variance sigma_D^2 (6.8).
    """

    SYMBOL: ClassVar = "Add"
    PARAMS: ClassVar = ("lengthscale", "variance")
    lengthscale: Array = 1.0
    variance: Array = 1.0
    max_order: int = 1
    base: str | tuple[str, ...] = "SE"
    method: str = "recursion"

    def __post_init__(self) -> None:
        if isinstance(self.max_order, bool) or not isinstance(self.max_order, int | np.integer) or self.max_order < 1:
            raise KernelError(f"the additive kernel's max_order must be an integer >= 1, got {self.max_order!r}.")
        if self.method not in METHODS:
            raise KernelError(f"the additive kernel's method must be one of {METHODS}, got {self.method!r}.")
        bases = (self.base,) if isinstance(self.base, str) else tuple(self.base)
        unknown = [b for b in bases if b not in BASE_KERNELS]
        if unknown or not bases:
            raise KernelError(f"unknown base kernel(s) {unknown} of the additive kernel; known: {list(BASE_KERNELS)}.")

    def param_shape(self, name: str, D: int) -> tuple[int, ...]:
        return (D,) if name == "lengthscale" else (self.max_order,)

    def _check(self, D: int) -> None:
        if self.max_order > D:
            raise KernelError(
                f"the additive kernel's max_order {self.max_order} exceeds the {D} input dimensions "
                f"(orders 1..D exist; Duvenaud eq. 6.6)."
            )
        if not isinstance(self.base, str) and len(self.base) != D:
            raise KernelError(f"the additive kernel has {len(self.base)} base kernels for {D} input dimensions.")
        for name, want in (("lengthscale", D), ("variance", self.max_order)):
            shape = jnp.shape(getattr(self, name))
            if shape not in ((), (want,)):
                raise KernelError(f"the additive kernel's {name} has shape {shape}; expected () or ({want},).")

    def base_grams(self, X1: Array, X2: Array) -> Array:
        """The D unit-variance base Grams k_d(x_d, x'_d): (D, n1, n2)."""
        D = X1.shape[1]
        self._check(D)
        lengthscale = jnp.broadcast_to(jnp.asarray(self.lengthscale, float), (D,))
        r2 = ((X1.T[:, :, None] - X2.T[:, None, :]) / lengthscale[:, None, None]) ** 2
        bases = (self.base,) * D if isinstance(self.base, str) else self.base
        if len(set(bases)) == 1:
            return BASE_KERNELS[bases[0]]().profile(r2)
        return jnp.stack([BASE_KERNELS[b]().profile(r2[d]) for d, b in enumerate(bases)])

    def order_grams(self, X1: Array, X2: Array | None = None) -> Array:
        """sigma_n^2 e_n(k_1..k_D) for n = 1..R: (R, n1, n2), the Gram of each order's component."""
        X1 = as_inputs(X1)
        X2 = X1 if X2 is None else as_inputs(X2)
        esp = esp_recursion if self.method == "recursion" else esp_newton_girard
        e = esp(self.base_grams(X1, X2), self.max_order)[1:]
        variance = jnp.broadcast_to(jnp.asarray(self.variance, float), (self.max_order,))
        return variance[:, None, None] * e

    def gram(self, X1: Array, X2: Array) -> Array:
        return jnp.sum(self.order_grams(X1, X2), axis=0)

    def diag(self, X: Array) -> Array:
        """sum_n sigma_n^2 C(D, n) at every point (each unit-variance base kernel is 1 at x = x'): (n,)."""
        X = as_inputs(X)
        D = X.shape[1]
        self._check(D)
        variance = jnp.broadcast_to(jnp.asarray(self.variance, float), (self.max_order,))
        counts = jnp.array([comb(D, n) for n in range(1, self.max_order + 1)], float)
        return jnp.full(X.shape[0], 1.0) * jnp.sum(variance * counts)

    def __str__(self) -> str:
        return f"Add{self.max_order}"


# -- dropout on the inputs of a GP (sec. 6.4.2) ----------------------------------------------------------------------


def dropout_order_weights(D: int, keep: float) -> np.ndarray:
    """Weights w_0..w_D with which dropout on the D inputs of a product kernel weights the orders: keeping each input
    independently with probability ``keep`` = p gives cov = E_r[prod_d k_d^{r_d}] = prod_d (1 - p + p k_d) =
    sum_n p^n (1 - p)^(D - n) e_n(k). The thesis's 2^-D at p = 1/2 (6.23) is this; its "weighted by the binomial
    coefficient" for other p is not (docs/sources/duvenaud.md#dropout). (D + 1,), order 0 (a constant) first."""
    if not 0.0 <= keep <= 1.0:
        raise KernelError(f"the keep probability of dropout must lie in [0, 1], got {keep}.")
    n = np.arange(D + 1)
    return keep**n * (1.0 - keep) ** (D - n)


def dropout_covariance(ks: Array, keep: float) -> Array:
    """The covariance of the dropout mixture (6.22) in closed form, prod_d (1 - p + p k_d), from base-kernel values
    ks (D, ...) of a unit-variance product kernel; equal to sum_n w_n e_n(ks) with ``dropout_order_weights``."""
    if not 0.0 <= keep <= 1.0:
        raise KernelError(f"the keep probability of dropout must lie in [0, 1], got {keep}.")
    return jnp.prod(1.0 - keep + keep * jnp.asarray(ks), axis=0)


def printed_dropout_weights(D: int) -> np.ndarray:
    """The weighting the thesis prints for p != 1/2 (sec. 6.4.2: "weighted by the corresponding binomial coefficient
    C(D, d)"), normalised to sum 1 as 2^-D is at p = 1/2: kept to show that it is not dropout's. (D + 1,)."""
    weights = np.array([comb(D, n) for n in range(D + 1)], float)
    return weights / weights.sum()
