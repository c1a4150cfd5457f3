"""Duvenaud 2014 Fig 1.1: a GP prior over a one-dimensional function, then its posterior as data arrive, drawn as the
deciles of the predictive density with posterior samples (eqs. 1.3-1.4; ``zoo.gp.predict``). Nothing is fitted: the
hyperparameters are those the data are drawn with.

Assumed defaults (the thesis gives none; docs/sources/duvenaud.md#fig-1-1): SE with variance 1 and lengthscale 1,
noise variance 0.01; the function is one seeded draw from that prior on [-5, 5]; the inputs arrive in a seeded
uniform order, and the panels condition on the first 0, 1, 2, 4, 8 and 16 of them; deciles are the 10 %, ..., 90 %
quantiles of the Gaussian predictive density of f(x) (eq. 1.4) on 301 points, three posterior samples per panel
(``zoo.gp.cholesky``, relative jitter 1e-6). Quick and full runs are the same (a few seconds). comparison.md checks
eq. 1.4's annotations: the mean goes through the observations and the variance shrinks as data arrive.
"""

from pathlib import Path

import jax
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from scipy.stats import norm  # noqa: E402

from inference.files.tables import write_comparison, write_csv  # noqa: E402
from zoo import gp  # noqa: E402
from zoo import kernels as K  # noqa: E402

DESCRIPTION = "Duvenaud 2014 Fig 1.1: a GP prior and its posterior as data arrive (deciles and samples)"
KERNEL = K.SE(variance=1.0, lengthscale=1.0)
NOISE = 0.01
COUNTS = (0, 1, 2, 4, 8, 16)
NUM_SAMPLES = 3


def main(quick: bool, out: Path) -> None:
    out = Path(out)
    key = jax.random.PRNGKey(11)
    x = np.linspace(-5.0, 5.0, 301)
    truth = np.asarray(gp.cholesky(KERNEL(x[:, None])) @ jax.random.normal(key, (x.size,)))
    order = np.asarray(jax.random.choice(jax.random.fold_in(key, 1), x.size, (max(COUNTS),), replace=False))
    noise = np.sqrt(NOISE) * np.asarray(jax.random.normal(jax.random.fold_in(key, 2), (max(COUNTS),)))
    X_all, y_all = x[order][:, None], truth[order] + noise
    deciles = norm.ppf(np.arange(1, 10) / 10.0)  # standard-normal 10 % ... 90 % quantiles

    figure, axes = plt.subplots(2, 3, figsize=(12, 6), sharex=True, sharey=True)
    rows, curves, mean_sd = [], [], []
    for panel, (ax, n) in enumerate(zip(axes.ravel(), COUNTS, strict=True)):
        if n == 0:
            mean, cov = np.zeros(x.size), np.asarray(KERNEL(x[:, None]))
        else:
            post = gp.predict(KERNEL, X_all[:n], y_all[:n], NOISE, x[:, None])
            mean, cov = np.asarray(post.mean), np.asarray(post.cov)
        sd = np.sqrt(np.maximum(np.diag(cov), 0.0))
        mean_sd.append(float(sd.mean()))
        for lo, hi in zip(deciles[:4], deciles[::-1][:4], strict=True):
            ax.fill_between(x, mean + lo * sd, mean + hi * sd, color="red", alpha=0.12, lw=0)
        samples = np.asarray(gp.cholesky(cov) @ jax.random.normal(jax.random.fold_in(key, 10 + panel),
                                                                   (x.size, NUM_SAMPLES)))  # fmt: skip
        ax.plot(x, mean[:, None] + samples, lw=1)
        if n:
            ax.plot(X_all[:n, 0], y_all[:n], "ko", ms=4)
            at = np.searchsorted(x, X_all[:n, 0])
            err = float(np.max(np.abs(mean[at] - y_all[:n])))
            rows.append({"figure": "1.1", "claim": "the predictive mean goes through the observations (eq. 1.4)",
                         "measure": f"max abs(mean(x_i) - y_i), {n} points", "value": err,
                         "expected": f"< 3 noise sd ({3 * np.sqrt(NOISE):.2g})",
                         "verdict": "AGREE" if err < 3 * np.sqrt(NOISE) else "DISAGREE"})  # fmt: skip
        ax.set_title("prior" if n == 0 else f"{n} observation{'s' if n > 1 else ''}", fontsize=10)
        curves += [
            {"n": n, "x": float(a), "mean": float(b), "sd": float(c)} for a, b, c in zip(x, mean, sd, strict=True)
        ]
    shrinking = all(b < a for a, b in zip(mean_sd, mean_sd[1:], strict=False))
    rows.append({"figure": "1.1", "claim": "the predictive variance shrinks given more data (eq. 1.4)",
                 "measure": f"mean predictive sd over [-5, 5] at n = {COUNTS}",
                 "value": ", ".join(f"{v:.3g}" for v in mean_sd), "expected": "strictly decreasing",
                 "verdict": "AGREE" if shrinking else "DISAGREE"})  # fmt: skip
    figure.suptitle("Duvenaud Fig. 1.1: GP posterior as data arrive (shades: deciles; lines: samples)", fontsize=11)
    figure.tight_layout()
    figure.savefig(out / "fig1_1.png", dpi=110)
    plt.close(figure)
    write_csv(out / "curves.csv", curves)
    agree = sum(r["verdict"] == "AGREE" for r in rows)
    preamble = f"""# Duvenaud 2014 Fig 1.1: a GP posterior as data arrive

No published numbers (the image is lost from the text we have; the caption and eq. 1.4 describe it). Defaults the
thesis leaves open: the script's docstring and docs/sources/duvenaud.md#fig-1-1. {agree} of {len(rows)} checks
agree. Figure: fig1_1.png.
"""
    write_comparison(out, rows, preamble)
