"""A NumPyro program written here, not registered, under every engine that fits it (docs/own-model.md): posterior
means against the exact answer of its registered twin within Monte Carlo error (ArviZ MCSE)."""

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.contrib.control_flow import scan

import inference
import zoo
from inference.gaussian import kalman
from inference.results import diagnostics
from zoo import lgssm, ssm
from zoo.errors import DataError, IncompatibleEngineError


def my_blr(X, y=None):
    """Bayesian linear regression as a user writes it: the registered ``blr``'s priors and likelihood."""
    noise = numpyro.sample("noise", dist.LogNormal(-2.0, 1.0))
    w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    numpyro.sample("y", dist.Normal(X @ w, jnp.sqrt(noise)).to_event(1), obs=y)


@cache
def blr_data():
    """Simulated when a test first asks, not at collection (which every pytest worker repeats)."""
    return zoo.get("blr").simulate(jax.random.key(0))


@pytest.fixture(scope="module")
def exact_blr():
    """Posterior mean of w on the registered twin, from 8000 exact draws (its own error is ~1 % of an MCSE below)."""
    result = inference.run("blr", blr_data(), "exact", 0, num_chains=4, num_samples=2000, params={"noise": 0.25})
    return float(result.posterior.attrs["log_evidence"]), result


@pytest.mark.parametrize(
    ("engine", "options"),
    [
        ("nuts", {"num_chains": 2, "num_warmup": 300, "num_samples": 1000}),
        # each engine reads a plain program through the same spec; two more compile 8-9 s of CPU each
        pytest.param("numpyro-nuts", {"num_chains": 2, "num_warmup": 200, "num_samples": 500}, marks=pytest.mark.slow),
        pytest.param("tsmc", {"num_chains": 2, "num_particles": 1000}, marks=pytest.mark.slow),
    ],
)
def test_a_plain_program_samples_the_posterior_of_its_registered_twin(engine, options, exact_blr):
    _, exact = exact_blr
    fixed = {"noise": 0.25}  # conditioning on the noise makes the twin's posterior exact (conjugate)
    result = inference.run(my_blr, blr_data().observed, engine, 1, params=fixed, **options)
    assert result.posterior.attrs["model"] == "my_blr"
    table = diagnostics.summary(result, var_names=["w"])
    reference = exact.posterior["w"].mean(("chain", "draw")).values
    # 2 coordinates: 4 MCSE is a false alarm once in ~8000 runs
    assert np.all(np.abs(table["mean"].values - reference) < 4 * table["mcse_mean"].values)


def test_svi_on_a_plain_program_is_svi_on_its_registered_twin():
    """Same engine, seed and data: the program path adds nothing to what the registered path computes."""
    options = {"num_steps": 300, "num_samples": 50}
    ours = inference.run(my_blr, blr_data().observed, "svi", 3, **options)
    twin = inference.run("blr", blr_data(), "svi", 3, **options)
    np.testing.assert_allclose(ours.posterior["w"].values, twin.posterior["w"].values, rtol=1e-10)


def my_lgssm(y, lengths=None):
    """A 2-D linear-Gaussian SSM written as a user would (all trajectories full length): the registered ``lgssm``'s
    priors, x_1 ~ N(0, I), x_t = A x_{t-1} + N(0, diag(q)), y_t = C x_t + N(0, diag(r))."""
    K, T, E = y.shape
    A = numpyro.sample("A", dist.Normal(0.0, 0.5).expand([2, 2]).to_event(2))
    C = numpyro.sample("C", dist.Normal(0.0, 1.0).expand([E, 2]).to_event(2))
    q = numpyro.sample("process_var", dist.LogNormal(jnp.log(0.1), 1.0).expand([2]).to_event(1))
    r = numpyro.sample("obs_var", dist.LogNormal(jnp.log(0.1), 1.0).expand([E]).to_event(1))
    with numpyro.plate("trajectories", K):
        x1 = numpyro.sample("x1", dist.Normal(0.0, 1.0).expand([2]).to_event(1))
        numpyro.sample("y1", dist.Normal(x1 @ C.T, jnp.sqrt(r)).to_event(1), obs=y[:, 0])

    def step(x_prev, y_t):
        with numpyro.plate("trajectories", K):
            x = numpyro.sample("x", dist.Normal(x_prev @ A.T, jnp.sqrt(q)).to_event(1))
            numpyro.sample("y", dist.Normal(x @ C.T, jnp.sqrt(r)).to_event(1), obs=y_t)
        return x, x

    _, xs = scan(step, x1, jnp.swapaxes(y[:, 1:], 0, 1))
    numpyro.deterministic("states", jnp.concatenate([x1[:, None], jnp.swapaxes(xs, 0, 1)], axis=1))


TRUE = lgssm.true_params(2, 2)
# The registered twin's view gives the particle engines what they need; the program stays the user's.
my_lgssm_with_view = zoo.model(
    lambda y, lengths=None: my_lgssm(y, lengths),
    name="my_lgssm",
    views={"state_space": lgssm.lgssm_view(2, 2)},
    capabilities={"linear_gaussian"},
    default_params=TRUE,
    data_shapes=ssm.trajectory_shapes(2, 0),
)


@pytest.fixture(scope="module")
def ssm_problem():
    """Two full-length trajectories of 8 steps from the registered twin's simulator, their RTS smoothed means and
    the exact log-likelihood."""
    data = zoo.get("lgssm").simulate(jax.random.key(2), num_train=2, num_steps=8)
    T = int(np.min(data.observed["lengths"]))
    observed = {"y": np.asarray(data.observed["y"])[:, :T], "lengths": np.full(2, float(T))}
    view = zoo.get("lgssm").views["state_space"]
    lg = view.linear_gaussian(ssm.bind(view, TRUE, observed))
    y, mask, u = ssm.trajectories({k: jnp.asarray(v) for k, v in observed.items()})
    forward, smoothed = jax.vmap(lambda yk, mk, uk: kalman.kalman_smoother(lg, yk, mk, uk))(y, mask, u)
    return observed, np.asarray(smoothed.mean), float(jnp.sum(forward.log_lik))


# ~16 s cold. Quick variants: the particle filter on this program (below) and PGAS against RTS on a registered
# model (tests/test_pgas.py); CI runs PGAS on a user's own program (examples/own_state_space_model.py).
@pytest.mark.slow
def test_a_plain_state_space_program_with_a_view_runs_pgas(ssm_problem):
    observed, rts_mean, _ = ssm_problem
    options = {"num_chains": 2, "num_warmup": 50, "num_samples": 500, "num_particles": 20}
    result = inference.run(my_lgssm_with_view, observed, "pgas", 0, params=TRUE, **options)
    table = diagnostics.summary(result, var_names=[ssm.STATES])
    mean, mcse = table["mean"].values.reshape(rts_mean.shape), table["mcse_mean"].values.reshape(rts_mean.shape)
    # 2 x T x 2 coordinates: 4.5 MCSE keeps the family-wise false alarm rate below 0.1 %
    assert np.all(np.abs(mean - rts_mean) < 4.5 * mcse), np.max(np.abs(mean - rts_mean) / mcse)


def test_a_plain_state_space_program_with_a_view_runs_the_particle_filter(ssm_problem):
    """Log-likelihood estimates of 8 independent filters against the Kalman filter's exact value: their mean lies
    within 4 standard errors (the log of an unbiased estimate is biased by about -var/2, far below that here)."""
    observed, _, exact = ssm_problem
    result = inference.run(my_lgssm_with_view, observed, "pf", 0, num_chains=8, num_particles=500, params=TRUE)
    runs = result.point_estimates["log_likelihood"].values
    assert abs(runs.mean() - exact) < 4 * runs.std(ddof=1) / np.sqrt(runs.size), (runs, exact)
    # the filter's drawn trajectories (tests/test_pf.py's engine run on the registered model is slow)
    states = result.posterior[ssm.STATES]
    assert states.shape[0] == 8 and states.shape[-3:] == (2, observed["y"].shape[1], 2)
    assert np.all(np.isfinite(states.values))


def test_what_a_plain_program_cannot_do_is_said_before_compiling():
    def coin(y=None):
        z = numpyro.sample("z", dist.Bernoulli(0.5))
        numpyro.sample("y", dist.Normal(z, 1.0), obs=y)

    with pytest.raises(IncompatibleEngineError, match="latent sites z are discrete"):
        inference.run(coin, {"y": np.array(0.3)}, "nuts")
    with pytest.raises(IncompatibleEngineError, match="needs state_space"):
        inference.run(my_blr, blr_data().observed, "pgas")
    with pytest.raises(DataError, match="needs data"):
        inference.run(my_blr, None, "nuts")
    with pytest.raises(DataError, match="unexpected keyword argument 'z'"):
        inference.run(my_blr, {"X": np.ones((3, 2)), "z": np.ones(3)}, "nuts")


def test_a_program_given_simulate_runs_without_data_and_reuses_its_spec():
    def simulate(key, n=30):
        return zoo.get("blr").simulate(key, n=n)

    @zoo.model(simulate=simulate)
    def program(X, y=None):
        my_blr(X, y)

    result = inference.run(program, None, "svi", 0, num_steps=50, num_samples=10)
    assert result.observed_data["y"].shape == (30,)
    assert zoo.programs.program_spec(program, None) is zoo.programs.program_spec(program, None)


def test_a_data_file_goes_to_inference_run_for_registered_models_and_declared_programs(tmp_path):
    path = tmp_path / "blr.csv"
    X, y = np.asarray(blr_data().observed["X"]), np.asarray(blr_data().observed["y"])
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header="X_0,X_1,y", comments="")
    options = {"num_chains": 1, "num_samples": 20, "params": {"noise": 0.25}}
    from_file = inference.run("blr", str(path), "exact", 0, **options)
    from_arrays = inference.run("blr", blr_data().observed, "exact", 0, **options)
    np.testing.assert_allclose(from_file.posterior["w"].values, from_arrays.posterior["w"].values, rtol=1e-12)

    with pytest.raises(DataError, match="declare the program's arrays"):
        inference.run(my_blr, str(path), "nuts")

    @zoo.model(data_shapes={"X": ("N", 2), "y": ("N",)})
    def declared(X, y=None):
        my_blr(X, y)

    result = inference.run(declared, path, "svi", 0, num_steps=20, num_samples=5)
    np.testing.assert_allclose(result.observed_data["y"].values, y, rtol=1e-12)
