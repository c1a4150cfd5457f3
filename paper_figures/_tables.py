"""Small helpers shared by the reproduction scripts: CSV writing and the published-vs-ours comparison table."""

import csv
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any


def read_published(script_file: str) -> list[dict[str, str]]:
    """The published numbers stored next to a script as ``<script>_published.csv``."""
    path = Path(script_file).with_name(Path(script_file).stem + "_published.csv")
    with path.open() as handle:
        return list(csv.DictReader(handle))


def mean_and_se(values) -> tuple[float, float]:
    """Mean and standard error of the mean over repeated runs (se nan for a single run)."""
    import numpy as np

    values = np.asarray(values, float)
    se = float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else float("nan")
    return float(values.mean()), se


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    fields: list[str] = []
    for row in rows:
        fields += [k for k in row if k not in fields]
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows([{k: _fmt(v) for k, v in row.items()} for row in rows])
    tmp.replace(path)


def markdown_table(rows: Sequence[Mapping[str, Any]], header: Iterable[str] | None = None) -> str:
    header = list(header or rows[0].keys())
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(row.get(h, "")) for h in header) + " |" for row in rows]
    return "\n".join(lines)


def write_comparison(out: Path, rows: Sequence[Mapping[str, Any]], preamble: str) -> str:
    """Write comparison.csv and comparison.md (preamble: assumed defaults); return the Markdown text."""
    write_csv(out / "comparison.csv", rows)
    text = preamble.strip() + "\n\n" + markdown_table(rows) + "\n"
    (out / "comparison.md").write_text(text)
    return text


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    try:
        import numpy as np

        if isinstance(value, np.floating | np.ndarray) and np.ndim(value) == 0:
            return f"{float(value):.4g}"
    except ImportError:  # pragma: no cover
        pass
    return str(value)
