"""The svi engine's parameter path (``record_path_every``): snapshot j is the point the ELBO trace's entry
``thinned_iterations[j]`` was estimated at, and the last snapshot is the returned fit."""

import jax
import numpy as np
import pytest
from scipy import stats

import inference
import zoo
from inference.core import parameter_path
from zoo.errors import OptionError
from zoo.regression import BLR_PRIOR_SCALE

BLR = zoo.get("blr").simulate(jax.random.PRNGKey(0), n=30, d=2)
# A delta guide (MAP): the ELBO is the log joint at the guide's values, with no Monte Carlo noise, so a recomputed
# value must equal the trace entry to rounding. 7 steps thinned by 3: snapshots after 0, 3, 6 updates and after 7.
RUN = {"engine": "svi", "guide": "delta", "num_steps": 7, "num_samples": 2, "learning_rate": 0.1, "seed": 2}


@pytest.fixture(scope="module")
def recorded():
    return inference.run("blr", BLR, record_path_every=3, **RUN)


def test_snapshots_are_the_points_of_their_elbo_entries(recorded):
    path = parameter_path.from_result(recorded)
    assert set(path) == {"noise_auto_loc", "w_auto_loc"}
    iterations = parameter_path.thinned_iterations(7, 3)
    np.testing.assert_array_equal(iterations, [0, 3, 6, 7])
    assert parameter_path.num_steps(path) == len(iterations)
    elbo = recorded.optimization["elbo"].values[0]
    X, y = (np.asarray(BLR.observed[k]) for k in ("X", "y"))

    def log_joint(noise, w):  # blr's density (zoo.regression.blr), written out
        prior = stats.lognorm(1.0, scale=np.exp(-2.0)).logpdf(noise[0]) + stats.norm(0, BLR_PRIOR_SCALE).logpdf(w).sum()
        return prior + stats.norm(X @ w, np.sqrt(noise[0])).logpdf(y).sum()

    snapshots = zip(path["noise_auto_loc"][:-1], path["w_auto_loc"][:-1], strict=True)
    recomputed = np.array([log_joint(np.atleast_1d(n), w) for n, w in snapshots])
    np.testing.assert_allclose(recomputed, elbo[iterations[:-1]], rtol=1e-10)
    assert len(set(np.round(recomputed, 8))) == 3  # the fit moved: a shifted path would not match
    last = parameter_path.snapshot(path, -1)  # the returned fit (a delta guide's point estimate is its value)
    np.testing.assert_allclose(last["w_auto_loc"], recorded.point_estimates["w"].values[0], rtol=1e-12)
    np.testing.assert_allclose(last["noise_auto_loc"], recorded.point_estimates["noise"].values[0], rtol=1e-12)


def test_recording_is_off_by_default_and_checked():
    assert inference.get_engine("svi").options["record_path_every"].default == 0
    with pytest.raises(OptionError, match="record_path_every"):
        inference.run("blr", BLR, record_path_every=-1, **RUN)
