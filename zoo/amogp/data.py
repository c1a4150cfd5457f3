"""AMO-GP's data: the artificial pair of Kaiser 2021 sec. 4.3 and a synthetic stand-in for the wind-turbine pair.

Artificial (eq. 4.10, sec. 4.3): latent f(x) = (1 - 3/4 tanh(10 pi x / 15)) sin(10 pi x) on [0, 1], never observed.
Output 0 (T_1): identity alignment, sigmoid warping, y = tanh(2 f(x)) + eps; output 1 (T_2): quadratic alignment,
identity warping, y = f(x^2) + eps; eps ~ N(0, 0.05^2). The text gives neither the sigmoid, the quadratic nor the
noise: these are ours (docs/sources/kaiser.md#amogp-data; sd 0.05 is also the level at which a perfect predictive
scores the published AMO-GP value, -log(0.05 sqrt(2 pi e)) = 1.58). 500 points per output uniform on [0, 1]; the
points in [0.7, 0.8] of T_1 and in [0.35, 0.65] of T_2 are the test sets (450 and 350 training points on average).

Wind stand-in (sec. 4.3): the thesis' turbine data are proprietary (Siemens) and its wind rows of Table 4.1 are
not reproducible. Same structure, synthetic: a latent wind speed over 90 minutes at 1 Hz (random Fourier features,
timescales of 2-20 min), two power curves (logistic in the wind speed, one per turbine), turbine 2 sees the wind with
a lag that drifts from -4 to +4 minutes and changes sign at minute 45 (the thesis' "offsets up to 6 min"), each
turbine with its own turbulence (AR(1), 30 s) and measurement noise, smoothed by a 60 s rolling mean as in the
thesis. Time is scaled to [0, 1] (minute / 90); power is standardised by turbine 1's mean and sd. Test sets: turbine
2 in minutes [40, 45] and [65, 75].
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from zoo.registry import Dataset, positive_int

Array = Any
NOISE_STD = 0.05
T1_GAP, T2_GAP = (0.7, 0.8), (0.35, 0.65)
WIND_MINUTES = 90.0
WIND_GAPS = ((40.0, 45.0), (65.0, 75.0))


def dampened_sine(x: Array) -> Array:
    """Eq. 4.10: (1 - 3/4 tanh(10 pi x / 15)) sin(10 pi x)."""
    return (1.0 - 0.75 * jnp.tanh(10.0 * jnp.pi * x / 15.0)) * jnp.sin(10.0 * jnp.pi * x)


def sigmoid_warp(f: Array) -> Array:
    """T_1's warping (ours): tanh(2 f)."""
    return jnp.tanh(2.0 * f)


def quadratic_alignment(x: Array) -> Array:
    """T_2's alignment (ours): x^2, a monotone map of [0, 1] onto itself."""
    return x**2


def _assemble(X_parts, y_parts, test_masks, num_inducing: int, truth: dict) -> Dataset:
    X = np.concatenate(X_parts)
    y = np.concatenate(y_parts)
    out = np.concatenate([np.full(len(x), float(d)) for d, x in enumerate(X_parts)])
    test = np.concatenate(test_masks)
    Z = np.linspace(X.min(), X.max(), num_inducing)[:, None]
    observed = {"X": X[~test, None], "out": out[~test], "Z": Z, "y": y[~test]}
    held = {"X": X[test, None], "out": out[test], "y": y[test]}
    return Dataset(observed=observed, truth=truth, test=held)


def simulate_artificial(key, n: int = 500, m: int = 25, noise_std: float = NOISE_STD) -> Dataset:
    """The artificial pair: ``n`` points per output, ``m`` inducing inputs (per layer and output) on [0, 1].

    truth: ``f0``, ``f1`` (latent y without noise at the points, before the test split), ``noise_std``."""
    n, m = positive_int("n", n), positive_int("m", m)
    k0, k1, e0, e1 = jax.random.split(key, 4)
    x0 = np.sort(np.asarray(jax.random.uniform(k0, (n,))))
    x1 = np.sort(np.asarray(jax.random.uniform(k1, (n,))))
    f0 = np.asarray(sigmoid_warp(dampened_sine(x0)))
    f1 = np.asarray(dampened_sine(quadratic_alignment(x1)))
    y0 = f0 + noise_std * np.asarray(jax.random.normal(e0, (n,)))
    y1 = f1 + noise_std * np.asarray(jax.random.normal(e1, (n,)))
    tests = [(x0 >= T1_GAP[0]) & (x0 <= T1_GAP[1]), (x1 >= T2_GAP[0]) & (x1 <= T2_GAP[1])]
    return _assemble([x0, x1], [y0, y1], tests, m, {"noise_std": noise_std})


def _wind_speed(rng: np.random.Generator, t: np.ndarray) -> np.ndarray:
    """Latent wind speed (m/s) at minutes t: mean 9 plus random Fourier features with 2-20 minute periods."""
    periods = rng.uniform(2.0, 20.0, 12)
    phases = rng.uniform(0.0, 2 * np.pi, 12)
    amps = rng.normal(0.0, 1.0, 12) * np.sqrt(periods / 20.0)
    return 9.0 + 1.2 * np.sum(amps[:, None] * np.sin(2 * np.pi * t[None] / periods[:, None] + phases[:, None]), 0)


def _ar1(rng: np.random.Generator, n: int, sd: float, steps: float) -> np.ndarray:
    rho = np.exp(-1.0 / steps)
    e = rng.normal(0.0, sd * np.sqrt(1 - rho**2), n)
    out = np.empty(n)
    out[0] = rng.normal(0.0, sd)
    for i in range(1, n):
        out[i] = rho * out[i - 1] + e[i]
    return out


def wind_lag(t: Array) -> Array:
    """Turbine 2's lag behind turbine 1 in minutes at minute t: drifts from -4 to +4, sign change at minute 45."""
    return 4.0 * np.tanh((np.asarray(t) - 45.0) / 15.0)


def simulate_wind(seed: int = 0, n: int = 600, m: int = 30) -> Dataset:
    """The wind stand-in (module docstring): ``n`` points per turbine drawn from the 1 Hz series, ``m`` inducing
    inputs. truth: ``minutes`` grid, ``power0`` and ``power1`` (smoothed, noise-free), ``lag`` (minutes)."""
    n, m = positive_int("n", n), positive_int("m", m)
    rng = np.random.default_rng(seed)
    t = np.arange(0.0, WIND_MINUTES, 1.0 / 60.0)  # 5400 seconds
    speeds = _wind_speed(rng, np.concatenate([t, t - wind_lag(t)]))
    w0, w1 = speeds[: t.size], speeds[t.size :]

    def power(w, centre, width):
        return 1.0 / (1.0 + np.exp(-(w - centre) / width))

    def rolling(x):
        return np.convolve(x, np.ones(60) / 60.0, mode="same")

    clean0, clean1 = rolling(power(w0, 9.0, 1.2)), rolling(power(w1, 9.3, 1.1))
    noisy0 = rolling(power(w0 + _ar1(rng, t.size, 0.6, 30.0), 9.0, 1.2) + rng.normal(0, 0.02, t.size))
    noisy1 = rolling(power(w1 + _ar1(rng, t.size, 0.6, 30.0), 9.3, 1.1) + rng.normal(0, 0.02, t.size))
    edge = slice(60, t.size - 60)  # the rolling mean is biased at the ends
    t, noisy0, noisy1, clean0, clean1 = t[edge], noisy0[edge], noisy1[edge], clean0[edge], clean1[edge]
    i0 = np.sort(rng.choice(t.size, n, replace=False))
    i1 = np.sort(rng.choice(t.size, n, replace=False))
    centre, scale = noisy0.mean(), noisy0.std()
    standard = lambda p: (p - centre) / scale  # noqa: E731
    tests = [np.zeros(n, dtype=bool), np.any([(t[i1] >= a) & (t[i1] <= b) for a, b in WIND_GAPS], axis=0)]
    truth = {"minutes": t, "power0": standard(clean0), "power1": standard(clean1), "lag": wind_lag(t)}
    return _assemble(
        [t[i0] / WIND_MINUTES, t[i1] / WIND_MINUTES], [standard(noisy0[i0]), standard(noisy1[i1])], tests, m, truth
    )
