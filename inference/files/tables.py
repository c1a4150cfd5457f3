"""Tables of results: CSV files, Markdown tables and the published-vs-ours comparison of a reproduction script."""

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from inference.files.atomic import atomic_write_text

__all__ = ["claims_summary", "markdown_table", "mean_and_se", "read_published", "write_comparison", "write_csv"]


def read_published(script_file: str) -> list[dict[str, str]]:
    """The published numbers stored next to a script as ``<script>_published.csv``."""
    path = Path(script_file).with_name(Path(script_file).stem + "_published.csv")
    with path.open() as handle:
        return list(csv.DictReader(handle))


def mean_and_se(values) -> tuple[float, float]:
    """Mean and standard error of the mean over repeated runs (se nan for a single run)."""
    values = np.asarray(values, float)
    se = float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else float("nan")
    return float(values.mean()), se


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """Rows as CSV (columns: every key, in order of first appearance; floats to 4 significant digits)."""
    fields: list[str] = []
    for row in rows:
        fields += [k for k in row if k not in fields]
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=fields)
    writer.writeheader()
    writer.writerows([{k: _fmt(v) for k, v in row.items()} for row in rows])
    atomic_write_text(path, text.getvalue())


def markdown_table(rows: Sequence[Mapping[str, Any]], header: Iterable[str] | None = None) -> str:
    header = list(header or rows[0].keys())
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(row.get(h, "")) for h in header) + " |" for row in rows]
    return "\n".join(lines)


def claims_summary(rows: Sequence[Mapping[str, Any]]) -> str:
    """``n of m claims pass`` (and ``; FAIL: [figures]``) over comparison rows with ``figure`` and ``verdict`` keys; a
    verdict passes when it starts with ``PASS``."""
    failed = [row["figure"] for row in rows if not str(row["verdict"]).startswith("PASS")]
    return f"{len(rows) - len(failed)} of {len(rows)} claims pass" + (f"; FAIL: {failed}" if failed else "")


def write_comparison(out: Path, rows: Sequence[Mapping[str, Any]], preamble: str) -> str:
    """Write comparison.csv and comparison.md (preamble: assumed defaults); return the Markdown text."""
    write_csv(out / "comparison.csv", rows)
    text = preamble.strip() + "\n\n" + markdown_table(rows) + "\n"
    atomic_write_text(out / "comparison.md", text)
    return text


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, np.floating | np.ndarray) and np.ndim(value) == 0:
        return f"{float(value):.4g}"
    return str(value)
