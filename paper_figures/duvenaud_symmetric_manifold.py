"""Duvenaud 2014 Figs 2.10-2.12: draws from symmetrised priors (sum, projection and product over the swap group),
2-D meshes warped into 3-D by draws from plane, cylinder and torus priors, and the Moebius-strip prior
(``zoo.kernels.symmetric``, ``zoo.kernels.manifold``). Priors only: nothing is fitted.

What each figure shows (the images are lost; captions and text in docs/sources/duvenaud.md#fig-symmetric-manifold):
Fig 2.10 one draw from SE symmetrised under x_0 <-> x_1 by each recipe (2.36, 2.39, 2.40); Fig 2.11 meshes warped
into R^3 by three independent draws [f_1, f_2, f_3] from SE_0 x SE_1 (a plane), SE_0 x Per_1 (a cylinder) and
Per_0 x Per_1 (a torus); Fig 2.12 (a) a draw with the Moebius symmetries of sec. 2.8.1 and (b) a mesh warped by three
such draws (panel (c) is an image from Wikimedia, not reproduced).

Assumed defaults (the thesis gives no hyperparameters): Fig 2.10 SE with lengthscale 1 and variance 1 on [-3, 3]^2,
a 40 x 40 grid (quick 24 x 24); Figs 2.11-2.12 period 1, lengthscale 1 (SE_0's lengthscale 1 on [0, 1]), a 25 x 25
mesh (quick 15 x 15) that includes both ends of every period so that gluing can be measured. The Moebius kernel is
the torus kernel summed over the swap orbit (2.36; the thesis gives the symmetries, not the kernel). Fig 2.12(b)'s
mesh is the fundamental domain (u, v) in [0, 1/2]^2 with x = (u - v, u + v): the thesis's symmetries glue its edge
u = 0 to u = 1/2 with v reversed (a half twist), and its edges v = 0 and v = 1/2 both lie on the diagonal x_0 = x_1,
the strip's one boundary circle. Draws by ``zoo.gp.draws_in_span`` (combinations of the Gram's columns, relative
jitter 1e-6), whose values at x and g(x) are equal to rounding when the kernel is invariant. comparison.md checks
each claim of the captions and text by a number; quick and full differ only in grid sizes.
"""

from pathlib import Path

import jax
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from inference.files.tables import write_comparison, write_csv  # noqa: E402
from zoo import gp  # noqa: E402
from zoo import kernels as K  # noqa: E402

DESCRIPTION = "Duvenaud 2014 Figs 2.10-2.12: symmetrised priors, cylinder/torus meshes and Moebius strips"
METHODS = ("sum", "projection", "product")
EQUATIONS = {"sum": "2.36", "projection": "2.39", "product": "2.40"}
PERIOD, LENGTHSCALE = 1.0, 1.0
SEAM_STEP = 1e-3  # t of the seam statistic Var(f(c + t n) - f(c)) / t^2


def square(n: int, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """(axis (n,), grid (n*n, 2) in 'ij' order)."""
    g = np.linspace(lo, hi, n)
    return g, np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)


def row(figure, claim, measure, value, ok, expected) -> dict:
    verdict = "AGREE" if ok else "DISAGREE"
    if ok is None:
        verdict = "REPORTED"
    return {
        "figure": figure,
        "claim": claim,
        "measure": measure,
        "value": value,
        "expected": expected,
        "verdict": verdict,
    }


def seam(kernel: K.Kernel) -> float:
    """Var(f(c + t n) - f(c)) / t^2 at c = (0.5, 0.5), n the unit normal of the diagonal, t = SEAM_STEP: ~0 for a
    draw smooth across x_0 = x_1 (a symmetric smooth f has zero normal slope there, so the difference is O(t^2)), a
    positive constant for a kink (one-sided slopes of opposite sign)."""
    c = np.array([[0.5, 0.5]])
    a = c + SEAM_STEP * np.array([[1.0, -1.0]]) / np.sqrt(2.0)
    var = kernel(a, a)[0, 0] + kernel(c, c)[0, 0] - 2.0 * kernel(a, c)[0, 0]
    return float(var) / SEAM_STEP**2


def figure_2_10(key, quick: bool, out: Path, rows: list) -> None:
    n = 24 if quick else 40
    g, X = square(n, -3.0, 3.0)
    swapped = np.arange(n * n).reshape(n, n).T.reshape(-1)
    se = K.SE(lengthscale=LENGTHSCALE)
    figure, axes = plt.subplots(1, 3, figsize=(12, 4))
    for i, method in enumerate(METHODS):
        kernel = K.Symmetrised(se, K.swap_group(), method)
        f = np.asarray(gp.draws_in_span(kernel(X), jax.random.fold_in(key, i), 1))[0]
        err = float(np.max(np.abs(f - f[swapped])) / np.std(f))
        rows.append(
            row("2.10", f"{method}: draws invariant to x_0 <-> x_1", "max abs(f(x) - f(swap x)) / sd(f)", err,
                err < 1e-12, "< 1e-12")
        )  # fmt: skip
        axes[i].contourf(g, g, f.reshape(n, n).T, levels=20)
        axes[i].set_title(f"{method} (eq. {EQUATIONS[method]})", fontsize=10)
        axes[i].set_xlabel("x_0")
        axes[i].set_ylabel("x_1")
    figure.suptitle("Duvenaud Fig. 2.10: SE symmetrised under swapping its inputs", fontsize=11)
    figure.tight_layout()
    figure.savefig(out / "fig2_10.png", dpi=110)
    plt.close(figure)

    on, off = np.array([[0.5, 0.5]]), np.array([[-2.0, 2.0]])
    var = {m: K.Symmetrised(se, K.swap_group(), m).diag(np.concatenate([on, off])) for m in METHODS}
    ratio = float(var["sum"][0] / var["sum"][1])
    rows.append(
        row("2.10 (sum)", "marginal variance doubled near x_0 = x_1", "k(x, x) at (0.5, 0.5) / at (-2, 2)", ratio,
            abs(ratio - 2.0) < 1e-3, "2")
    )  # fmt: skip
    seams = {m: seam(K.Symmetrised(se, K.swap_group(), m)) for m in METHODS}
    rows.append(
        row("2.10 (projection)", "a non-differentiable seam along x_0 = x_1",
            f"Var(f(c + t n) - f(c)) / t^2, t = {SEAM_STEP:g} (sum: {seams['sum']:.2g}, product: "
            f"{seams['product']:.2g})", seams["projection"],
            seams["projection"] > 0.5 and max(seams["sum"], seams["product"]) < 1e-3,
            "> 0.5 (kink); sum and product < 1e-3 (smooth)")
    )  # fmt: skip
    ratio = float(var["product"][1] / var["product"][0])
    rows.append(
        row("2.10 (product)", "zero variance in some regions", "k(x, x) at (-2, 2) / at (0.5, 0.5)", ratio,
            ratio < 1e-6, "< 1e-6")
    )  # fmt: skip
    # The spectrum's sparsity: on a grid closed under the swap, an invariant kernel's Gram has rank at most the number
    # of orbits. Spacing 0.55 against lengthscale 0.5, so that plain SE has full numerical rank there.
    coarse = square(12, -3.0, 3.0)[1]
    orbits = 12 * 13 // 2
    rank = {}
    for name, k in [("SE", K.SE(lengthscale=0.5))] + [
        (m, K.Symmetrised(K.SE(lengthscale=0.5), K.swap_group(), m)) for m in METHODS
    ]:
        eig = np.linalg.eigvalsh(np.asarray(k(coarse)))
        rank[name] = int(np.sum(eig > 1e-12 * eig[-1]))
    rows.append(
        row("2.10", "symmetric priors have sparse spectra: rank of the Gram <= number of orbits",
            f"eigenvalues above 1e-12 x the largest, 12 x 12 grid, {orbits} orbits (plain SE: {rank['SE']})",
            ", ".join(f"{m} {rank[m]}" for m in METHODS),
            all(rank[m] <= orbits for m in METHODS) and rank["SE"] > orbits, f"<= {orbits}; SE > {orbits}")
    )  # fmt: skip
    stationarity = {m: float(np.ptp(np.asarray(K.Symmetrised(se, K.swap_group(), m).diag(X)))) for m in METHODS}
    rows.append(
        row("2.10", "all three introduce nonstationarity", "range of k(x, x) over the grid, per method",
            ", ".join(f"{m} {v:.3g}" for m, v in stationarity.items()),
            min(stationarity["sum"], stationarity["product"]) > 0.5 and seams["projection"] > 0.5,
            "sum, product: variance varies (> 0.5); projection: the seam (its variance is constant)")
    )  # fmt: skip


def warp(kernel: K.Kernel, X: np.ndarray, key) -> np.ndarray:
    """Three independent draws [f_1, f_2, f_3] at X: (n, 3)."""
    return np.asarray(gp.draws_in_span(kernel(X), key, 3)).T


def gap(surface: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """Largest distance between the mesh points ``a`` and ``b`` (index arrays) on the warped surface (n, 3), over
    the surface's diameter proxy (the sd of its points times sqrt 3)."""
    return float(np.max(np.linalg.norm(surface[a] - surface[b], axis=1)) / (np.sqrt(3.0) * surface.std(0).mean()))


def plot_surface(ax, surface: np.ndarray, n: int, title: str) -> None:
    S = surface.reshape(n, n, 3)
    ax.plot_surface(S[..., 0], S[..., 1], S[..., 2], cmap="viridis", linewidth=0.2, edgecolor="k", alpha=0.9)
    ax.set_title(title, fontsize=10)
    ax.set_axis_off()


def figure_2_11(key, quick: bool, out: Path, rows: list) -> None:
    n = 15 if quick else 25
    _, X = square(n, 0.0, PERIOD)
    ij = np.arange(n * n).reshape(n, n)
    edges = {0: (ij[0, :], ij[-1, :]), 1: (ij[:, 0], ij[:, -1])}  # x_0 = 0 vs 1; x_1 = 0 vs 1
    se = K.SE(lengthscale=LENGTHSCALE)
    priors = {
        "plane (SE_0 x SE_1)": (se.on(0) * se.on(1), (False, False)),
        "cylinder (SE_0 x Per_1)": (K.cylinder(LENGTHSCALE, PERIOD), (False, True)),
        "torus (Per_0 x Per_1)": (K.torus(LENGTHSCALE, PERIOD), (True, True)),
    }
    figure = plt.figure(figsize=(12, 4))
    for i, (name, (kernel, glued)) in enumerate(priors.items()):
        surface = warp(kernel, X, jax.random.fold_in(key, 10 + i))
        gaps = [gap(surface, *edges[d]) for d in (0, 1)]
        ok = all((g < 1e-10) == want for g, want in zip(gaps, glued, strict=True))
        expected = ", ".join(("glued (< 1e-10)" if w else "open") for w in glued)
        rows.append(
            row("2.11", f"{name}: opposite edges of the mesh glued where the kernel is periodic",
                "edge gap / surface size along x_0, x_1", f"{gaps[0]:.3g}, {gaps[1]:.3g}", ok, expected)
        )  # fmt: skip
        ax = figure.add_subplot(1, 3, i + 1, projection="3d")
        plot_surface(ax, surface, n, name)
    figure.suptitle("Duvenaud Fig. 2.11: a 2-D mesh warped into 3-D by GP draws", fontsize=11)
    figure.tight_layout()
    figure.savefig(out / "fig2_11.png", dpi=110)
    plt.close(figure)


def figure_2_12(key, quick: bool, out: Path, rows: list) -> list[dict]:
    n = 15 if quick else 25
    g, X = square(n, 0.0, PERIOD)
    m = g.size
    kernel = K.moebius(LENGTHSCALE, PERIOD)
    f = np.asarray(gp.draws_in_span(kernel(X), jax.random.fold_in(key, 20), 1))[0].reshape(m, m)
    errors = {
        "x_0 <-> x_1": np.max(np.abs(f - f.T)),
        "x_0 + p": np.max(np.abs(f[0, :] - f[-1, :])),
        "x_1 + p": np.max(np.abs(f[:, 0] - f[:, -1])),
    }
    # The swap is exact (bitwise equal Gram rows); a shift by p moves cos and sin by their rounding (~1e-16), which
    # the draw's weights (norm ~ 1 / sqrt(jitter)) amplify: 1e-10 bounds that, as it does the gaps below.
    for sym, err in errors.items():
        tol = 1e-12 if sym == "x_0 <-> x_1" else 1e-10
        rows.append(
            row("2.12(a)", f"the draw obeys the Moebius symmetry {sym}", "max abs difference / sd(f)",
                float(err / f.std()), err / f.std() < tol, f"< {tol:g}")
        )  # fmt: skip

    # (b): the fundamental domain (u, v) in [0, 1/2]^2, x = (u - v, u + v)
    u = np.linspace(0.0, PERIOD / 2, n)
    U, V = np.meshgrid(u, u, indexing="ij")
    mesh = np.stack([(U - V).ravel(), (U + V).ravel()], 1)
    ij = np.arange(n * n).reshape(n, n)
    twisted = (ij[0, :], ij[-1, ::-1])  # (0, v) ~ (1/2, 1/2 - v)
    straight = (ij[0, :], ij[-1, :])
    surfaces = {"Moebius": warp(kernel, mesh, jax.random.fold_in(key, 21))}
    surfaces["torus"] = warp(K.torus(LENGTHSCALE, PERIOD), mesh, jax.random.fold_in(key, 22))
    gaps = {name: (gap(s, *twisted), gap(s, *straight)) for name, s in surfaces.items()}
    ok = gaps["Moebius"][0] < 1e-10 < gaps["Moebius"][1] and gaps["torus"][0] > 1e-3
    rows.append(
        row("2.12(b)", "the warped surface is a Moebius strip: the mesh's ends glue with a half twist",
            f"end gap with v reversed / without (torus prior, no swap symmetry: {gaps['torus'][0]:.3g})",
            f"{gaps['Moebius'][0]:.3g} / {gaps['Moebius'][1]:.3g}", ok,
            "twisted < 1e-10 < straight; torus twisted gap > 1e-3")
    )  # fmt: skip
    edge = np.concatenate([surfaces["Moebius"][ij[:, 0]], surfaces["Moebius"][ij[1:-1, -1]]])  # v = 0, then v = 1/2
    coeffs = np.fft.rfft(edge - edge.mean(0), axis=0)
    power = np.sum(np.abs(coeffs) ** 2, axis=1)
    share = float(power[1] / power[1:].sum())
    rows.append(
        row("2.12(b)", "the edge has a circular shape (Sudanese Moebius strip)",
            "share of the boundary curve's variation in its first Fourier harmonic (an ellipse: 1)", share, None,
            "qualitative in the thesis")
    )  # fmt: skip

    figure = plt.figure(figsize=(9, 4))
    ax = figure.add_subplot(1, 2, 1)
    ax.contourf(g, g, f.T, levels=20)
    ax.plot([0, PERIOD], [0, PERIOD], "w--", lw=1)
    ax.set_title("(a) a draw with the Moebius symmetries", fontsize=10)
    ax.set_xlabel("x_0")
    ax.set_ylabel("x_1")
    ax = figure.add_subplot(1, 2, 2, projection="3d")
    plot_surface(ax, surfaces["Moebius"], n, "(b) a mesh warped by three draws")
    ax.plot(*edge.T, color="r", lw=2)
    figure.suptitle("Duvenaud Fig. 2.12: Moebius strips", fontsize=11)
    figure.tight_layout()
    figure.savefig(out / "fig2_12.png", dpi=110)
    plt.close(figure)
    return [{"u": float(a), "v": float(b), "f1": s[0], "f2": s[1], "f3": s[2]}
            for a, b, s in zip(U.ravel(), V.ravel(), surfaces["Moebius"].tolist(), strict=True)]  # fmt: skip


def main(quick: bool, out: Path) -> None:
    out = Path(out)
    key = jax.random.PRNGKey(0)
    rows: list = []
    figure_2_10(key, quick, out, rows)
    figure_2_11(key, quick, out, rows)
    write_csv(out / "moebius_surface.csv", figure_2_12(key, quick, out, rows))
    agree = sum(r["verdict"] == "AGREE" for r in rows)
    checked = sum(r["verdict"] != "REPORTED" for r in rows)
    preamble = f"""# Duvenaud 2014 Figs 2.10-2.12: symmetric priors and priors on manifolds

{"Quick" if quick else "Full"} run. No published numbers: the thesis shows these figures qualitatively (the images
are lost from the text we have). Each claim of the captions and of secs. 2.7-2.8 is measured on our kernels and
draws; {agree} of {checked} checked claims agree (one more is reported, not checked: the thesis's "circular" edge is
a visual impression). Defaults the thesis leaves open: the script's docstring and
docs/sources/duvenaud.md#fig-symmetric-manifold. Figures: fig2_10.png, fig2_11.png, fig2_12.png.
"""
    write_comparison(out, rows, preamble)
