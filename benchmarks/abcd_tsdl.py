"""What the 13-series extrapolation benchmark costs: every method's structure search on each TSDL series
(``inference.applications.structure_search.extrapolation``, as the figure runs it: ABCD, trend-cyclical-irregular and
changepoint searches; SE and linear regression from ABCD's depth-1 fits), wall time, candidate fits and fits per
second per series and in total.

Usage::

    python -m benchmarks.abcd_tsdl [--series NAME ...] [--depth 2] [--score bic|laplace|tsmc] [--cache DIR]
        [--out FILE]

Settings: the figure's full settings (3 ML-II restarts per candidate, at most 250 training points per series, BIC,
beam 1) at ``--depth``; ``--score`` ranks ABCD's candidates (docs/sources/duvenaud.md#scores: BIC, the thesis's,
or a Laplace or tempered-SMC log evidence; TCI and CP keep BIC). With ``--cache`` each series' row is kept as JSON
(the figure's cache format), so a run split over several sessions, or the figure's own run, is summarised without
fitting again; the wall times are those recorded when the series was fitted. Pin it (``taskset -c 1 ...``): the
times are one core's.
"""

import argparse
import json
import time
from pathlib import Path

from inference.applications.structure_search import extrapolation
from inference.applications.structure_search.scores import SCORES
from inference.files.atomic import atomic_write_text

METHODS = tuple(extrapolation.SEARCHES)


def run(names: list[str], depth: int, cache: Path | None, score: str = "bic", say=print) -> list[dict]:
    """One row per series: the figure's row (kernels, RMSEs, fits and wall time per method)."""
    config = {**extrapolation.FULL, "depth": depth, "score": score}
    rows = []
    for name in names:
        start = time.perf_counter()
        row = extrapolation.run_series(name, config, cache=cache)
        rows.append(row)
        total = sum(row[f"wall_{m}"] for m in METHODS)
        say(f"{name}: {total:.0f} s fitting ({time.perf_counter() - start:.0f} s now), ABCD {row['kernel_ABCD']}")
    return rows


def markdown(rows: list[dict], depth: int) -> str:
    """Per series and in total: points fitted, fits and wall time per method, fits per second."""
    head = "| series | n fitted | " + " | ".join(f"{m} fits, wall (s)" for m in METHODS) + " | all: fits / s |"
    lines = [head, "|---|---:|" + "---:|" * len(METHODS) + "---:|"]
    fits = {m: 0 for m in METHODS}
    wall = {m: 0.0 for m in METHODS}
    for row in rows:
        cells = []
        for m in METHODS:
            fits[m] += row[f"fits_{m}"]
            wall[m] += row[f"wall_{m}"]
            cells.append(f"{row[f'fits_{m}']}, {row[f'wall_{m}']:.1f}")
        rate = sum(row[f"fits_{m}"] for m in METHODS) / sum(row[f"wall_{m}"] for m in METHODS)
        lines.append(f"| {row['series']} | {row['n_fit']} | " + " | ".join(cells) + f" | {rate:.2f} |")
    total = " | ".join(f"{fits[m]}, {wall[m]:.1f}" for m in METHODS)
    rate = sum(fits.values()) / sum(wall.values())
    lines.append(f"| **all {len(rows)}** | | {total} | {rate:.2f} |")
    settings = extrapolation.FULL
    title = (
        f"ABCD extrapolation benchmark, depth {depth}, {settings['restarts']} restarts per candidate, at most "
        f"{settings['subset']} points per series; total {sum(wall.values()):.0f} s of fitting, "
        f"{sum(fits.values())} candidate fits"
    )
    return title + "\n\n" + "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", nargs="*", help="series names (default: all 13)")
    parser.add_argument("--depth", type=int, default=extrapolation.FULL["depth"])
    parser.add_argument("--score", choices=SCORES, default="bic", help="ranks ABCD's candidates")
    parser.add_argument("--cache", type=Path, help="keep / reuse each series' row as JSON here")
    parser.add_argument("--out", type=Path, help="write the Markdown table here")
    args = parser.parse_args(argv)
    names = args.series or extrapolation.series_names()
    unknown = sorted(set(names) - set(extrapolation.series_names()))
    if unknown or args.depth < 1:
        parser.error(f"unknown series {unknown}" if unknown else "depth must be >= 1")
    rows = run(names, args.depth, args.cache, args.score)
    table = markdown(rows, args.depth)
    if args.out:
        atomic_write_text(args.out, table)
        atomic_write_text(args.out.with_suffix(".json"), json.dumps(rows))
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
