"""docs/gym.md#pathfinder-init: ``init="pathfinder"`` starts nuts, mams and chees from Pathfinder's draws, and the
run's gradient count includes Pathfinder's.

The model is a conjugate Bayesian linear regression whose posterior is narrow (sd about 0.02) and centred far from
the origin, so chains started uniform on (-2, 2) start tens of posterior sds away, and the exact posterior (Gaussian,
precision I + X^T X / s^2) says where Pathfinder's draws must lie.
"""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from gradient_counting import COUNTER, NOISE, count_after_starts, counted_blr

import inference
from inference.core.api import Timer, resolve_model
from inference.core.program import conditioned_program, observed_args
from inference.mcmc import gym_common
from inference.mcmc.pathfinder import pathfinder_starts

W_TRUE = np.array([1.5, -1.7, 1.2])


def blr(X, y=None):
    w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([3]).to_event(1))
    numpyro.sample("y", dist.Normal(X @ w, NOISE), obs=y)


def data():
    X = jax.random.normal(jax.random.key(0), (500, 3))
    y = X @ jnp.asarray(W_TRUE) + NOISE * jax.random.normal(jax.random.key(1), (500,))
    return {"X": X, "y": y}


def exact_posterior(d):
    """Mean (3,) and sds (3,) of the conjugate posterior (Cholesky solve of the precision)."""
    X, y = np.asarray(d["X"]), np.asarray(d["y"])
    precision = np.eye(3) + X.T @ X / NOISE**2
    chol = np.linalg.cholesky(precision)
    mean = np.linalg.solve(chol.T, np.linalg.solve(chol, X.T @ y / NOISE**2))
    cov = np.linalg.solve(chol.T, np.linalg.solve(chol, np.eye(3)))
    return mean, np.sqrt(np.diag(cov))


@pytest.mark.slow  # Pathfinder's compilation: 6.7-19 s on a pinned core of the shared machine
def test_pathfinder_starts_lie_in_the_posterior_where_uniform_starts_do_not():
    d = data()
    mean, sd = exact_posterior(d)
    spec, raw = resolve_model(blr, d)
    model = conditioned_program(spec)
    observed = observed_args(spec.validate(raw))
    z0, grads, _ = pathfinder_starts(model, jax.random.key(3), 8, {}, observed, 2.0, Timer())
    # Pathfinder's approximation of a Gaussian posterior is that Gaussian (to L-BFGS's convergence): every one of
    # 24 coordinates within 5 sds has probability 1 - 24 x 5.7e-7 if so.
    z_pathfinder = np.asarray(z0["w"])
    assert np.all(np.abs(z_pathfinder - mean) < 5 * sd), (z_pathfinder - mean) / sd
    assert grads > 0
    # The check can fail: uniform starts on (-2, 2) lie tens of posterior sds away.
    uniform = np.asarray(gym_common.starts(model, jax.random.key(3), 8, {}, observed, 2.0, None)["w"])
    assert np.any(np.abs(uniform - mean) > 5 * sd)


@pytest.mark.parametrize("engine", ["nuts", "mams", "chees"])
def test_bad_init_is_one_clear_error_before_compilation(engine):
    with pytest.raises(ValueError, match="option init must be a str in {uniform, pathfinder}") as err:
        inference.run(blr, data(), engine=engine, init="pathfnder")
    assert "\n" not in str(err.value)


@pytest.mark.slow  # 10-20 s of compilation each
@pytest.mark.parametrize(
    "engine,options",
    [
        ("nuts", {"num_chains": 2, "num_warmup": 50, "num_samples": 50}),
        ("mams", {"num_chains": 2, "num_samples": 60}),
        ("chees", {"num_chains": 4, "num_warmup": 40, "num_samples": 30}),
    ],
)
def test_gradient_count_includes_pathfinders(monkeypatch, engine, options):
    count_after_starts(monkeypatch)  # the uniform search for the paths' starts is no one's gradients
    idata = inference.run(counted_blr, data(), engine=engine, seed=5, init="pathfinder", **options)
    jax.effects_barrier()
    reported = idata.posterior.attrs["num_grad_evals"]
    # NUTS's count is its leapfrog steps: the chains' first gradient (BlackJAX's init) is not among them.
    uncounted = options["num_chains"] if engine == "nuts" else 0
    assert reported + uncounted == COUNTER.count, (engine, reported, COUNTER.count)
    assert '"init": "pathfinder"' in idata.posterior.attrs["options"]
    assert float(idata.sample_stats["init_pareto_k"].values.flat[0]) < 0.7  # Gaussian target: trusted
    assert 0 < float(idata.sample_stats["init_grad_evals"].values.flat[0]) < reported
    if "grad_evals" in idata.sample_stats:  # each chain's share of the total, Pathfinder's included
        np.testing.assert_allclose(idata.sample_stats["grad_evals"].values[:, -1].sum(), reported)
