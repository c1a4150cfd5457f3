"""Speed of the latent-GP engines (docs/performance.md#nonconjugate-speed): Laplace's and EP's cost per iteration
against N, and elliptical slice sampling's effective samples per second against NUTS's on one model and data set.

Per-iteration cost: ``inference.run`` of ``laplace`` (or ``ep``) on simulated probit classification data of N points
(1-D inputs, SE kernel, lengthscale 1, variance 4, fixed), once with ``max_iterations=1`` (``max_sweeps=1``) and once
to convergence; the difference of their run times (compile excluded, the best of ``repeats`` calls each) over the
difference of their iteration counts is the cost of one Newton iteration (one EP sweep), with everything a fit does
once (the final Cholesky, predictions, draws) cancelled. A Newton iteration holds one Cholesky of B (N^3 / 3 flops) and
matrix-vector products; a sequential EP sweep holds N rank-one updates of Sigma (N^3 flops in all) and one Cholesky of
B with a triangular solve of N right-hand sides. The log-log slope over the sizes is printed with the time of one
Cholesky of an N x N matrix (``jnp.linalg.cholesky``, jitted) for scale.

ESS against NUTS: ``gp/classification`` (probit, whitened) on N points of the same data at the same fixed
hyperparameters, 4 chains each (ESS: 1000 warm-up, 4000 draws thinned by 4; NUTS: 500 warm-up, 1000 draws); min and
median bulk ESS of f over the points, per second of run time.

Run: ``nice -n 5 taskset -c 1 python -m benchmarks.nonconjugate_speed [--sizes 100 200 400 800] [--ess-n 100]``.
"""

import argparse
import time

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np

import inference
import zoo

PARAMS = {"lengthscale": 1.0, "variance": 4.0}
ENGINES = {"laplace": "max_iterations", "ep": "max_sweeps"}
ITERATIONS = {"laplace": "iterations", "ep": "sweeps"}


def data(n: int):
    return zoo.get("gp/classification").simulate(jax.random.key(n), n=n, d=1, n_test=1)


def best_run(spec, dataset, engine: str, repeats: int, **options) -> tuple[float, int]:
    """(the smallest run time over ``repeats`` calls, the iterations the fit ran)."""
    times, iterations = [], 0
    for seed in range(repeats):
        result = inference.run(
            spec, dataset, engine=engine, seed=seed, params=PARAMS, num_chains=1, num_samples=1, **options
        )
        times.append(float(result.posterior.attrs["run_s"]))
        iterations = int(result.point_estimates[ITERATIONS[engine]].values[0])
    return min(times), iterations


def cholesky_seconds(n: int, repeats: int) -> float:
    A = jax.random.normal(jax.random.key(0), (n, n))
    A = A @ A.T + n * jnp.eye(n)
    chol = jax.jit(jnp.linalg.cholesky)
    chol(A).block_until_ready()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        chol(A).block_until_ready()
        times.append(time.perf_counter() - start)
    return min(times)


def per_iteration(sizes, repeats: int) -> list[dict]:
    spec = zoo.get("gp/classification")
    rows = []
    for n in sizes:
        dataset = data(n)
        row = {"N": n, "cholesky_s": cholesky_seconds(n, repeats)}
        for engine, limit in ENGINES.items():
            one, it_one = best_run(spec, dataset, engine, repeats, **{limit: 1})
            full, it_full = best_run(spec, dataset, engine, repeats)
            row[f"{engine}_iterations"] = it_full
            row[f"{engine}_per_iteration_s"] = (full - one) / max(it_full - it_one, 1)
        rows.append(row)
        print(row, flush=True)
    return rows


def slope(rows, key: str) -> float:
    """Least-squares slope of log time against log N."""
    n = np.log([r["N"] for r in rows])
    t = np.log([max(r[key], 1e-9) for r in rows])
    return float(np.polyfit(n, t, 1)[0])


def ess_vs_nuts(n: int) -> list[dict]:
    spec = zoo.get("gp/classification")
    dataset = data(n)
    runs = {
        "ess": {"num_chains": 4, "num_warmup": 1000, "num_samples": 1000, "thinning": 4},
        "nuts": {"num_chains": 4, "num_warmup": 500, "num_samples": 1000},
    }
    rows = []
    for engine, options in runs.items():
        result = inference.run(spec, dataset, engine=engine, seed=0, params=PARAMS, **options)
        ess = np.asarray(az.ess(result.posterior, var_names=["f"])["f"])
        run_s = float(result.posterior.attrs["run_s"])
        rows.append(
            {
                "engine": engine,
                "N": n,
                "draws": options["num_chains"] * options["num_samples"],
                "run_s": run_s,
                "compile_s": float(result.posterior.attrs["compile_s"]),
                "min_bulk_ess": float(ess.min()),
                "median_bulk_ess": float(np.median(ess)),
                "min_ess_per_s": float(ess.min()) / run_s,
                "median_ess_per_s": float(np.median(ess)) / run_s,
            }
        )
        print(rows[-1], flush=True)
    return rows


def markdown(rows) -> str:
    header = list(rows[0])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        lines.append("| " + " | ".join(f"{r[h]:.3g}" if isinstance(r[h], float) else str(r[h]) for h in header) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 400, 800])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ess-n", type=int, default=100)
    args = parser.parse_args()
    rows = per_iteration(args.sizes, args.repeats)
    print(markdown(rows))
    for key in ("cholesky_s", "laplace_per_iteration_s", "ep_per_iteration_s"):
        print(f"log-log slope of {key} over N = {args.sizes}: {slope(rows, key):.2f}")
    print(markdown(ess_vs_nuts(args.ess_n)))


if __name__ == "__main__":
    main()
