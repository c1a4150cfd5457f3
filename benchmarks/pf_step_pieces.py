"""Where a bootstrap particle-step's time goes: each piece of the step alone, in a ``lax.scan`` as the filter runs it.

Usage: ``taskset -c 0 python -m benchmarks.pf_step_pieces [--particles 1000 10000] [--steps 1000]``. Prints ns per
particle-step (run time / (N x T), best of 7 rounds after a compiled warm-up, the pieces alternating within a round
as in ``benchmarks.pf_throughput``; each piece's output is summed, one more pass) for the random bits, the two standard
normals of a D = 2 step (ours and ``jax.random.normal``) and systematic resampling, to set against the whole step's
time in ``benchmarks.pf_throughput`` and the budget a throughput goal leaves (docs/performance.md#unreachable-goals).
"""

import argparse

import jax
import jax.numpy as jnp

import zoo  # noqa: F401  (float64)
from benchmarks.pf_throughput import interleaved_best_times
from inference.particles import pf

REPEATS = 7
D = 2  # the lgssm of benchmarks.pf_throughput


def in_scan(piece, T: int):
    """``key -> sum`` of ``piece(key) -> array`` over ``T`` scan steps, jitted (summing keeps each output alive)."""

    @jax.jit
    def run(key):
        def step(total, k):
            return total + jnp.sum(piece(k)), None

        return jax.lax.scan(step, jnp.zeros(()), jax.random.split(key, T))[0]

    return run


def pieces(N: int) -> dict:
    weights = jax.random.uniform(jax.random.key(1), (N,), dtype=jnp.float64)
    return {
        "2 x 64 random bits as float64 uniforms": lambda k: jax.random.uniform(k, (N, D), dtype=jnp.float64),
        "2 standard normals, pf.standard_normal (AS241)": lambda k: pf.standard_normal(k, (N, D)),
        "2 standard normals, jax.random.normal (erf_inv)": lambda k: jax.random.normal(k, (N, D), dtype=jnp.float64),
        "systematic resampling (fixed weights)": lambda k: pf.systematic(k, weights, N).astype(jnp.float64),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args()
    print("| piece | " + " | ".join(f"{N:,} particles (ns)" for N in args.particles) + " |")
    print("|---|" + "---:|" * len(args.particles))
    table = {}
    for N in args.particles:
        runs = {name: in_scan(piece, args.steps) for name, piece in pieces(N).items()}
        best = interleaved_best_times(runs, REPEATS)
        table[N] = {name: seconds / (N * args.steps) * 1e9 for name, (seconds, _) in best.items()}
    for name in table[args.particles[0]]:
        print(f"| {name} | " + " | ".join(f"{table[N][name]:.1f}" for N in args.particles) + " |")


if __name__ == "__main__":
    main()
