"""Chains one after another or vectorised: ESS per second of ``nuts`` and ``mams`` on ``gp/regression`` per
``chain_method``, beside ``chees`` (whose chains always move in lockstep), on JAX's default device.

The choice of default depends on the device (docs/performance.md#nuts-chains): on a CPU a vectorised NUTS chain
waits for the longest tree of the batch at every step, on a GPU the chains share each kernel launch. Run::

    taskset -c 0 python -m benchmarks.chain_method --sizes 100 1000
    python -m benchmarks.chain_method --out bench_results/chain_method     # on a GPU

Per (N, engine, chain_method): compile and run seconds (``inference.run``'s timers), ArviZ's minimum bulk ESS over
the hyperparameters, ESS per second of run (compile excluded), gradient evaluations and divergences. Same data,
seed and budget in every cell of one N.
"""

import argparse
import json
from pathlib import Path

import jax

import inference
import zoo
from inference.files.atomic import atomic_write_text
from inference.results import diagnostics

MODEL = "gp/regression"
CELLS = (("nuts", "sequential"), ("nuts", "vectorized"), ("mams", "sequential"), ("mams", "vectorized"), ("chees", "-"))


def cell(data, engine: str, chain_method: str, chains: int, warmup: int, draws: int) -> dict:
    if engine == "chees":  # many short chains in lockstep: its own design, 4x the chains at a quarter of the draws
        options = {"num_chains": 4 * chains, "num_warmup": warmup, "num_samples": max(draws // 4, 50)}
    elif engine == "mams":  # tuning stages are fractions of the sampling run: no num_warmup
        options = {"num_chains": chains, "num_samples": warmup + draws, "chain_method": chain_method}
    else:
        options = {"num_chains": chains, "num_warmup": warmup, "num_samples": draws, "chain_method": chain_method}
    idata = inference.run(MODEL, data, engine=engine, seed=0, **options)
    stats = diagnostics.engine_stats(idata)
    keys = ("compile_s", "run_s", "min_ess_bulk", "ess_per_s", "divergences", "chains")
    return {k: stats[k] for k in keys} | {"grads": int(idata.posterior.attrs.get("num_grad_evals", -1))}


def table(rows: list[dict]) -> str:
    titles = ["N", "engine", "chain_method", "chains", "compile (s)", "run (s)", "min bulk ESS", "ESS/s", "gradients"]
    lines = ["| " + " | ".join([*titles, "divergences"]) + " |", "|" + "---|" * 10]
    for r in rows:
        lines.append(
            f"| {r['N']:,} | {r['engine']} | {r['chain_method']} | {r['chains']} | {r['compile_s']:.2g} | "
            f"{r['run_s']:.3g} | {r['min_ess_bulk']:.0f} | {r['ess_per_s']:.3g} | {r['grads']:,} | {r['divergences']} |"
        )
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench_results/chain_method"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--draws", type=int, default=1000)
    args = parser.parse_args(argv)
    rows = []
    for n in args.sizes:
        data = zoo.get(MODEL).simulate(jax.random.key(n), n=n)
        for engine, chain_method in CELLS:
            row = {"N": n, "engine": engine, "chain_method": chain_method}
            row |= cell(data, engine, chain_method, args.chains, args.warmup, args.draws)
            print(json.dumps(row), flush=True)
            rows.append(row)
    args.out.mkdir(parents=True, exist_ok=True)
    device = jax.devices()[0].device_kind
    atomic_write_text(args.out / "results.json", json.dumps(rows, indent=1))
    atomic_write_text(args.out / "table.md", f"device: {device}\n\n{table(rows)}\n")
    print(f"device: {device}\n\n{table(rows)}")


if __name__ == "__main__":
    main()
