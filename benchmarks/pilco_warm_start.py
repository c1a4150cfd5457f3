"""Warm against cold retraining of PILCO's GP-SSM dynamics on the same data
(docs/sources/mchutchon.md#pilco-warm-start).

Usage: ``python -m benchmarks.pilco_warm_start RUN.jsonl.pkl ITERATION {cold,warm,saved} OUT.jsonl
[--warm-steps 50]``; pin it (``/tmp/oncore``). RUN.jsonl.pkl is the state ``benchmarks.pilco_learning_run`` saves.
The dynamics fit of ITERATION (>= 2) on that iteration's data (the random roll-outs and the ITERATION - 1 policy
roll-outs before it): ``cold`` refits by 350 L-BFGS steps from Algorithm 1's AR1-GP initialisation, ``warm`` by
``--warm-steps`` steps from the run's fit of iteration ITERATION - 1, ``saved`` takes the run's own fit (warm in a
warm run; its seconds are the loop's). One JSON line is appended to OUT: wall seconds of the fit (pseudo-input
selection and compilation included, as in the loop), the GP-SSM's ADF log-likelihood of the training data at the
fit, and the RMS one-step prediction error of the observed state, y_t against the model's mean of f at
[y_{t-1}; u_{t-1}], per state dimension, on the training transitions and on the next roll-out (not trained on).
"""

import argparse
import json
import pickle
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import zoo  # noqa: F401  (float64)
from inference.applications import pilco
from inference.applications.pilco import plant
from zoo import moments
from zoo.errors import OptionError


def one_step_rmse(dyn, trials: list) -> list[float]:
    """(D,) RMS over the trials' transitions of y_t - E[f([y_{t-1}; u_{t-1}])]."""
    y = np.concatenate([np.asarray(t.y[:-1]) for t in trials])
    u = np.concatenate([np.asarray(t.u) for t in trials])
    target = np.concatenate([np.asarray(t.y[1:]) for t in trials])
    inputs = jnp.asarray(np.hstack([y, u]))
    mean = np.asarray(jax.vmap(moments.predict_point, in_axes=(None, 0, None))(dyn.predictor, inputs, dyn.mean_fn)[0])
    return np.sqrt(np.mean((target - mean) ** 2, axis=0)).round(5).tolist()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("state", type=Path)
    parser.add_argument("iteration", type=int)
    parser.add_argument("how", choices=("cold", "warm", "saved"))
    parser.add_argument("out", type=Path)
    parser.add_argument("--warm-steps", type=int, default=pilco.GPSSM_OPTIONS["warm_steps"].default)
    args = parser.parse_args()
    result = pickle.loads(args.state.read_bytes())["result"]
    num_random = len(result.trials) - len(result.predicted)
    if not 2 <= args.iteration <= len(result.fits):
        raise OptionError(f"iteration must be in [2, {len(result.fits)}] (iterations saved); got {args.iteration}.")
    trials = result.trials[: num_random + args.iteration - 1]
    held_out = result.trials[num_random + args.iteration - 1 : num_random + args.iteration]
    options = pilco.validated_options("gp-ssm", {"warm_steps": args.warm_steps})
    if args.how == "saved":
        fit, seconds = result.fits[args.iteration - 1], result.learn_seconds[args.iteration - 1]
        steps = None
    else:
        warm = result.fits[args.iteration - 2].params if args.how == "warm" else None
        start = time.perf_counter()
        observed = plant.trials_as_data(trials)
        fit = pilco.gp_ssm_fit(observed, options["num_pseudo"], options["num_steps"], args.warm_steps, 0, warm)
        seconds = time.perf_counter() - start
        steps = args.warm_steps if warm is not None else options["num_steps"]
    line = {
        "iteration": args.iteration,
        "how": args.how,
        "steps": steps,
        "data_points": 50 * len(trials),
        "seconds": round(seconds, 1),
        "compile_seconds": round(fit.compile_s, 1),
        "run_seconds": round(fit.run_s, 1),
        "adf_log_lik": round(fit.log_lik, 3),
        "one_step_rmse_train": one_step_rmse(fit.dynamics, trials),
        "one_step_rmse_next_trial": one_step_rmse(fit.dynamics, held_out),
    }
    with open(args.out, "a") as f:
        f.write(json.dumps(line) + "\n")
    print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
