"""Duvenaud 2014, ch. 7: prior draws of the GP-LVM and the iWMM (Figs 7.1-7.3) and the sampler's snapshots on
2-curve (Fig 7.7).

Figs 7.1-7.3 are draws from the generative process (``zoo.iwmm.prior``; no fit): a 1-D latent N(0, 1) warped by one
GP draw (7.1), a 2-D latent N(0, I) warped by a 2-output GP draw (7.2), a CRP mixture of NIW Gaussians in 2-D
warped the same way (7.3). The thesis gives no hyperparameters for them; ours (docs/sources/duvenaud.md#iwmm-draws):
SE warp with lengthscale 1, variance 1 and noise 1e-4 (7.1: the function itself, on [-4, 4]); 7.3: CRP
concentration 1, NIW r = 0.05, nu = 10, S = 2 I (clusters of sd ~0.45 spread over ~+-4) and warp lengthscale 1.5.
Fig 7.7: one chain of the thesis's sampler (Gibbs sweep and HMC, no symmetry or split-merge moves) on the standardised
2-curve set (100 points, Q = 2), started as the thesis does at X = Y with one cluster, through
``inference.run(zoo.get("iwmm"), ..., engine="iwmm")``; the first 100 iterations adapt the HMC step size (also moving
X and the labels). Full: 5000 iterations, snapshots at 500, 1800, 3000 and 5000 as printed; quick: 300, snapshots at
100, 200, 300. Rand index against the two curves at every iteration.
"""

from pathlib import Path

import numpy as np
from scipy.stats import norm

import inference
import zoo
from paper_figures._claims import pass_fail, pyplot, run_groups, write_results
from zoo.iwmm import data, gplvm, metrics, niw, prior

DESCRIPTION = "Duvenaud 2014 Figs 7.1-7.3, 7.7: GP-LVM and iWMM prior draws, iWMM sampler snapshots on 2-curve"
THETA = gplvm.WarpParams(lengthscale=np.ones(1), variance=np.asarray(1.0), noise=np.asarray(1e-4))
ETA = 1.0
WARMUP = 100
QUICK = {"iterations": 300, "snapshots": (100, 200, 300), "samples_7_1": 20_000}
FULL = {"iterations": 5000, "snapshots": (500, 1800, 3000, 5000), "samples_7_1": 200_000}
SEED = 7
# Fig 7.3's NIW prior (our choice; the model's default r = 1, nu = Q, S = I spreads clusters over tens of units, far
# beyond the warp's lengthscale): cluster sd ~ sqrt(S / nu) = 0.45, cluster means ~ N(0, Sigma / r), sd ~ 2
FIG_7_3_PRIOR = niw.NIWPrior(np.zeros(2), np.asarray(0.05), 2.0 * np.eye(2), np.asarray(10.0))
BANDWIDTHS = np.logspace(-2.5, 0.5, 60)  # the KDE's LOO grid (standardised-scale data)


def gaussian_vs_kde(rng, Y, size: int = 800):
    """Held-out log density per point of the best Gaussian and of a LOO-bandwidth KDE fitted on half of ``size``
    points of Y (the other half held out): (gap KDE - Gaussian, its standard error over the held-out points)."""
    idx = rng.permutation(len(Y))[:size]
    train, test = Y[idx[: len(Y) // 2]], Y[idx[len(Y) // 2 :]]
    mean, cov = train.mean(0), np.atleast_2d(np.cov(train.T))
    diff = test - mean
    L = np.linalg.cholesky(cov)
    z = np.linalg.solve(L, diff.T)
    log_gauss = -0.5 * np.sum(z**2, 0) - np.sum(np.log(np.diag(L))) - 0.5 * Y.shape[1] * np.log(2 * np.pi)
    log_kde = metrics.kde_test_log_density(train, test, metrics.loo_bandwidth(train, BANDWIDTHS))
    gap = log_kde - log_gauss
    return float(gap.mean()), float(gap.std(ddof=1) / np.sqrt(len(gap)))


def figure_7_1(settings):
    """A 1-D GP-LVM draw: f on a fine grid, p(y) by pushing N(0, 1) through f (cell masses) and by sampling."""
    rng = np.random.default_rng(SEED)
    # f drawn at 201 points (spacing 0.04, noise variance 1e-8 so the factor needs no jitter), then on the fine grid
    # by its GP interpolant (the conditional mean): a smooth function, no jitter-sized wiggles between the points
    theta = THETA._replace(noise=np.asarray(1e-8))
    coarse = np.linspace(-4.0, 4.0, 201)[:, None]
    fc, jitter = prior.warp(rng, coarse, theta, 1)
    grid = np.linspace(-4.0, 4.0, 1601)
    f = np.asarray(gplvm.predictive(fc, coarse, theta, grid[:, None])[0])[:, 0]
    # exact pushforward of the latent density, cell by cell (f linear within a cell of width 0.005)
    mass = np.diff(norm.cdf(grid))
    bins = np.linspace(f.min(), f.max(), 61)
    lo, hi = np.minimum(f[:-1], f[1:]), np.maximum(f[:-1], f[1:])
    overlap = np.clip(np.minimum(hi[:, None], bins[None, 1:]) - np.maximum(lo[:, None], bins[None, :-1]), 0, None)
    width = np.maximum(hi - lo, 1e-300)
    exact = (mass[:, None] * np.where((hi - lo)[:, None] > 0, overlap / width[:, None], 0.0)).sum(0)
    # Monte Carlo: latent samples mapped through f (linear interpolation on the grid)
    x = rng.standard_normal(settings["samples_7_1"])
    x = x[np.abs(x) < 4.0]
    y = np.interp(x, grid, f)
    counts = np.histogram(y, bins)[0]
    p = exact / exact.sum()
    sd = np.sqrt(len(y) * p * (1 - p))
    zmax = float((np.abs(counts - len(y) * p) / np.maximum(sd, 1e-12))[p > 1e-4].max())
    # KL(p(y) || its best Gaussian) by Monte Carlo: log of the binned pushforward density minus the Gaussian's
    density = p / np.diff(bins)
    at = np.clip(np.searchsorted(bins, y) - 1, 0, len(p) - 1)
    kl = np.log(np.maximum(density[at], 1e-300)) - norm.logpdf(y, y.mean(), y.std())
    gap, se = float(kl.mean()), float(kl.std(ddof=1) / np.sqrt(len(kl)))
    turning = int(np.sum(np.diff(np.sign(np.diff(f))) != 0))
    rows = [
        {
            "figure": "7.1",
            "claim": "p(y) is the latent density warped through the sampled function",
            "measured": f"histogram of {len(y)} warped latent samples vs the pushforward of N(0, 1) through f (cell "
            f"masses, 60 bins): max |z| {zmax:.2f} over bins with p > 1e-4",
            "verdict": pass_fail(zmax < 4.5),
        },
        {
            "figure": "7.1",
            "claim": "the warped density is nonparametric (not Gaussian)",
            "measured": f"KL(p(y) || best Gaussian) by Monte Carlo on the binned pushforward: {gap:.3f} +- {se:.3f} "
            f"nats; turning points of f on [-4, 4]: {turning}; Cholesky jitter {jitter:.1e}",
            "verdict": pass_fail(gap > 3 * se),
        },
    ]
    return rows, {"7_1_max_z": zmax, "7_1_kde_gap": gap}, {"grid": grid, "f": f, "y": y, "bins": bins, "p": p, "x": x}


def figure_7_2(settings):
    """A 2-D GP-LVM draw: latent N(0, I) samples, one 2-output warp drawn jointly at them."""
    rng = np.random.default_rng(SEED + 1)
    X = rng.standard_normal((1000, 2))
    Y, jitter = prior.warp(rng, X, THETA._replace(lengthscale=np.ones(2)), 2)
    gap_x, se_x = gaussian_vs_kde(rng, X)
    gap, se = gaussian_vs_kde(rng, Y)
    rows = [
        {
            "figure": "7.2",
            "claim": "warping a 2-D Gaussian through a GP draw gives a non-Gaussian observed density",
            "measured": f"held-out log density per point, KDE minus best Gaussian: observed {gap:.3f} +- {se:.3f}; "
            f"latent (Gaussian) {gap_x:.3f} +- {se_x:.3f}; Cholesky jitter {jitter:.1e}",
            "verdict": pass_fail(gap > 3 * se and gap > gap_x + 3 * np.hypot(se, se_x)),
        }
    ]
    return rows, {"7_2_kde_gap": gap, "7_2_latent_gap": gap_x}, {"X": X, "Y": Y}


def figure_7_3(settings):
    """An iWMM prior draw (CRP mixture of NIW Gaussians, warped), plus the CRP and NIW draws checked in bulk."""
    rng = np.random.default_rng(SEED + 2)
    nprior = FIG_7_3_PRIOR
    X, labels, params = prior.latent_mixture(rng, 3000, nprior, ETA)
    Y, jitter = prior.warp(rng, X, THETA._replace(lengthscale=np.full(2, 1.5)), 2)
    draws = 300 if settings is QUICK else 2000
    K = np.array([prior.crp_labels(rng, 300, ETA).max() + 1 for _ in range(draws)])
    expected = prior.expected_clusters(300, ETA)
    z_k = float((K.mean() - expected) / (K.std(ddof=1) / np.sqrt(draws)))
    # NIW: the precision R ~ W(S^-1, nu) has E[R] = nu S^-1 (identity x 2 here); the precision of each draw
    precisions = np.stack([np.linalg.inv(prior.niw_draw(rng, nprior)[1]) for _ in range(draws)])
    target = float(nprior.nu) * np.linalg.inv(np.asarray(nprior.S))
    z_r = float(np.max(np.abs(precisions.mean(0) - target) / (precisions.std(0, ddof=1) / np.sqrt(draws) + 1e-300)))
    big = np.argmax(np.bincount(labels))
    gap, se = gaussian_vs_kde(rng, Y[labels == big], size=2000)
    rows = [
        {
            "figure": "7.3",
            "claim": "the latent mixture is a Dirichlet-process (CRP) mixture of Gaussians",
            "measured": f"clusters in {draws} CRP partitions of 300 points, eta {ETA:g}: mean {K.mean():.3f} vs "
            f"E[K] = {expected:.3f} (z {z_k:.2f}); this draw: {labels.max() + 1} clusters, sizes "
            f"{sorted(np.bincount(labels).tolist(), reverse=True)}",
            "verdict": pass_fail(abs(z_k) < 4),
        },
        {
            "figure": "7.3",
            "claim": "cluster parameters from the normal-inverse-Wishart prior (E.2-E.3)",
            "measured": f"mean precision of {draws} draws vs nu S^-1: max |z| {z_r:.2f} over entries",
            "verdict": pass_fail(z_r < 4),
        },
        {
            "figure": "7.3",
            "claim": "the warp turns the Gaussian clusters into non-Gaussian manifolds",
            "measured": f"largest cluster ({np.sum(labels == big)} points): held-out log density, KDE minus best "
            f"Gaussian {gap:.3f} +- {se:.3f} per point",
            "verdict": pass_fail(gap > 3 * se),
        },
    ]
    numbers = {"7_3_crp_mean": K.mean(), "7_3_crp_expected": expected, "7_3_niw_max_z": z_r, "7_3_kde_gap": gap}
    return rows, numbers, {"X": X, "Y": Y, "labels": labels, "params": params}


def figure_7_7(settings):
    """One chain of the thesis's sampler on 2-curve from X = Y and one cluster; its state after given iterations."""
    Y_all, truth = data.load("2-curve", seed=0)
    (Y,) = data.standardise(Y_all)
    total = settings["iterations"]
    run = inference.run(
        zoo.get("iwmm", latent_dim=2),
        {"Y": Y},
        engine="iwmm",
        seed=SEED,
        num_chains=1,
        num_warmup=WARMUP,
        num_samples=total - WARMUP,
        num_symmetry_moves=0,
        num_split_merge=0,
    )
    X = run.posterior["X"].values[0]  # (kept, N, 2): kept draw j is iteration WARMUP + j + 1
    labels = run.posterior["labels"].values[0]
    rand = np.array([metrics.rand_index(z, truth) for z in labels])
    sizes = [np.sort(np.bincount(z))[::-1] for z in labels]
    clusters = np.array([int(np.sum(s >= 5)) for s in sizes])
    snaps = {0: (Y, np.zeros(len(Y), int))} | {
        t: (X[t - WARMUP - 1], labels[t - WARMUP - 1]) for t in settings["snapshots"]
    }
    tail = rand[-min(2000, len(rand) // 2) :]
    first = int(np.argmax(rand >= 0.9)) + WARMUP + 1 if np.any(rand >= 0.9) else None
    snap_text = "; ".join(
        f"it {t}: {clusters[t - WARMUP - 1]} clusters of >= 5 points, Rand {rand[t - WARMUP - 1]:.3f}"
        for t in settings["snapshots"]
    )
    rows = [
        {
            "figure": "7.7",
            "claim": "started at X = Y with one cluster, the chain finds the two curves (after ~3000 iterations; "
            "the quick run's 300 are too few to test it)",
            "measured": f"{snap_text}; Rand >= 0.9 first at iteration {first}",
            "verdict": pass_fail(rand[-1] >= 0.9),
        },
        {
            "figure": "7.7",
            "claim": "the correct clustering is relatively stable once found",
            "measured": f"Rand >= 0.9 on {np.mean(tail >= 0.9):.1%} of the last {len(tail)} iterations (mean "
            f"{tail.mean():.3f})",
            "verdict": pass_fail(np.mean(tail >= 0.9) > 0.8),
        },
    ]
    numbers = {"7_7_rand_last": rand[-1], "7_7_first_iteration_rand_0_9": first or -1}
    return rows, numbers, {"snaps": snaps, "truth": truth, "rand": rand, "clusters": clusters}


def main(quick: bool, out: Path) -> None:
    out = Path(out)
    groups = [(name, FIGURES[name], PLOTS[name]) for name in FIGURES]
    rows, numbers, _ = run_groups(out, groups, QUICK if quick else FULL, seconds_key="fig{}_seconds")
    write_results(out, rows, numbers, __doc__, quick)


# ---------------------------------------------------------------------------------------------------------------
# Plots


def plot_7_1(out, a):
    plt = pyplot()
    fig = plt.figure(figsize=(7, 6))
    ax_f = fig.add_axes([0.35, 0.35, 0.6, 0.6])
    ax_py = fig.add_axes([0.08, 0.35, 0.22, 0.6], sharey=ax_f)
    ax_px = fig.add_axes([0.35, 0.08, 0.6, 0.22], sharex=ax_f)
    ax_f.plot(a["grid"], a["f"], "k")
    for x0 in np.linspace(-2, 2, 9):
        y0 = np.interp(x0, a["grid"], a["f"])
        ax_f.plot([x0, x0], [a["f"].min(), y0], color="0.7", lw=0.6)
        ax_f.plot([a["grid"][0], x0], [y0, y0], color="0.7", lw=0.6)
    ax_f.set_title("Fig 7.1: f ~ GP (top right), p(x) (bottom), p(y) (left)")
    ax_px.plot(a["grid"], norm.pdf(a["grid"]), "C0")
    centres = 0.5 * (a["bins"][1:] + a["bins"][:-1])
    ax_py.barh(centres, a["p"] / np.diff(a["bins"]), height=np.diff(a["bins"]), color="C1", alpha=0.6)
    ax_py.hist(a["y"], a["bins"], density=True, orientation="horizontal", histtype="step", color="k")
    ax_py.invert_xaxis()
    fig.savefig(out / "fig7_1_gplvm_1d.png", dpi=110)
    plt.close(fig)


def plot_7_2(out, a):
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
    axes[0].scatter(*a["X"][:500].T, s=3, c="C0")
    t = np.linspace(0, 2 * np.pi, 100)
    for r in (1.0, 2.0):
        axes[0].plot(r * np.cos(t), r * np.sin(t), "k", lw=0.8)
    axes[0].set_title("Fig 7.2: latent x ~ N(0, I), isocontours")
    axes[1].hist2d(*a["Y"].T, bins=60, cmap="Blues")
    axes[1].scatter(*a["Y"][:500].T, s=2, c="k")
    axes[1].set_title("Fig 7.2: observed y = f(x), density")
    fig.tight_layout()
    fig.savefig(out / "fig7_2_gplvm_2d.png", dpi=110)
    plt.close(fig)


def plot_7_3(out, a):
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
    t = np.linspace(0, 2 * np.pi, 100)
    circle = np.stack([np.cos(t), np.sin(t)])
    for k, (mean, cov) in enumerate(a["params"]):
        ring = mean[:, None] + 2 * np.linalg.cholesky(cov) @ circle
        axes[0].plot(*ring, color=f"C{k % 10}", lw=0.8)
    shown = slice(0, 1000)  # of the 3000 points drawn
    axes[0].scatter(*a["X"][shown].T, c=a["labels"][shown] % 10, cmap="tab10", s=5, vmin=0, vmax=9)
    axes[0].set_title("Fig 7.3: latent DP mixture of Gaussians")
    axes[1].scatter(*a["Y"][shown].T, c=a["labels"][shown] % 10, cmap="tab10", s=5, vmin=0, vmax=9)
    axes[1].set_title("Fig 7.3: warped by a GP draw")
    fig.tight_layout()
    fig.savefig(out / "fig7_3_iwmm_prior.png", dpi=110)
    plt.close(fig)


def plot_7_7(out, a):
    plt = pyplot()
    snaps = a["snaps"]
    fig, axes = plt.subplots(1, len(snaps) + 1, figsize=(3.2 * (len(snaps) + 1), 3.4))
    order = np.argsort(np.argsort(a["truth"] * 10 + np.arange(len(a["truth"])) / len(a["truth"])))
    for ax, (t, (X, z)) in zip(axes, snaps.items(), strict=False):
        for k in np.unique(z):
            pts = X[z == k]
            if len(pts) >= 3:
                mean, cov = pts.mean(0), np.cov(pts.T) + 1e-9 * np.eye(2)
                t_ = np.linspace(0, 2 * np.pi, 100)
                ax.plot(
                    *(mean[:, None] + 2 * np.linalg.cholesky(cov) @ np.stack([np.cos(t_), np.sin(t_)])), "k", lw=0.7
                )
        ax.scatter(*X.T, c=order, cmap="viridis", s=6)
        ax.set_title(f"Fig 7.7: iteration {t}, {len(np.unique(z))} clusters", fontsize=8)
    axes[-1].plot(np.arange(WARMUP + 1, WARMUP + 1 + len(a["rand"])), a["rand"], lw=0.6)
    axes[-1].set_title("Rand index vs the two curves", fontsize=8)
    axes[-1].set_xlabel("iteration")
    fig.tight_layout()
    fig.savefig(out / "fig7_7_snapshots.png", dpi=110)
    plt.close(fig)


FIGURES = {"7_1": figure_7_1, "7_2": figure_7_2, "7_3": figure_7_3, "7_7": figure_7_7}
PLOTS = {"7_1": plot_7_1, "7_2": plot_7_2, "7_3": plot_7_3, "7_7": plot_7_7}
