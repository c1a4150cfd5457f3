"""Plots of InferenceData through ArviZ: marginals of several engines overlaid, trace and rank plots.

Kept beside ``inference/results/diagnostics.py`` so every ArviZ call of the project lives in ``inference/`` (a move to
ArviZ 1.x touches these two modules only). Every function returns a matplotlib Figure; callers save it.
Vector-valued variables are cut to their first few components, since a GP's latent f has one per input.
"""

from collections.abc import Mapping, Sequence

import arviz as az
import matplotlib

matplotlib.use("Agg")  # files only, never a window (also on worker machines without a display)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

__all__ = ["SAMPLE_DIMS", "first_components", "message_figure", "plot_marginals", "plot_trace_rank", "shared_variables"]

SAMPLE_DIMS = ("chain", "draw")


def first_components(posterior: xr.Dataset, var_names: Sequence[str], per_variable: int = 3) -> xr.Dataset:
    """``posterior[var_names]`` cut to at most ``per_variable`` components per variable: the first entries of
    its first non-sample dimension, and index 0 of the others (states of shape (K, T, D) give 3, not 3**3)."""
    subset = posterior[list(var_names)]
    cuts = {}
    for name in var_names:
        extra = [dim for dim in subset[name].dims if dim not in SAMPLE_DIMS]
        for position, dim in enumerate(extra):
            cuts[dim] = slice(0, per_variable) if position == 0 else slice(0, 1)
    return subset.isel(cuts)


def shared_variables(idatas: Mapping[str, az.InferenceData]) -> list[str]:
    """Posterior variables every InferenceData has, in the order of the first one."""
    first, *rest = idatas.values()
    return [v for v in first.posterior.data_vars if all(v in other.posterior for other in rest)]


def plot_marginals(
    idatas: Mapping[str, az.InferenceData], var_names: Sequence[str] | None = None, per_variable: int = 3
):
    """Posterior densities of each engine overlaid, one panel per (component of a) variable.

    idatas: label -> InferenceData; the first is drawn first (put the reference there).
    """
    var_names = list(var_names or shared_variables(idatas))
    if not var_names:
        return message_figure("no posterior variable is shared by these engines")
    data = [az.InferenceData(posterior=first_components(i.posterior, var_names, per_variable)) for i in idatas.values()]
    # Draws that do not vary (a delta guide, a fixed parameter) have no density: jitter them invisibly so
    # the KDE draws a spike instead of failing.
    data = [_jitter_constant(d) for d in data]
    axes = az.plot_density(data, data_labels=list(idatas), var_names=var_names, shade=0.1, hdi_prob=0.995)
    figure = np.ravel(axes)[0].figure
    figure.set_size_inches(12, 2.6 * max(1, np.ravel(axes).shape[0] // 3 + (np.ravel(axes).shape[0] % 3 > 0)))
    return figure


def _jitter_constant(idata: az.InferenceData) -> az.InferenceData:
    posterior = idata.posterior.copy()
    for name, values in posterior.data_vars.items():
        spread = values.std(SAMPLE_DIMS)
        if bool((spread == 0).any()):
            scale = 1e-6 * (abs(values).max().item() + 1e-12)
            noise = np.random.default_rng(0).normal(0.0, scale, values.shape)
            posterior[name] = values + noise
    return az.InferenceData(posterior=posterior)


def plot_trace_rank(idata: az.InferenceData, var_names: Sequence[str] | None = None, per_variable: int = 2):
    """ArviZ trace plot with rank bars (marginal per chain on the left, rank histograms on the right)."""
    var_names = list(var_names or idata.posterior.data_vars)
    subset = az.InferenceData(posterior=first_components(idata.posterior, var_names, per_variable))
    axes = az.plot_trace(subset, var_names=var_names, kind="rank_bars", compact=False)
    figure = np.ravel(axes)[0].figure
    figure.set_size_inches(12, 1.8 * np.shape(axes)[0])
    figure.tight_layout()
    return figure


def message_figure(text: str):
    figure, ax = plt.subplots(figsize=(6, 1))
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center")
    return figure
