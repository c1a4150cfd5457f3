"""Gauss-Hermite error of the SVGP expected log-likelihoods (zoo/sparse_nonconjugate.py) against the node count.

Usage: ``python -m benchmarks.svgp_quadrature_error [--reference-points 200]``.

For each likelihood of ``gp/svgp-nonconjugate``, the largest relative error |E_K - E_ref| / (1 + |E_ref|) of
E_{N(f | mu, s^2)} log p(y | f) with K nodes, against ``--reference-points`` nodes, over mu on [-4, 4] (41 values),
s on (0, s_max] (50 values) and a few y per likelihood; Student-t at two squared scales (noise), since its error is
set by s against the t scale (docs/performance.md#svgp-quadrature). Prints a markdown table.
"""

import argparse

import jax.numpy as jnp
import numpy as np

import zoo
from zoo.sparse_nonconjugate import expected_log_lik

CASES = [  # (label, likelihood option, labels/targets y, likelihood params)
    ("bernoulli-probit", "bernoulli-probit", (0.0, 1.0), {}),
    ("bernoulli-logit", "bernoulli-logit", (0.0, 1.0), {}),
    ("poisson", "poisson", (0.0, 3.0, 20.0), {}),
    ("student-t, noise 0.1", "student-t", (0.0, 2.0, -5.0), {"noise": 0.1}),
    ("student-t, noise 0.01", "student-t", (0.0, 2.0, -5.0), {"noise": 0.01}),
]
NODES = (10, 20, 50, 100)
SD_MAX = (1.0, 3.0)


def max_relative_error(likelihood, ys, params, num_points, reference_points, sd_max) -> float:
    mean, sd = np.meshgrid(np.linspace(-4.0, 4.0, 41), np.linspace(sd_max / 50, sd_max, 50))
    mean, var = jnp.asarray(mean.ravel()), jnp.asarray(sd.ravel() ** 2)
    worst = 0.0
    for y in ys:
        y_all = jnp.full(mean.shape, y)
        ours = expected_log_lik(likelihood, y_all, mean, var, params, num_points)
        ref = expected_log_lik(likelihood, y_all, mean, var, params, reference_points)
        worst = max(worst, float(jnp.max(jnp.abs(ours - ref) / (1.0 + jnp.abs(ref)))))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference-points", type=int, default=200)
    args = parser.parse_args()
    header = [f"{k} nodes, sd <= {s:g}" for s in SD_MAX for k in NODES]
    print("| likelihood | " + " | ".join(header) + " |")
    print("|---" * (len(header) + 1) + "|")
    for label, name, ys, params in CASES:
        likelihood = zoo.get("gp/svgp-nonconjugate", likelihood=name).views["likelihood"]
        cells = [
            f"{max_relative_error(likelihood, ys, params, k, args.reference_points, s):.1e}"
            for s in SD_MAX
            for k in NODES
        ]
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
