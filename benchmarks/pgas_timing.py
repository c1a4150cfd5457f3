"""PGAS E-step timing next to McHutchon's Table 3.3, and bootstrap-PF throughput against the ``particles`` library.

Usage: ``python -m benchmarks.pgas_timing [--max-cell-s 120] [--skip-particles]``. Prints two tables.

* E-step: ``num_samples`` PGAS sweeps with ``num_particles`` particles on one 20-step 1-D trajectory of a
  linear-Gaussian SSM (``zoo.lgssm.lgssm_spec`` with D = E = 1). The thesis timed its GP-SSM (10 pseudo-points)
  in Matlab; our transition is linear, which is cheaper per particle, so the ratio is indicative only. Run time
  excludes compilation (reported apart). Cells whose predicted time exceeds ``--max-cell-s`` are extrapolated
  linearly in num_samples from the cell with 10x fewer samples, and marked so.
* PF throughput: particle-steps per second of a bootstrap filter (systematic resampling) on ``lgssm``
  (D = E = 2, one trajectory of T = 1000), ours vs ``particles`` (Chopin's library, needs numpy < 2: run in its
  own venv, /tmp/particles-venv, through a subprocess; model and data passed as files).
"""

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import zoo  # noqa: F401  (float64)
from inference import pf, pgas
from zoo import lgssm, ssm

THESIS_SECONDS = {(100, 1000): 20.8, (10000, 1000): 3036.0}  # McHutchon Table 3.3 (Matlab)
PARTICLES_PYTHON = "/tmp/particles-venv/bin/python"


def estep_table(max_cell_s: float) -> list[dict]:
    spec = lgssm.lgssm_spec("lgssm/1d", 1, 1, 0)
    view = spec.views["state_space"]
    data = spec.validate(spec.simulate(jax.random.key(0), num_train=1, num_steps=20))
    data = {k: jnp.asarray(v) for k, v in data.observed.items()}
    data["lengths"] = jnp.full((1,), 20.0)
    params = dict(spec.default_params)
    rows, measured = [], {}
    for N in (100, 1000, 10000):
        for S in (10, 100, 1000):
            previous = measured.get((N, S // 10))
            if previous is not None and previous * 10 > max_cell_s:
                rows.append({"particles": N, "samples": S, "run_s": previous * 10, "extrapolated": True})
                continue
            compile_s, run_s = pgas.time_sweeps(view, params, data, N, S)
            measured[(N, S)] = run_s
            rows.append({"particles": N, "samples": S, "run_s": run_s, "compile_s": compile_s, "extrapolated": False})
    for row in rows:
        thesis = THESIS_SECONDS.get((row["particles"], row["samples"]))
        row["thesis_s"] = thesis
        row["speedup"] = thesis / row["run_s"] if thesis else None
    return rows


PARTICLES_SCRIPT = """
import json, sys, time, numpy as np
import particles
from particles import state_space_models as ssms
from particles import distributions as dists
cfg = json.load(open(sys.argv[1])); y = np.load(sys.argv[2])
A, Q, C, R = (np.array(cfg[k]) for k in ("A", "Q", "C", "R"))
class LG(ssms.StateSpaceModel):
    def PX0(self): return dists.MvNormal(loc=np.zeros(2), cov=np.eye(2))
    def PX(self, t, xp): return dists.MvNormal(loc=xp @ A.T, cov=Q)
    def PY(self, t, xp, x): return dists.MvNormal(loc=x @ C.T, cov=R)
out = {}
for N in cfg["particles"]:
    fk = ssms.Bootstrap(ssm=LG(), data=list(y))
    alg = particles.SMC(fk=fk, N=N, resampling="systematic", ESSrmin=1.0, store_history=False, verbose=False)
    t = time.perf_counter(); alg.run(); dt = time.perf_counter() - t
    out[N] = {"run_s": dt, "loglik": float(alg.logLt)}
print(json.dumps(out))
"""


def throughput_table(skip_particles: bool) -> list[dict]:
    spec = zoo.get("lgssm")
    view = spec.views["state_space"]
    params = {k: np.asarray(v) for k, v in spec.default_params.items()}
    T = 1000
    data = spec.validate(spec.simulate(jax.random.key(2), num_train=1, num_steps=T))
    observed = {k: jnp.asarray(v) for k, v in data.observed.items()}
    observed["lengths"] = jnp.full((1,), float(T))
    y, mask, u = (a[0] for a in ssm.trajectories(observed))
    counts = [1000, 10000]
    theta = ssm.bind(view, params, observed)
    rows = []
    for N in counts:
        run = jax.jit(lambda k, th, n=N: pf.particle_filter(view, th, k, y, mask, u, n, "bootstrap").log_likelihood)
        jax.block_until_ready(run(jax.random.key(0), theta))
        start = time.perf_counter()
        ll = jax.block_until_ready(run(jax.random.key(1), theta))
        dt = time.perf_counter() - start
        rows.append({"particles": N, "ours_run_s": dt, "ours_steps_per_s": N * T / dt, "ours_loglik": float(ll)})
    if skip_particles or not Path(PARTICLES_PYTHON).exists():
        return rows
    with tempfile.TemporaryDirectory() as tmp:
        cfg = {
            "A": params["A"].tolist(),
            "Q": np.diag(params["process_var"]).tolist(),
            "C": params["C"].tolist(),
            "R": np.diag(params["obs_var"]).tolist(),
            "particles": counts,
        }
        Path(tmp, "cfg.json").write_text(json.dumps(cfg))
        np.save(Path(tmp, "y.npy"), np.asarray(y))
        Path(tmp, "run.py").write_text(PARTICLES_SCRIPT)
        result = subprocess.run(
            [PARTICLES_PYTHON, str(Path(tmp, "run.py")), str(Path(tmp, "cfg.json")), str(Path(tmp, "y.npy"))],
            capture_output=True,
            text=True,
            check=True,
        )
        theirs = json.loads(result.stdout.strip().splitlines()[-1])
    for row in rows:
        other = theirs[str(row["particles"])]
        row["particles_lib_steps_per_s"] = row["particles"] * T / other["run_s"]
        row["particles_lib_loglik"] = other["loglik"]
        row["speedup"] = row["ours_steps_per_s"] / row["particles_lib_steps_per_s"]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-cell-s", type=float, default=120.0)
    parser.add_argument("--skip-particles", action="store_true")
    parser.add_argument("--skip-estep", action="store_true")
    args = parser.parse_args()
    if not args.skip_estep:
        print("PGAS E-step (20-step 1-D trajectory); thesis = McHutchon Table 3.3, Matlab")
        for row in estep_table(args.max_cell_s):
            print(json.dumps(row))
    print("Bootstrap PF throughput on lgssm (T = 1000), ours vs particles")
    for row in throughput_table(args.skip_particles):
        print(json.dumps(row))


if __name__ == "__main__":
    main()
