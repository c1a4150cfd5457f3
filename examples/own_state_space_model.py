"""A user's own state-space model, written outside the package, under NUTS, SVI and PGAS, compared in one report.

    python examples/own_state_space_model.py [--quick] [--out DIR]

The model (docs/own-model.md): a 1-D nonlinear SSM with a sine in its transition,

    x_1 ~ N(0, 1),  x_t = a x_{t-1} + b sin(x_{t-1}) + N(0, q),  y_t = x_t + N(0, r),

written as a plain NumPyro program (NUTS and SVI run it as it is), plus the state-space view PGAS needs, built
from the same moments with ``zoo.ssm.gaussian_view`` and attached with ``@zoo.model``. All three engines condition
on the true parameters, so they target the same smoothing posterior p(x_{1:T} | y); PGAS is exact in the limit and
is the reference of the comparison. The report (``comparison.md`` and ``marginals.png`` in DIR) is the table
``inference.results.diagnostics.compare`` gives: ESS per second, R-hat, and each engine's largest error of posterior
means and sds in units of the reference's sd.
"""

import argparse
import io
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.contrib.control_flow import scan

import inference
import zoo
from inference.files.atomic import atomic_write_bytes, atomic_write_text
from inference.files.tables import markdown_table
from inference.results import diagnostics, plots
from zoo import ssm

TRUE = {"a": 0.8, "b": 1.0, "q": 0.1, "r": 0.1}


def parameters(observed=None):
    """The parameter sites and their priors, shared by the program and the view."""
    return {
        "a": numpyro.sample("a", dist.Normal(0.5, 0.5)),
        "b": numpyro.sample("b", dist.Normal(0.0, 1.0)),
        "q": numpyro.sample("q", dist.LogNormal(jnp.log(0.1), 0.5)),
        "r": numpyro.sample("r", dist.LogNormal(jnp.log(0.1), 0.5)),
    }


def transition_mean(theta, x):
    return theta["a"] * x + theta["b"] * jnp.sin(x)


VIEW = ssm.gaussian_view(
    state_dim=1,
    obs_dim=1,
    control_dim=0,
    parameters=parameters,
    initial_moments=lambda theta: (jnp.zeros(1), jnp.eye(1)),
    transition_moments=lambda theta, x, u: (transition_mean(theta, x), theta["q"] * jnp.eye(1)),
    emission_matrices=lambda theta: (jnp.eye(1), jnp.zeros(1), theta["r"] * jnp.eye(1)),
)


@zoo.model(name="sine_ssm", views={"state_space": VIEW}, default_params=TRUE, data_shapes=ssm.trajectory_shapes(1, 0))
def sine_ssm(y, lengths=None):
    """y: (K, T, 1) trajectories (all of full length here); sites a, b, q, r, x1 (K, 1), x (T-1, K, 1)."""
    theta = parameters()
    K = y.shape[0]
    with numpyro.plate("trajectories", K):
        x1 = numpyro.sample("x1", dist.Normal(0.0, 1.0).expand([1]).to_event(1))
        numpyro.sample("y1", dist.Normal(x1, jnp.sqrt(theta["r"])).to_event(1), obs=y[:, 0])

    def step(x_prev, y_t):
        with numpyro.plate("trajectories", K):
            x = numpyro.sample("x", dist.Normal(transition_mean(theta, x_prev), jnp.sqrt(theta["q"])).to_event(1))
            numpyro.sample("y", dist.Normal(x, jnp.sqrt(theta["r"])).to_event(1), obs=y_t)
        return x, x

    _, xs = scan(step, x1, jnp.swapaxes(y[:, 1:], 0, 1))
    numpyro.deterministic("states", jnp.concatenate([x1[:, None], jnp.swapaxes(xs, 0, 1)], axis=1))


def simulate(key, num_steps: int) -> dict:
    """One trajectory from the true parameters: y (1, T, 1), lengths (1,)."""
    k_x, k_y = jax.random.split(key)

    def step(x, k):
        x = transition_mean(TRUE, x) + jnp.sqrt(TRUE["q"]) * jax.random.normal(k)
        return x, x

    x1 = jax.random.normal(k_x)
    _, xs = jax.lax.scan(step, x1, jax.random.split(k_y, num_steps - 1))
    x = jnp.concatenate([x1[None], xs])
    y = x + jnp.sqrt(TRUE["r"]) * jax.random.normal(jax.random.fold_in(key, 1), (num_steps,))
    return {"y": y[None, :, None], "lengths": jnp.array([float(num_steps)])}


def main(quick: bool, out: Path) -> str:
    data = simulate(jax.random.key(0), 25 if quick else 100)
    sizes = {"num_chains": 2, "num_samples": 300 if quick else 1000}
    runs = {
        "pgas": dict(num_warmup=50, num_particles=50, **sizes),
        "nuts": dict(num_warmup=200 if quick else 1000, **sizes),
        "svi": dict(guide="mvn", num_steps=1000 if quick else 5000, num_chains=1, num_samples=sizes["num_samples"]),
    }
    results = {}
    for engine, options in runs.items():
        print(f"sine_ssm: {engine} ...", flush=True)
        results[engine] = inference.run(sine_ssm, data, engine, 0, params=TRUE, **options)
    table = diagnostics.compare(results, reference="pgas")
    columns = ["min_ess_bulk", "ess_per_s", "max_rhat", "max_mean_err_sd", "max_sd_err_rel"]
    rows = [{"engine": engine, **{c: table.loc[engine, c] for c in columns}} for engine in table.index]
    report = (
        "# sine_ssm: NUTS, SVI and PGAS on a user's own state-space model\n\n"
        "All engines condition on the true parameters; PGAS is the reference. Errors are the largest over the "
        "T states, in units of PGAS's posterior sd.\n\n" + markdown_table(rows) + "\n"
    )
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "comparison.md", report)
    buffer = io.BytesIO()
    plots.plot_marginals(results, ["states"], per_variable=6).savefig(buffer, format="png", dpi=80)
    atomic_write_bytes(out / "marginals.png", buffer.getvalue())
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short trajectory and short runs (about a minute)")
    parser.add_argument("--out", type=Path, default=None, help="report folder (default: a new temporary one)")
    args = parser.parse_args()
    target = args.out or Path(tempfile.mkdtemp(prefix="sine_ssm_"))
    print(main(args.quick, target))
    print(f"report: {target / 'comparison.md'}")
