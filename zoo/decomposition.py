"""Additive decomposition of a GP posterior: the posterior of each summand f_j of a sum kernel k = k_1 + ... + k_J.

Duvenaud 2014, sec. 2.4.4, eqs. 2.13-2.18 (docs/sources/duvenaud.md#decomposition). With y = sum_j f_j(X) + eps,
f_j ~ GP(0, k_j) independent, eps ~ N(0, noise I), and C = K + noise I the full training covariance (K = sum_j K_j):

    E[f_j(A) | y]             = k_j(A, X) C^-1 y                                   (2.17, mean)
    Cov[f_i(A), f_j(B) | y]   = [i = j] k_j(A, B) - k_i(A, X) C^-1 k_j(X, B)       (2.17 for i = j, 2.18 for i != j)

All from one Cholesky factor of C (``zoo.gp.cholesky_with_jitter``: jitter only where C does not factorise, reported
in ``Factor.jitter``) and triangular solves; no inverse is formed. The components are the summands of the kernel's
top-level sum, nested sums flattened (``components``); a kernel that is not a sum is one component. The model's
noise is not a component (it is the ``noise`` argument); a WN summand of the kernel is one, and since WN is zero
between two input sets (``zoo.kernels.White``) its posterior at new inputs is its prior N(0, variance).
Zero prior means throughout, as in ``gp/regression``.
"""

from typing import Any, NamedTuple

import jax.numpy as jnp
from jax.scipy.linalg import cho_solve, solve_triangular

from zoo import gp
from zoo.kernels import ActiveDims, Kernel, Product, Sum, as_inputs, validate_inputs

Array = Any


def components(kernel: Kernel, distribute: bool = False) -> list[Kernel]:
    """The summands of ``kernel``, left to right, nested sums flattened: ``SE_0 + (Lin_1 + Per_0)`` gives three.

    A restriction of a sum to some columns is the sum of the restricted summands, ``(SE + Lin)_1`` = SE_1 + Lin_1
    (the same function, so the same decomposition). With ``distribute`` products are also expanded over sums, as
    ABCD does before plotting (Duvenaud eq. 3.4: SE x (RQ + Lin) = SE x RQ + SE x Lin); without it a product is
    one component. A kernel that is neither a sum nor (with ``distribute``) a product of sums is one component.
    """
    if isinstance(kernel, Sum):
        return components(kernel.left, distribute) + components(kernel.right, distribute)
    if isinstance(kernel, ActiveDims):
        inner = components(kernel.kernel, distribute)
        return [kernel] if len(inner) == 1 else [ActiveDims(k, kernel.dims) for k in inner]
    if distribute and isinstance(kernel, Product):
        left, right = components(kernel.left, True), components(kernel.right, True)
        if len(left) * len(right) > 1:
            return [Product(a, b) for a in left for b in right]
    return [kernel]


class Factor(NamedTuple):
    """One factorisation of the full training covariance C = k(X) + noise I, shared by every component."""

    X: Array  # (n, D) training inputs
    L: Array  # (n, n) lower Cholesky factor of C (of C + jitter I when C did not factorise)
    alpha: Array  # (n,) C^-1 y
    jitter: Array  # () absolute jitter added to C's diagonal; 0.0 when none was needed


def factorise(kernel: Kernel, X: Array, y: Array, noise_var: Array) -> Factor:
    """Factor of k(X) + noise_var I for the full kernel. X: (n, D), y: (n,), noise_var: ()."""
    X = as_inputs(X)
    validate_inputs(kernel, X.shape[1])
    y = jnp.asarray(y, dtype=float)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},) to match X {X.shape}, got {y.shape}.")
    L, jitter = gp.cholesky_with_jitter(kernel(X) + noise_var * jnp.eye(X.shape[0]))
    return Factor(X, L, cho_solve((L, True), y), jitter)


def _whitened(factor: Factor, component: Kernel, A: Array) -> Array:
    """L^-1 k_j(X, A): (n, m). The one solve each (component, input set) needs for every (co)variance."""
    return solve_triangular(factor.L, component(factor.X, A), lower=True)


def component_mean(factor: Factor, component: Kernel, A: Array) -> Array:
    """E[f_j(A) | y] = k_j(A, X) C^-1 y (eq. 2.17): (m,) for A (m, D)."""
    return component(as_inputs(A), factor.X) @ factor.alpha


def component_variance(factor: Factor, component: Kernel, A: Array) -> Array:
    """Var[f_j(a) | y] = k_j(a, a) - |L^-1 k_j(X, a)|^2 at each row a of A (m, D) (eq. 2.17): (m,)."""
    A = as_inputs(A)
    return component.diag(A) - jnp.sum(_whitened(factor, component, A) ** 2, axis=0)


def component_covariance(factor: Factor, first: Kernel, A: Array, second: Kernel, B: Array | None, same: bool) -> Array:
    """Cov[f_i(A), f_j(B) | y] = [same] k_i(A, B) - k_i(A, X) C^-1 k_j(X, B) (eqs. 2.17-2.18): (m_a, m_b).

    ``same``: whether ``first`` and ``second`` are the same component (then its prior covariance is added); two
    different components are independent a priori, so their posterior covariance is only the (negative) second term.
    A and B may differ, e.g. each component on a grid along its own input dimension (Duvenaud Fig. 2.8). B = None
    means B = A as one input set, so a WN component keeps its variance on the diagonal (``k(A)``, not ``k(A, A)``).
    """
    A = as_inputs(A)
    B_ = A if B is None else as_inputs(B)
    cross = _whitened(factor, first, A).T @ _whitened(factor, second, B_)
    if not same:
        return -cross
    return (first(A) if B is None else first(A, B_)) - cross


class Decomposition(NamedTuple):
    """Posterior of each component at the same test inputs (m of them), J components in ``components`` order."""

    names: tuple[str, ...]  # (J,) each component in the grammar's notation
    mean: Array  # (J, m)
    var: Array  # (J, m) marginal variances
    cov: Array | None  # (J, J, m, m) all pairwise covariances (eq. 2.18 off the diagonal), when asked for
    jitter: Array  # () jitter added to the training covariance (0.0 when none)


def decompose(
    kernel: Kernel,
    X: Array,
    y: Array,
    noise_var: Array,
    X_new: Array,
    full_cov: bool = False,
    distribute: bool = False,
) -> Decomposition:
    """Posterior mean and variance of every component of ``kernel`` at X_new, by one Cholesky of k(X) + noise I.

    X: (n, D), y: (n,), noise_var: (), X_new: (m, D). The means sum to ``zoo.gp.predict``'s mean at X_new. With
    ``full_cov`` also the (J, J, m, m) posterior covariances between all components at X_new (O(J^2 m^2) memory).
    ``distribute``: expand products over sums first (``components``).
    """
    parts = components(kernel, distribute)
    factor = factorise(kernel, X, y, noise_var)
    X_new = as_inputs(X_new)
    validate_inputs(kernel, X_new.shape[1])
    mean = jnp.stack([component_mean(factor, k, X_new) for k in parts])
    var = jnp.stack([component_variance(factor, k, X_new) for k in parts])
    cov = None
    if full_cov:
        cov = jnp.stack(
            [
                jnp.stack([component_covariance(factor, ki, X_new, kj, None, i == j) for j, kj in enumerate(parts)])
                for i, ki in enumerate(parts)
            ]
        )
    return Decomposition(tuple(str(k) for k in parts), mean, var, cov, factor.jitter)


def partial_residuals(factor: Factor, parts: list[Kernel], y: Array) -> Array:
    """y minus the posterior means of all *other* components at the training inputs: (J, n).

    Row j is what component j is left to explain, the data drawn on its panel of a decomposition plot (Duvenaud's
    Fig. 2.7 plots the raw y against each input instead; docs/sources/duvenaud.md#decomposition).
    """
    at_data = jnp.stack([component_mean(factor, k, factor.X) for k in parts])  # (J, n)
    return jnp.asarray(y)[None, :] - (jnp.sum(at_data, axis=0)[None, :] - at_data)


def correlation(cov: Array, var_a: Array, var_b: Array) -> Array:
    """Cov (m_a, m_b) divided by the outer product of the marginal sds (m_a,), (m_b,); 0 where an sd is 0."""
    scale = jnp.sqrt(jnp.maximum(var_a, 0.0))[:, None] * jnp.sqrt(jnp.maximum(var_b, 0.0))[None, :]
    return jnp.where(scale > 0, cov / jnp.where(scale > 0, scale, 1.0), 0.0)
