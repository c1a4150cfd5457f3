"""The report of a benchmark run: ``report.md`` (figures in ``figures/``) and a self-contained ``report.html``
(figures embedded as base64 PNG), rebuilt from the results store alone.

Per model: a table with one row per engine (metrics averaged over seeds; worst R-hat and errors; summed
divergences), the posterior marginals of every engine over the reference's, ESS/s bars, and trace/rank
plots of the sampling engines. Failed cells are listed with their error.
"""

import base64
import contextlib
import html
import io
import json
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.store import ResultsStore

# column of the row -> (header, how seeds are combined, format)
COLUMNS = {
    "seeds": ("seeds ok", None, "{}"),
    "ess_per_s": ("ESS/s", "mean", "{:.4g}"),
    "ess_per_grad": ("ESS/grad", "mean", "{:.3g}"),
    "min_ess_bulk": ("min bulk ESS", "mean", "{:.0f}"),
    "max_rhat": ("max R-hat", "max", "{:.3f}"),
    "divergences": ("divergences", "sum", "{:.0f}"),
    "max_mean_err_sd": ("mean err (ref sd)", "max", "{:.3f}"),
    "max_sd_err_rel": ("sd err (rel)", "max", "{:.3f}"),
    "log_evidence": ("log evidence", "mean", "{:.3f}"),
    "compile_s": ("compile s", "mean", "{:.2f}"),
    "run_s": ("run s", "mean", "{:.2f}"),
    "wall_s": ("wall s", "mean", "{:.2f}"),
}


@dataclass
class Figure:
    """A rendered figure: a file name under ``figures/``, a caption, and its PNG bytes."""

    name: str
    caption: str
    png: bytes


def engine_table(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per engine label of one model: metrics of its ok cells combined over seeds.

    rows: the results table restricted to one model (one row per cell). Returns formatted strings, with
    the reference's label marked and engines that never succeeded showing '-'.
    """
    table = {}
    for label, cells in rows.groupby("label", sort=False):
        ok = cells[cells["status"] == "ok"]
        line = {"seeds": f"{len(ok)}/{len(cells)}"}
        for column, (_, how, fmt) in COLUMNS.items():
            if how is None:
                continue
            values = pd.to_numeric(ok[column], errors="coerce").dropna() if column in ok else pd.Series(dtype=float)
            line[column] = fmt.format(getattr(values, how)()) if len(values) else "-"
        name = f"{label} (reference)" if (cells["label"] == cells["reference"]).all() else label
        table[name] = line
    frame = pd.DataFrame.from_dict(table, orient="index")
    frame.columns = [COLUMNS[c][0] for c in frame.columns]
    frame.index.name = "engine"
    return frame


def failures(rows: pd.DataFrame) -> pd.DataFrame:
    failed = rows[rows["status"] != "ok"]
    return pd.DataFrame(
        {
            "model": failed["model"],
            "engine": failed["label"],
            "seed": failed["seed"],
            "error": [str(e).splitlines()[0][:300] for e in failed["error"]],
        }
    )


def in_suite_order(store: ResultsStore, table: pd.DataFrame) -> pd.DataFrame:
    """Rows in the order of the suite file (models, then engines as listed, then seeds); cells the suite
    file does not know (or no suite file) come last, alphabetically."""
    from benchmarks import suites

    try:
        suite = suites.parse(store.suite_text(), store.suite_name())
    except (FileNotFoundError, suites.SuiteError):
        return table
    models = suite.models()
    labels = {}
    for cell in suite.cells:
        labels.setdefault(cell.variant, {}).setdefault(cell.label, len(labels.get(cell.variant, {})))
    # The suite lists references first within its cells; within a model, keep the file's engine order.
    rank = [
        (models.index(m) if m in models else len(models), labels.get(m, {}).get(l, 1 << 20), s, c)
        for c, m, l, s in zip(table.index, table["model"], table["label"], table["seed"], strict=True)
    ]
    return table.loc[[c for *_, c in sorted(rank)]]


def model_figures(store: ResultsStore, rows: pd.DataFrame) -> list[Figure]:
    """Marginals over the reference, ESS/s bars and trace/rank plots of one model (first seed with a
    successful reference; every engine's cell at that seed)."""
    import matplotlib.pyplot as plt

    from inference.results import plots

    model = rows["model"].iloc[0]
    slug = model.replace("/", "__")
    figures = []
    ok = rows[rows["status"] == "ok"]
    if len(ok):
        figures.append(
            Figure(
                f"{slug}-ess.png", f"{model}: ESS/s (min bulk ESS per second of run time)", _png(_ess_bars(ok, model))
            )
        )
    references = ok[ok["label"] == ok["reference"]]
    if references.empty:
        return figures
    seed = int(references["seed"].min())
    at_seed = ok[ok["seed"] == seed]
    reference_label = references["label"].iloc[0]
    ordered = [reference_label] + [label for label in at_seed["label"] if label != reference_label]
    idatas = {label: store.read_idata(at_seed.index[at_seed["label"] == label][0]) for label in ordered}
    figures.append(
        Figure(
            f"{slug}-marginals.png",
            f"{model}: posterior marginals of each engine over the reference ({reference_label}), seed {seed}; "
            "vector variables cut to their first components",
            _png(_safe(lambda: plots.plot_marginals(idatas), plots)),
        )
    )
    for label, idata in idatas.items():
        sampler = "sample_stats" in idata.groups() and idata.posterior.sizes["chain"] > 1
        if sampler:
            figures.append(
                Figure(
                    f"{slug}-{label}-trace.png",
                    f"{model} / {label}, seed {seed}: trace and rank plots per chain",
                    _png(_safe(lambda idata=idata: plots.plot_trace_rank(idata), plots)),
                )
            )
    plt.close("all")
    return figures


def _safe(draw, plots):
    """The figure, or a figure saying why it could not be drawn (a report must never fail on one plot)."""
    try:
        return draw()
    except Exception as exc:
        return plots.message_figure(f"plot failed: {type(exc).__name__}: {str(exc)[:120]}")


def _ess_bars(ok: pd.DataFrame, model: str):
    import matplotlib.pyplot as plt

    values = pd.to_numeric(ok["ess_per_s"], errors="coerce")
    labels = list(dict.fromkeys(ok["label"]))
    means = [values[ok["label"] == label].mean() for label in labels]
    figure, ax = plt.subplots(figsize=(7, 1.6 + 0.35 * len(labels)))
    ax.barh(labels, np.nan_to_num(means), color="tab:blue", alpha=0.7)
    for i, label in enumerate(labels):  # every seed as a dot: the spread matters as much as the mean
        ax.plot(values[ok["label"] == label], [i] * int((ok["label"] == label).sum()), "k.", ms=4)
    if all(m > 0 for m in means):  # ESS/s spans orders of magnitude between exact and sampling engines
        ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel("min bulk ESS per second of run time (log scale)")
    ax.set_title(model)
    figure.tight_layout()
    return figure


def _png(figure) -> bytes:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=80, bbox_inches="tight")
    plt.close(figure)
    return buffer.getvalue()


def markdown_table(frame: pd.DataFrame) -> str:
    header = [frame.index.name or "", *frame.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for index, row in frame.iterrows():
        cells = [str(index), *(str(v).replace("|", "\\|").replace("\n", " ") for v in row)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_info(store: ResultsStore, rows: pd.DataFrame) -> dict[str, str]:
    """Suite name and description, hosts, executors, package versions and the time span of the run."""
    suite = {}
    with contextlib.suppress(FileNotFoundError, ValueError):  # a store without its suite file still reports
        suite = tomllib.loads(store.suite_text())
    versions = next((v for v in rows["versions"] if isinstance(v, str) and v), "{}")
    return {
        "suite": store.suite_name(),
        "description": suite.get("description", ""),
        "cells": f"{(rows['status'] == 'ok').sum()} ok, {(rows['status'] != 'ok').sum()} failed",
        "hosts": ", ".join(sorted(set(rows["host"].dropna()))),
        "executors": ", ".join(sorted(set(rows["executor"].dropna()) - {""})),
        "started": f"{rows['started'].min()} to {rows['started'].max()}",
        "versions": ", ".join(f"{k} {v}" for k, v in json.loads(versions).items()),
    }


def write_report(store: ResultsStore) -> dict[str, Path]:
    """Write ``report.md``, ``figures/*.png`` and ``report.html`` under the store's folder; return their paths."""
    table = store.table()
    if table.empty:
        raise ValueError(f"{store.root}: no finished cells to report")
    table = in_suite_order(store, table)
    info = run_info(store, table)
    sections = []
    for model in dict.fromkeys(table["model"]):
        rows = table[table["model"] == model]
        sections.append((model, engine_table(rows), model_figures(store, rows)))
    failed = failures(table)
    for _, _, figures in sections:
        for figure in figures:
            store.write_file(f"figures/{figure.name}", figure.png)
    md = store.write_file("report.md", render_markdown(info, sections, failed))
    page = store.write_file("report.html", render_html(info, sections, failed))
    return {"md": md, "html": page}


def render_markdown(info: dict[str, str], sections, failed: pd.DataFrame) -> str:
    out = [f"# Benchmark report: {info['suite']}", "", info["description"], ""]
    out += [f"- **{key}**: {value}" for key, value in info.items() if key not in {"suite", "description"}]
    out += ["", _LEGEND, ""]
    for model, frame, figures in sections:
        out += [f"## {model}", "", markdown_table(frame), ""]
        out += [f"![{figure.caption}](figures/{figure.name})\n\n*{figure.caption}*\n" for figure in figures]
    if len(failed):
        out += ["## Failed cells", "", markdown_table(failed.set_index("model")), ""]
    return "\n".join(out)


_LEGEND = (
    "Rows are engines (metrics averaged over seeds; R-hat and errors are the worst seed, divergences the sum). "
    "ESS is ArviZ's min bulk ESS over all variables; ESS/s divides it by run time (compile time apart). "
    "Mean err is the largest |mean - reference mean| / reference sd over variables; sd err the largest "
    "relative error of the posterior sd. Log evidence is given by engines that estimate it. Compile s is 0 "
    "where a cell reused a program compiled earlier in the same process (same model, engine options and shapes)."
)

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
thead th { background: #f0f0f0; }
img { max-width: 100%; border: 1px solid #eee; }
figure { margin: 1em 0; }
figcaption { font-size: 0.85em; color: #555; }
.info td, .failed td { text-align: left; }
"""


def render_html(info: dict[str, str], sections, failed: pd.DataFrame) -> str:
    esc = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Benchmark report: {esc(info['suite'])}</title><style>{_STYLE}</style></head><body>",
        f"<h1>Benchmark report: {esc(info['suite'])}</h1>",
        f"<p>{esc(info['description'])}</p>",
        '<table class="info">',
        *(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in info.items() if k not in {"suite", "description"}),
        "</table>",
        f"<p>{esc(_LEGEND)}</p>",
    ]
    for model, frame, figures in sections:
        parts += [f'<h2 id="{esc(model)}">{esc(model)}</h2>', frame.to_html(border=0, index_names=False)]
        for figure in figures:
            data = base64.b64encode(figure.png).decode("ascii")
            parts.append(
                f'<figure><img alt="{esc(figure.caption)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{esc(figure.caption)}</figcaption></figure>"
            )
    if len(failed):
        parts += ["<h2>Failed cells</h2>", failed.to_html(index=False, border=0, classes="failed")]
    generated = datetime.now(UTC).isoformat(timespec="seconds")
    parts += [f"<p><small>generated {esc(generated)} by zoo report</small></p>", "</body></html>"]
    return "\n".join(parts)
