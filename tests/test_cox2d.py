"""The 2-D log-Gaussian Cox process ``gp/cox2d`` on the Fiji earthquakes (zoo/data/quakes.py, zoo/nonconjugate.py;
docs/sources/nonconjugate.md#cox2d): the binning against a count made by hand, the exposure in the likelihood, a bad
grid option, and Laplace through ``inference.run`` at its fixed point (R&W eq. 3.17)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

import inference
import zoo
from inference.gaussian import latent_gaussian as lg
from zoo.data import quakes
from zoo.errors import OptionError


@pytest.fixture(scope="module")
def spec_and_data():
    spec = zoo.get("gp/cox2d")
    return spec, spec.validate(spec.simulate(jax.random.key(0)))


def test_binning_keeps_every_event_and_matches_a_count_by_hand(spec_and_data):
    _, data = spec_and_data
    X, y = data.observed["X"], data.observed["y"]
    assert X.shape == (144, 2) and y.shape == (144,) and y.sum() == 1000  # the grid spans the data: none outside
    points = quakes.epicentres()
    long_edges, lat_edges = quakes.edges(12)
    expected, _, _ = np.histogram2d(points[:, 0], points[:, 1], bins=(long_edges, lat_edges))
    np.testing.assert_array_equal(y, expected.reshape(-1))
    # by hand: the busiest cell, (i, j) in (longitude, latitude), is row i * 12 + j
    row = int(np.argmax(y))
    i, j = divmod(row, 12)
    long_lo, lat_lo = 165.0 + 2.0 * i, -39.0 + 29.0 / 12 * j
    inside = ((points[:, 0] >= long_lo) & (points[:, 0] < long_lo + 2.0) & (points[:, 1] >= lat_lo)) & (
        points[:, 1] < lat_lo + 29.0 / 12
    )
    assert y[row] == inside.sum() > 0
    np.testing.assert_allclose(X[row], [(1.0 + 2.0 * i) / 10, (29.0 / 24 + 29.0 / 12 * j) / 10], rtol=1e-12)
    assert zoo.get("gp/cox2d", grid=5).simulate().observed["y"].sum() == 1000


def test_the_cell_area_is_the_poisson_exposure(spec_and_data):
    spec, data = spec_and_data
    view = spec.views["latent_gp"]
    f, y = jnp.linspace(-2.0, 2.0, 144), jnp.asarray(data.observed["y"])
    area = 24.0 * 29.0 / 144
    expected = scipy.stats.poisson.logpmf(np.asarray(y), area * np.exp(np.asarray(f)))
    np.testing.assert_allclose(view.log_likelihood({}, f, y), expected, rtol=1e-12)
    assert zoo.get("gp/cox").views["latent_gp"].likelihood.log_exposure == 0.0  # the coal model is unchanged


@pytest.mark.parametrize("grid", [1, 41, 2.5, "many"])
def test_a_bad_grid_is_one_clear_error(grid):
    with pytest.raises(OptionError, match="grid"):
        zoo.get("gp/cox2d", grid=grid)


def test_sizes_come_from_the_grid_option(spec_and_data):
    spec, _ = spec_and_data
    with pytest.raises(OptionError, match="grid option"):
        spec.simulate(jax.random.key(0), n=10)


def test_laplace_runs_and_its_mode_is_the_fixed_point(spec_and_data):
    """f^ - m = K grad log p(y | f^) (R&W eq. 3.17) to 1e-8 relative, and a finite log evidence."""
    spec, data = spec_and_data
    params = {"lengthscale": [0.5, 0.5], "variance": 2.0, "mean": 0.3}
    idata = inference.run(spec, data, engine="laplace", params=params, num_chains=1, num_samples=10)
    assert np.isfinite(idata.posterior.attrs["log_evidence"])
    assert bool(idata.point_estimates["converged"].values[0])
    f = jnp.asarray(idata.point_estimates["f_mean"].values[0])
    view = spec.views["latent_gp"]
    p = {k: jnp.asarray(v, dtype=float) for k, v in params.items()}
    X, y = jnp.asarray(data.observed["X"]), jnp.asarray(data.observed["y"])
    m, K = view.prior(p, X)
    _, grad, _ = lg.derivatives(lambda g: view.log_likelihood(p, g, y), f)
    assert float(jnp.max(jnp.abs(f - m - K @ grad))) < 1e-8 * max(1.0, float(jnp.max(jnp.abs(f))))


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["nuts", "ess"])
def test_sampling_engines_run_on_the_grid(engine):
    spec = zoo.get("gp/cox2d", grid=6)
    fixed = {"params": {"lengthscale": [0.5, 0.5], "variance": 2.0, "mean": 0.3}} if engine == "ess" else {}
    idata = inference.run(spec, spec.simulate(), engine=engine, num_chains=1, num_warmup=100, num_samples=100, **fixed)
    assert np.all(np.isfinite(idata.posterior["f"].values))
