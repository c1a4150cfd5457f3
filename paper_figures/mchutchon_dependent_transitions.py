"""McHutchon (2014) Figs 4.13-4.14 and 4.16-4.17: simulation with dependent transitions (sec. 4.7,
docs/sources/mchutchon.md#dependent-transitions).

Figs 4.13-4.14: 1-D uncertain linear systems x_t = a x_{t-1} + b with one draw of (a, b), simulated over 10 steps by
moment matching with the state-model covariance Cov[x_t, (a, b)] kept (eqs. 4.32-4.38, "dependent") and without it
("independent"), next to the truth from sampled trajectories that keep their (a, b) (our addition: the thesis shows
only the two simulations). Fig 4.13 illustrates the bias-only case (a known, b uncertain). Figs 4.16-4.17: a 1-D GP
transition learned from noisy transitions of the kink (docs/sources/mchutchon.md#kink) by ML-II through
``inference.run`` (the AR1-GP's ``ml2`` fit); p(x_2 | x_0) and p(x_2) by sampling one function per draw (eq. 4.44),
against the independent transitions' moment matching and the dependent moments of eqs. 4.47-4.48 (with x_0 = mu_0
plugged in for p(x_2), the thesis's "crude" fix).
"""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from inference.applications import ar1
from inference.files.tables import write_comparison, write_csv
from zoo import dependent_transitions as dt
from zoo import moments
from zoo.data import ssm_systems

DESCRIPTION = "McHutchon 2014 Figs 4.13-4.14, 4.16-4.17: simulation with dependent transitions (linear and GP)"
HORIZON = 10  # Fig 4.14
NUM_TRAIN = 6  # transitions the Fig 4.16 GP is learned from (not stated): few, so that f is uncertain in places
# Fig 4.17's x_0 and p(x_0) (not stated): left of the data, where f is uncertain (s(x_0) several times Sigma_eps)
X0, MU0, S0 = -1.5, -1.5, 0.3**2
SWEEP = np.linspace(-2.0, 7.0, 37)  # x_0 values at which p(x_2 | x_0)'s variance is compared


def settings(quick: bool) -> dict:
    return {"samples": 20_000 if quick else 1_000_000, "systems": 4}


def linear_rows(cfg: dict, key) -> tuple[list[dict], dict]:
    """Fig 4.14: per system and step, the dependent and independent means and variances and the sampled truth's."""
    rows, traces = [], {}
    for i, k in enumerate(jax.random.split(key, cfg["systems"])):
        system = dt.random_linear_system(k)
        dep, ind = dt.simulate_linear(system, HORIZON), dt.simulate_linear(system, HORIZON, dependent=False)
        x = np.asarray(dt.sample_linear(jax.random.fold_in(k, 1), system, HORIZON, cfg["samples"]))
        traces[i] = (dep, ind, x)
        for t in range(HORIZON + 1):
            rows.append(
                {
                    "system": i,
                    "step": t,
                    "mu_a": float(system.weights_mean[0]),
                    "mu_b": float(system.weights_mean[1]),
                    "dependent_mean": float(dep[0][t]),
                    "dependent_var": float(dep[1][t]),
                    "independent_mean": float(ind[0][t]),
                    "independent_var": float(ind[1][t]),
                    "sampled_mean": float(x[:, t].mean()),
                    "sampled_var": float(x[:, t].var()),
                }
            )
    return rows, traces


def transition_data(key) -> tuple[np.ndarray, np.ndarray]:
    """NUM_TRAIN kink transitions (X, y), each (NUM_TRAIN, 1), from inputs U(-1, 6) with the kink's process noise."""
    k_x, k_eps = jax.random.split(key)
    X = np.asarray(jax.random.uniform(k_x, (NUM_TRAIN, 1), minval=-1.0, maxval=6.0))
    noise = np.sqrt(ssm_systems.KINK_PROCESS_VAR) * np.asarray(jax.random.normal(k_eps, (NUM_TRAIN, 1)))
    return X, np.asarray(ssm_systems.kink_function(X)) + noise


def transition_gp(X: np.ndarray, y: np.ndarray, hypers: tuple | None = None) -> dt.TransitionGP:
    """The Fig 4.16 GP on transitions (X, y): ML-II (``inference.applications.ar1.fit_output_gps``, i.e.
    ``inference.run`` with
    ``ml2``), or the given (signal_var, lengthscale, noise_var); its likelihood noise is the process noise."""
    signal_var, lengthscale, noise_var = hypers if hypers is not None else ar1.fit_output_gps(X, y)
    predictor = moments.exact_gp_predictor(X, y, signal_var, lengthscale, noise_var)
    return dt.TransitionGP(predictor, jnp.reshape(jnp.asarray(noise_var), (-1,))[0])


def independent_two_steps(gp: dt.TransitionGP, mu0: float, s0: float) -> tuple[float, float]:
    """Mean and variance of x_2 from x_0 ~ N(mu0, s0) by two independent moment-matched steps."""
    mean, var = jnp.array([mu0]), jnp.array([[s0]])
    for _ in range(2):
        step = moments.predict_moments(gp.predictor, mean, var)
        mean, var = step.mean, step.cov + gp.noise_var
    return float(mean[0]), float(var[0, 0])


def gp_rows(gp: dt.TransitionGP, cfg: dict, key) -> tuple[list[dict], dict]:
    """Fig 4.17: the moments of p(x_2 | x_0) and p(x_2) by sampling, by independent and by dependent moment matching."""
    k_fixed, k_start, k_random = jax.random.split(key, 3)
    n = cfg["samples"]
    x2_given = np.asarray(dt.sample_second_state(k_fixed, gp, jnp.full(n, X0))[1])
    x0 = MU0 + np.sqrt(S0) * jax.random.normal(k_start, (n,))
    x2 = np.asarray(dt.sample_second_state(k_random, gp, x0)[1])
    dep_mean, dep_var = dt.dependent_second_step(gp, jnp.asarray(X0))
    ind_mean, ind_var = dt.independent_second_step(gp, jnp.asarray(X0))
    plug_mean, plug_var = dt.dependent_second_step(gp, jnp.asarray(MU0))  # the thesis's x_0 = mu_0
    noise = float(gp.noise_var)
    moments_of = {
        "p(x2 given x0)": {
            "sampled": (x2_given.mean(), x2_given.var(), stats.skew(x2_given)),
            "independent": (float(ind_mean), float(ind_var) + noise),
            "dependent (4.47-4.48)": (float(dep_mean), float(dep_var) + noise),
        },
        "p(x2)": {
            "sampled": (x2.mean(), x2.var(), stats.skew(x2)),
            "independent": independent_two_steps(gp, MU0, S0),
            "dependent, x0 = mu0": (float(plug_mean), float(plug_var) + noise),
        },
    }
    rows = [
        {"density": density, "method": method, "mean": float(m[0]), "variance": float(m[1])}
        | ({"skewness": float(m[2])} if len(m) > 2 else {})
        for density, methods in moments_of.items()
        for method, m in methods.items()
    ]
    return rows, {"p(x2 given x0)": x2_given, "p(x2)": x2, "moments": moments_of}


def sweep_rows(gp: dt.TransitionGP, cfg: dict, key) -> list[dict]:
    """Var[x_2 | x_0] over SWEEP: sampled, dependent (4.47-4.48) and independent, with s(x_0) / Sigma_eps."""
    noise = float(gp.noise_var)
    s0 = np.asarray(dt.posterior_mean_var(gp, jnp.asarray(SWEEP))[1])
    rows = []
    for i, x0 in enumerate(SWEEP):
        x2 = np.asarray(dt.sample_second_state(jax.random.fold_in(key, i), gp, jnp.full(cfg["samples"], x0))[1])
        rows.append(
            {
                "x0": float(x0),
                "posterior_var_over_noise": float(s0[i] / noise),
                "sampled_var": float(x2.var()),
                "sampled_var_se": float(((x2 - x2.mean()) ** 2).std() / np.sqrt(x2.size)),
                "dependent_var": float(dt.dependent_second_step(gp, jnp.asarray(x0))[1]) + noise,
                "independent_var": float(dt.independent_second_step(gp, jnp.asarray(x0))[1]) + noise,
            }
        )
    return rows


def plot_bias_only_and_sweep(out: Path, sweep: list[dict], a=0.8, mu_b=0.5, sd_b=0.5, x0=1.0) -> None:
    """Fig 4.13: x_1 = a x_0 + b with b uncertain; the state reached by a sampled b (red, blue) keeps that b. Beside
    it (ours): Var[x_2 | x_0] against x_0, sampled and by both simulations."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = np.linspace(-1.0, 3.0, 50)
    fig, (ax, right) = plt.subplots(1, 2, figsize=(10, 4))
    ax.plot(x, a * x + mu_b, "C2")
    ax.fill_between(x, a * x + mu_b - 2 * sd_b, a * x + mu_b + 2 * sd_b, color="C2", alpha=0.2)
    for b, color in ((mu_b - 1.5 * sd_b, "r"), (mu_b, "g"), (mu_b + 1.5 * sd_b, "b")):
        if color != "g":
            ax.plot(x, a * x + b, color, lw=1)
        ax.plot([x0], [a * x0 + b], "o", color=color)
    ax.axvline(x0, color="k", lw=0.5)
    ax.set(title="Fig 4.13: uncertain bias", xlabel="x_{t-1}", ylabel="x_t")
    x0s = [r["x0"] for r in sweep]
    right.plot(x0s, [r["sampled_var"] for r in sweep], "k.", label="sampled")
    right.plot(x0s, [r["dependent_var"] for r in sweep], "C0", label="dependent (4.47-4.48)")
    right.plot(x0s, [r["independent_var"] for r in sweep], "C2", label="independent")
    right.set(title="Var[x_2 | x_0] for the Fig 4.16 GP", xlabel="x_0", ylabel="variance")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "mchutchon_dependent_transitions_fig4_13.png", dpi=110)
    plt.close(fig)


def plot(out: Path, traces: dict, gp: dt.TransitionGP, data: tuple, draws: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 4, figsize=(17, 7.5))
    steps = np.arange(HORIZON + 1)
    for ax, (i, (dep, ind, x)) in zip(axes[0], traces.items(), strict=True):
        for (mean, var), color, label in ((dep, "C2", "with covariance"), (ind, "C3", "without")):
            sd = np.sqrt(np.asarray(var))
            ax.plot(steps, mean, color=color, label=label)
            ax.fill_between(steps, mean - 2 * sd, mean + 2 * sd, color=color, alpha=0.2)
        lo, hi = np.percentile(x, [2.5, 97.5], axis=0)
        ax.plot(steps, x.mean(0), "k--", lw=1, label="sampled mean, 95 %")
        ax.plot(steps, lo, "k:", lw=1)
        ax.plot(steps, hi, "k:", lw=1)
        ax.set(title=f"Fig 4.14: system {i + 1}", xlabel="time step", ylabel="x")
    axes[0, 0].legend(fontsize=8)

    grid = jnp.linspace(-2.0, 7.0, 200)
    mean, var = (np.asarray(v) for v in dt.posterior_mean_var(gp, grid))
    cov = np.asarray(dt.posterior_cov(gp, grid, grid)) + 1e-9 * np.eye(grid.shape[0])
    functions = np.random.default_rng(0).multivariate_normal(mean, cov, 5, method="cholesky")
    for ax in axes[1, :2]:
        ax.plot(grid, mean, "C2")
        ax.fill_between(grid, mean - 2 * np.sqrt(var), mean + 2 * np.sqrt(var), color="C2", alpha=0.2)
        ax.plot(data[0][:, 0], data[1][:, 0], "kx")
        ax.set(xlabel="x_{t-1}", ylabel="x_t")
    axes[1, 0].plot(grid, functions.T, lw=0.8, alpha=0.7)
    axes[1, 0].set(title="Fig 4.16 (top): posterior and sampled functions")
    m0, s0 = (float(v[0]) for v in dt.posterior_mean_var(gp, jnp.array([X0])))
    for x1 in m0 + np.array([-2.0, 0.0, 2.0]) * np.sqrt(s0 + float(gp.noise_var)):
        hypers = (gp.predictor.variance, gp.predictor.lengthscale, gp.noise_var)
        cond = transition_gp(np.vstack([data[0], [[X0]]]), np.vstack([data[1], [[x1]]]), hypers)  # eq. 4.44
        c_mean, c_var = (np.asarray(v) for v in dt.posterior_mean_var(cond, grid))
        axes[1, 1].plot(grid, c_mean, "C3", lw=1)
        axes[1, 1].fill_between(grid, c_mean - 2 * np.sqrt(c_var), c_mean + 2 * np.sqrt(c_var), color="C3", alpha=0.1)
        axes[1, 1].plot([X0], [x1], "ro")
    axes[1, 1].set(title="Fig 4.16 (bottom): also conditioned on x_0 -> x_1")
    for ax, density in zip(axes[1, 2:], ("p(x2 given x0)", "p(x2)"), strict=True):
        samples = draws[density]
        ax.hist(samples, bins=100, density=True, color="0.7")
        ax.axvline(samples.mean(), color="r")
        z = np.linspace(np.percentile(samples, 0.1), np.percentile(samples, 99.9), 300)
        for method, (m, v, *_) in draws["moments"][density].items():
            if method != "sampled":
                style = "C2" if method == "independent" else "C0--"
                ax.plot(z, stats.norm.pdf(z, m, np.sqrt(v)), style, label=method)
        ax.set(title=f"Fig 4.17: {density}", xlabel="x_2")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "mchutchon_dependent_transitions.png", dpi=110)
    plt.close(fig)


def comparison(linear: list[dict], gp: list[dict]) -> list[dict]:
    last = [r for r in linear if r["step"] == HORIZON]
    ratios = [r["dependent_var"] / r["independent_var"] for r in last]
    table = [
        {
            "quantity": f"Fig 4.14 system {r['system'] + 1}: var(x_10) with / without covariance / sampled",
            "ours": f"{r['dependent_var']:.3g} / {r['independent_var']:.3g} / {r['sampled_var']:.3g}",
            "published": "not given (figure)",
        }
        for r in last
    ]
    table.append(
        {
            "quantity": "Fig 4.14: systems whose variance the covariance shrinks / grows (of 4)",
            "ours": f"{sum(q < 1 for q in ratios)} / {sum(q > 1 for q in ratios)} (largest ratio {max(ratios):.3g})",
            "published": "1 / 3, one vastly",
        }
    )
    for density in ("p(x2 given x0)", "p(x2)"):
        found = {r["method"]: r for r in gp if r["density"] == density}
        sampled = found.pop("sampled")
        table.append(
            {
                "quantity": f"Fig 4.17 {density}: sampled mean, variance, skewness",
                "ours": f"{sampled['mean']:.3g}, {sampled['variance']:.3g}, {sampled['skewness']:.2g}",
                "published": "significant skewness",
            }
        )
        for method, r in found.items():
            table.append(
                {
                    "quantity": f"Fig 4.17 {density}: {method} mean, variance",
                    "ours": f"{r['mean']:.3g}, {r['variance']:.3g}",
                    "published": "independent: mean close, variance significantly too small"
                    if method == "independent"
                    else "not shown",
                }
            )
    return table


def sweep_comparison(sweep: list[dict]) -> list[dict]:
    ratio = np.array([r["independent_var"] / r["sampled_var"] for r in sweep])
    z = max(abs(r["dependent_var"] - r["sampled_var"]) / r["sampled_var_se"] for r in sweep)
    low, high = int(np.argmin(ratio)), int(np.argmax(ratio))
    return [
        {
            "quantity": f"Var[x_2 given x_0], {len(sweep)} x_0 in [{SWEEP[0]:g}, {SWEEP[-1]:g}]: independent / sampled",
            "ours": f"{ratio[low]:.3g} at x_0 = {sweep[low]['x0']:.3g} to {ratio[high]:.3g} at x_0 = "
            f"{sweep[high]['x0']:.3g}; below 0.95 at {int(np.sum(ratio < 0.95))}, above 1.05 at "
            f"{int(np.sum(ratio > 1.05))}",
            "published": "independent underestimates (one x_0 shown)",
        },
        {
            "quantity": "Var[x_2 given x_0]: largest distance of 4.47-4.48 from the sampled, in Monte Carlo SEs",
            "ours": f"{z:.2g}",
            "published": "moments analytic (not evaluated)",
        },
    ]


def main(quick: bool, out: Path) -> None:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cfg = settings(quick)
    key = jax.random.PRNGKey(0)
    linear, traces = linear_rows(cfg, key)
    data = transition_data(jax.random.fold_in(key, 1))
    gp = transition_gp(*data)
    gp_table, draws = gp_rows(gp, cfg, jax.random.fold_in(key, 2))
    write_csv(out / "linear.csv", linear)
    write_csv(out / "gp.csv", gp_table)
    sweep = sweep_rows(gp, cfg, jax.random.fold_in(key, 3))
    write_csv(out / "sweep.csv", sweep)
    plot_bias_only_and_sweep(out, sweep)
    plot(out, traces, gp, data, draws)
    note = (
        f"\nRun: {cfg['systems']} random linear systems (zoo.dependent_transitions.random_linear_system, seed 0), "
        f"horizon {HORIZON}; GP from {NUM_TRAIN} kink transitions; x_0 = {X0}, p(x_0) = N({MU0}, {S0:.3g}); "
        f"{cfg['samples']} samples per density."
    )
    print(write_comparison(out, comparison(linear, gp_table) + sweep_comparison(sweep), __doc__ + note))
