"""Time of one direct-method NLML + gradient evaluation vs state dimension D (McHutchon Fig 3.14, E3.2:
docs/sources/mchutchon.md#experiments).

Setting of the thesis: 10 pseudo-points, one 20-step trajectory, D = 1..10, random GP systems (M14). The thesis
reports the cost as ~quadratic in D and extrapolates full training (20 trajectories x 20 steps x 750 iterations) to
~50 min (D = 1) and ~10 h (D = 10), i.e. ~0.2 s and ~2.4 s per NLML+gradient of one 20-step trajectory (Matlab).

Run: ``python -m benchmarks.direct_scaling [--max-dim 10] [--repeats 20]``. Prints compile and run time per D and the
log-log slope of run time against D (2 = quadratic).
"""

import argparse
import time

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np

import zoo  # noqa: F401  (float64)
from inference.core.program import observed_args
from inference.gaussian import moment_matching as mm
from zoo import gpssm
from zoo.data import ssm_systems

THESIS_SECONDS_PER_EVAL = {1: 50 * 60 / (20 * 750), 10: 10 * 3600 / (20 * 750)}  # extrapolations of sec. 3.5


def time_one_dimension(D: int, repeats: int, num_pseudo: int = 10, num_steps: int = 20) -> dict[str, float]:
    data = ssm_systems.random_gp_system(jax.random.key(D), state_dim=D, num_train=1, num_test=1, num_steps=num_steps)
    rng = np.random.default_rng(D)
    pseudo = rng.normal(scale=np.sqrt(2.0), size=(num_pseudo, D))  # pseudo-inputs spread like the system's states
    spec = gpssm.sparse_gpssm_spec(f"bench/random-{D}", lambda key: None, D, num_pseudo=num_pseudo)
    dataset = spec.validate({**data.observed, "pseudo_inputs": pseudo})
    observed = observed_args(dataset)
    gp_view = spec.views["gp_ssm"]
    params = {
        "lengthscale": jnp.full((D, D), np.sqrt(D)),
        "signal_var": jnp.full(D, 1.0),
        "process_var": jnp.full(D, 0.05),
        "obs_var": jnp.full(D, 0.1),
        "pseudo_targets": jnp.asarray(rng.normal(size=(D, num_pseudo))),
    }
    flat, unravel = jax.flatten_util.ravel_pytree(
        {k: jnp.log(v) if k != "pseudo_targets" else v for k, v in params.items()}
    )

    def nlml(flat, observed):
        p = unravel(flat)
        p = {k: jnp.exp(v) if k != "pseudo_targets" else v for k, v in p.items()}
        return -jnp.sum(mm.adf_all(gp_view, p, observed).log_lik)

    value_and_grad = jax.jit(jax.value_and_grad(nlml))
    start = time.perf_counter()
    compiled = value_and_grad.lower(flat, observed).compile()
    compile_s = time.perf_counter() - start
    jax.block_until_ready(compiled(flat, observed))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(compiled(flat, observed))
        times.append(time.perf_counter() - start)
    return {"D": D, "compile_s": compile_s, "run_s": float(np.median(times)), "num_params": int(flat.shape[0])}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-dim", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)
    rows = [time_one_dimension(D, args.repeats) for D in range(1, args.max_dim + 1)]
    print(f"{'D':>3} {'params':>7} {'compile s':>10} {'NLML+grad ms':>13} {'thesis s':>9}")
    for r in rows:
        thesis = THESIS_SECONDS_PER_EVAL.get(r["D"])
        shown = f"{thesis:9.2f}" if thesis else " " * 9
        print(f"{r['D']:>3} {r['num_params']:>7} {r['compile_s']:>10.2f} {1e3 * r['run_s']:>13.3f} {shown}")
    D = np.array([r["D"] for r in rows], dtype=float)
    run = np.array([r["run_s"] for r in rows])
    slope = np.polyfit(np.log(D[D >= 2]), np.log(run[D >= 2]), 1)[0] if len(D) > 2 else float("nan")
    thesis_slope = np.log(THESIS_SECONDS_PER_EVAL[10] / THESIS_SECONDS_PER_EVAL[1]) / np.log(10.0)
    print(f"log-log slope of run time vs D (D >= 2): {slope:.2f} (2 = quadratic)")
    print(f"thesis extrapolations (D = 1 and 10) give a slope of {thesis_slope:.2f}")


if __name__ == "__main__":
    main()
