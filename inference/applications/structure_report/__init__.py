"""ABCD reports (Duvenaud 2014, ch. 4 and App. D): for a fitted kernel, a self-contained HTML page and a Markdown
file that describe each additive component in English, with the table of cumulative fits and the decomposition,
cumulative-fit and extrapolation plots.

- ``statistics``: every number and curve (components, contiguous-block CV MAE, greedy order, R^2 table);
- ``figures``: the PNGs; ``render``: the text as blocks, to HTML and Markdown.

``write_report(numbers, out, name)`` writes ``<name>.html``, ``<name>.md`` and ``<name>_figures/*.png`` atomically
(``inference.files.atomic``); ``report(kernel, noise, X, y, ...)`` computes and writes in one call. See
docs/sources/duvenaud.md#report. ``tests/test_structure_report.py`` checks a written page's HTML, and renders it in
headless Chromium when a ``chromium`` binary is present (as ``benchmarks/screenshot_report.py`` does for ``zoo bench``).
"""

from pathlib import Path

from inference.applications.structure_report import figures, render
from inference.applications.structure_report.statistics import ReportNumbers, compute
from inference.files.atomic import atomic_write_bytes, atomic_write_text


def images(numbers: ReportNumbers) -> dict[str, bytes]:
    out = {"data": figures.data_and_posterior(numbers), "extrapolation": figures.extrapolation(numbers)}
    for k, row in enumerate(numbers.rows, start=1):
        out[f"component-{k}"] = figures.component(numbers, k, row)
    return out


def write_report(numbers: ReportNumbers, out: Path, name: str, notes: str = "") -> dict[str, Path]:
    """Write the report of ``numbers`` under ``out``; returns the paths written ("html", "md")."""
    out = Path(out)
    folder = out / f"{name}_figures"
    folder.mkdir(parents=True, exist_ok=True)
    pngs = images(numbers)
    blocks = render.blocks(numbers, pngs, notes)
    paths = {}
    for key, payload in pngs.items():
        atomic_write_bytes(folder / f"{key}.png", payload)
    html_path, md_path = out / f"{name}.html", out / f"{name}.md"
    title = f"Report: {numbers.title}"
    atomic_write_text(html_path, render.to_html(blocks, pngs, title))
    atomic_write_text(md_path, render.to_markdown(blocks, {key: f"{folder.name}/{key}.png" for key in pngs}))
    paths["html"], paths["md"] = html_path, md_path
    return paths


def report(kernel, noise, X, y, out: Path, name: str, notes: str = "", **options) -> tuple[ReportNumbers, dict]:
    """``compute`` (options: title, unit, offset, X_test, y_test, extrapolate, grid_size, seed), then
    ``write_report``."""
    options.setdefault("title", name)
    numbers = compute(kernel, noise, X, y, **options)
    return numbers, write_report(numbers, out, name, notes)


__all__ = ["ReportNumbers", "compute", "images", "report", "write_report"]
