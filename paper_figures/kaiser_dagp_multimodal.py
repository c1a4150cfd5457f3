"""Kaiser 2021 Fig 3.4 (= Kaiser et al. 2019 Fig 4): DAGP with K = 4 modes on the trimodal toy, predictive associations.

Data (docs/sources/kaiser.md#multimodal, docs/sources/kaiser.md#multimodal-size): 350 x-values ~ U[-2 pi, 2 pi], each
with the curves sin x, sin x - 2 exp(-(x-2)^2/2) and -1 - 3x/(8 pi) + 0.3 sin 2x, noise N(0, 0.005^2) (1050 points).
Model as published: K = 4, SE kernels for the f^(k) and the assignment GPs alpha^(k), M = 25 per GP, the paper's
objective (no q(a) entropy). Defaults we chose: Concrete temperature 0.5; noise priors LogNormal(-2, 1) (initial 0.1);
random initial q(u) means (std 1) to break the symmetry of the identical modes, S = 0.01 I; Adam lr 0.03 cosine-decayed
to 5 %: 3000 full-batch steps with the q(a_n) entropy added (``paper_figures._dagp.fit_restarts``'s ``warmup``, a
continuation not in the texts), then 3000 of the paper's objective (--quick: 40 x-values, M = 8, 75 + 75 steps).
Restarts (Fig 3.5): 5 fits from different keys (random q(u) means and Monte-Carlo noise;
``paper_figures._dagp.fit_restarts``); Fig 3.4's panels and numbers use the one with the best final objective (3.7),
estimated with 256 samples at the final params; kaiser_dagp_restarts.png shows all five side by side, as the thesis's
Fig 3.5 does (retrained solutions with different mode/data associations; which mode is "switched off" is arbitrary).
--quick: 1 restart. How the starts compare, and what is not reproduced: kaiser_dagp_multimodal_full_runs.md.
"""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from inference.files.tables import read_published, write_comparison, write_csv
from paper_figures._dagp import best as best_restart
from paper_figures._dagp import fit_restarts
from zoo import dagp
from zoo import sparse as sp
from zoo.data.association import multimodal

DESCRIPTION = "Kaiser 2021 Fig 3.4: DAGP (K = 4) on the trimodal toy with predictive assignment probabilities"
CONFIG = dagp.dagp_config(4, temperature=0.5, init_spread=1.0)


def main(quick: bool, out: Path) -> None:
    out = Path(out)
    n, m, warmup, steps, restarts = (40, 8, 75, 75, 1) if quick else (350, 25, 3000, 3000, 5)
    data = multimodal(jax.random.PRNGKey(0), n)
    Z = sp.init_inducing(jax.random.PRNGKey(1), data.X, m)
    restart_fits = fit_restarts(CONFIG, {"X": data.X, "y": data.y, "Z": Z}, 2, restarts, steps, 0.03, warmup)
    best = best_restart(restart_fits)  # one unscored fit in --quick
    fits = [r.fit for r in restart_fits]
    fit = fits[best]
    grid = jnp.linspace(-10.0, 10.0, 400)[:, None]
    preds = [dagp.predict(f, grid, jax.random.PRNGKey(3), num_samples=500) for f in fits]
    pred = preds[best]
    q_a = np.asarray(dagp.training_assignments(fit))
    x = grid[:, 0]
    inside = (x >= 0) & (x <= 5)
    outside = ((x >= -2 * np.pi) & (x < 0)) | ((x > 5) & (x <= 2 * np.pi))
    usage = q_a.mean(0)
    rows = [
        {
            "mode": k,
            "share_of_training_points": float(usage[k]),
            "mean_weight_on_0_5": float(pred.weights[inside, k].mean()),
            "mean_weight_outside_0_5": float(pred.weights[outside, k].mean()),
            "weight_at_x_minus_10": float(pred.weights[0, k]),
            "noise_std": float(jnp.sqrt(pred.noise[k])),
        }
        for k in range(CONFIG.num_modes)
    ]
    write_csv(out / "numbers.csv", rows)
    restart_rows = [
        {
            "restart": i,
            "final_objective": r.final_elbo,
            "best": i == best,
            "modes_used": int(np.sum(np.asarray(dagp.training_assignments(f)).mean(0) > 0.05)),
        }
        for i, (f, r) in enumerate(zip(fits, restart_fits, strict=True))
    ]
    write_csv(out / "restarts.csv", restart_rows)
    plot(out, data, q_a, grid, pred)
    plot_restarts(out, data, fits, restart_rows, grid, preds)
    used = int(np.sum(usage > 0.05))
    w_in = sorted((r["mean_weight_on_0_5"] for r in rows), reverse=True)
    w_out = sorted((r["mean_weight_outside_0_5"] for r in rows), reverse=True)
    ours = {
        "modes_used": f"{used} of 4 (training shares {', '.join(f'{u:.2f}' for u in usage)})",
        "weights_in_0_5": "largest three: " + ", ".join(f"{w:.2f}" for w in w_in[:3]),
        "weights_outside": f"largest two: {w_out[0]:.2f}, {w_out[1]:.2f} (ratio {w_out[0] / max(w_out[1], 1e-9):.2f})",
        "far_from_data": "at x = -10: " + ", ".join(f"{r['weight_at_x_minus_10']:.2f}" for r in rows),
        "retrained_solutions": f"{len(fits)} restart(s), modes used "
        + ", ".join(str(r["modes_used"]) for r in restart_rows)
        + (
            "; final objectives " + ", ".join(f"{r.final_elbo:.0f}" for r in restart_fits) + f"; best: restart {best}"
            if len(fits) > 1
            else ""
        ),
    }
    table = [
        {"quantity": p["quantity"], "published": p["published"], "ours": ours[p["quantity"]], "source": p["source"]}
        for p in read_published(__file__)
    ]
    print(write_comparison(out, table, __doc__))


def plot(out: Path, data, q_a, grid, pred) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 3.6))
    x = grid[:, 0]
    for k in range(pred.mean.shape[1]):
        sd = np.sqrt(np.asarray(pred.f_var[:, k] + pred.noise[k]))
        for i in range(len(x) - 1):  # opacity = predictive assignment probability (as in the thesis)
            a = float(pred.weights[i, k])
            axes[0].fill_between(
                x[i : i + 2],
                (pred.mean[i : i + 2, k] - 2 * sd[i : i + 2]),
                (pred.mean[i : i + 2, k] + 2 * sd[i : i + 2]),
                color=f"C{k}",
                alpha=0.4 * a,
                lw=0,
            )
        axes[0].plot([], [], color=f"C{k}", label=f"mode {k}")
    axes[0].plot(data.X[:, 0], data.y, "k.", ms=1)
    axes[0].set_title("joint predictive (opacity = weight)", fontsize=9)
    axes[0].legend(fontsize=7)
    label = q_a.argmax(1)
    for k in range(q_a.shape[1]):
        sel = label == k
        axes[1].plot(data.X[sel, 0], data.y[sel], ".", ms=2, color=f"C{k}")
    axes[1].set_title("posterior assignments of the training data", fontsize=9)
    for k in range(pred.weights.shape[1]):
        axes[2].plot(x, pred.weights[:, k], color=f"C{k}")
    axes[2].set_title("predictive assignment probabilities E[softmax(alpha)]", fontsize=9)
    axes[2].set_ylim(0, 1)
    for ax in axes:
        ax.set_xlabel("x")
    fig.tight_layout()
    fig.savefig(out / "kaiser_dagp_multimodal.png", dpi=110)
    plt.close(fig)


def plot_restarts(out: Path, data, fits, restart_rows, grid, preds) -> None:
    """Fig 3.5: each restart's training-point assignments (colour = argmax q(a_n)) and its mode means where the
    predictive assignment probability exceeds 0.1."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(fits), figsize=(3.4 * len(fits), 3.0), squeeze=False, sharey=True)
    x = np.asarray(grid[:, 0])
    for ax, f, row, pred in zip(axes[0], fits, restart_rows, preds, strict=True):
        label = np.asarray(dagp.training_assignments(f)).argmax(1)
        for k in range(pred.mean.shape[1]):
            sel = label == k
            ax.plot(data.X[sel, 0], data.y[sel], ".", ms=1.5, color=f"C{k}")
            mean = np.where(np.asarray(pred.weights[:, k]) > 0.1, np.asarray(pred.mean[:, k]), np.nan)
            ax.plot(x, mean, color=f"C{k}", lw=1)
        title = f"restart {row['restart']}" + (" (best)" if row["best"] else "")
        if row["final_objective"] is not None:
            title += f", objective {row['final_objective']:.0f}"
        ax.set_title(title, fontsize=8)
        ax.set_xlim(-2 * np.pi, 2 * np.pi)
        ax.set_xlabel("x")
    fig.tight_layout()
    fig.savefig(out / "kaiser_dagp_restarts.png", dpi=110)
    plt.close(fig)
