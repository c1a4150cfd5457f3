"""Additive-kernel Gram evaluations per second: the recursion and Newton-Girard against the brute-force subset sum.

Usage: ``python -m benchmarks.additive_kernel [--n 200] [--dims 4 6 8] [--repeats 5]``; pin it (``taskset -c 0``).
For each D, with R = D (all orders) and SE bases, one n x n Gram of ``zoo.kernels.Additive`` by

* recursion: ``method="recursion"`` (the default, O(D R) per entry after the D base Grams);
* newton_girard: ``method="newton_girard"`` (eq. 6.14, the same order of cost);
* subsets: the natural reference, sum over all 2^D - 1 subsets of sigma_|S|^2 prod_{d in S} k_d, jitted in JAX
  from the same base Grams (the cost the thesis's sec. 6.2.2 avoids);

each jitted, compiled before timing, best of ``--repeats`` wall times after ``block_until_ready``; printed as Grams
per second and the subset sum's time over each method's. Timing is measured here, never asserted in a test
(docs/architecture.md#performance).
"""

import zoo  # noqa: F401, I001  (first: float64, and XLA's logs quiet before jax loads)

import argparse
import itertools
import time

import jax
import jax.numpy as jnp
import numpy as np

from zoo.kernels import Additive


def subset_sum_gram(kernel: Additive, X):
    """sum over non-empty subsets S of sigma_|S|^2 prod_{d in S} k_d(X, X): (n, n)."""
    ks = kernel.base_grams(X, X)
    D = ks.shape[0]
    variance = jnp.broadcast_to(jnp.asarray(kernel.variance), (kernel.max_order,))
    total = jnp.zeros(ks.shape[1:])
    for size in range(1, kernel.max_order + 1):
        for subset in itertools.combinations(range(D), size):
            total = total + variance[size - 1] * jnp.prod(ks[jnp.asarray(subset)], axis=0)
    return total


def best_time(fn, *args, repeats: int) -> float:
    fn(*args).block_until_ready()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args).block_until_ready()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--dims", type=int, nargs="+", default=[4, 6, 8])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print("| D | subsets | recursion Grams/s | newton_girard Grams/s | subsets Grams/s | subsets / recursion |")
    print("|---|---|---|---|---|---|")
    for D in args.dims:
        rng = np.random.default_rng(D)
        X = jnp.asarray(rng.normal(size=(args.n, D)))
        lengthscale, variance = jnp.asarray(rng.uniform(0.5, 2, D)), jnp.asarray(rng.uniform(0.1, 1, D))
        times = {}
        for method in ("recursion", "newton_girard"):
            kernel = Additive(lengthscale, variance, max_order=D, method=method)
            times[method] = best_time(jax.jit(lambda k, x: k(x)), kernel, X, repeats=args.repeats)
        kernel = Additive(lengthscale, variance, max_order=D)
        times["subsets"] = best_time(jax.jit(subset_sum_gram), kernel, X, repeats=args.repeats)
        print(
            f"| {D} | {2**D - 1} | {1 / times['recursion']:.1f} | {1 / times['newton_girard']:.1f} | "
            f"{1 / times['subsets']:.1f} | {times['subsets'] / times['recursion']:.1f} |"
        )


if __name__ == "__main__":
    main()
