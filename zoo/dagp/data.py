"""DAGP's data sets: ChoiceNet noise separation (Kaiser 2021, sec. 3.3.1), a small set for ``dagp/exact``, and
Wet-Chicken transitions (ch. 5) for the two-output model."""

import jax
import jax.numpy as jnp

from zoo import sparse as sp
from zoo.data import wetchicken
from zoo.data.association import choicenet, choicenet_test
from zoo.registry import Dataset


def simulate_noise_separation(key, n: int = 200, outlier_rate: float = 0.2, m: int = 25) -> Dataset:
    """ChoiceNet data (docs/sources/kaiser.md#noise-separation) with Z = k-means centres; test: the noiseless function
    on a grid of 200."""
    k_data, k_z = jax.random.split(key)
    data = choicenet(k_data, n, outlier_rate)
    X_test, f_test = choicenet_test(200)
    Z = sp.init_inducing(k_z, data.X, m, "kmeans")
    return Dataset(
        observed={"X": data.X, "y": data.y, "Z": Z},
        truth={"labels": data.labels, "outlier_rate": outlier_rate},
        test={"X": X_test, "y": f_test},
    )


def simulate_small(key, n: int = 40, outlier_rate: float = 0.2) -> Dataset:
    """A small ChoiceNet data set for ``dagp/exact`` (NUTS)."""
    data = choicenet(key, n, outlier_rate)
    return Dataset(observed={"X": data.X, "y": data.y}, truth={"labels": data.labels})


def simulate_wet_chicken(key, n: int = 250, m: int = 50) -> Dataset:
    """Wet-Chicken batch data (Kaiser 2021, ch. 5.3; docs/sources/kaiser.md#wet-chicken): inputs (state, action)
    (n, 4), targets the next state (n, 2), Z = k-means centres of the inputs; for ``outputs=2``."""
    k_data, k_z = jax.random.split(key)
    s, a, s_next = wetchicken.batch_transitions(k_data, n)
    X = jnp.concatenate([s, a], -1)
    return Dataset(observed={"X": X, "y": s_next, "Z": sp.init_inducing(k_z, X, m, "kmeans")})
