"""What the figure scripts that check a document's captions claim by claim share: the run over their figure groups
(each timed, its rows of claims and its numbers gathered, its plot drawn), the closing write-up (``numbers.csv``,
``comparison.md`` with the count of claims that pass) and a headless pyplot."""

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from inference.files.tables import claims_summary, write_comparison, write_csv

__all__ = ["band", "pass_fail", "pyplot", "run_groups", "write_results"]

# (name, compute, plot): compute(argument) -> (rows of claims, numbers, data for the plot); plot(out, data)
Group = tuple[str, Callable[[Any], tuple[list[dict], dict, Any]], Callable[[Path, Any], None]]


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def band(ax, x, mean, sd, colour, label) -> None:
    """A mean line and its +-2 sd band."""
    ax.plot(x, mean, color=colour, label=label)
    ax.fill_between(x, mean - 2 * sd, mean + 2 * sd, color=colour, alpha=0.2)


def run_groups(out: Path, groups: Iterable[Group], argument: Any, seconds_key: str = "{}_seconds"):
    """Compute and plot each group in turn: (every group's rows, the numbers with each group's run time under
    ``seconds_key.format(name)``, {name: data})."""
    rows, numbers, data = [], {}, {}
    for name, compute, plot in groups:
        start = time.perf_counter()
        group_rows, group_numbers, data[name] = compute(argument)
        numbers[seconds_key.format(name)] = time.perf_counter() - start
        rows += group_rows
        numbers |= group_numbers
        plot(out, data[name])
    return rows, numbers, data


def pass_fail(ok) -> str:
    """A claim's verdict."""
    return "PASS" if ok else "FAIL"


def write_results(out: Path, rows: list[dict], numbers: dict, preamble: str, quick: bool, extra: str = "") -> None:
    """``numbers.csv``, and ``comparison.csv``/``comparison.md``: the preamble, the count of claims that pass (marked
    as a quick run), ``extra`` and the claims' table; printed."""
    write_csv(out / "numbers.csv", [numbers])
    text = preamble + "\n" + claims_summary(rows) + ("  (quick run)" if quick else "") + extra
    print(write_comparison(out, rows, text))
