"""The 2-D log-Gaussian Cox process ``gp/cox2d`` on the Fiji earthquakes (zoo/data/quakes.py, zoo/nonconjugate.py;
docs/sources/nonconjugate.md#cox2d): the binning against a count made by hand, the exposure in the likelihood, a bad
grid option, and Laplace through ``inference.run`` at its fixed point (R&W eq. 3.17)."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest
import scipy.stats

import inference
import zoo
from inference.gaussian import latent_gaussian as lg
from zoo import kernels
from zoo.approx import hsgp
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
@pytest.mark.parametrize(
    ("engine", "options"), [("nuts", {}), ("ess", {}), ("nuts", {"approx": "hsgp", "num_basis": 8})]
)
def test_sampling_engines_run_on_the_grid(engine, options):
    spec = zoo.get("gp/cox2d", grid=6, **options)
    fixed = {"params": {"lengthscale": [0.5, 0.5], "variance": 2.0, "mean": 0.3}} if engine == "ess" else {}
    idata = inference.run(spec, spec.simulate(), engine=engine, num_chains=1, num_warmup=100, num_samples=100, **fixed)
    assert np.all(np.isfinite(idata.posterior["f"].values))


# -- approx="hsgp" on the grid (docs/approximations.md#hsgp-latent) ------------------------------------------------

HSGP_VALUES = {"lengthscale": jnp.array([0.5, 0.8]), "variance": 1.3, "mean": 0.4}


def test_hsgp_on_the_grid_is_the_basis_expansion_and_tends_to_the_kernel(spec_and_data):
    """approx='hsgp' on the 144 cell centres: (1) the program's f is m + Phi (sqrt(S) beta), Phi the m^2
    tensor-product eigenfunctions of ``zoo.approx.hsgp.basis`` (one trace at a random beta, m = 6, every
    hyperparameter fixed), to 1e-12; (2) that basis, B = Phi diag(sqrt(S)), gives f the prior covariance B B^T, which
    tends to the SE-ARD Gram matrix K as m grows (M = m^2; Solin & Sarkka 2020, sec. 3.2 in D dimensions).
    Lengthscales (0.5, 0.8), box 3x the half-ranges (L = 3.3, 4.0 in tens of degrees): SE's spectral mass beyond
    w_m = pi m / (2 L) in the shorter direction is ~exp(-(0.5 w_m)^2 / 2), 0.17, 7e-4, 3e-13 at m = 8, 16, 32, and
    the boundary term (mirror images at least 4.4 units, 8.8 lengthscales, away) ~exp(-39). Measured largest entry
    errors 0.082, 1.2e-4, 3.3e-10 (docs/approximations.md#hsgp-latent); asked: a strict fall, below 1e-7 at m = 32.
    One compiled program for both (a hundred eager ops would each compile)."""
    _, data = spec_and_data
    X = jnp.asarray(data.observed["X"])
    spec = zoo.get("gp/cox2d", approx="hsgp", num_basis=6, boundary_factor=3.0)
    assert set(spec.default_params) == set(HSGP_VALUES) and spec.capabilities == frozenset({"continuous"})
    kernel = kernels.with_values(kernels.parse("SE"), HSGP_VALUES, D=2)

    @jax.jit
    def program_and_errors(beta):
        fixed = numpyro.handlers.substitute(spec.program, data={**HSGP_VALUES, "beta": beta})
        f = numpyro.handlers.trace(numpyro.handlers.seed(fixed, 0)).get_trace(X=X)["f"]["value"]
        phi, spd = hsgp.basis(kernel, X, 6, 3.0)
        errors = []
        for m in (8, 16, 32):
            phi_m, spd_m = hsgp.basis(kernel, X, m, 3.0)
            B = phi_m * jnp.sqrt(spd_m)
            errors.append(jnp.max(jnp.abs(B @ B.T - kernel(X))))
        return f, phi, 0.4 + phi @ (jnp.sqrt(spd) * beta), jnp.stack(errors)

    f, phi, expected, errors = program_and_errors(jax.random.normal(jax.random.key(1), (36,)))
    assert phi.shape == (144, 36)
    np.testing.assert_allclose(f, expected, rtol=1e-12, atol=1e-12)
    errors = [float(e) for e in errors]
    assert errors[0] > errors[1] > errors[2] and errors[2] < 1e-7, errors
