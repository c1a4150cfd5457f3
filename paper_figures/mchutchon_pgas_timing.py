"""McHutchon (2014) Table 3.3: wall-clock time of the PGAS E-step, particles x sampled trajectories, next to Matlab.

Setup as in the thesis's timing tests (docs/sources/mchutchon.md#settings): one 20-step trajectory of the 1-D kink, the
sparse GP-SSM with 10 pseudo-points (``gpssm/sparse``; parameters fixed near the truth: pseudo-inputs on [-3, 6],
pseudo-targets f(X~), signal variance 9, lengthscale 1, the true noise levels), our ``pgas`` kernel (fully adapted
conditional SMC with ancestor sampling, docs/sources/mchutchon.md#pgas). A cell's time is one call of the compiled
sampler drawing ``samples`` sweeps after a fixed 0 warm-up (compilation timed apart, one compile per cell because the
sweep count is static). Cells whose predicted time exceeds ``max_cell_s`` are extrapolated linearly in the number of
samples from the largest measured cell of the same row and marked so. The thesis ran Matlab on a quad-core i7 (up to 6
threads); we run on whatever this machine is (2 CPU cores in CI), so the ratio is hardware-dependent. Issue goal: >=
100x faster than the thesis.
"""

from pathlib import Path

from inference.files.tables import read_published, write_comparison, write_csv
from inference.particles.pgas import sweep_timing_grid
from zoo.data.kink_fixtures import TIMING_PARAMS
from zoo.gpssm.sparse import kink_timing_problem

DESCRIPTION = "McHutchon 2014 Table 3.3: PGAS E-step wall-clock, particles x samples, vs the thesis's Matlab times"


def settings(quick: bool) -> dict:
    if quick:
        return {"particles": (100, 1000), "samples": (10, 100), "max_cell_s": 20.0}
    return {"particles": (100, 500, 1000, 5000, 10000), "samples": (10, 50, 100, 500, 1000), "max_cell_s": 120.0}


def timing_grid(cfg: dict) -> list[dict]:
    """The grid's rows (``inference.particles.pgas.sweep_timing_grid``) with the thesis's time and the speedup."""
    spec, observed = kink_timing_problem()
    thesis = {(int(r["particles"]), int(r["samples"])): float(r["thesis_s"]) for r in read_published(__file__)}
    rows = sweep_timing_grid(
        spec.views["state_space"], TIMING_PARAMS, observed, cfg["particles"], cfg["samples"], cfg["max_cell_s"]
    )
    for row in rows:
        row["thesis_s"] = thesis[(row["particles"], row["samples"])]
        row["speedup"] = row["thesis_s"] / row["run_s"]
    return rows


def main(quick: bool, out: Path) -> None:
    cfg = settings(quick)
    rows = timing_grid(cfg)
    write_csv(out / "pgas_timing.csv", rows)
    plot(out, rows)
    measured = [r for r in rows if not r["extrapolated"]]
    slowest = min(measured, key=lambda r: r["speedup"])
    claim = {
        "particles": "claim",
        "samples": "goal >= 100x faster than Matlab on every cell",
        "thesis_s": "",
        "run_s": "",
        "speedup": f"min measured speedup {slowest['speedup']:.0f}x at {slowest['particles']} x {slowest['samples']}: "
        + ("MET" if slowest["speedup"] >= 100 else "NOT MET"),
    }
    table = [{k: r[k] for k in ("particles", "samples", "thesis_s", "run_s", "speedup", "extrapolated")} for r in rows]
    print(write_comparison(out, [*table, claim], __doc__))


def plot(out: Path, rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for i, N in enumerate(sorted({r["particles"] for r in rows})):
        mine = [r for r in rows if r["particles"] == N]
        S = [r["samples"] for r in mine]
        ax.plot(S, [r["thesis_s"] for r in mine], "--", color=f"C{i}", label=f"thesis, {N} particles")
        ax.plot(S, [r["run_s"] for r in mine], "-o", color=f"C{i}", label=f"ours, {N} particles")
        extra = [r for r in mine if r["extrapolated"]]
        ax.plot([r["samples"] for r in extra], [r["run_s"] for r in extra], "o", mfc="white", color=f"C{i}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("sampled trajectories")
    ax.set_ylabel("E-step wall-clock (s)")
    ax.set_title("PGAS E-step, 20-step kink trajectory (open: extrapolated)", fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(out / "mchutchon_pgas_timing.png", dpi=120)
    plt.close(fig)
