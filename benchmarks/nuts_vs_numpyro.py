"""ESS per second of BlackJAX NUTS vs NumPyro's NUTS kernel on ``gp/regression`` (N = 100 and N = 500).

Both engines run 4 vmapped chains x (500 warmup + 1000 draws) inside one cached jit; ``inference.run`` times
compilation and sampling apart, so ESS/s divides by sampling time alone (warmup included). Extra calls with
other seeds (``--repeats``) reuse the compiled program and give the median. ESS is ArviZ's minimum bulk ESS
over the hyperparameters. Usage: ``python -m benchmarks.nuts_vs_numpyro [--sizes 100 500] [--repeats 1]``.
"""

import argparse
import time

import jax

import inference
import zoo
from inference import diagnostics

ENGINES = ("nuts", "numpyro-nuts")


def measure(engine: str, dataset, seed: int, options: dict) -> dict:
    start = time.perf_counter()
    idata = inference.run("gp/regression", dataset, engine=engine, seed=seed, **options)
    stats = diagnostics.engine_stats(idata)
    stats["call_s"] = time.perf_counter() - start
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 500])
    parser.add_argument("--repeats", type=int, default=1, help="further calls after the compiling one")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--draws", type=int, default=1000)
    args = parser.parse_args()
    options = {"num_chains": args.chains, "num_warmup": args.warmup, "num_samples": args.draws}
    print(f"{'N':>5} {'engine':>13} {'compile_s':>9} {'run_s':>7} {'min_ess':>8} {'ESS/s':>8} {'ESS/grad':>9}")
    for n in args.sizes:
        dataset = zoo.get("gp/regression").simulate(jax.random.key(n), n=n)
        for engine in ENGINES:
            first = measure(engine, dataset, 0, options)
            runs = [first] + [measure(engine, dataset, seed, options) for seed in range(1, args.repeats + 1)]
            run_s = sorted(r["run_s"] for r in runs)[len(runs) // 2]
            ess = sorted(r["min_ess_bulk"] for r in runs)[len(runs) // 2]
            per_grad = sorted(r["ess_per_grad"] for r in runs)[len(runs) // 2]
            print(
                f"{n:>5} {engine:>13} {first['compile_s']:>9.2f} {run_s:>7.2f} {ess:>8.0f} {ess / run_s:>8.1f} "
                f"{per_grad:>9.4f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
