"""The numbers of an ABCD report (Duvenaud 2014, sec. 4.1.3 "Ordering additive components" and App. D, Table 1).

Given a fitted kernel (hyperparameters fixed: the report never refits, as App. D says "the model is fit using the
full data"), the noise variance and the data:

- **Components** are the terms of ``zoo.structure.describe.terms`` (sum of products, switches split), each with its
  English description.
- **Cross-validated MAE** (App. D, Table 1 caption): 10 folds of contiguous blocks of the inputs sorted by x; for each
  fold every component's posterior mean at the held-out block is computed under the full model conditioned on the
  other nine blocks, at the full-data hyperparameters (no refit per fold: docs/sources/duvenaud.md#report-statistics).
  The prediction of a set S of components is ``offset`` plus the sum of their means; its MAE is pooled over all n
  held-out points. The empty set predicts ``offset`` (the thesis's data were not centred, so its first row is the
  MAE of predicting 0: 1360.65 on solar irradiance).
- **Order** (sec. 4.1.3): greedily, always adding next the component whose addition gives the lowest CV MAE.
- **Cumulative fits** (Table 1): fit_k = offset + the full-data posterior means of the first k components at the
  training inputs; R^2_k = 1 - Var(y - fit_k) / Var(y); Delta R^2_k = R^2_k - R^2_{k-1} (R^2_0 = 0); residual
  R^2_k = 1 - Var(y - fit_k) / Var(y - fit_{k-1}) ("computed using the residuals from the previous fit as the target
  values"); reduction in MAE = (MAE_{k-1} - MAE_k) / MAE_{k-1}. Variances are centred: the thesis's Table 1 obeys
  residual R^2_k = 1 - (1 - R^2_k) / (1 - R^2_{k-1}) row by row, and gives R^2 = 0 to a constant.

All GP algebra through ``zoo.decomposition`` (one Cholesky per conditioning set, jitter only if needed).
"""

from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from zoo import decomposition, gp
from zoo.errors import DataError
from zoo.kernels import Kernel, Sum
from zoo.structure.describe import Description, describe, terms

__all__ = [
    "ComponentRow",
    "Curve",
    "MAE_FLAT",
    "NUM_FOLDS",
    "NUM_SAMPLES",
    "ReportNumbers",
    "VARIANCE_EXPLAINED",
    "compute",
    "contiguous_folds",
    "greedy_order",
    "held_out_means",
    "r_squared",
]

Array = Any

NUM_FOLDS = 10  # App. D, Table 1 caption: "10 fold cross validation with a contiguous block design"
MAE_FLAT = 0.001  # App. D: "After the first 5 components the cross validated MAE does not decrease by more than 0.1%"
VARIANCE_EXPLAINED = (
    0.9,
    0.99,
)  # App. D's summary quotes the first k reaching 92.3 % and 99.2 %: we read >= 90 %, 99 %
NUM_SAMPLES = 3  # App. D, Fig. 11: "three random samples from the posterior"


class Curve(NamedTuple):
    mean: np.ndarray  # (m,)
    sd: np.ndarray  # (m,)


class ComponentRow(NamedTuple):
    """One row of Table 1 and the numbers of its section, for the k-th component in report order (k from 1)."""

    index: int  # position in ``terms`` order (the kernel as written)
    description: Description
    r2: float
    delta_r2: float
    residual_r2: float
    mae: float
    mae_reduction: float  # fraction; negative when the MAE increased
    prior_sd: float  # mean prior sd of the component over the data, in y units
    posterior: Curve  # of this component on the grid
    cumulative: Curve  # of the sum of the first k components on the grid (plus offset)
    residual_points: np.ndarray  # (n,) y minus the other components' full-data posterior means (minus offset)


class ReportNumbers(NamedTuple):
    title: str
    kernel: Kernel
    noise: float
    offset: float
    unit: str
    x: np.ndarray  # (n,) training inputs
    y: np.ndarray  # (n,)
    x_test: np.ndarray | None
    y_test: np.ndarray | None
    grid: np.ndarray  # (m,) inputs the curves are drawn on (data range plus the extrapolation)
    in_data: np.ndarray  # (m,) bool: grid points inside the training range
    mae_empty: float  # CV MAE of predicting ``offset`` alone
    rows: list[ComponentRow]
    full: Curve  # posterior of f (all components, no noise) on the grid, plus offset
    samples: np.ndarray  # (NUM_SAMPLES, m) posterior draws of f on the grid, plus offset
    test_rmse: float | None
    test_mae: float | None
    jitter: float  # jitter the full-data factorisation needed (0.0 when none)


def contiguous_folds(x: np.ndarray, num_folds: int = NUM_FOLDS) -> list[np.ndarray]:
    """Indices of ``num_folds`` contiguous blocks of the inputs sorted by x (sizes differ by at most one)."""
    return [np.sort(block) for block in np.array_split(np.argsort(x, kind="stable"), num_folds)]


def held_out_means(kernel: Kernel, parts: Sequence[Kernel], x: np.ndarray, y: np.ndarray, noise: float) -> np.ndarray:
    """(J, n): component j's posterior mean at each point, conditioned on the folds that do not hold it."""
    out = np.zeros((len(parts), len(x)))
    for block in contiguous_folds(x):
        train = np.setdiff1d(np.arange(len(x)), block)
        out[:, block] = np.asarray(_fold_means(kernel, tuple(parts), x[train, None], y[train], noise, x[block, None]))
    return out


@jax.jit
def _fold_means(kernel, parts, X, y, noise, X_new):
    """(J, m) posterior means of ``parts`` at X_new given (X, y): one compiled program per fold shape (folds have
    at most two sizes), where op-by-op evaluation lowered every kernel operation anew."""
    factor = decomposition.factorise(kernel, X, y, noise)
    return jnp.stack([decomposition.component_mean(factor, part, X_new) for part in parts])


def greedy_order(held_out: np.ndarray, y: np.ndarray, offset: float) -> tuple[list[int], list[float]]:
    """Components in the order that greedily minimises the CV MAE (sec. 4.1.3), and the MAE after each addition.
    held_out: (J, n) from ``held_out_means``; y (n,). Ties go to the component written first."""
    remaining, order, maes = list(range(held_out.shape[0])), [], []
    prediction = np.full(len(y), offset)
    while remaining:
        scores = [np.mean(np.abs(y - prediction - held_out[j])) for j in remaining]
        best = remaining[int(np.argmin(scores))]
        order.append(best)
        maes.append(float(min(scores)))
        prediction = prediction + held_out[best]
        remaining.remove(best)
    return order, maes


def r_squared(y: np.ndarray, fits: Sequence[np.ndarray]) -> tuple[list[float], list[float]]:
    """(R^2_k, residual R^2_k) for cumulative fits fits[0..J] (fits[0] the empty model) against y (centred)."""
    total = np.var(y)
    resid = [np.var(y - fit) for fit in fits]
    r2 = [1.0 - r / total if total > 0 else 0.0 for r in resid[1:]]
    residual = [1.0 - resid[k] / resid[k - 1] if resid[k - 1] > 0 else 0.0 for k in range(1, len(fits))]
    return r2, residual


def compute(
    kernel: Kernel,
    noise: float,
    X: Array,
    y: Array,
    *,
    title: str,
    unit: str = "years",
    offset: float = 0.0,
    X_test: Array | None = None,
    y_test: Array | None = None,
    extrapolate: float = 0.2,
    grid_size: int = 300,
    seed: int = 0,
) -> ReportNumbers:
    """Every number and curve of the report of ``kernel`` (data units, fitted) on X (n, 1), y (n,); ``offset``: a
    mean removed before fitting (the GP models y - offset). ``extrapolate``: the grid reaches this fraction of the
    data's span past its end (or the last test input, if later)."""
    x = _column(X, "X")
    y = np.asarray(y, dtype=float)
    if y.shape != x.shape:
        raise DataError(f"y must have shape {x.shape} to match X, got {y.shape}.")
    if not np.all(np.isfinite(y)):
        raise DataError("y holds NaN or infinite values.")
    if len(x) < 2 * NUM_FOLDS:
        raise DataError(f"a report needs at least {2 * NUM_FOLDS} points ({NUM_FOLDS} folds of two), got {len(x)}.")
    x_test = None if X_test is None else _column(X_test, "X_test")
    y_test = None if y_test is None else np.asarray(y_test, dtype=float)
    target = y - offset
    parts = [term.kernel() for term in terms(kernel)]

    held_out = held_out_means(kernel, parts, x, target, noise)
    order, maes = greedy_order(held_out, target, 0.0)
    mae_empty = float(np.mean(np.abs(target)))

    end = max(x.max(), x_test.max() if x_test is not None else -np.inf)
    end = max(end, x.max() + extrapolate * (x.max() - x.min()))
    grid = np.linspace(x.min(), end, grid_size)
    in_data = grid <= x.max()
    cumulative = tuple(_sum([parts[j] for j in order[: k + 1]]) for k in range(len(order)))
    post = jax.tree.map(
        np.asarray, _full_data(kernel, tuple(parts), cumulative, x[:, None], target, noise, grid[:, None])
    )
    at_data = post["at_data"]
    descriptions = describe(kernel, x[:, None], unit, means=at_data)
    fits = [np.full(len(x), offset)]
    for j in order:
        fits.append(fits[-1] + at_data[j])
    r2, residual = r_squared(y, fits)

    rows, previous_mae, previous_r2 = [], mae_empty, 0.0
    for k, j in enumerate(order):
        rows.append(
            ComponentRow(
                index=j,
                description=descriptions[j],
                r2=r2[k],
                delta_r2=r2[k] - previous_r2,
                residual_r2=residual[k],
                mae=maes[k],
                mae_reduction=(previous_mae - maes[k]) / previous_mae if previous_mae > 0 else 0.0,
                prior_sd=float(post["prior_sd"][j]),
                posterior=_curve(post["part_mean"][j], post["part_var"][j], 0.0),
                cumulative=_curve(post["cum_mean"][k], post["cum_var"][k], offset),
                residual_points=target - (at_data.sum(0) - at_data[j]),
            )
        )
        previous_mae, previous_r2 = maes[k], r2[k]

    full = _curve(post["full_mean"], post["full_var"], offset)
    cov = post["full_cov"]
    L = np.asarray(gp.cholesky(jnp.asarray(0.5 * (cov + cov.T))))
    z = np.random.default_rng(seed).normal(size=(len(grid), NUM_SAMPLES))
    samples = (full.mean[:, None] + L @ z).T  # mean + L z: L with gp.cholesky's fixed relative jitter (a posterior
    # covariance on a fine grid is singular to rounding)
    test_rmse = test_mae = None
    if x_test is not None and y_test is not None:
        mean = offset + np.asarray(_fold_means(kernel, (kernel,), x[:, None], target, noise, x_test[:, None]))[0]
        test_rmse = float(np.sqrt(np.mean((y_test - mean) ** 2)))
        test_mae = float(np.mean(np.abs(y_test - mean)))
    return ReportNumbers(
        title, kernel, float(noise), float(offset), unit, x, y, x_test, y_test, grid, in_data, mae_empty, rows,
        full, samples, test_rmse, test_mae, float(post["jitter"]),
    )  # fmt: skip


def _column(X: Array, name: str) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim == 2 and X.shape[1] == 1:
        X = X[:, 0]
    if X.ndim != 1:
        raise DataError(f"{name} must be one input column, shape (n,) or (n, 1); got {X.shape}.")
    if not np.all(np.isfinite(X)):
        raise DataError(f"{name} holds NaN or infinite values.")
    return X


def _sum(parts: Sequence[Kernel]) -> Kernel:
    total = parts[0]
    for part in parts[1:]:
        total = Sum(total, part)
    return total


def _curve(mean: np.ndarray, var: np.ndarray, offset: float) -> Curve:
    return Curve(offset + mean, np.sqrt(np.maximum(var, 0.0)))


@jax.jit
def _full_data(kernel, parts, cumulative, X, y, noise, G):
    """Everything conditioned on all the data, in one compiled program: each component's mean at X (J, n), each
    component's and each cumulative sum's mean and variance on the grid G (J, m), the full posterior's mean,
    variance and covariance on G, the components' prior sds at X, and the jitter the factorisation needed."""
    factor = decomposition.factorise(kernel, X, y, noise)

    def means(ks, A):
        return jnp.stack([decomposition.component_mean(factor, k, A) for k in ks])

    def variances(ks, A):
        return jnp.stack([decomposition.component_variance(factor, k, A) for k in ks])

    return {
        "at_data": means(parts, X),
        "part_mean": means(parts, G),
        "part_var": variances(parts, G),
        "cum_mean": means(cumulative, G),
        "cum_var": variances(cumulative, G),
        "full_mean": decomposition.component_mean(factor, kernel, G),
        "full_var": decomposition.component_variance(factor, kernel, G),
        "full_cov": decomposition.component_covariance(factor, kernel, G, kernel, None, same=True),
        "prior_sd": jnp.stack([jnp.mean(jnp.sqrt(jnp.maximum(k.diag(X), 0.0))) for k in parts]),
        "jitter": factor.jitter,
    }
