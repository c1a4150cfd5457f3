"""How often posteriordb's ESS lower bound fails independent draws (docs/gym.md#ess-bound).

A certified reference needs every quantity's bulk and tail ESS at or above ndraws - 4 sqrt(7 ndraws)
(``inference.results.references.certify``). Here the draws are exactly independent N(0, 1), so every failure is a
false one: for each number of draws per chain, ``replicates`` runs of 10 chains x ``per_chain`` draws x K quantities
go through ``certify`` itself, and the fraction failing ``ess_above_lower_bound`` is printed with the mean and sd of
the tail ESS over ndraws (the estimator's bias and spread) and the bound over ndraws.

Run: ``nice -n 5 taskset -c 1 python -m benchmarks.ess_bound_null [--quantities 60] [--seed 2]`` (about 3 minutes on
one core; ``--quick``: 1000 draws per chain only).
"""

import argparse

import arviz as az
import numpy as np

from inference.results.references import certify, ess_bounds

CHAINS = 10
REPLICATES = {1000: 100, 2000: 60, 5000: 30, 10_000: 20}  # fewer where each replicate costs more


def false_failures(per_chain: int, quantities: int, replicates: int, rng) -> dict[str, float]:
    """Fraction of independent-draw runs failing the bound, and the tail ESS / ndraws of every quantity."""
    ndraws = CHAINS * per_chain
    failed, tails = 0, []
    for _ in range(replicates):
        draws = {"x": rng.standard_normal((CHAINS, per_chain, quantities))}
        checks, _ = certify(draws, divergences=0, efmi=np.ones(CHAINS), iterations=ndraws)
        failed += not checks["ess_above_lower_bound"]
        tails.append(np.ravel(az.ess(az.convert_to_dataset(draws), method="tail")["x"].values) / ndraws)
    tails = np.concatenate(tails)
    return {
        "failed": failed / replicates,
        "tail_mean": float(tails.mean()),
        "tail_sd": float(tails.std()),
        "bound": ess_bounds(ndraws, quantities)["ess_tail"][0] / ndraws,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quantities", type=int, default=60, help="quantities per run (the logit classifier: 60)")
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="1000 draws per chain only")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"{CHAINS} chains, {args.quantities} independent N(0, 1) quantities per run")
    print("| draws per chain | runs | bound / ndraws | tail ESS / ndraws: mean, sd | runs failing the bound |")
    print("|---|---|---|---|---|")
    for per_chain, replicates in REPLICATES.items():
        if args.quick and per_chain > 1000:
            break
        found = false_failures(per_chain, args.quantities, replicates, rng)
        print(
            f"| {per_chain} | {replicates} | {found['bound']:.4f} | {found['tail_mean']:.4f}, {found['tail_sd']:.4f} "
            f"| {found['failed']:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
