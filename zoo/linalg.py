"""Bordered (rank-one) Cholesky append in fixed-capacity buffers, for sequential GP conditioning with fixed
hyperparameters (Franzese 2024, sec. 7.1.1, eqs. 7.1-7.2; docs/sources/franzese.md#active-learning).

Appending x_new to the training set borders K_y = K(X, X) + sigma_n^2 I by one row and column (eq. 7.1). The text
updates the inverse (eq. 7.2); we update the lower Cholesky factor instead, which is the numerically safer form of
the same O(n^2) step:

    L_{n+1} = [[L_n, 0], [l^T, d]],  l = L_n^{-1} k(X, x_new),  d^2 = k(x_new, x_new) + sigma_n^2 - l^T l.

d^2 is the predictive variance of y_new given the n points, so in exact arithmetic d^2 >= sigma_n^2 > 0; it can
only be non-positive by rounding (a repeated input with a noise variance at rounding level).

Fixed capacity: a buffer of C rows holds n <= C points. The factor is stored as a (C, C) lower-triangular matrix
whose leading (n, n) block is L_n and whose trailing block is the identity; vectors of the n points are stored in
(C,) buffers with zeros past n. With a right-hand side that is zero past n, one triangular solve of the whole (C, C)
factor returns L_n^{-1} b in the first n entries and zeros after them (the identity rows reproduce the zeros), so
every shape is fixed and a ``lax.scan`` over appends compiles once. The solve costs O(C^2) per append, against
O(C^3) for refactorising.
"""

from typing import Any, NamedTuple

import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular

from zoo.gp import JITTER

Array = Any


class BorderedRow(NamedTuple):
    """One append: the new factor row and what happened at its pivot."""

    row: Array  # (C,): l in the first n entries, d at entry n, zeros after
    pivot_sq: Array  # (): d^2 as computed, before any jitter (the predictive variance of y_new)
    jitter: Array  # (): absolute jitter added to the new diagonal entry (0.0 unless d^2 was not positive)


def empty_factor(capacity: int) -> Array:
    """The factor of an empty buffer: the (C, C) identity (no active block)."""
    return jnp.eye(capacity)


def masked(values: Array, size: Array) -> Array:
    """``values`` (C, ...) with the entries at and past ``size`` set to zero (the inactive part of a buffer)."""
    active = jnp.arange(values.shape[0]) < size
    return jnp.where(active.reshape(active.shape + (1,) * (values.ndim - 1)), values, 0.0)


def bordered_row(chol: Array, size: Array, cross_cov: Array, new_diag: Array, jitter: float = JITTER) -> BorderedRow:
    """The row that borders the factor ``chol`` (C, C) of n = ``size`` points when a point is appended.

    cross_cov (C,): k(X, x_new) for the n active points (entries past n are ignored); new_diag (): the new diagonal
    entry of the bordered matrix, k(x_new, x_new) + sigma_n^2. If d^2 is not positive, the new diagonal entry gets
    ``jitter`` x new_diag minus d^2, so that the pivot becomes jitter x new_diag: the factor is then exactly that of
    the bordered matrix plus the recorded ``jitter`` on its new diagonal entry (never silent: see ``BorderedRow``).
    """
    capacity = chol.shape[0]
    ell = solve_triangular(chol, masked(cross_cov, size), lower=True)  # zeros past n (module docstring)
    pivot_sq = new_diag - ell @ ell
    floor = jitter * new_diag
    added = jnp.where(pivot_sq > 0.0, 0.0, floor - pivot_sq)
    pivot = jnp.sqrt(pivot_sq + added)
    row = jnp.where(jnp.arange(capacity) == size, pivot, ell)
    return BorderedRow(row, pivot_sq, added)


def append_row(chol: Array, size: Array, row: Array) -> Array:
    """``chol`` (C, C) with ``row`` (C,) written as its row number ``size``: the bordered factor L_{n+1}."""
    return chol.at[size].set(row)


def append_whitened(whitened: Array, size: Array, row: Array, value: Array) -> Array:
    """L_{n+1}^{-1} v_{n+1} from L_n^{-1} v_n (``whitened`` (C,), zeros past n) and the appended entry ``value``:
    one new entry, (value - l^T (L_n^{-1} v_n)) / d, so the whitened targets follow the factor at O(n) per append."""
    previous = masked(whitened, size)
    pivot = row[size]
    entry = (value - masked(row, size) @ previous) / pivot
    return whitened.at[size].set(entry)
