"""The AR1-GP baseline (M13) fitted through ``inference.run``, and the two GP-SSM steps that need it: the greedy
pseudo-input selection and Algorithm 1's initialisation (docs/sources/mchutchon.md#ar1-gp,
docs/sources/mchutchon.md#pseudo-inputs, docs/sources/mchutchon.md#direct).

The AR1-GP is ``gp/regression`` with lagged inputs under the ``ml2`` engine: per output e, inputs
X = [y_{t-1}; u_{t-1}] (N, D+U) of every observed transition and targets r_e = y_{t,e} - (X A^T + b)_e (N,), the
fixed mean (A, b) being zero, identity or a least-squares linear fit (``zoo.gpssm.ar1_regression_data``). ML-II
(``objective="ml"``: the priors of ``gp/regression`` are ignored) by Adam, learning rate 0.05, ``num_steps`` = 150
steps on the log hyperparameters, from signal variance var(r_e) + 1e-6, noise variance a tenth of that, and
lengthscales std(X, 0) + 1e-3: a fixed budget rather than a converged optimum, as the AR1-GP is a baseline and a
starting point (Algorithm 1), and each step costs one N x N factorisation.

* ``fit_ar1_gp(observed, mean) -> zoo.gpssm.AR1GP``: the fit.
* ``with_pseudo_inputs(spec, data, num_pseudo=None) -> Dataset``: the data with ``pseudo_inputs`` (M, D+U) added to
  ``observed`` and ``test``, chosen by the model's ``"pseudo_inputs"`` view (``zoo.gpssm.PseudoInputRule``: M and
  the AR1-GP's mean) with ``zoo.gpssm.select_pseudo_inputs``.
* ``prepare(spec, data) -> data``: ``with_pseudo_inputs`` when the model has that view and the data carry no
  pseudo-inputs, else the data unchanged; the one place where simulated data get their pseudo-inputs.
* ``initial_params(gp_view, observed) -> params``: the ``gp_ssm`` view's initialisation from ``fit_ar1_gp``.
* ``start(gp_view, observed, fixed, given) -> init``: starting values of the sites not fixed, ``given`` over
  ``initial_params``; a preparation step of ``inference.run`` (``inference.applications.preparation``), so that no
  engine fits the AR1-GP inside its call.
"""

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from inference.core.api import run
from inference.core.program import check_init
from zoo import ssm
from zoo.gpssm import AR1GP, ar1_regression_data, select_pseudo_inputs
from zoo.registry import Dataset, frozen

__all__ = [
    "LEARNING_RATE",
    "NUM_STEPS",
    "fit_ar1_gp",
    "fit_output_gps",
    "initial_params",
    "prepare",
    "start",
    "with_pseudo_inputs",
]

NUM_STEPS = 150
LEARNING_RATE = 0.05


def fit_ar1_gp(observed: Mapping[str, Any], mean: str = "zero", num_steps: int = NUM_STEPS) -> AR1GP:
    """The AR1-GP (M13) on the observed pairs [y_{t-1}; u_{t-1}] -> y_t (observed: y (K, T, D), lengths (K,),
    u (K, T, U)), one ``gp/regression`` ML-II fit by ``ml2`` per output (module docstring). mean: "zero",
    "identity" (models y_t - y_{t-1}) or "linear" (least squares first). Returns signal_var (D,), lengthscale
    (D, D+U), noise_var (D,) and the mean (A (D, D+U), b (D,))."""
    X, R, A, b = ar1_regression_data(observed, mean)
    signal_var, lengthscale, noise_var = fit_output_gps(X, R, num_steps)
    return AR1GP(signal_var, lengthscale, noise_var, mean_A=np.asarray(A), mean_b=np.asarray(b))


def fit_output_gps(X: np.ndarray, R: np.ndarray, num_steps: int = NUM_STEPS):
    """One ``gp/regression`` ML-II fit by ``ml2`` (Adam, the AR1-GP's settings and starting values) per column of
    R (N, E) on inputs X (N, D_in): (signal_var (E,), lengthscale (E, D_in), noise_var (E,))."""
    scale = np.std(X, 0) + 1e-3
    fits = []
    for r in R.T:
        var = np.var(r) + 1e-6
        idata = run(
            "gp/regression",
            {"X": X, "y": r},
            engine="ml2",
            optimizer="adam",
            num_steps=num_steps,
            learning_rate=LEARNING_RATE,
            init={"variance": var, "noise": 0.1 * var, "lengthscale": scale},
        )
        fits.append([np.asarray(idata.point_estimates[k].values[0]) for k in ("variance", "lengthscale", "noise")])
    return tuple(np.stack(column) for column in zip(*fits, strict=True))


def _as_dataset(data: "Dataset | Mapping[str, Any]") -> Dataset:
    return data if isinstance(data, Dataset) else Dataset(observed=dict(data))


def with_pseudo_inputs(spec, data: "Dataset | Mapping[str, Any]", num_pseudo: int | None = None) -> Dataset:
    """``data`` with the model's pseudo-inputs (min(M, N), D+U) added to ``observed`` and (when there is one) ``test``:
    M = ``num_pseudo``, else the rule's; the greedy Titsias selection on the AR1-GP with the rule's mean."""
    rule = spec.views["pseudo_inputs"]
    dataset = _as_dataset(data)
    fit = fit_ar1_gp(dataset.observed, rule.mean)
    Xp = select_pseudo_inputs(dataset.observed, rule.num_pseudo if num_pseudo is None else num_pseudo, fit)
    test = {**dataset.test, "pseudo_inputs": Xp} if dataset.test else {}
    return Dataset(observed={**dataset.observed, "pseudo_inputs": Xp}, truth=dataset.truth, test=test)


def prepare(spec, data: "Dataset | Mapping[str, Any]") -> "Dataset | Mapping[str, Any]":
    """``with_pseudo_inputs(spec, data)`` when the model declares a ``"pseudo_inputs"`` view and ``data`` has no
    ``pseudo_inputs``; else ``data`` unchanged. The other arrays are validated first (``DataError`` naming the
    array, as ``spec.validate`` would), so bad data never reach the AR1-GP fit."""
    observed = data.observed if isinstance(data, Dataset) else data
    if "pseudo_inputs" not in spec.views or "pseudo_inputs" in observed:
        return data
    shapes = {name: shape for name, shape in spec.data_shapes.items() if name != "pseudo_inputs"}
    trajectories = dataclasses.replace(spec, data_shapes=frozen(shapes)).validate(data)
    return with_pseudo_inputs(spec, trajectories)


def initial_params(gp_view, observed: Mapping[str, Any]) -> dict[str, Any]:
    """Algorithm 1's starting parameters: ``gp_view.initial_params(observed, fit)`` with the AR1-GP ``fit`` of the
    view's ``ar1_mean``."""
    return gp_view.initial_params(observed, fit_ar1_gp(observed, gp_view.ar1_mean))


def start(gp_view, observed: Mapping[str, Any], fixed: Mapping[str, Any], given: Mapping[str, Any]) -> dict:
    """Starting values for every parameter site of ``gp_view`` not in ``fixed``: ``given`` over Algorithm 1's AR1-GP
    start (``initial_params``), which is fitted only when some such site is not in ``given`` (a warm start skips
    it). ``observed``: the program's arrays as engines see them (``inference.core.program.observed_args``)."""
    sites = ssm.parameter_sites(gp_view.state_space, observed)
    check_init(sites, given, fixed)  # a misspelt or misshapen start fails before the fit, not after
    if not set(sites) - set(fixed) - set(given):
        return dict(given)
    fitted = initial_params(gp_view, observed)
    return {**{name: value for name, value in fitted.items() if name not in fixed}, **given}
