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
    flat = np.ravel(axes)
    figure = flat[0].figure
    handles, labels = [], []
    for ax in flat:  # one legend under the panels, not over a marginal
        legend = ax.get_legend()
        if legend is not None:
            if not handles:
                handles, labels = ax.get_legend_handles_labels()
            legend.remove()
    rows = max(1, flat.shape[0] // 3 + (flat.shape[0] % 3 > 0))
    figure.set_size_inches(12, 2.6 * rows + 0.6)
    for ax in flat:
        ax.title.set_fontsize(10)
        ax.tick_params(labelsize=8)
    if handles:
        figure.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False)
    figure.tight_layout(rect=(0, 0.6 / (2.6 * rows + 0.6), 1, 1))
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


def components(posterior: xr.Dataset, var_names: Sequence[str], per_variable: int) -> list[tuple[str, np.ndarray]]:
    """(label, draws (chain, draw)) of the first components of each variable, labelled like ArviZ (``w[0]``)."""
    subset = first_components(posterior, var_names, per_variable)
    out = []
    for name in var_names:
        values = np.asarray(subset[name])
        flat = values.reshape(values.shape[0], values.shape[1], -1)
        for k, index in enumerate(np.ndindex(*values.shape[2:])):
            label = f"{name}[{', '.join(map(str, index))}]" if index else name
            out.append((label, flat[:, :, k]))
    return out


def plot_trace_rank(
    idata: az.InferenceData, var_names: Sequence[str] | None = None, per_variable: int = 2, max_rows: int = 8
):
    """Trace plots (each chain's draws against the draw index, left) and rank plots (right: per chain, the histogram
    of the ranks of its draws among all chains' draws; for chains that sample the same distribution the histograms are
    flat around the dashed line, Vehtari et al. 2021, sec. 4.1). At most ``max_rows`` components."""
    var_names = list(var_names or idata.posterior.data_vars)
    panels = components(idata.posterior, var_names, per_variable)[:max_rows]
    if not panels:
        return message_figure("no posterior variable to plot")
    figure, axes = plt.subplots(
        len(panels), 2, figsize=(12, 1.7 * len(panels) + 0.6), squeeze=False, gridspec_kw={"width_ratios": (2.2, 1)}
    )
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for (label, draws), (trace_ax, rank_ax) in zip(panels, axes, strict=True):
        chains, n = draws.shape
        for c in range(chains):
            trace_ax.plot(np.arange(n), draws[c], lw=0.6, alpha=0.8, color=colours[c % len(colours)])
        trace_ax.set_ylabel(label, rotation=0, ha="right", va="center")
        ranks = np.argsort(np.argsort(draws, axis=None, kind="stable"), kind="stable").reshape(draws.shape)
        bins = max(5, min(20, n // 10))
        edges = np.linspace(0, chains * n, bins + 1)
        height = 1.0 / chains  # each chain drawn in its own band, as ArviZ's rank bars
        for c in range(chains):
            counts, _ = np.histogram(ranks[c], bins=edges)
            scaled = counts / (n / bins) * height * 0.5  # a flat histogram is half the band high
            rank_ax.bar(
                edges[:-1],
                scaled,
                width=np.diff(edges),
                bottom=c * height,
                align="edge",
                color=colours[c % len(colours)],
                alpha=0.8,
                edgecolor="white",
                linewidth=0.3,
            )
            rank_ax.axhline(c * height + 0.5 * height, color="k", ls="--", lw=0.6)
        rank_ax.set_yticks(
            [(c + 0.5) * height for c in range(chains)], [f"chain {c}" for c in range(chains)], fontsize=7
        )
        rank_ax.set_xticks([])
    axes[0, 0].set_title("trace: draws of each chain")
    axes[0, 1].set_title("rank plot per chain (flat = chains agree)")
    axes[-1, 0].set_xlabel("draw")
    axes[-1, 1].set_xlabel("rank among all draws")
    figure.tight_layout()
    return figure


def message_figure(text: str):
    figure, ax = plt.subplots(figsize=(6, 1))
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center")
    return figure
