"""Greedy search against SMC over structures on one series of the ABCD benchmark: held-out log predictive density
against wall time (docs/performance.md#structure-smc).

    python -m benchmarks.structure_smc --series 01-airline --depth 2 --particles 64 --steps 10

Both fit the 90 % training part of the series (``zoo.data.tsdl``) and predict its last 10 %: greedy (BIC, ML-II)
with the GP predictive of its best kernel, SMC with the particles' weighted mixture of GP predictives. The score is
log p(y_test | y_train), the held-out points jointly, in data units (higher is better).
"""

import argparse
import json
import time

import jax.numpy as jnp
import numpy as np

from inference.applications.structure_search import search, smc_search
from zoo import gp
from zoo.data import tsdl


def greedy_log_density(result, x_test: np.ndarray, y_test: np.ndarray) -> float:
    """log N(y_test | m, S + noise I) of the best kernel's GP predictive (data units)."""
    X, Xt = jnp.asarray(result.X), jnp.asarray(x_test[:, None])
    post = gp.predict(result.kernel, X, jnp.asarray(result.y - result.mean), result.noise, Xt, full_cov=True)
    r = jnp.asarray(y_test - result.mean) - post.mean
    return float(gp.gaussian_log_evidence(r, post.cov + result.noise * jnp.eye(len(y_test)))[0])


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--series", default="01-airline")
    p.add_argument("--depth", type=int, default=2, help="greedy depth")
    p.add_argument("--particles", type=int, default=64)
    p.add_argument("--steps", type=int, default=10, help="SMC annealing steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--skip-greedy", action="store_true")
    args = p.parse_args(argv)
    data = tsdl.load(args.series)
    rows = {}
    if not args.skip_greedy:
        start = time.perf_counter()
        greedy = search(data.x_train, data.y_train, depth=args.depth, seed=args.seed, progress=lambda _: None)
        rows["greedy"] = {
            "wall_s": time.perf_counter() - start,
            "kernel": greedy.best.expression,
            "log_density": greedy_log_density(greedy, data.x_test, data.y_test),
        }
        print(json.dumps(rows["greedy"]), flush=True)
    start = time.perf_counter()
    smc = smc_search(
        data.x_train, data.y_train, seed=args.seed, particles=args.particles, steps=args.steps, progress=print
    )
    rows["smc"] = {
        "wall_s": time.perf_counter() - start,
        "top": dict(list(smc.posterior().items())[:5]),
        "log_evidence_data_units": smc.log_evidence_data_units,
        "log_density": smc.log_predictive_density(data.x_test, data.y_test),
    }
    print(json.dumps(rows["smc"]), flush=True)
    return rows


if __name__ == "__main__":
    main()
