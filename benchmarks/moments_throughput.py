"""Benchmark (not a test): moment-matching prediction throughput and SVGP ELBO+gradient time vs N.

Run: ``.venv/bin/python -m benchmarks.moments_throughput [--quick]``. Prints a Markdown table and writes
``benchmarks_out/moments_throughput.csv``. Timings: compile excluded (one warm-up call), fastest of 7 repeats,
``block_until_ready`` on every result.

1. ``zoo.moments.predict_moments_batch``: E = 4 independent SE GPs on D = 4 inputs with M = 50 pseudo-points, a batch
   of 1000 Gaussian inputs with full covariances (mean, full 4x4 output covariance, input-output covariance).
2. SVGP (whitened, M = 50, D = 4): value and gradient of the full-data analytic ELBO w.r.t. hyperparameters, Z and
   q(v), for N from 10^3 to 10^5 (10^4 with --quick), and of a 256-point minibatch ELBO through the ``gp/svgp`` NumPyro
   program (Trace_ELBO with the ``guide`` view), which does not grow with N.
"""

import argparse
import time
from pathlib import Path

import jax
import jax.numpy as jnp
from numpyro.infer import Trace_ELBO

import zoo
from zoo import moments as mm
from zoo import sparse as sp
from zoo.kernels import SquaredExponential


def timed(fn, *args, repeats: int = 7) -> float:
    """Fastest wall time (s) of fn(*args) over ``repeats`` calls after one warm-up (compilation) call.

    The minimum, not the median: the machines this runs on are shared, and the minimum is the least disturbed.
    """
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return min(times)


def moment_throughput(D: int = 4, E: int = 4, M: int = 50, batch: int = 1000) -> dict:
    k = jax.random.split(jax.random.PRNGKey(0), 6)
    Z = jax.random.normal(k[0], (M, D))
    predictor = mm.sparse_gp_predictor(
        Z,
        jax.random.normal(k[1], (E, M)),
        jnp.tril(0.1 * jax.random.normal(k[2], (E, M, M))) + 0.5 * jnp.eye(M),
        jnp.ones(E),
        jnp.ones((E, D)) * 1.5,
    )
    mu = jax.random.normal(k[3], (batch, D))
    F = 0.3 * jax.random.normal(k[4], (batch, D, D))
    Sigma = F @ jnp.swapaxes(F, 1, 2) + 0.01 * jnp.eye(D)
    fn = jax.jit(mm.predict_moments_batch)
    seconds = timed(fn, predictor, mu, Sigma)
    return {"D": D, "E": E, "M": M, "batch": batch, "seconds_per_batch": seconds, "predictions_per_s": batch / seconds}


def svgp_timing(N: int, D: int = 4, M: int = 50, minibatch: int = 256) -> dict:
    k = jax.random.split(jax.random.PRNGKey(1), 3)
    X = jax.random.normal(k[0], (N, D))
    y = jnp.sin(X.sum(-1)) + 0.1 * jax.random.normal(k[1], (N,))
    Z = X[:M]
    params = {
        "log_ell": jnp.zeros(D),
        "log_sf2": jnp.zeros(()),
        "log_sn2": jnp.log(0.1),
        "Z": Z,
        "q_mean": jnp.zeros(M),
        "q_sqrt": jnp.eye(M),
    }

    def negative_elbo(p):
        kernel = SquaredExponential(jnp.exp(p["log_sf2"]), jnp.exp(p["log_ell"]))
        q = sp.WhitenedQ(p["q_mean"], jnp.tril(p["q_sqrt"]))
        return -sp.svgp_elbo(kernel, X, y, p["Z"], q, jnp.exp(p["log_sn2"]))

    full = timed(jax.jit(jax.value_and_grad(negative_elbo)), params)

    spec = zoo.get("gp/svgp")
    loss = Trace_ELBO()
    param_map = {
        "lengthscale_map": jnp.ones(D),
        "variance_map": jnp.asarray(1.0),
        "noise_map": jnp.asarray(0.1),
        "q_mean": jnp.zeros(M),
        "q_scale_tril": jnp.eye(M),
        "inducing_inputs": Z,
    }

    @jax.jit
    def minibatch_value_and_grad(key, pm):
        return jax.value_and_grad(
            lambda pm: loss.loss(key, pm, spec.program, spec.views["guide"], X=X, Z=Z, y=y, batch_size=minibatch)
        )(pm)

    mini = timed(minibatch_value_and_grad, jax.random.PRNGKey(2), param_map)
    return {"N": N, "M": M, "D": D, "full_elbo_grad_ms": 1e3 * full, f"minibatch{minibatch}_elbo_grad_ms": 1e3 * mini}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N up to 10^4 only")
    parser.add_argument("--out", default="benchmarks_out", help="output folder")
    args = parser.parse_args(argv)
    from inference.files.tables import markdown_table, write_csv

    device = jax.devices()[0]
    print(f"device: {device.platform} ({device.device_kind}); jax {jax.__version__}")
    mm_row = moment_throughput()
    print("\nMoment matching (zoo.moments.predict_moments_batch)\n")
    print(markdown_table([mm_row]))
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    svgp_rows = [svgp_timing(N) for N in sizes]
    print("\nSVGP ELBO + gradient (whitened, analytic full-data bound; gp/svgp program minibatch)\n")
    print(markdown_table(svgp_rows))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(
        out / "moments_throughput.csv",
        [{"benchmark": "moments", **mm_row}] + [{"benchmark": "svgp", **row} for row in svgp_rows],
    )


if __name__ == "__main__":
    main()
