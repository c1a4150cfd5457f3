"""Benchmark (not a test): AMO-GP bound evaluations per second (Kaiser 2021, ch. 4; zoo/amogp).

Run: ``python -m benchmarks.amogp_bound [--quick]``. Prints a Markdown table and writes
``benchmarks_out/amogp_bound.csv``. For the artificial pair's structure (alignment of T_2 and warping of T_1 learnt,
one latent CP process, 10 warping inducing inputs) at n points per output and M inducing inputs per layer and
output, the jitted NVC bound (``zoo.amogp.bound.nvc_bound``) and its value-and-gradient with respect to every
hyperparameter and variational parameter (what one ``nvc`` training step costs, without Adam's update), and the
DSVI program's one-sample ELBO estimate with its gradient (Trace_ELBO with the model's guide, what one ``svi``
step costs). Timings: compile time of the first call reported separately, then the fastest of 7 repeats with
``block_until_ready`` (the minimum: the machine is shared).
"""

import argparse
import time
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
from numpyro import handlers
from numpyro.infer import Trace_ELBO

import zoo
from benchmarks.moments_throughput import timed
from zoo.amogp import bound, data, program

STRUCTURE = program.structure_from(2, (0,), (1,))


def initial_values(observed: dict) -> dict:
    """Every site of the NVC program at its starting value: hyperparameters at their prior medians, the
    variational parameters as the program initialises them."""
    prog = partial(program.nvc_program, structure=STRUCTURE)
    trace = handlers.trace(handlers.seed(prog, 0)).get_trace(**observed)
    params = {k: site["value"] for k, site in trace.items() if site["type"] == "param"}
    return params | {k: jnp.asarray(v) for k, v in program.prior_medians(STRUCTURE, 1).items()}


def compiled(fn, *args) -> tuple[float, object]:
    """(compile seconds, compiled fn)."""
    start = time.perf_counter()
    out = jax.jit(fn).lower(*args).compile()
    return time.perf_counter() - start, out


def bound_timing(n: int, m: int) -> dict:
    ds = data.simulate_artificial(jax.random.PRNGKey(0), n=n, m=m)
    observed = {k: jnp.asarray(v) for k, v in ds.observed.items()}
    X, out, y = observed["X"], observed["out"].astype(int), observed["y"]
    values = initial_values(observed)

    def objective(v):
        return bound.nvc_bound(program.model_from_values(v, STRUCTURE), X, out, y)

    row = {"n_per_output": n, "N_train": int(X.shape[0]), "M_per_output": m}
    for name, fn in (("bound", objective), ("bound_grad", jax.value_and_grad(objective))):
        compile_s, run = compiled(fn, values)
        seconds = timed(run, values)
        row |= {f"{name}_compile_s": compile_s, f"{name}_ms": 1e3 * seconds, f"{name}_per_s": 1.0 / seconds}

    spec = zoo.get("amogp/dsvi", fixed_alignments=(0,), fixed_warpings=(1,))
    guide_trace = handlers.trace(handlers.seed(spec.views["guide"], 0)).get_trace(**observed)
    guide_params = {k: site["value"] for k, site in guide_trace.items() if site["type"] == "param"}
    elbo = Trace_ELBO()

    def dsvi(key, p):
        return jax.value_and_grad(lambda p: elbo.loss(key, p, spec.program, spec.views["guide"], **observed))(p)

    compile_s, run = compiled(dsvi, jax.random.PRNGKey(1), guide_params)
    seconds = timed(run, jax.random.PRNGKey(1), guide_params)
    return row | {"dsvi_grad_compile_s": compile_s, "dsvi_grad_ms": 1e3 * seconds, "dsvi_grad_per_s": 1.0 / seconds}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the smallest size only")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 500, 2500], help="points per output")
    parser.add_argument("--inducing", type=int, nargs="+", default=[15, 30], help="inducing inputs per output")
    parser.add_argument("--out", default="benchmarks_out", help="output folder")
    args = parser.parse_args(argv)
    from inference.files.tables import markdown_table, write_csv

    device = jax.devices()[0]
    print(f"device: {device.platform} ({device.device_kind}); jax {jax.__version__}")
    sizes, inducing = (args.sizes[:1], args.inducing[:1]) if args.quick else (args.sizes, args.inducing)
    rows = []
    for m in inducing:
        for n in sizes:
            rows.append(bound_timing(n, m))
            print(markdown_table(rows[-1:]), flush=True)
    print("\nAMO-GP bound (NVC) and DSVI ELBO evaluations\n")
    print(markdown_table(rows))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "amogp_bound.csv", rows)


if __name__ == "__main__":
    main()
