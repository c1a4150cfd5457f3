"""Duvenaud 2014 Tables 6.6 and 6.7: additive GP classification against its special cases and a linear baseline,
percent test error and negative log-likelihood per test point (docs/sources/nonconjugate.md#duvenaud-classification).

The thesis (sec. 6.6): kernel hyperparameters by maximising the training marginal likelihood with L-BFGS (500
iterations, 5 random restarts), a constant mean fitted, approximate inference by EP; mean over 10 train/test splits;
bold = best and not significantly different (paired t-test). Ours, each through ``inference.run``:

- GP-1st, GP Squared-exp, GP Additive: ``gp/classification`` (probit, the link EP needs) with kernel ``Add1``
  (sigma_1^2 sum_d SE_d), ``SE`` (SE-ARD) and ``Add<R>`` (orders 1..R, R = min(D, 10)); ``ep`` with
  ``hyperparameters="ml2"`` (log Z_EP and its eq. 3.80 gradient; parallel site updates damped by 0.5, whose fixed
  point is the sequential schedule's; L-BFGS from one start: the prior medians of
  ``gp/additive`` for the additive kernels, lengthscales 1 and variance 1 for SE); no constant mean (the model has
  none: a difference from the thesis);
- Logistic regression: ``gp/classification`` with the logit link and kernel ``Lin`` under ``laplace`` with
  ``hyperparameters="ml2"``, i.e. Bayesian logistic regression with its prior scale by type-II ML (the thesis's
  baseline is plain logistic regression; ours is this Bayesian cousin);
- HKL: not reimplemented.

Data (inputs standardised on the training part): ``pima`` is MASS Pima.tr/Pima.te (532 complete cases, 7 inputs;
the thesis: 768 x 8 with missing values): split 0 is MASS's own (200 train / 332 test), splits 1, 2, ... seeded
re-partitions of the 532 cases into the same 200 / 332; ``breast`` is MASS ``biopsy`` (the original Wisconsin
breast-cancer data, 9 cytology scores, 683 complete cases; the thesis: 449 x 9, a subset of rows we cannot identify;
scikit-learn's ``load_breast_cancer`` is a different data set, WDBC, 569 x 30), seeded 90/10 random splits. Split k
is the same whatever the number of splits run. sonar, ionosphere, liver and heart are not packaged offline: their
published columns are shown, ours empty. Ours: mean +- standard error over the splits run (sd / sqrt(k)); bold is
not recomputed.

Full: ``FULL['splits']`` splits per set (the thesis's 10). Each (set, split, method) is a unit kept under
``OUT/units`` (``inference.files.resumable``): a run that stops resumes where it stopped, and ``--splits K`` runs the
first K only. Quick: pima with a seeded 80-point training subset of MASS's split, SE and GP-1st only.
"""

import hashlib
from pathlib import Path

import numpy as np

import inference
import zoo
from inference.files.atomic import atomic_write_text
from inference.files.resumable import cached
from inference.files.tables import markdown_table, read_published, write_csv
from zoo import additive
from zoo.data import classification as cdata
from zoo.registry import Dataset

DESCRIPTION = "Duvenaud 2014 Tables 6.6, 6.7: additive GP classification (EP, ML-II) vs GP-1st, SE-ARD, logistic"
DATASETS = ("breast", "pima", "sonar", "ionosphere", "liver", "heart")
AVAILABLE = {"breast": "biopsy", "pima": "pima"}  # thesis column -> zoo.data.classification set
METHODS = ("Logistic Regression", "GP-1st", "GP Squared-exp", "GP Additive")
QUICK = {"pima_train": 80, "splits": {"pima": 1, "breast": 0}, "methods": ("GP-1st", "GP Squared-exp")}
FULL = {"pima_train": None, "splits": {"pima": 10, "breast": 10}, "methods": METHODS}
PIMA_TRAIN = 200  # MASS's Pima.tr: the re-partitions keep its 200 / 332
# Parallel damped sweeps: the same fixed point as Algorithm 3.5's sequential ones (tests/test_nonconjugate.py checks
# them equal to 1e-8), one Cholesky per sweep instead of N rank-one updates of Sigma
# (docs/performance.md#nonconjugate-speed)
EP_OPTIONS = {"updates": "parallel", "damping": 0.5, "max_sweeps": 300}


def splits(name: str, settings: dict, seed: int = 0):
    """[(X_train, y_train, X_test, y_test), ...] of one thesis column, ``settings["splits"][name]`` of them, inputs
    standardised on the training part. Split k does not depend on how many are asked for."""
    count = settings["splits"][name]
    if name == "pima":
        X_all, y_all = cdata.pima("all")
        pairs = [(*cdata.pima("train"), *cdata.pima("test"))][:count]
        if settings["pima_train"]:
            X, y, X_te, y_te = pairs[0]
            keep = np.sort(np.random.default_rng(seed).permutation(len(y))[: settings["pima_train"]])
            pairs = [(X[keep], y[keep], X_te, y_te)]
        rng = np.random.default_rng(seed)
        for _ in range(1, count):
            order = rng.permutation(len(y_all))
            train, test = order[:PIMA_TRAIN], order[PIMA_TRAIN:]
            pairs.append((X_all[train], y_all[train], X_all[test], y_all[test]))
    else:
        X_all, y_all = cdata.load(AVAILABLE[name])
        rng = np.random.default_rng(seed)
        pairs = []
        for _ in range(count):
            order = rng.permutation(len(y_all))
            test, train = order[: len(y_all) // 10], order[len(y_all) // 10 :]
            pairs.append((X_all[train], y_all[train], X_all[test], y_all[test]))
    out = []
    for X, y, X_te, y_te in pairs:
        shift, scale = X.mean(0), X.std(0)
        out.append(((X - shift) / scale, y, (X_te - shift) / scale, y_te))
    return out


def model_and_engine(method: str, D: int):
    """(spec, engine, starting params) of one thesis row."""
    if method == "Logistic Regression":
        return zoo.get("gp/classification", kernel="Lin", link="logit"), "laplace", None
    if method == "GP Squared-exp":
        return zoo.get("gp/classification", kernel="SE"), "ep", None
    order = 1 if method == "GP-1st" else min(D, 10)
    start = additive.initial_values(D, order)
    return (
        zoo.get("gp/classification", kernel=f"Add{order}"),
        "ep",
        {"lengthscale": start["lengthscale"], "variance": start["variance"]},
    )


def scores(p1, y) -> tuple[float, float]:
    """(percent error of p > 1/2, mean negative log predictive probability)."""
    p1 = np.clip(np.asarray(p1, float), 1e-12, 1 - 1e-12)
    return 100 * float(np.mean((p1 > 0.5) != (y > 0.5))), float(-np.mean(y * np.log(p1) + (1 - y) * np.log1p(-p1)))


def fit_and_score(method: str, X, y, X_te, y_te) -> dict:
    spec, engine, start = model_and_engine(method, X.shape[1])
    options = {"params": start} if start is not None else {}
    if engine == "ep":
        options.update(EP_OPTIONS)
    result = inference.run(
        spec,
        Dataset(observed={"X": X, "y": y}, test={"X": X_te}),
        engine=engine,
        hyperparameters="ml2",
        num_chains=1,
        num_samples=2,
        **options,
    )
    estimates = result.point_estimates.isel(chain=0)
    error, nll = scores(estimates["y_test_mean"].values, y_te)
    return {
        "error_pct": error,
        "nll": nll,
        "log_evidence": float(result.posterior.attrs["log_evidence"]),
        "ml2_iterations": int(estimates["ml2_iterations"]),
        "run_s": float(result.posterior.attrs["run_s"]) + float(result.posterior.attrs["compile_s"]),
    }


def main(quick: bool, out: Path, datasets=tuple(AVAILABLE), max_splits: int | None = None) -> None:
    """Every (set, split, method) unit, each kept under ``out/units`` once finished (a rerun resumes), then the
    tables. ``max_splits``: run only the first that many splits of each set."""
    out = Path(out)
    settings = QUICK if quick else FULL
    rows = []
    for name in datasets:
        for split, (X, y, X_te, y_te) in enumerate(splits(name, settings)[:max_splits]):
            digest = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in (X, y, X_te, y_te)))
            for method in settings["methods"]:
                key = (name, split, method, digest.hexdigest(), EP_OPTIONS)
                label = f"{name}-{split}-{method.replace(' ', '_')}"
                data = (method, X, y, X_te, y_te)
                result, _ = cached(out / "units", label, key, lambda data=data: fit_and_score(*data))
                row = {"dataset": name, "split": split, "method": method, "train": len(y), "test": len(y_te)}
                rows.append(row | result)
                print(rows[-1], flush=True)
    write_csv(out / "splits.csv", rows)
    atomic_write_text(out / "comparison.md", report(rows, settings, quick))


def summary(rows) -> dict:
    """(dataset, method) -> (mean error %, mean NLL, splits, se of the error, se of the NLL); se = sd / sqrt(k) over
    the k splits (nan for one split)."""
    table = {}
    for key in {(r["dataset"], r["method"]) for r in rows}:
        mine = [r for r in rows if (r["dataset"], r["method"]) == key]
        error, nll = (np.array([float(r[name]) for r in mine]) for name in ("error_pct", "nll"))
        table[key] = (float(error.mean()), float(nll.mean()), len(mine), _se(error), _se(nll))
    return table


def _se(values: np.ndarray) -> float:
    """The standard error of the mean over splits, sd / sqrt(k); nan for one split."""
    return float(np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else float("nan")


def _shown(mean: float, se: float, digits: int) -> str:
    return f"{mean:.{digits}f}" if np.isnan(se) else f"{mean:.{digits}f} ± {se:.{digits}f}"


def report(rows, settings, quick: bool) -> str:
    published = {(p["table"], p["row"], p["column"]): p for p in read_published(__file__)}
    ours = summary(rows)
    lines = []
    for table, index, unit in (("6.6", 0, "percent error"), ("6.7", 1, "NLL")):
        for method in (*METHODS, "HKL"):
            if table == "6.7" and method == "HKL":
                continue
            line = {"table": f"{table} ({unit})", "method": method}
            for name in DATASETS:
                pub = published.get((table, method, name))
                shown = (f"**{pub['value']}**" if pub["bold"] == "1" else pub["value"]) if pub else ""
                if method == "HKL":
                    mine = "not reimplemented"
                elif name not in AVAILABLE:
                    mine = "not packaged"
                elif (name, method) in ours:
                    found = ours[(name, method)]
                    mine = _shown(found[index], found[3 + index], 2 if index == 0 else 3)
                else:
                    mine = "not run"
                line[name] = f"{shown} / {mine}"
            lines.append(line)
    counts = {name: max((v[2] for (d, _), v in ours.items() if d == name), default=0) for name in AVAILABLE}
    subset = f"; training subset of {settings['pima_train']}" if settings["pima_train"] else ""
    pima_splits = "MASS's own 200/332 split" + (
        ", then seeded re-partitions of its 532 cases" if counts["pima"] > 1 else ""
    )
    return f"""# Duvenaud 2014 Tables 6.6-6.7: additive GP classification ({"quick" if quick else "full"} run)

Each cell: published / ours. Ours: EP with type-II ML (`hyperparameters="ml2"`) for the GP rows, Laplace with the
logit link and a linear kernel for the logistic-regression row, no constant mean, one L-BFGS start
(docs/sources/nonconjugate.md#duvenaud-classification). Ours: mean ± standard error over the splits. Splits run:
pima {counts["pima"]} ({pima_splits}{subset}),
breast {counts["breast"]} (MASS biopsy, seeded 90/10); the thesis: 10 splits of different versions of both sets
(see the docs). Methods run: {", ".join(settings["methods"])}. Bold (published only) is the thesis's paired-test
bolding; ours is not bolded.

{markdown_table(lines)}
"""


def aggregate(out: Path, paths, quick: bool = False) -> None:
    """The tables from the ``splits.csv`` of runs made separately (one data set each)."""
    import csv

    rows = []
    for path in paths:
        with open(path) as handle:
            for row in csv.DictReader(handle):
                for key in ("error_pct", "nll", "log_evidence", "run_s"):
                    row[key] = float(row[key])
                rows.append(row)
    write_csv(out / "splits.csv", rows)
    atomic_write_text(out / "comparison.md", report(rows, QUICK if quick else FULL, quick))


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=DESCRIPTION)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--datasets", nargs="+", choices=list(AVAILABLE), default=list(AVAILABLE))
    parser.add_argument("--splits", type=int, help="run only the first K splits of each set (finished ones are kept)")
    parser.add_argument("--aggregate", type=Path, nargs="+", help="splits.csv files of separate runs: tables only")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.aggregate:
        aggregate(args.out, args.aggregate, args.quick)
    else:
        main(args.quick, args.out, tuple(args.datasets), args.splits)
