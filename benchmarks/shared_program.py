"""One evaluation of the structure search's objective through the shared program (``gp/structure``) against the
candidate's own program (``gp/regression``): the value and gradient of the marginal likelihood (ml2's compiled host
program), timed over repeated calls, at n = 129, 200 and 300 (docs/performance.md#shared-program).

Usage::

    taskset -c 1 python -m benchmarks.shared_program [--reps 30]

Two candidates, each against the capacity of its whole depth (the union of every candidate's needs, as the search
builds it): CW(Per, Per) x RQ among the depth-3 expansions of Per x RQ (one input, every operator), and a depth-5
candidate of Table 3.2's row 4 (three inputs, operators C.1-C.3). Inputs uniform on [-1.7, 1.7], targets N(0, 1):
the timing does not depend on the values.
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import zoo
from inference.core.program import latent_sites
from inference.optimisation.ml2 import host_program
from zoo.kernels import parse
from zoo.structure.grammar import BASIC, OPERATORS, TIME_SERIES_BASE, Grammar, expand
from zoo.structure.program import encode

CASES = (
    ("Per x RQ", Grammar(TIME_SERIES_BASE, 1, OPERATORS), "CW(Per, Per) x RQ"),
    (
        "(Lin_2 + SE_1) x Per_0 x SE_0 + SE_0",
        Grammar(("SE", "Lin", "Per"), 3, BASIC),
        "(Lin_2 + SE_1) x Per_0 x SE_0 + Lin_0 + SE_0",
    ),
)
SIZES = (129, 200, 300)


def milliseconds_per_call(spec, data: dict, reps: int) -> float:
    """Mean wall time of one value-and-gradient call at the unconstrained origin, after a first (compiling) call."""
    dataset = spec.validate(data)
    layout = tuple((name, site.shape) for name, site in latent_sites(spec, dataset).items())
    z = jnp.zeros(sum(int(np.prod(shape)) for _, shape in layout))
    program = host_program(spec, "ml", layout)
    observed = {k: jnp.asarray(v) for k, v in dataset.observed.items()}
    jax.block_until_ready(program(z, {}, observed))
    start = time.perf_counter()
    for _ in range(reps):
        out = program(z, {}, observed)
    jax.block_until_ready(out)
    return (time.perf_counter() - start) / reps * 1e3


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    print("| candidate | capacity (slots; terms x factors) | n | shared (ms) | own program (ms) | ratio |")
    print("|---|---|---:|---:|---:|---:|")
    for parent, grammar, expression in CASES:
        capacity = None
        for candidate in expand(parse(parent), grammar):
            need = encode(candidate.kernel, grammar.D).capacity
            capacity = need if capacity is None else capacity.union(need)
        shared = zoo.get("gp/structure", slots=capacity.text(), terms=capacity.terms, factors=capacity.factors)
        arrays = encode(parse(expression), grammar.D).arrays(capacity)
        for n in SIZES:
            X, y = rng.uniform(-1.7, 1.7, size=(n, grammar.D)), rng.normal(size=n)
            ms_shared = milliseconds_per_call(shared, {"X": X, "y": y, **arrays}, args.reps)
            ms_own = milliseconds_per_call(zoo.get("gp/regression", kernel=expression), {"X": X, "y": y}, args.reps)
            print(
                f"| {expression} | {capacity.text()}; {capacity.terms} x {capacity.factors} | {n} "
                f"| {ms_shared:.2f} | {ms_own:.2f} | {ms_shared / ms_own:.2f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
