"""The report's text in App. D's format (Duvenaud 2014), built once as a list of blocks and rendered to a
self-contained HTML page (images inlined as base64 PNG) and to Markdown (images as files beside it).

Sections as App. D: 1 Executive summary (data and posterior figure, the summary paragraph, one bullet per component,
Table 1 of cumulative fits), 2 Detailed discussion of additive components (one subsection per component: long
description, variance and MAE sentence, figure), 3 Extrapolation. Sentences follow App. D's wording.
"""

import base64
import html
from collections.abc import Sequence
from typing import NamedTuple

from inference.applications.structure_report.statistics import MAE_FLAT, VARIANCE_EXPLAINED, ComponentRow, ReportNumbers


class Block(NamedTuple):
    kind: str  # "h1" "h2" "h3" "p" "ul" "table" "img"
    content: object
    anchor: str = ""  # id of a heading
    caption: str = ""  # of an image


def blocks(numbers: ReportNumbers, images: dict[str, bytes], notes: str = "") -> list[Block]:
    """The report as blocks; ``images`` holds PNG bytes under "data", "component-<k>" and "extrapolation"."""
    rows = numbers.rows
    out = [Block("h1", f"An automatic report for the data set: {numbers.title}")]
    if notes:
        out.append(Block("p", notes))
    out += [
        Block("h2", "1 Executive summary", "summary"),
        Block("p", "The raw data and full model posterior with extrapolations are shown in figure 1."),
        Block("img", "data", caption="Figure 1: Raw data (left) and model posterior with extrapolation (right)"),
        Block("p", summary_paragraph(rows)),
        Block("ul", [row.description.short for row in rows]),
        Block("table", table_rows(numbers)),
        Block("p", TABLE_CAPTION),
        Block("h2", "2 Detailed discussion of additive components", "components"),
    ]
    for k, row in enumerate(rows, start=1):
        out += [
            Block("h3", f"2.{k} Component {k} : {row.description.short.rstrip('.')}", f"component-{k}"),
            Block("p", row.description.long),
            Block("p", component_statistics(k, row, rows[k - 2] if k > 1 else None, numbers.mae_empty)),
            Block(
                "img",
                f"component-{k}",
                caption=f"Figure {k + 1}: Posterior of component {k} (left) and the posterior of the cumulative sum "
                f"of components with data (right)",
            ),
        ]
    out += [
        Block("h2", "3 Extrapolation", "extrapolation"),
        Block(
            "p",
            f"Summaries of the posterior distribution of the full model are shown in figure {len(rows) + 2}. The plot "
            "on the left displays the mean of the posterior together with pointwise variance. The plot on the right "
            "displays three random samples from the posterior.",
        ),
    ]
    if numbers.test_rmse is not None:
        out.append(
            Block(
                "p",
                f"On the {len(numbers.x_test)} held-out points the posterior mean has RMSE {numbers.test_rmse:.4g} and "
                f"MAE {numbers.test_mae:.4g}.",
            )
        )
    out.append(
        Block(
            "img",
            "extrapolation",
            caption=f"Figure {len(rows) + 2}: Full model posterior. Mean and pointwise variance (left) and three "
            "random samples (right)",
        )
    )
    missing = {b.content for b in out if b.kind == "img"} - set(images)
    if missing:
        raise KeyError(f"report images missing: {sorted(missing)}")
    return out


TABLE_HEADER = ("#", "R^2 (%)", "Delta R^2 (%)", "Residual R^2 (%)", "Cross validated MAE", "Reduction in MAE (%)")
TABLE_CAPTION = (
    "Table 1: Summary statistics for cumulative additive fits to the data. The residual coefficient of determination "
    "(R^2) values are computed using the residuals from the previous fit as the target values; this measures how much "
    "of the residual variance is explained by each new component. The mean absolute error (MAE) is calculated using "
    "10 fold cross validation with a contiguous block design; this measures the ability of the model to interpolate "
    "and extrapolate over moderate distances. The model is fit using the full data so the MAE values cannot be used "
    "reliably as an estimate of out-of-sample predictive performance."
)


def table_rows(numbers: ReportNumbers) -> list[tuple[str, ...]]:
    """Table 1 with its header: a first row for the empty model, then one row per component."""
    out = [TABLE_HEADER, ("-", "-", "-", "-", _mae(numbers.mae_empty), "-")]
    for k, row in enumerate(numbers.rows, start=1):
        out.append(
            (
                str(k),
                f"{100 * row.r2:.1f}",
                f"{100 * row.delta_r2:.1f}",
                f"{100 * row.residual_r2:.1f}",
                _mae(row.mae),
                f"{100 * row.mae_reduction:.1f}",
            )
        )
    return out


def summary_paragraph(rows: Sequence[ComponentRow]) -> str:
    count = len(rows)
    words = _number_word(count)
    text = [f"The model has {words} additive component{'s' if count != 1 else ''}."]
    quoted = []
    for level in VARIANCE_EXPLAINED:
        k = next((i for i, row in enumerate(rows, start=1) if row.r2 >= level), None)
        if k is not None and k not in quoted:
            quoted.append(k)
            text.append(
                f"The first {k} additive component{'s' if k != 1 else ''} explain{'s' if k == 1 else ''} "
                f"{100 * rows[k - 1].r2:.1f}% of the variation in the data"
                + (
                    " as shown by the coefficient of determination (R^2) values in table 1."
                    if len(quoted) == 1
                    else "."
                )
            )
    if not quoted and rows:
        text.append(f"All {count} components together explain {100 * rows[-1].r2:.1f}% of the variation in the data.")
    flat = mae_flat_after(rows)
    if flat < count:
        text.append(
            f"After the first {flat} component{'s' if flat != 1 else ''} the cross validated mean absolute error (MAE) "
            f"does not decrease by more than {100 * MAE_FLAT:.1f}%. This suggests that subsequent terms are modelling "
            "very short term trends, uncorrelated noise or are artefacts of the model or search procedure."
        )
    else:
        text.append(
            f"Every component decreases the cross validated mean absolute error by more than {100 * MAE_FLAT:.1f}%."
        )
    text.append("Short summaries of the additive components are as follows:")
    return " ".join(text)


def mae_flat_after(rows: Sequence[ComponentRow]) -> int:
    """The smallest k after which no component reduces the CV MAE by more than MAE_FLAT (App. D's "After the first 5
    components ...")."""
    k = len(rows)
    while k > 0 and rows[k - 1].mae_reduction <= MAE_FLAT:
        k -= 1
    return k


def component_statistics(k: int, row: ComponentRow, previous: ComponentRow | None, mae_empty: float) -> str:
    """App. D's sentences under each component."""
    if previous is None:
        text = f"This component explains {100 * row.r2:.1f}% of the total variance."
    else:
        text = (
            f"This component explains {100 * row.residual_r2:.1f}% of the residual variance; this increases the total "
            f"variance explained from {100 * previous.r2:.1f}% to {100 * row.r2:.1f}%."
        )
    before = mae_empty if previous is None else previous.mae
    verb = "reduces" if row.mae_reduction >= 0 else "increases"
    text += (
        f" The addition of this component {verb} the cross validated MAE by {100 * abs(row.mae_reduction):.2f}% from "
        f"{_mae(before)} to {_mae(row.mae)}."
    )
    if row.mae_reduction < MAE_FLAT:
        text += (
            " This component explains residual variance but does not improve MAE which suggests that this component "
            "describes very short term patterns, uncorrelated noise or is an artefact of the model or search procedure."
        )
    return text


def to_html(report: Sequence[Block], images: dict[str, bytes], title: str) -> str:
    """A self-contained page: inline CSS, images as data URIs, no external link."""
    body = []
    for block in report:
        if block.kind in ("h1", "h2", "h3"):
            anchor = f' id="{block.anchor}"' if block.anchor else ""
            body.append(f"<{block.kind}{anchor}>{html.escape(str(block.content))}</{block.kind}>")
        elif block.kind == "p":
            body.append(f"<p>{html.escape(str(block.content))}</p>")
        elif block.kind == "ul":
            body.append("<ul>" + "".join(f"<li>{html.escape(item)}</li>" for item in block.content) + "</ul>")
        elif block.kind == "table":
            header, *rows = block.content
            head = "".join(f"<th>{html.escape(cell)}</th>" for cell in header)
            lines = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{lines}</tbody></table>")
        elif block.kind == "img":
            data = base64.b64encode(images[block.content]).decode("ascii")
            body.append(
                f'<figure><img alt="{html.escape(block.caption)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{html.escape(block.caption)}</figcaption></figure>"
            )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


CSS = (
    "body{font-family:Georgia,serif;max-width:1000px;margin:2em auto;padding:0 1em;line-height:1.45;color:#222}"
    "table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #bbb;padding:3px 8px;text-align:right}"
    "figure{margin:1em 0}img{max-width:100%}figcaption{font-size:0.9em;color:#555}"
)


def to_markdown(report: Sequence[Block], image_paths: dict[str, str]) -> str:
    """Markdown with images referenced by the relative paths in ``image_paths``."""
    lines = []
    for block in report:
        if block.kind in ("h1", "h2", "h3"):
            lines.append(f"{'#' * int(block.kind[1])} {block.content}")
        elif block.kind == "p":
            lines.append(str(block.content))
        elif block.kind == "ul":
            lines.append("\n".join(f"- {item}" for item in block.content))
        elif block.kind == "table":
            header, *rows = block.content
            table = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            table += ["| " + " | ".join(row) + " |" for row in rows]
            lines.append("\n".join(table))
        elif block.kind == "img":
            lines.append(f"![{block.caption}]({image_paths[block.content]})\n\n*{block.caption}*")
    return "\n\n".join(lines) + "\n"


def _mae(value: float) -> str:
    return f"{value:.2f}" if abs(value) < 1000 else f"{value:.1f}"


def _number_word(count: int) -> str:
    words = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
    return words[count] if count < len(words) else str(count)
