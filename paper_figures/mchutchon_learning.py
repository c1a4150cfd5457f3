"""McHutchon (2014) Tables 3.5-3.7 and Figs 3.37-3.40 (E3.9): learning a GP-SSM by every method, on the kink and
the cart-pole -- training time, percent error of the learnt total noise std, one-step-ahead NLP, and the average rank
in multi-step moment-matching simulation.

Methods: the thesis's AR1-GP, NIGP, Direct, ADS-EM, IS-EP-EM (when the ``is-ep-em`` engine is installed), PF (``pf-ml``)
and PGAS-EM, plus rows the thesis did not run: PGAS-EM+GP and PSAEM (pseudo-targets by MAP under their GP prior,
``pseudo_target_prior="gp"``: the thesis's ML solve is numerically unstable, its |beta| reaching 1e12 on the kink),
PMCMC (particle Gibbs over trajectories and parameters; evaluated as the moment-matched mixture of 20 thinned
posterior draws) and VGPSSM-SVI (the variational GP-SSM M11 by SVI with its Markov-Gaussian guide, 1-D only;
evaluated as the mixture of 20 draws from q(F~)). Every GP-SSM learner fits the same sparse
GP-SSM (M10: pseudo-inputs chosen once by the Titsias criterion on the observed transitions,
``inference.applications.ar1.with_pseudo_inputs``, docs/sources/mchutchon.md#pseudo-inputs; initialised from the AR1-GP,
Algorithm 1); all use the thesis's Table 3.4 settings unless stated below.

Assumptions (docs/sources/mchutchon.md#assumptions): the kink f(x) = x + 1 (x < 4), -4x + 21 (x >= 4) with
process/observation variances 0.2/0.1136 (total std 0.56, Table 3.6); the cart-pole of ``zoo.data.ssm_systems.cartpole``
(random forces, total noise stds of Table 3.6 read in state order x, xdot, thetadot, theta; process std 1e-3). 20
training and 20 test trajectories of 20 steps (the thesis gives neither count nor length); 20 pseudo-points (kink), 50
(cart-pole). Test scores use the TRUE latents and TRUE observation noise (eq. 3.75); multi-step simulation runs over the
whole 20-step test trajectory from its true start state (horizon not stated) with the known controls. AR1-GP and NIGP
regress y_t on [y_{t-1}, u_{t-1}] (cart-pole: on the difference y_t - y_{t-1}) and their single noise is the "total"
one. Ranks (Table 3.7) are over the methods of the thesis's table that we ran (GP, NIGP, Direct, IS-EP-EM, PF,
PGAS-EM); a second column ranks all our methods. Timings: ``run_s`` excludes XLA compilation, reported apart; the
thesis ran Matlab with up to 6 threads, we run on this machine's CPU cores.
Deviations: PF learning uses ``pf-ml`` with the thesis's path-accumulated Fisher score (Algorithm 4) but Adam
(averaging the second half of the iterates) rather than the derivative-only quasi-Newton of Algorithm 5; the
cart-pole settings are reduced in the full run where stated in ``settings``; one run per method except PF on the
kink, run 5 times with different seeds for Fig 3.39 (the thesis's worst and best PF models); the tables average over
those repeats and the ranks count each repeat against the single runs of the others. VGPSSM-SVI is 1-D only (M11's
guide), so it has no cart-pole row.
Full-run results: mchutchon_learning_full_runs.md.
"""

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.stats import rankdata

import inference
from inference.applications import ar1
from inference.applications import gpssm_metrics as gm
from inference.core.program import observed_args
from inference.files.resumable import cached
from inference.files.tables import markdown_table, read_published, write_comparison, write_csv
from zoo import gp, gpssm, moments, nigp, ssm
from zoo.data import ssm_systems

DESCRIPTION = "McHutchon 2014 Tables 3.5-3.7 / Figs 3.37-3.40 (E3.9): GP-SSM learners on the kink and the cart-pole"
THESIS_RANKED = ("AR1-GP", "NIGP", "Direct", "IS-EP-EM", "PF", "PGAS-EM")
THESIS_METHODS = ("AR1-GP", "NIGP", "Direct", "ADS-EM", "IS-EP-EM", "PF", "PGAS-EM")
PMCMC_DRAWS = 20


class Learnt(NamedTuple):
    """One trained model: its transition for evaluation, learnt total noise std (D,), and timings (s)."""

    dynamics: gm.Dynamics
    total_std: np.ndarray
    run_s: float
    compile_s: float


class Problem(NamedTuple):
    name: str
    spec: Any
    dataset: Any
    mean: str


def settings(quick: bool) -> dict:
    """Table 3.4's settings (full) or a smoke-sized variant (quick: the kink only, 6/6 trajectories, AR1-GP, NIGP and
    Direct only -- the EM and particle learners' compilation alone takes minutes on 2 cores; their tests cover them)."""
    if quick:
        return {
            "systems": {"kink": {"num_train": 6, "num_test": 6}},
            "methods": {
                "AR1-GP": {},
                "NIGP": {},
                "Direct": {"num_steps": 30},
            },
            "repeats": {},
        }
    kink = {
        "AR1-GP": {},
        "NIGP": {},
        "Direct": {"num_steps": 750},
        "ADS-EM": {"num_steps": 20},
        "IS-EP-EM": {"num_samples": 10, "num_ep_iters": 4, "num_steps": 6},
        "PF": {"num_particles": 1000, "num_steps": 250, "score": "path"},  # thesis: 5000 particles
        "PGAS-EM": {"num_samples": 10, "num_steps": 20, "num_particles": 100},
        "PGAS-EM+GP": {"num_samples": 10, "num_steps": 20, "num_particles": 100, "pseudo_target_prior": "gp"},
        "PSAEM": {"num_samples": 10, "num_steps": 50, "num_particles": 100, "pseudo_target_prior": "gp"},
        "PMCMC": {"num_warmup": 500, "num_samples": 500, "num_particles": 50},
        "VGPSSM-SVI": {"num_steps": 60000, "learning_rate": 0.02},  # ELBO still rising at 20000
    }
    cartpole = {
        "AR1-GP": {},
        "NIGP": {},
        "Direct": {"num_steps": 350},
        "ADS-EM": {"num_steps": 3},
        "IS-EP-EM": {"num_samples": 50, "num_ep_iters": 4, "num_steps": 3},
        "PF": {"num_particles": 1000, "num_steps": 250, "score": "path"},  # thesis: 1000 steps
        "PGAS-EM": {"num_samples": 25, "num_steps": 60, "num_particles": 100},
        "PGAS-EM+GP": {"num_samples": 25, "num_steps": 60, "num_particles": 100, "pseudo_target_prior": "gp"},
        "PSAEM": {"num_samples": 10, "num_steps": 60, "num_particles": 100, "pseudo_target_prior": "gp"},
        "PMCMC": {"num_warmup": 300, "num_samples": 300, "num_particles": 50},
    }
    return {
        "systems": {"kink": {"num_train": 20, "num_test": 20}, "cartpole": {"num_train": 20, "num_test": 20}},
        "methods": kink,
        "methods_cartpole": cartpole,
        "repeats": {("kink", "PF"): 5},  # Fig 3.39: the spread of PF learning over seeds
    }


def make_problem(system: str, sizes: dict) -> Problem:
    if system == "kink":
        simulate = partial(ssm_systems.kink, **sizes)
        spec = gpssm.sparse_gpssm_spec("figure/kink", simulate, 1, num_pseudo=20)
        return Problem(system, spec, ar1.with_pseudo_inputs(spec, spec.simulate(jax.random.key(11))), "zero")
    simulate = partial(ssm_systems.cartpole, **sizes)
    m0, P0 = [0.0, 0.0, 0.0, np.pi], 0.01 * np.eye(4)
    spec = gpssm.sparse_gpssm_spec("figure/cartpole", simulate, 4, 1, mean="identity", num_pseudo=50, m0=m0, P0=P0)
    return Problem(system, spec, ar1.with_pseudo_inputs(spec, spec.simulate(jax.random.key(12))), "identity")


# ----------------------------------------------------------------------------------------------------------------
# Learners: each returns a Learnt


def _timed(fn: Callable, *args):
    start = time.perf_counter()
    out = fn(*args)
    jax.block_until_ready(out)
    return out, time.perf_counter() - start


def _regression_data(problem: Problem):
    X, Y = gpssm.observed_transitions(problem.dataset.observed)
    A = np.asarray(moments.identity_mean(Y.shape[1], X.shape[1] - Y.shape[1]).A) if problem.mean == "identity" else None
    return X, Y, A


def train_ar1(problem: Problem, options: dict, seed: int) -> Learnt:
    fit, run_s = _timed(ar1.fit_ar1_gp, problem.dataset.observed, problem.mean)
    X, Y, _ = _regression_data(problem)
    R = Y - X @ np.asarray(fit.mean_A).T - np.asarray(fit.mean_b)
    predictor = moments.exact_gp_predictor(X, R, fit.signal_var, fit.lengthscale, fit.noise_var)
    dynamics = gm.Dynamics(predictor, moments.LinearMean(fit.mean_A, fit.mean_b), fit.noise_var)
    return Learnt(dynamics, np.sqrt(np.asarray(fit.noise_var)), run_s, float("nan"))


def train_nigp(problem: Problem, options: dict, seed: int) -> Learnt:
    """NIGPm (M8) per output on [y_{t-1}, u_{t-1}] -> y_t (or its increment); evaluated as a GP with the NIGP
    training covariance (K + sigma_out^2 I + diag Sigma~) and sigma_out^2 as the transition noise."""
    X, Y, A = _regression_data(problem)
    R = Y if A is None else Y - X @ A.T
    start = time.perf_counter()
    runs = [inference.run("gp/nigp", {"X": X, "y": R[:, e]}, engine="nigp", mode="nigpm") for e in range(R.shape[1])]
    fits = [nigp.params_from(idata.point_estimates) for idata in runs]
    run_s = time.perf_counter() - start

    def one_output(params, correction, r):
        K = params.kernel(jnp.asarray(X)) + jnp.diag(params.noise + correction)
        L = gp.cholesky(K)
        return jax.scipy.linalg.cho_solve((L, True), jnp.asarray(r)), L

    parts = [one_output(p, c, R[:, e]) for e, (p, c) in enumerate(fits)]
    N = X.shape[0]
    predictor = moments.SEPredictor(
        jnp.broadcast_to(jnp.asarray(X), (len(fits), *X.shape)),
        jnp.stack([b for b, _ in parts]),
        jnp.stack([L for _, L in parts]),
        jnp.zeros((len(fits), N, 0)),
        jnp.stack([p.variance for p, _ in fits]),
        jnp.stack([p.lengthscale for p, _ in fits]),
    )
    D = Y.shape[1]
    mean_A = jnp.zeros((D, X.shape[1])) if A is None else jnp.asarray(A)
    noise = jnp.stack([p.noise for p, _ in fits])
    dynamics = gm.Dynamics(predictor, moments.LinearMean(mean_A, jnp.zeros(D)), noise)
    return Learnt(dynamics, np.sqrt(np.asarray(noise)), run_s, float("nan"))


def _engine_params(idata, names) -> dict:
    return {k: jnp.asarray(idata.point_estimates[k].values[0]) for k in names}


def _gpssm_of(problem: Problem, params: dict):
    view = problem.spec.views["state_space"]
    return ssm.bind(view, params, observed_args(problem.dataset))["gpssm"]


PARAM_NAMES = ("lengthscale", "signal_var", "process_var", "obs_var", "pseudo_targets")


def _learnt_from(problem: Problem, params: dict, idata) -> Learnt:
    g = _gpssm_of(problem, params)
    total = np.sqrt(np.asarray(g.process_var) + np.asarray(g.obs_var))
    attrs = idata.posterior.attrs
    return Learnt(gm.dynamics_of(g), total, float(attrs["run_s"]), float(attrs["compile_s"]))


def engine_learner(engine: str, needs_start: bool = False):
    """A learner that runs a point-estimating engine on the sparse GP-SSM."""

    def train(problem: Problem, options: dict, seed: int) -> Learnt:
        extra = {}
        if needs_start:
            observed = problem.dataset.observed
            extra["params"] = ar1.initial_params(problem.spec.views["gp_ssm"], observed)
        idata = inference.run(problem.spec, problem.dataset, engine=engine, seed=seed, **options, **extra)
        return _learnt_from(problem, _engine_params(idata, PARAM_NAMES), idata)

    return train


def train_pmcmc(problem: Problem, options: dict, seed: int) -> Learnt:
    """Particle Gibbs from the AR1-GP start; the posterior is summarised by PMCMC_DRAWS thinned draws."""
    start = ar1.initial_params(problem.spec.views["gp_ssm"], problem.dataset.observed)
    idata = inference.run(
        problem.spec, problem.dataset, engine="pmcmc", seed=seed, num_chains=1, params=start, **options
    )
    S = idata.posterior.sizes["draw"]
    keep = np.linspace(0, S - 1, min(PMCMC_DRAWS, S)).astype(int)
    draws = [{k: jnp.asarray(idata.posterior[k].values[0, i]) for k in PARAM_NAMES} for i in keep]
    gs = [_gpssm_of(problem, d) for d in draws]
    total = np.mean([np.sqrt(np.asarray(g.process_var) + np.asarray(g.obs_var)) for g in gs], axis=0)
    attrs = idata.posterior.attrs
    dynamics = gm.stack_dynamics([gm.dynamics_of(g) for g in gs])
    return Learnt(dynamics, total, float(attrs["run_s"]), float(attrs["compile_s"]))


def train_variational(problem: Problem, options: dict, seed: int) -> Learnt:
    """The variational GP-SSM (M11, sec. 3.4.4) by SVI with its Markov-Gaussian guide, on the same data and
    pseudo-inputs; evaluated as the moment-matched mixture of PMCMC_DRAWS draws of F~ from q(F~) (the hyperparameters
    are point masses). 1-D zero-mean systems only (the thesis tried it on the kink)."""
    spec = gpssm.variational_spec(f"figure/{problem.name}-variational", problem.spec.simulate)
    observed = {k: problem.dataset.observed[k] for k in ("y", "lengths", "pseudo_inputs")}
    idata = inference.run(spec, observed, engine="svi", guide="model", seed=seed, num_samples=PMCMC_DRAWS, **options)
    post = idata.posterior
    hyper = {k: jnp.asarray(post[k].values[0, 0]) for k in ("lengthscale", "signal_var", "process_var", "obs_var")}
    D = hyper["signal_var"].shape[0]

    def dynamics_at(F):
        g = gpssm.variational_gpssm_params(observed["pseudo_inputs"], jnp.asarray(F), hyper, jnp.zeros(D), jnp.eye(D))
        return gm.dynamics_of(g)

    dynamics = gm.stack_dynamics([dynamics_at(F) for F in post["pseudo_targets"].values[0]])
    total = np.sqrt(np.asarray(hyper["process_var"]) + np.asarray(hyper["obs_var"]))
    return Learnt(dynamics, total, float(post.attrs["run_s"]), float(post.attrs["compile_s"]))


LEARNERS: dict[str, Callable] = {
    "AR1-GP": train_ar1,
    "NIGP": train_nigp,
    "Direct": engine_learner("direct"),
    "ADS-EM": engine_learner("analytic-em"),
    "IS-EP-EM": engine_learner("is-ep-em"),
    "PF": engine_learner("pf-ml", needs_start=True),
    "PGAS-EM": engine_learner("pgas-em"),
    "PGAS-EM+GP": engine_learner("pgas-em"),
    "PSAEM": engine_learner("psaem"),
    "PMCMC": train_pmcmc,
    "VGPSSM-SVI": train_variational,
}


def available(methods: dict) -> dict:
    """Drop methods whose engine is not installed (IS-EP-EM lives in its own engine module)."""
    engines = set(inference.engine_names())
    return {m: o for m, o in methods.items() if m != "IS-EP-EM" or "is-ep-em" in engines}


# ----------------------------------------------------------------------------------------------------------------
# Evaluation


def evaluate(problem: Problem, learnt: Learnt) -> dict:
    truth, test = problem.dataset.truth, problem.dataset.test
    u = test.get("u")
    states, lengths, obs_var = truth["test_states"], test["lengths"], truth["obs_var"]
    predict = gm.point_predict(learnt.dynamics)
    return {
        "one_step": gm.one_step_scores(predict, states, lengths, u, obs_var),
        "multi_step": gm.multi_step_scores(learnt.dynamics, states, lengths, u, obs_var),
        "noise_error": gm.noise_percent_error(learnt.total_std, ssm_systems.total_noise_std(truth)),
    }


def run_once(problem: Problem, method: str, options: dict, repeat: int) -> dict:
    """Train ``method`` with seed 100 + repeat and score it: one row of the tables."""
    print(f"[{problem.name}] {method} (repeat {repeat})", flush=True)
    learnt = LEARNERS[method](problem, options, 100 + repeat)
    return {"system": problem.name, "method": method, "repeat": repeat, "learnt": learnt, **evaluate(problem, learnt)}


def rank_table(rows: list[dict], methods: tuple[str, ...]) -> dict[str, float]:
    """Average rank over test trajectories and repeats of multi-step scores (1 = best), within ``methods``."""
    by_method = {}
    for r in rows:
        if r["method"] in methods:
            by_method.setdefault(r["method"], []).append(r["multi_step"])
    if not by_method:
        return {}
    reps = max(len(v) for v in by_method.values())
    ranks = []
    for rep in range(reps):  # repeat r of each stochastic method against the deterministic ones
        scores = {m: v[min(rep, len(v) - 1)] for m, v in by_method.items()}
        ranks.append(gm.ranks(scores))
    return {m: float(np.mean([r[m] for r in ranks])) for m in by_method}


# ----------------------------------------------------------------------------------------------------------------
# Tables, claims, figures


def summary_rows(rows: list[dict]) -> list[dict]:
    out = []
    for system in dict.fromkeys(r["system"] for r in rows):
        mine = [r for r in rows if r["system"] == system]
        thesis_ranks = rank_table(mine, THESIS_RANKED)
        all_ranks = rank_table(mine, tuple(dict.fromkeys(r["method"] for r in mine)))
        for method in dict.fromkeys(r["method"] for r in mine):
            runs = [r for r in mine if r["method"] == method]
            out.append(
                {
                    "system": system,
                    "method": method,
                    "train_run_min": np.mean([r["learnt"].run_s for r in runs]) / 60,
                    "train_compile_min": np.mean([r["learnt"].compile_s for r in runs]) / 60,
                    "noise_error_pct": " ".join(f"{e:.3g}" for e in np.mean([r["noise_error"] for r in runs], 0)),
                    "one_step_nlp": float(np.mean([r["one_step"].mean() for r in runs])),
                    "multi_step_nlp": float(np.mean([r["multi_step"].mean() for r in runs])),
                    "rank_thesis_set": thesis_ranks.get(method, float("nan")),
                    "rank_all": all_ranks[method],
                }
            )
    return out


def comparison(summary: list[dict]) -> list[dict]:
    published = {(p["system"], p["method"], p["quantity"]): p["published"] for p in read_published(__file__)}
    ours = {(s["system"], s["method"]): s for s in summary}
    table = []
    for (system, method, quantity), value in published.items():
        mine = ours.get((system, method))
        field = {"train_min": "train_run_min", "noise_error_pct": "noise_error_pct", "rank": "rank_thesis_set"}
        table.append(
            {
                "system": system,
                "method": method,
                "quantity": quantity,
                "thesis": value,
                "ours": "not run" if mine is None else mine[field[quantity]],
            }
        )
    return table


def claims(summary: list[dict]) -> list[dict]:
    """The thesis's qualitative conclusions (sec. 3.9-3.10), checked one by one on our numbers."""
    rows = []
    for system in dict.fromkeys(s["system"] for s in summary):
        by = {s["method"]: s for s in summary if s["system"] == system}
        rows += [{"system": system, **claim} for claim in system_claims(by)]
    return rows


def _noise_errors(by: dict, method: str) -> np.ndarray | None:
    return np.array([float(v) for v in by[method]["noise_error_pct"].split()]) if method in by else None


def system_claims(by: dict[str, dict]) -> list[dict]:
    """Claims on one system's summary rows (by method)."""
    out = []

    def add(claim, agree, numbers):
        out.append({"claim": claim, "ours": numbers, "agree": agree})

    noise_claims = (
        ("AR1-GP", "AR1-GP overestimates the noise (thesis: by 75-540 %)", lambda e: np.all(e > 0)),
        ("PGAS-EM", "PGAS-EM noise estimates within 40 %", lambda e: np.all(np.abs(e) < 40)),
        ("Direct", "Direct tends to underestimate the noise", lambda e: np.mean(e) < 0),
        ("ADS-EM", "analytic EM (ADS-EM) overestimates the noise", lambda e: np.mean(e) > 0),
        (
            "VGPSSM-SVI",
            "the variational GP-SSM under-fits (sec. 3.10), i.e. overestimates the noise",
            lambda e: np.all(e > 0),
        ),
    )
    for method, claim, holds in noise_claims:
        if (e := _noise_errors(by, method)) is not None:
            add(claim, bool(holds(e)), f"{method} errors {np.round(e, 1)} %")
    ssm_methods = [m for m in by if m not in ("AR1-GP", "NIGP")]
    if "AR1-GP" in by and ssm_methods:
        others = [m for m in by if m in THESIS_METHODS and m != "AR1-GP"]
        worse = [m for m in others if by[m]["one_step_nlp"] > by["AR1-GP"]["one_step_nlp"]]
        add("the GP (AR1-GP) is beaten in one-step NLP by every other method", not worse, f"not beaten by: {worse}")
    if "Direct" in by and len(ssm_methods) > 1:
        best = min(ssm_methods, key=lambda m: by[m]["one_step_nlp"])
        nlps = {m: round(by[m]["one_step_nlp"], 3) for m in ssm_methods}
        add("Direct gives the best one-step NLP among the GP-SSMs", best == "Direct", f"one-step NLP {nlps}")
        ranked = {m: by[m]["rank_thesis_set"] for m in by if np.isfinite(by[m]["rank_thesis_set"])}
        best_rank = min(ranked, key=ranked.get)
        numbers = f"ranks { ({m: round(v, 2) for m, v in ranked.items()}) }"
        add("Direct has the best average rank in multi-step simulation", best_rank == "Direct", numbers)
    return out


def transition_curve(learnt: Learnt, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A learnt 1-D transition's mean and sd (incl. noise) on a grid (G,) -> (G,), (G,)."""
    predict = jax.jit(jax.vmap(gm.point_predict(learnt.dynamics), in_axes=(0, None)))
    mean, cov = predict(jnp.asarray(grid[:, None]), jnp.zeros(0))
    return np.asarray(mean[:, 0]), np.sqrt(np.asarray(cov[:, 0, 0]))


def transition_curves(rows: list[dict], grid: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Learnt 1-D transition (mean, sd incl. noise) on a grid, first repeat of each method (Fig 3.37)."""
    curves = {}
    for r in rows:
        if r["system"] == "kink" and r["method"] not in curves:
            curves[r["method"]] = transition_curve(r["learnt"], grid)
    return curves


def pf_spread(rows: list[dict]) -> dict | None:
    """Fig 3.39: the worst and best PF models on the kink by one-step log test probability (-NLP, the thesis's
    "log test probability"), and Direct's; None without two PF repeats."""
    pf = sorted((r for r in rows if r["system"] == "kink" and r["method"] == "PF"), key=lambda r: -r["one_step"].mean())
    direct = [r for r in rows if r["system"] == "kink" and r["method"] == "Direct"]
    if len(pf) < 2 or not direct:
        return None
    return {"worst PF": pf[0], "best PF": pf[-1], "Direct": direct[0], "all PF": pf}


def tail_error(curves: dict, grid: np.ndarray) -> dict[str, float]:
    """RMSE of the learnt mean against the true kink on its right tail, x in [4, 6] (thesis: only PF fits it)."""
    tail = (grid >= 4.0) & (grid <= 6.0)
    truth = np.asarray(ssm_systems.kink_function(grid))
    return {m: float(np.sqrt(np.mean((mean[tail] - truth[tail]) ** 2))) for m, (mean, _) in curves.items()}


def main(quick: bool, out: Path) -> None:
    """Run every (system, method, repeat), then report on all of them. The full run keeps each finished one in
    ``out/rows`` and resumes from there (``cached_row``); the quick run always recomputes. The wall time reported is
    the sum of the per-run walls, so a resumed run reports the same as an uninterrupted one."""
    cfg = settings(quick)
    rows, wall_s = [], 0.0
    for system, sizes in cfg["systems"].items():
        methods = cfg["methods"] if system == "kink" else cfg["methods_cartpole"]
        problem = make_problem(system, sizes)
        for method, options in available(methods).items():
            for repeat in range(cfg["repeats"].get((system, method), 1)):
                row, row_wall = cached_row(None if quick else out / "rows", problem, sizes, method, options, repeat)
                rows.append(row)
                wall_s += row_wall
    report(out, rows, make_problem("kink", cfg["systems"]["kink"]), wall_s)


def cached_row(folder: Path | None, problem: Problem, sizes: dict, method: str, options: dict, repeat: int):
    """``run_once``'s row and its wall time (s), kept in ``folder`` (``inference.files.resumable.cached``) under the
    system, method, repeat and a hash of the sizes and options, so an interrupted full run resumes where it stopped."""
    key = (problem.name, sorted(sizes.items()), method, sorted(options.items()))
    return cached(folder, f"{problem.name}-{method}-{repeat}", key, lambda: run_once(problem, method, options, repeat))


def report(out: Path, rows: list[dict], kink: Problem, wall_s: float) -> None:
    """Write the CSVs, figures and the comparison from the rows of ``run_once``."""
    summary = summary_rows(rows)
    write_csv(out / "learning_summary.csv", summary)
    per_trajectory = [
        {"system": r["system"], "method": r["method"], "repeat": r["repeat"], "trajectory": i, "one": a, "multi": m}
        for r in rows
        for i, (a, m) in enumerate(zip(r["one_step"], r["multi_step"], strict=True))
    ]
    write_csv(out / "per_trajectory.csv", per_trajectory)
    grid = np.linspace(-3.0, 7.0, 201)
    curves = transition_curves(rows, grid) if any(r["system"] == "kink" for r in rows) else {}
    checked = claims(summary)
    if "PF" in curves:
        tails = tail_error(curves, grid)
        best = min(tails, key=tails.get)
        checked.append(
            {
                "system": "kink",
                "claim": "PF is the only method that fits the right-hand tail of the kink",
                "ours": f"tail RMSE of the learnt mean on [4, 6]: { {m: round(v, 2) for m, v in tails.items()} }",
                "agree": best == "PF",
            }
        )
    spread = pf_spread(rows)
    if spread:
        score = {name: -float(spread[name]["one_step"].mean()) for name in ("worst PF", "best PF", "Direct")}
        checked.append(
            {
                "system": "kink",
                "claim": "PF learning varies between runs: its worst/best kink models score -1.06 / -0.638 log test "
                "probability, Direct -0.684 (Fig 3.39)",
                "ours": f"{len(spread['all PF'])} PF runs: worst {score['worst PF']:.3f}, best {score['best PF']:.3f}; "
                f"Direct {score['Direct']:.3f}",
                "agree": score["worst PF"] < score["Direct"] < score["best PF"],
            }
        )
    write_csv(out / "claims.csv", checked)
    plot(out, rows, curves, grid, problem_data=kink)
    if spread:
        plot_pf_spread(out, spread, grid, kink)
    preamble = __doc__ + f"\nWall time of this run: {wall_s / 60:.1f} min.\n\n" + _markdown(checked)
    print(write_comparison(out, comparison(summary), preamble))


def _markdown(checked: list[dict]) -> str:
    return "Qualitative claims, checked:\n\n" + markdown_table(checked) if checked else ""


def plot_pf_spread(out: Path, spread: dict, grid: np.ndarray, problem_data: Problem) -> None:
    """Fig 3.39: the worst and best PF models and Direct on the kink, with their log test probabilities."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    thesis = {"worst PF": -1.06, "best PF": -0.638, "Direct": -0.684}
    X, Y = gpssm.observed_transitions(problem_data.dataset.observed)
    truth = np.asarray(ssm_systems.kink_function(grid))
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.4), sharey=True)
    for ax, name in zip(axes, thesis, strict=True):
        mean, sd = transition_curve(spread[name]["learnt"], grid)
        ax.plot(grid, truth, "g", lw=1)
        ax.fill_between(grid, mean - 2 * sd, mean + 2 * sd, color="r", alpha=0.2)
        ax.plot(grid, mean, "r", lw=1)
        ax.plot(X[:, 0], Y[:, 0], "b+", ms=3, alpha=0.5)
        score = -float(spread[name]["one_step"].mean())
        ax.set_title(f"{name}: {score:.3f} (thesis {thesis[name]})", fontsize=9)
        ax.set_ylim(-8.0, 8.0)
        ax.set_xlabel("x_{t-1}")
    axes[0].set_ylabel("x_t")
    fig.tight_layout()
    fig.savefig(out / "fig_3_39_pf_spread.png", dpi=110)
    plt.close(fig)


def plot(out: Path, rows: list[dict], curves: dict, grid: np.ndarray, problem_data: Problem) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Fig 3.37: learnt 1-D transitions
    if curves:
        X, Y = gpssm.observed_transitions(problem_data.dataset.observed)
        n = len(curves)
        fig, axes = plt.subplots(2, (n + 1) // 2, figsize=(3.2 * ((n + 1) // 2), 6), sharex=True, sharey=True)
        truth = np.asarray(ssm_systems.kink_function(grid))
        true_sd = np.sqrt(ssm_systems.KINK_PROCESS_VAR)
        for ax, (method, (mean, sd)) in zip(axes.ravel(), curves.items(), strict=False):
            ax.fill_between(grid, truth - 2 * true_sd, truth + 2 * true_sd, color="g", alpha=0.2)
            ax.plot(grid, truth, "g", lw=1)
            ax.fill_between(grid, mean - 2 * sd, mean + 2 * sd, color="r", alpha=0.2)
            ax.plot(grid, mean, "r", lw=1)
            ax.plot(X[:, 0], Y[:, 0], "b+", ms=3, alpha=0.5)
            ax.set_title(method, fontsize=9)
            ax.set_ylim(-8.0, 8.0)
        fig.supxlabel("x_{t-1}")
        fig.supylabel("x_t")
        fig.tight_layout()
        fig.savefig(out / "fig_3_37_transitions.png", dpi=110)
        plt.close(fig)
    systems = list(dict.fromkeys(r["system"] for r in rows))
    # Fig 3.38: one-step NLP per test trajectory, minus the AR1-GP's (lower is better)
    fig, axes = plt.subplots(1, len(systems), figsize=(6 * len(systems), 3.8), squeeze=False)
    for ax, system in zip(axes[0], systems, strict=True):
        mine = [r for r in rows if r["system"] == system]
        base = next(r["one_step"] for r in mine if r["method"] == "AR1-GP")
        methods = [m for m in dict.fromkeys(r["method"] for r in mine) if m != "AR1-GP"]
        data = [np.concatenate([r["one_step"] - base for r in mine if r["method"] == m]) for m in methods]
        ax.boxplot(data, tick_labels=methods)
        ax.axhline(0.0, color="k", lw=0.8)
        ax.set_title(f"{system}: one-step NLP minus AR1-GP's, per test trajectory", fontsize=9)
        ax.tick_params(axis="x", labelsize=7, rotation=30)
    fig.tight_layout()
    fig.savefig(out / "fig_3_38_one_step.png", dpi=110)
    plt.close(fig)
    # Fig 3.40: rank frequencies in multi-step simulation (circle area = frequency)
    fig, axes = plt.subplots(1, len(systems), figsize=(6 * len(systems), 3.8), squeeze=False)
    for ax, system in zip(axes[0], systems, strict=True):
        mine = [r for r in rows if r["system"] == system]
        methods = list(dict.fromkeys(r["method"] for r in mine))
        table = np.stack([next(r["multi_step"] for r in mine if r["method"] == m) for m in methods], 1)
        ranks = np.apply_along_axis(rankdata, 1, np.where(np.isnan(table), np.inf, table))
        for j in range(len(methods)):
            counts = np.bincount(np.round(ranks[:, j]).astype(int), minlength=len(methods) + 1)[1:]
            ax.scatter(np.arange(1, len(methods) + 1), np.full(len(methods), j), s=400 * counts / len(ranks), c="C0")
        ax.set_yticks(range(len(methods)), methods, fontsize=7)
        ax.set_xlabel("rank in multi-step simulation (1 = best)")
        ax.set_title(system, fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "fig_3_40_ranks.png", dpi=110)
    plt.close(fig)
