"""Kaiser 2021 Table 5.2, Figs 5.7-5.8: reward shaping with the conservative reward r_cons (eq. 5.14), the
conservative Wet-Chicken policy, and cuts through two K = 4 transition models (a successful and a failed policy).

Everything else as in ``kaiser_wetchicken`` (docs/sources/kaiser.md#wet-chicken-model): the same data, DAGP fits
(K = 2, heteroscedastic, M = 50, 3000 Adam steps, through ``inference.run``) and policy search (eqs. 5.10-5.13;
2 x 20 ReLU, T = 5, P = 20, gamma = 0.9, Adam lr 1e-3, 1000 iterations, the same seeds), so the r_orig row of
Table 5.2 is that script's N = 1000 DAGP cell. The r_cons row searches a policy in the same fit, from the same
initial weights and keys, with the reward r_cons(s, a) = x (1 - p(drop | s, a)) - 5 p(drop | s, a)
(``zoo.dagp.reward_shaping``; p the fit's predictive probability of its drop mode, eq. 3.8, 64 common draws):
the two rows are paired.

Table 5.2's columns (the thesis defines none of them; docs/sources/kaiser.md#reward-shaping): on 10-step roll-outs
of the policy in the true simulator from 2000 uniform starts (the Table 5.1 return's roll-outs), "Original Return"
the mean per-step x, "Conservative Return" the mean per-step r_cons with the model's p(drop | s, a) ("can easily be
evaluated in the transition model"; also with the true fall probability), "Drop %" the mean true fall probability
per step. Fig 5.7's sweet spot: the mean state of steps 50-99 of 500 roll-outs from (0, 0).

Fig 5.8 (docs/sources/kaiser.md#reward-shaping): K = 4 DAGP fits at N = 2500 (the ``kaiser_wetchicken`` Table 5.3
units), their policies' returns; the best and the worst cut at y = 5, a = 0: per-mode predictive mean +- 2 sd of x'
and assignment probabilities. A policy succeeds above a return of 2.2 (the thesis's threshold).

Full run, resumable (every unit cached in OUT/runs; --runs R --runs-k4 R4 works only the first runs):
    python -m paper_figures.kaiser_reward_shaping OUT
Full-run results: kaiser_reward_shaping_full_runs.md.
"""

import argparse
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from inference.applications import policy_search
from inference.files.resumable import cached
from inference.files.tables import markdown_table, mean_and_se, read_published, write_csv
from paper_figures import kaiser_wetchicken as kw
from paper_figures._claims import pyplot, write_results
from zoo import dagp
from zoo.dagp import reward_shaping as rs
from zoo.dagp import transition
from zoo.data import wetchicken as wc

DESCRIPTION = "Kaiser 2021 Table 5.2, Figs 5.7-5.8: conservative reward r_cons (5.14), K = 4 cuts of success/failure"
SUCCESS = 2.2  # the thesis: "a return above 2.2 indicates that a successful policy has been found"
SWEET_EPISODES, SWEET_HORIZON, SWEET_BURN_IN = 500, 100, 50
CUT_Y = 5.0


def settings(quick: bool) -> dict:
    if quick:
        return {"n": 250, "runs": 1, "n_k4": 250, "runs_k4": 2, "m": 20, "fit_steps": 200, "policy_steps": 150}
    return {"n": 1000, "runs": 10, "n_k4": 2500, "runs_k4": 6, "m": 50, "fit_steps": 3000, "policy_steps": 1000}


def fit_of(result: dict, num_modes: int, n: int) -> dagp.DagpFit:
    return dagp.DagpFit(result["fit"], dagp.config_of(kw.dynamics_spec(num_modes, n)))


def conservative_search(result: dict, n: int, seed: int, s: dict) -> dict:
    """The r_cons policy in the fit of ``result`` (a ``kw.run_dagp`` unit): the same policy-search settings, initial
    weights and keys as its r_orig policy; returns the policy params and the model's estimate of the shaped
    objective."""
    observed = kw.training_data(n, seed, s["m"])
    fit = fit_of(result, 2, n)
    mode = rs.drop_mode(transition.components(fit, jnp.asarray(observed["X"])))

    def step(states, actions, key):
        return transition.sample_next(fit, jnp.concatenate([states, actions], -1), key)

    ps = policy_search.PolicySettings(iterations=s["policy_steps"])
    search = jax.jit(lambda key, pool: policy_search.policy_search(
        key, step, rs.conservative_reward(fit, mode), pool, ps, kw.POLICY_SIZES, kw.STATE_SCALE))  # fmt: skip
    params, returns = search(jax.random.PRNGKey(2000 + seed), jnp.asarray(observed["X"])[:, :2])
    tail = max(1, s["policy_steps"] // 10)
    return {"policy": params, "drop_mode": mode, "model_objective": float(np.mean(returns[-tail:]))}


def shaped_scores(params, fit: dagp.DagpFit, mode: int, seed: int) -> dict:
    """Table 5.2's columns and Fig 5.7's sweet spot for a policy, in the true simulator (module docstring)."""
    policy = kw.policy_of(2, params)
    key = jax.random.PRNGKey(7000 + seed)  # the Table 5.1 return's starts and roll-out keys (kw.evaluate)
    starts = wc.uniform_states(jax.random.fold_in(key, 1), kw.EVAL_STARTS)
    states, actions = wc.trajectory(policy, starts, jax.random.fold_in(key, 2), kw.EVAL_HORIZON)
    x, fall = wc.reward(states), wc.fall_probability(states, actions)
    p_model = rs.drop_probability(fit, states, actions, mode)
    zero = jnp.zeros((SWEET_EPISODES, 2))
    long, _ = wc.trajectory(policy, zero, jax.random.fold_in(key, 5), SWEET_HORIZON)
    return {"original_return": float(x.mean()), "conservative_return": float(rs.conservative(x, p_model).mean()),
            "conservative_return_true_p": float(rs.conservative(x, fall).mean()),
            "drop_percent": float(100 * fall.mean()), "model_p_drop": float(p_model.mean()),
            "sweet_x": float(long[SWEET_BURN_IN:, :, 0].mean()),
            "sweet_y": float(long[SWEET_BURN_IN:, :, 1].mean())}  # fmt: skip


def table_unit(n: int, seed: int, s: dict, folder: Path | None) -> dict:
    """One run of Table 5.2: the K = 2 fit and its r_orig policy (``kw.run_dagp``, the kw cache key), the r_cons
    policy in the same fit, both scored."""
    kw_settings = {**kw.settings(False), "m": s["m"], "fit_steps": s["fit_steps"], "policy_steps": s["policy_steps"]}
    base, _ = kw.run_unit(n, seed, 2, kw_settings, folder)
    shared = sorted((k, v) for k, v in s.items() if k in ("m", "fit_steps", "policy_steps"))
    cons, wall = cached(folder, f"n{n}-run{seed}-rcons", (n, seed, shared),
                        lambda: conservative_search(base, n, seed, s))  # fmt: skip
    fit = fit_of(base, 2, n)
    return {"r_orig": shaped_scores(base["policy"], fit, cons["drop_mode"], seed),
            "r_cons": shaped_scores(cons["policy"], fit, cons["drop_mode"], seed),
            "r_orig_policy": base["policy"], "r_cons_policy": cons["policy"], "seconds": wall}  # fmt: skip


def paired(rows: list[dict], column: str) -> tuple[float, float]:
    """Mean and se of r_cons - r_orig in ``column`` over the runs (paired: same data, fit and keys)."""
    return mean_and_se([r["r_cons"][column] - r["r_orig"][column] for r in rows])


def table_claims(units: list[dict]) -> tuple[list[dict], list[dict]]:
    """Table 5.2 beside the published cells, and the caption's and text's claims (paired differences, 2 se)."""
    published = {(p["reward"], p["column"]): p for p in read_published(__file__) if p["table"] == "5.2"}
    table = []
    for reward in ("r_orig", "r_cons"):
        row = {"training reward": reward}
        for column in ("original_return", "conservative_return", "drop_percent", "conservative_return_true_p",
                       "model_p_drop", "sweet_x", "sweet_y"):  # fmt: skip
            mean, se = mean_and_se([u[reward][column] for u in units])
            p = published.get((reward, column))
            row[column] = f"{mean:.2f} +- {se:.2f}" + (f" (published {p['mean']} +- {p['se']})" if p else "")
        table.append(row)
    n = len(units)

    def claim(figure, text, column, sign, unit=""):
        mean, se = paired(units, column)
        ok = n > 1 and sign * mean > 2 * se
        return {"figure": figure, "claim": text,
                "measured": f"r_cons - r_orig: {mean:+.3f} +- {se:.3f}{unit} (paired, {n} runs)",
                "verdict": ("PASS" if ok else "FAIL") + ("" if n > 1 else " (one run: no se)")}  # fmt: skip

    rows = [
        claim("Table 5.2", "a conservative policy has a lower (original) return", "original_return", -1),
        claim("Table 5.2", "... but avoids the waterfall more often (lower drop %)", "drop_percent", -1, " points"),
        claim("Table 5.2", "r_cons gives a higher conservative return (-1.00 vs -1.22)", "conservative_return", +1),
        claim("Fig 5.7", "the conservative policy's sweet spot is further from the waterfall", "sweet_x", -1),
    ]
    return rows, table


def k4_unit(n: int, seed: int, s: dict, folder: Path | None) -> dict:
    kw_settings = {**kw.settings(False), "m": s["m"], "fit_steps": s["fit_steps"], "policy_steps": s["policy_steps"]}
    result, _ = kw.run_unit(n, seed, 4, kw_settings, folder)
    return result


def cut(fit: dagp.DagpFit, num: int = 101) -> dict:
    """The cut at y = 5, a = 0 over x in [0, 5]: per-mode predictive mean and sd of x' (flow variance plus noise at
    the log-noise GP's mean) (num, K), assignment probabilities (num, K), the true fall probability (num,)."""
    x = jnp.linspace(0.0, wc.LENGTH, num)
    states = jnp.stack([x, jnp.full_like(x, CUT_Y)], -1)
    c = transition.components(fit, jnp.concatenate([states, jnp.zeros_like(states)], -1))
    sd = jnp.sqrt(c.f_var[..., 0] + transition.noise_variance(c)[..., 0])
    probs = transition.assignment_probabilities(c, jax.random.PRNGKey(0))
    return {"x": np.asarray(x), "mean": np.asarray(c.f_mean[..., 0]), "sd": np.asarray(sd), "p": np.asarray(probs),
            "fall": np.asarray(wc.fall_probability(states, jnp.zeros_like(states))),
            "drop": rs.drop_mode(c)}  # fmt: skip


def uninformed_relevance(c: dict) -> tuple[int, float]:
    """The non-drop mode with the largest mean predictive sd on the cut, and its mean assignment probability there."""
    sds = [c["sd"][:, k].mean() if k != c["drop"] else -np.inf for k in range(c["sd"].shape[1])]
    k = int(np.argmax(sds))
    return k, float(c["p"][:, k].mean())


def k4_claims(results: dict, n: int) -> tuple[list[dict], dict]:
    """Fig 5.8's claims on the K = 4 fits {seed: unit}: success and failure both occur; both models have a drop mode;
    the failing model's uninformed mode is more relevant."""
    returns = {seed: r["return"] for seed, r in results.items()}
    best, worst = max(returns, key=returns.get), min(returns, key=returns.get)
    cuts = {seed: cut(fit_of(results[seed], 4, n)) for seed in {best, worst}}
    listed = ", ".join(f"{returns[k]:.2f}" for k in sorted(returns))
    drop_ok = {}
    for seed, c in cuts.items():
        falls = c["fall"] > 0.999
        drop_ok[seed] = (float(c["p"][falls, c["drop"]].mean()), float(np.abs(c["mean"][:, c["drop"]]).mean()))
    (_, rel_best), (_, rel_worst) = uninformed_relevance(cuts[best]), uninformed_relevance(cuts[worst])
    rows = [
        {"figure": "Fig 5.8", "claim": f"of K = 4 models (N = {n}) one gives a successful policy, another a failed one",
         "measured": f"returns of {len(returns)} fits: {listed} (success above {SUCCESS})",
         "verdict": "PASS" if max(returns.values()) > SUCCESS > min(returns.values()) else "FAIL"},
        {"figure": "Fig 5.8", "claim": "in both models one mode models the drops",
         "measured": "; ".join(f"run {seed}: drop mode's probability where the fall is certain {p:.2f}, its mean "
                               f"|x'| {f:.2f}" for seed, (p, f) in drop_ok.items()),
         "verdict": "PASS" if all(p > 0.5 and f < 0.5 for p, f in drop_ok.values()) else "FAIL"},
        {"figure": "Fig 5.8", "claim": "an uninformed (high-noise) mode is more relevant in the failing model",
         "measured": f"mean assignment probability on the cut of the widest non-drop mode: worst run {worst} "
                     f"(return {returns[worst]:.2f}) {rel_worst:.3f}, best run {best} ({returns[best]:.2f}) "
                     f"{rel_best:.3f}",
         "verdict": ("PASS" if rel_worst > rel_best else "FAIL") if returns[worst] < SUCCESS
         else "FAIL (no failed policy to compare)"},
    ]  # fmt: skip
    return rows, {"best": (best, returns[best], cuts[best]), "worst": (worst, returns[worst], cuts[worst])}


def plot_policies(out: Path, units: list[dict]) -> None:
    """Figs 5.6/5.7: the r_orig and the r_cons policy of the first run over the river."""
    plt = pyplot()
    gx, gy = jnp.meshgrid(jnp.linspace(0.0, wc.LENGTH, 21), jnp.linspace(0.0, wc.WIDTH, 21))
    states = jnp.stack([gx.ravel(), gy.ravel()], -1)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
    for ax, reward in zip(axes, ("r_orig", "r_cons"), strict=True):
        actions = np.asarray(policy_search.policy_actions(units[0][f"{reward}_policy"], states, kw.STATE_SCALE))
        ax.quiver(gx.ravel(), gy.ravel(), actions[:, 0], actions[:, 1], angles="xy")
        score = units[0][reward]
        ax.plot(score["sweet_x"], score["sweet_y"], "o", color="C1", label="long-run mean state")
        ax.axvline(wc.LENGTH, color="C3", label="waterfall")
        ax.set_title(f"trained on {reward}: return {score['original_return']:.2f}, drops {score['drop_percent']:.1f} %")
        ax.set_xlabel("x")
        ax.legend(fontsize=7, loc="lower left")
    axes[0].set_ylabel("y")
    fig.tight_layout()
    fig.savefig(out / "kaiser_reward_shaping_policies.png", dpi=110)
    plt.close(fig)


def plot_cuts(out: Path, picked: dict) -> None:
    """Fig 5.8: per-mode predictive of x' (mean +- 2 sd) and assignment probabilities on the cut y = 5, a = 0."""
    plt = pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(11, 6), sharex=True, height_ratios=(2, 1))
    for j, (label, (seed, ret, c)) in enumerate(picked.items()):
        for k in range(c["mean"].shape[1]):
            style = ":" if k == c["drop"] else "--"
            axes[0, j].plot(c["x"], c["mean"][:, k], style, color=f"C{k}", label=f"mode {k}")
            axes[0, j].fill_between(c["x"], c["mean"][:, k] - 2 * c["sd"][:, k], c["mean"][:, k] + 2 * c["sd"][:, k],
                                    color=f"C{k}", alpha=0.15)  # fmt: skip
            axes[1, j].plot(c["x"], c["p"][:, k], style, color=f"C{k}")
        axes[1, j].plot(c["x"], c["fall"], color="k", lw=0.8, label="true fall probability")
        axes[0, j].set_title(f"({'ab'[j]}) {label}: run {seed}, return {ret:.2f}")
        axes[1, j].set_xlabel("x (y = 5, a = 0)")
    axes[0, 0].set_ylabel("x'")
    axes[1, 0].set_ylabel("assignment probability")
    axes[0, 0].legend(fontsize=7)
    axes[1, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "kaiser_reward_shaping_k4_cuts.png", dpi=110)
    plt.close(fig)


def main(quick: bool, out: Path, runs: int | None = None, runs_k4: int | None = None) -> None:
    """runs, runs_k4: work only the first runs of Table 5.2 and of Fig 5.8 (a full run in chunks; cached units are
    reused)."""
    out, s = Path(out), settings(quick)
    s |= {k: v for k, v in (("runs", runs), ("runs_k4", runs_k4)) if v is not None}
    out.mkdir(parents=True, exist_ok=True)
    folder = None if quick else out / "runs"
    units = []
    for seed in range(s["runs"]):
        units.append(table_unit(s["n"], seed, s, folder))
        print({"run": seed} | {f"{r}_{k}": v for r in ("r_orig", "r_cons") for k, v in units[-1][r].items()})
    rows, table = table_claims(units)
    write_csv(out / "table_5_2_runs.csv", [{"run": i, "reward": r, **u[r]} for i, u in enumerate(units)
                                           for r in ("r_orig", "r_cons")])  # fmt: skip
    plot_policies(out, units)
    k4 = {seed: k4_unit(s["n_k4"], seed, s, folder) for seed in range(s["runs_k4"])}
    k4_rows, picked = k4_claims(k4, s["n_k4"])
    rows += k4_rows
    plot_cuts(out, picked)
    numbers = {"seconds_rcons_search": sum(u["seconds"] for u in units)}
    preamble = __doc__ + (
        f"\nThis run: Table 5.2 at N = {s['n']}, {s['runs']} run(s); Fig 5.8 K = 4 at N = {s['n_k4']},"
        f" {s['runs_k4']} runs; M = {s['m']}, {s['fit_steps']} model steps, {s['policy_steps']} policy steps."
    )
    extra = "\n\nTable 5.2 (mean +- se over the runs; our columns as defined above):\n\n" + markdown_table(table)
    write_results(out, rows, numbers, preamble, quick, extra=extra)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    parser.add_argument("out", type=Path)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--runs", type=int, help="Table 5.2: only the first RUNS runs (default: 10)")
    parser.add_argument("--runs-k4", type=int, help="Fig 5.8: only the first RUNS_K4 K = 4 fits (default: 6)")
    args = parser.parse_args()
    main(args.quick, args.out, args.runs, args.runs_k4)
