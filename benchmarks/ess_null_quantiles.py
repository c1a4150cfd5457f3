"""The null distribution of ArviZ's bulk and tail ESS that the references' ESS bound reads (docs/gym.md#ess-bound).

posteriordb's definition asks each parameter's bulk and tail ESS to fall within a bound of joint probability 0.95
for independent draws, taken from simulated ESS values (stan-dev/posteriordb, doc/REFERENCE_POSTERIOR_DEFINITION.md).
This script simulates them for the shape every certified reference has, 10 chains x 1000 draws after thinning:
``quantities`` independent N(0, 1) quantities, each ESS over ndraws, and stores their quantiles at probabilities
log-spaced towards both tails in ``inference/results/ess_null_10x1000.json`` (``references.ess_bounds`` interpolates
them). The file is a small committed table; rerun this to regenerate it.

Run: ``nice -n 5 taskset -c 0 python -m benchmarks.ess_null_quantiles`` (200 000 quantities, about 6 minutes on one
core; ``--quantities 4000 --out /tmp/x.json`` for a smoke run).
"""

import argparse
import datetime
import json
from pathlib import Path

import arviz as az
import numpy as np

from inference.results.references import ESS_NULL_TABLE

CHAINS, PER_CHAIN = 10, 1000
BATCH = 2000  # quantities per ArviZ call: (10, 1000, 2000) float64 is 160 MB
LOWER = np.geomspace(1e-5, 0.5, 51)
PROBABILITIES = np.concatenate([LOWER, 1 - LOWER[-2::-1]])  # both tails, 1e-5 to 1 - 1e-5


def simulate(quantities: int, seed: int) -> dict[str, np.ndarray]:
    """Bulk and tail ESS over ndraws of ``quantities`` independent N(0, 1) quantities, each (quantities,)."""
    rng = np.random.default_rng(seed)
    found = {"bulk": [], "tail": []}
    for start in range(0, quantities, BATCH):
        size = min(BATCH, quantities - start)
        draws = az.convert_to_dataset({"x": rng.standard_normal((CHAINS, PER_CHAIN, size))})
        for method in found:
            found[method].append(az.ess(draws, method=method)["x"].values / (CHAINS * PER_CHAIN))
        print(f"{start + size} / {quantities} quantities", flush=True)
    return {method: np.concatenate(values) for method, values in found.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quantities", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=20261127)
    parser.add_argument("--out", type=Path, default=ESS_NULL_TABLE)
    args = parser.parse_args()
    ess = simulate(args.quantities, args.seed)
    table = {
        "format": "zoo-ess-null/1",
        "chains": CHAINS,
        "draws_per_chain": PER_CHAIN,
        "quantities": args.quantities,
        "seed": args.seed,
        "arviz": az.__version__,
        "date": datetime.date.today().isoformat(),
        "command": f"python -m benchmarks.ess_null_quantiles --quantities {args.quantities} --seed {args.seed}",
        "probabilities": [float(f"{p:.8g}") for p in PROBABILITIES],
        # ESS / ndraws at each probability: the quantiles of the null distribution.
        **{method: [round(float(q), 6) for q in np.quantile(v, PROBABILITIES)] for method, v in ess.items()},
        "mean": {method: round(float(v.mean()), 6) for method, v in ess.items()},
        "sd": {method: round(float(v.std()), 6) for method, v in ess.items()},
    }
    args.out.write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {args.out}: mean {table['mean']}, sd {table['sd']}")


if __name__ == "__main__":
    main()
