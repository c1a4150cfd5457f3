"""Franzese (2024) lecture notes, Figs 2.1-2.3, 4.1-4.5, 5.1-5.3, 6.1 and 8.1: the illustrative figures of chs 2-8.

Assumed defaults (Franzese's lecture notes print no data for any of these; docs/sources/franzese.md#notes-figures):
- Figs 2.1/2.3: x ~ U[0, 10], N = 50, y = 2 x + 1 + N(0, 1), design [x, 1]; BLR with Sigma_p = sp2 I and the noise
  variance known (1). The registered ``blr`` has Sigma_p = I, so Sigma_p = sp2 I is run as ``blr`` on the design
  sqrt(sp2) X (w = sqrt(sp2) v, exact). OLS (eq. 2.2) and ridge are closed-form algebra here.
- Fig 2.2: y = sin x + N(0, 0.1^2), N = 20 on [0, 2 pi], SE kernel (variance 1, lengthscale 1); kernel LR is
  alpha = K^-1 y (eq. 2.9), computed as kernel ridge (K + lambda I)^-1 y with lambda -> 0 (Franzese's text has no
  regulariser).
- Figs 4.1-4.5 and 6.1: the companion notebook's noisy sine y = sin(2 pi 0.1 t) + N(0, 0.3^2) on [0, 40] (full: 500
  points as the notebook, quick: 100), predictions on [-20, 60], bands +-2 sd; hyperparameters by type-II ML
  (``ml2`` on ``gp/regression``, 4 starts, best kept); posterior at the training inputs by the ``exact`` engine on
  ``gp/regression-latent``. Fig 6.1 fits 40 random points and scores 400 held-out ones, the lengthscale fixed at 0.3
  (too short) or 30 (too long), variance and noise by ML-II.
- Figs 5.2/5.3: periodic kernel (corrected eq. 5.3) on the noisy sine, 60 points on [0, 30], ML-II started at
  period 8; Lin + Per on y = 0.3 x + sin x + N(0, 0.2^2), 60 points on [0, 15], extrapolated to [15, 25].
- Fig 8.1: the companion notebook's sin(2 pi t) + N(0, 0.3^2) on [0, 1] (full: 2000 points, the notebook's 500 000
  thinned; quick: 300), m = 5 inducing inputs initialised at a random subset, the hyperparameters by maximising
  the VFE bound at that Z (``ml2`` on ``gp/vfe``); then Z and the hyperparameters jointly, as Franzese's sec. 8.1
  does, by ``svi`` on ``gp/svgp`` with the model's guide (full batch, Adam lr 0.01, quick 500 / full 3000 steps;
  point-mass hyperparameters under the model's weak priors, so MAP), started at the fixed-Z fit and its optimal
  q(u); prediction eqs. 8.7-8.8 (DTC) at the learnt Z.
"""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import inference
import zoo
from paper_figures._claims import band as plot_band
from paper_figures._claims import pass_fail, pyplot, run_groups, write_results
from zoo import gp, kernels, regression
from zoo import sparse as sp

DESCRIPTION = (
    "Franzese 2024 Figs 2.1-2.3, 4.1-4.5, 5.1-5.3, 6.1, 8.1: OLS/kernel LR/BLR, GP prior and posterior, kernels, "
    "lengthscales, sparse GP (m = 5)"
)
STARTS = 4  # ML-II starts (the model's defaults, then spread 1 in the unconstrained space)
NOISE_STD = 0.3  # the companion notebook's noisy sine
SVGP_STEPS = {True: 500, False: 3000}  # Fig 8.1's joint fit of Z and the hyperparameters (quick, full)


# ---------------------------------------------------------------------------------------------------------------
# Closed-form limits (ch. 2)


def ols(X, y):
    """Least squares w = (X^T X)^-1 X^T y (eq. 2.2)."""
    return np.linalg.solve(X.T @ X, X.T @ y)


def ridge(X, y, lam):
    """Ridge w = (X^T X + lam I)^-1 X^T y: the BLR posterior mean with lam = sigma_n^2 / sigma_p^2."""
    return np.linalg.solve(X.T @ X + lam * np.eye(X.shape[1]), X.T @ y)


def kernel_ridge(K, y, lam):
    """Dual coefficients alpha = (K + lam I)^-1 y; lam = 0 is Franzese's kernel LR alpha = K^-1 y (eq. 2.9)."""
    return np.linalg.solve(K + lam * np.eye(K.shape[0]), y)


def sine(key, n, low, high, freq, noise_std, grid=False):
    if grid:
        x = np.linspace(low, high, n)
    else:
        x = np.sort(np.asarray(jax.random.uniform(key, (n,), minval=low, maxval=high)))
    f = np.sin(2 * np.pi * freq * x)
    y = f + noise_std * np.asarray(jax.random.normal(jax.random.fold_in(key, 1), (n,)))
    return x[:, None], f, y


def ml2_fit(model, data, kernel="SE", **options):
    """Type-II ML through inference.run (4 starts, best log likelihood kept): (kernel, noise, log likelihood)."""
    run = inference.run(model, data, engine="ml2", num_chains=STARTS, **options)
    est = run.point_estimates
    best = int(np.nanargmax(np.asarray(est["log_likelihood"])))
    values = {name: np.asarray(est[name][best]) for name in est.data_vars}
    values |= {name: np.asarray(value, float) for name, value in options.get("params", {}).items()}  # fixed ones
    kern, noise = regression.kernel_and_noise(values, kernel)
    return kern, noise, float(est["log_likelihood"][best])


def band(pred, noise=0.0):
    """(mean, sd) of a prediction with full or diagonal covariance (noise: added variance, for y)."""
    var = np.asarray(pred.cov)
    var = np.diag(var) if var.ndim == 2 else var
    return np.asarray(pred.mean), np.sqrt(np.maximum(var, 0.0) + noise)


# ---------------------------------------------------------------------------------------------------------------
# The figure groups; each returns (rows of the comparison, numbers, what to plot)


def chapter2(quick):
    key = jax.random.PRNGKey(21)
    x = np.sort(np.asarray(jax.random.uniform(key, (50,), minval=0.0, maxval=10.0)))
    X = np.stack([x, np.ones_like(x)], 1)
    y = 2 * x + 1 + np.asarray(jax.random.normal(jax.random.fold_in(key, 1), (50,)))
    s2 = 1.0
    w_ols = ols(X, y)
    draws = 500 if quick else 2000
    rows, blr_means, evid = [], {}, {}
    for sp2 in (1.0, 100.0, 1e4, 1e6):
        run = inference.run(
            "blr", {"X": X * np.sqrt(sp2), "y": y}, engine="exact", params={"noise": s2}, num_samples=draws, seed=2
        )
        w = np.sqrt(sp2) * np.asarray(run.posterior["w"]).reshape(-1, 2)
        se = w.std(0) / np.sqrt(w.shape[0])
        w_ridge = ridge(X, y, s2 / sp2)
        blr_means[sp2] = (w.mean(0), se, w_ridge, w.std(0))
        # BLR = GP with the linear kernel sp2 x.x': its exact evidence is log N(y | 0, sp2 X X^T + s2 I)
        evid[sp2] = (
            float(run.posterior.attrs["log_evidence"]),
            float(gp.log_marginal_likelihood(kernels.Linear(variance=sp2), X, y, s2)),
        )
    z = max(float(np.max(np.abs(m - r) / s)) for m, s, r, _ in blr_means.values())
    ev_err = max(abs(a - b) / abs(b) for a, b in evid.values())
    lim = {sp2: float(np.max(np.abs(ridge(X, y, s2 / sp2) - w_ols))) for sp2 in blr_means}
    rows += [
        {
            "figure": "2.1",
            "claim": "OLS (eq. 2.2) fits the noisy line",
            "measured": f"w_OLS = ({w_ols[0]:.3f}, {w_ols[1]:.3f}) vs true (2, 1); residual sd "
            f"{np.std(y - X @ w_ols):.3f} (noise sd 1)",
            "verdict": pass_fail(abs(w_ols[0] - 2) < 0.2),
        },
        {
            "figure": "2.3",
            "claim": "BLR posterior mean = ridge regression with lambda = s2/sp2 (Sigma_p = sp2 I)",
            "measured": f"exact-engine draws ({4 * draws} per sp2) vs ridge: max |z| = {z:.2f} over sp2 in "
            "{1, 1e2, 1e4, 1e6}",
            "verdict": pass_fail(z < 4.5),
        },
        {
            "figure": "2.3",
            "claim": "BLR = GP with the linear kernel sp2 x.x' (same evidence)",
            "measured": f"max relative |log p(y) BLR - GP| over sp2 = {ev_err:.1e} (K ill-conditioned at sp2 1e6)",
            "verdict": pass_fail(ev_err < 1e-8),
        },
        {
            "figure": "2.1/2.3",
            "claim": "OLS is the BLR mean's limit sp2 -> inf (lambda -> 0)",
            "measured": "max |w_ridge - w_OLS| = "
            + ", ".join(f"{v:.1e} (sp2 {k:g})" for k, v in lim.items())
            + f"; BLR slope sd {blr_means[1e6][3][0]:.3f}",
            "verdict": pass_fail(lim[1e6] < 1e-4 and lim[1e6] < lim[1.0]),
        },
    ]

    # Fig. 2.2: kernel LR with an SE kernel
    xk = np.linspace(0, 2 * np.pi, 20)[:, None]
    yk = np.sin(xk[:, 0]) + 0.1 * np.asarray(jax.random.normal(jax.random.PRNGKey(22), (20,)))
    se = kernels.SquaredExponential(variance=1.0, lengthscale=1.0)
    K = np.asarray(se(xk))
    grid = np.linspace(-1, 2 * np.pi + 1, 300)[:, None]
    Ks = np.asarray(se(grid, xk))
    inside = (grid[:, 0] >= 0) & (grid[:, 0] <= 2 * np.pi)
    fits, resid = {}, {}
    for lam in (1e-1, 1e-2, 1e-4, 1e-6):
        alpha = kernel_ridge(K, yk, lam)
        fits[lam] = Ks @ alpha
        resid[lam] = float(np.max(np.abs(K @ alpha - yk)))
    clean = np.sin(xk[:, 0])  # noise-free labels: the interpolation limit without K's rounding-level directions
    resid_clean = {lam: float(np.max(np.abs(K @ kernel_ridge(K, clean, lam) - clean))) for lam in (1e-2, 1e-4, 1e-6)}
    # the GP posterior mean with noise variance lam, through the exact engine (f at the training inputs)
    lam = 1e-2
    run = inference.run(
        "gp/regression-latent",
        {"X": xk, "y": yk},
        engine="exact",
        params={"lengthscale": [1.0], "variance": 1.0, "noise": lam},
        num_samples=draws,
        seed=3,
    )
    f = np.asarray(run.posterior["f"]).reshape(-1, 20)
    kr_train = K @ kernel_ridge(K, yk, lam)
    zk = float(np.max(np.abs(f.mean(0) - kr_train) / (f.std(0) / np.sqrt(f.shape[0]))))
    gp_mean = np.asarray(gp.predict(se, xk, yk, lam, grid, full_cov=False).mean)
    gp_err = float(np.max(np.abs(gp_mean - fits[lam])))
    rmse = float(np.sqrt(np.mean((fits[1e-2][inside] - np.sin(grid[inside, 0])) ** 2)))
    rows += [
        {
            "figure": "2.2",
            "claim": "kernel LR (SE) fits the non-linear sine",
            "measured": f"RMSE vs sin x on [0, 2 pi] = {rmse:.3f} (lambda 1e-2; noise sd 0.1); cond(K) = "
            f"{np.linalg.cond(K):.1e}, so K^-1 y needs lambda > 0",
            "verdict": pass_fail(rmse < 0.1),
        },
        {
            "figure": "2.2",
            "claim": "kernel ridge (K + lambda I)^-1 y = GP posterior mean with noise lambda",
            "measured": f"grid: max diff {gp_err:.1e}; train: exact-engine draws vs kernel ridge max |z| {zk:.2f}",
            "verdict": pass_fail(gp_err < 1e-8 and zk < 4.5),
        },
        {
            "figure": "2.2",
            "claim": "lambda -> 0 recovers kernel LR alpha = K^-1 y: the fit interpolates the data",
            "measured": "max train residual, sin x labels: "
            + ", ".join(f"{v:.1e} (lambda {k:g})" for k, v in resid_clean.items())
            + "; noisy labels: "
            + ", ".join(f"{v:.1e} (lambda {k:g})" for k, v in resid.items())
            + " (the noise lies in eigendirections of K below lambda: cond(K) ~ 1e13)",
            "verdict": pass_fail(resid_clean[1e-6] < 1e-3 < resid_clean[1e-2] and resid[1e-6] < resid[1e-1]),
        },
    ]
    plot_data = {"x": x, "y": y, "X": X, "w_ols": w_ols, "blr": blr_means[1.0], "s2": s2}
    plot_data |= {"xk": xk, "yk": yk, "grid": grid, "fits": fits}
    numbers = {"w_ols_slope": w_ols[0], "w_ols_intercept": w_ols[1], "blr_ridge_max_z": z, "kernel_gp_max_diff": gp_err}
    return rows, numbers, plot_data


def chapter4(quick):
    n = 100 if quick else 500
    X, f, y = sine(jax.random.PRNGKey(4), n, 0.0, 40.0, 0.1, NOISE_STD, grid=True)
    kern, noise, ll = ml2_fit("gp/regression", {"X": X, "y": y})
    grid = np.linspace(-20.0, 60.0, 300)[:, None]
    pred = gp.predict(kern, X, y, noise, grid)
    # Fig 4.1: prior samples, SE covariance vs a diagonal one (same marginal variance)
    key = jax.random.PRNGKey(41)
    L = np.asarray(gp.cholesky(kern(grid)))
    sv2 = float(kern.variance)
    prior_se = L @ np.asarray(jax.random.normal(key, (300, 200)))
    prior_diag = np.sqrt(sv2) * np.asarray(jax.random.normal(jax.random.fold_in(key, 1), (300, 200)))

    def lag1(s):
        return float(np.mean([np.corrcoef(c[:-1], c[1:])[0, 1] for c in s.T]))

    dx = grid[1, 0] - grid[0, 0]
    ell = float(np.asarray(kern.lengthscale).ravel()[0])
    # Fig 4.3: posterior at the training inputs by the exact engine, against eqs. 4.6-4.7
    m = min(n, 100)  # f at 100 training inputs (the engine's draws are (N,) vectors)
    sub = np.linspace(0, n - 1, m).astype(int)
    draws = 500 if quick else 2000
    run = inference.run(
        "gp/regression-latent",
        {"X": X[sub], "y": y[sub]},
        engine="exact",
        params={"lengthscale": np.asarray(kern.lengthscale), "variance": sv2, "noise": float(noise)},
        num_samples=draws,
        seed=5,
    )
    fd = np.asarray(run.posterior["f"]).reshape(-1, m)
    post_train = gp.predict(kern, X[sub], y[sub], noise, X[sub])
    zf = float(np.max(np.abs(fd.mean(0) - post_train.mean) / (fd.std(0) / np.sqrt(fd.shape[0]))))
    sd_ratio = float(np.median(fd.std(0) / np.sqrt(np.diag(post_train.cov))))
    sd_f = float(np.mean(np.sqrt(np.diag(post_train.cov))))
    sd_y = float(np.mean(np.sqrt(np.diag(post_train.cov) + noise)))
    # Fig 4.4: far from the data
    mean, sdf = band(pred)
    far = (grid[:, 0] <= -15) | (grid[:, 0] >= 55)
    # Fig 4.5: posterior samples of f* and y*
    Ls = np.asarray(gp.cholesky(pred.cov))
    fs = np.asarray(pred.mean)[:, None] + Ls @ np.asarray(jax.random.normal(jax.random.PRNGKey(45), (300, 2000)))
    ys = fs + np.sqrt(float(noise)) * np.asarray(jax.random.normal(jax.random.PRNGKey(46), fs.shape))
    cov_err = float(np.linalg.norm(np.cov(fs) - pred.cov) / np.linalg.norm(pred.cov))
    ys_var_err = float(np.max(np.abs(ys.var(1) / (np.diag(pred.cov) + noise) - 1)))
    pred_x = gp.predict(kern, X, y, noise, X, full_cov=False)
    coverage = float(np.mean(np.abs(y - pred_x.mean) <= 2 * np.sqrt(pred_x.cov + noise)))
    coverage_f = float(np.mean(np.abs(y - pred_x.mean) <= 2 * np.sqrt(pred_x.cov)))
    rows = [
        {
            "figure": "4.1",
            "claim": "SE-covariance samples are smooth; a diagonal covariance gives independent noise",
            "measured": f"lag-1 autocorrelation on a {dx:.2f} grid: SE {lag1(prior_se):.3f} (k(dx)/k(0) = "
            f"{np.exp(-0.5 * dx**2 / ell**2):.3f}), diagonal {lag1(prior_diag):.3f}; same marginal sd",
            "verdict": pass_fail(lag1(prior_se) > 0.9 and abs(lag1(prior_diag)) < 0.05),
        },
        {
            "figure": "4.2",
            "claim": "noisy labels (the companion's sine)",
            "measured": f"N = {n}; ML-II: lengthscale {ell:.2f}, sigma_v {np.sqrt(sv2):.2f}, sigma_n "
            f"{np.sqrt(float(noise)):.3f} (true 0.3), log p(y) {ll:.1f}",
            "verdict": pass_fail(abs(np.sqrt(float(noise)) - NOISE_STD) < 0.05),
        },
        {
            "figure": "4.3",
            "claim": "posterior of f at the training inputs is eqs. 4.6-4.7; y has the same mean, larger sd",
            "measured": f"exact-engine draws vs eq. 4.6 max |z| {zf:.2f}, median sd ratio {sd_ratio:.3f}; mean sd "
            f"of f {sd_f:.3f} vs of y {sd_y:.3f}",
            "verdict": pass_fail(zf < 5 and abs(sd_ratio - 1) < 0.05 and sd_y > sd_f),
        },
        {
            "figure": "4.4",
            "claim": "far from the data the mean -> 0 and the variance -> sigma_v^2 (+ sigma_n^2 for y)",
            "measured": f"|x - data| >= 15: max |mean| {np.max(np.abs(mean[far])):.1e}, max |var_f - sigma_v^2| / "
            f"sigma_v^2 {np.max(np.abs(sdf[far] ** 2 - sv2)) / sv2:.1e}; in the data range y within +-2 sd of y: "
            f"{coverage:.1%} (of f only: {coverage_f:.1%})",
            "verdict": pass_fail(np.max(np.abs(mean[far])) < 1e-3 and coverage > 0.9),
        },
        {
            "figure": "4.5",
            "claim": "posterior samples of f* (L z + mu, eq. 4.15) and y* = f* + noise",
            "measured": f"2000 draws: relative Frobenius error of the sample covariance {cov_err:.3f}; max over "
            f"300 inputs |var(y*) / (var f* + s2) - 1| = {ys_var_err:.3f} (5 se = {5 * np.sqrt(2 / 2000):.3f})",
            "verdict": pass_fail(cov_err < 0.1 and ys_var_err < 5 * np.sqrt(2 / 2000)),
        },
    ]
    numbers = {"ch4_lengthscale": ell, "ch4_sigma_v": np.sqrt(sv2), "ch4_sigma_n": np.sqrt(float(noise))}
    plot_data = {"X": X, "y": y, "grid": grid, "pred": pred, "noise": float(noise), "prior_se": prior_se}
    plot_data |= {"prior_diag": prior_diag, "fs": fs, "ys": ys, "sub": sub, "post_train": post_train}
    return rows, numbers, plot_data


def chapter5(quick):
    # Fig 5.1: SE kernel matrices; band width at half height = 2 l sqrt(2 ln 2), peak = sigma_v^2
    x = np.linspace(-5, 5, 401)[:, None]
    mats, widths = {}, {}
    for sv, ell in ((1.0, 0.5), (1.0, 2.0), (2.0, 0.5)):
        K = np.asarray(kernels.SquaredExponential(variance=sv**2, lengthscale=ell)(x))
        mats[(sv, ell)] = K
        row = K[200]
        widths[(sv, ell)] = (np.sum(row >= row.max() / 2) * (x[1, 0] - x[0, 0]), row.max())
    width_ok = all(
        abs(w - 2 * ell * np.sqrt(2 * np.log(2))) < 0.03 and abs(p - sv**2) < 1e-12
        for (sv, ell), (w, p) in widths.items()
    )
    rows = [
        {
            "figure": "5.1",
            "claim": "colour intensity grows with sigma_v, band width with the lengthscale",
            "measured": "; ".join(
                f"sigma_v {sv:g}, l {ell:g}: peak {p:.2f}, half-height width {w:.2f} (2 l sqrt(2 ln 2) = "
                f"{2 * ell * np.sqrt(2 * np.log(2)):.2f})"
                for (sv, ell), (w, p) in widths.items()
            ),
            "verdict": pass_fail(width_ok),
        }
    ]
    # Fig 5.2: periodic kernel on the noisy sine, extrapolated far from the data
    n = 60
    X, f, y = sine(jax.random.PRNGKey(52), n, 0.0, 30.0, 0.1, NOISE_STD)
    init = {"period": 8.0, "lengthscale": 1.0, "variance": 1.0}
    per, noise_p, ll_p = ml2_fit(zoo.get("gp/regression", kernel="Per"), {"X": X, "y": y}, "Per", init=init)
    se, noise_se, ll_se = ml2_fit("gp/regression", {"X": X, "y": y})
    grid = np.linspace(-10.0, 60.0, 350)[:, None]
    far = grid[:, 0] >= 45
    truth = np.sin(2 * np.pi * 0.1 * grid[:, 0])
    p_per, p_se = gp.predict(per, X, y, noise_p, grid), gp.predict(se, X, y, noise_se, grid)
    rmse_far = {
        k: float(np.sqrt(np.mean((np.asarray(p.mean)[far] - truth[far]) ** 2)))
        for k, p in (("Per", p_per), ("SE", p_se))
    }
    period = float(per.period)
    one_period, half_period = (
        float(per(np.array([[0.0]]), np.array([[t]]))[0, 0]) / float(per.variance) for t in (period, period / 2)
    )
    Kper = np.asarray(per(grid[:100]))
    rows += [
        {
            "figure": "5.2",
            "claim": "the periodic posterior keeps the periodic prediction far from the data (SE returns to 0)",
            "measured": f"learnt period {period:.2f} (true 10); RMSE vs the true sine on [45, 60]: Per "
            f"{rmse_far['Per']:.3f}, SE {rmse_far['SE']:.3f} (SE mean there {np.max(np.abs(p_se.mean[far])):.1e}); "
            f"log p(y): Per {ll_p:.1f}, SE {ll_se:.1f}",
            "verdict": pass_fail(abs(period - 10) < 0.3 and rmse_far["Per"] < 0.3 < rmse_far["SE"]),
        },
        {
            "figure": "5.2",
            "claim": "the kernel matrix correlates inputs one period apart",
            "measured": f"k(x, x + period) / k(x, x) = {one_period:.6f}; k(x, x + period/2) / k(x, x) = "
            f"{half_period:.3f}",
            "verdict": pass_fail(one_period > 0.999999 and half_period < 0.5),
        },
    ]
    # Fig 5.3: Lin + Per on a trend plus an oscillation
    key = jax.random.PRNGKey(53)
    x3 = np.sort(np.asarray(jax.random.uniform(key, (60,), minval=0.0, maxval=15.0)))[:, None]
    y3 = 0.3 * x3[:, 0] + np.sin(x3[:, 0]) + 0.2 * np.asarray(jax.random.normal(jax.random.fold_in(key, 1), (60,)))
    init3 = {"per1_period": 6.0, "lin0_variance": 0.1, "lin0_offset": 1.0}
    linper, noise_lp, ll_lp = ml2_fit(
        zoo.get("gp/regression", kernel="Lin + Per"), {"X": x3, "y": y3}, "Lin + Per", init=init3
    )
    per3, noise_p3, ll_p3 = ml2_fit(
        zoo.get("gp/regression", kernel="Per"), {"X": x3, "y": y3}, "Per", init={"period": 6.0}
    )
    se3, noise_se3, ll_se3 = ml2_fit("gp/regression", {"X": x3, "y": y3})
    grid3 = np.linspace(-2.0, 25.0, 300)[:, None]
    out3 = grid3[:, 0] >= 17
    truth3 = 0.3 * grid3[:, 0] + np.sin(grid3[:, 0])
    preds3 = {
        "Lin + Per": gp.predict(linper, x3, y3, noise_lp, grid3),
        "Per": gp.predict(per3, x3, y3, noise_p3, grid3),
        "SE": gp.predict(se3, x3, y3, noise_se3, grid3),
    }
    rmse3 = {k: float(np.sqrt(np.mean((np.asarray(p.mean)[out3] - truth3[out3]) ** 2))) for k, p in preds3.items()}
    lls3 = {"Lin + Per": ll_lp, "Per": ll_p3, "SE": ll_se3}
    rows.append(
        {
            "figure": "5.3",
            "claim": "Lin + Per (a sum of valid kernels) fits and extrapolates trend plus oscillation",
            "measured": "extrapolation RMSE on [17, 25] / log p(y): "
            + "; ".join(f"{k} {rmse3[k]:.3f} / {lls3[k]:.1f}" for k in preds3)
            + f"; Lin + Per period {float(linper.right.period):.2f} (sin x has periods 2 pi k: 6.28, 12.57), Per "
            f"alone {float(per3.period):.1f}",
            "verdict": pass_fail(
                rmse3["Lin + Per"] < min(rmse3["Per"], rmse3["SE"]) and lls3["Lin + Per"] > max(lls3["Per"], lls3["SE"])
            ),
        }
    )
    numbers = {"per_period": period, "linper_rmse_extrap": rmse3["Lin + Per"], "se_rmse_extrap": rmse3["SE"]}
    plot_data = {
        "mats": mats,
        "X": X,
        "y": y,
        "grid": grid,
        "p_per": p_per,
        "p_se": p_se,
        "noise_p": noise_p,
        "Kper": Kper,
        "x3": x3,
        "y3": y3,
        "grid3": grid3,
        "preds3": preds3,
    }
    return rows, numbers, plot_data


def chapter6(quick):
    X, f, y = sine(jax.random.PRNGKey(61), 40, 0.0, 40.0, 0.1, NOISE_STD)
    Xt, ft, yt = sine(jax.random.PRNGKey(62), 400, 0.0, 40.0, 0.1, NOISE_STD)
    grid = np.linspace(-5.0, 45.0, 300)[:, None]
    fits, stats = {}, {}
    for label, params in (
        ("short (l = 0.3)", {"lengthscale": [0.3]}),
        ("ML-II", {}),
        ("long (l = 30)", {"lengthscale": [30.0]}),
    ):
        kern, noise, ll = ml2_fit("gp/regression", {"X": X, "y": y}, params=params)
        train = gp.predict(kern, X, y, noise, X, full_cov=False)
        test = gp.predict(kern, X, y, noise, Xt, full_cov=False)
        var = np.asarray(test.cov) + float(noise)
        lpd = float(np.mean(-0.5 * np.log(2 * np.pi * var) - 0.5 * (yt - test.mean) ** 2 / var))
        stats[label] = {
            "lengthscale": float(np.asarray(kern.lengthscale).ravel()[0]),
            "sigma_n": float(np.sqrt(noise)),
            "train_rmse": float(np.sqrt(np.mean((train.mean - y) ** 2))),
            "test_rmse_f": float(np.sqrt(np.mean((test.mean - ft) ** 2))),
            "test_lpd": lpd,
            "log_evidence": ll,
        }
        pred = gp.predict(kern, X, y, noise, grid)
        Ls = np.asarray(gp.cholesky(pred.cov))
        samples = np.asarray(pred.mean)[:, None] + Ls @ np.asarray(jax.random.normal(jax.random.PRNGKey(63), (300, 5)))
        fits[label] = (pred, float(noise), samples)
    s, m, lo = stats["short (l = 0.3)"], stats["ML-II"], stats["long (l = 30)"]
    rows = [
        {
            "figure": "6.1",
            "claim": "too short a lengthscale overfits: better train fit, worse test log density",
            "measured": f"train RMSE short {s['train_rmse']:.3f} vs ML-II {m['train_rmse']:.3f}; test log density "
            f"per point short {s['test_lpd']:.3f} vs ML-II {m['test_lpd']:.3f}; sigma_n short {s['sigma_n']:.3f}",
            "verdict": pass_fail(s["train_rmse"] < m["train_rmse"] and s["test_lpd"] < m["test_lpd"]),
        },
        {
            "figure": "6.1",
            "claim": "too long a lengthscale is rigid: the data are explained as noise",
            "measured": f"sigma_n long {lo['sigma_n']:.3f} vs sd(y) {np.std(y):.3f} (true noise 0.3); train RMSE "
            f"{lo['train_rmse']:.3f}; test log density {lo['test_lpd']:.3f}",
            "verdict": pass_fail(lo["sigma_n"] > 0.6 and lo["test_lpd"] < m["test_lpd"]),
        },
        {
            "figure": "6.1",
            "claim": "the marginal likelihood picks a lengthscale in between",
            "measured": f"ML-II lengthscale {m['lengthscale']:.2f}; log p(y) short {s['log_evidence']:.1f}, ML-II "
            f"{m['log_evidence']:.1f}, long {lo['log_evidence']:.1f}",
            "verdict": pass_fail(
                0.3 < m["lengthscale"] < 30 and m["log_evidence"] > max(s["log_evidence"], lo["log_evidence"])
            ),
        },
    ]
    numbers = {f"ch6_{k}_{label.split()[0]}": v for label, st in stats.items() for k, v in st.items()}
    return rows, numbers, {"X": X, "y": y, "grid": grid, "fits": fits}


def chapter8(quick):
    n = 300 if quick else 2000
    X, f, y = sine(jax.random.PRNGKey(8), n, 0.0, 1.0, 1.0, NOISE_STD)
    Z0 = X[np.sort(np.asarray(jax.random.choice(jax.random.PRNGKey(81), n, (5,), replace=False)))]
    # VFE training (8.15) by ML-II of gp/vfe at Z fixed to the random subset: the start of the joint fit
    kern0, noise0, _ = ml2_fit(zoo.get("gp/vfe", num_inducing=5), {"X": X, "Z": Z0, "y": y})
    vfe0 = float(sp.vfe_bound(kern0, X, y, jnp.asarray(Z0), noise0))
    # Z learnt jointly with the hyperparameters (Franzese's sec. 8.1): SVI on gp/svgp, full batch, the model's guide
    # (whitened q(v) and point-mass hyperparameters; at the optimal q(v) its ELBO is the VFE bound, 8.23), started at
    # the fixed-Z fit and its optimal q(v)
    q0 = sp.optimal_whitened_q(kern0, X, y, jnp.asarray(Z0), noise0)
    start = {
        "lengthscale_map": np.asarray(kern0.lengthscale),
        "variance_map": float(kern0.variance),
        "noise_map": float(noise0),
        "inducing_inputs": Z0,
        "q_mean": np.asarray(q0.mean),
        "q_scale_tril": np.asarray(q0.scale_tril),
    }
    run = inference.run(
        zoo.get("gp/svgp", num_inducing=5),
        {"X": X, "Z": Z0, "y": y},
        engine="svi",
        seed=8,
        guide="model",
        num_steps=SVGP_STEPS[quick],
        learning_rate=0.01,
        num_samples=1,
        init_params=start,
    )
    kern, noise, Z, _ = sp.svgp_from(run.point_estimates.isel(chain=0))
    Z = np.asarray(Z)
    grid = np.linspace(-0.5, 1.5, 300)[:, None]
    q = sp.optimal_whitened_q(kern, X, y, Z, noise)
    sparse_pred = sp.sparse_predict(kern, Z, q, grid)
    # eqs. 8.7-8.8 written out (DTC): Q_*X (Q_XX + s2 I)^-1 y and K_** - Q_*X (Q_XX + s2 I)^-1 Q_X*
    Kzz = np.asarray(kern(Z)) + gp.JITTER * float(kern.variance) * np.eye(5)
    Kxz, Ksz = np.asarray(kern(X, Z)), np.asarray(kern(grid, Z))
    Qxx = Kxz @ np.linalg.solve(Kzz, Kxz.T)
    Qsx = Ksz @ np.linalg.solve(Kzz, Kxz.T)
    C = Qxx + float(noise) * np.eye(n)
    dtc_mean = Qsx @ np.linalg.solve(C, y)
    dtc_var = np.asarray(kern.diag(grid)) - np.sum(Qsx * np.linalg.solve(C, Qsx.T).T, 1)
    eq_err = float(max(np.max(np.abs(dtc_mean - sparse_pred.mean)), np.max(np.abs(dtc_var - sparse_pred.cov))))
    exact = gp.predict(kern, X, y, noise, grid, full_cov=False)
    inside = (grid[:, 0] >= 0) & (grid[:, 0] <= 1)
    mean_diff = float(np.max(np.abs(np.asarray(sparse_pred.mean) - np.asarray(exact.mean))[inside]))
    vfe = float(sp.vfe_bound(kern, X, y, jnp.asarray(Z), noise))
    lml = float(gp.log_marginal_likelihood(kern, X, y, noise))
    trace = float((np.sum(np.asarray(kern.diag(X))) - np.trace(Qxx)) / (2 * float(noise)))
    rmse = float(np.sqrt(np.mean((np.asarray(sparse_pred.mean)[inside] - np.sin(2 * np.pi * grid[inside, 0])) ** 2)))
    rows = [
        {
            "figure": "8.1",
            "claim": "a sparse GP with 5 inducing inputs fits the noisy sine",
            "measured": f"N = {n}; RMSE vs sin(2 pi x) on [0, 1] {rmse:.3f}; sigma_n {np.sqrt(float(noise)):.3f} "
            f"(true 0.3); Z learnt: [{', '.join(f'{z:.2f}' for z in np.sort(Z[:, 0]))}]",
            "verdict": pass_fail(rmse < 0.1),
        },
        {
            "figure": "8.1",
            "claim": "inducing inputs initialised at a random subset of X, then optimised with the hyperparameters",
            "measured": f"Z from [{', '.join(f'{z:.2f}' for z in np.sort(Z0[:, 0]))}] to "
            f"[{', '.join(f'{z:.2f}' for z in np.sort(Z[:, 0]))}]; VFE bound {vfe0:.2f} (Z fixed, ML-II) -> "
            f"{vfe:.2f} (Z learnt, {SVGP_STEPS[quick]} Adam steps)",
            "verdict": pass_fail(vfe > vfe0),
        },
        {
            "figure": "8.1",
            "claim": "VFE bound (8.15) <= exact log evidence; the trace term measures the Nystrom error",
            "measured": f"VFE {vfe:.2f} <= exact {lml:.2f} (gap {lml - vfe:.3f}); trace term {trace:.2e}; "
            f"max |sparse - exact GP mean| on [0, 1] {mean_diff:.3f}",
            "verdict": pass_fail(vfe <= lml + 1e-9),
        },
        {
            "figure": "8.1",
            "claim": "the SVGP prediction at the optimal q(u) (8.23-8.24) is the sparse GP's eqs. 8.7-8.8",
            "measured": f"max |difference| of mean and variance on the grid {eq_err:.1e}",
            "verdict": pass_fail(eq_err < 1e-6),
        },
    ]
    numbers = {"ch8_vfe": vfe, "ch8_vfe_fixed_z": vfe0, "ch8_exact_lml": lml, "ch8_rmse": rmse}
    return (
        rows,
        numbers,
        {"X": X, "y": y, "Z0": Z0, "Z": Z, "grid": grid, "pred": sparse_pred, "noise": noise, "exact": exact},
    )


def main(quick: bool, out: Path) -> None:
    out = Path(out)
    groups = [(name, compute, PLOTS[name]) for name, compute in CHAPTERS]
    rows, numbers, _ = run_groups(out, groups, quick)
    write_results(out, rows, numbers, __doc__, quick)


# ---------------------------------------------------------------------------------------------------------------
# Plots


def plot_ch2(out, d):
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    xs = np.linspace(-1, 11, 200)
    Xs = np.stack([xs, np.ones_like(xs)], 1)
    axes[0].plot(d["x"], d["y"], "k.")
    axes[0].plot(xs, Xs @ d["w_ols"], "C0", label="OLS")
    axes[0].set_title("Fig. 2.1: OLS")
    for lam, fit in d["fits"].items():
        axes[1].plot(d["grid"][:, 0], fit, label=f"lambda {lam:g}")
    axes[1].plot(d["xk"][:, 0], d["yk"], "k.")
    axes[1].set_ylim(-2, 2)
    axes[1].set_title("Fig. 2.2: kernel LR (SE), kernel ridge limits")
    mean_w, _, _, sd_w = d["blr"]
    X = d["X"]
    A = X.T @ X / d["s2"] + np.eye(2)
    cov = np.linalg.inv(A)
    m, s = Xs @ mean_w, np.sqrt(np.sum(Xs @ cov * Xs, 1))
    axes[2].plot(d["x"], d["y"], "k.")
    plot_band(axes[2], xs, m, s, "C1", "BLR mean +-2 sd (f)")
    axes[2].fill_between(xs, m - 2 * np.sqrt(s**2 + d["s2"]), m + 2 * np.sqrt(s**2 + d["s2"]), color="C1", alpha=0.1)
    axes[2].set_title("Fig. 2.3: BLR (Sigma_p = I)")
    for ax in axes:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "franzese_ch2_regression.png", dpi=110)
    plt.close(fig)


def plot_ch4(out, d):
    plt = pyplot()
    fig, axes = plt.subplots(2, 3, figsize=(14, 7))
    g = d["grid"][:, 0]
    for ax, s, title in (
        (axes[0, 0], d["prior_se"], "4.1 prior, SE covariance"),
        (axes[0, 1], d["prior_diag"], "4.1 prior, diagonal covariance"),
    ):
        ax.plot(g, s[:, :5], lw=0.8)
        ax.set_title(f"Fig. {title}")
    axes[0, 2].plot(d["X"][:, 0], d["y"], "k.", ms=2)
    axes[0, 2].set_title("Fig. 4.2: noisy labels")
    Xs, pt = d["X"][d["sub"], 0], d["post_train"]
    var = np.diag(np.asarray(pt.cov))
    plot_band(axes[1, 0], Xs, np.asarray(pt.mean), np.sqrt(var + d["noise"]), "C1", "y")
    plot_band(axes[1, 0], Xs, np.asarray(pt.mean), np.sqrt(var), "C0", "f")
    axes[1, 0].set_title("Fig. 4.3: posterior of f and y at training inputs")
    mean, sd = band(d["pred"])
    plot_band(axes[1, 1], g, mean, np.sqrt(sd**2 + d["noise"]), "C1", "y*")
    plot_band(axes[1, 1], g, mean, sd, "C0", "f*")
    axes[1, 1].plot(d["X"][:, 0], d["y"], "k.", ms=1)
    axes[1, 1].set_title("Fig. 4.4: prediction")
    axes[1, 2].plot(g, d["ys"][:, :3], ".", ms=1, color="C1")
    axes[1, 2].plot(g, d["fs"][:, :3], lw=0.8, color="C0")
    axes[1, 2].set_title("Fig. 4.5: samples of f* (lines) and y* (dots)")
    for ax in axes[1, :2]:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "franzese_ch4_gp.png", dpi=110)
    plt.close(fig)


def plot_ch5(out, d):
    plt = pyplot()
    fig, axes = plt.subplots(2, 3, figsize=(14, 7))
    for ax, ((sv, ell), K) in zip(axes[0], d["mats"].items(), strict=True):
        ax.imshow(K, vmin=0, vmax=4, cmap="viridis")
        ax.set_title(f"Fig. 5.1: SE, sigma_v {sv:g}, l {ell:g}")
    g = d["grid"][:, 0]
    for p, c, lab in ((d["p_per"], "C0", "Per"), (d["p_se"], "C3", "SE")):
        plot_band(axes[1, 0], g, *band(p), c, lab)
    axes[1, 0].plot(d["X"][:, 0], d["y"], "k.", ms=3)
    axes[1, 0].legend(fontsize=7)
    axes[1, 0].set_title("Fig. 5.2: periodic kernel fit")
    axes[1, 1].imshow(d["Kper"], cmap="viridis")
    axes[1, 1].set_title("Fig. 5.2: periodic kernel matrix")
    g3 = d["grid3"][:, 0]
    for (lab, p), c in zip(d["preds3"].items(), ("C0", "C2", "C3"), strict=True):
        plot_band(axes[1, 2], g3, *band(p), c, lab)
    axes[1, 2].plot(d["x3"][:, 0], d["y3"], "k.", ms=3)
    axes[1, 2].legend(fontsize=7)
    axes[1, 2].set_title("Fig. 5.3: Lin + Per")
    fig.tight_layout()
    fig.savefig(out / "franzese_ch5_kernels.png", dpi=110)
    plt.close(fig)


def plot_ch6(out, d):
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.6), sharey=True)
    g = d["grid"][:, 0]
    for ax, (label, (pred, noise, samples)) in zip(axes, d["fits"].items(), strict=True):
        mean, sd = band(pred)
        plot_band(ax, g, mean, np.sqrt(sd**2 + noise), "C0", "y*")
        ax.plot(g, samples, lw=0.6)
        ax.plot(d["X"][:, 0], d["y"], "k.")
        ax.set_title(f"Fig. 6.1: {label}")
    fig.tight_layout()
    fig.savefig(out / "franzese_ch6_lengthscale.png", dpi=110)
    plt.close(fig)


def plot_ch8(out, d):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 3.6))
    g = d["grid"][:, 0]
    ax.plot(d["X"][:, 0], d["y"], ".", color="0.6", ms=2)
    plot_band(
        ax,
        g,
        np.asarray(d["pred"].mean),
        np.sqrt(np.asarray(d["pred"].cov) + float(d["noise"])),
        "C0",
        "sparse GP (m = 5), y*",
    )
    ax.plot(g, d["exact"].mean, "k--", lw=0.8, label="exact GP mean")
    ax.plot(d["Z0"][:, 0], np.full(5, -1.6), "^", color="0.5", label="initial Z (random subset)")
    ax.plot(d["Z"][:, 0], np.full(5, -1.5), "r^", label="learnt Z")
    ax.legend(fontsize=7)
    ax.set_title("Fig. 8.1: sparse GP")
    fig.tight_layout()
    fig.savefig(out / "franzese_ch8_sparse.png", dpi=110)
    plt.close(fig)


CHAPTERS = (("ch2", chapter2), ("ch4", chapter4), ("ch5", chapter5), ("ch6", chapter6), ("ch8", chapter8))
PLOTS = {"ch2": plot_ch2, "ch4": plot_ch4, "ch5": plot_ch5, "ch6": plot_ch6, "ch8": plot_ch8}
