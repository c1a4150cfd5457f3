"""Decomposition plots of an additive GP posterior (Duvenaud 2014, Figs. 2.7-2.8, 3.4-3.5;
docs/sources/duvenaud.md#decomposition): one panel per component, and the posterior correlations between components.

Arrays in, matplotlib Figure out: the numbers come from ``zoo.decomposition``; callers save the figure. Kept out of
``zoo/`` (models hold no plotting) and apart from ``inference/results/plots.py`` (the ArviZ plots of InferenceData).
"""

from collections.abc import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")  # files only, never a window
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

__all__ = ["plot_component_correlations", "plot_decomposition"]


def plot_decomposition(
    grids: Sequence[np.ndarray],
    means: Sequence[np.ndarray],
    sds: Sequence[np.ndarray],
    titles: Sequence[str],
    data_x: Sequence[np.ndarray] | None = None,
    data_y: Sequence[np.ndarray] | None = None,
    samples: Sequence[np.ndarray] | None = None,
    ncols: int = 4,
    sharey: bool = True,
    data_label: str = "partial residuals",
):
    """One panel per component j: posterior mean +- 2 sd over ``grids[j]``, with optional data and draws.

    grids[j], means[j], sds[j]: (m_j,) the component's input coordinate along its panel's axis, posterior mean and
    marginal sd. data_x[j], data_y[j]: (n,) points drawn on panel j (e.g. ``zoo.decomposition.partial_residuals``:
    y minus the other components' posterior means; say which in ``data_label``). samples[j]: (S, m_j) posterior
    draws of the component. ``sharey``: one vertical axis for all panels, as in Fig. 2.7.
    """
    count = len(grids)
    ncols = max(1, min(ncols, count))
    nrows = -(-count // ncols)
    figure, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 2.6 * nrows), sharey=sharey, squeeze=False)
    for j, ax in enumerate(axes.ravel()):
        if j >= count:
            ax.axis("off")
            continue
        x, mean, sd = (np.asarray(a) for a in (grids[j], means[j], sds[j]))
        order = np.argsort(x)
        x, mean, sd = x[order], mean[order], sd[order]
        if data_x is not None and data_y is not None:
            ax.plot(
                np.asarray(data_x[j]), np.asarray(data_y[j]), "x", color="tab:blue", ms=3, alpha=0.4, label=data_label
            )
        ax.fill_between(x, mean - 2 * sd, mean + 2 * sd, color="tab:red", alpha=0.25, lw=0, label="mean +- 2 sd")
        ax.plot(x, mean, color="tab:red", lw=1.5, label="posterior mean")
        if samples is not None:
            ax.plot(x, np.asarray(samples[j])[:, order].T, lw=0.7, alpha=0.8)
        ax.set_title(titles[j], fontsize=9)
    axes.ravel()[0].legend(fontsize=7, loc="best")
    figure.tight_layout()
    return figure


def plot_component_correlations(
    blocks: Mapping[tuple[int, int], np.ndarray],
    extents: Sequence[tuple[float, float]],
    titles: Sequence[str],
):
    """A J x J grid of posterior correlation images (Fig. 2.8): panel (i, j) shows corr(f_i(a), f_j(b) | y) with
    a along component i's grid (vertical axis) and b along component j's (horizontal axis).

    blocks[(i, j)]: (m_i, m_j) correlations for i <= j (the lower triangle is their transpose); extents[j]: (lo, hi)
    of component j's grid. Colours as in the thesis: red +1, teal 0, blue -1.
    """
    count = len(titles)
    figure, axes = plt.subplots(count, count, figsize=(1.6 * count + 1, 1.6 * count), squeeze=False)
    image = None
    for i in range(count):
        for j in range(count):
            ax = axes[i, j]
            block = blocks[(i, j)] if (i, j) in blocks else np.asarray(blocks[(j, i)]).T
            (a_lo, a_hi), (b_lo, b_hi) = extents[i], extents[j]
            image = ax.imshow(
                np.asarray(block),
                origin="lower",
                extent=(b_lo, b_hi, a_lo, a_hi),
                aspect="auto",
                cmap="jet",
                vmin=-1.0,
                vmax=1.0,
            )
            ax.set_xticks([])
            ax.set_yticks([])
            if i == count - 1:
                ax.set_xlabel(titles[j], fontsize=8)
            if j == 0:
                ax.set_ylabel(titles[i], fontsize=8)
    figure.colorbar(image, ax=axes.ravel().tolist(), shrink=0.6, label="posterior correlation")
    return figure
