"""Re-score the best candidates of a structure search by the three scores (docs/sources/duvenaud.md#scores).

    python -m benchmarks.structure_scores TRACE.json SERIES [--top 4] [--particles 256]

Reads a search trace (``SearchResult.write_json``) of a TSDL series as ``paper_figures/duvenaud_abcd_extrapolation.py``
writes them (``figures_out/duvenaud_abcd_extrapolation/series/NAME.trace.json``), takes the ``top`` candidates by
BIC, and for each computes Laplace's log evidence (from its ML-II hyperparameters) and the tempered-SMC log
evidence, with their wall times and the posterior over these structures under each score. The data are the ones
the search saw: the figure's training split and its random subset of at most 250 points, standardised the same way.
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np

from inference.applications.structure_search import Standardisation, extrapolation, structure_posterior
from inference.applications.structure_search.scores import laplace_log_evidence, tsmc_log_evidence


def load(name: str, subset: int = extrapolation.FULL["subset"]) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) the figure's search fitted on series ``name``."""
    x, y, _, _ = extrapolation.load(name)
    chosen = extrapolation.subset_indices(len(x), subset)
    return x[chosen], y[chosen]


def main(argv=None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("trace")
    p.add_argument("series")
    p.add_argument("--top", type=int, default=4)
    p.add_argument("--particles", type=int, default=256)
    args = p.parse_args(argv)
    saved = json.loads(Path(args.trace).read_text())
    x, y = load(args.series)
    scale = Standardisation.of(x[:, None], y)
    Xs, ys = scale.inputs(x[:, None]), scale.targets(y)
    entries = sorted((e for e in saved["trace"] if e["error"] is None), key=lambda e: -e["bic"])[: args.top]
    rows = []
    for e in entries:
        init = {k: np.asarray(v) for k, v in e["hyperparameters"].items()} | {"noise": e["noise"]}
        t0 = time.perf_counter()
        lap = laplace_log_evidence(e["expression"], Xs, ys, init)
        t1 = time.perf_counter()
        smc = tsmc_log_evidence(e["expression"], Xs, ys, num_particles=args.particles)
        t2 = time.perf_counter()
        rows.append((e["expression"], e["bic"], lap["log_evidence"], t1 - t0, smc["log_evidence"], t2 - t1))
        print(rows[-1], flush=True)
    posts = [structure_posterior({r[0]: r[i] for r in rows}) for i in (1, 2, 4)]
    print("| kernel | BIC | Laplace log Z | Laplace s | tSMC log Z | tSMC s | p(M) BIC / Laplace / tSMC |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        p_ = " / ".join(f"{post[r[0]]:.2f}" for post in posts)
        print(f"| {r[0]} | {r[1]:.2f} | {r[2]:.2f} | {r[3]:.0f} | {r[4]:.2f} | {r[5]:.0f} | {p_} |")


if __name__ == "__main__":
    main()
