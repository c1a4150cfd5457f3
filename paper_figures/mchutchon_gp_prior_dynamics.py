"""McHutchon (2014) Fig 3.2 (sec. 3.1): transition functions drawn from a GP prior and the noise-free trajectories
they generate, x_{t+1} = f(x_t) (docs/sources/mchutchon.md#gp-prior-dynamics).

Assumed defaults (the thesis states only "a particular fixed set of hyperparameters", zero mean and sd 1): SE kernel,
variance 1, lengthscale 1; each function drawn on 2001 points of [-6, 6] (Cholesky of K; K is singular to rounding
on this grid, so jitter 1e-6 is added and recorded) and read between them by linear interpolation (grid spacing
0.006, far below the lengthscale); trajectories of 200 steps from x_0 = 0.5, the last 50 steps classified: a fixed
point (|x_{t+1} - x_t| < 1e-6), a cycle of period 2-20 (|x_{t+p} - x_t| < 1e-6), or neither (quasi-periodic or
chaotic). 300 functions (quick 60) for the claims; three of them (a fixed point, a cycle, neither) are drawn as the
thesis's blue, red and grey.
"""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from paper_figures._claims import pass_fail, pyplot, run_groups, write_results
from zoo import gp
from zoo.kernels import SquaredExponential

DESCRIPTION = "McHutchon 2014 Fig 3.2: GP-prior transition functions and their noise-free trajectories"
GRID = np.linspace(-6.0, 6.0, 2001)
STEPS, TAIL, X0, TOL, MAX_PERIOD = 200, 50, 0.5, 1e-6, 20
Z_MAX = 4.5


def draw_functions(key, count: int) -> tuple[np.ndarray, float]:
    """count draws of f ~ GP(0, SE(1, 1)) on GRID, (count, len(GRID)), and the jitter added to K's diagonal (K on a
    grid this fine is singular to rounding; the jitter is recorded in numbers.csv)."""
    L, jitter = gp.cholesky_with_jitter(SquaredExponential(1.0, jnp.ones(1))(jnp.asarray(GRID)[:, None]))
    return np.asarray(jax.random.normal(key, (count, GRID.size)) @ L.T), float(jitter)


def trajectory(f_values: np.ndarray) -> np.ndarray:
    xs = [X0]
    for _ in range(STEPS):
        xs.append(float(np.interp(xs[-1], GRID, f_values)))
    return np.array(xs)


def classify(xs: np.ndarray) -> str:
    tail = xs[-TAIL:]
    if np.max(np.abs(np.diff(tail))) < TOL:
        return "fixed point"
    for period in range(2, MAX_PERIOD + 1):
        if np.max(np.abs(tail[period:] - tail[:-period])) < TOL:
            return "cycle"
    return "neither"


def compute(quick: bool):
    count = 60 if quick else 300
    fs, jitter = draw_functions(jax.random.PRNGKey(32), count)
    trajs = [trajectory(f) for f in fs]
    kinds = [classify(xs) for xs in trajs]
    counts = {k: kinds.count(k) for k in ("fixed point", "cycle", "neither")}
    # the prior's marginal sd at the grid: sample sd over draws, relative se 1 / sqrt(2 (n - 1)) per point
    sd = fs.std(0, ddof=1)
    middle = np.abs(GRID) <= 3.0
    z_sd = float(np.max(np.abs(sd[middle] - 1.0)) / np.sqrt(1.0 / (2 * (count - 1))))
    inside = bool(all(np.all(np.abs(xs) <= 6.0) for xs in trajs))
    rows = [
        {
            "figure": "3.2",
            "claim": "a GP prior on transition functions with mean zero and standard deviation 1",
            "measured": f"sample sd over {count} draws on |x| <= 3: max deviation from 1 = {z_sd:.2f} se "
            f"(max over 1001 correlated points)",
            "verdict": pass_fail(z_sd < Z_MAX),
        },
        {
            "figure": "3.2",
            "claim": "one hyperparameter setting yields qualitatively different noise-free dynamics (decay to a "
            "point, oscillation, quasi limit cycle)",
            "measured": ", ".join(f"{k}: {v}/{count}" for k, v in counts.items()),
            "verdict": pass_fail(all(v > 0 for v in counts.values())),
        },
        {
            "figure": "3.2",
            "claim": "the states stay where the functions are drawn (f ~ N(0, 1) keeps them bounded)",
            "measured": f"all {count} trajectories within [-6, 6]: {inside}",
            "verdict": pass_fail(inside),
        },
    ]
    shown = {}
    for kind in ("fixed point", "cycle", "neither"):
        if kind in kinds:
            i = kinds.index(kind)
            shown[kind] = (fs[i], trajs[i])
    numbers = {f"count_{k.replace(' ', '_')}": v for k, v in counts.items()} | {"sd_max_z": z_sd, "jitter": jitter}
    return rows, numbers, shown


def plot(out: Path, shown) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, 1 + len(shown), figsize=(4.5 * (1 + len(shown)), 3.6))
    axes[0].fill_between(GRID, -2.0, 2.0, color="C2", alpha=0.2)
    colours = {"fixed point": "b", "cycle": "r", "neither": "grey"}
    for ax, (kind, (f, xs)) in zip(axes[1:], shown.items(), strict=True):
        axes[0].plot(GRID, f, colours[kind], lw=1)
        axes[0].plot(xs[:-1], xs[1:], ".", color=colours[kind], ms=3)
        ax.plot(xs[:60], ".-", color=colours[kind], lw=0.8)
        ax.set_title(f"trajectory: {kind}")
        ax.set_xlabel("t")
    axes[0].plot(GRID, GRID, "k:", lw=0.6)
    axes[0].set_xlim(-4, 4)
    axes[0].set_title("Fig 3.2: GP prior transition functions")
    axes[0].set_xlabel("x_t")
    axes[0].set_ylabel("x_{t+1}")
    fig.tight_layout()
    fig.savefig(out / "mchutchon_gp_prior_dynamics.png", dpi=110)
    plt.close(fig)


def main(quick: bool, out: Path) -> None:
    out = Path(out)
    rows, numbers, _ = run_groups(out, [("fig3_2", compute, plot)], quick)
    write_results(out, rows, numbers, __doc__, quick)
