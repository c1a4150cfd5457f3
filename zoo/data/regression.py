"""Synthetic regression data: linear designs and noisy sines (docs/sources/franzese.md#figure-data)."""

import jax
import jax.numpy as jnp
import numpy as np


def linear_design(key: jax.Array, n: int, d: int, low: float = -3.0, high: float = 3.0) -> np.ndarray:
    """(n, d) design: d - 1 uniform covariates on [low, high] and a final column of ones (the intercept)."""
    covariates = jax.random.uniform(key, (n, d - 1), minval=low, maxval=high)
    return np.asarray(jnp.concatenate([covariates, jnp.ones((n, 1))], axis=1))


def noisy_sine(
    key: jax.Array,
    n: int,
    low: float,
    high: float,
    frequency: float,
    noise_std: float,
    dims: int = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """X ~ U[low, high]^dims sorted on the first column, f = sum_d sin(2 pi frequency x_d), y = f + noise.

    Returns X (n, dims), f (n,), y (n,).
    """
    k_x, k_noise = jax.random.split(key)
    X = jax.random.uniform(k_x, (n, dims), minval=low, maxval=high)
    X = X[jnp.argsort(X[:, 0])]
    f = jnp.sum(jnp.sin(2.0 * jnp.pi * frequency * X), axis=1)
    y = f + noise_std * jax.random.normal(k_noise, (n,))
    return np.asarray(X), np.asarray(f), np.asarray(y)
