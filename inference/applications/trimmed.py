"""Trimmed GP regression: the subset of the data that one smooth function explains best, by a forward search.

Used to start DAGP's assignments (``dagp.assignment_logits_from_labels`` as the svi engine's ``init_params``) on
mixtures of functions over the same inputs, where identical zero-mean starts settle in optima that mix the functions
(Kaiser's mixed cart-pole; kaiser_dagp_cartpole.py). On Kaiser's trimodal toy an entropy warm-up does better
(kaiser_dagp_multimodal.py). Not in Kaiser's texts: it is the
forward search of robust regression (Atkinson & Riani 2000) followed by the concentration steps of least trimmed
squares (Rousseeuw & Van Driessen 2006), with an exact GP as the regression:

    start from START_SIZE random points; repeat: fit the GP's hyperparameters to the subset by type-II maximum
    likelihood (warm-started), predict every point, and take the points with the smallest absolute residuals as the
    next subset, its size doubling up to h; then CONCENTRATION_STEPS more steps at size h.
    Of ``starts`` random starts keep the final subset of highest log marginal likelihood.

A few random points are likely to come from one function, and a subset grown from them by residuals follows that
function. Subsets started from h random points instead mix the functions and stay mixed (on two balanced curves, as
in tests/test_dagp.py, most such searches end on a mixture, most forward searches on one curve).
``peel`` applies it K - 1 times, each time to the points not yet taken, with h the remaining count divided by the
functions left, so every function gets an equal share (a default: the mixing weights are unknown).
Cost: O(h^3) per Adam step.

A fitting procedure, so it lives in ``inference/``. It keeps its own small Adam ML-II step (``fit_se_ml2``) instead of
calling ``inference.run`` with the ``ml2`` engine: one search runs thousands of tiny warm-started fits on subsets whose
size changes from step to step, all inside one compiled ``lax.map`` over starts; a call through ``inference.run`` per
fit would leave the compiled program and recompile per subset size.
"""

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from inference.optimisation import adam_scan
from zoo import gp
from zoo.kernels import SquaredExponential

__all__ = [
    "CONCENTRATION_STEPS",
    "HYPER_STEPS",
    "LEARNING_RATE",
    "START_SIZE",
    "best_subset",
    "fit_se_ml2",
    "peel",
    "se_from_log",
    "subset_sizes",
]

Array = Any
START_SIZE = 2
CONCENTRATION_STEPS = 3
HYPER_STEPS = 100  # Adam steps (fit_se_ml2) of each type-II ML fit, warm-started from the previous subset's
LEARNING_RATE = 0.05


def se_from_log(log_params: Array) -> tuple[SquaredExponential, Array]:
    """(SE kernel, noise variance) from [log signal variance, log noise variance, log lengthscales (D,)]."""
    return SquaredExponential(jnp.exp(log_params[0]), jnp.exp(log_params[2:])), jnp.exp(log_params[1])


def fit_se_ml2(log_params: Array, X: Array, y: Array, num_steps: int, learning_rate: float = LEARNING_RATE) -> Array:
    """Type-II ML of an SE kernel and Gaussian noise on (X (N, D), y (N,)): ``num_steps`` Adam steps on the log
    hyperparameters ``log_params`` (D + 2,), laid out as in ``se_from_log``, from the given start. Adam with a fixed
    step count rather than L-BFGS: each step costs exactly one N x N factorisation (a line search multiplies that),
    and the search needs a ranking of the points, not a converged optimum."""

    def negative_evidence(p):
        kernel, noise = se_from_log(p)
        return -gp.log_marginal_likelihood(kernel, X, y, noise)

    def gradient(p, _):
        return jax.grad(negative_evidence)(p), None

    return adam_scan(gradient, log_params, learning_rate, num_steps=num_steps)[0]


def subset_sizes(h: int) -> list[int]:
    """The forward search's subset sizes: START_SIZE, doubling, capped at h."""
    sizes = [min(START_SIZE, h)]
    while sizes[-1] < h:
        sizes.append(min(h, 2 * sizes[-1]))
    return sizes


@partial(jax.jit, static_argnums=(3, 4))
def best_subset(key, X: Array, y: Array, h: int, starts: int) -> Array:
    """Indices (h,) of the h points of (X (n, D), y (n,)) best explained by one GP (module docstring). y on a unit
    scale: the first subset is chosen with unit variance and lengthscales and noise variance 0.1."""
    initial = jnp.concatenate([jnp.array([0.0, jnp.log(0.1)]), jnp.zeros(X.shape[1])])  # layout of se_from_log

    def grown(subset, log_params, size):
        kernel, noise = se_from_log(log_params)
        mean = gp.predict(kernel, X[subset], y[subset], noise, X, full_cov=False).mean
        return jnp.argsort(jnp.abs(y - mean))[:size]

    def from_start(start_key):
        sizes = subset_sizes(h)
        subset, log_params = jax.random.permutation(start_key, X.shape[0])[: sizes[0]], initial
        if len(sizes) > 1:  # too few points to fit hyperparameters to: the first step uses the initial ones
            subset = grown(subset, log_params, sizes[1])
        for size in sizes[2:] + [h] * CONCENTRATION_STEPS:
            log_params = fit_se_ml2(log_params, X[subset], y[subset], HYPER_STEPS)
            subset = grown(subset, log_params, size)
        log_params = fit_se_ml2(log_params, X[subset], y[subset], HYPER_STEPS)
        kernel, noise = se_from_log(log_params)
        return subset, gp.log_marginal_likelihood(kernel, X[subset], y[subset], noise)

    subsets, evidence = jax.lax.map(from_start, jax.random.split(key, starts))
    return subsets[jnp.argmax(evidence)]


def peel(key, X, y, num_functions: int, starts: int = 4) -> np.ndarray:
    """Labels (n,) in 0..num_functions-1: function k's points are ``best_subset`` of those left by functions 0..k-1
    (equal shares); the last function takes the rest."""
    X, y = np.asarray(X), np.asarray(y)
    labels = np.full(len(y), num_functions - 1)
    left = np.arange(len(y))
    for k, k_key in enumerate(jax.random.split(key, num_functions - 1)):
        subset = np.asarray(best_subset(k_key, X[left], y[left], len(left) // (num_functions - k), starts))
        labels[left[subset]] = k
        left = np.delete(left, subset)
    return labels
