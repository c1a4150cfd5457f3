"""Greedy search (BIC or Laplace) against SMC over structures on real series: held-out forecast log density against
time (docs/performance.md#structure-real-series).

    python -m benchmarks.structure_smc --series 01-airline --methods greedy,greedy-laplace,smc [--depth 2]
        [--restarts 3] [--particles 64] [--steps 10] [--seed 0] [--results DIR]

Series: ``mauna-loa``, the monthly Mauna Loa CO2 means (``zoo.data.co2.chronological_split``: its first 90 % of
months train, the last 52 months, 1997.67-2001.92, are held out), trained on the last ``MAUNA_LOA_TRAIN`` = 200
training months (1981.0-1997.58), as the recorded searches use the months from 1980 on
(``paper_figures/duvenaud_abcd_mauna_loa.py``) and so that the search's shared program applies (``SHARED_MAX_N``);
any series of ``zoo.data.tsdl`` (e.g. ``01-airline``: 129 months train, 15 held out), its 90 / 10 split.

Methods: the recovery benchmark's (``benchmarks.structure_recovery.run_method``; gpy-abcd is left to
``benchmarks/abcd_vs_gpy_abcd.py``): ``greedy`` (BIC, beam 1, ``--depth`` levels, ``--restarts`` per candidate, base SE,
RQ, Lin, Per, operators C.1-C.11, no early stop), ``greedy-laplace`` and ``greedy-tsmc`` (the same, ranked by Laplace's
or the tempered-SMC log evidence), ``smc`` (SMC over structures, ``--particles``, ``--steps``, its other options the
defaults: operators + and x, trees of depth <= 2). Per method: the chosen structure (SMC: the most probable and the mass
of the five most probable), its training score (greedy: log p(y_s | theta-hat), BIC and, ranked by an evidence, that log
evidence; SMC: the log evidence log p(y_s); all on the standardised series), the held-out log density log p(y_test |
y_train) of the held-out points jointly, in data units (SMC: the particles' mixture), the fraction of held-out points
inside the central 95 % band of the pointwise predictive (SMC: of the mixture), wall time (the search) and process CPU
time (the search and its forecast). Each (series, method, settings) row is kept as JSON in ``--results`` and reused by a
rerun.
"""

import argparse
import json
import sys
from pathlib import Path

from benchmarks.structure_recovery import GREEDY_SCORES, run_method
from inference.files.atomic import atomic_write_text
from zoo.data import co2, tsdl
from zoo.errors import DataError, OptionError

MAUNA_LOA = "mauna-loa"
MAUNA_LOA_TRAIN = 200
METHODS = (*GREEDY_SCORES, "smc")


def load_series(name: str) -> dict:
    """x, y (n,) training and x_test, y_test (m,) held out, in data units (module docstring)."""
    if name == MAUNA_LOA:
        data = co2.chronological_split()
        x, y = data.x_train[-MAUNA_LOA_TRAIN:], data.y_train[-MAUNA_LOA_TRAIN:]
    else:
        data = tsdl.load(name)
        x, y = data.x_train, data.y_train
    return {"x": x, "y": y, "x_test": data.x_test, "y_test": data.y_test}


def check_args(args) -> None:
    """An ``OptionError`` (or the loader's ``DataError``) for settings no run can use, before anything compiles."""
    unknown = [m for m in args.methods if m not in METHODS]
    if unknown:
        raise OptionError(f"unknown methods {unknown}; methods: {list(METHODS)}.")
    for name in args.series:
        if name != MAUNA_LOA and name not in tsdl.names():
            raise DataError(f"unknown series {name!r}; series: {MAUNA_LOA!r} or one of {tsdl.names()}.")
    for label, value, low in (
        ("depth", args.depth, 1),
        ("restarts", args.restarts, 1),
        ("particles", args.particles, 2),
        ("steps", args.steps, 1),
    ):
        if value < low:
            raise OptionError(f"{label} must be an integer >= {low}, got {value}.")


def _row_path(results: Path, series: str, method: str, args) -> Path:
    settings = f"seed{args.seed}_" + (
        f"p{args.particles}_steps{args.steps}" if method == "smc" else f"depth{args.depth}_restarts{args.restarts}"
    )
    return results / f"{series}_{method}_{settings}.json"


def run_series_method(series: str, method: str, args) -> dict:
    """One (series, method): its JSON row, computed through ``run_method`` or read back."""
    path = _row_path(Path(args.results), series, method, args)
    if path.is_file():
        return json.loads(path.read_text())
    data = load_series(series)
    row = run_method(method, data, args.depth, args.restarts, args.seed, args.particles, args.steps)
    row |= {"series": series, "method": method, "n_train": len(data["y"]), "n_test": len(data["y_test"])}
    row["settings"] = (
        f"{args.particles} particles, {args.steps} steps"
        if method == "smc"
        else f"depth {args.depth}, {args.restarts} restarts"
    )
    atomic_write_text(path, json.dumps(row))
    return row


def _structure(row: dict) -> str:
    if row["method"] != "smc":
        return row["kernel"]
    return ", ".join(f"{k} {p:.2f}" for k, p in row["posterior_top"].items())


def _train_score(row: dict) -> str:
    if row["method"] == "smc":
        return f"log Z {row['log_evidence_std']:.2f}"
    extra = "".join(
        f", {name} {row[key]:.2f}" for key, name in (("laplace", "Laplace"), ("tsmc", "tempered SMC")) if key in row
    )
    return f"log p {row['log_likelihood']:.2f}, BIC {row['bic']:.2f}{extra}"


def markdown(rows: list[dict]) -> str:
    """One line per (series, method): structure, training score, held-out log density, inside 95 %, wall, CPU."""
    lines = [
        "| series | method | settings | structure (SMC: posterior mass) | training score (standardised) "
        "| held-out log density | inside 95 % | wall (s) | CPU (s) |",
        "|---|---|---|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['series']} ({r['n_train']} + {r['n_test']}) | {r['method']} | {r['settings']} | {_structure(r)} "
            f"| {_train_score(r)} | {r['log_density']:.2f} | {r['inside_95']:.2f} | {r['wall_s']:.1f} "
            f"| {r['cpu_s']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--series", type=lambda s: s.split(","), default=["01-airline"])
    p.add_argument("--methods", type=lambda s: s.split(","), default=["greedy", "smc"])
    p.add_argument("--depth", type=int, default=2, help="greedy depth")
    p.add_argument("--restarts", type=int, default=3, help="greedy ML-II restarts per candidate")
    p.add_argument("--particles", type=int, default=64, help="SMC particles")
    p.add_argument("--steps", type=int, default=10, help="SMC annealing steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--results", default="bench_results/structure_smc")
    args = p.parse_args(argv)
    try:
        check_args(args)
    except (OptionError, DataError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    Path(args.results).mkdir(parents=True, exist_ok=True)
    rows = []
    for series in args.series:
        for method in args.methods:
            row = run_series_method(series, method, args)
            print(json.dumps(row), file=sys.stderr, flush=True)
            rows.append(row)
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
