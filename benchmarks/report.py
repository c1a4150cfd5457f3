"""The report of a benchmark run: ``report.md`` (figures in ``figures/``) and a self-contained ``report.html``
(figures embedded as base64 PNG), rebuilt from the results store alone.

Per model: with a stored reference posterior, the gym's leaderboard (gradients until b^2 < 0.01) and its b^2 curves;
a table with one row per engine (metrics averaged over seeds; worst R-hat and errors; summed
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

# An error more than this many Monte Carlo standard errors is more than Monte Carlo noise: marked in the table.
Z_MARK = 3.0
# The mark of a failed health check or an error beyond Z_MARK MCSE; drawn red in the HTML report.
MARK = "[!]"
# column of an error -> (its MCSE column, its error / MCSE column)
ERROR_MCSE = {
    "max_mean_err_sd": ("max_mean_err_mcse", "max_mean_err_z"),
    "max_sd_err_rel": ("max_sd_err_mcse", "max_sd_err_z"),
}
# Engines whose draws are independent (exact conditionals, a variational guide, a smoother): their ESS/s measures
# how fast they draw, not how well a Markov chain mixes, so the ESS/s figure draws them apart from MCMC.
IID_ENGINES = frozenset({"exact", "kalman", "svi", "ads", "is-ep", "nvc"})

# column of the row -> (header, how seeds are combined, format)
COLUMNS = {
    "seeds": ("seeds ok", None, "{}"),
    "health": ("health", None, "{}"),
    "ess_per_s": ("ESS/s", "mean", "{:.4g}"),
    "ess_per_s_total": ("ESS/s incl. compile", "mean", "{:.4g}"),
    "ess_per_grad": ("ESS/grad", "mean", "{:.3g}"),
    "min_ess_bulk": ("min bulk ESS", "mean", "{:.0f}"),
    "max_rhat": ("max R-hat", "max", "{:.3f}"),
    "divergences": ("divergences", "sum", "{:.0f}"),
    "max_mean_err_sd": ("mean err (ref sd) ± MCSE", "max", "{:.3f}"),
    "max_sd_err_rel": ("sd err (ref sd) ± MCSE", "max", "{:.3f}"),
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
    the reference's label marked and engines that never succeeded showing '-'. Errors carry their Monte Carlo
    standard error (of the worst seed) and MARK where some seed's error exceeds Z_MARK MCSE; the health column counts
    the health warnings of the engine's runs, MARK when there are any.
    """
    table = {}
    for label, cells in rows.groupby("label", sort=False):
        ok = cells[cells["status"] == "ok"]
        line = {"seeds": f"{len(ok)}/{len(cells)}"}
        for column, (_, how, fmt) in COLUMNS.items():
            if column == "health":
                count = sum(len(_warnings(value)) for value in ok.get("health", []))
                line[column] = "-" if ok.empty else (f"{MARK} {count} warnings" if count else "ok")
                continue
            if how is None:
                continue
            values = pd.to_numeric(ok[column], errors="coerce").dropna() if column in ok else pd.Series(dtype=float)
            line[column] = fmt.format(getattr(values, how)()) if len(values) else "-"
            if column in ERROR_MCSE and len(values):
                line[column] = _with_mcse(ok, column, values, fmt)
            if column == "ess_per_s_total" and len(values):
                line[column] = fmt.format(_ess_per_s_total(ok))
        name = f"{label} (reference)" if (cells["label"] == cells["reference"]).all() else label
        table[name] = line
    frame = pd.DataFrame.from_dict(table, orient="index")
    frame.columns = [COLUMNS[c][0] for c in frame.columns]
    frame.index.name = "engine"
    return frame


def _ess_per_s_total(ok: pd.DataFrame) -> float:
    """ESS per second including compilation over all seeds of an engine: total min bulk ESS / total compile + run
    time (a mean of per-seed ratios would count the compilation once and then forget it: later seeds reuse the
    program)."""
    ess = pd.to_numeric(ok["min_ess_bulk"], errors="coerce")
    seconds = pd.to_numeric(ok["compile_s"], errors="coerce") + pd.to_numeric(ok["run_s"], errors="coerce")
    return float(ess.sum() / seconds.sum()) if seconds.sum() > 0 else np.nan


def _with_mcse(ok: pd.DataFrame, column: str, values: pd.Series, fmt: str) -> str:
    """The worst seed's error with its MCSE, and MARK when any seed's error exceeds Z_MARK of its MCSE."""
    mcse_column, z_column = ERROR_MCSE[column]
    worst = values.idxmax()
    mcse = pd.to_numeric(ok[mcse_column], errors="coerce").get(worst, np.nan) if mcse_column in ok else np.nan
    z = pd.to_numeric(ok[z_column], errors="coerce").max() if z_column in ok else np.nan
    text = fmt.format(values[worst])
    if np.isfinite(mcse):
        text += f" ± {fmt.format(mcse)}"
    if np.isfinite(z) and z > Z_MARK:
        text += f" {MARK}"
    return text


def _warnings(value) -> list[str]:
    """The health warnings of a row (a list, or its JSON text in a table read back; NaN for rows without them)."""
    if isinstance(value, str):
        value = json.loads(value)
    return list(value) if isinstance(value, list | tuple) else []


def health_lines(rows: pd.DataFrame) -> list[str]:
    """One line per distinct health warning of a model's engines: ``label, seeds 0, 1: message``."""
    found: dict[tuple[str, str], list[int]] = {}
    for _, row in rows[rows["status"] == "ok"].iterrows():
        for message in _warnings(row.get("health")):
            found.setdefault((row["label"], message), []).append(int(row["seed"]))
    return [
        f"{label}, seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}: {message}"
        for (label, message), seeds in found.items()
    ]


def fixed_line(rows: pd.DataFrame) -> str:
    """What the model's engines held fixed (they all hold the same: benchmarks/posteriors.py)."""
    from inference.core.fixed import describe

    ok = rows[rows["status"] == "ok"]
    fixed = [_fixed(value) for value in ok.get("fixed_params", [])]
    shown = {describe(f) for f in fixed}
    if not fixed:
        return ""
    if shown == {""}:
        return "Parameters: sampled or learned by every engine (none fixed)."
    if len(shown) == 1:
        return f"Parameters fixed for every engine: {shown.pop()}."
    differ = "; ".join(sorted(shown))
    return f"Parameters fixed differ between engines ({differ}): the errors compare different posteriors."


def _fixed(value) -> dict:
    if isinstance(value, str):
        value = json.loads(value)
    return dict(value) if isinstance(value, dict) else {}


def summary_line(rows: pd.DataFrame) -> str:
    """Which engine did best: lowest mean error against the reference (other engines), highest ESS/s, highest ESS/s
    including compilation (Markov chain engines: iid draws are drawn apart), each a mean over seeds."""
    ok = rows[rows["status"] == "ok"]
    others = ok[ok["label"] != ok["reference"]]  # the reference's error is 0 by definition: not a contender
    if others.empty:
        return ""
    parts = []

    def best(column: str, largest: bool, among=None):
        table = ok if largest else others
        if column not in table:
            return None
        by_label = table.groupby("label", sort=False)
        means = by_label[column].apply(lambda v: pd.to_numeric(v, errors="coerce").mean()).dropna()
        if among is not None:
            means = means[[label in among for label in means.index]]
        if means.empty:
            return None
        label = means.idxmax() if largest else means.idxmin()
        return label, means[label]

    found = best("max_mean_err_sd", largest=False)
    if found:
        parts.append(f"lowest mean error: {found[0]} ({found[1]:.3f} ref sd)")
    mcmc = {label for label, engine in zip(ok["label"], ok["engine"], strict=True) if engine not in IID_ENGINES}
    found = best("ess_per_s", largest=True, among=mcmc)
    if found:
        parts.append(f"highest ESS/s (MCMC): {found[0]} ({found[1]:.4g})")
    totals = {label: _ess_per_s_total(group) for label, group in ok.groupby("label", sort=False) if label in mcmc}
    totals = {label: value for label, value in totals.items() if np.isfinite(value)}
    found = max(totals.items(), key=lambda item: item[1]) if totals else None
    if found:
        parts.append(f"highest ESS/s incl. compilation (MCMC): {found[0]} ({found[1]:.4g})")
    seeds = sorted(set(ok["seed"]))
    return f"Best, averaged over {len(seeds)} seed{'s' if len(seeds) > 1 else ''}: " + "; ".join(parts) + "."


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


# b^2 threshold of the gym's metric (docs/gym.md#metric)
B2_THRESHOLD = 0.01


def gym_leaderboard(rows: pd.DataFrame) -> pd.DataFrame | None:
    """Per engine label of one model, against its stored reference: gradients until b^2 stays below 0.01 (pooled over
    chains; the median over seeds, 'not reached' where a run ended above it), the chains' own median, the final b^2
    and ESS per gradient; sorted by gradients to threshold (docs/gym.md#leaderboard). None when no row has b^2."""
    ok = rows[rows["status"] == "ok"]
    if "grads_to_b2" not in ok or pd.to_numeric(ok["grads_to_b2"], errors="coerce").notna().sum() == 0:
        return None
    lines = []
    for label, cells in ok.groupby("label", sort=False):
        grads = _numbers(cells, "grads_to_b2")
        if grads.empty:
            continue
        chain, final, per_grad = (_numbers(cells, c) for c in ("grads_to_b2_chain_median", "b2_final", "ess_per_grad"))
        median = float(np.median(grads))
        reached = int(np.isfinite(grads).sum())
        lines.append(
            {
                "engine": label,
                "_sort": median,
                "gradients to b² < 0.01": _count(median),
                "seeds reaching it": f"{reached}/{len(grads)}",
                "per chain (median)": _count(float(np.median(chain))) if len(chain) else "-",
                "final b²": f"{float(final.max()):.3g}" if len(final) else "-",
                "ESS/grad": f"{float(per_grad.mean()):.3g}" if len(per_grad) else "-",
            }
        )
    if not lines:
        return None
    frame = pd.DataFrame(lines).sort_values("_sort", kind="stable").drop(columns="_sort").set_index("engine")
    frame.index.name = "engine"
    return frame


def _count(value: float) -> str:
    return f"{value:.3g}" if np.isfinite(value) else "not reached"


def _numbers(rows: pd.DataFrame, column: str) -> pd.Series:
    """The column's numbers (NaN and missing left out; empty when the table has no such column)."""
    if column not in rows:
        return pd.Series(dtype=float)
    return pd.to_numeric(rows[column], errors="coerce").dropna()


def _b2_curves(ok: pd.DataFrame, model: str):
    """b^2 (pooled over chains) against gradient evaluations, one line per engine (each seed a line of its colour),
    on log axes, with the 0.01 threshold."""
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(8, 4.5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (label, cells) in enumerate(ok.groupby("label", sort=False)):
        for j, curve in enumerate(cells["b2_curve"]):
            if isinstance(curve, str):
                curve = json.loads(curve)
            if not isinstance(curve, dict):
                continue
            grads, b2 = np.asarray(curve["grads"], float), np.asarray(curve["b2"], float)
            keep = (grads > 0) & (b2 > 0)
            ax.plot(grads[keep], b2[keep], color=colours[i % len(colours)], lw=1.2, label=label if j == 0 else None)
    ax.axhline(B2_THRESHOLD, color="k", ls="--", lw=0.8, label="b² = 0.01")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("gradient evaluations (all chains, warm-up included)")
    ax.set_ylabel("b² (second moments, pooled over chains)")
    ax.set_title(f"{model}: b² against gradients (stored reference)")
    ax.legend(fontsize=8, ncol=2)
    figure.tight_layout()
    return figure


def model_figures(store: ResultsStore, rows: pd.DataFrame) -> list[Figure]:
    """Marginals over the reference, ESS/s bars and trace/rank plots of one model (first seed with a
    successful reference; every engine's cell at that seed)."""
    import matplotlib.pyplot as plt

    from inference.results import plots

    model = rows["model"].iloc[0]
    slug = model.replace("/", "__")
    figures = []
    ok = rows[rows["status"] == "ok"]
    if "b2_curve" in ok and ok["b2_curve"].notna().any():
        curves = ok[ok["b2_curve"].notna()]
        figures.append(
            Figure(
                f"{slug}-b2.png",
                f"{model}: b² of the second moments against gradient evaluations, one line per engine (and seed); "
                "the dashed line is the threshold 0.01 (docs/gym.md#metric)",
                _png(_b2_curves(curves, model)),
            )
        )
    if len(ok):
        figures.append(
            Figure(
                f"{slug}-ess.png",
                f"{model}: ESS/s (min bulk ESS per second of run time, and of compile plus run time)",
                _png(_ess_bars(ok, model)),
            )
        )
    references = ok[ok["label"] == ok["reference"]]
    if references.empty:  # no reference cell (failed, or the stored reference): trace plots of the first seed
        references = ok.iloc[:0]
    if references.empty and not (ok["reference"] == "stored").any():
        return figures
    seed = int((references if len(references) else ok)["seed"].min())
    at_seed = ok[ok["seed"] == seed]
    reference_label = references["label"].iloc[0] if len(references) else at_seed["label"].iloc[0]
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
                    f"{model} / {label}, seed {seed}: trace (draws per chain) and rank plots",
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
    """ESS/s per engine, of run time (left) and of compile plus run time (right); Markov chain engines on top, engines
    with independent draws (IID_ENGINES) below a rule and in grey: their ESS/s is a drawing speed, not mixing."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    labels = list(dict.fromkeys(ok["label"]))
    engine_of = dict(zip(ok["label"], ok["engine"], strict=True))
    labels = [lb for lb in labels if engine_of[lb] not in IID_ENGINES] + [
        lb for lb in labels if engine_of[lb] in IID_ENGINES
    ]
    iid = [engine_of[lb] in IID_ENGINES for lb in labels]
    columns = [("ess_per_s", "min bulk ESS per second of run time"), ("ess_per_s_total", "... of compile + run time")]
    figure, axes = plt.subplots(1, 2, figsize=(11, 1.9 + 0.4 * len(labels)), sharey=True)
    for ax, (column, title) in zip(axes, columns, strict=True):
        values = pd.to_numeric(ok[column], errors="coerce") if column in ok else pd.Series(np.nan, index=ok.index)
        means = np.array([values[ok["label"] == label].mean() for label in labels])
        if column == "ess_per_s_total":  # as the table: total ESS over total compile + run time of the seeds
            means = np.array([_ess_per_s_total(ok[ok["label"] == label]) for label in labels])
        colours = ["0.6" if flag else "tab:blue" for flag in iid]
        ax.barh(range(len(labels)), np.nan_to_num(means), color=colours, alpha=0.8)
        for i, label in enumerate(labels):  # every seed as a dot: the spread matters as much as the mean
            seeds = values[ok["label"] == label]
            ax.plot(seeds, [i] * len(seeds), "k.", ms=5)
        if any(iid) and not all(iid):
            ax.axhline(iid.index(True) - 0.5, color="k", lw=0.8, ls="--")
        if np.all(np.nan_to_num(means) > 0):  # ESS/s spans orders of magnitude between exact and sampling engines
            ax.set_xscale("log")
        ax.set_xlabel(title + (" (log scale)" if ax.get_xscale() == "log" else ""))
    axes[0].set_yticks(range(len(labels)), labels)
    axes[0].invert_yaxis()
    handles = [Patch(color="tab:blue", label="Markov chain (MCMC, SMC, particle)")]
    if any(iid):
        handles.append(Patch(color="0.6", label="independent draws (exact, variational): drawing speed, not mixing"))
    figure.legend(handles=handles, loc="lower center", ncol=2, frameon=False, bbox_to_anchor=(0.5, -0.02))
    figure.suptitle(f"{model}: ESS per second (bars: all seeds together; dots: each seed)")
    figure.tight_layout(rect=(0, 0.08, 1, 1))
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
        notes = [line for line in (fixed_line(rows), summary_line(rows)) if line]
        warnings = health_lines(rows)
        if warnings:
            notes.append("Health warnings, from each engine's own diagnostics (inference/results/health.py):")
        board = gym_leaderboard(rows)
        sections.append((model, engine_table(rows), model_figures(store, rows), notes, warnings, board))
    failed = failures(table)
    for _, _, figures, _, _, _ in sections:
        for figure in figures:
            store.write_file(f"figures/{figure.name}", figure.png)
    md = store.write_file("report.md", render_markdown(info, sections, failed))
    page = store.write_file("report.html", render_html(info, sections, failed))
    return {"md": md, "html": page}


def render_markdown(info: dict[str, str], sections, failed: pd.DataFrame) -> str:
    out = [f"# Benchmark report: {info['suite']}", "", info["description"], ""]
    out += [f"- **{key}**: {value}" for key, value in info.items() if key not in {"suite", "description"}]
    out += ["", _LEGEND, ""]
    for model, frame, figures, notes, warnings, board in sections:
        table = markdown_table(frame).replace(MARK, "**(!)**")
        out += [f"## {model}", ""]
        if board is not None:
            out += [_LEADERBOARD, "", markdown_table(board), ""]
        out += [table, "", *[f"{note}\n" for note in notes]]
        out += [*(f"- **(!)** {line}" for line in warnings), ""] if warnings else []
        out += [f"![{figure.caption}](figures/{figure.name})\n\n*{figure.caption}*\n" for figure in figures]
    if len(failed):
        out += ["## Failed cells", "", markdown_table(failed.set_index("model")), ""]
    return "\n".join(out)


_LEGEND = (
    "Rows are engines (metrics averaged over seeds; R-hat and errors are the worst seed, divergences the sum; "
    "'seeds ok' says how many seeds each average holds). "
    "ESS is ArviZ's min bulk ESS over all variables; ESS/s divides it by run time; ESS/s incl. compile is the "
    "total ESS of the seeds over their total compile plus run time (later seeds reuse the compiled program). "
    "Where the model has a stored reference posterior (zoo/references/, docs/gym.md#references) the errors are "
    "against it (its own MCSE included), else against the reference engine. "
    "Mean err is the largest |mean - reference mean| / reference sd over variables; sd err the "
    "largest |sd - reference sd| / reference sd; each with its Monte Carlo standard error (the engine's and the "
    "reference's MCSE combined, at that component), marked (!) where some component's error exceeds 3 MCSE: more "
    "than Monte Carlo noise. Health counts the warnings of each engine's own diagnostics (R-hat > 1.01, ESS < 100 "
    "per chain, divergences, E-BFMI < 0.2, SVI not converged, particle degeneracy; inference/results/health.py), "
    "listed under the table. Every engine of a model describes the same posterior: the parameters fixed are the same "
    "for all (benchmarks/posteriors.py). "
    "Log evidence is given by engines that estimate it. Compile s is 0 where a cell "
    "reused a program compiled earlier in the same process (same model, engine options and shapes)."
)

_LEADERBOARD = (
    "Leaderboard against the stored reference posterior (zoo/references/): gradient evaluations until b², the largest "
    "squared bias of a second moment E[x²] in units of Var[x²], stays below 0.01 (pooled over chains, warm-up "
    "included; median over seeds), fewest first (docs/gym.md#metric)."
)

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1400px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
td { white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
thead th { background: #f0f0f0; }
img { max-width: 100%; border: 1px solid #eee; }
figure { margin: 1em 0; }
figcaption { font-size: 0.85em; color: #555; }
.info td, .failed td { text-align: left; }
.bad { color: #c00; font-weight: bold; }
ul.health { color: #900; font-size: 0.9em; }
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
    bad = '<span class="bad">&#9888;</span>'
    for model, frame, figures, notes, warnings, board in sections:
        table = frame.to_html(border=0, index_names=False).replace(esc(MARK), bad).replace(MARK, bad)
        parts.append(f'<h2 id="{esc(model)}">{esc(model)}</h2>')
        if board is not None:
            parts += [f"<p>{esc(_LEADERBOARD)}</p>", board.to_html(border=0, index_names=False)]
        parts += [table, *(f"<p>{esc(note)}</p>" for note in notes)]
        if warnings:
            parts.append('<ul class="health">' + "".join(f"<li>{bad} {esc(w)}</li>" for w in warnings) + "</ul>")
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
