"""One PILCO learning run (McHutchon Fig 4.2) on the cart-pole swing-up: wall time per phase and the outcome.

Usage: ``python -m benchmarks.pilco_learning_run MODEL SEED OUT.jsonl [--iterations 10] [--tests 10]
[--max-steps 100] [--noise-factor 1] [--budget 1380]``; pin it (``/tmp/oncore`` or ``taskset -c 0``). MODEL is
``ar-gp`` or ``gp-ssm``. ``inference.pilco.control_loop`` with 2 random roll-outs; after every iteration one JSON line
is appended to OUT: wall seconds of the dynamics training and of the policy optimisation (compilation included, so
the first iteration of each compiled shape pays it), L-BFGS iterations, the jitter each dynamics GP needed, the
predicted and true total costs, and the fraction of ``--tests`` test trials from fresh start states that swing up
(docs/sources/mchutchon.md#pilco-success). No new iteration starts once ``--budget`` wall seconds have passed, so a
run split to fit a time limit ends cleanly; the lines written so far are the result.
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np

import zoo  # noqa: F401  (float64)
from inference import pilco
from zoo.pilco import plant


class BudgetSpent(Exception):
    pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=pilco.MODELS)
    parser.add_argument("seed", type=int)
    parser.add_argument("out", type=Path)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--tests", type=int, default=10)
    parser.add_argument("--max-steps", type=int, default=100)
    parser.add_argument("--noise-factor", type=float, default=1.0)
    parser.add_argument("--budget", type=float, default=1380.0)
    args = parser.parse_args()
    start = time.perf_counter()

    def record(result: pilco.LoopResult) -> None:
        i = len(result.predicted) - 1
        line = {
            "model": args.model,
            "seed": args.seed,
            "noise_factor": args.noise_factor,
            "iteration": i + 1,
            "data_points": 50 * (len(result.trials) - 1),
            "learn_seconds": round(result.learn_seconds[i], 2),
            "optimise_seconds": round(result.optimise_seconds[i], 2),
            "lbfgs_steps": result.lbfgs_steps[i],
            "lbfgs_finite": result.finite[i],
            "jitter": result.jitter[i],
            "predicted": round(result.predicted[i], 3),
            "trial_cost": round(result.trial_costs[i], 3),
            "test_cost_mean": round(float(np.mean(result.test_costs[i])), 3),
            "test_success": result.success[i],
            "elapsed_seconds": round(time.perf_counter() - start, 1),
        }
        with open(args.out, "a") as f:
            f.write(json.dumps(line) + "\n")
        print(json.dumps(line), flush=True)
        if time.perf_counter() - start > args.budget and i + 1 < args.iterations:
            raise BudgetSpent

    try:
        pilco.control_loop(
            plant.SwingUp(noise_factor=args.noise_factor),
            model=args.model,
            seed=args.seed,
            num_iterations=args.iterations,
            num_tests=args.tests,
            max_steps=args.max_steps,
            on_iteration=record,
        )
    except BudgetSpent:
        print(f"stopped after {time.perf_counter() - start:.0f} s: budget spent", flush=True)


if __name__ == "__main__":
    main()
