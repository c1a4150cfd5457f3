"""Duvenaud 2014 Tables 6.1, 6.4 and 6.5: the additive GP's share of variance per interaction order, and the
regression MSE and negative log-likelihood of linear regression, GP-1st, GP SE-ARD and the additive GP over random
train/test splits, with the thesis's paired t-test bolding; plus the first-order components of the concrete fit.

Protocol (docs/sources/duvenaud.md#table-6-4): inputs and target standardised over the whole set; seeded random
90/10 splits; every model fitted by ML-II through ``inference.run(..., engine="ml2")`` (L-BFGS, restarts as chains,
the restart with the highest evidence kept); MSE of the predictive mean and mean negative log predictive density
of y per test point, standardised units. Models: linear regression = ``gp/regression`` with kernel ``Lin``;
GP-1st = ``gp/additive`` with ``max_order=1``; GP SE-ARD = ``gp/regression`` with kernel ``SE``; GP additive =
``gp/additive`` (orders up to min(D, 10)). Bold: the lowest mean and every method whose per-split differences from
it are not significant (two-sided paired t-test, 5 %); with one split only the lowest is bold.
Data (docs/sources/duvenaud.md#bach-data): bach recreated, concrete a seeded 500-row subsample, housing (Boston)
whole; pumadyn-8nh and servo are not packaged offline (their published columns are shown, ours empty); HKL not
reimplemented. Structure search (docs/sources/duvenaud.md#table-6-4): the ch. 3 search with SE and RQ on every input,
operators C.1-C.3, BIC, its best kernel predicting the test split; run in its own chunks (``--methods
structure_search``) to a depth the command sets.
Table 6.1 (docs/sources/duvenaud.md#table-6-1): the share sigma_n^2 C(D, n) / sum, averaged over the splits' fits.

Full: 10 splits, 5 restarts, up to 500 L-BFGS steps, a search to depth 10 (the thesis's settings). Quick: 1 split of
a seeded subsample of 60 rows per set, 1 restart, 40 steps, a search of depth 1 (the base kernels).
"""

import csv
from pathlib import Path

import jax.numpy as jnp
import matplotlib
import numpy as np
from scipy import stats

import inference
import zoo
from inference.applications.structure_search import search
from inference.files.tables import markdown_table, read_published, write_comparison, write_csv
from inference.results.component_plots import plot_decomposition
from zoo import additive, gp, regression
from zoo import decomposition as dec
from zoo.data import additive_benchmarks as data
from zoo.kernels import SE, Additive
from zoo.kernels.additive import order_variance_shares

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DESCRIPTION = "Duvenaud 2014 Tables 6.1, 6.4, 6.5: additive GP order variances, regression MSE and NLL over splits"
DATASETS = ("bach", "concrete", "housing")
UNAVAILABLE = ("pumadyn-8nh", "servo")
METHODS = {  # our name -> (thesis row, model name, model options)
    "linear": ("Linear Regression", "gp/regression", {"kernel": "Lin"}),
    "gp_1st": ("GP-1st", "gp/additive", {"max_order": 1}),
    "se_ard": ("GP Squared-exp", "gp/regression", {"kernel": "SE"}),
    "additive": ("GP Additive", "gp/additive", {}),
}
LEAST_SQUARES = {  # the thesis's linear baseline as its companion code fits it; our name -> label
    "least_squares": "Linear Regression (least squares)",
    "least_squares_companion": "Linear Regression (least squares, companion code's NLL)",
}
SEARCH = {"structure_search": "Structure Search"}  # our name -> thesis row
SEARCH_BASE = ("SE", "RQ")  # on every input (docs/sources/duvenaud.md#table-6-4)
SEARCH_OPTIMIZER = "host-lbfgs"  # the search's own: one compiled value-and-gradient per group of structures
METHOD_GROUPS = (*METHODS, "least_squares", *SEARCH)  # what one chunk can run (least_squares: both of its rows)
THESIS_ONLY = ("HKL",)
QUICK = {"splits": 1, "restarts": 1, "steps": 40, "rows": 60, "optimizer": "lbfgs", "search_depth": 1}
FULL = {"splits": 10, "restarts": 5, "steps": 500, "rows": None, "optimizer": "lbfgs", "search_depth": 10}
OPTIMIZERS = ("lbfgs", "host-lbfgs")  # ml2's optax L-BFGS (restarts vmapped) or scipy's (restarts one by one)
ALPHA = 0.05


def prepared(name: str, rows: int | None, seed: int = 0):
    """Standardised (X, y) of one data set; a seeded subsample of ``rows`` when given."""
    X, y, _ = data.load(name)
    X, y = data.standardise(X, y)
    if rows is not None and rows < len(y):
        keep = np.sort(np.random.default_rng(seed).permutation(len(y))[:rows])
        X, y = X[keep], y[keep]
    return X, y


def fit(method: str, X, y, settings, seed: int):
    """ML-II fit of one method on (X, y): the InferenceData's best restart as (predict(X_new) -> (mean, var), fitted
    point estimates)."""
    _, model, options = METHODS[method]
    spec = zoo.get(model, **options)
    init = additive.initial_values(X.shape[1], options.get("max_order")) if model == "gp/additive" else {}
    result = inference.run(
        spec,
        {"X": X, "y": y},
        engine="ml2",
        seed=seed,
        num_chains=settings["restarts"],
        num_steps=settings["steps"],
        optimizer=settings["optimizer"],
        init=init,
    )
    logliks = np.asarray(result.point_estimates["log_likelihood"].values, float)
    estimates = result.point_estimates.isel(chain=int(np.nanargmax(logliks)))
    Xj, yj = jnp.asarray(X), jnp.asarray(y)
    if model == "gp/additive":
        kernel, mean, noise = additive.fitted(estimates)

        def predict(X_new):
            return additive.predict_y(kernel, mean, noise, Xj, yj, jnp.asarray(X_new))

        return predict, (kernel, mean, noise)
    kernel, noise = regression.kernel_and_noise(estimates, options["kernel"])

    def predict(X_new):
        post = gp.predict(kernel, Xj, yj, noise, jnp.asarray(X_new), full_cov=False)
        return post.mean, post.cov + noise

    return predict, (kernel, 0.0, noise)


def fit_search(X, y, settings, seed: int):
    """The ch. 3 structure search on (X, y) (standardised internally, ``inference.applications.structure_search``):
    (predict(X_new)
    -> (mean, var) by the best kernel conditioned on (X, y), the best structure's text)."""
    result = search(
        X,
        y,
        depth=settings["search_depth"],
        base=SEARCH_BASE,
        restarts=settings["restarts"],
        num_steps=settings["steps"],
        optimizer=SEARCH_OPTIMIZER,
        seed=seed,
    )
    units, best = result.standardisation, result.best
    Xs, ys = jnp.asarray(units.inputs(X)), jnp.asarray(units.targets(y))

    def predict(X_new):
        post = gp.predict(best.kernel, Xs, ys, best.noise, jnp.asarray(units.inputs(X_new)), full_cov=False)
        scale = units.y_scale
        return units.y_shift + scale * post.mean, scale**2 * (post.cov + best.noise)

    return predict, best.expression


def scores(mean, var, y) -> tuple[float, float]:
    """(MSE, mean negative log predictive density) of y (m,) under N(mean, var)."""
    mean, var = np.asarray(mean), np.asarray(var)
    mse = float(np.mean((mean - y) ** 2))
    nll = float(np.mean(0.5 * np.log(2 * np.pi * var) + 0.5 * (y - mean) ** 2 / var))
    return mse, nll


def least_squares(X_train, y_train, X_test) -> tuple[np.ndarray, float]:
    """The thesis's linear baseline as its companion code fits it (docs/sources/duvenaud.md#linear-nll): ordinary
    least squares without an intercept (inputs and target are standardised over the whole set) and the maximum-
    likelihood noise variance s^2 = mean training residual^2. Returns (predictions (m,), s^2)."""
    weights, *_ = np.linalg.lstsq(X_train, y_train, rcond=None)
    return X_test @ weights, float(np.mean((y_train - X_train @ weights) ** 2))


def companion_nll(mean, var, y) -> float:
    """The negative log-likelihood the thesis's linear-regression row reports: per test point
    (y - mean)^2 / (2 var) + log(2 pi var), i.e. the Gaussian's log normaliser counted twice (its companion code
    writes -log(2 pi s^2) for -log(2 pi s^2) / 2; docs/sources/duvenaud.md#linear-nll). Equals the correct
    ``scores`` NLL plus log(2 pi var) / 2 averaged over the test points."""
    mean, var = np.asarray(mean), np.broadcast_to(np.asarray(var, float), np.shape(mean))
    return float(np.mean(0.5 * (y - mean) ** 2 / var + np.log(2 * np.pi * var)))


def bold_set(per_split: dict[str, np.ndarray]) -> set[str]:
    """The lowest mean, and every method not significantly different from it under a paired t-test."""
    best = min(per_split, key=lambda m: per_split[m].mean())
    bold = {best}
    for method, values in per_split.items():
        if method == best or len(values) < 2:
            continue
        diff = values - per_split[best]
        if np.allclose(diff, 0.0) or stats.ttest_rel(values, per_split[best]).pvalue >= ALPHA:
            bold.add(method)
    return bold


def run_splits(name: str, splits, settings, out: Path, methods=METHOD_GROUPS):
    """Fit the given methods (``METHOD_GROUPS``) on the given splits of one data set; the rows of each split are
    merged into ``out/splits_<name>.csv`` as soon as it finishes (rows of other splits or methods already there are
    kept, so a long run is done in chunks). Split k is the same whatever chunk runs it (``random_splits`` draws them
    in order). Returns the first of these splits' additive fit with its training data (for the component plot), or
    None."""
    X, y = prepared(name, settings["rows"])
    pairs = data.random_splits(len(y), max(splits) + 1, seed=0)
    first = None
    for split in splits:
        train, test = pairs[split]
        rows = []
        if "structure_search" in methods:
            predict, expression = fit_search(X[train], y[train], settings, seed=split)
            mse, nll = scores(*predict(X[test]), y[test])
            rows.append(
                {"dataset": name, "split": split, "method": "structure_search", "mse": mse, "nll": nll}
                | {"search_depth": settings["search_depth"], "kernel": expression, "optimizer": SEARCH_OPTIMIZER}
            )
        for method in (m for m in METHODS if m in methods):
            predict, fitted = fit(method, X[train], y[train], settings, seed=split)
            mse, nll = scores(*predict(X[test]), y[test])
            rows.append({"dataset": name, "split": split, "method": method, "mse": mse, "nll": nll})
            if method == "additive":
                kernel = fitted[0]
                rows[-1]["inputs"] = X.shape[1]
                rows[-1].update({f"sigma2_order{n + 1}": float(v) for n, v in enumerate(np.asarray(kernel.variance))})
                if first is None:
                    first = (fitted, X[train], y[train])
        if "least_squares" in methods:
            mean, var = least_squares(X[train], y[train], X[test])
            mse, nll = scores(mean, np.full(len(test), var), y[test])
            companion = companion_nll(mean, var, y[test])
            rows.append({"dataset": name, "split": split, "method": "least_squares", "mse": mse, "nll": nll})
            rows.append(
                {"dataset": name, "split": split, "method": "least_squares_companion", "mse": mse, "nll": companion}
            )
        for row in rows:
            row.update(restarts=settings["restarts"], steps=settings["steps"])
            row.setdefault("optimizer", settings["optimizer"])
        path = out / f"splits_{name}.csv"
        done = {r["method"] for r in rows}
        kept = [r for r in read_rows(path) if r["split"] != split or r["method"] not in done]
        write_csv(path, sorted(kept + rows, key=lambda r: (r["split"], r["method"])))
    return first


def read_rows(path: Path) -> list[dict]:
    """The rows of a splits CSV (numbers as numbers); [] when it does not exist yet."""
    if not path.exists():
        return []
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        for key, value in row.items():
            if key not in ("dataset", "method", "optimizer", "kernel") and value != "":
                row[key] = int(value) if key in ("split", "restarts", "steps", "search_depth") else float(value)
    return rows


def first_order_plot(out: Path, name: str, fitted, X, y) -> list[dict]:
    """The first-order components sigma_1^2 SE_d of an additive fit (eq. 2.17 through ``zoo.decomposition``), the
    orders >= 2 as one more component; one panel per input, mean +- 2 sd over the input's range, partial residuals.
    Returns each component's range of posterior mean."""
    kernel, mean, noise = fitted
    D = X.shape[1]
    variance = np.asarray(kernel.variance)
    firsts = [SE(variance=variance[0], lengthscale=kernel.lengthscale[d]).on(d) for d in range(D)]
    parts = firsts + (
        [Additive(kernel.lengthscale, jnp.asarray(variance).at[0].set(0.0), kernel.max_order)]
        if kernel.max_order > 1
        else []
    )
    split = sum(parts[1:], parts[0])
    factor = dec.factorise(split, jnp.asarray(X), jnp.asarray(y - mean), noise)
    residuals = np.asarray(dec.partial_residuals(factor, dec.components(split), jnp.asarray(y - mean)))
    grids, means, sds, rows = [], [], [], []
    _, _, columns = data.load(name)
    for d in range(D):
        A = np.zeros((60, D))
        A[:, d] = np.linspace(X[:, d].min(), X[:, d].max(), 60)
        part = dec.components(split)[d]
        m = np.asarray(dec.component_mean(factor, part, jnp.asarray(A)))
        v = np.maximum(np.asarray(dec.component_variance(factor, part, jnp.asarray(A))), 0.0)
        grids.append(A[:, d])
        means.append(m)
        sds.append(np.sqrt(v))
        rows.append({"dataset": name, "input": columns[d], "effect_range_sd": float(m.max() - m.min())})
    figure = plot_decomposition(
        grids, means, sds, columns, data_x=[X[:, d] for d in range(D)], data_y=list(residuals[:D]), ncols=4
    )
    figure.suptitle(f"{name}: first-order components of the additive GP (standardised units)", fontsize=11)
    figure.tight_layout()
    figure.savefig(out / f"first_order_{name}.png", dpi=100)
    plt.close(figure)
    return rows


def main(quick: bool, out: Path) -> None:
    """Every split of every data set in this process, then the tables (the full run is done in chunks instead:
    the module's command line, one chunk of splits per command, then ``--aggregate``)."""
    out = Path(out)
    settings = QUICK if quick else FULL
    for name in DATASETS:
        (out / f"splits_{name}.csv").unlink(missing_ok=True)  # this run's splits only
        first = run_splits(name, range(settings["splits"]), settings, out)
        if name == "concrete":
            write_csv(out / "effects.csv", first_order_plot(out, name, *first))
    aggregate(out, quick)


def aggregate(out: Path, quick: bool = False) -> None:
    """Tables 6.1, 6.4, 6.5 and the comparison from the per-split rows in ``out/splits_<name>.csv``."""
    rows = [r for name in DATASETS for r in read_rows(out / f"splits_{name}.csv")]
    write_csv(out / "splits.csv", rows)
    summary = summarise(rows)
    write_csv(out / "tables.csv", summary)
    shares = {}
    for name in DATASETS:
        fits = [r for r in rows if r["dataset"] == name and r["method"] == "additive"]
        if fits:
            orders = sorted((k for k in fits[0] if k.startswith("sigma2_order")), key=lambda k: int(k[12:]))
            D = int(fits[0]["inputs"])
            shares[name] = np.mean([order_variance_shares([r[k] for k in orders], D) for r in fits], axis=0)
    order_rows = [{"dataset": n, **{str(k + 1): 100 * float(s) for k, s in enumerate(v)}} for n, v in shares.items()]
    write_csv(out / "table6_1.csv", order_rows)
    write_comparison(out, comparison(summary, shares), preamble(rows, summary, shares, quick))


def summarise(rows: list[dict]) -> list[dict]:
    """Mean and se of MSE and NLL per (data set, method) with the bold flags (bolding among ``METHODS`` and the
    structure search, the thesis's rows, where the search ran on the same splits as they did; the least-squares
    rows are shown beside, never bold)."""
    out = []
    for name in DATASETS:
        for metric in ("mse", "nll"):
            mine = sorted((r for r in rows if r["dataset"] == name), key=lambda r: r["split"])
            methods = (*METHODS, *SEARCH, *LEAST_SQUARES)
            per_split = {m: np.array([r[metric] for r in mine if r["method"] == m]) for m in methods}
            per_split = {m: v for m, v in per_split.items() if v.size}
            if not per_split:
                continue
            splits = {m: [r["split"] for r in mine if r["method"] == m] for m in per_split}
            ruled = [m for m in per_split if m in METHODS]
            if ruled and "structure_search" in per_split and splits["structure_search"] == splits[ruled[0]]:
                ruled.append("structure_search")  # paired over the same splits
            bold = bold_set({m: per_split[m] for m in ruled}) if ruled else set()
            for method, values in per_split.items():
                out.append(
                    {
                        "dataset": name,
                        "metric": metric,
                        "method": method,
                        "mean": float(values.mean()),
                        "se": float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else float("nan"),
                        "splits": len(values),
                        "bold": method in bold,
                    }
                )
    return out


def _cell(value: float, bold: bool) -> str:
    return f"**{value:.3f}**" if bold else f"{value:.3f}"


def _published(pub) -> str:
    return (f"**{pub['value']}**" if pub["bold"] == "1" else pub["value"]) if pub else ""


def _missing(name: str) -> str:
    return "(not packaged offline)" if name in UNAVAILABLE else "(not run)"


def comparison(summary: list[dict], shares: dict) -> list[dict]:
    """One row per (table, method, data set): published beside ours."""
    published = {(p["table"], p["row"], p["column"]): p for p in read_published(__file__)}
    rows = []
    for table, metric in (("6.4", "mse"), ("6.5", "nll")):
        ours_rows = [(m, thesis_row, thesis_row) for m, (thesis_row, _, _) in METHODS.items()]
        ours_rows += [(m, thesis_row, thesis_row) for m, thesis_row in SEARCH.items()]
        ours_rows += [(m, "Linear Regression", label) for m, label in LEAST_SQUARES.items()]
        for method, thesis_row, label in ours_rows:
            if table == "6.4" and method == "least_squares_companion":
                continue  # the same predictions as least_squares
            for name in (*DATASETS, *UNAVAILABLE):
                pub = published.get((table, thesis_row, name))
                ours = next(
                    (s for s in summary if (s["dataset"], s["metric"], s["method"]) == (name, metric, method)), None
                )
                rows.append(
                    {
                        "table": table,
                        "method": label,
                        "dataset": name,
                        "published": _published(pub),
                        "ours": _cell(ours["mean"], ours["bold"]) if ours else _missing(name),
                        "ours_se": f"{ours['se']:.3f}" if ours and np.isfinite(ours["se"]) else "",
                    }
                )
        for thesis_row in THESIS_ONLY:
            if table == "6.5" and thesis_row == "HKL":
                continue
            for name in (*DATASETS, *UNAVAILABLE):
                rows.append(
                    {
                        "table": table,
                        "method": thesis_row,
                        "dataset": name,
                        "published": _published(published.get((table, thesis_row, name))),
                        "ours": "not reimplemented",
                        "ours_se": "",
                    }
                )
    for name, share in shares.items():
        for n, value in enumerate(share, start=1):
            pub = published.get(("6.1", name, str(n)))
            rows.append(
                {
                    "table": "6.1",
                    "method": f"order {n} share (%)",
                    "dataset": name,
                    "published": pub["value"] if pub else "(not in Table 6.1)",
                    "ours": f"{100 * value:.1f}",
                    "ours_se": "",
                }
            )
    for name in dict.fromkeys(p["row"] for p in published.values() if p["table"] == "6.1"):
        if name not in shares:
            values = [
                published[("6.1", name, str(n))]["value"] for n in range(1, 11) if ("6.1", name, str(n)) in published
            ]
            reason = (
                "not packaged offline" if name in UNAVAILABLE else "classification set: gp/additive is regression only"
            )
            rows.append(
                {
                    "table": "6.1",
                    "method": "order 1..R shares (%)",
                    "dataset": name,
                    "published": " / ".join(values),
                    "ours": reason,
                    "ours_se": "",
                }
            )
    return rows


def preamble(rows, summary, shares, quick: bool) -> str:
    def grid(metric):
        lines = []
        labels = [(m, t) for m, (t, _, _) in METHODS.items()] + list(SEARCH.items()) + list(LEAST_SQUARES.items())
        for method, label in labels:
            if metric == "mse" and method == "least_squares_companion":
                continue
            cells = {
                s["dataset"]: _cell(s["mean"], s["bold"])
                for s in summary
                if (s["metric"], s["method"]) == (metric, method)
            }
            lines.append({"method": label, **{n: cells.get(n, "") for n in DATASETS}})
        return markdown_table(lines, ["method", *DATASETS])

    splits = ", ".join(f"{n} {len({r['split'] for r in rows if r['dataset'] == n})}" for n in DATASETS)
    restarts = "/".join(str(v) for v in sorted({r["restarts"] for r in rows}))
    steps = "/".join(str(v) for v in sorted({r["steps"] for r in rows}))
    optimizers = "/".join(sorted({str(r.get("optimizer") or "lbfgs") for r in rows if r["method"] not in SEARCH}))
    dominant = {n: int(np.argmax(v)) + 1 for n, v in shares.items()}
    searched = []
    for name in DATASETS:
        runs = [r for r in rows if r["dataset"] == name and r["method"] in SEARCH]
        if runs:
            depths = "/".join(str(d) for d in sorted({r["search_depth"] for r in runs}))
            searched.append(f"{name}: {len(runs)} split(s) to depth {depths}")
    subsample = f"a seeded subsample of {QUICK['rows']} rows per set" if quick else "whole sets"
    return f"""# Duvenaud 2014 Tables 6.1, 6.4, 6.5: additive GPs

Setup (docs/sources/duvenaud.md#table-6-4): random 90/10 splits per set: {splits};, ML-II with {restarts} restart(s)
of at most {steps} L-BFGS steps ({optimizers}); {subsample} (concrete: a seeded 500-row subsample of the 1030 rows, as
Table 6.2's size; which rows the thesis used is unknown; bach: recreated from the recipe, not the thesis's draw). The
thesis's companion code evaluates by 10-fold cross-validation of the unshuffled data; we use random splits.
Standardised units. Bold: lowest mean and every method not significantly different from it (paired t-test, 5 %; one
split: only the lowest), among the four ML-II rows and the structure search where it ran on the same splits. The linear
row is our Bayesian linear regression (ML-II); the least-squares rows are the thesis's baseline as its companion code
fits it, its NLL once with the Gaussian density and once with the companion code's density, whose log normaliser is
counted twice (docs/sources/duvenaud.md#linear-nll): that convention is what the published linear NLLs use.
pumadyn-8nh and servo are not packaged offline: no numbers. HKL is not reimplemented. Structure search (the ch. 3
search, SE and RQ on every input, BIC; the thesis: depth 10): {"; ".join(searched) or "not run"}.

Ours, Table 6.4 (MSE):

{grid("mse")}

Ours, Table 6.5 (negative log-likelihood):

{grid("nll")}

Table 6.1 (share of the prior variance per order, %, mean over the splits' additive fits; dominant order):
{", ".join(f"{n}: order {d}" for n, d in dominant.items())}. The thesis: concrete order 1 (70.6 %), housing order 3
(80.6 %); bach is not in Table 6.1 (its truth is order 2 on 4 of 8 inputs).

Published beside ours:
"""


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Tables 6.1/6.4/6.5 in chunks: some splits of one set, or aggregate")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--dataset", choices=DATASETS)
    parser.add_argument("--splits", type=int, nargs="+", help="split indices (0-based) to fit")
    parser.add_argument("--restarts", type=int, default=FULL["restarts"])
    parser.add_argument("--steps", type=int, default=FULL["steps"])
    parser.add_argument("--optimizer", choices=OPTIMIZERS, default=FULL["optimizer"], help="ml2's optimizer")
    parser.add_argument("--methods", choices=METHOD_GROUPS, nargs="+", default=[*METHODS, "least_squares"])
    parser.add_argument("--search-depth", type=int, default=FULL["search_depth"], help="structure search's depth")
    parser.add_argument("--aggregate", action="store_true", help="write the tables from the splits so far")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.dataset:
        chunk = {**FULL, "restarts": args.restarts, "steps": args.steps, "optimizer": args.optimizer}
        chunk["search_depth"] = args.search_depth
        first = run_splits(args.dataset, args.splits, chunk, args.out, args.methods)
        if args.dataset == "concrete" and 0 in args.splits and "additive" in args.methods:
            write_csv(args.out / "effects.csv", first_order_plot(args.out, "concrete", *first))
    if args.aggregate:
        aggregate(args.out)
