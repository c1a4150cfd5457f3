"""The first ``inference.run`` of each engine in a new process, with a cold and a warm persistent compile cache.

A user's first call pays compilation: every engine program is compiled once per (model, options, data shapes) in a
process, and the persistent cache (``zoo.config``) shortens it in later processes. Each cell runs in its own Python
process twice, on one fresh cache directory: first cold (the cache is empty), then warm (the first process filled it).
Reported per cell: the engine's own ``compile_s`` and ``run_s`` (``inference.run``'s timer), the process's wall
time from start to result (imports included) and its CPU time (less sensitive to other processes on a shared
machine), the number of XLA programs the first ``inference.run`` built (its
engine programs and every op run eagerly outside them; ``jax.monitoring``'s backend-compile events, of which the
persistent cache's hits are counted apart), and the ``compile_s`` and program count of a second call in the same
process on new data of the same shapes with another seed (0 when nothing compiles twice)::

    taskset -c 0 python -m benchmarks.first_call --out bench_results/first_call
    taskset -c 0 python -m benchmarks.first_call --engines nuts svi   # a subset

Small runs on purpose (a few hundred iterations): the point is the fixed cost of a first call, not sampling.
A cell that takes longer than ``TIMEOUT_S`` is reported as failed and the others still run (``pgas-em`` used to hang on
one pinned core: docs/performance.md#one-core-hang).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from inference.files.atomic import atomic_write_text

# engine -> (model, simulate keyword arguments, engine options). One model per engine, the smallest the engine is
# meant for; option values small so that compilation dominates the first call.
CELLS: dict[str, tuple[str, dict, dict]] = {
    "exact": ("gp/regression-latent", {"n": 50}, {"num_samples": 200}),
    "nuts": ("gp/regression", {"n": 100}, {"num_chains": 2, "num_warmup": 100, "num_samples": 100}),
    "hmc": ("gp/regression", {"n": 100}, {"num_chains": 2, "num_warmup": 100, "num_samples": 100}),
    "numpyro-nuts": ("gp/regression", {"n": 100}, {"num_chains": 2, "num_warmup": 100, "num_samples": 100}),
    "svi": ("gp/regression", {"n": 100}, {"num_steps": 500}),
    "ml2": ("gp/regression", {"n": 100}, {"num_chains": 2, "num_steps": 200}),
    "tsmc": ("gp/regression", {"n": 100}, {"num_particles": 100, "num_mcmc_steps": 2}),
    "kalman": ("lgssm", {"num_train": 4, "num_test": 4, "num_steps": 20}, {"num_samples": 200}),
    "pf": ("lgssm", {"num_train": 4, "num_test": 4, "num_steps": 20}, {"num_particles": 500}),
    "pgas": ("lgssm", {"num_train": 4, "num_test": 4, "num_steps": 20}, {"num_particles": 50, "num_samples": 200}),
    "pf-ml": ("lgssm", {"num_train": 4, "num_test": 4, "num_steps": 20}, {"num_particles": 50, "num_steps": 50}),
    "pgas-em": ("lgssm", {"num_train": 4, "num_test": 4, "num_steps": 20}, {"num_particles": 10, "num_steps": 50}),
}

TIMEOUT_S = 600  # a first call that takes longer is reported as failed, and the other cells still run

ONE_CALL = """
import time
start = time.perf_counter()
import json, sys
import jax
import jax.monitoring
counts = {"programs": 0, "cache_hits": 0}
def count_program(event, duration, **kwargs):
    if event == "/jax/core/compile/backend_compile_duration":  # one executable built: compiled or read from the cache
        counts["programs"] += 1
def count_hit(event, **kwargs):
    if event == "/jax/compilation_cache/cache_hits":
        counts["cache_hits"] += 1
jax.monitoring.register_event_duration_secs_listener(count_program)
jax.monitoring.register_event_listener(count_hit)
import inference, zoo
model, size, engine, options = json.loads(sys.argv[1])
data = zoo.get(model).simulate(jax.random.key(0), **size)
before = dict(counts)
idata = inference.run(model, data, engine=engine, seed=0, **options)
attrs = idata.posterior.attrs
process_s = time.perf_counter() - start
cpu_s = time.process_time()  # this process's CPU time: less sensitive than wall time to other processes' load
programs = counts["programs"] - before["programs"]
hits = counts["cache_hits"] - before["cache_hits"]
# A second call in the same process, new data of the same shapes and another seed: it should compile nothing.
again_data = zoo.get(model).simulate(jax.random.key(1), **size)
before = dict(counts)
again = inference.run(model, again_data, engine=engine, seed=1, **options)
result = {"compile_s": attrs["compile_s"], "run_s": attrs["run_s"], "process_s": process_s, "cpu_s": cpu_s}
result.update(programs=programs, cache_hits=hits, second_programs=counts["programs"] - before["programs"])
print(json.dumps({**result, "second_compile_s": again.posterior.attrs["compile_s"]}))
"""


def first_call(engine: str, cache_dir: str) -> dict:
    """One new process running one ``inference.run`` of the engine's cell with ``cache_dir`` as the persistent cache."""
    model, size, options = CELLS[engine]
    env = {**os.environ, "ZOO_JAX_CACHE_DIR": cache_dir}
    try:
        out = subprocess.run(
            [sys.executable, "-c", ONE_CALL, json.dumps([model, size, engine, options])],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"no result after {TIMEOUT_S} s"}
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["(no output)"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(engines: list[str]) -> dict[str, dict]:
    rows = {}
    for engine in engines:
        with tempfile.TemporaryDirectory() as cache:
            rows[engine] = {state: first_call(engine, cache) for state in ("cold", "warm")}
        print(f"{engine:>13}: {json.dumps(rows[engine])}", flush=True)
    return rows


def table(rows: dict[str, dict]) -> str:
    lines = [
        "| engine | model | cold: compile (s) | cold: run (s) | cold: process (s) | cold: CPU (s) | cold: programs"
        " | warm: compile (s) | warm: process (s) | warm: CPU (s) | warm: programs (cache hits)"
        " | second call: compile (s), programs |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for engine, row in rows.items():
        cold, warm = row["cold"], row["warm"]
        if "error" in cold or "error" in warm:
            error = cold.get("error") or warm.get("error")
            lines.append(f"| {engine} | {CELLS[engine][0]} | failed: {error} ||||||||||")
            continue
        lines.append(
            f"| {engine} | {CELLS[engine][0]} | {cold['compile_s']:.1f} | {cold['run_s']:.2f} | {cold['process_s']:.1f}"
            f" | {cold['cpu_s']:.1f} | {cold['programs']} | {warm['compile_s']:.1f} | {warm['process_s']:.1f}"
            f" | {warm['cpu_s']:.1f} | {warm['programs']} ({warm['cache_hits']})"
            f" | {cold['second_compile_s']:.2f}, {cold['second_programs']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", nargs="+", default=list(CELLS), choices=list(CELLS), metavar="ENGINE")
    parser.add_argument("--out", type=Path, default=Path("bench_results/first_call"))
    args = parser.parse_args(argv)
    rows = measure(args.engines)
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out / "first_call.json", json.dumps(rows, indent=1))
    atomic_write_text(args.out / "first_call.md", table(rows))
    print(table(rows))


if __name__ == "__main__":
    main()
