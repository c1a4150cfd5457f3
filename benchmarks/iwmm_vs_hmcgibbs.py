"""The ``iwmm`` engine against NumPyro's ``HMCGibbs`` on the same model (issue 21): iterations per second.

Both samplers run the same iteration on the same program: one collapsed Gibbs sweep over the labels
(``inference.mcmc.iwmm.gibbs_sweep``, given to ``HMCGibbs`` as its ``gibbs_fn``) and one HMC trajectory of 25 leapfrog
steps on (X, log theta) with an identity mass matrix and a dual-averaged step size. Ours runs in one ``lax.scan``
through ``inference.run``; NumPyro's ``HMCGibbs(HMC(spec.program), ...)`` is the peer. Data: 2-curve (N = 100),
Q = 2, one chain, half of ``--iters`` warm-up. Each sampler runs twice and the second run is timed (wall and process
CPU: on a shared core the CPU time is the robust one), so compilation is excluded; also reported: the posterior mean
number of clusters and mean Rand index of its draws (a sanity comparison, not a test: both chains are short).

Usage: ``taskset -c 1 python -m benchmarks.iwmm_vs_hmcgibbs [--iters 300] [--out DIR]``; writes
``DIR/report.md`` (default ``bench_results/iwmm_vs_hmcgibbs``).
"""

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # as zoo.config does, which would be imported after jaxlib here

import jax  # noqa: E402
import numpy as np  # noqa: E402
from numpyro.infer import HMC, MCMC, HMCGibbs  # noqa: E402

import inference  # noqa: E402
import zoo  # noqa: E402
from inference.files.atomic import atomic_write_text  # noqa: E402
from inference.files.tables import markdown_table  # noqa: E402
from inference.mcmc.iwmm import gibbs_sweep  # noqa: E402
from zoo.iwmm import data, metrics  # noqa: E402

LEAPFROG = 25


def two_curve():
    Y, truth = data.load("2-curve")
    (Y,) = data.standardise(Y)
    return Y, truth


def timed(fn):
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - start_wall, time.process_time() - start_cpu, out


def run_ours(spec, Y, iters, seed=0):
    """(wall s, CPU s, labels (S, N)) of a second call: the first compiles, the engine's Timer keeps the program."""
    half = iters // 2

    def call():
        idata = inference.run(
            spec, {"Y": Y}, engine="iwmm", seed=seed, num_chains=1, num_warmup=half, num_samples=iters - half
        )
        return idata.posterior["labels"].values[0]

    call()
    return timed(call)


def run_numpyro(spec, Y, iters, seed=0):
    """(wall s, CPU s, labels (S, N)) of a second ``run`` of one MCMC object (``jit_model_args``: it compiles once)."""
    view = spec.views["iwmm"]

    def gibbs_fn(rng_key, gibbs_sites, hmc_sites):
        return {"z": gibbs_sweep(rng_key, gibbs_sites["z"], hmc_sites["X"], view)[0]}

    Y = jax.numpy.asarray(Y)
    position, labels = view.initial(Y)
    inner = HMC(spec.program, step_size=0.001 * np.sqrt(len(Y)), num_steps=LEAPFROG, adapt_mass_matrix=False)
    half = iters // 2
    kernel = HMCGibbs(inner, gibbs_fn=gibbs_fn, gibbs_sites=["z"])
    mcmc = MCMC(kernel, num_warmup=half, num_samples=iters - half, progress_bar=False, jit_model_args=True)

    def call():
        mcmc.run(jax.random.key(seed), Y=Y, init_params=position | {"z": labels})
        return np.asarray(jax.block_until_ready(mcmc.get_samples()["z"]))

    call()
    return timed(call)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=300)
    parser.add_argument("--out", type=Path, default=Path("bench_results/iwmm_vs_hmcgibbs"))
    args = parser.parse_args()
    Y, truth = two_curve()
    spec = zoo.get("iwmm", latent_dim=2)
    rows = []
    for name, runner in (("ours (iwmm engine)", run_ours), ("NumPyro HMCGibbs", run_numpyro)):
        wall, cpu, labels = runner(spec, Y, args.iters)
        rows.append(
            {
                "sampler": name,
                "iters/s (wall)": args.iters / wall,
                "iters/s (process CPU)": args.iters / cpu,
                "mean clusters": float(np.mean([len(np.unique(z)) for z in labels])),
                "mean Rand index": float(np.mean([metrics.rand_index(z, truth) for z in labels])),
            }
        )
        print(rows[-1], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    text = (
        f"# iwmm engine vs NumPyro HMCGibbs (2-curve, N = {len(Y)}, Q = 2, {LEAPFROG} leapfrog steps, "
        f"{args.iters} iterations, compiled run)\n\n"
    )
    atomic_write_text(args.out / "report.md", text + markdown_table(rows) + "\n")
    print(text + markdown_table(rows))


if __name__ == "__main__":
    main()
