"""PGAS E-step timing next to McHutchon's Table 3.3; bootstrap-PF throughput against `particles` and a bare filter.

Usage: ``python -m benchmarks.pgas_timing [--full] [--max-cell-s 120] [--skip-estep] [--skip-pf] [--skip-peer]``;
pin it (``taskset -c 0 ...``). Prints two Markdown tables.

* E-step: the setting of ``paper_figures/mchutchon_pgas_timing.py`` (the thesis's: one 20-step trajectory of the 1-D
  kink, sparse GP-SSM with 10 pseudo-points, ``pgas`` sweeps with 0 warm-up; run time excludes compilation and is
  the fastest of ``--repeats`` calls, where the figure times one), on the
  figure's quick cells (100 and 1,000 particles x 10 and 100 samples) or with ``--full`` its whole grid. Only cells
  we measure are compared with the published Matlab times (``mchutchon_pgas_timing_published.csv``); a cell predicted
  to exceed ``--max-cell-s`` is extrapolated from its row, marked so, and left out of the minimum.
* PF throughput: ``benchmarks.pf_throughput`` (ours, ``particles``, and the bare-JAX floor at 1k, 10k, 100k particles).
  The ``particles`` peer lives in its own venv: ``python -m benchmarks.peers install particles``; when it is missing
  the table has n/a in its columns and a note says that command.
"""

import argparse
from pathlib import Path

import zoo  # noqa: F401  (float64)
from benchmarks import pf_throughput
from inference.files.tables import read_published
from inference.particles.pgas import sweep_timing_grid
from zoo.data.kink_fixtures import TIMING_PARAMS
from zoo.gpssm.sparse import kink_timing_problem

# The figure's settings and published times, read from its folder (benchmarks do not import paper_figures).
FIGURE = Path(__file__).resolve().parents[1] / "paper_figures" / "mchutchon_pgas_timing.py"
QUICK_GRID = {"particles": (100, 1000), "samples": (10, 100), "max_cell_s": 20.0}
FULL_GRID = {"particles": (100, 500, 1000, 5000, 10000), "samples": (10, 50, 100, 500, 1000), "max_cell_s": 120.0}


def estep_rows(full: bool, max_cell_s: float | None, repeats: int) -> list[dict]:
    """The figure's grid (``inference.particles.pgas.sweep_timing_grid``), each measured cell the fastest of ``repeats``
    calls, with the thesis's time and the speedup."""
    cfg = FULL_GRID if full else QUICK_GRID
    spec, observed = kink_timing_problem()
    thesis = {(int(r["particles"]), int(r["samples"])): float(r["thesis_s"]) for r in read_published(str(FIGURE))}
    limit = cfg["max_cell_s"] if max_cell_s is None else max_cell_s
    rows = sweep_timing_grid(
        spec.views["state_space"], TIMING_PARAMS, observed, cfg["particles"], cfg["samples"], limit, repeats
    )
    for row in rows:
        row["thesis_s"] = thesis[(row["particles"], row["samples"])]
        row["speedup"] = row["thesis_s"] / row["run_s"]
    return rows


def estep_markdown(rows: list[dict]) -> str:
    lines = [
        "| particles | samples | thesis (s, Matlab) | ours (s) | speedup | compile (s) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        ours = f"{r['run_s']:.3g}" + (" (extrapolated)" if r["extrapolated"] else "")
        lines.append(
            f"| {r['particles']:,} | {r['samples']:,} | {r['thesis_s']:g} | {ours} | {r['speedup']:.0f}x "
            f"| {r['compile_s']:.1f} |"
        )
    measured = [r for r in rows if not r["extrapolated"]]
    slowest = min(measured, key=lambda r: r["speedup"])
    lines.append(
        f"\nmin speedup over measured cells: {slowest['speedup']:.0f}x at {slowest['particles']} x "
        f"{slowest['samples']} (goal >= 100x: {'MET' if slowest['speedup'] >= 100 else 'NOT MET'})"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the figure's whole 5 x 5 grid")
    parser.add_argument("--max-cell-s", type=float, default=None, help="extrapolate cells predicted to take longer")
    parser.add_argument("--repeats", type=int, default=3, help="E-step cells: fastest of this many calls")
    parser.add_argument("--skip-estep", action="store_true")
    parser.add_argument("--skip-pf", action="store_true")
    parser.add_argument("--skip-peer", action="store_true", help="PF table without the particles library")
    args = parser.parse_args()
    if not args.skip_estep:
        print("PGAS E-step (20-step 1-D kink, sparse GP-SSM, 10 pseudo-points); thesis = McHutchon Table 3.3, Matlab")
        print(estep_markdown(estep_rows(args.full, args.max_cell_s, args.repeats)))
    if not args.skip_pf:
        rows = pf_throughput.throughput_table([1000, 10000, 100000], with_peer=not args.skip_peer)
        print("\nBootstrap PF on lgssm (D = E = 2, T = 1000), million particle-steps per second, best of >= 3 rounds")
        print(pf_throughput.markdown(rows))


if __name__ == "__main__":
    main()
