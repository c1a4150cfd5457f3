"""The learning engines' parameter paths (``inference.core.parameter_path``): each snapshot is the point its objective
entry belongs to, and the last one is the result's estimate where the engine returns the last iterate."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import inference
from inference.core import parameter_path
from inference.core.program import observed_args
from inference.gaussian import moment_matching as mm
from zoo import gpssm
from zoo.data import ssm_systems

PSEUDO_INPUTS = np.linspace(-3.0, 6.0, 5)[:, None]


@pytest.fixture(scope="module")
def kink():
    data = ssm_systems.kink(jax.random.key(3), num_train=2, num_test=2, num_steps=8)
    spec = gpssm.sparse_gpssm_spec("test/kink-path", lambda key: None, 1)
    return spec, spec.validate({**data.observed, "pseudo_inputs": PSEUDO_INPUTS})


def test_minimise_records_the_point_of_each_objective_value():
    """``minimise``'s points are where its trace was evaluated (before each step): the objective recomputed there is
    the trace, the first point is the start, and the returned point is one step past the last."""
    target = jnp.array([1.0, -2.0])
    objective = lambda p: jnp.sum((p - target) ** 2)  # noqa: E731
    final, trace, points = mm.minimise(objective, jnp.zeros(2), "adam", 5, 0.3, with_points=True)
    np.testing.assert_allclose(jax.vmap(objective)(points), trace, rtol=1e-12)
    np.testing.assert_array_equal(points[0], jnp.zeros(2))
    assert float(objective(final)) < float(trace[-1])


@pytest.mark.slow  # ~25 s on a loaded core: compiles the direct engine
def test_direct_path_gives_its_objective_trace(kink):
    """Recomputing the GP-ADF log-likelihood at each recorded snapshot gives the recorded trace: a path shifted by one
    step (the point after the step) or holding the start would not."""
    spec, dataset = kink
    idata = inference.run(spec, dataset, engine="direct", optimizer="adam", learning_rate=0.1, num_steps=4,
                          num_samples=2)  # fmt: skip
    path = parameter_path.from_result(idata)
    assert set(path) == {"lengthscale", "signal_var", "process_var", "obs_var", "pseudo_targets"}
    assert parameter_path.num_steps(path) == 4
    log_lik = jax.jit(lambda p: jnp.sum(mm.adf_all(spec.views["gp_ssm"], p, observed_args(dataset)).log_lik))
    recomputed = [float(log_lik(parameter_path.snapshot(path, i))) for i in range(4)]
    np.testing.assert_allclose(recomputed, idata.optimization["adf_log_lik"].values[0], rtol=1e-10)
    assert len(set(np.round(recomputed, 8))) == 4  # the parameters moved: the check compares different points


@pytest.mark.slow  # compiles the PGAS-EM scan
def test_pgas_em_path_ends_at_its_estimate():
    """PGAS-EM records the parameters after each M-step: the last snapshot is the returned estimate."""
    import zoo

    spec = zoo.get("lgssm")
    dataset = spec.simulate(jax.random.key(0))
    idata = inference.run(spec, dataset, engine="pgas-em", num_steps=3, num_samples=2, num_particles=10, seed=1)
    path = parameter_path.from_result(idata)
    assert parameter_path.num_steps(path) == 3 and set(path) == set(idata.point_estimates.data_vars)
    for name, values in path.items():
        np.testing.assert_array_equal(values[-1], idata.point_estimates[name].values[0])
        assert not np.array_equal(values[0], values[-1]) or name == "C"  # C = I is learned but may not move
