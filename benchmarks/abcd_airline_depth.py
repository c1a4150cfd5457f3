"""How deep our structure search gets on the airline series, and how fast: every progress line of
``inference.applications.structure_search.search`` stamped with the seconds since the search began, then one row per
completed
depth (candidates, cumulative wall time, fits per second, compile share, best kernel and BIC).

Usage::

    python -m benchmarks.abcd_airline_depth --depth 10 [--restarts 3] [--seed 0] [--workers 2] > airline_depth.log

Same series and settings as ``benchmarks.abcd_vs_gpy_abcd`` (the training 90 % of ``01-airline``, standardised;
beam 1, BIC, no early stop: ``patience = depth``). ``--workers 2`` fits each depth's candidates as Dask tasks on two
local processes (the search's ``workers``), which gives the same search. A run stopped from outside (a time limit)
still leaves its stamped lines, from which ``summarise`` rebuilds the rows of the depths it completed.
"""

import argparse
import re
import sys
import time

from benchmarks.abcd_vs_gpy_abcd import standardised_series
from inference.applications.structure_search import search

LINE = re.compile(
    r"^\s*(?P<t>[\d.]+) depth (?P<depth>\d+) \[(?P<i>\d+)/(?P<n>\d+)\] .*?, (?P<wall>[\d.]+) s "
    r"\(compile (?P<compile>[\d.]+) s\); best (?P<best>.*) \((?P<score>-?[\d.]+|-?inf)\)$"
)


def summarise(lines: list[str]) -> list[dict]:
    """One row per depth whose every candidate was fitted, from the stamped progress lines."""
    rows, fits, compile_s = [], 0, 0.0
    for line in lines:
        m = LINE.match(line)
        if not m:
            continue
        fits += 1
        compile_s += float(m["compile"])
        if m["i"] == m["n"]:
            t = float(m["t"])
            rows.append(
                {
                    "depth": int(m["depth"]),
                    "candidates": int(m["n"]),
                    "fits": fits,
                    "wall_s": t,
                    "fits_per_s": fits / t,
                    "compile_s": compile_s,
                    "best": m["best"],
                    "bic": float(m["score"]),
                }
            )
    return rows


def markdown(rows: list[dict]) -> str:
    lines = [
        "| depth | candidates | fits so far | wall so far (s) | fits / s | compile so far (s) | best kernel | BIC |",
        "|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['depth']} | {r['candidates']} | {r['fits']} | {r['wall_s']:.1f} | {r['fits_per_s']:.3f} "
            f"| {r['compile_s']:.1f} | {r['best']} | {r['bic']:.2f} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--restarts", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1, help="local worker processes (default 1: in this one)")
    parser.add_argument("--summarise", help="a log of an earlier run: print its table and exit")
    args = parser.parse_args(argv)
    if args.summarise:
        with open(args.summarise) as f:
            print(markdown(summarise(f.read().splitlines())))
        return 0
    x, y = standardised_series()
    lines = []
    t0 = time.perf_counter()

    def stamp(line: str) -> None:
        lines.append(f"{time.perf_counter() - t0:9.1f} {line}")
        print(lines[-1], flush=True)

    search(
        x,
        y,
        depth=args.depth,
        restarts=args.restarts,
        patience=args.depth,
        seed=args.seed,
        progress=stamp,
        workers=args.workers,
    )
    print(markdown(summarise(lines)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
