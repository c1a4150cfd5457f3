"""Kaiser 2021 Tables 5.1 and 5.3, Figs 5.4-5.6: Wet-Chicken policy search in a DAGP transition model.

Data (docs/sources/kaiser.md#wet-chicken): N uniform random transitions of the true 2-D Wet-Chicken simulator
(zoo/data/wetchicken.py, eqs. 5.1-5.2), inputs (x, y, a_x, a_y), targets (x', y'). Dynamics model
(docs/sources/kaiser.md#wet-chicken-model): ``dagp`` with K modes, outputs = 2 (one SE GP per mode and output,
one assignment per transition), heteroscedastic noise (noise variance s_kp^2 exp(g_kp(x)), g_kp an SE GP),
SE assignment GPs, noise floor 1e-4 (variance), M = 50 inducing inputs (k-means of the inputs) per GP, the paper's
objective (no q(a) entropy), Concrete temperature 0.5, modes started at the outputs' quantiles (``mode_init=
"levels"``), Adam (lr 0.01 cosine-decayed to 5 %; 3000 steps in the full run: 1000 left the drop mode unfound),
minibatches of 500 for N > 500, through ``inference.run`` (engine ``svi``, the model's guide). K = 1 is the GP
baseline: one mode, homoscedastic noise (docs/sources/kaiser.md#wet-chicken-baselines).

Policy search (``inference.applications.policy_search``, eqs. 5.10-5.13): a 2 x 20 ReLU MLP with tanh outputs, T = 5,
P = 20 roll-outs per iteration from states of the training data, gamma = 0.9, Adam lr 1e-3; each transition samples
every model component independently (eq. 5.9) with a straight-through Gumbel gradient for the mode
(docs/sources/kaiser.md#wet-chicken-gradient). NFQ (``inference.applications.nfq``): 20 iterations, one hidden layer of
10
sigmoid units, greedy over a 5 x 5 action grid (docs/sources/kaiser.md#wet-chicken-nfq).

Return (docs/sources/kaiser.md#wet-chicken-return; the thesis does not define it): the mean per-step reward x_t of
10-step roll-outs of the policy in the true simulator from 2000 uniform start states. This calibrates a uniformly
random policy to 1.46 (the thesis: "about 1.5"); we also report the long-run mean reward of 100-step roll-outs from
(0, 0) ("return_long"), its fall probability per step, and the objective (5.12) measured in the true simulator.
BNN+LV is not in the zoo (published numbers only). Runs differ in the data, the model's and the policy's initial
values (seed = run index; the methods of one run share its data). Full-run results: kaiser_wetchicken_full_runs.md.

The full run in chunks (one pinned command each; every finished unit cached in OUT/runs):
    python -m paper_figures.kaiser_wetchicken cells OUT --n 250 --model 2 --seeds 0 1 2   # K = 2; 1 = GP; NFQ
    python -m paper_figures.kaiser_wetchicken aggregate OUT    # tables and figures from the finished units
    python -m paper_figures.kaiser_wetchicken anchor OUT       # the random policy under candidate returns
"""

import argparse
import csv
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import inference
import zoo
from inference.applications import nfq, policy_search
from inference.files.resumable import cached, load_cached
from inference.files.tables import markdown_table, mean_and_se, read_published, write_comparison, write_csv
from zoo import dagp
from zoo.dagp import transition
from zoo.data import wetchicken as wc

DESCRIPTION = "Kaiser 2021 Tables 5.1/5.3, Figs 5.4-5.6: Wet-Chicken policy search in DAGP (K modes), GP, NFQ"
STATE_SCALE = jnp.array([wc.LENGTH, wc.WIDTH])
POLICY_SIZES = (2, 20, 20, 2)
EVAL_STARTS, EVAL_HORIZON, LONG_EPISODES, LONG_HORIZON = 2000, 10, 500, 100
SCORES = ("return", "return_long", "fall_rate", "true_objective")


def settings(quick: bool) -> dict:
    if quick:
        return {"sizes": (100,), "runs": 1, "modes": (2, 1), "m": 20, "fit_steps": 200, "policy_steps": 150,
                "nfq_fit_steps": 50, "figure_n": 100}  # fmt: skip
    # Published: N in {100, ..., 5000}, 10 runs, K = 1..5 (Table 5.3). kaiser_wetchicken_full_runs.md says which
    # part of this grid the full run finished (every finished unit is cached and reused); sizes in the order worked.
    return {"sizes": (250, 1000, 100, 500, 2500, 5000), "runs": 10, "modes": (2, 1, 3, 4, 5), "m": 50,
            "fit_steps": 3000, "policy_steps": 1000, "nfq_fit_steps": 300, "figure_n": 250}  # fmt: skip


def dynamics_spec(num_modes: int, n: int):
    """K >= 2: DAGP with heteroscedastic noise; K = 1: the standard (homoscedastic) GP baseline, which the thesis
    says "cannot model heteroscedastic noise or multi-modality"."""
    return zoo.get(
        "dagp",
        num_modes=num_modes,
        outputs=2,
        heteroscedastic=num_modes > 1,
        noise_floor=1e-4,
        mode_init="levels",
        init_spread=0.0,
        temperature=0.5,
        batch_size=None if n <= 500 else 500,
    )


def training_data(n: int, seed: int, m: int) -> dict:
    return dict(dagp.simulate_wet_chicken(jax.random.PRNGKey(seed), n, min(m, n)).observed)


def evaluate(policy, seed: int) -> dict:
    """In the true simulator: the return (mean per-step reward, 10 steps from uniform starts), the long-run return
    (100 steps from (0, 0)), the long run's fall probability per step, and the policy search's own objective (5.12),
    sum_{t=0}^T gamma^t r_t from uniform starts (what the model's estimate ``model_return`` estimates)."""
    key = jax.random.PRNGKey(7000 + seed)
    starts = wc.uniform_states(jax.random.fold_in(key, 1), EVAL_STARTS)
    short = wc.mean_reward(policy, starts, jax.random.fold_in(key, 2), EVAL_HORIZON)
    zero = jnp.zeros((LONG_EPISODES, 2))
    long, falls = wc.rollout(policy, zero, jax.random.fold_in(key, 3), LONG_HORIZON)
    ps = policy_search.PolicySettings()
    rewards, _ = wc.rollout(policy, starts, jax.random.fold_in(key, 4), ps.horizon + 1)
    objective = (ps.discount ** jnp.arange(ps.horizon + 1)[:, None] * rewards).sum(0)
    return {"return": float(short.mean()), "return_long": float(long.mean()), "fall_rate": float(falls.mean()),
            "true_objective": float(objective.mean())}  # fmt: skip


def run_dagp(n: int, seed: int, num_modes: int, s: dict) -> dict:
    """Fit the K-mode dynamics model, search a policy in it, evaluate the policy in the true simulator."""
    observed = training_data(n, seed, s["m"])
    spec = dynamics_spec(num_modes, n)
    idata = inference.run(spec, observed, engine="svi", guide="model", num_steps=s["fit_steps"],
                          learning_rate=0.01, final_lr_fraction=0.05, num_samples=1, seed=1000 + seed)  # fmt: skip
    fit = dagp.fit_from(idata, dagp.config_of(spec))

    def step(states, actions, key):
        return transition.sample_next(fit, jnp.concatenate([states, actions], -1), key)

    ps = policy_search.PolicySettings(iterations=s["policy_steps"])
    search = jax.jit(partial(policy_search.policy_search, step=step, reward=wc.reward, settings=ps,
                             sizes=POLICY_SIZES, state_scale=STATE_SCALE))  # fmt: skip
    params, returns = search(jax.random.PRNGKey(2000 + seed), initial_pool=jnp.asarray(observed["X"])[:, :2])
    scores = evaluate(lambda states, _: policy_search.policy_actions(params, states, STATE_SCALE), seed)
    tail = max(1, s["policy_steps"] // 10)
    return {**scores, "model_return": float(np.mean(returns[-tail:])), "fit": fit.params, "policy": params,
            "elbo": float(np.mean(idata.optimization["elbo"].values[0, -tail:]))}  # fmt: skip


def run_nfq(n: int, seed: int, s: dict) -> dict:
    observed = training_data(n, seed, s["m"])
    X, s_next = jnp.asarray(observed["X"]), jnp.asarray(observed["y"])
    settings_ = nfq.NfqSettings(fit_steps=s["nfq_fit_steps"])
    params, residuals = jax.jit(nfq.fitted_q_iteration, static_argnums=5)(
        jax.random.PRNGKey(3000 + seed), X[:, :2], X[:, 2:], s_next, wc.reward(X[:, :2]), settings_, STATE_SCALE
    )
    grid = nfq.action_grid(settings_.grid_points)
    scores = evaluate(lambda states, _: nfq.greedy_actions(params, states, grid, STATE_SCALE), seed)
    return {**scores, "bellman_residual": float(residuals[-1]), "policy": params}


def policy_of(unit, params):
    """The policy a unit's result stores, as policy(states (E, 2), key) -> actions (E, 2)."""
    if unit == "NFQ":
        grid = nfq.action_grid(nfq.NfqSettings().grid_points)
        return lambda states, _: nfq.greedy_actions(params, states, grid, STATE_SCALE)
    return lambda states, _: policy_search.policy_actions(params, states, STATE_SCALE)


def random_policy(states, key):
    """Uniformly random actions in [-1, 1]^2 (the thesis: a return of about 1.5)."""
    return jax.random.uniform(key, states.shape, minval=-1.0, maxval=1.0)


def random_policy_return() -> dict:
    """The sanity anchor: the random policy's scores (``evaluate``)."""
    return evaluate(random_policy, 0)


def feedback_policy(x_target: float, y_target: float):
    """Aim the expected next state at (x_target, y_target): a_x cancels the drift -0.5 + v, a_y steps towards
    y_target, both clipped to [-1, 1] (a hand-made yardstick for the return's scale, not from the thesis)."""

    def policy(states, _):
        x, y = states[..., 0], states[..., 1]
        a_x = (x_target - x + 0.5 - 3.0 * y / wc.WIDTH) / 1.5
        return jnp.clip(jnp.stack([a_x, y_target - y], -1), -1.0, 1.0)

    return policy


def return_definitions(policy, starts: int = 20_000, seed: int = 0) -> dict:
    """A policy's score under the candidate definitions of the thesis's undefined "expected return"
    (docs/sources/kaiser.md#wet-chicken-return): per-step means over 10 or 6 steps from uniform starts, the
    discounted 6-term sum of (5.12) raw and divided by sum gamma^t, (1 - gamma) times the discounted sum over 100
    steps, the long-run mean (steps 100-999 from (0, 0)) and its fall probability per step."""
    key = jax.random.PRNGKey(seed)
    gamma = policy_search.PolicySettings().discount
    uniform, _ = wc.rollout(
        policy, wc.uniform_states(jax.random.fold_in(key, 1), starts), jax.random.fold_in(key, 2), 100
    )
    long, falls = wc.rollout(policy, jnp.zeros((starts, 2)), jax.random.fold_in(key, 3), 1000)
    weights = gamma ** jnp.arange(100)[:, None]
    return {
        "mean 10 steps": uniform[:10].mean(),
        "mean 6 steps": uniform[:6].mean(),
        "(5.12) sum": (weights[:6] * uniform[:6]).sum(0).mean(),
        "(5.12) / sum gamma^t": (weights[:6] * uniform[:6]).sum(0).mean() / weights[:6].sum(),
        "(1 - gamma) discounted": (1 - gamma) * (weights * uniform).sum(0).mean(),
        "long-run mean": long[100:].mean(),
        "falls per step": falls[100:].mean(),
    }


def anchor_table(out: Path) -> str:
    """The random policy and a grid of feedback policies under every candidate definition: out/anchor.csv, and the
    Markdown rows of the random policy and of the best feedback policy."""
    rows = [{"policy": "random"} | return_definitions(random_policy)]
    for x_target in np.arange(1.0, 5.01, 0.5):
        for y_target in np.arange(0.0, 5.01, 0.5):
            policy = feedback_policy(float(x_target), float(y_target))
            rows.append({"policy": f"feedback x* = {x_target:g}, y* = {y_target:g}"} | return_definitions(policy))
    rows = [{k: float(v) if k != "policy" else v for k, v in row.items()} for row in rows]
    write_csv(Path(out) / "anchor.csv", rows)
    best = max(rows[1:], key=lambda r: r["mean 10 steps"])
    return markdown_table([rows[0], best])


def unit_name(unit) -> str:
    return "NFQ" if unit == "NFQ" else f"K={unit}"


def unit_key(n: int, seed: int, unit, s: dict) -> tuple[str, tuple]:
    """A unit's cache label and the key of everything that determines its result."""
    shared = sorted((k, v) for k, v in s.items() if k not in ("sizes", "runs", "modes"))
    return f"n{n}-run{seed}-{unit_name(unit)}", (n, seed, unit, shared)


def run_unit(n: int, seed: int, unit, s: dict, folder: Path | None):
    compute = partial(run_nfq, n, seed, s) if unit == "NFQ" else partial(run_dagp, n, seed, unit, s)
    return cached(folder, *unit_key(n, seed, unit, s), compute)


def run_cells(out: Path, n: int, unit, seeds, quick: bool = False) -> None:
    """The full run in chunks (one pinned command each): the units (n, seed, unit) for these seeds, each cached in
    ``out/runs``, a row per unit appended to ``out/cells.csv``; ``main(..., aggregate_only=True)`` then builds the
    tables from every finished unit."""
    out, s = Path(out), settings(quick)
    path = out / "cells.csv"
    rows = list(csv.DictReader(path.open())) if path.exists() else []
    for seed in seeds:
        result, wall = run_unit(n, seed, unit, s, out / "runs")
        scores = {k: result[k] for k in SCORES if k in result}
        rows.append({"N": n, "run": seed, "model": unit_name(unit), "s": wall, **scores,
                     "model_return": result.get("model_return")})  # fmt: skip
        print(rows[-1], flush=True)
        write_csv(path, rows)


def units(s: dict) -> list:
    """(n, seed, unit) in the order the full run works through them: blocks of 3 runs; in each block every N (in
    ``sizes`` order) with Table 5.1's columns (DAGP, GP, NFQ), then Table 5.3's K = 3..5."""
    order, table_51 = [], [u for u in (2, 1, "NFQ") if u in (*s["modes"], "NFQ")]
    for block in range(0, s["runs"], 3):
        seeds = range(block, min(block + 3, s["runs"]))
        order += [(n, seed, u) for n in s["sizes"] for seed in seeds for u in table_51]
        order += [(n, seed, k) for n in s["sizes"] for seed in seeds for k in s["modes"] if k > 2]
    return order


def main(quick: bool, out: Path, sizes: tuple[int, ...] | None = None, aggregate_only: bool = False) -> None:
    """Every unit of ``units``; sizes: work only these N. aggregate_only: compute nothing, tabulate the units that
    finished in ``out/runs`` (written there by ``run_cells``); a unit saved before a score was added is
    re-evaluated with ``evaluate``."""
    out = Path(out)
    s = settings(quick) | ({"sizes": tuple(sizes)} if sizes else {})
    rows, results, wall = [], {}, 0.0
    for n, seed, unit in units(s):
        if aggregate_only:
            loaded = load_cached(out / "runs", *unit_key(n, seed, unit, s))
            if loaded is None:
                continue
            result, unit_wall = loaded
            if any(k not in result for k in SCORES):
                result = result | evaluate(policy_of(unit, result["policy"]), seed)
        else:
            result, unit_wall = run_unit(n, seed, unit, s, None if quick else out / "runs")
        results[(n, seed, unit)] = result
        wall += unit_wall
        rows.append({"N": n, "run": seed, "model": unit_name(unit)} | {k: result[k] for k in SCORES}
                    | {"model_return": result.get("model_return"), "s": unit_wall})  # fmt: skip
        print(rows[-1], flush=True)
        write_csv(out / "numbers.csv", rows)  # after every unit: a stopped full run keeps what it finished
    anchor = random_policy_return()
    write_csv(out / "numbers.csv", rows)
    table = comparison(rows)
    checks = [drop_mode_check(result, n, seed, s) for (n, seed, unit), result in results.items() if unit == 2]
    write_csv(out / "drop_mode.csv", checks)
    usage = mode_usage({key: r for key, r in results.items() if isinstance(key[2], int) and key[2] >= 2})
    write_csv(out / "mode_usage.csv", usage)
    preamble = (
        __doc__ + f"\nThis run: N in {s['sizes']}, {s['runs']} run(s), K in {s['modes']}, M = {s['m']},"
        f" {s['fit_steps']} model steps, {s['policy_steps']} policy steps; summed wall time {wall:.0f} s."
        f" Random policy: return {anchor['return']:.3f}, long-run return {anchor['return_long']:.3f}."
        + ("\n\nDid each K = 2 fit find the drop mode (drop_mode.csv)?\n\n" + markdown_table(checks) if checks else "")
        + ("\n\nHow many modes do the fits use (mode_usage.csv)?\n\n" + markdown_table(usage) if usage else "")
    )
    print(write_comparison(out, table, preamble))
    figure_runs = [key for key in results if key[0] == s["figure_n"] and key[2] == 2]
    if figure_runs:
        n, seed, _ = figure_runs[0]
        result = results[figure_runs[0]]
        plot_model(out, dagp.DagpFit(result["fit"], dagp.config_of(dynamics_spec(2, n))))
        plot_policy(out, result["policy"], f"N = {n}, run {seed}: return {result['return']:.2f}")


PUBLISHED_MODEL = {"DAGP": "K=2", "GP": "K=1", "NFQ": "NFQ"}


def comparison(rows: list[dict]) -> list[dict]:
    """Published Tables 5.1 and 5.3 with our mean +- se beside each cell (the return; long-run return after)."""
    table = []
    for p in read_published(__file__):
        ours_model = PUBLISHED_MODEL.get(p["model"], p["model"]) if p["table"] == "5.1" else p["model"]
        values = [r for r in rows if r["N"] == int(p["N"]) and r["model"] == ours_model]
        if p["model"] == "BNN+LV":
            ours = "not run (not in the zoo)"
        elif not values:
            ours = "not run"
        else:
            mean, se = mean_and_se([r["return"] for r in values])
            long_mean, _ = mean_and_se([r["return_long"] for r in values])
            falls = 100 * np.mean([r["fall_rate"] for r in values])
            ours = f"{mean:.2f} +- {se:.2f} ({len(values)} runs; long-run {long_mean:.2f}, falls {falls:.0f} %/step)"
        table.append({"table": p["table"], "N": p["N"], "model": p["model"], "published": f"{p['mean']} +- {p['se']}",
                      "ours": ours, "note": p["note"]})  # fmt: skip
    return table


def drop_mode(c: transition.Components) -> int:
    """The mode whose flow is nearest the constant (0, 0) (the reset state) over the states of ``c``."""
    return int(jnp.argmin(jnp.abs(c.f_mean).mean((0, 2))))


def mode_usage(results: dict) -> list[dict]:
    """Per (N, K) over the runs: how many of a K-mode fit's modes its data use. A fit's mode masses are its fitted
    per-point beliefs q(a_n) (softmax of the assignment logits) averaged over the training points, sorted; a mode
    counts as used above 5 % of the mass. results: {(N, run, K): unit result}."""
    masses = {}
    for (n, _, k), result in results.items():
        belief = np.asarray(jax.nn.softmax(jnp.asarray(result["fit"]["assignment_logits"]), -1)).mean(0)
        masses.setdefault((n, k), []).append(np.sort(belief)[::-1])
    rows = []
    for (n, k), runs in sorted(masses.items()):
        used = [int((m > 0.05).sum()) for m in runs]
        rows.append({"N": n, "K": k, "runs": len(runs), "modes used (> 5 %), min-max": f"{min(used)}-{max(used)}",
                     "mean mass per mode, sorted": " / ".join(f"{m:.2f}" for m in np.mean(runs, 0))})  # fmt: skip
    return rows


def drop_mode_check(result: dict, n: int, seed: int, s: dict) -> dict:
    """Did a K = 2 fit find the drop mode (Fig 5.4: the constant zero function that takes the falls)? On its own
    training transitions: the falls' share (targets exactly the reset state (0, 0)); for the mode nearest (0, 0) at
    the falls, the mean per-point belief q(a_n) (the fitted assignment logits) and the assignment GP's predictive
    probability (eq. 3.8) over the falls and over the rest, and its mean flow at the falls (0 if found)."""
    observed = training_data(n, seed, s["m"])
    X, y = jnp.asarray(observed["X"]), np.asarray(observed["y"])
    fell = (y[:, 0] == 0) & (y[:, 1] == 0)
    fit = dagp.DagpFit(result["fit"], dagp.config_of(dynamics_spec(2, n)))
    c = transition.components(fit, X)
    f_mean = np.asarray(c.f_mean)
    drop = drop_mode(c._replace(f_mean=c.f_mean[fell]))
    belief = np.asarray(jax.nn.softmax(result["fit"]["assignment_logits"], -1))[:, drop]
    predictive = np.asarray(transition.assignment_probabilities(c, jax.random.PRNGKey(0)))[:, drop]
    return {"N": n, "run": seed, "falls in data": round(float(fell.mean()), 3),
            "q(drop) at falls": round(float(belief[fell].mean()), 3),
            "q(drop) elsewhere": round(float(belief[~fell].mean()), 3),
            "p(drop) at falls": round(float(predictive[fell].mean()), 3),
            "p(drop) elsewhere": round(float(predictive[~fell].mean()), 3),
            "drop mode's mean |f| at falls": round(float(np.abs(f_mean[fell, drop]).mean()), 3)}  # fmt: skip


def plot_model(out: Path, fit: dagp.DagpFit) -> None:
    """Fig 5.4: the flow mode's mean x' - x and noise sd of x', the drop mode's mean x', and the drop probability
    over the river at a = 0; Fig 5.5: cuts x -> x' at y in {0, 1, 2.5, 4, 5}, model samples against true ones."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs, ys = jnp.linspace(0.0, wc.LENGTH, 41), jnp.linspace(0.0, wc.WIDTH, 41)
    gx, gy = jnp.meshgrid(xs, ys)
    states = jnp.stack([gx.ravel(), gy.ravel()], -1)
    inputs = jnp.concatenate([states, jnp.zeros_like(states)], -1)
    c = transition.components(fit, inputs)
    drop = drop_mode(c)
    flow = 1 - drop if fit.config.num_modes == 2 else int(jnp.argmax(jnp.abs(c.f_mean).mean((0, 2))))
    probs = transition.assignment_probabilities(c, jax.random.PRNGKey(0))
    panels = [
        ("flow mode: mean x' - x", c.f_mean[:, flow, 0] - states[:, 0]),
        ("flow mode: noise sd of x'", jnp.sqrt(transition.noise_variance(c)[:, flow, 0])),
        ("drop mode: mean x'", c.f_mean[:, drop, 0]),
        ("drop probability (model)", probs[:, drop]),
        ("fall probability (true)", wc.fall_probability(states, jnp.zeros_like(states))),
    ]
    fig, axes = plt.subplots(1, 5, figsize=(19, 3.4))
    for ax, (title, values) in zip(axes, panels, strict=True):
        image = ax.pcolormesh(gx, gy, np.asarray(values).reshape(gx.shape), shading="auto")
        fig.colorbar(image, ax=ax)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("x (waterfall at 5)")
    axes[0].set_ylabel("y")
    fig.tight_layout()
    fig.savefig(out / "kaiser_wetchicken_model.png", dpi=110)
    plt.close(fig)

    cuts = (0.0, 1.0, 2.5, 4.0, 5.0)
    fig, axes = plt.subplots(len(cuts), 1, figsize=(6, 11), sharex=True)
    x = jnp.repeat(jnp.linspace(0.0, wc.LENGTH, 101), 20)
    for i, (ax, y) in enumerate(zip(axes, cuts, strict=True)):
        s = jnp.stack([x, jnp.full_like(x, y)], -1)
        a = jnp.zeros_like(s)
        model = transition.sample_next(fit, jnp.concatenate([s, a], -1), jax.random.PRNGKey(10 + i), "hard")
        true = wc.step(s, a, jax.random.PRNGKey(20 + i))
        ax.scatter(x, true[:, 0], s=2, alpha=0.3, color="k", label="true simulator")
        ax.scatter(x, model[:, 0], s=2, alpha=0.3, color="C0", label="model sample")
        ax.set_ylabel(f"x' (y = {y})")
    axes[0].legend(fontsize=7, markerscale=4)
    axes[-1].set_xlabel("x (a = 0)")
    fig.tight_layout()
    fig.savefig(out / "kaiser_wetchicken_cuts.png", dpi=110)
    plt.close(fig)


def plot_policy(out: Path, params, title: str) -> None:
    """Fig 5.6: the policy's actions over the river."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gx, gy = jnp.meshgrid(jnp.linspace(0.0, wc.LENGTH, 21), jnp.linspace(0.0, wc.WIDTH, 21))
    states = jnp.stack([gx.ravel(), gy.ravel()], -1)
    actions = np.asarray(policy_search.policy_actions(params, states, STATE_SCALE))
    fig, ax = plt.subplots(figsize=(5, 4.5))
    ax.quiver(gx.ravel(), gy.ravel(), actions[:, 0], actions[:, 1], angles="xy")
    ax.axvline(wc.LENGTH, color="C3", label="waterfall")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(out / "kaiser_wetchicken_policy.png", dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The full run in chunks: run some units, or tabulate the finished.")
    commands = parser.add_subparsers(dest="command", required=True)
    cells = commands.add_parser("cells", help="run the units (N, seed, model) for some seeds (cached in OUT/runs)")
    cells.add_argument("out", type=Path)
    cells.add_argument("--n", type=int, required=True)
    cells.add_argument("--model", required=True, help="the number of modes K (1 = GP, 2 = DAGP, ...) or NFQ")
    cells.add_argument("--seeds", type=int, nargs="+", required=True)
    aggregate = commands.add_parser("aggregate", help="tables and figures from the finished units in OUT/runs")
    aggregate.add_argument("out", type=Path)
    anchor = commands.add_parser("anchor", help="random and feedback policies under the candidate returns")
    anchor.add_argument("out", type=Path)
    args = parser.parse_args()
    if args.command == "cells":
        run_cells(args.out, args.n, "NFQ" if args.model.upper() == "NFQ" else int(args.model), args.seeds)
    elif args.command == "aggregate":
        main(False, args.out, aggregate_only=True)
    else:
        print(anchor_table(args.out))
