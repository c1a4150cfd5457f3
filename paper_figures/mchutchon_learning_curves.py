"""McHutchon (2014) Figs 3.13, 3.27, 3.29 and 3.36: the training objective and the test negative log probability
(eq. 3.75) of a GP-SSM learner as a function of its optimisation or EM iteration -- the Direct method (Fig 3.13), EM
with moment-matching EP and with importance-sampling EP (Fig 3.27), the particle-filter learner (Fig 3.29) and PGAS-EM
(Fig 3.36) -- on the 1-D kink and the 4-D cart & pendulum (docs/sources/mchutchon.md#learning-curves).

Problems, start and learners are those of ``mchutchon_learning`` (E3.9): the same data (20 training and 20 test
trajectories of 20 steps per system; 20 / 50 pseudo-points chosen by the Titsias criterion), every learner starting
from Algorithm 1's AR1-GP initialisation (``ar1.initial_params``, computed once per system and passed to every run),
through ``inference.run``. The engines record their parameter path (``inference.core.parameter_path``: the learned
parameters at every iteration); this script evaluates the test score along it, so no engine sees test data.

* Training objective (lower is better), as the thesis plots it: Direct, the GP-ADF approximate negative log marginal
  likelihood (eqs. 3.76, 3.86) at the point before each step; EP-EM (``analytic-em``, whose ADS E-step equals
  moment-matching EP, sec. 3.6.2; ``is-ep-em``), the M-step objective Q after each EM iteration (eq. 3.189; ours
  holds its transition term, the observation term being solved in closed form and left out of the recorded value);
  PF (``pf-ml``), minus the particle filter's log-likelihood estimate at each iterate; PGAS-EM, minus the Monte Carlo
  Q (eq. 3.212) after each M-step.
* Test score: eq. 3.75 from the true previous latent with the true observation noise, averaged over the test
  transitions, at up to ``num_eval`` iterations spread over the run (all of them for short EM runs), plus the start.
  The PF learner's estimate is the average of the second half of its iterates (``pf-ml``); the curve shows the
  iterates themselves, as the thesis's does.
* The 99 % point (Fig 3.13's green cross): the first recorded iteration at which the objective has made 99 % of its
  total decrease (start to the last recorded value); reported for every learner, for the training objective and the
  test score.
* Our operationalisations of the text's words, fixed before the runs: "no long-term over-fitting" = the final test
  score exceeds the run's best by less than 5 % of the best's decrease from the start; "over-fitting" (Fig 3.27) =
  the test score's minimum comes before the last iteration and the final exceeds it by more than that; "comparable"
  (Fig 3.36) = final test scores within 0.05 nats per transition.

Deviations: no unicycle (the thesis's third system; its equations are not stated,
docs/sources/mchutchon.md#pilco-plant). Sizes (``settings``) are reduced from the thesis's, to fit about an hour of
one shared core: on the kink, Direct 1500 steps (as the thesis), EP-EM 20 iterations with moment matching and with
10 and 100 importance samples (thesis: up to 10,000), the PF with 100 and 1000 particles (thesis: up to 10,000) for
250 iterations, PGAS-EM with 10 and 100 sampled trajectories for 30 iterations; on the cart-pole, Direct 750 steps
(thesis 1500) and PGAS-EM with 10 sampled trajectories for 30 iterations (thesis: about 60 to converge); no EP-EM
curve there (moment-matching EP-EM finished neither 10 iterations in 15 minutes nor 3 in 9 on a shared core) and no
PF curve. The PF uses Adam on the path score (``mchutchon_learning``'s choice) rather than Algorithm 5's line search,
so an iteration is one score evaluation, while the thesis counts the function evaluations of its line search;
Direct's L-BFGS iteration includes its own line search. Quick: the kink with 6 / 6 trajectories, Direct (60 steps)
and PGAS-EM (4 iterations, 5 samples) only.
Full-run results: mchutchon_learning_curves_full_runs.md.
"""

from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import inference
from inference.applications import ar1
from inference.applications import gpssm_metrics as gm
from inference.core import parameter_path
from inference.core.program import observed_args
from inference.files.resumable import cached
from inference.files.tables import markdown_table, write_csv
from paper_figures._claims import pass_fail, pyplot, write_results
from paper_figures.mchutchon_learning import Problem, make_problem
from zoo import ssm

DESCRIPTION = (
    "McHutchon 2014 Figs 3.13, 3.27, 3.29, 3.36: training objective and test NLP per iteration of Direct, EP-EM, "
    "the PF learner and PGAS-EM (kink, cart-pole)"
)

OVERFIT_FRACTION = 0.05  # of the best test score's decrease from the start
COMPARABLE_NATS = 0.05  # per test transition


class Run(NamedTuple):
    figure: str  # "3.13", "3.27", "3.29", "3.36"
    system: str
    label: str
    engine: str
    options: dict


# Which objective trace each engine records, its sign (the figures plot "lower is better") and whether path[j] is the
# point after j + 1 iterations (EM: after each M-step) or after j (Direct, PF: the point each step starts from).
OBJECTIVES = {
    "direct": ("adf_log_lik", -1.0, 0),
    "analytic-em": ("q", 1.0, 1),
    "is-ep-em": ("q", 1.0, 1),
    "pf-ml": ("log_likelihood", -1.0, 0),
    "pgas-em": ("q", -1.0, 1),
}


def settings(quick: bool) -> dict:
    """Runs per system. Thesis: Direct to 1500 steps; EP-EM with several sample counts; PF with 100 to 10,000
    particles; PGAS-EM with several numbers of sampled trajectories, 100 particles."""
    if quick:
        return {
            "systems": {"kink": {"num_train": 6, "num_test": 6}},
            "runs": [
                Run("3.13", "kink", "Direct", "direct", {"num_steps": 60}),
                Run("3.36", "kink", "PGAS-EM 5 samples", "pgas-em", {"num_steps": 4, "num_samples": 5}),
            ],
            "num_eval": 12,
        }
    pf = {"num_steps": 250, "score": "path"}
    runs = [  # in the order they run (a resumed full run finishes the first ones first)
        Run("3.13", "kink", "Direct", "direct", {"num_steps": 1500}),
        Run("3.13", "cartpole", "Direct", "direct", {"num_steps": 750}),
        Run("3.36", "kink", "PGAS-EM 10 samples", "pgas-em", {"num_steps": 30, "num_samples": 10}),
        Run("3.27", "kink", "MM-EP-EM (= ADS-EM)", "analytic-em", {"num_steps": 20}),
        Run("3.29", "kink", "PF 100 particles", "pf-ml", {**pf, "num_particles": 100}),
        Run("3.27", "kink", "IS-EP-EM 10 samples", "is-ep-em", {"num_steps": 20, "num_samples": 10}),
        Run("3.36", "kink", "PGAS-EM 100 samples", "pgas-em", {"num_steps": 30, "num_samples": 100}),
        Run("3.29", "kink", "PF 1000 particles", "pf-ml", {**pf, "num_particles": 1000}),
        Run("3.27", "kink", "IS-EP-EM 100 samples", "is-ep-em", {"num_steps": 20, "num_samples": 100}),
        Run("3.36", "cartpole", "PGAS-EM 10 samples", "pgas-em", {"num_steps": 30, "num_samples": 10}),
    ]
    return {
        "systems": {"kink": {"num_train": 20, "num_test": 20}, "cartpole": {"num_train": 20, "num_test": 20}},
        "runs": runs,
        "num_eval": 40,
    }


# ----------------------------------------------------------------------------------------------------------------
# One run: learn, then score the path


def test_nlp_along(problem: Problem, snapshots: dict, start: dict) -> np.ndarray:
    """Eq. 3.75 averaged over the test transitions at each snapshot ({site: (S, ...)}, the unlearned sites from
    ``start``): (S,). One compiled program for all snapshots."""
    view, observed = problem.spec.views["state_space"], observed_args(problem.dataset)
    test, truth = problem.dataset.test, problem.dataset.truth
    steps = gm.transitions(truth["test_states"], test["lengths"], test.get("u"))
    prev, u_prev, nxt = (jnp.asarray(a) for a in steps)
    obs_var = jnp.asarray(problem.dataset.truth["obs_var"])
    fixed = {k: jnp.asarray(v) for k, v in start.items() if k not in snapshots}

    def one(params):
        predict = gm.gpssm_predict(ssm.bind(view, {**fixed, **params}, observed)["gpssm"])
        score = lambda x, u, x_next: gm.gaussian_score(*predict(x, u), x_next, obs_var)  # noqa: E731
        return jnp.mean(jax.vmap(score)(prev, u_prev, nxt))

    return np.asarray(jax.jit(lambda s: jax.lax.map(one, s))({k: jnp.asarray(v) for k, v in snapshots.items()}))


def evaluation_steps(num: int, count: int) -> np.ndarray:
    """Up to ``count`` path indices in [0, num): all when few, else spread evenly with the first and last."""
    return np.arange(num) if num <= count else np.unique(np.linspace(0, num - 1, count).round().astype(int))


def learn(problem: Problem, run: Run, start: dict, num_eval: int) -> dict:
    """The run's training objective per iteration and the test score at the evaluated iterations (and the start)."""
    init = {"params": start} if run.engine == "pf-ml" else {"init": start}
    idata = inference.run(problem.spec, problem.dataset, engine=run.engine, seed=7, **run.options, **init)
    name, sign, offset = OBJECTIVES[run.engine]
    objective = sign * np.asarray(idata.optimization[name].values[0])
    path = parameter_path.from_result(idata)
    steps = evaluation_steps(parameter_path.num_steps(path), num_eval)
    snapshots = {k: v[steps] for k, v in path.items()}
    start_snapshot = {k: np.asarray(start[k])[None] for k in path}
    test = test_nlp_along(problem, {k: np.concatenate([start_snapshot[k], v]) for k, v in snapshots.items()}, start)
    attrs = idata.posterior.attrs
    return {
        "iterations": np.arange(len(objective)) + offset,
        "objective": objective,
        "test_iterations": np.concatenate([[0], steps + offset]),
        "test_nlp": test,
        "run_s": float(attrs["run_s"]),
        "compile_s": float(attrs["compile_s"]),
    }


def decrease_point(x: np.ndarray, values: np.ndarray, fraction: float = 0.99) -> float:
    """The first x at which ``values`` has made ``fraction`` of its total decrease (first to last value); NaN when
    it did not decrease."""
    finite = np.isfinite(values)
    x, values = x[finite], values[finite]
    drop = values[0] - values[-1]
    if not drop > 0:
        return float("nan")
    return float(x[np.argmax(values <= values[0] - fraction * drop)])


def summarise(run: Run, result: dict) -> dict:
    test, objective = result["test_nlp"], result["objective"]
    best = int(np.nanargmin(test))
    return {
        "figure": run.figure,
        "system": run.system,
        "learner": run.label,
        "iterations": int(result["iterations"][-1]),
        "objective_first": float(objective[0]),
        "objective_last": float(objective[-1]),
        "objective_99pct_at": decrease_point(result["iterations"], objective),
        "test_start": float(test[0]),
        "test_best": float(test[best]),
        "test_best_at": int(result["test_iterations"][best]),
        "test_final": float(test[-1]),
        "test_99pct_at": decrease_point(result["test_iterations"], test),
        "run_s": result["run_s"],
        "compile_s": result["compile_s"],
    }


def overfits(s: dict) -> bool:
    """Our criterion: the final test score exceeds the best by more than OVERFIT_FRACTION of the best's decrease."""
    return s["test_final"] - s["test_best"] > OVERFIT_FRACTION * max(s["test_start"] - s["test_best"], 0.0)


# ----------------------------------------------------------------------------------------------------------------
# Claims of the text, each on the runs that exist


def claims(summary: list[dict]) -> list[dict]:
    rows = []

    def add(figure, claim, measured, ok):
        rows.append({"figure": figure, "claim": claim, "measured": measured, "verdict": pass_fail(ok)})

    by = {(s["figure"], s["system"], s["learner"]): s for s in summary}
    for (figure, system, learner), s in by.items():
        tag = f"{system}, {learner}"
        if figure == "3.13":
            add(
                figure,
                f"{tag}: the test score converges within about 750 function evaluations",
                f"99 % of the test decrease at iteration {s['test_99pct_at']:.0f} (training objective: "
                f"{s['objective_99pct_at']:.0f}) of {s['iterations']}",
                s["test_99pct_at"] <= 750,
            )
        if figure in ("3.13", "3.36"):
            add(
                figure,
                f"{tag}: no sign of long-term over-fitting",
                f"test NLP start {s['test_start']:.3f}, best {s['test_best']:.3f} at {s['test_best_at']}, "
                f"final {s['test_final']:.3f}",
                not overfits(s),
            )
    for system in dict.fromkeys(s["system"] for s in summary):
        ep = {k[2]: v for k, v in by.items() if k[:2] == ("3.27", system)}
        sampled = {k: v for k, v in ep.items() if k.startswith("IS-EP")}
        analytic = next((v for k, v in ep.items() if k.startswith("MM-EP")), None)
        if sampled and analytic:
            best = min(sampled.values(), key=lambda v: v["test_best"])
            add(
                "3.27",
                f"{system}: sampling EP beats moment-matching EP on test NLP",
                f"best test NLP: {best['learner']} {best['test_best']:.3f}, MM-EP {analytic['test_best']:.3f}",
                best["test_best"] < analytic["test_best"],
            )
            counts = sorted(sampled.values(), key=lambda v: int(v["learner"].split()[1]))
            add(
                "3.27",
                f"{system}: the best performance comes with the fewest samples",
                "best test NLP " + ", ".join(f"{v['learner']} {v['test_best']:.3f}" for v in counts),
                min(counts, key=lambda v: v["test_best"]) is counts[0],
            )
        if ep:
            fits = {k: v for k, v in ep.items() if overfits(v)}
            add(
                "3.27",
                f"{system}: EP-EM over-fits (the test NLP turns up), sampling and analytic alike",
                "; ".join(
                    f"{k}: best {v['test_best']:.3f} at {v['test_best_at']}, final {v['test_final']:.3f}"
                    for k, v in ep.items()
                ),  # fmt: skip
                len(fits) == len(ep),
            )
        pf = sorted(
            ((int(k[2].split()[1]), v) for k, v in by.items() if k[:2] == ("3.29", system)), key=lambda kv: kv[0]
        )
        if len(pf) > 1:
            finals = [v["test_final"] for _, v in pf]
            add(
                "3.29",
                f"{system}: PF learning improves as the number of particles grows",
                ", ".join(
                    f"{n} particles: final test NLP {v['test_final']:.3f}, training {v['objective_last']:.2f}"
                    for n, v in pf
                ),  # fmt: skip
                bool(np.all(np.diff(finals) < 0)),
            )
        pgas = sorted(
            ((int(k[2].split()[1]), v) for k, v in by.items() if k[:2] == ("3.36", system)), key=lambda kv: kv[0]
        )
        if len(pgas) > 1:
            (n_few, few), (n_many, many) = pgas[0], pgas[-1]
            add(
                "3.36",
                f"{system}: few sampled trajectories ({n_few}) perform comparably to many ({n_many})",
                f"final test NLP {few['test_final']:.3f} vs {many['test_final']:.3f} (our 'comparable': within "
                f"{COMPARABLE_NATS})",
                abs(few["test_final"] - many["test_final"]) < COMPARABLE_NATS,
            )
        for _, v in pgas:
            expected = {"kink": 20, "cartpole": 60}.get(system)
            if expected and v["iterations"] >= expected:  # a shorter run cannot show where it would converge
                add(
                    "3.36",
                    f"{system}, {v['learner']}: converges in about {expected} EM iterations",
                    f"99 % of the test decrease at EM iteration {v['test_99pct_at']:.0f} of {v['iterations']}",
                    v["test_99pct_at"] <= 1.5 * expected,
                )
    return rows


# ----------------------------------------------------------------------------------------------------------------
# Figure


def plot(out: Path, runs: list[Run], results: list[dict], summary: list[dict]) -> None:
    plt = pyplot()
    panels = sorted(dict.fromkeys((r.figure, r.system) for r in runs), key=lambda p: (p[0], p[1] != "kink"))
    fig, axes = plt.subplots(len(panels), 2, figsize=(10, 2.8 * len(panels)), squeeze=False)
    for (figure, system), (ax_train, ax_test) in zip(panels, axes, strict=True):
        everything = zip(runs, results, summary, strict=True)
        mine = [(r, res, s) for r, res, s in everything if (r.figure, r.system) == (figure, system)]
        for i, (run, res, s) in enumerate(mine):
            colour = f"C{i}"
            ax_train.plot(res["iterations"], res["objective"], color=colour, lw=1, label=run.label)
            ax_train.axhline(res["objective"][-1], color=colour, ls="--", lw=0.6)
            if np.isfinite(s["objective_99pct_at"]):
                at = np.searchsorted(res["iterations"], s["objective_99pct_at"])
                ax_train.plot(res["iterations"][at], res["objective"][at], "x", color="g", ms=8)
            ax_test.plot(res["test_iterations"], res["test_nlp"], "-o", color=colour, ms=2, lw=1, label=run.label)
        ax_train.set(title=f"Fig {figure}, {system}: training objective", xlabel="iteration")
        ax_test.set(title=f"Fig {figure}, {system}: test NLP (eq. 3.75)", xlabel="iteration")
        ax_train.legend(fontsize=6)
        if figure in ("3.13", "3.29"):
            ax_train.set_xscale("symlog")
            ax_test.set_xscale("symlog")
    fig.tight_layout()
    fig.savefig(out / "mchutchon_learning_curves.png", dpi=100)
    plt.close(fig)


def main(quick: bool, out: Path) -> None:
    """Every run in turn (the full run keeps each finished one in ``out/runs`` and resumes from there)."""
    out = Path(out)
    cfg = settings(quick)
    problems = {name: make_problem(name, sizes) for name, sizes in cfg["systems"].items()}
    starts = {
        name: ar1.initial_params(p.spec.views["gp_ssm"], observed_args(p.dataset)) for name, p in problems.items()
    }
    runs = [r for r in cfg["runs"] if r.system in problems]
    results = []
    for run in runs:
        key = (run, sorted(cfg["systems"][run.system].items()), cfg["num_eval"])
        label = f"{run.system}-" + "".join(c if c.isalnum() else "_" for c in run.label)
        result, _ = cached(
            None if quick else out / "runs",
            label,
            key,
            lambda run=run: learn(problems[run.system], run, starts[run.system], cfg["num_eval"]),
        )
        results.append(result)
    summary = [summarise(run, res) for run, res in zip(runs, results, strict=True)]
    write_csv(out / "learning_curves_summary.csv", summary)
    write_csv(
        out / "learning_curves.csv",
        [
            {"figure": r.figure, "system": r.system, "learner": r.label, "kind": kind, "iteration": i, "value": v}
            for r, res in zip(runs, results, strict=True)
            for kind, xs, ys in (
                ("objective", res["iterations"], res["objective"]),
                ("test_nlp", res["test_iterations"], res["test_nlp"]),
            )
            for i, v in zip(xs, ys, strict=True)
        ],
    )
    plot(out, runs, results, summary)
    extra = "\n\nPer learner:\n\n" + markdown_table(summary) + "\n"
    write_results(out, claims(summary), {"runs": len(runs)}, __doc__, quick, extra)
