"""Dense against Kronecker ICM log marginal likelihood + gradient, over N inputs x P outputs
(docs/sources/franzese.md#icm-kronecker).

Both compute log N(vec Y | 0, B kron K_x + diag(noise) kron I) and its gradient with respect to W (P, 1), kappa (P,),
the SE lengthscale (1,) and noise (P,), jitted: the dense path builds the (P N, P N) covariance and factorises it by
Cholesky (``zoo.multioutput.dense_log_marginal_likelihood``), the Kronecker path eigendecomposes K_x (N, N) and the
whitened B (P, P) (``zoo.multioutput.icm_log_marginal_likelihood``). Per cell: compile time of each, the run time
per call (minimum over ``--repeats`` timed loops, the two paths alternating), the speed-up, and the relative difference
of the two values.

Run: ``python -m benchmarks.icm_kronecker [--sizes 10,25,50,100,200,400] [--outputs 1,2,4,8] [--repeats 5] [--out DIR]``
(pin it to one core for stable numbers: ``taskset -c 1 python -m benchmarks.icm_kronecker``). Writes
``icm_kronecker.md`` to ``--out`` (default: ``icm_kronecker`` under the system's temporary folder, never the
repository) and prints it, with the smallest N from which the Kronecker path is faster at each P.
"""

import argparse
import platform
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import zoo  # noqa: F401  (float64)
from zoo import kernels
from zoo.multioutput import ICM, Coregion, dense_log_marginal_likelihood, icm_log_marginal_likelihood


def problem(N: int, P: int, seed: int = 0):
    """Inputs, outputs and hyperparameters of one cell: X (N, 1) on [-3, 3], Y (N, P) standard normal."""
    rng = np.random.default_rng(seed)
    X = jnp.asarray(rng.uniform(-3, 3, (N, 1)))
    Y = jnp.asarray(rng.normal(size=(N, P)))
    params = {
        "W": jnp.asarray(rng.normal(size=(P, 1))),
        "kappa": jnp.full(P, 0.1),
        "lengthscale": jnp.ones(1),
        "noise": jnp.asarray(rng.uniform(0.05, 0.2, P)),
    }
    return X, Y, params


def objective(path):
    likelihood = icm_log_marginal_likelihood if path == "kronecker" else dense_log_marginal_likelihood

    def value(params, X, Y):
        icm = ICM(kernels.SE(1.0, params["lengthscale"]), Coregion(params["W"], params["kappa"]))
        return likelihood(icm, X, Y, params["noise"])

    return jax.jit(jax.value_and_grad(value))


def compiled_path(path: str, X, Y, params, min_s: float = 0.05):
    """(compiled value-and-gradient, compile s, value, calls per timed loop): a loop lasts about ``min_s``, so that
    the dispatch noise of sub-millisecond calls averages out."""
    start = time.perf_counter()
    compiled = objective(path).lower(params, X, Y).compile()
    compile_s = time.perf_counter() - start
    value, _ = jax.block_until_ready(compiled(params, X, Y))  # warm-up
    start = time.perf_counter()
    jax.block_until_ready(compiled(params, X, Y))
    calls = max(1, int(min_s / max(time.perf_counter() - start, 1e-6)))
    return compiled, compile_s, float(value), calls


def timed_loop(compiled, calls: int, X, Y, params) -> float:
    """Seconds per call over a loop of ``calls`` calls."""
    start = time.perf_counter()
    for _ in range(calls):
        out = compiled(params, X, Y)
    jax.block_until_ready(out)
    return (time.perf_counter() - start) / calls


def time_cell(X, Y, params, repeats: int) -> dict:
    """Both paths compiled, then timed in alternation (dense loop, Kronecker loop, ...) so that load from other
    processes hits both alike; each path's time is the minimum over ``repeats`` loops, the least disturbed one."""
    paths = {name: compiled_path(name, X, Y, params) for name in ("dense", "kronecker")}
    runs = {name: [] for name in paths}
    for _ in range(repeats):
        for name, (compiled, _, _, calls) in paths.items():
            runs[name].append(timed_loop(compiled, calls, X, Y, params))
    dense_value, kron_value = paths["dense"][2], paths["kronecker"][2]
    return {
        "dense_s": min(runs["dense"]),
        "kron_s": min(runs["kronecker"]),
        "dense_compile_s": paths["dense"][1],
        "kron_compile_s": paths["kronecker"][1],
        "rel_diff": abs(kron_value - dense_value) / abs(dense_value),
    }


def crossover(rows: list[dict], P: int) -> int | None:
    """The smallest N from which the Kronecker path is faster at every larger measured N (for this P)."""
    cells = sorted((r for r in rows if r["P"] == P), key=lambda r: r["N"])
    for i, row in enumerate(cells):
        if all(r["kron_s"] < r["dense_s"] for r in cells[i:]):
            return row["N"]
    return None


def table(rows: list[dict], outputs: list[int], repeats: int) -> str:
    lines = [
        "# ICM log marginal likelihood + gradient: dense Cholesky vs Kronecker (whitened eigendecompositions)",
        "",
        f"Host: {platform.machine()}, {platform.processor() or 'cpu'}; jax {jax.__version__}; "
        f"run time per call: minimum over {repeats} timed loops per path, the paths alternating; float64.",
        "",
        "| N | P | N x P | dense run (ms) | Kronecker run (ms) | speed-up | dense compile (s) | Kronecker compile (s)"
        " | rel. diff of values |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['N']} | {r['P']} | {r['N'] * r['P']} | {1e3 * r['dense_s']:.3f} | {1e3 * r['kron_s']:.3f} | "
            f"{r['dense_s'] / r['kron_s']:.1f} | {r['dense_compile_s']:.2f} | {r['kron_compile_s']:.2f} | "
            f"{r['rel_diff']:.1e} |"
        )
    lines.append("")
    for P in outputs:
        n = crossover(rows, P)
        text = f"from N = {n} (N x P = {n * P}) on" if n is not None else "at no measured size"
        lines.append(f"- P = {P}: the Kronecker path is faster {text}.")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,25,50,100,200,400", help="numbers of inputs N, comma-separated")
    parser.add_argument("--outputs", default="1,2,4,8", help="numbers of outputs P, comma-separated")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "icm_kronecker")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    outputs = [int(p) for p in args.outputs.split(",")]
    rows = []
    for P in outputs:
        for N in sizes:
            X, Y, params = problem(N, P)
            rows.append({"N": N, "P": P, **time_cell(X, Y, params, args.repeats)})
            dense_s, kron_s = rows[-1]["dense_s"], rows[-1]["kron_s"]
            print(f"N={N} P={P}: dense {1e3 * dense_s:.3f} ms, Kronecker {1e3 * kron_s:.3f} ms", flush=True)
    text = table(rows, outputs, args.repeats)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "icm_kronecker.md"
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(text)
    tmp.replace(path)  # never a half-written table
    print(text)
    print(f"written to {path}")


if __name__ == "__main__":
    main()
