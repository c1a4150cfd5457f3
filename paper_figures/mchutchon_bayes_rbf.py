"""McHutchon (2014) Figs 1.6 and 1.8: the GP posterior and the Bayesian RBF network on the same five points
(sec. 1.4, eqs. 1.31-1.35; docs/sources/mchutchon.md#bayes-rbf).

Assumed defaults (the thesis prints neither Fig 1.1's five points nor any setting): five points
x = (-2, -1.2, 0, 0.8, 2.1), y = (0.5, -0.3, 0.4, 1.0, -0.8); noise variance fixed at 0.01. Fig 1.6: SE kernel, its
variance and lengthscale l by type-II ML (``ml2`` on ``gp/regression``, noise fixed, 4 starts). Fig 1.8: ten Gaussian
basis functions with fixed centres evenly on [min x - l, max x + l] and fixed width l / sqrt(2) (the width whose
degenerate kernel tends to the SE kernel of lengthscale l as the centres fill the line); sigma_w^2 by type-II ML of
the collapsed form (``ml2`` on ``blr/rbf`` with ``weights="collapsed"``, width and noise fixed); the weights'
posterior by the ``exact`` engine on the latent form (4 x 1000 draws, quick 4 x 250), f* = phi(x*)^T w per draw.
The "infinitely many features" remark is checked with 301 centres on [-15, 15] at the weight variance
``rbf_network.tiling_weight_variance`` (Riemann sum of the Gaussian-product integral).
"""

from pathlib import Path

import numpy as np

import inference
import zoo
from paper_figures._claims import band, pass_fail, pyplot, run_groups, write_results
from zoo import gp, rbf_network, regression

DESCRIPTION = "McHutchon 2014 Figs 1.6/1.8: GP vs Bayesian RBF network (10 fixed basis functions) on five points"
X5 = np.array([-2.0, -1.2, 0.0, 0.8, 2.1])[:, None]
Y5 = np.array([0.5, -0.3, 0.4, 1.0, -0.8])
NOISE = 0.01
NUM_BASIS = 10
Z_MAX = 4.5  # |z| bound of a Monte Carlo mean against its closed form (MCSE units)


def gp_fit():
    """Fig 1.6's GP: (kernel, log evidence) by ml2, noise fixed."""
    run = inference.run(
        "gp/regression", {"X": X5, "y": Y5}, engine="ml2", num_chains=4, params={"noise": NOISE}, seed=1
    )
    est = run.point_estimates
    best = int(np.nanargmax(np.asarray(est["log_likelihood"])))
    values = {name: np.asarray(est[name][best]) for name in ("lengthscale", "variance")} | {"noise": NOISE}
    kernel, _ = regression.kernel_and_noise(values)
    return kernel, float(est["log_likelihood"][best])


def rbf_fit(width: np.ndarray, centres: np.ndarray) -> tuple[dict, float]:
    """sigma_w^2 by ml2 on the collapsed form (width, noise fixed): (params, log evidence)."""
    run = inference.run(
        zoo.get("blr/rbf", weights="collapsed"),
        {"X": X5, "C": centres, "y": Y5},
        engine="ml2",
        num_chains=4,
        params={"width": width, "noise": NOISE},
        seed=2,
    )
    est = run.point_estimates
    best = int(np.nanargmax(np.asarray(est["log_likelihood"])))
    params = {"width": width, "weight_variance": float(est["weight_variance"][best]), "noise": NOISE}
    return params, float(est["log_likelihood"][best])


def compute(quick: bool):
    kernel, gp_evidence = gp_fit()
    ell, sf2 = float(np.asarray(kernel.lengthscale)[0]), float(kernel.variance)
    width = np.array([ell / np.sqrt(2.0)])
    centres = np.linspace(X5.min() - ell, X5.max() + ell, NUM_BASIS)[:, None]
    params, rbf_evidence = rbf_fit(width, centres)
    draws = 250 if quick else 1000
    run = inference.run(
        "blr/rbf", {"X": X5, "C": centres, "y": Y5}, engine="exact", params=params, num_samples=draws, seed=3
    )
    w = np.asarray(run.posterior["w"]).reshape(-1, NUM_BASIS)
    grid = np.linspace(-8.0, 8.0, 321)[:, None]
    f_draws = np.asarray(rbf_network.features(grid, centres, width)) @ w.T  # (grid, draws)
    mean_cf, var_cf = (np.asarray(a) for a in rbf_network.predict(params, X5, centres, Y5, grid))
    n = f_draws.shape[1]
    z_mean = float(np.max(np.abs(f_draws.mean(1) - mean_cf) / np.sqrt(var_cf / n + 1e-300)))
    # the sample variance's relative sd is sqrt(2 / (n - 1)) for Gaussian draws
    rel_var = np.abs(f_draws.var(1, ddof=1) / var_cf - 1.0)
    z_var = float(np.max(rel_var[var_cf > 1e-12 * sf2]) / np.sqrt(2.0 / (n - 1)))
    evidence_gap = abs(float(run.posterior.attrs["log_evidence"]) - rbf_evidence)

    pred = gp.predict(kernel, X5, Y5, NOISE, grid, full_cov=False)
    gp_mean, gp_var = np.asarray(pred.mean), np.asarray(pred.cov)
    inside = (grid[:, 0] >= centres.min()) & (grid[:, 0] <= centres.max())
    in_band = float(np.max(np.abs(mean_cf - gp_mean)[inside] / (2 * np.sqrt(gp_var[inside]))))
    far = np.abs(grid[:, 0]) >= centres.max() + 3 * width[0]
    far_ratio = float(np.max(var_cf[far]) / sf2)
    far_gp = float(np.min(gp_var[far]) / sf2)

    # infinitely many features: a dense tiling with the weight variance that makes the degenerate kernel SE's
    spacing = 0.1
    tiles = np.arange(-15.0, 15.0 + spacing / 2, spacing)[:, None]
    tiled = {"width": width, "weight_variance": float(rbf_network.tiling_weight_variance(sf2, ell, spacing))}
    tiled["noise"] = NOISE
    near = np.abs(grid[:, 0]) <= 5.0
    k_gap = float(
        np.max(
            np.abs(
                np.asarray(
                    rbf_network.degenerate_kernel(grid[near], grid[near], tiles, width, tiled["weight_variance"])
                )
                - np.asarray(kernel(grid[near]))
            )
        )
        / sf2
    )
    tiled_mean, tiled_var = (np.asarray(a) for a in rbf_network.predict(tiled, X5, tiles, Y5, grid))
    tiled_gap = float(max(np.max(np.abs(tiled_mean - gp_mean)[near]), np.max(np.abs(tiled_var - gp_var)[near])))

    rows = [
        {
            "figure": "1.8",
            "claim": "weights integrated out: the predictive is eq. 1.35 (prior precision sigma_w^-2 I, erratum)",
            "measured": f"exact-engine draws ({n}) of f* vs eq. 1.35 on 321 inputs: max |z| mean {z_mean:.2f}, "
            f"variance max rel. error {z_var:.2f} sd units; evidence exact vs ml2 collapsed: {evidence_gap:.1e}",
            "verdict": pass_fail(z_mean < Z_MAX and z_var < Z_MAX and evidence_gap < 1e-8),
        },
        {
            "figure": "1.6/1.8",
            "claim": "within the range of the basis functions the two posteriors look very similar",
            "measured": f"max |mean RBF - mean GP| on the centres' range = {in_band:.2f} x (2 GP sd)",
            "verdict": pass_fail(in_band < 1.0),
        },
        {
            "figure": "1.8",
            "claim": "outside this range the variance of the RBF drops away to zero (the GP's returns to sf2)",
            "measured": f"beyond 3 widths past the last centre: RBF var <= {far_ratio:.1e} sf2; GP var >= "
            f"{far_gp:.3f} sf2",
            "verdict": pass_fail(far_ratio < 1e-2 and far_gp > 0.9),
        },
        {
            "figure": "1.8",
            "claim": "a GP is Bayesian feature regression with infinitely many features (the kernel trick)",
            "measured": f"{tiles.shape[0]} centres, spacing {spacing}: max |k_RBF - k_SE| = {k_gap:.1e} sf2 and max "
            f"predictive gap {tiled_gap:.1e} on [-5, 5]",
            "verdict": pass_fail(k_gap < 1e-6 and tiled_gap < 1e-6),
        },
    ]
    numbers = {
        "gp_lengthscale": ell,
        "gp_variance": sf2,
        "gp_log_evidence": gp_evidence,
        "rbf_weight_variance": params["weight_variance"],
        "rbf_log_evidence": rbf_evidence,
        "rbf_max_z_mean": z_mean,
        "rbf_far_variance_ratio": far_ratio,
    }
    data = {
        "grid": grid[:, 0],
        "gp": (gp_mean, np.sqrt(gp_var)),
        "rbf": (mean_cf, np.sqrt(var_cf)),
        "phi": np.asarray(rbf_network.features(grid, centres, width)),
    }
    return rows, numbers, data


def plot(out: Path, d) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    titles = ("Fig. 1.6: GP (SE)", "Fig. 1.8: Bayesian RBF, 10 bases")
    for ax, key, title in zip(axes, ("gp", "rbf"), titles, strict=True):
        band(ax, d["grid"], *d[key], "C2", "posterior mean +-2 sd")
        ax.plot(X5[:, 0], Y5, "b+", ms=10)
        ax.set_title(title)
        ax.set_xlabel("x")
    axes[1].plot(d["grid"], 0.4 * d["phi"] - 3.0, "r", lw=0.8)
    axes[0].set_ylabel("f(x)")
    fig.tight_layout()
    fig.savefig(out / "mchutchon_bayes_rbf.png", dpi=120)
    plt.close(fig)


def main(quick: bool, out: Path) -> None:
    out = Path(out)
    rows, numbers, _ = run_groups(out, [("rbf", compute, plot)], quick)
    write_results(out, rows, numbers, __doc__, quick)
