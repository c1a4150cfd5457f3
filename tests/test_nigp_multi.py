"""Multi-output NIGP (zoo/nigp_multi.py): the sum of single-output NIGPs sharing the input noise, with the tie."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import inference
import zoo
from zoo import nigp, nigp_multi

VALUES = {
    "lengthscale": jnp.array([[0.9, 1.4, 2.0], [1.1, 0.7, 3.0]]),
    "variance": jnp.array([1.2, 0.8]),
    "input_noise": jnp.array([0.04, 0.09, 0.01]),
    "noise": jnp.array([0.05, 0.02]),
}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.uniform(-3.0, 3.0, (30, 3))
    y = np.sin(X[:, :2] + 0.5 * X[:, 2:]) + 0.1 * rng.standard_normal((30, 2))
    return jnp.asarray(X), jnp.asarray(y)


@pytest.mark.parametrize(("mode", "tie"), [pytest.param("nigpm", False, marks=pytest.mark.slow), ("nigpu", True)])
def test_sum_of_single_outputs_sharing_the_input_noise(data, mode, tie):
    X, y = data

    @jax.jit  # one compilation instead of many eager ones (cold time)
    def both(values, X, y):
        single = []
        for e in range(2):
            noise = values["input_noise"][e] if tie else values["noise"][e]
            params = nigp.NIGPParams(values["lengthscale"][e], values["variance"][e], noise, values["input_noise"])
            single.append(
                (nigp.log_likelihood(params, X, y[:, e], mode), nigp.training_correction(params, X, y[:, e], mode))
            )
        multi = (
            nigp_multi.log_likelihood(values, X, y, mode, None, tie),
            nigp_multi.training_correction(values, X, y, mode, None, tie),
        )
        return single, multi

    single, (total, correction) = both(VALUES, X, y)
    np.testing.assert_allclose(total, sum(s[0] for s in single), rtol=1e-12)
    np.testing.assert_allclose(correction, np.stack([s[1] for s in single], 1), rtol=1e-12)


@pytest.mark.slow  # ~15 s cold: the engine compiles the vmapped slope GP
def test_engine_trains_the_shared_input_noise(data):
    X, y = data
    run = inference.run(zoo.get("gp/nigp-multi", outputs=2, tie=True), {"X": X, "y": y}, engine="nigp")
    fits = nigp_multi.params_from(run.point_estimates, tie=True)
    assert run.point_estimates["input_noise"].shape == (1, 3)
    np.testing.assert_allclose(fits[0][0].noise, run.point_estimates["input_noise"].values[0, 0])
    start = nigp_multi.initial(X, y, tie=True)
    assert nigp_multi.log_likelihood(
        {k: jnp.asarray(run.point_estimates[k].values[0]) for k in start}, X, y, "nigpm", None, True
    ) > nigp_multi.log_likelihood(start, X, y, "nigpm", None, True)
