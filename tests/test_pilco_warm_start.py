"""Warm-started GP-SSM fits for PILCO (docs/sources/mchutchon.md#pilco-warm-start): the ``direct`` engine's ``init``
starts L-BFGS at the given values (and skips the AR1-GP initialisation), and
``inference.applications.pilco.warm_start_params``
carries the previous fit's hyperparameters and function over to new pseudo-inputs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import inference
import zoo
from inference.applications import ar1, pilco
from inference.core.program import observed_args
from inference.gaussian import moment_matching as mm
from zoo import moments, ssm
from zoo.data import ssm_systems
from zoo.errors import OptionError
from zoo.gp_ssm_view import linear_mean_of, pseudo_predictor

# A kink GP-SSM away from the AR1-GP's start: pseudo-inputs spanning the visited states, the kink function there.
PSEUDO_INPUTS = np.linspace(-3.0, 6.0, 8)[:, None]
PARAMS = {
    "lengthscale": np.array([[1.3]]),
    "signal_var": np.array([7.0]),
    "process_var": np.array([0.05]),
    "obs_var": np.array([0.2]),
    "pseudo_targets": np.asarray(ssm_systems.kink_function(PSEUDO_INPUTS.T)),
}


@pytest.fixture(scope="module")
def kink():
    spec = zoo.get("gpssm/sparse", num_pseudo=8)
    data = spec.simulate(jax.random.key(0)).observed
    observed = {"y": data["y"][:4, :12], "lengths": np.full(4, 12.0), "pseudo_inputs": PSEUDO_INPUTS}
    return spec, spec.validate(observed)


@pytest.fixture(scope="module")
def no_ar1_fit():
    """Any call of Algorithm 1's AR1-GP initialisation fails: a warm start must not need it."""

    def refuse(*args, **kwargs):
        raise AssertionError("the AR1-GP initialisation ran although init gave every learned site")

    patch = pytest.MonkeyPatch()
    patch.setattr(ar1, "initial_params", refuse)
    yield
    patch.undo()


@pytest.mark.slow  # its own direct program (num_steps=0): ~7 s cold; the next test checks the start by default
def test_zero_steps_return_the_starting_values(kink, no_ar1_fit):
    spec, dataset = kink
    idata = inference.run(spec, dataset, engine="direct", num_steps=0, num_samples=1, init=PARAMS)
    for name, value in PARAMS.items():
        # the values make one round trip through the site's bijection (log / exp): rounding only
        np.testing.assert_allclose(idata.point_estimates[name].values[0], value, rtol=1e-12, err_msg=name)


def test_the_first_step_is_taken_from_the_starting_values(kink, no_ar1_fit):
    spec, dataset = kink
    idata = inference.run(spec, dataset, engine="direct", num_steps=3, num_samples=1, init=PARAMS)
    trace = idata.optimization["adf_log_lik"].values[0]
    adf_log_lik = jax.jit(lambda p, o: jnp.sum(mm.adf_all(spec.views["gp_ssm"], p, o).log_lik))  # one program
    at_start = adf_log_lik(PARAMS, observed_args(dataset))
    # trace[0] is the objective where L-BFGS stands before its first update: the ADF log-likelihood at init exactly
    np.testing.assert_allclose(trace[0], float(at_start), rtol=1e-10)
    assert trace[-1] > trace[0]  # and it then climbs from there


def test_bad_init_is_refused_before_compiling(kink):
    spec, dataset = kink
    with pytest.raises(OptionError, match="not parameter sites"):
        inference.run(spec, dataset, engine="direct", num_steps=0, init={"lenghtscale": np.ones((1, 1))})
    with pytest.raises(OptionError, match="shape"):
        inference.run(spec, dataset, engine="direct", num_steps=0, init={**PARAMS, "signal_var": np.ones(2)})
    fixed = {"obs_var": PARAMS["obs_var"]}
    with pytest.raises(OptionError, match="both give"):
        inference.run(spec, dataset, engine="direct", num_steps=0, init=PARAMS, params=fixed)


def test_warm_start_carries_the_previous_fit_to_new_pseudo_inputs(kink):
    spec, dataset = kink
    view = spec.views["gp_ssm"]
    g = view.to_gpssm(ssm.bind(view.state_space, PARAMS, observed_args(dataset)))
    new_inputs = np.linspace(-2.5, 5.5, 6)[:, None]
    warm = pilco.warm_start_params(g, new_inputs)
    for name in ("lengthscale", "signal_var", "process_var", "obs_var"):
        np.testing.assert_array_equal(warm[name], PARAMS[name])
    mean = np.array([moments.predict_point(pseudo_predictor(g), x, linear_mean_of(g))[0] for x in new_inputs]).T
    np.testing.assert_allclose(warm["pseudo_targets"], mean, rtol=1e-12)
    # at its own pseudo-inputs the previous GP returns its targets, up to the 1e-6 sf2 relative jitter of its Gram
    same = pilco.warm_start_params(g, PSEUDO_INPUTS)["pseudo_targets"]
    np.testing.assert_allclose(same, PARAMS["pseudo_targets"], atol=1e-3)


def test_dynamics_options_are_validated():
    with pytest.raises(OptionError, match="warm_steps"):
        pilco.validated_options("gp-ssm", {"warm_steps": -1})
    with pytest.raises(OptionError, match="warm_step"):
        pilco.validated_options("gp-ssm", {"warm_step": 10})
    assert pilco.validated_options("gp-ssm", {})["warm_start"] is True


def test_minimise_never_returns_a_point_whose_objective_is_not_finite():
    # (x - 3)^2 left of 1, NaN right of it: Adam's first step (size ~ learning rate 2) lands at x ~ 2, where every
    # later step is skipped; the point returned must be the last one with a finite value, the start
    def objective(x):
        return jnp.where(x[0] < 1.0, (x[0] - 3.0) ** 2, jnp.nan)

    p, trace = mm.minimise(objective, jnp.zeros(1), "adam", 4, 2.0)
    assert trace[0] == 9.0 and np.all(np.isnan(trace[1:]))  # it did step into the NaN region
    np.testing.assert_array_equal(p, np.zeros(1))
