"""The certified NUTS reference of ``gpssm/full`` against PGAS on the same posterior (docs/gym.md#gpssm-references).

The stored reference holds the full GP-SSM's hyperparameters fixed, so its posterior is p(x_{1:T} | y_{1:T}, theta),
which PGAS targets exactly too (``inference.run(..., engine="pgas")``: particle Gibbs with ancestor sampling on the
marginalised GP, whole-history kernel of ``inference.particles.pgas_marginal``). Two different exact samplers of one
posterior: every state's mean, second moment and variance must agree within the Monte Carlo error, z = difference /
(the reference's MCSE and PGAS's, in quadrature); with 20 states, |z| > 4 by chance has probability below 0.2 %.

    python -m benchmarks.gpssm_reference_pgas [--particles 20] [--sweeps 5000]

Prints R-hat and bulk ESS of the PGAS states, the largest |z| per moment, wall and CPU time; exits 1 when some
|z| >= 4.
"""

import argparse
import resource
import sys
import time

import arviz as az
import jax
import numpy as np

import inference
import zoo
from inference.results import references as refs

MODEL, MODEL_OPTIONS, SIZE = "gpssm/full", {}, {"num_train": 1, "num_test": 1, "num_steps": 20}
PARAMS = {"lengthscale": [[1.3]], "signal_var": [6.3], "process_var": [0.2], "obs_var": [0.11]}
Z_LIMIT = 4.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=int, default=20)
    parser.add_argument("--sweeps", type=int, default=5000, help="retained sweeps per chain (4 chains, 500 warm-up)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    ref = refs.require(MODEL, MODEL_OPTIONS, SIZE, 0, PARAMS)
    spec = zoo.get(MODEL)
    data = spec.simulate(jax.random.key(ref.data_seed), **ref.size)
    if refs.data_digest(data.observed) != ref.data_sha256:
        raise SystemExit(f"{ref.id} is stale: its data are no longer what {MODEL} simulates")
    started = time.perf_counter()
    idata = inference.run(
        spec,
        data,
        engine="pgas",
        seed=args.seed,
        num_chains=4,
        num_warmup=500,
        num_samples=args.sweeps,
        num_particles=args.particles,
        params=dict(ref.params),
    )
    wall = time.perf_counter() - started
    draws = idata.posterior["states"]
    pgas = refs.from_draws({"states": draws.values})["states"]
    truth = ref.quantities["states"]
    cpu = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    r_hat = float(az.rhat(idata, var_names=["states"])["states"].max())
    ess = float(az.ess(idata, var_names=["states"])["states"].min())
    print(
        f"pgas: 4 chains x (500 + {args.sweeps}) sweeps, {args.particles} particles: {wall:.0f} s wall, "
        f"{cpu:.0f} s CPU (process); max R-hat {r_hat:.4f}, min bulk ESS {ess:.0f}"
    )
    worst = 0.0
    for moment in ("mean", "second_moment", "var"):
        mcse = np.hypot(getattr(pgas, f"{moment}_mcse"), getattr(truth, f"{moment}_mcse"))
        z = (getattr(pgas, moment) - getattr(truth, moment)) / mcse
        worst = max(worst, float(np.max(np.abs(z))))
        print(f"{moment}: max |z| {np.max(np.abs(z)):.2f} over {z.size} states, mean z {np.mean(z):+.2f}")
    return 0 if worst < Z_LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
