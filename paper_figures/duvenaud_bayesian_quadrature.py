"""Duvenaud 2014 Figs 8.1-8.3 and 8.6: a GP versus a log-GP on a likelihood, Bayesian quadrature, a 2-D GP posterior
and its 1-D marginals (``zoo.quadrature``), and BQ against Monte Carlo at equal numbers of evaluations.

Ch. 8 is a draft: its figures are lost, it names no test functions, and Figs 8.4-8.5 (IBP and DP-mixture marginal
likelihoods) rest on data marked "?" (not reproduced). Our choices (docs/sources/duvenaud.md#fig-bayesian-quadrature):
the measure p = N(0, 1); a smooth integrand f(x) = cos(x) + sin(2 x) (Z = e^(-1/2)); a positive likelihood of high
dynamic range l(x) = exp(3 cos(2 x) + 2 sin(x) - 3) (from e^-8 to e^2; Z by a dense trapezoid rule); for Fig 8.6
f(x, y) = sin(2 x) cos(y) + x y / 2 with y ~ N(0, 1), whose marginal is sin(2 x) e^(-1/2).
BQ runs by ``inference.applications.bayesian_quadrature.sequential`` (its defaults): SE hyperparameters by ML-II
through ``inference.run`` (2 starts) with the noise fixed at NOISE (the integrands are noise-free; the thesis
integrated the hyperparameters numerically, sec. 8.10, which we do not), refitted at every size of the schedule;
nodes by the greedy min-variance design (8.14) over POOL, a grid on [-4, 4] (spacing 0.05), the first four under
l = 1. The log-GP model (ch. 8.1-8.2): a GP on log l with its constant prior mean at the mean of the observed log
values (with mean 0 the ML-II variance absorbs the offset, and E[Z] is then dominated by the tails beyond the data,
where V is that variance), l_bar (SE with half the log-GP's lengthscale, mu_l = 0) through m_exp at candidates
spaced by a quarter of that lengthscale on [-5, 5]; its nodes by the same design on the linearised variance. Monte
Carlo: the exact RMSE sd_p(f) / sqrt(n), and the mean absolute error of REPEATS seeded runs.
"""

from pathlib import Path

import jax
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from inference.applications.bayesian_quadrature import (  # noqa: E402
    candidate_grid,
    ell_kernel,
    fit_se,
    log_posterior,
    sequential,
)
from inference.files.tables import write_comparison, write_csv  # noqa: E402
from zoo import gp  # noqa: E402
from zoo import quadrature as bq  # noqa: E402

DESCRIPTION = "Duvenaud 2014 Figs 8.1-8.3, 8.6: GP vs log-GP, Bayesian quadrature, 2-D marginals; BQ vs Monte Carlo"
NOISE = 1e-8  # fixed noise variance of the ML-II fits and of BQ
REPEATS = 200
POOL = np.linspace(-4.0, 4.0, 161)[:, None]
MEASURE = bq.gaussian(0.0, 1.0)
LOG_LIKELIHOOD = lambda x: 3.0 * np.cos(2.0 * x) + 2.0 * np.sin(x) - 3.0  # noqa: E731 - log l: range e^-8 .. e^2


def smooth(x):
    return np.cos(x) + np.sin(2.0 * x)


SMOOTH_Z = float(np.exp(-0.5))


def likelihood(x):
    return np.exp(LOG_LIKELIHOOD(x))


def hermite(n=120):
    t, w = np.polynomial.hermite.hermgauss(n)
    return np.sqrt(2.0) * t, w / np.sqrt(np.pi)


def _likelihood_z() -> float:
    """E_p[l] by the trapezoid rule on [-12, 12] with 24001 points: the integrand is smooth and decays like p, so
    the rule converges exponentially (halving the points changes it by < 1e-15 relative)."""
    x = np.linspace(-12.0, 12.0, 24001)
    return float(np.trapezoid(likelihood(x) * np.exp(-0.5 * x**2) / np.sqrt(2.0 * np.pi), x))


LIKELIHOOD_Z = _likelihood_z()


def row(figure, claim, measure, value, ok, expected) -> dict:
    verdict = "REPORTED" if ok is None else ("AGREE" if ok else "DISAGREE")
    return {"figure": figure, "claim": claim, "measure": measure, "value": value, "expected": expected,
            "verdict": verdict}  # fmt: skip


def monte_carlo(f, n: int, key) -> tuple[float, float]:
    """(exact RMSE sd_p(f) / sqrt(n), mean |error| of REPEATS seeded n-sample estimates) of E_p[f]."""
    x, w = hermite()
    mean = float(w @ f(x))
    sd = float(np.sqrt(w @ f(x) ** 2 - mean**2))
    draws = np.asarray(jax.random.normal(key, (REPEATS, n)))
    return sd / np.sqrt(n), float(np.mean(np.abs(f(draws).mean(1) - mean)))


def gp_vs_log_gp(out: Path, paths: dict, sizes: list[int], rows: list) -> None:
    """Figs 8.1-8.2: the GP on l and the log-GP at the nodes of the two paths, at two sizes."""
    x = np.linspace(-4.0, 4.0, 401)
    gx, gw = hermite()
    figure, axes = plt.subplots(len(sizes), 2, figsize=(10, 3.4 * len(sizes)), squeeze=False)
    for r, n in enumerate(sizes):
        fig = f"8.{r + 1}"
        plain = next(p for p in paths["bq"] if p.n == n)
        Xp = plain.nodes
        post = gp.predict(plain.kernel, Xp, likelihood(Xp[:, 0]), NOISE, x[:, None], full_cov=False)
        m, sd = np.asarray(post.mean), np.sqrt(np.maximum(np.asarray(post.cov), 0.0))
        ax = axes[r, 0]
        ax.fill_between(x, m - 2 * sd, m + 2 * sd, color="C0", alpha=0.25)
        ax.plot(x, m, "C0", label="GP mean +- 2 sd")
        ax.plot(x, likelihood(x), "k:", label="l(x)")
        ax.plot(Xp[:, 0], likelihood(Xp[:, 0]), "ko", ms=4)
        ax.axhline(0.0, color="grey", lw=0.5)
        ax.set_title(f"Fig. {fig}: GP on l, {n} evaluations", fontsize=10)
        ax.legend(fontsize=7)
        low = float(np.min(m - 2 * sd))
        rows.append(row(fig, "a stationary GP is a poor model of a positive l: it puts mass below zero",
                        "lowest GP mean - 2 sd / max l", low / likelihood(x).max(), low < 0.0, "< 0"))  # fmt: skip

        logp = next(p for p in paths["log"] if p.n == n)
        Xl, kernel = logp.nodes, logp.kernel
        log_y = LOG_LIKELIHOOD(Xl[:, 0])
        centre = float(np.mean(log_y))  # the log-GP's prior mean (log_bq)
        lpost = gp.predict(kernel, Xl, log_y - centre, NOISE, x[:, None], full_cov=False)
        lm, lv = centre + np.asarray(lpost.mean), np.maximum(np.asarray(lpost.cov), 0.0)
        result = log_posterior(kernel, MEASURE, Xl, log_y, NOISE)
        c = candidate_grid(kernel, MEASURE)
        ell_bar = np.asarray(ell_kernel(kernel)(x[:, None], c)) @ np.asarray(result.beta)
        ax = axes[r, 1]
        ax.fill_between(x, np.exp(lm - 2 * np.sqrt(lv)), np.exp(lm + 2 * np.sqrt(lv)), color="C1", alpha=0.25)
        ax.plot(x, np.exp(lm + lv / 2), "C1", label="m_exp = exp(m + V/2) (8.9)")
        ax.plot(x, ell_bar, "C2--", label="l_bar through m_exp (8.10)")
        ax.plot(x, likelihood(x), "k:", label="l(x)")
        ax.plot(Xl[:, 0], likelihood(Xl[:, 0]), "ko", ms=4)
        ax.set_ylim(-0.1, 1.6)
        ax.set_title(f"Fig. {fig}: log-GP, {n} evaluations", fontsize=10)
        ax.legend(fontsize=7)

        # (8.10) text: l_bar is inflated where log l is uncertain; exp(m) alone underestimates E[Z]
        gpost = gp.predict(kernel, Xl, log_y - centre, NOISE, gx[:, None], full_cov=False)
        gm, gv = centre + np.asarray(gpost.mean), np.maximum(np.asarray(gpost.cov), 0.0)
        expected_z, naive_z = float(gw @ np.exp(gm + gv / 2)), float(gw @ np.exp(gm))
        rows.append(row(fig, "fitting exp(m) instead of m_exp underestimates E_GP(log l)[Z] (sec. 8.1)",
                        "int exp(m) p / int exp(m + V/2) p", naive_z / expected_z, naive_z < expected_z,
                        "< 1"))  # fmt: skip
        if r == len(sizes) - 1:  # once: each candidate count compiles its own program
            # 8.11's limit fills the candidates' domain [-5, 5]; compare with E[Z] over that domain (trapezoid),
            # and report how much the tails beyond it, where V is the prior variance, add to E[Z]
            t = np.linspace(-5.0, 5.0, 2001)
            tpost = gp.predict(kernel, Xl, log_y - centre, NOISE, t[:, None], full_cov=False)
            inner = np.exp(centre + np.asarray(tpost.mean) + 0.5 * np.maximum(np.asarray(tpost.cov), 0.0))
            inner_z = float(np.trapezoid(inner * np.exp(-0.5 * t**2) / np.sqrt(2.0 * np.pi), t))
            ms = (9, 33, 129)
            gaps = [abs(float(log_posterior(kernel, MEASURE, Xl, log_y, NOISE, np.linspace(-5, 5, k)[:, None]).mean)
                        - inner_z) / inner_z
                    for k in ms]  # fmt: skip
            rows.append(row(fig, "Z_0 approaches E_GP(log l)[Z] as the candidates fill the domain (8.11)",
                            f"relative gap to int_[-5,5] m_exp p at {ms} candidates on [-5, 5] (E[Z] over the "
                            f"real line / over [-5, 5]: {expected_z / inner_z:.3g})",
                            ", ".join(f"{g:.2g}" for g in gaps), gaps[-1] < gaps[0] and gaps[-1] < 1e-2,
                            "falling, last < 1e-2"))  # fmt: skip
        write_csv(out / f"fig{fig.replace('.', '_')}_curves.csv",
                  [{"x": float(a), "gp_mean": float(b), "gp_sd": float(s_), "log_gp_mean": float(lm_),
                    "log_gp_var": float(lv_), "ell_bar": float(e)}
                   for a, b, s_, lm_, lv_, e in zip(x, m, sd, lm, lv, ell_bar, strict=True)])  # fmt: skip
    figure.tight_layout()
    figure.savefig(out / "fig8_1_8_2.png", dpi=110)
    plt.close(figure)


def bq_illustration(out: Path, step, rows: list) -> None:
    """Fig 8.3: the GP posterior of the smooth f at the nodes, p(x), and the Gaussian posterior of Z."""
    x = np.linspace(-4.0, 4.0, 401)
    X, kernel = step.nodes, step.kernel
    post = gp.predict(kernel, X, smooth(X[:, 0]), NOISE, x[:, None], full_cov=False)
    m, sd = np.asarray(post.mean), np.sqrt(np.maximum(np.asarray(post.cov), 0.0))
    figure, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6), gridspec_kw={"width_ratios": [3, 1]})
    a.fill_between(x, m - 2 * sd, m + 2 * sd, color="C0", alpha=0.25)
    a.plot(x, m, "C0", label="GP posterior")
    a.plot(x, smooth(x), "k:", label="f(x)")
    a.plot(X[:, 0], smooth(X[:, 0]), "ko", ms=4)
    a.plot(x, np.exp(-0.5 * x**2) / np.sqrt(2 * np.pi), "C3", label="p(x)")
    a.legend(fontsize=7)
    a.set_title(f"Fig. 8.3: Bayesian quadrature, {step.n} evaluations", fontsize=10)
    z = np.linspace(step.mean - 4 * step.sd, step.mean + 4 * step.sd, 200)
    b.plot(np.exp(-0.5 * ((z - step.mean) / step.sd) ** 2) / (step.sd * np.sqrt(2 * np.pi)), z, "C0")
    b.axhline(SMOOTH_Z, color="k", ls=":", label="true Z")
    b.set_title("p(Z | evaluations)", fontsize=10)
    b.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(out / "fig8_3.png", dpi=110)
    plt.close(figure)
    score = (SMOOTH_Z - step.mean) / step.sd
    rows.append(row("8.3", "a Gaussian posterior over Z_{f,p}, the true Z plausible under it",
                    f"(Z - E[Z]) / sd[Z] at n = {step.n} (sd {step.sd:.2g})", score, abs(score) < 3,
                    "abs < 3"))  # fmt: skip


def marginals(out: Path, quick: bool, rows: list) -> None:
    """Fig 8.6: a 2-D GP posterior of f(x, y) and the posterior of its marginal over y ~ N(0, 1) (8.104, 8.136)."""
    n = 20 if quick else 40
    key = jax.random.PRNGKey(86)
    XY = np.asarray(jax.random.normal(key, (n, 2))) * np.array([1.5, 1.0])

    def f2(XY):
        return np.sin(2 * XY[:, 0]) * np.cos(XY[:, 1]) + XY[:, 0] * XY[:, 1] / 2

    values = f2(XY)
    kernel = fit_se(XY, values, 1e-6)
    x = np.linspace(-3.0, 3.0, 61)
    marg = bq.marginal_posterior(kernel, XY, values, (0,), bq.gaussian(0.0, 1.0), x[:, None], 1e-6)
    mean, sd = np.asarray(marg.mean), np.sqrt(np.maximum(np.diag(np.asarray(marg.cov)), 0.0))
    truth = np.sin(2 * x) * np.exp(-0.5)
    t, w = hermite(80)
    grid = np.array([[a, b] for a in x for b in t])
    dense = np.asarray(gp.predict(kernel, XY, values, 1e-6, grid, full_cov=False).mean).reshape(x.size, t.size) @ w
    rows.append(row("8.6", "the marginal's mean is the posterior mean integrated over y (8.91-8.104)",
                    "max abs(closed form - Gauss-Hermite over y)", float(np.max(np.abs(mean - dense))),
                    float(np.max(np.abs(mean - dense))) < 1e-8, "< 1e-8"))  # fmt: skip
    inside = float(np.mean(np.abs(truth - mean) <= 2 * sd))
    rows.append(row("8.6", "the marginal's posterior covers the true marginal int f(x, y) p(y) dy",
                    "fraction of x on [-3, 3] with the truth within 2 sd", inside, inside >= 0.9,
                    ">= 0.9"))  # fmt: skip
    g = np.linspace(-3.0, 3.0, 41)
    G = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    surface = np.asarray(gp.predict(kernel, XY, values, 1e-6, G, full_cov=False).mean).reshape(41, 41)
    figure, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    a.contourf(g, g, surface.T, levels=20)
    a.plot(XY[:, 0], XY[:, 1], "k.", ms=4)
    a.set_xlabel("x")
    a.set_ylabel("y (nuisance, N(0, 1))")
    a.set_title("Fig. 8.6: 2-D GP posterior mean", fontsize=10)
    b.fill_between(x, mean - 2 * sd, mean + 2 * sd, color="C0", alpha=0.25)
    b.plot(x, mean, "C0", label="marginal over y (8.104, 8.136)")
    b.plot(x, truth, "k:", label="sin(2x) exp(-1/2)")
    b.legend(fontsize=7)
    b.set_title("its 1-D marginal", fontsize=10)
    figure.tight_layout()
    figure.savefig(out / "fig8_6.png", dpi=110)
    plt.close(figure)


def against_monte_carlo(out: Path, paths: dict, rows: list) -> list[dict]:
    """Errors of BQ, log-BQ and Monte Carlo at equal numbers of evaluations (comparison table and plot)."""
    table = []
    for name, f, truth, keys in (("smooth", smooth, SMOOTH_Z, ("bq_smooth",)),
                                 ("likelihood", likelihood, LIKELIHOOD_Z, ("bq", "log"))):  # fmt: skip
        for i, n in enumerate(p.n for p in paths[keys[0]]):
            rmse, mae = monte_carlo(f, n, jax.random.PRNGKey(1000 + n))
            entry = {"integrand": name, "n": n, "true Z": truth, "MC RMSE": rmse, "MC mean abs err": mae}
            for key in keys:
                step = paths[key][i]
                label = "log-BQ" if key == "log" else "BQ"
                entry[f"{label} |err|"] = abs(step.mean - truth)
                entry[f"{label} sd"] = step.sd
            table.append(entry)
    smooth_rows = [t for t in table if t["integrand"] == "smooth" and t["n"] >= 8]
    ratio = max(t["BQ |err|"] / t["MC RMSE"] for t in smooth_rows)
    rows.append(row("BQ vs MC", "BQ beats Monte Carlo at equal evaluations on a smooth integrand (sec. 8.5)",
                    "largest BQ |err| / MC RMSE over n >= 8", ratio, ratio < 1.0, "< 1"))  # fmt: skip
    last = [t for t in table if t["integrand"] == "likelihood"][-1]
    rows.append(row("BQ vs MC", "a GP on log l does better than a GP on l for a likelihood (sec. 8.11.1)",
                    f"log-BQ |err| / BQ |err| at n = {last['n']}", last["log-BQ |err|"] / last["BQ |err|"],
                    None, "reported (the thesis cites it, no number)"))  # fmt: skip
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, name in zip(axes, ("smooth", "likelihood"), strict=True):
        part = [t for t in table if t["integrand"] == name]
        n = [t["n"] for t in part]
        ax.loglog(n, [t["MC RMSE"] for t in part], "k--", label="Monte Carlo RMSE")
        ax.loglog(n, [t["BQ |err|"] for t in part], "C0o-", label="BQ |error|")
        if name == "likelihood":
            ax.loglog(n, [t["log-BQ |err|"] for t in part], "C1s-", label="log-BQ |error|")
        ax.set_xlabel("evaluations n")
        ax.set_title(f"{name} integrand", fontsize=10)
        ax.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(out / "bq_vs_mc.png", dpi=110)
    plt.close(figure)
    return table


def main(quick: bool, out: Path) -> None:
    out = Path(out)
    schedule = [4, 8, 16] if quick else [4, 8, 16, 32]
    paths = {
        "bq_smooth": sequential(lambda X: smooth(X[:, 0]), MEASURE, POOL, schedule, NOISE),
        "bq": sequential(lambda X: likelihood(X[:, 0]), MEASURE, POOL, schedule, NOISE),
        "log": sequential(lambda X: likelihood(X[:, 0]), MEASURE, POOL, schedule, NOISE, log=True),
    }
    rows: list = []
    gp_vs_log_gp(out, paths, schedule[1:3], rows)
    bq_illustration(out, paths["bq_smooth"][1], rows)
    marginals(out, quick, rows)
    table = against_monte_carlo(out, paths, rows)
    write_csv(out / "bq_vs_mc.csv", table)
    agree = sum(r["verdict"] == "AGREE" for r in rows)
    checked = sum(r["verdict"] != "REPORTED" for r in rows)
    lines = "\n".join(
        f"| {t['integrand']} | {t['n']} | {t['MC RMSE']:.3g} | {t['MC mean abs err']:.3g} | {t['BQ |err|']:.3g} | "
        f"{t['BQ sd']:.3g} | {t.get('log-BQ |err|', float('nan')):.3g} | {t.get('log-BQ sd', float('nan')):.3g} |"
        for t in table
    )
    preamble = f"""# Duvenaud 2014 ch. 8: GP vs log-GP, Bayesian quadrature, marginals (Figs 8.1-8.3, 8.6)

{"Quick" if quick else "Full"} run. Ch. 8 is a draft with no test functions and no numbers: the integrands, the
measure and the protocol are ours (the script's docstring; docs/sources/duvenaud.md#fig-bayesian-quadrature). Figs
8.1 and 8.2 share the caption "A GP versus a log-GP"; we show it at {schedule[1]} and {schedule[2]} evaluations of
the likelihood. Figs 8.4-8.5 need data the draft leaves as "?" and are not reproduced. {agree} of {checked} checked
claims agree.

Errors at equal numbers of evaluations (true Z: smooth {SMOOTH_Z:.6f}, likelihood {LIKELIHOOD_Z:.6f}; MC RMSE
exact, MC mean abs error over {REPEATS} seeded runs; BQ nodes by the greedy min-variance design, hyperparameters
ML-II at each n). A log-BQ sd of nan means the linearised variance (8.49) came out negative: it is V_prior under
w = l_bar p minus the part the nodes explain, two numbers of order |beta|^2 whose difference is below their
rounding once the nodes pin log l down:

| integrand | n | MC RMSE | MC mean abs err | BQ abs err | BQ sd | log-BQ abs err | log-BQ sd |
|---|---|---|---|---|---|---|---|
{lines}
"""
    write_comparison(out, rows, preamble)
