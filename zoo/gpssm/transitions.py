"""Observed transitions of SSM data and the AR1-GP baseline's pure parts (M13, docs/sources/mchutchon.md#ar1-gp).

The AR1-GP is a GP per output on the observed pairs [y_{t-1}; u_{t-1}] -> y_t, by ML-II. Its fit is training and
lives in ``inference.applications.ar1`` (``gp/regression`` with lagged inputs under the ``ml2`` engine); here are the
data it is
fitted to (``observed_transitions``, ``ar1_regression_data``), the fitted values (``AR1GP``) and its predictive
(``ar1_gp_predict``).
"""

from collections.abc import Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from zoo import moments

Array = Any


def observed_transitions(observed: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Inputs [y_{t-1}; u_{t-1}] (N, D+U) and targets y_t (N, D) of every observed transition (masked steps dropped).

    observed: y (K, T, D), lengths (K,), u (K, T, U) when controlled (docs/architecture.md#state-space-view)."""
    y = np.asarray(observed["y"])
    K, T, D = y.shape
    lengths = np.asarray(observed["lengths"]).astype(int)
    u = np.asarray(observed["u"]) if "u" in observed else np.zeros((K, T, 0))
    inputs = [np.concatenate([y[k, :-1], u[k, :-1]], 1)[: lengths[k] - 1] for k in range(K)]
    targets = [y[k, 1:][: lengths[k] - 1] for k in range(K)]
    return np.concatenate(inputs), np.concatenate(targets)


class AR1GP(NamedTuple):
    """ML-II hyperparameters of D independent GPs on observed transitions: signal_var (D,), lengthscale (D, D+U),
    noise_var (D,), with the fixed mean (A (D, D+U), b (D,)) subtracted from the targets."""

    signal_var: Array
    lengthscale: Array
    noise_var: Array
    mean_A: Array
    mean_b: Array


def ar1_mean(observed: Mapping[str, Any], mean: str) -> tuple[np.ndarray, np.ndarray]:
    """The AR1-GP's fixed mean (A (D, D+U), b (D,)): zero; "identity" models y_t - y_{t-1}; "linear" is the least
    squares fit of y_t on [y_{t-1}; u_{t-1}; 1]."""
    X, Y = observed_transitions(observed)
    D, DU = Y.shape[1], X.shape[1]
    if mean == "identity":
        return np.asarray(moments.identity_mean(D, DU - D).A), np.zeros(D)
    if mean == "linear":
        W = np.linalg.lstsq(np.concatenate([X, np.ones((len(X), 1))], 1), Y, rcond=None)[0]
        return W[:-1].T, W[-1]
    return np.zeros((D, DU)), np.zeros(D)


def ar1_regression_data(
    observed: Mapping[str, Any], mean: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What the AR1-GP regresses: inputs X (N, D+U), residual targets R = Y - X A^T - b (N, D), and (A, b)."""
    X, Y = observed_transitions(observed)
    A, b = ar1_mean(observed, mean)
    return X, Y - X @ A.T - b, A, b


def ar1_gp_predict(fit: AR1GP, observed: Mapping[str, Any], inputs: Array) -> tuple[Array, Array]:
    """AR1-GP one-step predictive of y_t at inputs [y_{t-1}; u_{t-1}] (n, D+U): mean (n, D), variance (n, D)
    (latent variance plus the GP's noise: its noise stands for the total noise)."""
    X, Y = observed_transitions(observed)
    R = Y - X @ np.asarray(fit.mean_A).T - np.asarray(fit.mean_b)
    predictor = moments.exact_gp_predictor(X, R, fit.signal_var, fit.lengthscale, fit.noise_var)
    mean_fn = moments.LinearMean(fit.mean_A, fit.mean_b)
    mean, var = jax.vmap(lambda x: moments.predict_point(predictor, x, mean_fn))(jnp.asarray(inputs))
    return mean, var + fit.noise_var
