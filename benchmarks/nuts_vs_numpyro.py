"""NUTS on ``gp/regression``: our ``inference.run(engine="nuts")`` against plain NumPyro as its users call it, with
the bare-gradient floor, the machine's dense linear-algebra rates and compile time (issue 19).

Sections, all from one process (compile-time runs in subprocesses), written as markdown to ``OUT/report.md`` (and
``OUT/results.json``) and printed:

1. Repeated calls: the same sequence of calls (new data of the same shape each call, seed = call index) through
   ``inference.run(..., engine="nuts")``, through plain NumPyro ``MCMC(NUTS(model), num_chains=C,
   chain_method="vectorized").run(key, **data)`` with a fresh ``MCMC`` per call (it compiles per call), and through
   one ``MCMC(..., jit_model_args=True)`` re-run (the NumPyro user who knows better). Total wall time after each
   checkpoint in ``--calls``.
2. ESS/s per data size: ArviZ's minimum bulk ESS over the hyperparameters per second of sampling (ours: the first
   call's ``run_s``, which excludes compilation; NumPyro: the wall time of a re-run of one ``MCMC``, which compiles
   nothing; up to ``--full-upto``) and per second of a first call (compilation included). The sampler overhead is
   run time over the time the same number of gradients takes outside the sampler, ``(run_s / (grads / C)) /
   t_grad``: ``t_grad`` the bare gradient of the same potential vmapped over C chains in a compiled loop, or C
   single-chain gradients one after another.
3. Gradient flops: executed per gradient (kernel build, Cholesky, the two triangular solves with N right-hand sides
   and the product of the Cholesky derivative, ``flops_per_gradient``) over the bare single-chain gradient time,
   next to the measured rates of ``jnp.linalg.cholesky`` and a float64 matmul at the same N.
4. Compile time of the first call: a fresh persistent cache (cold) against the same cache again (warm).

Point ``ZOO_JAX_CACHE_DIR`` at a fresh directory for first calls that compile (the persistent cache is process-wide,
so NumPyro's compilations use it too).

Usage: ``taskset -c 1 python -m benchmarks.nuts_vs_numpyro [--out DIR] [--sizes 50 100 500 1000]
[--calls 1 10 100]``; ``--quick`` for a small smoke run. Warmup/draws per size: ``--budget N=W,S``;
``--floor-only-above N``: only the gradient floor and flop rates at larger sizes; ``--overhead-sizes 50 100 500``:
the sampler overhead again in this process's CPU time (on a shared core the wall-time ratio also measures the
neighbours); ``--skip compile calls sizes`` leaves sections out. Commands and results: docs/performance.md#nuts.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # as zoo.config does, which would be imported after jaxlib here

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import inference  # noqa: E402
import zoo  # noqa: E402
from inference.core.program import conditioned_program, observed_args  # noqa: E402
from inference.mcmc.starts import initial_positions  # noqa: E402
from inference.results import diagnostics  # noqa: E402

MODEL = "gp/regression"
DEFAULT_BUDGET = {50: (500, 1000), 100: (500, 1000), 500: (100, 100), 1000: (40, 40)}


# ---------------------------------------------------------------------------------------------------------- calls
def dataset(n: int, call: int):
    """Call ``call``'s data: new values, the same shapes."""
    return zoo.get(MODEL).simulate(jax.random.key(10_000 * n + call), n=n)


def min_ess(posterior: dict) -> float:
    """ArviZ's minimum bulk ESS over every site, draws (chain, draw, ...): the same function for both samplers."""
    import arviz as az

    table = az.summary(az.from_dict(posterior={k: np.asarray(v) for k, v in posterior.items()}), kind="diagnostics")
    return float(table["ess_bulk"].min())


def ours(data, seed: int, chains: int, warmup: int, draws: int, **extra) -> dict:
    start, cpu = time.perf_counter(), time.process_time()
    idata = inference.run(
        MODEL, data, engine="nuts", seed=seed, num_chains=chains, num_warmup=warmup, num_samples=draws, **extra
    )
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    stats = diagnostics.engine_stats(idata)
    grads = int(idata.posterior.attrs["num_grad_evals"])
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "compile_s": stats["compile_s"],
        "run_s": stats["run_s"],
        "ess": stats["min_ess_bulk"],
        "grads": grads,
        "divergences": stats["divergences"],
    }


def numpyro_mcmc(chains: int, warmup: int, draws: int, jit_model_args: bool):
    from numpyro.infer import MCMC, NUTS

    kernel = NUTS(zoo.get(MODEL).program)
    return MCMC(
        kernel,
        num_warmup=warmup,
        num_samples=draws,
        num_chains=chains,
        chain_method="vectorized",
        progress_bar=False,
        jit_model_args=jit_model_args,
    )


def numpyro_call(mcmc, data, seed: int) -> dict:
    """One ``mcmc.run`` as users call it: a key and the data as keyword arguments."""
    start = time.perf_counter()
    mcmc.run(jax.random.PRNGKey(seed), **observed_args(data))
    samples = jax.block_until_ready(mcmc.get_samples(group_by_chain=True))
    wall = time.perf_counter() - start
    return {"wall_s": wall, "ess": min_ess(samples)}


def repeated_calls(n: int, checkpoints: list[int], chains: int, warmup: int, draws: int) -> dict[str, list[float]]:
    """Cumulative wall time after each checkpoint of the same sequence of calls, per way of calling."""
    runners = {
        "ours (inference.run, nuts)": lambda d, i: ours(d, i, chains, warmup, draws),
        "NumPyro, fresh MCMC per call": lambda d, i: numpyro_call(numpyro_mcmc(chains, warmup, draws, False), d, i),
    }
    reused = numpyro_mcmc(chains, warmup, draws, True)
    runners["NumPyro, one MCMC re-run (jit_model_args)"] = lambda d, i: numpyro_call(reused, d, i)
    totals = {}
    for name, call in runners.items():
        elapsed, marks = 0.0, []
        for i in range(max(checkpoints)):
            elapsed += call(dataset(n, i), i)["wall_s"]
            if i + 1 in checkpoints:
                marks.append(elapsed)
                print(f"  {name}: {i + 1} calls {elapsed:.1f} s", flush=True)
        totals[name] = marks
    return totals


# ------------------------------------------------------------------------------------------------------ the floor
def potential_gradient(n: int):
    """The gradient of the potential ``nuts`` samples (the same conditioned program), its data and C starts."""
    from numpyro.infer.util import potential_energy

    model = conditioned_program(zoo.get(MODEL))
    observed = observed_args(dataset(n, 0))

    def grad(z, observed):
        return jax.grad(lambda z: potential_energy(model, ({},), observed, z))(z)

    return grad, model, observed


def time_compiled_loop(body, x, reps: int) -> float:
    """Seconds per iteration of ``x = body(x)`` in a compiled ``fori_loop`` (best of 3 runs after a warm-up run)."""
    return time_compiled_loop_clocks(body, x, reps)["wall"]


def time_compiled_loop_clocks(body, x, reps: int) -> dict[str, float]:
    """Per iteration of ``x = body(x)`` in a compiled ``fori_loop``, best of 3 runs after a warm-up: wall seconds and
    this process's CPU seconds (which other processes on a shared core do not inflate)."""
    loop = jax.jit(lambda x: jax.lax.fori_loop(0, reps, lambda _, x: body(x), x)).lower(x).compile()
    jax.block_until_ready(loop(x))
    best = {"wall": np.inf, "cpu": np.inf}
    for _ in range(3):
        wall, cpu = time.perf_counter(), time.process_time()
        jax.block_until_ready(loop(x))
        best["wall"] = min(best["wall"], time.perf_counter() - wall)
        best["cpu"] = min(best["cpu"], time.process_time() - cpu)
    return {k: v / reps for k, v in best.items()}


def nudge(z, g):
    """A step that depends on the gradient (so nothing is hoisted out of the loop) but leaves z where it is."""
    return jax.tree.map(lambda a, b: a + 1e-300 * b, z, g)


def bare_gradients(n: int, chains: int) -> dict[str, float]:
    """Seconds per gradient: vmapped over C chains, one chain, and the potential alone (no gradient)."""
    from numpyro.infer.util import potential_energy

    grad, model, observed = potential_gradient(n)
    z = initial_positions(model, jax.random.key(0), chains, {}, observed, 2.0)
    one = jax.tree.map(lambda a: a[0], z)
    reps = max(5, int(3e7 / n**2.5))
    vmapped = time_compiled_loop_clocks(lambda z: nudge(z, jax.vmap(lambda zz: grad(zz, observed))(z)), z, reps)
    single = time_compiled_loop_clocks(lambda z: nudge(z, grad(z, observed)), one, reps)

    def forward(z):
        value = potential_energy(model, ({},), observed, z)
        return jax.tree.map(lambda a: a + 1e-300 * value, z)

    return {
        "vmapped_s": vmapped["wall"],
        "single_s": single["wall"],
        "vmapped_cpu_s": vmapped["cpu"],
        "single_cpu_s": single["cpu"],
        "potential_s": time_compiled_loop(forward, one, reps),
    }


def flops_per_gradient(n: int, d: int = 1) -> dict[str, float]:
    """Flops executed by one gradient of gp/regression's potential (SE-ARD, D inputs), LAPACK counting.

    Forward: kernel build (differences, scaling, squares, sum: 3 D N^2; exp and variance: 2 N^2), Cholesky N^3 / 3,
    one triangular solve with the data N^2. Reverse: zoo.gp.gaussian_log_evidence's hand-written derivative
    1/2 (a a^T - K^-1) forms K^-1 by two triangular solves against the identity (N^3 each) and a = K^-1 y (2 N^2);
    kernel-build gradient ~2x its forward."""
    kernel = (3 * d + 2) * n**2
    forward = kernel + n**3 / 3 + n**2
    reverse = 2 * n**3 + 2 * kernel + 4 * n**2
    return {"cholesky": n**3 / 3, "forward": forward, "total": forward + reverse}


def dense_rates(n: int) -> dict[str, float]:
    """GFlop/s of jnp.linalg.cholesky (N^3 / 3) and a float64 matmul (2 N^3) at N, compiled, one core."""
    a = jax.random.normal(jax.random.key(n), (n, n))
    spd = a @ a.T + n * jnp.eye(n)
    reps = max(5, int(3e8 / n**3))
    chol = time_compiled_loop(lambda s: s + 1e-300 * jnp.linalg.cholesky(s), spd, reps)
    gemm = time_compiled_loop(lambda b: 1e-3 * (a @ b), a, reps)
    return {"cholesky_gflops": n**3 / 3 / chol / 1e9, "gemm_gflops": 2 * n**3 / gemm / 1e9, "cholesky_s": chol}


# --------------------------------------------------------------------------------------------------- compile time
FIRST_CALL = """
import json, time, jax
start = time.perf_counter()
import inference, zoo
data = zoo.get("gp/regression").simulate(jax.random.key(0), n=100)
idata = inference.run("gp/regression", data, engine="nuts", num_warmup=10, num_samples=10)
a = idata.posterior.attrs
print(json.dumps({"compile_s": a["compile_s"], "run_s": a["run_s"], "process_s": time.perf_counter() - start}))
"""


def compile_times() -> dict[str, dict]:
    """First ``inference.run`` of ``nuts`` in a new process: a fresh persistent cache (cold), then the same (warm)."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "ZOO_JAX_CACHE_DIR": cache}
        return {state: _first_call(env) for state in ("cold", "warm")}


def _first_call(env) -> dict:
    out = subprocess.run([sys.executable, "-c", FIRST_CALL], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------------------------- per size
def floor_row(n: int, chains: int) -> dict:
    """The bare gradient, its flops and the machine's dense rates at n, without running a sampler."""
    return {"n": n, "bare": bare_gradients(n, chains), "flops": flops_per_gradient(n), "dense": dense_rates(n)}


def size_row(n: int, chains: int, warmup: int, draws: int, full: bool) -> dict:
    """ESS/s of every way of calling at data size n, ours' sampler overhead over the bare gradient, flop rates.

    Ours: one first call (``run_s`` excludes its compilation). NumPyro: a first call of one ``MCMC`` (compilation
    included, as a fresh ``MCMC`` per call pays it) and, when ``full``, its re-run on new data (no compilation), and
    ours with ``chain_method="vectorized"``; at large N compilation is a small part of a call and those runs take
    minutes each."""
    first = ours(dataset(n, 0), 0, chains, warmup, draws)
    mcmc = numpyro_mcmc(chains, warmup, draws, True)
    numpyro_first = numpyro_call(mcmc, dataset(n, 0), 0)
    row = {"n": n, "warmup": warmup, "draws": draws, "ours": first, "numpyro_first": numpyro_first}
    if full:
        row["numpyro_rerun"] = numpyro_call(mcmc, dataset(n, 1), 1)
        row["ours_vectorized"] = ours(dataset(n, 0), 0, chains, warmup, draws, chain_method="vectorized")
    row.update(floor_row(n, chains))
    print(f"  ours {first}\n  NumPyro {numpyro_first}", flush=True)
    return row


def cpu_overhead_row(n: int, chains: int, warmup: int, draws: int) -> dict:
    """Sampler overhead in this process's CPU time: a warm call (the first one compiles) against the bare gradients'
    CPU time, so that other processes sharing the core inflate neither side."""
    ours(dataset(n, 0), 0, chains, warmup, draws)
    warm = ours(dataset(n, 1), 1, chains, warmup, draws)
    bare = bare_gradients(n, chains)
    print(f"  CPU-time overhead run {warm}", flush=True)
    return {"n": n, "warmup": warmup, "draws": draws, "ours": warm, "bare": bare}


def cpu_overhead_table(rows: list[dict], chains: int) -> str:
    out = []
    for r in rows:
        o, b = r["ours"], r["bare"]
        per_gradient = o["cpu_s"] / (o["grads"] / chains)
        out.append(
            [
                r["n"],
                f"{r['warmup']}+{r['draws']}",
                o["grads"],
                f"{o['wall_s']:.2f}",
                f"{o['cpu_s']:.2f}",
                f"{per_gradient * 1e3:.3f}",
                f"{b['vmapped_cpu_s'] * 1e3:.3f}",
                f"{chains * b['single_cpu_s'] * 1e3:.3f}",
                f"{per_gradient / b['vmapped_cpu_s']:.2f}",
                f"{per_gradient / (chains * b['single_cpu_s']):.2f}",
            ]
        )
    header = [
        "N",
        "warmup+draws",
        "grads (all chains)",
        "warm call wall (s)",
        "warm call CPU (s)",
        f"CPU ms per {chains}-chain gradient",
        f"bare vmapped {chains}-chain gradient CPU (ms)",
        f"bare {chains} x single-chain gradient CPU (ms)",
        "overhead over vmapped floor",
        "overhead over single-chain floor",
    ]
    return markdown_table(header, out)


def overhead(run: dict, seconds_per_gradient: float, chains: int) -> float:
    """Run time over the time of the same gradients outside the sampler, ``chains`` of them per floor evaluation."""
    return run["run_s"] / (run["grads"] / chains) / seconds_per_gradient


# ---------------------------------------------------------------------------------------------------------- report
def markdown_table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def calls_table(totals: dict[str, list[float]], checkpoints: list[int]) -> str:
    ours_marks = totals["ours (inference.run, nuts)"]
    rows = []
    for name, marks in totals.items():
        cells = [f"{t:.1f}" for t in marks]
        ratios = [f"{t / o:.2f}" for t, o in zip(marks, ours_marks, strict=True)]
        rows.append([name, *cells, *ratios])
    header = [
        "way of calling",
        *(f"after {c} calls (s)" for c in checkpoints),
        *(f"/ ours at {c}" for c in checkpoints),
    ]
    return markdown_table(header, rows)


def ess_per_s(run: dict | None, seconds: str) -> str:
    return "-" if run is None else f"{run['ess'] / run[seconds]:.1f}"


def ess_table(rows: list[dict]) -> str:
    out = []
    for r in (r for r in rows if "ours" in r):
        o, first, rerun, vector = r["ours"], r["numpyro_first"], r.get("numpyro_rerun"), r.get("ours_vectorized")
        ratio = "-" if rerun is None else f"{(o['ess'] / o['run_s']) / (rerun['ess'] / rerun['wall_s']):.2f}"
        out.append(
            [
                r["n"],
                f"{r['warmup']}+{r['draws']}",
                ess_per_s(o, "run_s"),
                ess_per_s(vector, "run_s"),
                ess_per_s(rerun, "wall_s"),
                ratio,
                ess_per_s(o, "wall_s"),
                ess_per_s(first, "wall_s"),
                f"{(o['ess'] / o['wall_s']) / (first['ess'] / first['wall_s']):.2f}",
                f"{o['ess']:.0f} / {first['ess']:.0f}",
            ]
        )
    header = [
        "N",
        "warmup+draws",
        "ours ESS/s (run)",
        "ours vectorized ESS/s (run)",
        "NumPyro re-run ESS/s (wall)",
        "ours / NumPyro (run)",
        "ours 1st call ESS/s (wall)",
        "NumPyro 1st call ESS/s (wall)",
        "ours / NumPyro (1st call)",
        "min ESS ours / NumPyro",
    ]
    return markdown_table(header, out)


def overhead_table(rows: list[dict], chains: int) -> str:
    out = []
    for r in (r for r in rows if "ours" in r):
        o, b, vector = r["ours"], r["bare"], r.get("ours_vectorized")
        out.append(
            [
                r["n"],
                o["grads"],
                f"{o['run_s']:.2f}",
                f"{o['run_s'] / (o['grads'] / chains) * 1e3:.3f}",
                f"{b['vmapped_s'] * 1e3:.3f}",
                f"{chains * b['single_s'] * 1e3:.3f}",
                f"{overhead(o, b['vmapped_s'], chains):.2f}",
                f"{overhead(o, chains * b['single_s'], chains):.2f}",
                "-" if vector is None else f"{overhead(vector, b['vmapped_s'], chains):.2f}",
            ]
        )
    header = [
        "N",
        "grads (all chains)",
        "run_s",
        f"ms per {chains}-chain gradient (sequential chains, default)",
        f"bare vmapped {chains}-chain gradient (ms)",
        f"bare {chains} x single-chain gradient (ms)",
        "overhead over vmapped floor",
        "overhead over single-chain floor",
        "vectorized chains: overhead over vmapped floor",
    ]
    return markdown_table(header, out)


def flops_table(rows: list[dict]) -> str:
    out = []
    for r in rows:
        f, b, d = r["flops"], r["bare"], r["dense"]
        out.append(
            [
                r["n"],
                f"{f['cholesky'] / 1e6:.3g}",
                f"{f['total'] / 1e6:.3g}",
                f"{b['potential_s'] * 1e3:.3f}",
                f"{b['single_s'] * 1e3:.3f}",
                f"{d['cholesky_s'] * 1e3:.3f}",
                f"{f['cholesky'] / b['single_s'] / 1e9:.2f}",
                f"{f['total'] / b['single_s'] / 1e9:.2f}",
                f"{d['cholesky_gflops']:.2f}",
                f"{d['gemm_gflops']:.2f}",
            ]
        )
    header = [
        "N",
        "Cholesky Mflop",
        "executed Mflop per gradient",
        "potential (ms)",
        "gradient (ms)",
        "bare Cholesky (ms)",
        "gradient GF/s (Cholesky flops only)",
        "gradient GF/s (executed flops)",
        "machine Cholesky GF/s",
        "machine GEMM GF/s",
    ]
    return markdown_table(header, out)


def compile_table(times: dict[str, dict]) -> str:
    rows = [
        [state, f"{t['compile_s']:.2f}", f"{t['run_s']:.2f}", f"{t['process_s']:.2f}"] for state, t in times.items()
    ]
    return markdown_table(["persistent cache", "compile_s", "run_s", "process wall (import to result, s)"], rows)


# ------------------------------------------------------------------------------------------------------------ main
def parse_budget(pairs: list[str]) -> dict[int, tuple[int, int]]:
    budget = dict(DEFAULT_BUDGET)
    for pair in pairs:
        n, counts = pair.split("=")
        warmup, draws = counts.split(",")
        budget[int(n)] = (int(warmup), int(draws))
    return budget


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench_results/nuts_vs_numpyro"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 500, 1000])
    parser.add_argument("--calls", type=int, nargs="+", default=[1, 10, 100], help="checkpoints of repeated calls")
    parser.add_argument("--calls-n", type=int, default=50, help="data size of the repeated calls")
    parser.add_argument("--calls-budget", default="500,1000", help="warmup,draws of each repeated call")
    parser.add_argument("--budget", nargs="*", default=[], help="N=warmup,draws per size (defaults: DEFAULT_BUDGET)")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--full-upto", type=int, default=100, help="NumPyro re-run and vectorized chains up to N")
    parser.add_argument("--overhead-sizes", type=int, nargs="*", default=[], help="CPU-time overhead runs at N")
    parser.add_argument("--overhead-budget", default="30,30", help="warmup,draws of the CPU-time overhead runs")
    parser.add_argument("--floor-only-above", type=int, default=10**9, help="no sampler runs at larger N")
    parser.add_argument("--skip", nargs="*", default=[], choices=["calls", "sizes", "compile"])
    parser.add_argument("--quick", action="store_true", help="small smoke run: N = 50 and 100, 2 calls, few draws")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.calls, args.calls_budget, args.budget = [50, 100], [1, 2], "50,50", ["50=50,50", "100=20,20"]
        args.full_upto = 50
    budget = parse_budget(args.budget)
    calls_warmup, calls_draws = (int(x) for x in args.calls_budget.split(","))
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict = {"args": {k: str(v) for k, v in vars(args).items()}, "budget": budget}
    sections = [f"# NUTS on {MODEL}: ours against plain NumPyro ({args.chains} chains, float64, one core)\n"]

    if "compile" not in args.skip:
        results["compile"] = compile_times()
        sections += ["## Compile time of the first `nuts` call (N = 100)\n", compile_table(results["compile"]), ""]
        print(sections[-2], flush=True)
    if "calls" not in args.skip:
        print(f"repeated calls at N = {args.calls_n}, {calls_warmup}+{calls_draws}:", flush=True)
        totals = repeated_calls(args.calls_n, sorted(args.calls), args.chains, calls_warmup, calls_draws)
        results["calls"] = totals
        title = (
            f"## Repeated calls, new data each call (N = {args.calls_n}, {calls_warmup} warmup + {calls_draws} draws)\n"
        )
        sections += [title, calls_table(totals, sorted(args.calls)), ""]
        print(sections[-2], flush=True)
    if "sizes" not in args.skip:
        rows = []
        for n in args.sizes:
            print(f"N = {n}, {budget[n][0]}+{budget[n][1]}:", flush=True)
            if n > args.floor_only_above:
                rows.append(floor_row(n, args.chains))
            else:
                rows.append(size_row(n, args.chains, *budget[n], full=n <= args.full_upto))
            results["sizes"] = rows
            write(args.out, results, [*sections, *size_sections(rows, args.chains)])  # a partial report per size
        sections += size_sections(rows, args.chains)
    if args.overhead_sizes:
        warmup, draws = (int(x) for x in args.overhead_budget.split(","))
        results["cpu_overhead"] = [cpu_overhead_row(n, args.chains, warmup, draws) for n in args.overhead_sizes]
        title = "## Sampler overhead in CPU time (a warm call against the bare gradients' CPU time)\n"
        sections += [title, cpu_overhead_table(results["cpu_overhead"], args.chains), ""]
    print(write(args.out, results, sections))


def size_sections(rows: list[dict], chains: int) -> list[str]:
    return [
        "## ESS/s\n",
        ess_table(rows),
        "",
        "## Sampler overhead over the bare gradient\n",
        overhead_table(rows, chains),
        "",
        "## Gradient flop rate against the machine's\n",
        flops_table(rows),
        "",
    ]


def write(out: Path, results: dict, sections: list[str]) -> str:
    report = "\n".join(sections)
    (out / "report.md").write_text(report)
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    return report


if __name__ == "__main__":
    main()
