"""Duvenaud 2014 Figs 2.1, 2.2, 2.3-2.5, 2.9 and 3.1: kernels k(x, x') and draws from their GP priors, built with
the kernel algebra (``zoo.kernels.parse``).

What each figure is, from the thesis's captions and text (the images are lost; docs/sources/duvenaud.md#fig-kernels):
Fig 2.1 the base kernels SE, Per, Lin; Fig 2.2 products Lin x Lin, SE x Per, Lin x SE, Lin x Per; Fig 2.4
one-dimensional sums (the text names only SE(long) + SE(short); Lin + Per, SE + Per, Lin + SE are the ICML'13
panels); Figs 2.3 and 2.5 the two-dimensional product SE_0 x SE_1 and sum SE_0 + SE_1 (kernel surface around the
origin and a draw); Fig 2.9 changepoint priors; Fig 3.1 the ABCD base kernels RQ, cos, WN. Per is MacKay's (B.6).

Assumed defaults (the thesis gives no hyperparameters; docs/sources/duvenaud.md#fig-kernels): inputs on [-4, 4]
(201 points; 2-D: a 40 x 40 grid on [-3, 3]^2), all variances 1, lengthscales 1, period 2, Lin location 0 and offset
0 (Lin x k kernels are then zero at x = 0, where the amplitude grows from), SE(long) lengthscale 4 and SE(short) 0.3
(variance 0.1), RQ alpha 0.5; kernel plots k(x, 0) against x (Lin: k(x, 1)); three draws per kernel with seed 0,
drawn as L z with L the Cholesky factor of the prior Gram plus 1e-6 x mean diagonal (``zoo.gp.cholesky``: needed
for the rank-deficient Lin and the smooth SE). No published numbers: comparison.md checks each structure the thesis
names against the draws (periodic, linear, quadratic, growing amplitude, uncorrelated, additive), and quick and full
runs are the same (about 10 s).
"""

from pathlib import Path

import jax
import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from inference.files.tables import write_comparison, write_csv  # noqa: E402
from zoo import gp, kernels  # noqa: E402

DESCRIPTION = "Duvenaud 2014 Figs 2.1-2.5, 2.9, 3.1: base, product, sum, 2-D and changepoint kernels with prior draws"
NUM_DRAWS = 3
X_LO, X_HI, NUM_X = -4.0, 4.0, 201  # spacing 0.04: one period (2) is a whole shift of 50 points

# (figure, expression in the grammar, hyperparameters by site name); unnamed hyperparameters keep parse's defaults
# (variance 1, lengthscale 1, period 1 -> set to 2 below, Lin offset 0 and location 0).
ONE_D = [
    ("2.1", "SE", {}),
    ("2.1", "Per", {"period": 2.0}),
    ("2.1", "Lin", {}),
    ("2.2", "Lin x Lin", {}),
    ("2.2", "SE x Per", {"se0_lengthscale": 2.0, "per1_period": 2.0}),
    ("2.2", "Lin x SE", {"lin0_variance": 0.3}),
    ("2.2", "Lin x Per", {"lin0_variance": 0.3, "per1_period": 2.0}),
    ("2.4", "Lin + Per", {"lin0_variance": 0.3, "per1_period": 2.0}),
    ("2.4", "SE + Per", {"se0_lengthscale": 2.0, "per1_period": 2.0, "per1_variance": 0.3}),
    ("2.4", "Lin + SE", {"lin0_variance": 0.3}),
    ("2.4", "SE + SE", {"se0_lengthscale": 4.0, "se1_lengthscale": 0.3, "se1_variance": 0.1}),  # long + short
    ("2.9", "CP(SE, Per)", {"cp0_width": 0.2, "per2_period": 2.0}),
    ("2.9", "CP(Lin, SE)", {"cp0_width": 0.2, "lin1_variance": 0.3}),
    ("2.9", "CW(SE, C)", {"cw0_start": -1.0, "cw0_duration": 2.0, "cw0_width": 0.1, "c2_variance": 0.0}),
    ("2.9", "CW(C, SE)", {"cw0_start": -1.0, "cw0_duration": 2.0, "cw0_width": 0.1, "c1_variance": 0.0}),
    ("3.1", "RQ", {"alpha": 0.5}),
    ("3.1", "Cos", {"period": 2.0}),
    ("3.1", "WN", {}),
]
TWO_D = [("2.3", "SE_0 x SE_1", {}), ("2.5", "SE_0 + SE_1", {})]
LABELS = {"SE + SE": "SE(long) + SE(short)"}


def build(text: str, values: dict, D: int = 1) -> kernels.Kernel:
    """The kernel written ``text`` with hyperparameters ``values`` by site name (the rest keep parse's defaults)."""
    return kernels.with_values(kernels.parse(text), values, D=D)


def draws(kernel: kernels.Kernel, X: jax.Array, key: jax.Array, num: int) -> np.ndarray:
    """``num`` draws from GP(0, kernel) at X (n, D): (num, n). The jitter of ``gp.cholesky`` is part of the draw."""
    L = gp.cholesky(kernel(X))
    return np.asarray(L @ jax.random.normal(key, (X.shape[0], num))).T


def reference_point(text: str) -> float:
    """x' of the kernel plot k(x, x'): 1 for kernels built from Lin (k(x, 0) = 0 there), 2.5 (outside the window)
    for CW(C, SE), else 0."""
    if text.startswith("CW(C"):
        return 2.5
    return 1.0 if "Lin" in text else 0.0


def polynomial_residual(x: np.ndarray, f: np.ndarray, degree: int) -> float:
    """sd of f minus its least-squares polynomial of ``degree``, over the sd of f: ~0 when f is that polynomial."""
    coef = np.polynomial.polynomial.polyfit(x, f.T, degree)
    fitted = np.polynomial.polynomial.polyval(x, coef)
    return float(np.std(f - fitted) / np.std(f))


def checks(x: np.ndarray, samples: dict[str, np.ndarray], key: jax.Array) -> list[dict]:
    """Each structure the thesis names, measured on our draws: (figure, kernel, claim, measure, value, expected)."""
    rows = []

    def add(fig, name, claim, measure, value, ok, expected):
        rows.append(
            {
                "figure": fig,
                "kernel": name,
                "claim": claim,
                "measure": measure,
                "value": value,
                "expected": expected,
                "verdict": "AGREE" if ok else "DISAGREE",
            }
        )

    shift = int(round(2.0 / (x[1] - x[0])))  # one period (2) in grid steps
    per = samples["Per"]
    value = float(np.max(np.abs(per[:, shift:] - per[:, :-shift])) / np.std(per))
    add("2.1", "Per", "exactly repeating structure", "max abs(f(x + p) - f(x)) / sd(f)", value, value < 0.01, "< 0.01")
    value = polynomial_residual(x, samples["Lin"], 1)
    add("2.1", "Lin", "linear functions", "sd of residual from a line / sd(f)", value, value < 0.01, "< 0.01")
    quad, line = polynomial_residual(x, samples["Lin x Lin"], 2), polynomial_residual(x, samples["Lin x Lin"], 1)
    add(
        "2.2",
        "Lin x Lin",
        "quadratic functions",
        "residual from a quadratic (from a line)",
        quad,
        quad < 0.01 < line,
        f"< 0.01 (line: {line:.3f})",
    )
    sepr = build("SE x Per", ONE_D[4][2])
    lags = np.array([[0.0], [2.0], [4.0], [6.0]])
    corr = np.asarray(sepr(np.zeros((1, 1)), lags))[0] / float(sepr.diag(np.zeros((1, 1)))[0])
    add(
        "2.2",
        "SE x Per",
        "locally periodic: correlation one period away below 1 and decaying",
        "corr at lags p, 2p, 3p",
        f"{corr[1]:.3f}, {corr[2]:.3f}, {corr[3]:.3f}",
        1 > corr[1] > corr[2] > corr[3],
        "decreasing, < 1 (Per alone: 1, 1, 1)",
    )
    many = jax.random.split(key, 2)[1]
    for name in ("Lin x SE", "Lin x Per"):
        fig_values = dict(next(v for f, t, v in ONE_D if t == name))
        big = draws(build(name, fig_values), jnp.asarray(x)[:, None], many, 4000)
        sd = big.std(0)
        slope = float(np.sum(sd * np.abs(x)) / np.sum(x**2))  # sd = slope |x| through the origin
        value = float(np.max(np.abs(sd - slope * np.abs(x))) / sd.max())
        add(
            "2.2",
            name,
            "amplitude grows linearly away from the location c = 0",
            "max abs(sd(x) - b abs(x)) / max sd, 4000 draws",
            value,
            value < 0.05,
            "< 0.05 (Monte Carlo)",
        )
    basis = np.stack([np.cos(np.pi * x), np.sin(np.pi * x)], 1)
    fit = np.linalg.lstsq(basis, samples["Cos"].T, rcond=None)[0]
    value = float(np.std(samples["Cos"].T - basis @ fit) / np.std(samples["Cos"]))
    add(
        "3.1",
        "Cos",
        "sine waves of period p",
        "residual from a cos + b sin of period 2 / sd",
        value,
        value < 0.01,
        "< 0.01",
    )
    outside = np.abs(x) > 1.6  # the window is [-1, 1] with edges of width 0.1: 6 widths past each edge
    inner = float(np.max(np.abs(samples["CW(SE, C)"][:, outside])) / np.std(samples["CW(SE, C)"][:, ~outside]))
    outer = float(np.max(np.abs(samples["CW(C, SE)"][:, np.abs(x) < 0.4])) / np.std(samples["CW(C, SE)"][:, outside]))
    add(
        "2.9",
        "CW(SE, C = 0)",
        "SE inside the window [-1, 1], zero outside",
        "max abs(f) outside / sd(f) inside",
        inner,
        inner < 0.05,
        "< 0.05",
    )
    add(
        "2.9",
        "CW(C = 0, SE)",
        "SE outside the window, zero inside",
        "max abs(f) in [-0.4, 0.4] / sd(f) outside",
        outer,
        outer < 0.05,
        "< 0.05",
    )
    wn = samples["WN"]
    lag1 = float(np.mean([np.corrcoef(w[:-1], w[1:])[0, 1] for w in wn]))
    add(
        "3.1",
        "WN",
        "uncorrelated noise",
        "lag-1 autocorrelation of the draws",
        lag1,
        abs(lag1) < 0.2,
        "abs < 0.2 (200 pairs per draw)",
    )
    return rows


def interaction(surface: np.ndarray) -> float:
    """How far a draw on a grid (m, m) is from additive f1(a) + f2(b): the double-centred surface's sd over the
    surface's sd (0 for any sum of a function of each coordinate)."""
    centred = surface - surface.mean(0, keepdims=True) - surface.mean(1, keepdims=True) + surface.mean()
    return float(centred.std() / surface.std())


def plot_one_d(out: Path, x, figure_rows, samples) -> None:
    for fig in sorted({f for f, _, _ in figure_rows}):
        panel = [(t, v) for f, t, v in figure_rows if f == fig]
        figure, axes = plt.subplots(2, len(panel), figsize=(3.0 * len(panel), 5.0), squeeze=False)
        for col, (text, values) in enumerate(panel):
            kernel = build(text, values)
            ref = reference_point(text)
            axes[0, col].plot(x, np.asarray(kernel(x[:, None], np.array([[ref]])))[:, 0], color="k")
            axes[0, col].set_title(LABELS.get(text, text), fontsize=10)
            axes[0, col].set_xlabel(f"x  (x' = {ref:g})", fontsize=8)
            axes[1, col].plot(x, samples[text].T, lw=1)
        axes[0, 0].set_ylabel("k(x, x')")
        axes[1, 0].set_ylabel("draws f(x)")
        figure.suptitle(f"Duvenaud Fig. {fig}", fontsize=11)
        figure.tight_layout()
        figure.savefig(out / f"fig{fig.replace('.', '_')}.png", dpi=110)
        plt.close(figure)


def main(quick: bool, out: Path) -> None:
    out = Path(out)
    key = jax.random.PRNGKey(0)
    x = np.linspace(X_LO, X_HI, NUM_X)
    samples = {}
    for i, (_, text, values) in enumerate(ONE_D):
        samples[text] = draws(build(text, values), jnp.asarray(x)[:, None], jax.random.fold_in(key, i), NUM_DRAWS)
    plot_one_d(out, x, ONE_D, samples)

    g = np.linspace(-3.0, 3.0, 40)
    G = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    figure, axes = plt.subplots(2, 2, figsize=(8, 7))
    surfaces = {}
    for col, (fig, text, values) in enumerate(TWO_D):
        kernel = build(text, values, D=2)
        surface = np.asarray(kernel(G, np.zeros((1, 2))))[:, 0].reshape(40, 40)
        draw = draws(kernel, jnp.asarray(G), jax.random.fold_in(key, 100 + col), 1)[0].reshape(40, 40)
        surfaces[text] = draw
        axes[0, col].contourf(g, g, surface.T, levels=20)
        axes[0, col].set_title(f"Fig. {fig}: {text}, k(x, 0)", fontsize=10)
        axes[1, col].contourf(g, g, draw.T, levels=20, cmap="viridis")
        axes[1, col].set_title("a draw f(x_0, x_1)", fontsize=10)
        for ax in axes[:, col]:
            ax.set_xlabel("x_0")
            ax.set_ylabel("x_1")
    figure.tight_layout()
    figure.savefig(out / "fig2_3_2_5_two_d.png", dpi=110)
    plt.close(figure)

    rows = checks(x, samples, jax.random.fold_in(key, 200))
    add_value, prod_value = interaction(surfaces["SE_0 + SE_1"]), interaction(surfaces["SE_0 x SE_1"])
    rows.append(
        {
            "figure": "2.5",
            "kernel": "SE_0 + SE_1",
            "claim": "a draw is a sum of a function of each input",
            "measure": "sd of the double-centred draw / sd(draw)",
            "value": add_value,
            "expected": "< 0.01",
            "verdict": "AGREE" if add_value < 0.01 else "DISAGREE",
        }
    )
    rows.append(
        {
            "figure": "2.3",
            "kernel": "SE_0 x SE_1",
            "claim": "a draw depends on both inputs jointly",
            "measure": "sd of the double-centred draw / sd(draw)",
            "value": prod_value,
            "expected": "> 0.3",
            "verdict": "AGREE" if prod_value > 0.3 else "DISAGREE",
        }
    )

    write_csv(
        out / "draws.csv",
        [
            {
                "kernel": LABELS.get(t, t),
                "figure": f,
                "x": float(xi),
                **{f"draw_{d}": float(samples[t][d, i]) for d in range(NUM_DRAWS)},
            }
            for f, t, _ in ONE_D
            for i, xi in enumerate(x)
        ],
    )
    write_csv(out / "numbers.csv", rows)
    agree = sum(r["verdict"] == "AGREE" for r in rows)
    preamble = f"""# Duvenaud 2014 Figs 2.1-2.5, 2.9, 3.1: kernels and prior draws

No published numbers: the thesis shows these figures qualitatively (and the images are lost from the text we have;
the panels are rebuilt from the captions and appendix B, docs/sources/duvenaud.md#fig-kernels). Reproduced: the
kernel plot and three seeded prior draws of every kernel the captions name (fig2_1.png, fig2_2.png, fig2_4.png,
fig2_9.png, fig3_1.png) and the 2-D product and sum (fig2_3_2_5_two_d.png). Figure 2.4 of the thesis is the
one-dimensional sums (SE(long) + SE(short) and, as in ICML'13, Lin + Per, SE + Per, Lin + SE); the 2-D additive vs
product contrast is Figs 2.3 and 2.5. Each structure the text names, measured on the draws: {agree} of {len(rows)}
agree.
"""
    write_comparison(out, rows, preamble)
