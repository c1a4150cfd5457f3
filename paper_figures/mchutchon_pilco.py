"""McHutchon (2014) Figs 4.10-4.12 and 4.8: PILCO's policy evaluation by moment matching against particles and the
true ODE, and the learning curves of the control loop with the AR-GP and the direct-method GP-SSM.

Figs 4.10-4.11 (cart-pole balancing, docs/sources/mchutchon.md#pilco-figures): a dynamics model is learned from
random roll-outs starting near upright; for an untrained policy (PILCO's random initialisation) and a trained one
(L-BFGS on the moment-matched cost of that model) the pendulum angle's distribution over the horizon is predicted by
moment matching (a Gaussian) and by 1000 particles through the same model, and observed on the true ODE from 30
start states. Fig 4.12: the predicted total cost along the steepest-descent direction of the moment-matched cost at
the untrained policy, by moment matching, by particles (1000, frozen random numbers) and on the true ODE (30 starts,
frozen). Fig 4.8 (full runs only): the control loop's true total cost per trial against the policy iteration, AR-GP
against GP-SSM (inference.applications.pilco.control_loop), and the fraction of test trials that swing up
(docs/sources/mchutchon.md#pilco-success). The same figure and tables from runs of benchmarks/pilco_learning_run.py
(made in resumable chunks, one pinned core each): ``python -m paper_figures.mchutchon_pilco RUN.jsonl ... --out DIR``.
"""

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from inference.applications import pilco
from inference.applications.pilco import plant, policies
from inference.applications.pilco import trajectory as tr
from inference.files.tables import write_comparison, write_csv

MAX_STEP = 0.3  # Fig 4.12: length of the descent line, in units of the (unit-norm) direction
FACTORS = (1.0, 2.0, 5.0, 10.0)  # noise variance factors (docs/sources/mchutchon.md#pilco-figures)

DESCRIPTION = "McHutchon 2014 Figs 4.10-4.12: PILCO moment matching vs particles vs the true ODE (cart-pole)"


def settings(quick: bool) -> dict:
    if quick:
        return dict(horizon=20, num_random=4, ar_steps=100, policy_steps=20, particles=1000, starts=30, alphas=13)
    return dict(horizon=20, num_random=8, ar_steps=150, policy_steps=100, particles=1000, starts=30, alphas=41)


def balancing_task(horizon: int) -> plant.SwingUp:
    """Fig 4.10-4.12's task: start near upright (theta = 0), N(0, 0.1^2 I); the swing-up's cost and noise."""
    return plant.SwingUp(horizon=horizon, m0=np.zeros(4), S0=0.1**2 * np.eye(4))


def true_costs(task, policy, starts: int, seed: int):
    """Angles (starts, T+1) and total costs (starts,) of roll-outs on the true ODE with frozen keys."""
    keys = jax.random.split(jax.random.PRNGKey(seed), starts)
    trials = [pilco.rollout(task, policy, k) for k in keys]
    return np.stack([np.asarray(t.states[:, 3]) for t in trials]), np.array([pilco.trial_cost(task, t) for t in trials])


def angle_rows(label, task, dyn, policy, noise, cfg, seed):
    """Mean and sd of the pendulum angle at every step: moment matching, particles, true ODE."""
    m0, S0 = jnp.asarray(task.m0), jnp.asarray(task.S0)
    means, covs, _ = tr.mm_trajectory(dyn, policy, task.u_max, task.cost, m0, S0, task.horizon)
    xs, _ = tr.particle_trajectory(dyn, policy, task.u_max, task.cost, m0, S0, noise)
    angles, _ = true_costs(task, policy, cfg["starts"], seed)
    rows = []
    for t in range(task.horizon):
        p, a = np.asarray(xs[t, :, 3]), angles[:, t + 1]
        rows.append(
            {
                "policy": label,
                "step": t + 1,
                "mm_mean": float(means[t, 3]),
                "mm_sd": float(np.sqrt(covs[t, 3, 3])),
                "particles_mean": float(p.mean()),
                "particles_sd": float(p.std()),
                "true_mean": float(a.mean()),
                "true_sd": float(a.std()),
                "true_fallen_fraction": float(np.mean(np.abs(a) > np.pi / 2)),
            }
        )
    return rows, (np.asarray(means[:, 3]), np.asarray(np.sqrt(covs[:, 3, 3])), np.asarray(xs[:, :, 3]), angles)


def descent_rows(task, dyn, policy, noise, cfg, seed):
    """Total cost along the steepest-descent direction of the moment-matched cost (Fig 4.12)."""
    m0, S0 = jnp.asarray(task.m0), jnp.asarray(task.S0)
    flat, unravel = jax.flatten_util.ravel_pytree(policy)

    def mm(f):
        return tr.expected_total_cost(dyn, unravel(f), task.u_max, task.cost, m0, S0, task.horizon)

    grad = jax.grad(mm)(flat)
    direction = -grad / jnp.linalg.norm(grad)
    mm_j = jax.jit(mm)
    pc = jax.jit(lambda f: tr.particle_total_cost(dyn, unravel(f), task.u_max, task.cost, m0, S0, noise))
    rows = []
    for alpha in np.linspace(0.0, MAX_STEP, cfg["alphas"]):
        f = flat + alpha * direction
        _, true = true_costs(task, unravel(f), cfg["starts"], seed)
        rows.append(
            {"alpha": float(alpha), "mm": float(mm_j(f)), "particles": float(pc(f)), "true_ode": float(true.mean())}
        )
    return rows


def roughness(values) -> int:
    """Number of interior local minima of a curve (the thesis's "jagged" against "smooth")."""
    v = np.asarray(values)
    return int(np.sum((v[1:-1] < v[:-2]) & (v[1:-1] < v[2:])))


def plot(out: Path, traces: dict, descent: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for ax, (label, (mm_mean, mm_sd, particles, angles)) in zip(axes[:2], traces.items(), strict=True):
        steps = np.arange(1, len(mm_mean) + 1)
        ax.fill_between(steps, mm_mean - 2 * mm_sd, mm_mean + 2 * mm_sd, color="C0", alpha=0.3, label="MM +-2 sd")
        lo, hi = np.percentile(particles, [2.5, 97.5], axis=1)
        ax.fill_between(steps, lo, hi, color="C1", alpha=0.3, label="particles 95%")
        ax.plot(np.arange(angles.shape[1]), angles.T, color="k", lw=0.5, alpha=0.5)
        ax.set(title=f"{label} policy", xlabel="step", ylabel="pendulum angle (rad)")
        ax.legend(loc="upper left", fontsize=8)
    alpha = [r["alpha"] for r in descent]
    for key, color in (("mm", "C0"), ("particles", "C1"), ("true_ode", "k")):
        axes[2].plot(alpha, [r[key] for r in descent], color=color, label=key)
    axes[2].set(title="total cost along steepest descent", xlabel="step length", ylabel="total cost")
    axes[2].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "mchutchon_pilco.png", dpi=110)
    plt.close(fig)


def loop_rows(model: str, factor: float, seed: int, result: pilco.LoopResult) -> list[dict]:
    return [
        {
            "model": model,
            "noise_factor": factor,
            "seed": seed,
            "iteration": i + 1,
            "predicted": result.predicted[i],
            "trial_cost": result.trial_costs[i],
            "test_cost_mean": float(np.mean(result.test_costs[i])),
            "test_success": result.success[i],
        }
        for i in range(len(result.predicted))
    ]


def learning_curves(out: Path, factors, seeds, models=pilco.MODELS, **loop_options) -> list[dict]:
    """Fig 4.8: ``control_loop`` per model, noise factor and seed; loop.csv is rewritten after every run, so a run
    cut short keeps what finished."""
    rows: list[dict] = []
    for factor in factors:
        for model in models:
            for seed in seeds:
                task = plant.SwingUp(noise_factor=factor)
                result = pilco.control_loop(task, model=model, seed=seed, **loop_options)
                rows += loop_rows(model, factor, seed, result)
                write_csv(out / "loop.csv", rows)
    return rows


def final_rows(rows: list[dict], model: str, factor: float) -> tuple[int, list[dict]]:
    """(the last iteration reached, the rows at it) of ``model``'s runs at noise ``factor``; (0, []) if none."""
    runs = [r for r in rows if r["model"] == model and r["noise_factor"] == factor]
    last = max((r["iteration"] for r in runs), default=0)
    return last, [r for r in runs if r["iteration"] == last]


def success_table(rows: list[dict], threshold: float = 0.5) -> list[dict]:
    """Per model and noise factor: the fraction of seeds whose final policy swings up in at least ``threshold`` of
    its test trials (docs/sources/mchutchon.md#pilco-success), and the final mean test cost."""
    table = []
    keys = sorted({(r["noise_factor"], r["model"]) for r in rows})
    for factor, model in keys:
        last, final = final_rows(rows, model, factor)
        table.append(
            {
                "quantity": f"Fig 4.8, noise x{factor}, {model}: seeds swung up after {last} iterations",
                "ours": f"{sum(r['test_success'] >= threshold for r in final)}/{len(final)} "
                f"(final test cost {np.mean([r['test_cost_mean'] for r in final]):.1f})",
                "published": "GP-SSM significantly better than the AR-GP on the cart-pole",
            }
        )
    return table


def model_difference(rows: list[dict], threshold: float = 0.5) -> list[dict]:
    """Per noise factor run by both models: Fisher's exact test (two-sided) of the AR-GP's against the GP-SSM's count
    of seeds swung up after the last iteration, the thesis's "significantly better" made a number."""
    table = []
    for factor in sorted({r["noise_factor"] for r in rows}):
        counts = {}
        for model in pilco.MODELS:
            if final := [r["test_success"] >= threshold for r in final_rows(rows, model, factor)[1]]:
                counts[model] = (sum(final), len(final) - sum(final))
        if len(counts) == len(pilco.MODELS):
            p_value = stats.fisher_exact([counts[m] for m in pilco.MODELS]).pvalue
            table.append(
                {
                    "quantity": f"Fig 4.8, noise x{factor}: {' vs '.join(pilco.MODELS)} seeds swung up, Fisher exact p",
                    "ours": f"{p_value:.2g}",
                    "published": "significant (p not given)",
                }
            )
    return table


def read_runs(paths: list[Path]) -> list[dict]:
    """``loop_rows``'s rows from the JSON-lines files of ``benchmarks/pilco_learning_run.py`` (one line per
    iteration, one file per model, noise factor and seed)."""
    missing = [str(path) for path in paths if not Path(path).is_file()]
    if missing:
        raise FileNotFoundError(f"no such run file: {', '.join(missing)}")
    keys = ("model", "noise_factor", "seed", "iteration", "predicted", "trial_cost", "test_cost_mean", "test_success")
    rows, runs = [], {}
    for path in paths:
        records = [json.loads(line) for line in Path(path).read_text().splitlines()]
        for run in {(r["model"], r["noise_factor"], r["seed"]) for r in records}:
            if run in runs:
                raise ValueError(f"{path} and {runs[run]} both hold {run} (model, noise factor, seed)")
            runs[run] = path
        rows += [{key: record[key] for key in keys} for record in records]
    return rows


def plot_curves(out: Path, rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    factors = sorted({r["noise_factor"] for r in rows})
    fig, axes = plt.subplots(1, len(factors), figsize=(4 * len(factors), 3.5), squeeze=False, sharey=True)
    for ax, factor in zip(axes[0], factors, strict=True):
        for model, color in (("ar-gp", "C3"), ("gp-ssm", "C2")):
            runs = [r for r in rows if r["model"] == model and r["noise_factor"] == factor]
            if not runs:
                continue
            its = sorted({r["iteration"] for r in runs})
            costs_ = [[r["test_cost_mean"] for r in runs if r["iteration"] == i] for i in its]
            lo, hi = (np.array([np.percentile(c, q) for c in costs_]) for q in (10, 90))
            seeds = len({r["seed"] for r in runs})
            ax.plot(its, [np.mean(c) for c in costs_], color=color, label=f"{model}: mean, 10-90 % ({seeds} seeds)")
            ax.fill_between(its, lo, hi, color=color, alpha=0.25)
        ax.set(title=f"noise variance x{factor:g}", xlabel="policy iteration", ylabel="total loss per trial")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "mchutchon_pilco_fig4_8.png", dpi=110)
    plt.close(fig)


def main(quick: bool, out: Path) -> None:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cfg = settings(quick)
    task = balancing_task(cfg["horizon"])
    key = jax.random.PRNGKey(0)
    trials = []
    for k in jax.random.split(key, cfg["num_random"]):
        trials.append(pilco.rollout(task, None, k, len(trials), trials))
    dyn = pilco.learn_dynamics("ar-gp", plant.trials_as_data(trials), num_steps=cfg["ar_steps"])
    untrained = policies.init_rbf(jax.random.PRNGKey(1), jnp.asarray(task.m0), jnp.asarray(task.S0))
    trained = pilco.optimise_policy(dyn, untrained, task, max_steps=cfg["policy_steps"]).policy
    noise = tr.particle_noise(jax.random.PRNGKey(2), cfg["particles"], task.horizon, 4)
    rows, traces = [], {}
    for label, policy in (("untrained", untrained), ("trained", trained)):
        r, traces[label] = angle_rows(label, task, dyn, policy, noise, cfg, seed=3)
        rows += r
    descent = descent_rows(task, dyn, untrained, noise, cfg, seed=3)
    write_csv(out / "angles.csv", rows)
    write_csv(out / "descent.csv", descent)
    plot(out, traces, descent)
    last = {r["policy"]: r for r in rows if r["step"] == task.horizon}
    table = [
        {
            "quantity": f"{p} policy: angle at step {task.horizon}, true fraction fallen (|theta| > pi/2)",
            "ours": last[p]["true_fallen_fraction"],
            "published": "untrained: bimodal (falls either way); trained: unimodal upright",
        }
        for p in last
    ]
    for p in last:
        table.append(
            {
                "quantity": f"{p} policy: angle sd at step {task.horizon}, MM / particles / true",
                "ours": f"{last[p]['mm_sd']:.3g} / {last[p]['particles_sd']:.3g} / {last[p]['true_sd']:.3g}",
                "published": "untrained: MM too wide, particles match; trained: MM conservative",
            }
        )
    for key_ in ("mm", "particles", "true_ode"):
        table.append(
            {
                "quantity": f"Fig 4.12: interior local minima along the descent line, {key_}",
                "ours": roughness([r[key_] for r in descent]),
                "published": "MM smooth; particles jagged",
            }
        )
    note = (
        f"\nRun: horizon {task.horizon}, {cfg['num_random']} random roll-outs near upright, AR-GP "
        f"({cfg['ar_steps']} Adam steps), {cfg['policy_steps']} L-BFGS iterations, {cfg['particles']} particles, "
        f"{cfg['starts']} true starts, {cfg['alphas']} step lengths."
    )
    if not quick:
        loop = learning_curves(
            out, FACTORS, range(10), num_iterations=10, num_tests=10, max_steps=100,
            policy_kind="rbf-targets", policy_angle_inputs=True,  # PILCO's policy (mchutchon.md#pilco-pseudo-targets)
        )  # fmt: skip
        plot_curves(out, loop)
        table += success_table(loop) + model_difference(loop)
        note += (
            f" Fig 4.8: noise factors {FACTORS}, 10 seeds, 10 iterations, 10 tests; PILCO's RBF policy (pseudo-targets,"
            " sin and cos of the angle)."
        )
    print(write_comparison(out, table, __doc__ + note))


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Fig 4.8 from runs of benchmarks/pilco_learning_run.py")
    parser.add_argument("runs", type=Path, nargs="+", help="the runs' JSON-lines files")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    loop = read_runs(args.runs)
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(args.out / "loop.csv", loop)
    plot_curves(args.out, loop)
    preamble = f"McHutchon (2014) Fig 4.8 from {len(args.runs)} runs of benchmarks/pilco_learning_run.py."
    print(write_comparison(args.out, success_table(loop) + model_difference(loop), preamble))
