"""ArviZ conversion, summaries, and comparison of engines against a reference (docs/architecture.md#diagnostics).

Every ArviZ call of the project lives here, so a move to the ArviZ 1.x (DataTree) line is one change.
ESS and R-hat are ArviZ's for every engine (NumPyro's ``n_eff`` differs).
"""

import json
import logging
import os
import warnings
import weakref
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from zoo.registry import Dataset

__all__ = [
    "compare",
    "engine_stats",
    "from_netcdf",
    "gaussian_log_density",
    "posterior_moments",
    "summary",
    "to_inference_data",
    "to_netcdf",
]

with warnings.catch_warnings():
    # ArviZ 0.23 announces its 1.x refactor in a FutureWarning on the first import of each day; the pin
    # (pyproject.toml) keeps us on 0.23, and every ArviZ call lives in this module, so the move is one change here.
    warnings.filterwarnings("ignore", message="\nArviZ is undergoing", category=FutureWarning)
    import arviz as az


class _OneChainShapeFilter(logging.Filter):
    """ArviZ logs "Shape validation failed" for every variable of a one-chain result (one SVI fit, one EM run) when
    it computes R-hat; the summary already shows R-hat as NaN there, so the message only repeats that."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Shape validation failed")


az._log.addFilter(_OneChainShapeFilter())  # ArviZ's own Logger instance, not one of logging's named loggers


def to_inference_data(output: Any, dataset: Dataset, attrs: Mapping[str, Any]) -> az.InferenceData:
    """InferenceData with groups posterior, sample_stats, observed_data and, for learning engines,
    point_estimates (chain, ...) and optimization traces (chain, step). ``attrs`` go on every group."""
    with warnings.catch_warnings():
        # Point-estimate engines (ml2, nigp, ...) return one draw per chain, which ArviZ warns about as a likely
        # mix-up of the chain and draw axes; here the layout is (chain, draw) by contract.
        warnings.filterwarnings("ignore", message="More chains", category=UserWarning)
        posterior = az.dict_to_dataset(_numpy(output.posterior), attrs=dict(attrs))
    groups = {
        "posterior": posterior,
        "observed_data": az.dict_to_dataset(
            _numpy(dataset.observed), attrs=dict(attrs), default_dims=[], index_origin=0
        ),
    }
    if output.sample_stats:
        groups["sample_stats"] = az.dict_to_dataset(_numpy(output.sample_stats), attrs=dict(attrs))
    if output.point_estimates:
        groups["point_estimates"] = _per_chain_dataset(output.point_estimates, (), attrs)
    if output.traces:
        groups["optimization"] = _per_chain_dataset(output.traces, ("step",), attrs)
    return az.InferenceData(**groups)


def _numpy(arrays: Mapping[str, Any]) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in arrays.items()}


def _per_chain_dataset(arrays: Mapping[str, Any], leading: tuple[str, ...], attrs) -> xr.Dataset:
    """Arrays (chain, *leading, ...) as one Dataset. A leading axis whose length differs from the first array's (a
    parameter path thinned to every k-th iterate beside a per-step trace) gets its own dimension, ``<dim>_<length>``,
    since one dimension has one length."""
    variables, sizes = {}, {}
    for name, value in _numpy(arrays).items():
        lead = tuple(
            dim if sizes.setdefault(dim, n) == n else f"{dim}_{n}"
            for dim, n in zip(leading, value.shape[1:], strict=False)
        )
        trailing = value.ndim - 1 - len(leading)
        dims = ("chain", *lead, *(f"{name}_dim_{i}" for i in range(trailing)))
        variables[name] = (dims, value)
    return xr.Dataset(variables, attrs=dict(attrs))


def engine_stats(idata: az.InferenceData) -> dict[str, float]:
    """Whole-run numbers: timings, divergences, min ESS, max R-hat, ESS per second and per gradient."""
    attrs = idata.posterior.attrs
    diag = _diagnostics(idata)
    stats = {
        "engine": attrs.get("engine", "?"),
        "chains": int(idata.posterior.sizes["chain"]),
        "draws": int(idata.posterior.sizes["draw"]),
        "wall_s": float(attrs.get("wall_s", np.nan)),
        "compile_s": float(attrs.get("compile_s", np.nan)),
        "run_s": float(attrs.get("run_s", np.nan)),
        "divergences": int(idata.sample_stats["diverging"].sum()) if _has_stat(idata, "diverging") else 0,
        "min_ess_bulk": float(diag["ess_bulk"].min()),
        "min_ess_tail": float(diag["ess_tail"].min()),
        "max_rhat": float(diag["r_hat"].max()),
        "log_evidence": float(attrs.get("log_evidence", np.nan)),
    }
    grads = float(attrs.get("num_grad_evals", -1))
    stats["ess_per_s"] = stats["min_ess_bulk"] / stats["run_s"] if stats["run_s"] > 0 else np.nan
    stats["ess_per_grad"] = stats["min_ess_bulk"] / grads if grads > 0 else np.nan
    return stats


def _has_stat(idata: az.InferenceData, name: str) -> bool:
    return "sample_stats" in idata.groups() and name in idata.sample_stats


def _summary(idata: az.InferenceData, **kwargs: Any) -> pd.DataFrame:
    """``az.summary``; for one draw per chain (point-estimate engines: ml2, nigp, EM) its sd, MCSE and ESS are
    undefined, and NumPy's warnings about dividing by zero degrees of freedom only repeat that (the columns are
    NaN); so for draws that do not vary."""
    with warnings.catch_warnings():
        # NumPy's divide-by-zero warnings inside ArviZ for one draw per chain, or for draws that do not vary (a fixed
        # or delta-guide site), say only what the NaN in the table says; the user cannot act on them.
        warnings.simplefilter("ignore", RuntimeWarning)
        return az.summary(idata, round_to="none", **kwargs)


# One result's diagnostics table is asked for by its health check (in ``inference.run``) and again by ``engine_stats``
# (``zoo bench``, ``zoo compare``): ArviZ's ESS and R-hat over every component take seconds on large latents, so the
# table is kept while its posterior lives (keyed by identity; nothing modifies a result's posterior after the run).
_DIAGNOSTICS: dict[int, tuple[weakref.ref, pd.DataFrame]] = {}


def _diagnostics(idata: az.InferenceData) -> pd.DataFrame:
    posterior = idata.posterior
    key = id(posterior)
    kept = _DIAGNOSTICS.get(key)
    if kept is not None and kept[0]() is posterior:
        return kept[1].copy()
    table = _summary(idata, kind="diagnostics")
    _DIAGNOSTICS[key] = (weakref.ref(posterior, lambda _, key=key: _DIAGNOSTICS.pop(key, None)), table)
    return table.copy()


def component_diagnostics(idata: az.InferenceData) -> pd.DataFrame:
    """Per component of every posterior variable (rows labelled ``w[0]``): MCSE of mean and sd, bulk and tail ESS,
    R-hat (what ``inference.results.health`` checks)."""
    return _diagnostics(idata)


def array_diagnostics(draws: np.ndarray) -> dict[str, np.ndarray]:
    """ArviZ's per-component numbers of raw draws (chain, draw, *shape), each of ``shape``: ``mcse_mean`` (the MCSE
    of the mean, autocorrelation included), ``ess_bulk``, ``ess_tail`` and ``r_hat`` (rank-normalised split R-hat).
    For quantities that are functions of the draws (x^2, (x^2 - E x^2)^2): the reference moments' MCSE
    (inference/results/references.py)."""
    dataset = az.convert_to_dataset({"x": np.asarray(draws, dtype=float)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant components: NaN, as they are
        return {
            "mcse_mean": np.asarray(az.mcse(dataset, method="mean")["x"]),
            "ess_bulk": np.asarray(az.ess(dataset, method="bulk")["x"]),
            "ess_tail": np.asarray(az.ess(dataset, method="tail")["x"]),
            "r_hat": np.asarray(az.rhat(dataset)["x"]),
        }


def pareto_k(log_weights: np.ndarray) -> float:
    """The Pareto shape k of PSIS-smoothed importance weights (Vehtari et al. 2024), for
    ``inference.results.health``."""
    _, k = az.psislw(np.asarray(log_weights, dtype=float))
    return float(np.max(k))


def summary(idata: az.InferenceData, var_names: list[str] | None = None) -> pd.DataFrame:
    """ArviZ's summary (mean, sd, HDI, MCSE, bulk/tail ESS, R-hat) plus bulk ESS per second of run time.

    Engine-level numbers (``engine_stats``) are attached as ``table.attrs``.
    """
    table = _summary(idata, var_names=var_names)
    stats = engine_stats(idata)
    table["ess_bulk_per_s"] = table["ess_bulk"] / stats["run_s"] if stats["run_s"] > 0 else np.nan
    table.attrs.update(stats)
    return table


def posterior_moments(idata: az.InferenceData) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per variable, the posterior mean and sd over chains and draws."""
    post = idata.posterior
    return {
        name: (post[name].mean(("chain", "draw")).values, post[name].std(("chain", "draw")).values)
        for name in post.data_vars
    }


def gaussian_log_density(truth: np.ndarray, mean: np.ndarray, sd: np.ndarray) -> float:
    """Mean over elements of log N(truth | mean, sd^2): the 'log density of the true latents per point'
    (docs/sources/mchutchon.md#evaluation) under the posterior's marginal Gaussian approximation."""
    z = (np.asarray(truth) - mean) / sd
    return float(np.mean(-0.5 * z**2 - np.log(sd) - 0.5 * np.log(2.0 * np.pi)))


def posterior_mcse(idata: az.InferenceData) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per variable, the Monte Carlo standard errors of the posterior mean and sd (ArviZ's, autocorrelation
    included; NaN for one draw per chain)."""
    post = idata.posterior
    if post.sizes.get("draw", 0) < 4:
        nan = {name: np.full(post[name].shape[2:], np.nan) for name in post.data_vars}
        return {name: (value, value) for name, value in nan.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant draws (a delta guide): MCSE 0 or NaN, as it is
        mean = az.mcse(post, method="mean")
        sd = az.mcse(post, method="sd")
    return {name: (np.asarray(mean[name]), np.asarray(sd[name])) for name in post.data_vars}


def _worst(errors: list[np.ndarray], mcses: list[np.ndarray]) -> tuple[float, float, float]:
    """(largest error, the MCSE of that component, largest error / MCSE over components)."""
    error = np.concatenate([np.ravel(e) for e in errors])
    mcse = np.concatenate([np.ravel(m) for m in mcses])
    at = int(np.nanargmax(error)) if np.isfinite(error).any() else 0
    with np.errstate(divide="ignore", invalid="ignore"):
        z = error / mcse
    z_max = float(np.nanmax(z)) if np.isfinite(mcse).any() and np.isfinite(z).any() else np.nan
    return float(error[at]), float(mcse[at]), z_max


def compare(
    results: Mapping[str, az.InferenceData],
    reference: "str | az.InferenceData | None" = None,
    truth: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """One row per engine: ESS (min bulk/tail, per second, per gradient), max R-hat, divergences, timings,
    log evidence, and against ``reference`` (a key of ``results``, an InferenceData, or a stored reference's
    ``StoredReference``, whose moments carry their own MCSE) the largest error of
    posterior means and sds in reference-sd units, each with its Monte Carlo standard error (the engine's and the
    reference's combined, at the component of the largest error: ``max_mean_err_mcse``, ``max_sd_err_mcse``) and the
    largest ratio of error to MCSE over components (``max_mean_err_z``, ``max_sd_err_z``; above 3 the error is more
    than Monte Carlo noise). With ``truth`` (e.g. ``dataset.truth``), the log density of the true latents per point
    for every variable the posterior shares with the truth.
    """
    ref = results[reference] if isinstance(reference, str) else reference
    if ref is None:
        ref_moments, ref_mcse = {}, {}
    elif hasattr(ref, "moments_and_mcse"):  # a stored reference (inference/results/references.py)
        ref_moments, ref_mcse = ref.moments_and_mcse()
    else:
        ref_moments, ref_mcse = posterior_moments(ref), posterior_mcse(ref)
    rows = {}
    for name, idata in results.items():
        row = engine_stats(idata)
        row["ess_per_s_total"] = (
            row["min_ess_bulk"] / (row["run_s"] + row["compile_s"]) if row["run_s"] + row["compile_s"] > 0 else np.nan
        )
        moments = posterior_moments(idata)
        shared = [v for v in moments if v in ref_moments]
        if shared:
            mcse = posterior_mcse(idata)
            ref_sd = {v: ref_moments[v][1] for v in shared}
            mean_err = [np.abs(moments[v][0] - ref_moments[v][0]) / ref_sd[v] for v in shared]
            sd_err = [np.abs(moments[v][1] - ref_moments[v][1]) / ref_sd[v] for v in shared]
            mean_mcse = [np.hypot(mcse[v][0], ref_mcse[v][0]) / ref_sd[v] for v in shared]
            sd_mcse = [np.hypot(mcse[v][1], ref_mcse[v][1]) / ref_sd[v] for v in shared]
            row["max_mean_err_sd"], row["max_mean_err_mcse"], row["max_mean_err_z"] = _worst(mean_err, mean_mcse)
            row["max_sd_err_rel"], row["max_sd_err_mcse"], row["max_sd_err_z"] = _worst(sd_err, sd_mcse)
        for var, value in (truth or {}).items():
            if var in moments and np.shape(value) == moments[var][0].shape:
                row[f"true_{var}_logdens"] = gaussian_log_density(value, *moments[var])
        row["health"] = list(json.loads(idata.posterior.attrs.get("health", "[]")))
        row["fixed_params"] = json.loads(idata.posterior.attrs.get("fixed_params", "{}"))
        rows[name] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def to_netcdf(idata: az.InferenceData, path: str) -> None:
    """Write ``idata`` to ``path`` atomically (a temporary name, then a rename)."""
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        idata.to_netcdf(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def from_netcdf(path: str) -> az.InferenceData:
    return az.from_netcdf(path)
