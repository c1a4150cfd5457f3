"""The cost of a changepoint candidate on the monthly Mauna Loa series, fitted by recipes of its starts: optimiser
iterations, wall time and the log likelihood reached (docs/performance.md#changepoint-cost).

    python -m benchmarks.changepoint_cost [--recipes before,residual,residual-warm] [--results DIR]

Pin it (``taskset -c 0 ...``). The whole monthly series (``zoo.data.co2.monthly``), standardised as the search does.
The parent Per + SE is fitted once as the search reaches it (from SE, ``parent_fit``; kept in ``--results``), then
its changepoint candidate CP(Per + SE, Per + SE) (operator C.4, drawn by the search's ``DataScaledFactory``) is
fitted by ML-II (``fit_ml2``, host L-BFGS, at most 300 iterations per restart, within the periodic bounds) with each
recipe:

* ``before``: the search's default: the drawn candidate (random switch location) and 2 restarts jittered
  around it, plus the warm start (``starts.py``: the switch past the data's end, so the child starts at its parent);
* ``residual``: the drawn candidate with its switch moved to the parent's residual changepoint
  (``residual_changepoint`` below), 1 restart jittered around it, plus the warm start;
* ``residual-warm``: the drawn candidate and 1 jittered restart, plus the warm start with its switch moved to the
  residual changepoint (so this restart no longer starts at the parent's likelihood; the limit still bounds it);
* ``subset``: the drawn candidate's 3 restarts on every k-th point (at most ``SUBSET``; gpss-research fitted its
  restarts on a subset of 250 points), then on all points one restart from the subset's best optimum, plus the warm
  start: what ``search(..., subset=200)`` does for changepoint and window candidates.

Compilation is in each recipe's wall time and reported apart. ``residual`` and ``residual-warm`` were measured and not
adopted (docs/performance.md#changepoint-cost).
"""

import argparse
import dataclasses
import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np

from inference.applications.structure_search import Standardisation
from inference.applications.structure_search.bounds import PeriodBounds
from inference.applications.structure_search.fit import fit_ml2
from inference.applications.structure_search.scales import DataScaledFactory, Scales
from inference.applications.structure_search.starts import residual_period, warm_starts
from zoo.data import co2
from zoo.kernels import NAMES, parse
from zoo.structure.canonical import key
from zoo.structure.grammar import TIME_SERIES_BASE, Grammar, expand

RECIPES = ("before", "residual", "residual-warm", "subset")
SUBSET = 200  # at most this many points in the subset pass (every k-th input)
PARENT = "Per + SE"


def residual_changepoint(kernel, noise: float, X: np.ndarray, y: np.ndarray, margin: float = 0.1) -> float:
    """Where the residuals y - E[f | y] of GP(0, kernel) + N(0, noise) (one input column, sorted or not) most likely
    change their variance: the split maximising the likelihood ratio of one change in the variance of independent
    zero-mean Gaussians, n log s^2 - k log s_1^2 - (n - k) log s_2^2 (s^2 the mean square of all residuals, s_1^2 of
    the first k, s_2^2 of the rest; Chen and Gupta 2012, Parametric Statistical Change Point Analysis, sec. 2.1),
    among splits leaving ``margin`` of the points on each side; the midpoint between the two inputs it falls between.
    A parent that misfits one stretch of the series leaves larger residuals there, which is where a changepoint
    between two copies of it can gain."""
    x = X[:, 0]
    order = np.argsort(x)
    K = np.asarray(kernel(X), float) + noise * np.eye(len(y))
    r2 = ((noise * np.linalg.solve(K, y))[order]) ** 2
    n = len(r2)
    k = np.arange(max(2, int(margin * n)), n - max(2, int(margin * n)) + 1)
    head = np.cumsum(r2)[k - 1]
    ratio = n * np.log(r2.sum() / n) - k * np.log(head / k) - (n - k) * np.log((r2.sum() - head) / (n - k))
    split = int(k[np.argmax(np.where(np.isfinite(ratio), ratio, -np.inf))])
    xs = x[order]
    return float(0.5 * (xs[split - 1] + xs[split]))


def standardised() -> tuple[np.ndarray, np.ndarray]:
    x, y = co2.monthly()
    scale = Standardisation.of(x[:, None], y)
    return scale.inputs(x[:, None]), scale.targets(y)


def parent_fit(Xs, ys, results: Path, seed: int = 0):
    """Per + SE as the search reaches it (a pickle in ``results``): SE fitted from a data-scaled draw (3 restarts),
    then its C.1 child Per + SE from that draw's candidate (2 restarts) and from the warm start (the new Per at a
    small variance with the residuals' period, ``starts.py``). Per + SE fitted from data-scaled draws alone stays
    in a poor basin (log p ~ 340 against ~1130 from 6 draws of 3 restarts)."""
    path = results / "parent.pkl"
    if path.is_file():
        return pickle.loads(path.read_bytes())
    scales, grammar = Scales.of(Xs), Grammar(TIME_SERIES_BASE, 1)
    factory = DataScaledFactory(scales, np.random.default_rng(seed))
    bounds = PeriodBounds.of(Xs)
    se = fit_ml2(factory.base(NAMES["SE"], None), Xs, ys, 0.1, 3, seed=seed, bounds=bounds, optimizer="host-lbfgs")
    cand = next(c for c in expand(se.kernel, grammar, factory) if c.key == key(parse(PARENT)))
    warm = warm_starts(se.kernel, grammar, scales, residual_period(se.kernel, se.noise, Xs, ys))[cand.key]
    fit = fit_ml2(cand.kernel, Xs, ys, se.noise, 2, 1.0, 300, seed, bounds=bounds, warm=warm.start,
                  optimizer="host-lbfgs")  # fmt: skip
    path.write_bytes(pickle.dumps(fit))
    return fit


def fit_recipe(recipe: str, parent, Xs, ys, seed: int = 0) -> dict:
    scales = Scales.of(Xs)
    grammar = Grammar(TIME_SERIES_BASE, 1)
    factory = DataScaledFactory(scales, np.random.default_rng(seed + 1))  # the same draw for every recipe
    cand = next(c for c in expand(parent.kernel, grammar, factory) if c.operator == "C.4")
    warm = warm_starts(parent.kernel, grammar, scales, residual_period(parent.kernel, parent.noise, Xs, ys))[cand.key]
    kernel, start = cand.kernel, warm.start
    restarts = 3
    location = residual_changepoint(parent.kernel, parent.noise, Xs, ys)
    if recipe == "residual":
        kernel, restarts = dataclasses.replace(kernel, location=location), 2
    elif recipe == "residual-warm":
        start, restarts = dataclasses.replace(start, location=location), 2
    t0 = time.perf_counter()
    if recipe == "subset":
        step = -(-len(ys) // SUBSET)
        Xsub, ysub = Xs[::step], ys[::step]
        first = fit_ml2(kernel, Xsub, ysub, parent.noise, restarts, 1.0, 300, seed, bounds=PeriodBounds.of(Xsub),
                        optimizer="host-lbfgs")  # fmt: skip
        fit = fit_ml2(first.kernel, Xs, ys, first.noise, 1, 0.0, 300, seed, bounds=PeriodBounds.of(Xs), warm=start,
                      optimizer="host-lbfgs")  # fmt: skip
        subset = {"subset_n": len(ysub), "subset_iterations": first.iterations, "subset_wall_s": first.wall_s,
                  "subset_log_likelihoods": first.restart_log_likelihoods}  # fmt: skip
    else:
        fit = fit_ml2(kernel, Xs, ys, parent.noise, restarts, 1.0, 300, seed, bounds=PeriodBounds.of(Xs), warm=start,
                      optimizer="host-lbfgs")  # fmt: skip
        subset = {}
    return {
        **subset,
        "recipe": recipe,
        "n": len(ys),
        "wall_s": time.perf_counter() - t0,
        "compile_s": fit.compile_s,
        "run_s": fit.run_s,
        "iterations": fit.iterations,
        "restart_log_likelihoods": fit.restart_log_likelihoods,
        "log_likelihood": fit.log_likelihood,
        "parent_log_likelihood": parent.log_likelihood,
        "residual_changepoint": location,
        "drawn_location": float(cand.kernel.location),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--recipes", type=lambda s: s.split(","), default=list(RECIPES))
    p.add_argument("--results", default="bench_results/changepoint_cost")
    args = p.parse_args(argv)
    unknown = [r for r in args.recipes if r not in RECIPES]
    if unknown:
        print(f"error: unknown recipes {unknown}; known: {list(RECIPES)}", file=sys.stderr)
        return 2
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    Xs, ys = standardised()
    t0 = time.perf_counter()
    parent = parent_fit(Xs, ys, results)
    print(json.dumps({"parent": PARENT, "log_likelihood": parent.log_likelihood, "iterations": parent.iterations,
                      "wall_s": time.perf_counter() - t0}), flush=True)  # fmt: skip
    for recipe in args.recipes:
        print(json.dumps(fit_recipe(recipe, parent, Xs, ys)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
