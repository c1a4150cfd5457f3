"""Kaiser 2021 Fig 6.3: Bayesian-optimisation surrogates on a function with local oscillations: a noise-free GP, a
homoscedastic GP and the latent-input GP (LGP), each with its expected-improvement (EI) choice of the next query.

Test function (the thesis gives none; docs/sources/kaiser.md#lgp-surrogate): f(x) = 4 (x - 0.7)^2 + 0.25 sin(24 pi x)
on [0, 1], a quadratic trend (minimum at 0.7) under oscillations of period 1/12; 12 observations uniform on [0, 1]
(numpy seed 3), minimisation. Surrogates, all through ``inference.run``:
- noise-free GP: ``gp/regression`` (SE), ML-II (``ml2``, 4 starts, the best kept) with the noise fixed at 1e-6;
- homoscedastic GP: the same with the noise learnt;
- LGP: ``gp/latent-input`` (one latent per observation, SE-ARD on (x, h)), the mean-field Gaussian guide over the
  latents and hyperparameters (``svi``, Adam lr 0.01, 3000 steps), its predictive of g(x, 0) the mixture over 100
  draws of the guide.
EI for minimisation, EI(x) = (m* - mu) Phi(z) + s phi(z), z = (m* - mu) / s, with mu, s the surrogate's predictive
mean and sd of f (the LGP: of g(x, 0)) and m* the smallest predictive mean at the observations (the plug-in for noisy
surrogates), maximised over 401 grid points.

Claims (the caption and sec. 6.2): the noise-free GP learns a short lengthscale; the homoscedastic GP explains the
oscillations with a high noise level; both lead to poorly informed EI queries; the LGP recovers the global trend and
its EI query lies in the area of interest (the trend's basin, |x - 0.7| < 0.15, which holds the global minimum); the
LGP has a lower marginal likelihood (its ELBO against the GPs' log evidence).
"""

from pathlib import Path

import jax.numpy as jnp
import numpy as np
from jax.scipy.stats import norm

import inference
from paper_figures._claims import band, pyplot, write_results
from zoo import gp, latent_input, regression

DESCRIPTION = "Kaiser 2021 Fig 6.3: BO surrogates (noise-free GP, homoscedastic GP, latent-input GP) with EI"
TREND_MIN, BASIN = 0.7, 0.15
GRID = np.linspace(0.0, 1.0, 401)


def objective(x):
    return 4.0 * (x - TREND_MIN) ** 2 + 0.25 * np.sin(24.0 * np.pi * x)


def trend(x):
    return 4.0 * (x - TREND_MIN) ** 2


def settings(quick: bool) -> dict:
    if quick:
        return {"starts": 2, "steps": 1500, "draws": 40}
    return {"starts": 4, "steps": 3000, "draws": 100}


def expected_improvement(mean, sd, best):
    """EI for minimisation (...): (best - mean) Phi(z) + sd phi(z), z = (best - mean) / sd."""
    z = (best - mean) / sd
    return (best - mean) * norm.cdf(z) + sd * norm.pdf(z)


def gp_surrogate(X, y, s: dict, params: dict):
    """ML-II GP regression (the best of ``starts``): predictive mean and sd of f on GRID, at X, and the estimates."""
    run = inference.run("gp/regression", {"X": X[:, None], "y": y}, engine="ml2", num_chains=s["starts"], seed=0,
                        params=params)  # fmt: skip
    est = run.point_estimates
    chosen = est.isel(chain=int(np.nanargmax(np.asarray(est["log_likelihood"]))))
    kernel, noise = regression.kernel_and_noise({k: chosen[k].values for k in chosen.data_vars} | params)
    grid = gp.predict(kernel, X[:, None], y, noise, GRID[:, None], full_cov=False)
    at_data = gp.predict(kernel, X[:, None], y, noise, X[:, None], full_cov=False)
    evidence = float(gp.log_marginal_likelihood(kernel, X[:, None], y, noise))
    return {"mean": np.asarray(grid.mean), "sd": np.sqrt(np.asarray(grid.cov)), "at_data": np.asarray(at_data.mean),
            "lengthscale": float(np.squeeze(kernel.lengthscale)), "noise": float(noise),
            "log_evidence": evidence}  # fmt: skip


def lgp_surrogate(X, y, s: dict):
    """The LGP by mean-field VI: mixture moments of g(x, 0) over the guide's draws, on GRID and at X."""
    run = inference.run("gp/latent-input", {"X": X[:, None], "y": y}, engine="svi", guide="normal", seed=0,
                        num_steps=s["steps"], learning_rate=0.01, num_samples=s["draws"])  # fmt: skip
    post = run.posterior
    names = ("latent", "lengthscale", "variance", "noise")
    points = jnp.asarray(np.concatenate([GRID, X])[:, None])
    means, variances = [], []
    for i in range(s["draws"]):
        draw = {k: np.asarray(post[k].values[0, i]) for k in names}
        m, v = latent_input.predict_at_zero(draw, jnp.asarray(X[:, None]), jnp.asarray(y), points)
        means.append(np.asarray(m))
        variances.append(np.asarray(v))
    means, variances = np.array(means), np.array(variances)
    mean, var = means.mean(0), variances.mean(0) + means.var(0)
    ls = np.asarray(post["lengthscale"].values[0]).mean(0)
    elbo = float(np.mean(np.asarray(run.optimization["elbo"].values[0, -max(1, s["steps"] // 10) :])))
    return {"mean": mean[: GRID.size], "sd": np.sqrt(var[: GRID.size]), "at_data": mean[GRID.size :],
            "lengthscale": float(ls[0]), "latent_lengthscale": float(ls[1]),
            "noise": float(np.asarray(post["noise"].values[0]).mean()), "log_evidence": elbo}  # fmt: skip


def compute(quick: bool):
    s = settings(quick)
    X = np.sort(np.random.default_rng(3).uniform(0.0, 1.0, 12))
    y = objective(X)
    fits = {
        "noise-free GP": gp_surrogate(X, y, s, {"noise": 1e-6}),
        "homoscedastic GP": gp_surrogate(X, y, s, {}),
        "LGP": lgp_surrogate(X, y, s),
    }
    for fit in fits.values():
        ei = np.asarray(expected_improvement(fit["mean"], np.maximum(fit["sd"], 1e-12), fit["at_data"].min()))
        fit["ei"], fit["query"] = ei, float(GRID[np.argmax(ei)])
        fit["trend_error"] = float(np.max(np.abs(fit["mean"] - trend(GRID))))
    nf, ho, lgp = fits["noise-free GP"], fits["homoscedastic GP"], fits["LGP"]
    oscillation_sd = float(np.std(y - trend(X)))
    informed = {name: abs(fit["query"] - TREND_MIN) < BASIN for name, fit in fits.items()}
    true_min = float(GRID[np.argmin(objective(GRID))])

    def query(name):
        return f"{name} {fits[name]['query']:.3f}"

    rows = [
        {"figure": "6.3", "claim": "a noise-free GP learns a low lengthscale to explain the rapid oscillations",
         "measured": f"lengthscale noise-free {nf['lengthscale']:.3f}, homoscedastic {ho['lengthscale']:.3f}, LGP "
                     f"(x) {lgp['lengthscale']:.3f}; the oscillations' period 0.083",
         "verdict": "PASS" if nf["lengthscale"] < 0.5 * min(ho["lengthscale"], lgp["lengthscale"]) else "FAIL"},
        {"figure": "6.3", "claim": "a homoscedastic GP explains them with a high noise level",
         "measured": f"noise sd {np.sqrt(ho['noise']):.3f} against the oscillations' sd at the data "
                     f"{oscillation_sd:.3f}",
         "verdict": "PASS" if np.sqrt(ho["noise"]) > 0.5 * oscillation_sd else "FAIL"},
        {"figure": "6.3", "claim": "both lead to poorly informed EI queries (outside the area of interest)",
         "measured": f"EI queries: {query('noise-free GP')}, {query('homoscedastic GP')} (area of interest "
                     f"|x - {TREND_MIN}| < {BASIN}; global minimum at {true_min:.3f})",
         "verdict": "PASS" if not informed["noise-free GP"] and not informed["homoscedastic GP"] else "FAIL"},
        {"figure": "6.3", "claim": "the LGP recovers the global trend",
         "measured": "max |predictive mean - trend| over [0, 1]: "
                     + ", ".join(f"{k} {v['trend_error']:.3f}" for k, v in fits.items()),
         "verdict": "PASS" if lgp["trend_error"] < min(nf["trend_error"], ho["trend_error"]) else "FAIL"},
        {"figure": "6.3", "claim": "... and its EI query is informed (in the area of interest)",
         "measured": f"EI query: {query('LGP')}; the LGP's lengthscale on the latent {lgp['latent_lengthscale']:.2f}",
         "verdict": "PASS" if informed["LGP"] else "FAIL"},
        {"figure": "6.3", "claim": "(text) the LGP has a lower marginal likelihood",
         "measured": f"LGP ELBO {lgp['log_evidence']:.2f}; log evidence noise-free {nf['log_evidence']:.2f}, "
                     f"homoscedastic {ho['log_evidence']:.2f}",
         "verdict": "PASS" if lgp["log_evidence"] < ho["log_evidence"] else "FAIL"},
    ]  # fmt: skip
    numbers = {f"{name} {key}": fit[key] for name, fit in fits.items()
               for key in ("lengthscale", "noise", "log_evidence", "query", "trend_error")}  # fmt: skip
    return rows, numbers, {"X": X, "y": y, "fits": fits}


def plot(out: Path, data: dict) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(2, 3, figsize=(14, 5.5), sharex=True, height_ratios=(3, 1))
    for j, (name, fit) in enumerate(data["fits"].items()):
        ax = axes[0, j]
        ax.plot(GRID, objective(GRID), color="0.6", lw=0.8, label="f")
        band(ax, GRID, fit["mean"], fit["sd"], "C0", "surrogate")
        ax.plot(data["X"], data["y"], "k.", label="observations")
        ax.axvline(fit["query"], color="C3", ls="--", label="EI query")
        ax.set_title(name)
        axes[1, j].plot(GRID, fit["ei"], color="C3")
        axes[1, j].set_xlabel("x")
    axes[0, 0].legend(fontsize=7)
    axes[1, 0].set_ylabel("EI")
    fig.tight_layout()
    fig.savefig(out / "kaiser_bo_surrogates.png", dpi=110)
    plt.close(fig)


def main(quick: bool, out: Path) -> None:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows, numbers, data = compute(quick)
    plot(out, data)
    write_results(out, rows, numbers, __doc__, quick)
