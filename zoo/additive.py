"""Additive GP regression (Duvenaud 2014, ch. 6): the family ``gp/additive``, y ~ N(m 1, K_add + sigma_n^2 I) with
the additive kernel of orders 1..R (``zoo.kernels.additive.Additive``, eqs. 6.4-6.14) on SE base kernels of unit
variance and a constant mean m, as the thesis's experiments (sec. 6.6: "we fixed each one-dimensional kernel's output
variance to be 1"; "we fit a constant mean function").

Option ``max_order`` R (>= 1; default: min(D, 10), the thesis's limit); R = 1 is the first-order model ("GP-1st").
Sites: ``lengthscale`` (D,), ``variance`` (R,) (the order variances sigma_1^2..sigma_R^2), ``mean``, ``noise``
(variance). Priors (the thesis fits by ML-II and states none; docs/sources/duvenaud.md#additive-priors):
LogNormal(0, 1) on lengthscales, LogNormal(-log(R C(D, n)), 1) on sigma_n^2 (so that a draw's prior variance
sum_n sigma_n^2 C(D, n) is about 1 for standardised y), Normal(0, 1) on the mean, LogNormal(-2, 1) on the noise.
``initial_values`` gives the prior medians (the starting point the figure scripts hand to ``ml2``).
X: (N, D), y: (N,). A constant column of X is refused before compiling (``constant_columns``; the thesis does not
say what to do with one: docs/sources/duvenaud.md#additive-constant-column).
"""

from math import comb

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from zoo import gp, kernels
from zoo.errors import DataError
from zoo.kernels.additive import Additive
from zoo.options import Option
from zoo.registry import Dataset, ModelSpec, frozen, register_family
from zoo.regression import REGRESSION_SHAPES, simulate_regression

MAX_ORDER_LIMIT = 10  # "For speed, we limited the maximum order of interaction to 10" (sec. 6.6)
SOURCE = "Duvenaud 2014, ch. 6 (eqs. 6.4-6.14, sec. 6.6)"


def resolved_order(max_order: int | None, D: int) -> int:
    """R: ``max_order`` if 1 <= R <= D, min(D, 10) when None; else a ``DataError`` (raised while the program is
    first traced, before anything compiles)."""
    if max_order is None:
        return min(D, MAX_ORDER_LIMIT)
    if max_order > D:
        raise DataError(
            f"gp/additive: max_order {max_order} exceeds the {D} input columns of X (interaction orders run 1..D)."
        )
    return int(max_order)


def constant_columns(X) -> list[int]:
    """Indices of the columns of X (N, D) whose spread is zero up to rounding (1e-12 relative to their magnitude).

    On such a column the SE base kernel is 1 for every pair, so its lengthscale leaves the likelihood and the orders
    mix: e_n(z_1..z_{D-1}, 1) = e_n(z_1..z_{D-1}) + e_{n-1}(z_1..z_{D-1}), one order's variance standing in for
    another's (and order 1 for the constant mean)."""
    X = np.asarray(X, dtype=float)
    spread = np.ptp(X, axis=0)
    return np.flatnonzero(spread <= 1e-12 * np.maximum(1.0, np.abs(X).max(axis=0))).tolist()


class AdditiveSpec(ModelSpec):
    """A ModelSpec whose ``validate`` also refuses a constant input column (``constant_columns``) before compiling."""

    def validate(self, data) -> Dataset:
        dataset = super().validate(data)
        X = dataset.observed["X"]
        constant = constant_columns(X) if X.shape[0] > 1 else []
        if constant:
            raise DataError(
                f"gp/additive: input column(s) {constant} of X are constant; their SE base kernel is 1 everywhere, so "
                "the lengthscale is unidentified and the interaction orders are confounded. Drop the column(s)."
            )
        return dataset


def order_variance_locations(R: int, D: int) -> np.ndarray:
    """log-medians of the order variances' priors: -log(R C(D, n)), n = 1..R."""
    return -np.log(R * np.array([comb(D, n) for n in range(1, R + 1)], float))


def priors(R: int, D: int) -> dict:
    return {
        "lengthscale": dist.LogNormal(0.0, 1.0),
        "variance": dist.LogNormal(jnp.asarray(order_variance_locations(R, D)), 1.0),
    }


def additive_regression(X, y=None, max_order: int | None = None):
    """The ``gp/additive`` program (module docstring). X: (N, D), y: (N,)."""
    N, D = X.shape
    R = resolved_order(max_order, D)
    kernel = kernels.sample_sites(Additive(max_order=R), D, priors(R, D))
    mean = numpyro.sample("mean", dist.Normal(0.0, 1.0))
    noise = numpyro.sample("noise", dist.LogNormal(-2.0, 1.0))
    numpyro.sample("y", gp.GaussianEvidence(kernel(X) + noise * jnp.eye(N), mean), obs=y)


def initial_values(D: int, max_order: int | None = None) -> dict[str, np.ndarray]:
    """The prior medians of every site (constrained), for ``ml2``'s ``init``: lengthscales 1, sigma_n^2 =
    1 / (R C(D, n)), mean 0, noise e^-2."""
    R = resolved_order(max_order, D)
    return {
        "lengthscale": np.ones(D),
        "variance": np.exp(order_variance_locations(R, D)),
        "mean": np.zeros(()),
        "noise": np.exp(-2.0) * np.ones(()),
    }


def fitted(estimates, max_order: int | None = None) -> tuple[Additive, float, float]:
    """(kernel, mean, noise variance) from one chain of point estimates (e.g. ``ml2``'s ``point_estimates``)."""
    variance = jnp.atleast_1d(jnp.asarray(estimates["variance"]))
    kernel = Additive(jnp.asarray(estimates["lengthscale"]), variance, max_order=int(variance.shape[0]))
    return kernel, float(np.asarray(estimates["mean"])), float(np.asarray(estimates["noise"]))


def predict_y(kernel, mean, noise, X, y, X_new):
    """Predictive mean and variance of y at X_new (m,), (m,): the GP posterior of f on y - mean, plus the noise."""
    post = gp.predict(kernel, X, jnp.asarray(y) - mean, noise, X_new, full_cov=False)
    return post.mean + mean, post.cov + noise


@register_family(
    "gp/additive",
    {
        "max_order": Option(
            "int", None, "highest interaction order R, 1 <= R <= D (default min(D, 10))", minimum=1, optional=True
        )
    },
    "Additive GP regression: all interaction orders up to max_order, per-order variances, constant mean",
    SOURCE,
)
def _gp_additive(max_order: int | None) -> ModelSpec:
    def program(X, y=None):
        additive_regression(X, y, max_order)

    return AdditiveSpec(
        name="gp/additive",
        summary=f"Additive GP regression, orders 1..{max_order or 'min(D, 10)'}, SE bases, constant mean",
        source=SOURCE,
        program=program,
        simulate=simulate_regression,
        data_shapes=REGRESSION_SHAPES,
        default_params=frozen({"lengthscale": 1.0, "mean": 0.0, "noise": 0.1}),
        capabilities=frozenset({"continuous", "collapsed"}),
    )
