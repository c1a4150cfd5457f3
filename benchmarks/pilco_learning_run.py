"""One PILCO learning run (McHutchon Fig 4.2) on the cart-pole swing-up: wall time per phase and the outcome,
resumable in chunks.

Usage: ``python -m benchmarks.pilco_learning_run MODEL SEED OUT.jsonl [--iterations 10] [--tests 10] [--max-steps 100]
[--noise-factor 1] [--warm-steps 50] [--cold] [--bucket 100] [--raw-angle] [--policy-angle] [--pseudo-targets]
[--budget 1140] [--resume]``; pin it (``taskset -c 1``). MODEL is ``ar-gp`` or ``gp-ssm``; the AR-GP sees sin and cos
of the angle unless ``--raw-angle``, and pads its data to a multiple of ``--bucket`` rows; ``--policy-angle``: so does
the RBF policy (PILCO's convention, ``inference.applications.pilco.policies.MappedPolicy``); ``--pseudo-targets``: the
RBF policy is
parameterised by PILCO's pseudo-targets (``inference.applications.pilco.policies.PseudoTargetRBF``).
``inference.applications.pilco.control_loop``
with 2 random roll-outs; the GP-SSM's dynamics fit is warm-started from the previous iteration's (``--warm-steps``
L-BFGS steps; ``--cold`` retrains from Algorithm 1's initialisation every time). After every iteration OUT holds one
JSON line per iteration so far: wall seconds of the dynamics training, of the policy optimisation (compilation
included, so the first iteration of each compiled shape pays it) and of the whole iteration, L-BFGS iterations, the
jitter each dynamics GP needed, the predicted and true total costs, and the fraction of ``--tests`` test trials from
fresh start states that swing up (docs/sources/mchutchon.md#pilco-success).
An iteration whose policy L-BFGS ended non-finite (the previous policy kept) is warned of on stderr as it happens,
and the run then exits with status 1 at its end, its state saved: a failed run, not a slow learner.

Chunks: the loop's whole state (trials, policies, PRNG key, every dynamics fit) is saved to OUT.pkl after every
iteration, written atomically with OUT (``inference.files.atomic``), so a run killed at any point loses at most the
iteration in progress. No new iteration starts when the elapsed time plus 1.2 times the last iteration's (after the
cold first fit: with its dynamics training scaled to the warm steps) would pass ``--budget`` seconds. ``--resume``
continues from OUT.pkl (same arguments, checked) up to ``--iterations`` in total, from the saved PRNG key, policy and
last dynamics fit.
"""

import argparse
import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np

import zoo  # noqa: F401  (float64)
from inference.applications import pilco
from inference.applications.pilco import plant
from inference.files.atomic import atomic_write_bytes, atomic_write_text
from zoo.errors import OptionError

# the arguments a resumed run must share with the run it continues (the rest may change between chunks)
SAME_RUN = (
    "model",
    "seed",
    "tests",
    "max_steps",
    "noise_factor",
    "warm_steps",
    "cold",
    "raw_angle",
    "policy_angle",
    "pseudo_targets",
)


NON_FINITE = (
    "warning: iteration {iteration}: the policy's L-BFGS ended non-finite; the previous policy was kept, so this "
    "iteration learnt nothing (the run exits with status 1 at its end)"
)


class BudgetSpent(Exception):
    pass


def state_path(out: Path) -> Path:
    return out.with_name(out.name + ".pkl")


def iteration_line(args: argparse.Namespace, result: pilco.LoopResult, i: int, chunk: int) -> dict:
    """The JSON line of iteration i (0-based) of ``result``."""
    return {
        "model": args.model,
        "seed": args.seed,
        "noise_factor": args.noise_factor,
        "warm_start": not args.cold and i > 0 and args.model == "gp-ssm",
        "angle_inputs": args.model == "ar-gp" and not args.raw_angle,
        "policy_angle_inputs": args.policy_angle,
        "policy_pseudo_targets": args.pseudo_targets,
        "iteration": i + 1,
        "chunk": chunk,
        "data_points": 50 * (len(result.trials) - len(result.predicted) + i),
        "learn_seconds": round(result.learn_seconds[i], 2),
        "optimise_seconds": round(result.optimise_seconds[i], 2),
        "iteration_seconds": round(result.iteration_seconds[i], 2),
        "lbfgs_steps": result.lbfgs_steps[i],
        "lbfgs_finite": result.finite[i],
        "jitter": result.jitter[i],
        "predicted": round(result.predicted[i], 3),
        "trial_cost": round(result.trial_costs[i], 3),
        "test_cost_mean": round(float(np.mean(result.test_costs[i])), 3),
        "test_success": result.success[i],
    }


def save(args: argparse.Namespace, result: pilco.LoopResult, lines: list[dict]) -> None:
    """OUT.pkl (the loop's state) and OUT (its lines), each atomically; the lines are rewritten whole, so OUT never
    holds an iteration twice or one the state lacks for longer than the gap between the two renames."""
    payload = {"args": {k: getattr(args, k) for k in SAME_RUN}, "result": result.on_host(), "lines": lines}
    atomic_write_bytes(state_path(args.out), pickle.dumps(payload))
    atomic_write_text(args.out, "".join(json.dumps(line) + "\n" for line in lines))


def load(args: argparse.Namespace) -> tuple[pilco.LoopResult, list[dict]]:
    path = state_path(args.out)
    if not path.exists():
        raise OptionError(f"--resume: no saved state at {path}; run without --resume first.")
    saved = pickle.loads(path.read_bytes())
    ours = {k: getattr(args, k) for k in SAME_RUN}
    if saved["args"] != ours:
        raise OptionError(f"--resume: {path} was run with {saved['args']}, not {ours}.")
    return saved["result"], saved["lines"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=pilco.MODELS)
    parser.add_argument("seed", type=int)
    parser.add_argument("out", type=Path)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--tests", type=int, default=10)
    parser.add_argument("--max-steps", type=int, default=100)
    parser.add_argument("--noise-factor", type=float, default=1.0)
    parser.add_argument("--warm-steps", type=int, default=pilco.GPSSM_OPTIONS["warm_steps"].default)
    parser.add_argument("--cold", action="store_true", help="retrain the GP-SSM from cold every iteration")
    parser.add_argument("--bucket", type=int, default=pilco.AR_GP_OPTIONS["bucket"].default, help="AR-GP padding")
    parser.add_argument("--raw-angle", action="store_true", help="the AR-GP sees the angle, not its sin and cos")
    parser.add_argument("--policy-angle", action="store_true", help="the policy sees sin and cos of the angle")
    parser.add_argument(
        "--pseudo-targets", action="store_true", help="the RBF policy parameterised by PILCO's pseudo-targets"
    )
    parser.add_argument("--budget", type=float, default=1140.0)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()
    start = time.perf_counter()
    resume, lines = load(args) if args.resume else (None, [])
    chunk = 1 + max((line["chunk"] for line in lines), default=0)
    if args.model == "gp-ssm":
        options = {"warm_steps": args.warm_steps, "warm_start": not args.cold}
    else:
        options = {"bucket": args.bucket, "angle_inputs": not args.raw_angle}

    def record(result: pilco.LoopResult) -> None:
        i = len(result.predicted) - 1
        lines.append(iteration_line(args, result, i, chunk))
        save(args, result, lines)
        print(json.dumps({**lines[-1], "elapsed_seconds": round(time.perf_counter() - start, 1)}), flush=True)
        if not result.finite[i]:
            print(NON_FINITE.format(iteration=i + 1), file=sys.stderr, flush=True)
        next_guess = 1.2 * result.iteration_seconds[i]
        if i == 0 and options.get("warm_start"):  # the next fit is warm: its L-BFGS scales with the steps
            learn = result.learn_seconds[i] * args.warm_steps / pilco.GPSSM_OPTIONS["num_steps"].default
            next_guess = 1.2 * (result.iteration_seconds[i] - result.learn_seconds[i] + learn)
        if time.perf_counter() - start + next_guess > args.budget and i + 1 < args.iterations:
            raise BudgetSpent

    try:
        pilco.control_loop(
            plant.SwingUp(noise_factor=args.noise_factor),
            model=args.model,
            seed=args.seed,
            num_iterations=args.iterations,
            num_tests=args.tests,
            max_steps=args.max_steps,
            policy_angle_inputs=args.policy_angle,
            policy_kind="rbf-targets" if args.pseudo_targets else "rbf",
            dynamics_options=options,
            on_iteration=record,
            resume=resume,
        )
    except BudgetSpent:
        print(f"stopped after {time.perf_counter() - start:.0f} s: budget spent; continue with --resume", flush=True)
    failed = [line["iteration"] for line in lines if not line["lbfgs_finite"]]
    if failed:  # the run is saved and resumable, but a driver must not count it as a good one
        sys.exit(f"failed run: policy optimisation ended non-finite at iterations {failed} (kept the previous policy)")


if __name__ == "__main__":
    main()
