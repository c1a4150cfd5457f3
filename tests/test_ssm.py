"""The state-space view and the program built from it: same log density, data layout, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro import handlers
from numpyro.infer.util import log_density

import zoo
from inference.core.program import observed_args
from zoo import ssm
from zoo.errors import DataError, OptionError


def _setup(name):
    spec = zoo.get(name)
    dataset = spec.validate(spec.simulate(jax.random.key(0)))
    observed = observed_args(dataset)
    params = {k: jnp.asarray(v) for k, v in spec.default_params.items()}
    return spec, dataset, observed, params


@pytest.mark.parametrize("name", ["lgssm", "lgssm/controlled"])
def test_view_and_program_give_the_same_log_density(name):
    spec, dataset, observed, params = _setup(name)
    view = spec.views["state_space"]
    assert dataset.observed["lengths"].min() < dataset.observed["lengths"].max()  # ragged trajectories exercised
    # an arbitrary path, not the truth, so padding states carry weight too
    states = jax.random.normal(jax.random.key(1), jnp.asarray(dataset.truth["states"]).shape)

    @jax.jit  # eager NumPyro scans run op by op: jit both sides
    def both(params, states, observed):
        log_prior, _ = log_density(view.parameters, (observed,), {}, params)
        from_view = log_prior + ssm.log_joint(view, ssm.bind(view, params, observed), states, observed)
        sites = {**params, **ssm.program_sites_from_states(states)}
        from_program, trace = log_density(spec.program, (), observed, sites)
        return from_view, from_program, trace[ssm.STATES]["value"]

    from_view, from_program, path = both(params, states, observed)
    np.testing.assert_allclose(from_view, from_program, rtol=1e-12)
    np.testing.assert_array_equal(path, states)


def test_prior_predictive_program_has_the_data_layout():
    spec = zoo.get("lgssm/controlled")
    u = jnp.ones((3, 7, 1))

    def shapes(lengths, u):
        trace = handlers.trace(handlers.seed(spec.program, 0)).get_trace(lengths=lengths, u=u)
        return trace[ssm.STATES]["value"], trace["y"]["value"]

    states, y = jax.jit(shapes)(jnp.array([7.0, 3.0, 1.0]), u)
    assert states.shape == (3, 7, 2) and y.shape == (6, 3, 2)


def test_fully_adapted_pieces_factorise_the_joint():
    """p(y_t | x_{t-1}) p(x_t | x_{t-1}, y_t) = p(x_t | x_{t-1}) p(y_t | x_t) for any x_{t-1}, x_t, y_t."""
    spec, _, observed, params = _setup("lgssm/controlled")
    view = spec.views["state_space"]
    theta = ssm.bind(view, params, observed)
    keys = jax.random.split(jax.random.key(2), 4)
    x_prev, x, y = (jax.random.normal(k, (2,)) for k in keys[:3])
    u = jax.random.normal(keys[3], (1,))
    left = view.predictive(theta, x_prev, u).log_prob(y) + view.proposal(theta, x_prev, u, y).log_prob(x)
    right = view.transition(theta, x_prev, u).log_prob(x) + view.emission(theta, x).log_prob(y)
    np.testing.assert_allclose(left, right, rtol=1e-12)


def test_bind_requires_every_parameter():
    spec, _, observed, params = _setup("lgssm")
    with pytest.raises(OptionError, match="not given"):
        ssm.bind(spec.views["state_space"], {k: v for k, v in params.items() if k != "A"}, observed)


def test_bad_trajectory_data_gives_clear_errors():
    spec = zoo.get("lgssm/controlled")
    data = dict(spec.simulate(jax.random.key(0)).observed)
    with pytest.raises(DataError, match="length 0"):
        spec.validate({**data, "lengths": np.array([20.0, 0.0, 5.0, 5.0])})
    with pytest.raises(DataError, match="exceed"):
        spec.validate({**data, "lengths": np.array([21.0, 5.0, 5.0, 5.0])})
    y = data["y"].copy()
    y[1, 3, 0] = np.nan
    with pytest.raises(DataError, match="NaN"):
        spec.validate({**data, "y": y})
    with pytest.raises(DataError, match="controls u have 2 dimensions"):
        spec.validate({**data, "u": np.zeros((4, 20, 2))})
    with pytest.raises(DataError, match="empty"):
        spec.validate({**data, "y": np.zeros((4, 0, 2)), "u": np.zeros((4, 0, 1))})
    with pytest.raises(DataError, match="takes no controls"):
        zoo.get("lgssm").validate(data)


def test_pad_trajectories():
    padded, lengths = ssm.pad_trajectories([np.ones((3, 2)), np.ones((5, 2))])
    assert padded.shape == (2, 5, 2) and lengths.tolist() == [3.0, 5.0] and padded[0, 3:].sum() == 0
    with pytest.raises(DataError, match="length 0"):
        ssm.pad_trajectories([np.ones((3, 2)), np.ones((0, 2))])
