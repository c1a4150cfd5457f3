"""Greedy Titsias selection of the sparse GP-SSM's pseudo-inputs (McHutchon sec. 3.4.3;
docs/sources/mchutchon.md#pseudo-inputs): pure maths given an AR1-GP fit.

The thesis pre-selects X~ (M, D+U) from the observed inputs by the Titsias (2009) criterion on a GP fitted to the
observed transitions. ``select_pseudo_inputs`` adds, one at a time, the observed input [y_{t-1}; u_{t-1}] that most
increases the collapsed bound summed over outputs, for a given ``AR1GP``. Fitting that AR1-GP is training, so the
step that runs both (``inference.applications.ar1.with_pseudo_inputs``) lives in ``inference/``. A model that takes its
pseudo-inputs from the data declares how in its ``"pseudo_inputs"`` view, a ``PseudoInputRule``.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from zoo.gpssm.transitions import AR1GP, observed_transitions
from zoo.kernels import SquaredExponential

Array = Any


@dataclass(frozen=True)
class PseudoInputRule:
    """How a model's pseudo-inputs are chosen from its data: ``num_pseudo`` (M) observed inputs, greedily by the
    Titsias bound of the AR1-GP with mean ``mean`` ("zero", "identity" or "linear")."""

    num_pseudo: int
    mean: str = "zero"


def titsias_bound_from_rows(V: Array, r: Array, signal_var, noise_var) -> Array:
    """Titsias (2009) collapsed bound log N(r; 0, Q + s2 I) - tr(K - Q) / (2 s2) with Q = V^T V; r (N,) -> ().

    V (M, N): rows of the incremental Cholesky factor of K_xx on the chosen inducing inputs (zero rows are unused
    slots: they leave Q, and so the bound, unchanged). Woodbury with A = V / s: no N x N factorisation.
    """
    N = V.shape[1]
    A = V / jnp.sqrt(noise_var)
    LB = jnp.linalg.cholesky(jnp.eye(V.shape[0]) + A @ A.T)
    c = jax.scipy.linalg.solve_triangular(LB, A @ r, lower=True) / jnp.sqrt(noise_var)
    fit = -jnp.sum(jnp.log(jnp.diagonal(LB))) - 0.5 * N * jnp.log(2 * jnp.pi * noise_var) - 0.5 * r @ r / noise_var
    return fit + 0.5 * c @ c - 0.5 * (N * signal_var - jnp.sum(V**2)) / noise_var


@partial(jax.jit, static_argnames="num_pseudo")
def greedy_titsias(X, R, fit: AR1GP, num_pseudo: int):
    """Indices (M,) into X (N, D+U) of the greedy selection, R (N, D) the residual targets: at each step the candidate
    whose addition maximises the bound summed over outputs. Adding x_j appends the row
    (K_j. - V_.j^T V) / sqrt(K_jj - |V_.j|^2) (pivoted Cholesky)."""
    K = jax.vmap(lambda sf2, ell: SquaredExponential(sf2, ell)(X))(fit.signal_var, fit.lengthscale)  # (D, N, N)
    D, N = K.shape[0], X.shape[0]

    def with_candidate(V, step, j):
        def one_output(Ke, Ve, r, sf2, sn2):
            resid = jnp.maximum(Ke[j, j] - Ve[:, j] @ Ve[:, j], 1e-12 * sf2)
            row = (Ke[j] - Ve[:, j] @ Ve) / jnp.sqrt(resid)
            Ve = Ve.at[step].set(row)
            return titsias_bound_from_rows(Ve, r, sf2, sn2), Ve

        return jax.vmap(one_output)(K, V, R.T, fit.signal_var, fit.noise_var)

    def step(carry, index):
        V, chosen = carry
        bounds, _ = jax.vmap(lambda j: with_candidate(V, index, j))(jnp.arange(N))
        total = jnp.where(jnp.isin(jnp.arange(N), chosen), -jnp.inf, jnp.sum(bounds, 1))
        best = jnp.argmax(total)
        _, V = with_candidate(V, index, best)
        return (V, chosen.at[index].set(best)), None

    init = (jnp.zeros((D, num_pseudo, N)), jnp.full(num_pseudo, -1))
    (_, chosen), _ = jax.lax.scan(step, init, jnp.arange(num_pseudo))
    return chosen


def select_pseudo_inputs(observed: Mapping[str, Any], num_pseudo: int, fit: AR1GP) -> np.ndarray:
    """Greedy pseudo-inputs (min(M, N), D+U): observed inputs added one at a time, each maximising the Titsias (2009)
    collapsed bound of the AR1-GP ``fit`` of the observed transitions (docs/sources/mchutchon.md#pseudo-inputs)."""
    X, Y = observed_transitions(observed)
    R = Y - X @ np.asarray(fit.mean_A).T - np.asarray(fit.mean_b)
    chosen = greedy_titsias(jnp.asarray(X), jnp.asarray(R), fit, min(num_pseudo, len(X)))
    return X[np.asarray(chosen)]
