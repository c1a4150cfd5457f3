"""Kaiser 2021 Figs 4.6-4.7 (the phenomenon, on synthetic data): NVC's analytic band against sampled deep-GP posteriors.

The thesis' figures use proprietary wind data (docs/sources/kaiser.md#nvc-vs-dsvi: "the method is reproducible on
synthetic data"), and report one qualitative claim: NVC's variational (analytic) band under-estimates the uncertainty
that sampling shows, "especially when the f_l become more non-linear" (sec. 2.7 after eq. 2.85; sec. 4.3 on Fig. 4.7a).

Assumed defaults (docs/sources/kaiser.md#nvc-vs-dsvi): one synthetic warped function, y = tanh(4 sin x) + N(0, 0.05^2)
(the ``deep_gp`` data of the zoo), x ~ U[-pi, pi] with the interval (0.4, 1.2) held out (a gap where the function sits
on its upper plateau, so the posterior must interpolate), N = 200 (quick: 80), M = 20 (quick: 10) inducing points per
layer at k-means centres, two layers, SE kernels. NVC (``deep_gp/nvc``, engine ``nvc``: MAP-II on the corrected
analytic bound, zero-mean layers, inner layer initialised to the identity, Adam lr 0.03, 5000 steps; quick 1500) and
DSVI (``deep_gp/dsvi``, engine ``svi`` with the model's guide: identity inner mean, MAP hyperparameters, Adam lr 0.01,
6000 steps with 2 samples; quick lr 0.02, 1000 steps with 1 -- under-converged, its noise stays high) are fitted to
the same data. Bands are for the latent f on a grid;
test metrics are for noisy y at 400 fresh test inputs on [-pi, pi] (gap included), with each model's learnt noise.

Shown: NVC's analytic band as printed (eq. 2.85: variance Psi K^-1 S K^-1 Psi^T, the marginal of the variational
distribution the bound is taken under), the full moment match of the same fitted NVC model (all Psi-statistic
terms), ancestral samples through the fitted NVC layers (the thesis' "sampled posterior"), and DSVI's sampled
predictive mixture (eq. 2.90, 300 samples) as a density shading.
"""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

import inference
from inference.files.tables import markdown_table, read_published, write_comparison, write_csv
from zoo import deep_gp as dg
from zoo import nvc
from zoo import sparse as sp

DESCRIPTION = "Kaiser 2021 Figs 4.6-4.7 (synthetic): NVC analytic bands vs DSVI and ancestral samples, 2-layer deep GP"
NOISE_STD = 0.05
GAP = (0.4, 1.2)
NUM_PRED_SAMPLES = 300
# DSVI diverges at lr 0.03 here (its ELBO estimate blows up); NVC's deterministic bound takes it.
QUICK = {"nvc_steps": 1500, "nvc_lr": 0.03, "dsvi_steps": 1000, "dsvi_lr": 0.02, "dsvi_particles": 1}
FULL = {"nvc_steps": 5000, "nvc_lr": 0.03, "dsvi_steps": 6000, "dsvi_lr": 0.01, "dsvi_particles": 2}


def make_data(quick: bool):
    """Training set (with the gap), test inputs/targets, plotting grid, and initial inducing inputs."""
    n, m = (80, 10) if quick else (200, 20)
    k_x, k_y, k_t, k_ty, k_z = jax.random.split(jax.random.PRNGKey(0), 5)
    x = jax.random.uniform(k_x, (3 * n,), minval=-np.pi, maxval=np.pi)
    x = np.asarray(x)[(np.asarray(x) <= GAP[0]) | (np.asarray(x) >= GAP[1])][:n]
    X = jnp.asarray(np.sort(x))[:, None]
    y = dg.warped_step(X[:, 0]) + NOISE_STD * jax.random.normal(k_y, (n,))
    X_test = jax.random.uniform(k_t, (400, 1), minval=-np.pi, maxval=np.pi)
    y_test = dg.warped_step(X_test[:, 0]) + NOISE_STD * jax.random.normal(k_ty, (400,))
    grid = jnp.linspace(-np.pi, np.pi, 300)[:, None]
    Z = jnp.asarray(sp.init_inducing(k_z, X, m, "kmeans"))
    return X, y, X_test, y_test, grid, Z


def fit_nvc(X, y, Z, steps: int, lr: float):
    idata = inference.run("deep_gp/nvc", {"X": X, "Z": Z, "y": y}, engine="nvc", num_steps=steps, learning_rate=lr)
    point = {k: jnp.asarray(v.values[0]) for k, v in idata.point_estimates.items()}
    layers = nvc.layers_from_values(point, 2)
    return layers, float(point["nvc_bound"]), idata.posterior.attrs["wall_s"]


def fit_dsvi(X, y, Z, steps: int, particles: int, lr: float):
    data = {"X": X, "Z": Z, "y": y}
    idata = inference.run(
        "deep_gp/dsvi",
        data,
        engine="svi",
        guide="model",
        num_steps=steps,
        num_particles=particles,
        learning_rate=lr,
        num_samples=2,
    )
    point = {k: jnp.asarray(v.values[0]) for k, v in idata.point_estimates.items()}
    layers, noise = dg.layers_from_params(point, 2)
    elbo = idata.optimization["elbo"].values[0]
    return layers, noise, elbo, idata.posterior.attrs["wall_s"]


def mixture_log_lik(means, variances, y, noise):
    """Mean over points of log (1/S) sum_s N(y | m_s, v_s + noise): means, variances (S, n)."""
    var = variances + noise
    logp = -0.5 * (jnp.log(2 * jnp.pi * var) + (y - means) ** 2 / var)
    return float(jnp.mean(logsumexp(logp, axis=0) - jnp.log(means.shape[0])))


def gaussian_log_lik(mean, var, y, noise):
    return mixture_log_lik(mean[None], var[None], y, noise)


def coverage(mean, sd, y):
    return float(jnp.mean(jnp.abs(y - mean) <= 2 * sd))


def predictives(nvc_layers, dsvi_layers, X_new, key):
    """Per method: (mean, var) of f (Gaussian) or (means, vars) (S, n) of a mixture."""
    k_nvc, k_dsvi = jax.random.split(key)

    @jax.jit
    def run(X_new):
        return {
            "NVC analytic (eq. 2.85)": nvc.nvc_predict(nvc_layers, X_new, "nvc"),
            "NVC full moment match": nvc.nvc_predict(nvc_layers, X_new, "moment"),
            "NVC ancestral samples": nvc.nvc_sample(nvc_layers, X_new, k_nvc, NUM_PRED_SAMPLES),
            "DSVI samples": dg.dsvi_predict(dsvi_layers, X_new, k_dsvi, NUM_PRED_SAMPLES),
        }

    return run(X_new)


def summarise(pred):
    mean, var = pred
    if mean.ndim == 1:
        return mean, var
    return dg.mixture_moments(mean, var)


def main(quick: bool, out: Path) -> None:
    out = Path(out)
    X, y, X_test, y_test, grid, Z = make_data(quick)
    settings = QUICK if quick else FULL
    nvc_layers, nvc_bound, nvc_wall = fit_nvc(X, y, Z, settings["nvc_steps"], settings["nvc_lr"])
    dsvi_layers, dsvi_noise, dsvi_elbo, dsvi_wall = fit_dsvi(
        X, y, Z, settings["dsvi_steps"], settings["dsvi_particles"], settings["dsvi_lr"]
    )
    noise = {"NVC": nvc_layers[-1].noise, "DSVI": dsvi_noise}

    both = predictives(nvc_layers, dsvi_layers, jnp.concatenate([grid, X_test]), jax.random.PRNGKey(1))
    n_grid = grid.shape[0]
    on_grid = {k: (m[..., :n_grid], v[..., :n_grid]) for k, (m, v) in both.items()}
    on_test = {k: (m[..., n_grid:], v[..., n_grid:]) for k, (m, v) in both.items()}
    in_gap = (grid[:, 0] > GAP[0]) & (grid[:, 0] < GAP[1])
    rows = []
    for name in on_grid:
        s2 = noise["DSVI" if name.startswith("DSVI") else "NVC"]
        mean_g, var_g = summarise(on_grid[name])
        mean_t, var_t = summarise(on_test[name])
        pred_t = on_test[name]
        test_ll = gaussian_log_lik(*pred_t, y_test, s2) if pred_t[0].ndim == 1 else mixture_log_lik(*pred_t, y_test, s2)
        sd_g = jnp.sqrt(var_g)
        rows.append(
            {
                "method": name,
                "mean_sd_f_grid": float(sd_g.mean()),
                "mean_sd_f_data_region": float(sd_g[~in_gap].mean()),
                "mean_sd_f_gap": float(sd_g[in_gap].mean()),
                "rmse_f_grid": float(jnp.sqrt(jnp.mean((mean_g - dg.warped_step(grid[:, 0])) ** 2))),
                "test_log_lik_y": test_ll,
                "test_coverage_2sd_y": coverage(mean_t, jnp.sqrt(var_t + s2), y_test),
                "noise_std": float(jnp.sqrt(s2)),
            }
        )
    # DSVI's ELBO estimate can run away to ~1e154 (seen at N = 200, lr 0.01, 2 samples): the guide's log q(v_1) of a
    # collapsing inner-layer S_1 (diagonal of its Cholesky factor -> 0) loses all precision, -log q explodes and
    # feeds back. Counted here, not hidden; the fitted predictive is still reported.
    runaway = int(np.sum(~np.isfinite(dsvi_elbo) | (np.abs(dsvi_elbo) > 1e6)))
    extra = {
        "nvc_bound": nvc_bound,
        "dsvi_elbo_median_last100": float(np.median(dsvi_elbo[-100:])),
        "dsvi_elbo_runaway_steps": runaway,
        "nvc_fit_wall_s": nvc_wall,
        "dsvi_fit_wall_s": dsvi_wall,
        "N": X.shape[0],
        "M": Z.shape[0],
        **settings,
    }
    write_csv(out / "numbers.csv", [row | extra for row in rows])
    plot(out, X, y, grid, on_grid, in_gap)

    by = {row["method"]: row for row in rows}
    nvc_sd = by["NVC analytic (eq. 2.85)"]["mean_sd_f_grid"]
    dsvi_sd = by["DSVI samples"]["mean_sd_f_grid"]
    anc_sd = by["NVC ancestral samples"]["mean_sd_f_grid"]
    moment_sd = by["NVC full moment match"]["mean_sd_f_grid"]
    under = nvc_sd < dsvi_sd and nvc_sd < anc_sd
    verdict = (
        f"{'AGREE' if under else 'DISAGREE'}: mean sd of f on the grid, NVC analytic {nvc_sd:.4f} vs ancestral "
        f"samples of the same NVC fit {anc_sd:.4f} (ratio {nvc_sd / anc_sd:.2f}) and DSVI {dsvi_sd:.4f} (ratio "
        f"{nvc_sd / dsvi_sd:.2f}); in the gap {by['NVC analytic (eq. 2.85)']['mean_sd_f_gap']:.4f} vs "
        f"{by['NVC ancestral samples']['mean_sd_f_gap']:.4f} / {by['DSVI samples']['mean_sd_f_gap']:.4f}; "
        f"test log-lik NVC analytic {by['NVC analytic (eq. 2.85)']['test_log_lik_y']:.3f} vs DSVI "
        f"{by['DSVI samples']['test_log_lik_y']:.3f}; 2-sd coverage of test y "
        f"{by['NVC analytic (eq. 2.85)']['test_coverage_2sd_y']:.3f} vs "
        f"{by['DSVI samples']['test_coverage_2sd_y']:.3f}. The full moment match of the same fit gives "
        f"{moment_sd:.4f} (= the sampled {anc_sd:.4f} up to MC error: with two layers the matched mean and variance "
        "are exact), so the under-estimation is the terms eq. 2.85 drops, not the Gaussian message."
    )
    ll_nvc, ll_moment = (by[k]["test_log_lik_y"] for k in ("NVC analytic (eq. 2.85)", "NVC full moment match"))
    effect = "barely changes" if abs(ll_nvc - ll_moment) < 0.05 else "costs"
    verdict += (
        f" On noisy y it {effect} the test log-lik of the same fit ({ll_nvc:.3f} analytic vs {ll_moment:.3f} full "
        "moment match)."
    )
    if runaway:
        verdict += (
            f" Caveat: DSVI's ELBO estimate ran away on {runaway} of {dsvi_elbo.size} steps (log q(v_1) of a "
            "collapsing inner S_1; see numbers.csv), so its inner layer is close to deterministic."
        )
    ours = {"nvc_underestimates_uncertainty": verdict}
    table = [
        {"quantity": p["quantity"], "published": p["published"], "ours": ours[p["quantity"]], "source": p["source"]}
        for p in read_published(__file__)
    ]
    preamble = __doc__ + "\n\nNumbers (f = latent function; y = noisy test targets):\n\n" + markdown_table(rows)
    preamble += "\n\n" + markdown_table([extra]) + "\n\nComparison with the published claim:"
    print(write_comparison(out, table, preamble))


def plot(out: Path, X, y, grid, on_grid, in_gap) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2), sharey=True)
    x = np.asarray(grid[:, 0])
    for ax, sampled, colour in zip(
        axes, ("DSVI samples", "NVC ancestral samples"), ("tab:blue", "tab:green"), strict=True
    ):
        means, variances = on_grid[sampled]
        draws = np.asarray(means + jnp.sqrt(variances) * jax.random.normal(jax.random.PRNGKey(3), means.shape))
        lo, mid, hi = np.percentile(draws, [2.5, 50.0, 97.5], axis=0)
        ax.fill_between(x, lo, hi, color=colour, alpha=0.3, label=f"{sampled}: 95% interval")
        ax.plot(x, mid, color=colour, lw=1.0, label=f"{sampled}: median")
        mean, var = on_grid["NVC analytic (eq. 2.85)"]
        sd = np.sqrt(np.asarray(var))
        ax.plot(x, mean, "-.", color="darkviolet", lw=0.9, label="NVC analytic mean")
        ax.fill_between(x, mean - 2 * sd, mean + 2 * sd, color="darkviolet", alpha=0.15)
        ax.plot(x, mean + 2 * sd, color="darkviolet", lw=1.4, label="NVC analytic (eq. 2.85) ±2 sd")
        ax.plot(x, mean - 2 * sd, color="darkviolet", lw=1.4)
        mean_m, var_m = on_grid["NVC full moment match"]
        sd_m = np.sqrt(np.asarray(var_m))
        ax.plot(x, mean_m + 2 * sd_m, "--", color="darkviolet", lw=0.8, label="NVC full moment match ±2 sd")
        ax.plot(x, mean_m - 2 * sd_m, "--", color="darkviolet", lw=0.8)
        ax.plot(X[:, 0], y, ".", color="0.4", ms=3, label="data")
        ax.plot(x, np.tanh(4 * np.sin(x)), ":", color="k", lw=0.8, label="tanh(4 sin x)")
        ax.axvspan(*GAP, color="0.9", zorder=-1)
        ax.set_title(f"NVC analytic band vs {sampled} (f, latent)")
        ax.set_xlabel("x")
        ax.legend(fontsize=6.5, loc="lower right")
    fig.tight_layout()
    fig.savefig(out / "kaiser_nvc_vs_dsvi.png", dpi=120)
    plt.close(fig)
