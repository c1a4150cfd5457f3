"""The report's figures as PNG bytes (App. D, Figs. 1-11): data and full posterior, each component's posterior next
to the cumulative fit, and the extrapolation with posterior draws. Component panels are drawn by
``inference.results.component_plots.plot_decomposition`` (the project's decomposition panels: mean +- 2 sd, points)."""

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from inference.applications.structure_report.statistics import ComponentRow, ReportNumbers  # noqa: E402
from inference.results.component_plots import plot_decomposition  # noqa: E402

DPI = 90


def png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    plt.close(figure)
    return buffer.getvalue()


def data_and_posterior(numbers: ReportNumbers) -> bytes:
    """Fig. 1: raw data (left), posterior of the full model with extrapolation (right)."""
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 3.2), sharey=True)
    left.plot(numbers.x, numbers.y, "k-", lw=1)
    left.set_title("Raw data", fontsize=9)
    _band(right, numbers.grid, numbers.full.mean, numbers.full.sd)
    right.plot(numbers.x, numbers.y, "k.", ms=2, label="data")
    _test_points(right, numbers)
    right.set_title("Posterior with extrapolation (mean +- 2 sd of f)", fontsize=9)
    right.legend(fontsize=7, loc="best")
    for ax in (left, right):
        ax.set_xlabel(numbers.unit, fontsize=8)
    figure.tight_layout()
    return png(figure)


def component(numbers: ReportNumbers, k: int, row: ComponentRow) -> bytes:
    """Component k's posterior (left, with partial residuals) and the cumulative sum of components 1..k with the
    data (right), over the training range (App. D, Figs. 2-10)."""
    inside = numbers.in_data
    grid = numbers.grid[inside]
    figure = plot_decomposition(
        [grid, grid],
        [row.posterior.mean[inside], row.cumulative.mean[inside]],
        [row.posterior.sd[inside], row.cumulative.sd[inside]],
        [f"Posterior of component {k}", f"Sum of components 1-{k} with data"],
        data_x=[numbers.x, numbers.x],
        data_y=[row.residual_points + 0.0, numbers.y],
        ncols=2,
        sharey=False,
        data_label="points: partial residuals (left), data (right)",
    )
    figure.set_size_inches(10, 3.2)
    figure.tight_layout()
    return png(figure)


def extrapolation(numbers: ReportNumbers) -> bytes:
    """Fig. 11: mean and pointwise +- 2 sd of the full posterior (left), three posterior draws (right)."""
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 3.2), sharey=True)
    _band(left, numbers.grid, numbers.full.mean, numbers.full.sd)
    for ax in (left, right):
        ax.plot(numbers.x, numbers.y, "k.", ms=2, label="data")
        _test_points(ax, numbers)
        ax.axvline(numbers.x.max(), color="0.6", lw=0.8, ls="--")
        ax.set_xlabel(numbers.unit, fontsize=8)
    right.plot(numbers.grid, np.asarray(numbers.samples).T, lw=0.9)
    left.set_title("Mean and pointwise +- 2 sd", fontsize=9)
    right.set_title(f"{len(numbers.samples)} posterior draws", fontsize=9)
    left.legend(fontsize=7, loc="best")
    figure.tight_layout()
    return png(figure)


def _band(ax, grid, mean, sd) -> None:
    ax.fill_between(grid, mean - 2 * sd, mean + 2 * sd, color="tab:red", alpha=0.25, lw=0, label="+- 2 sd")
    ax.plot(grid, mean, color="tab:red", lw=1.2, label="posterior mean")


def _test_points(ax, numbers: ReportNumbers) -> None:
    if numbers.x_test is not None and numbers.y_test is not None:
        ax.plot(numbers.x_test, numbers.y_test, "g.", ms=3, label="held-out data")
