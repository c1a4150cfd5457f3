"""Engines' run times on a quiet machine and beside other busy processes: the thread setting before and after.

Each cell runs one engine on its quick model in a new Python process (a first call compiles, a second call on new
data of the same shapes is timed: wall and CPU seconds of ``inference.run``), under one of these loads, which the
benchmark starts before the cells of that load and stops after them:

* ``quiet``: nothing else runs;
* ``jax-engines``: a second Python process running engines in a loop (the case of two users, a notebook beside a
  ``zoo run``, the test suite's own workers);
* ``python-busy``: a pure-Python busy loop (one core);
* ``jax-dense``: a JAX loop of 400 x 400 float64 matrix products (XLA's own thread pool busy).

and one of these settings (the load process gets the same one, as a second user of the same library would):

* ``before``: ``ZOO_CPU_THREADS=off``, the libraries' own thread counts (the behaviour before zoo.cpu_threads);
* ``default``: the library's default (``zoo.cpu_threads``: one BLAS thread);
* ``pinned``: ``before`` with the measured process alone pinned to one core (``taskset -c 1``), the workaround;
* ``xla-flags`` (only when asked for): ``before`` with XLA's Eigen operations single-threaded
  (``--xla_cpu_multi_thread_eigen=false``), the setting first suspected.

The large cells (GP regression at N = 1000 under ml2, the PF at 100,000 particles) run quiet only, ``before`` and
``default``: the fix must not cost large problems their speed. ::

    python -m benchmarks.busy_machine --out bench_results/busy_machine          # the full table (about 20 min)
    python -m benchmarks.busy_machine --cells nuts --loads quiet jax-engines    # a subset

Writes ``results.json`` and ``table.md`` to ``--out``; prints the table. A cell slower than ``TIMEOUT_S`` is
recorded as ``> TIMEOUT_S``. Do not run another heavy job beside it: the loads are the benchmark's own.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from inference.files.atomic import atomic_write_text

# cell -> (model, simulate keyword arguments, engine, engine options)
CELLS: dict[str, tuple[str, dict, str, dict]] = {
    "nuts": ("gp/regression", {}, "nuts", {"num_chains": 2, "num_warmup": 300, "num_samples": 300}),
    "svi": ("gp/regression", {}, "svi", {"num_steps": 5000}),
    "ml2": ("gp/regression", {"n": 200}, "ml2", {}),
    "pf": ("lgssm", {}, "pf", {"num_particles": 1000}),
    "pgas": ("lgssm", {}, "pgas", {"num_particles": 20, "num_samples": 500}),
}
LARGE_CELLS: dict[str, tuple[str, dict, str, dict]] = {
    "ml2 N=1000": ("gp/regression", {"n": 1000}, "ml2", {}),
    "pf 100k particles": ("lgssm", {}, "pf", {"num_particles": 100_000}),
}
LOADS = ("quiet", "jax-engines", "python-busy", "jax-dense")
SETTINGS = ("before", "default", "pinned", "xla-flags")
TIMEOUT_S = 300
LOAD_WARMUP_S = 12  # the load's imports and compilation are over before the measured cell starts

ONE_CELL = """
import json, sys, time
import jax
import inference, zoo
model, size, engine, options = json.loads(sys.argv[1])
spec = zoo.get(model)
inference.run(spec, spec.simulate(jax.random.key(1), **size), engine=engine, seed=1, **options)  # compiles
data = spec.simulate(jax.random.key(0), **size)
wall, cpu = time.perf_counter(), time.process_time()
idata = inference.run(spec, data, engine=engine, seed=0, **options)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
print("RESULT " + json.dumps({"wall_s": wall, "cpu_s": cpu, "cpu_threads": idata.posterior.attrs["cpu_threads"]}))
"""

LOAD_PROGRAMS = {
    "jax-engines": """
import jax, inference, zoo
runs = [("gp/regression", "nuts", {"num_chains": 2}), ("gp/regression", "svi", {}), ("lgssm", "pf", {})]
seed = 0
while True:
    for model, engine, options in runs:
        seed += 1
        inference.run(model, engine=engine, seed=seed, **options)
""",
    "python-busy": "while True: pass",
    "jax-dense": """
import jax, jax.numpy as jnp
import zoo  # the same thread settings as the measured process
x = jnp.ones((400, 400)) / 400
step = jax.jit(lambda a: jnp.tanh(a @ a))
while True:
    x = step(x).block_until_ready()
""",
}


def _env(setting: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"}}
    env.pop("ZOO_CPU_THREADS", None)
    if setting in {"before", "pinned", "xla-flags"}:
        env["ZOO_CPU_THREADS"] = "off"
    if setting == "xla-flags":
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()
    return env


def _start_load(load: str, setting: str) -> subprocess.Popen | None:
    if load == "quiet":
        return None
    process = subprocess.Popen(
        [sys.executable, "-c", LOAD_PROGRAMS[load]],
        env=_env(setting),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(LOAD_WARMUP_S)
    return process


def run_cell(cell: tuple[str, dict, str, dict], setting: str) -> dict:
    """One measured cell; returns wall_s, cpu_s (None when over TIMEOUT_S) and the thread setting it ran under."""
    command = [sys.executable, "-c", ONE_CELL, json.dumps(cell)]
    if setting == "pinned":
        command = [shutil.which("taskset") or "taskset", "-c", "1", *command]
    try:
        done = subprocess.run(command, env=_env(setting), capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"wall_s": None, "cpu_s": None, "cpu_threads": None}
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"cell {cell} under {setting} failed:\n{done.stderr[-2000:]}")
    return json.loads(lines[-1].removeprefix("RESULT "))


def run_beside(load: str, setting: str, cells: dict[str, tuple[str, dict, str, dict]]):
    """Start ``load`` (as a user of the same setting would run it), yield each cell's result, stop the load."""
    load_process = _start_load(load, "before" if setting == "pinned" else setting)
    try:
        for name, cell in cells.items():
            yield name, run_cell(cell, setting)
    finally:
        if load_process is not None:
            load_process.kill()
            load_process.wait()


def _seconds(value: float | None) -> str:
    return f"> {TIMEOUT_S}" if value is None else f"{value:.2f}"


def table(rows: list[dict]) -> str:
    """Markdown: one row per (cell, load); wall seconds per setting, the default against pinned, and CPU seconds
    per wall second before and with the default (over 1: threads spinning beside the one doing the work)."""
    settings = [s for s in SETTINGS if any(r["setting"] == s for r in rows)]
    by_key = {(r["cell"], r["load"], r["setting"]): r for r in rows}
    keys = list(dict.fromkeys((r["cell"], r["load"]) for r in rows))
    head = ["cell", "load", *[f"{s} (s)" for s in settings], "default / pinned", "CPU / wall: before", "default"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for cell, load in keys:
        found = [by_key.get((cell, load, s)) for s in settings]
        walls = [None if r is None else r["wall_s"] for r in found]
        cells = [_seconds(w) if r is not None else "" for w, r in zip(walls, found, strict=True)]
        default = by_key.get((cell, load, "default"))
        pinned = by_key.get((cell, load, "pinned"))
        ratio = (
            f"{default['wall_s'] / pinned['wall_s']:.2f}"
            if default and pinned and default["wall_s"] and pinned["wall_s"]
            else ""
        )
        usage = [
            f"{r['cpu_s'] / r['wall_s']:.2f}" if r and r["wall_s"] else ""
            for r in (by_key.get((cell, load, "before")), default)
        ]
        lines.append("| " + " | ".join([cell, load, *cells, ratio, *usage]) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench_results/busy_machine"))
    parser.add_argument("--cells", nargs="+", choices=sorted(CELLS), default=list(CELLS))
    parser.add_argument("--loads", nargs="+", choices=LOADS, default=list(LOADS))
    parser.add_argument("--settings", nargs="+", choices=SETTINGS, default=list(SETTINGS[:3]))
    parser.add_argument("--no-large", action="store_true", help="skip the quiet large-problem cells")
    args = parser.parse_args(argv)

    cells = {name: CELLS[name] for name in args.cells}
    plan = [(load, setting, cells) for load in args.loads for setting in args.settings]
    if not args.no_large:
        plan += [("quiet", setting, LARGE_CELLS) for setting in ("before", "default")]
    total, rows = sum(len(c) for _, _, c in plan), []
    for load, setting, group in plan:
        for name, result in run_beside(load, setting, group):
            rows.append({"cell": name, "load": load, "setting": setting, **result})
            wall = _seconds(result["wall_s"])
            print(f"[{len(rows)}/{total}] {name:18s} {load:12s} {setting:8s} wall {wall} s", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out / "results.json", json.dumps(rows, indent=1))
    text = table(rows)
    atomic_write_text(args.out / "table.md", text + "\n")
    print(text)


if __name__ == "__main__":
    main()
