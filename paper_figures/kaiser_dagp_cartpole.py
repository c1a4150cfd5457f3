"""Kaiser 2021 Table 3.3 (= Kaiser et al. 2019 Table 3): mixed cart-pole, mean log-likelihood of the angle change.

Data (docs/sources/kaiser.md#mixed-cartpole, docs/sources/kaiser.md#cartpole-details): gym cart-pole equations
(zoo/data/association.py); episodes start near upright, then 10 uniform random actions in {0, 1} (force -/+ 10 N), each
held 5 steps, never terminated; one transition per held action, input (x, x_dot, theta, theta_dot, action) (5-D), target
the change of pole angle over the 5 steps plus N(0, 0.01^2). Training: 500 transitions of the default system + 500 of
the short pole (mass 0.05, length 0.1); test: 5000 transitions of each system (default-only, short-only; "mixed" =
both). Model as published: DAGP with K = 2 SE modes, SE assignment GPs, M = 100 inducing points per GP, the paper's
objective (no q(a) entropy), Concrete-relaxed assignments. Baselines as published: sparse GPR (SVGP) trained on the
mixed, default-only and short-only data. Metric: mean log-likelihood (mean +- standard error over runs).

"DAGP 2" and "DAGP 3" give both modes 2 or 3 SE layers (DSVI deep GPs, eqs. 3.9-3.12: inner layers of width 5
with the identity mean and q(v) = N(0, 1e-5 I) at the start, as ``deep_gp.dsvi``; every layer M inducing points);
their predictive is the mixture over 500 draws through the inner layers (eq. 2.90). --quick runs DAGP and DAGP 2.
Left out: OMGP and BNN+LV (not in the zoo).

Defaults we chose (not in the text): inputs and targets standardised with the mixed training set's mean and sd, and
every log-likelihood reported in those standardised target units (log p(y) + log sd_y; the published values near
0.5-0.9 are only plausible on a standardised scale: on the raw scale a noise sd of 0.01 alone gives 3.7); Concrete
temperature 0.5; LogNormal(-2, 1) priors on the noise variances (initial 0.1), LogNormal(0, 1) on lengthscales and
kernel variances, point masses (MAP) on all hyperparameters; the modes start from trimmed GP fits
(``init_params`` of the assignment logits from ``inference.applications.trimmed.peel``: half of the training points,
found by a
forward search of exact GP fits, start on mode 1, the rest on mode 2) with random initial q(u) means (sd 1), S = 0.01 I;
inducing inputs: k-means of the training inputs; Adam, lr 0.01 cosine-decayed to 5 %, full batch, one Monte-Carlo sample
per step (docs/sources/kaiser.md#dagp-ambiguities); 500 samples of alpha_* for the predictive weights. The SVGP
baselines are ``zoo.dagp`` with K = 1 (its bound is the SVGP bound plus a constant KL of the unused assignment GP,
tests/test_dagp.py::test_one_mode_dagp_is_svgp), so they share priors, optimiser and M with DAGP. DAGP's predictive
is the mixture (3.8) with its predictive assignment weights; the sub-model columns score one mode alone: the mode to
which most default (short) training points are assigned is the default (short) sub-model. Runs differ in the data,
inducing inputs and initial values (seed = run index). Full-run results: kaiser_dagp_cartpole_full_runs.md.
"""

from functools import cache, partial
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from inference.applications import trimmed
from inference.files.resumable import cached
from inference.files.tables import mean_and_se, read_published, write_comparison, write_csv
from paper_figures._dagp import fit_restarts
from zoo import dagp
from zoo import sparse as sp
from zoo.data.association import DEFAULT_POLE, SHORT_POLE, cartpole, mixed_cartpole

DESCRIPTION = "Kaiser 2021 Table 3.3: mixed cart-pole mean log-likelihood, DAGP (K = 2) vs SVGP on mixed/default/short"
DAGP_CONFIGS = {
    name: dagp.dagp_config(2, temperature=0.5, init_spread=1.0, depths=(depth, depth))
    for name, depth in (("DAGP", 1), ("DAGP 2", 2), ("DAGP 3", 3))
}
GPR_CONFIG = dagp.dagp_config(1, temperature=0.5, init_spread=0.0)
SETS = ("mixed_train", "mixed_test", "default_train", "default_test", "short_train", "short_test")


def settings(quick: bool) -> dict:
    if quick:
        return {"runs": 1, "n_train": 100, "n_test": 500, "m": 20, "steps": 300, "lr": 0.01, "dagp": ("DAGP", "DAGP 2")}
    # Published: 10 runs. Per run on one core of our 2-core machine: DAGP 2 min, DAGP 2 4 min, DAGP 3 7.5 min, the
    # three baselines 1.3 min. The full run keeps every finished (run, model) and resumes
    # (``inference.files.resumable.cached``).
    return {
        "runs": 10,
        "n_train": 500,
        "n_test": 5000,
        "m": 100,
        "steps": 5000,
        "lr": 0.01,
        "dagp": tuple(DAGP_CONFIGS),
    }


class Scaler:
    """Standardisation with the mixed training set's statistics: inputs per column, targets as a whole."""

    def __init__(self, X: np.ndarray, y: np.ndarray):
        self.x_mean, self.x_sd = X.mean(0), X.std(0)
        self.y_mean, self.y_sd = float(y.mean()), float(y.std())

    def __call__(self, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (X - self.x_mean) / self.x_sd, (y - self.y_mean) / self.y_sd


class Sets(NamedTuple):
    """The mixed training and test sets (X (n, 5), y (n,)), standardised with the mixed training statistics; every
    evaluation set of SETS as rows of one of them (``rows[name]``: its mixed set's name and a boolean mask); and
    the training labels (0 default, 1 short)."""

    mixed: dict[str, tuple[np.ndarray, np.ndarray]]
    rows: dict[str, tuple[str, np.ndarray]]
    labels: np.ndarray

    def of(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        source, mask = self.rows[name]
        X, y = self.mixed[source]
        return X[mask], y[mask]


def make_sets(seed: int, s: dict) -> Sets:
    k_train, k_default, k_short = jax.random.split(jax.random.PRNGKey(seed), 3)
    train = mixed_cartpole(k_train, s["n_train"])
    scale = Scaler(train.X, train.y)
    default_test = cartpole(DEFAULT_POLE, k_default, s["n_test"])
    short_test = cartpole(SHORT_POLE, k_short, s["n_test"])
    test = tuple(np.concatenate(pair) for pair in zip(default_test, short_test, strict=True))
    labels = np.asarray(train.labels)
    test_labels = np.repeat([0, 1], [len(default_test[1]), len(short_test[1])])
    rows = {}
    for split, split_labels in (("train", labels), ("test", test_labels)):
        rows[f"mixed_{split}"] = (f"mixed_{split}", np.ones(len(split_labels), bool))
        rows[f"default_{split}"] = (f"mixed_{split}", split_labels == 0)
        rows[f"short_{split}"] = (f"mixed_{split}", split_labels == 1)
    mixed = {"mixed_train": scale(train.X, train.y), "mixed_test": scale(*test)}
    return Sets(mixed, rows, labels)


def train(X, y, config, seed: int, s: dict) -> dagp.DagpFit:
    """One fit whose assignments start from trimmed GP fits (``inference.applications.trimmed.peel``: one system's
    points at a
    time)."""
    Z = sp.init_inducing(jax.random.PRNGKey(1000 + seed), X, s["m"])
    labels = trimmed.peel(jax.random.PRNGKey(4000 + seed), X, y, config.num_modes)
    init = {"assignment_logits": dagp.assignment_logits_from_labels(labels, config.num_modes)}
    (restart,) = fit_restarts(config, {"X": X, "y": y, "Z": Z}, 2000 + seed, 1, s["steps"], s["lr"], init=init)
    return restart.fit


@cache
def log_likelihoods(config: dagp.DagpConfig):
    """Jitted ``(params, X, y, key) -> (mixture (n,), per-mode (n, K))`` log predictive densities (eq. 3.8)."""

    def evaluate(params, X, y, key):
        pred = dagp.predict(dagp.DagpFit(params, config), X, key, num_samples=500)
        modes = jnp.stack([dagp.mode_log_density(pred, y, k) for k in range(config.num_modes)], -1)
        return dagp.mixture_log_density(pred, y), modes

    return jax.jit(evaluate)


def point_log_likelihoods(fit_: dagp.DagpFit, sets: Sets, seed: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per mixed set: the log predictive density of every point under the mixture (n,) and under each mode (n, K).
    Every evaluation set is part of a mixed set, so this is all the scoring evaluates (deep modes cost minutes)."""
    evaluate = log_likelihoods(fit_.config)
    key = jax.random.PRNGKey(3000 + seed)
    return {name: tuple(map(np.asarray, evaluate(fit_.params, X, y, key))) for name, (X, y) in sets.mixed.items()}


def scores(densities: dict, sets: Sets, names, mode: int | None = None) -> dict[str, float]:
    """Mean log-likelihood per named set: the predictive mixture (mode None) or one mode alone."""
    out = {}
    for name in names:
        source, mask = sets.rows[name]
        mixture, modes = densities[source]
        out[name] = float(np.mean((mixture if mode is None else modes[:, mode])[mask]))
    return out


def run_dagp(seed: int, model: str, s: dict) -> tuple[list[dict], dict]:
    """One DAGP variant on run ``seed``: its mixture rows and sub-model rows, and its per-run quantities."""
    sets = make_sets(seed, s)
    fit_ = train(*sets.mixed["mixed_train"], DAGP_CONFIGS[model], seed, s)
    q_a = np.asarray(dagp.training_assignments(fit_))
    default_mode = int(np.argmax(q_a[sets.labels == 0].mean(0)))
    short_mode = int(np.argmax(q_a[sets.labels == 1].mean(0)))
    densities = point_log_likelihoods(fit_, sets, seed)
    rows = [
        {"model": model, **scores(densities, sets, SETS[:2])},
        {"model": f"{model} default sub-model", **scores(densities, sets, SETS[2:4], default_mode)},
        {"model": f"{model} short sub-model", **scores(densities, sets, SETS[4:], short_mode)},
    ]
    accuracy = np.mean(q_a.argmax(1) == np.where(sets.labels == 0, default_mode, short_mode))
    extra = {
        run_column(model, "assignment_accuracy"): float(accuracy),
        run_column(model, "modes_distinct"): default_mode != short_mode,
    }
    return rows, extra


def run_baselines(seed: int, s: dict) -> tuple[list[dict], dict]:
    """The SVGP baselines on run ``seed``: trained on the mixed, default-only and short-only training data."""
    sets = make_sets(seed, s)
    rows = []
    for model, train_set in (
        ("GPR Mixed", "mixed_train"),
        ("GPR Default", "default_train"),
        ("GPR Short", "short_train"),
    ):
        densities = point_log_likelihoods(train(*sets.of(train_set), GPR_CONFIG, seed, s), sets, seed)
        rows.append({"model": model, **scores(densities, sets, SETS[:2] if model == "GPR Mixed" else SETS[2:])})
    return rows, {}


def run_column(model: str, quantity: str) -> str:
    """The runs.csv column of one DAGP variant's quantity, e.g. ``dagp2_assignment_accuracy``."""
    return f"{model.lower().replace(' ', '')}_{quantity}"


def summarise(rows: list[dict]) -> dict[tuple[str, str], tuple[float, float, int]]:
    """(model, set) -> (mean, standard error, runs)."""
    out = {}
    for model in dict.fromkeys(r["model"] for r in rows):
        for name in SETS:
            values = np.array([r[name] for r in rows if r["model"] == model and name in r])
            if len(values):
                out[(model, name)] = (*mean_and_se(values), len(values))
    return out


OURS_ROW = {name: name for name in (*DAGP_CONFIGS, "GPR Mixed", "GPR Default", "GPR Short")}


def ours_for(published_model: str, column: str, summary) -> str:
    """Our number for a published (model, set) cell; a DAGP's sub-model columns are its sub-models' scores."""
    if published_model in DAGP_CONFIGS and column.startswith(("default", "short")):
        key = (f"{published_model} {column.split('_')[0]} sub-model", column)
    elif published_model in OURS_ROW:
        key = (OURS_ROW[published_model], column)
    else:
        return "not run (not in the zoo)"
    if key not in summary:
        return "-"
    mean, se, runs = summary[key]
    return f"{mean:.3f} +- {se:.3f} ({runs} runs)" if runs > 1 else f"{mean:.3f} (1 run)"


def run_unit(seed: int, unit: str, s: dict, folder: Path | None) -> tuple[tuple[list[dict], dict], float]:
    """One run's unit of work -- a DAGP variant (``run_dagp``) or "GPR" (``run_baselines``) -- as (rows, per-run
    quantities) and its wall time (s), kept in ``folder`` (``inference.files.resumable.cached``; None: always
    recompute). Independent
    units may run in separate processes on the same folder; ``main`` then only collects them."""
    key = (sorted((k, v) for k, v in s.items() if k != "dagp"), GPR_CONFIG if unit == "GPR" else DAGP_CONFIGS[unit])
    compute = partial(run_baselines, seed, s) if unit == "GPR" else partial(run_dagp, seed, unit, s)
    return cached(folder, f"run{seed}-{unit.replace(' ', '')}", key, compute)


def main(quick: bool, out: Path) -> None:
    """Every run's units (each DAGP variant and the baselines), kept in ``out/runs`` by the full run, so a stopped
    run resumes; the quick run always recomputes. Reported wall times are sums of the per-unit walls."""
    out = Path(out)
    s = settings(quick)
    rows, extras, wall = [], [], 0.0
    for seed in range(s["runs"]):
        extra = {"run": seed}
        for unit in (*s["dagp"], "GPR"):
            (unit_rows, unit_extra), unit_wall = run_unit(seed, unit, s, None if quick else out / "runs")
            # in SETS order (a cached row's keys come back sorted)
            rows += [{"model": r["model"], **{k: r[k] for k in SETS if k in r}, "run": seed} for r in unit_rows]
            extra |= unit_extra | {run_column(unit, "s"): unit_wall}
            wall += unit_wall
        extras.append(extra)
        print(f"run {seed}: {wall:.0f} s", extra, flush=True)
    write_csv(out / "numbers.csv", rows)
    write_csv(out / "runs.csv", extras)
    summary = summarise(rows)
    table = [
        {
            "model": p["model"],
            "set": p["set"],
            "published": f"{p['mean']} +- {p['se']}",
            "ours": ours_for(p["model"], p["set"], summary),
            "note": p["note"],
        }
        for p in read_published(__file__)
    ]
    accuracy = {m: np.mean([e[run_column(m, "assignment_accuracy")] for e in extras]) for m in s["dagp"]}
    preamble = (
        __doc__ + f"\nThis run: {s['runs']} run(s), {s['n_train']} + {s['n_train']}"
        f" training points, {s['n_test']} test points per system, M = {s['m']}, {s['steps']} Adam steps; summed wall"
        f" time {wall:.0f} s; mean training assignment accuracy:"
        f" {', '.join(f'{m} {a:.3f}' for m, a in accuracy.items())}."
    )
    print(write_comparison(out, table, preamble))
    plot(out, summary)


def plot(out: Path, summary) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    published = read_published(__file__)
    models = [*DAGP_CONFIGS, "GPR Mixed", "GPR Default", "GPR Short"]
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.4), sharey=False)
    for ax, column in zip(axes, ("mixed_test", "default_test", "short_test", "mixed_train"), strict=True):
        for i, model in enumerate(models):
            p = [r for r in published if r["model"] == model and r["set"] == column]
            if p:
                ax.errorbar(i - 0.1, float(p[0]["mean"]), float(p[0]["se"]), fmt="ks", ms=4)
            in_mode = model in DAGP_CONFIGS and "mixed" not in column
            key = (f"{model} {column.split('_')[0]} sub-model" if in_mode else model, column)
            if key in summary:
                mean, se, _ = summary[key]
                ax.errorbar(i + 0.1, mean, 0.0 if np.isnan(se) else se, fmt="o", color="C0", ms=4)
        ax.set_xticks(range(len(models)), models, rotation=30, fontsize=7)
        ax.set_title(column.replace("_", " "), fontsize=9)
        ax.set_ylim(bottom=max(ax.get_ylim()[0], -3.0))
    axes[0].set_ylabel("mean log-likelihood (standardised y)")
    axes[0].plot([], [], "ks", label="published")
    axes[0].plot([], [], "o", color="C0", label="ours")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "kaiser_dagp_cartpole.png", dpi=110)
    plt.close(fig)
