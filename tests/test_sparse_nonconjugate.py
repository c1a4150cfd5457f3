"""SVGP with non-Gaussian likelihoods (zoo/sparse_nonconjugate.py): quadrature against closed forms and Monte Carlo,
the Gaussian special case against zoo/sparse, the bound's gap on one point, and svi fits through inference.run."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.scipy.special import gammaln
from numpyro import handlers
from scipy import integrate, stats

import inference
import zoo
from zoo import nonconjugate as nc
from zoo import sparse as sp
from zoo import sparse_nonconjugate as sn
from zoo.errors import DataError, OptionError
from zoo.kernels import SquaredExponential

KERNEL = SquaredExponential(1.3, jnp.array([0.7]))


def test_gauss_hermite_poisson_matches_closed_form():
    """E_{N(f|m, v)} [y f - exp(f) - log y!] = y m - exp(m + v / 2) - log y!, sd up to 3 (GH_POINTS nodes)."""
    rng = np.random.default_rng(0)
    y = rng.poisson(3.0, 50).astype(float)
    mean, var = rng.normal(0.0, 1.5, 50), rng.uniform(0.0, 9.0, 50)
    exact = y * mean - np.exp(mean + var / 2) - gammaln(y + 1.0)
    quad = sn.expected_log_lik(nc.Likelihood("poisson"), jnp.asarray(y), jnp.asarray(mean), jnp.asarray(var), {})
    np.testing.assert_allclose(quad, exact, rtol=1e-10, atol=1e-10)


def test_gauss_hermite_probit_matches_monte_carlo():
    """E log Phi((2y - 1) f) by quadrature within 4 Monte Carlo standard errors of 400,000 draws."""
    y, mean, var = np.array([1.0, 0.0, 1.0]), np.array([0.3, 1.5, -2.0]), np.array([0.5, 2.0, 4.0])
    lik = nc.Likelihood("bernoulli-probit")
    quad = np.asarray(sn.expected_log_lik(lik, jnp.asarray(y), jnp.asarray(mean), jnp.asarray(var), {}))
    f = mean + np.sqrt(var) * np.random.default_rng(1).standard_normal((400_000, 3))
    draws = stats.norm.logcdf(np.where(y == 1, f, -f))
    mcse = draws.std(0) / np.sqrt(draws.shape[0])
    assert np.all(np.abs(quad - draws.mean(0)) < 4 * mcse), (quad, draws.mean(0), mcse)


@pytest.fixture(scope="module")
def regression_data():
    X = jax.random.uniform(jax.random.PRNGKey(0), (40, 1), minval=-3.0, maxval=3.0)
    y, Z = jnp.sin(2.0 * X[:, 0]), jnp.linspace(-2.5, 2.5, 7)[:, None]
    key_m, key_s = jax.random.split(jax.random.PRNGKey(1))
    q = sp.WhitenedQ(
        0.3 * jax.random.normal(key_m, (7,)), jnp.tril(0.2 * jax.random.normal(key_s, (7, 7))) + 0.5 * jnp.eye(7)
    )
    return X, y, Z, q


def test_gaussian_special_case_equals_svgp_elbo(regression_data):
    """With log p(y|f) = log N(y | f, s2) (a quadratic: 20 nodes are exact) the bound is zoo.sparse.svgp_elbo."""
    X, y, Z, q = regression_data
    noise = 0.05
    ours = sn.svgp_elbo(nc.Likelihood("gaussian"), KERNEL, X, y, Z, q, {"noise": noise})
    np.testing.assert_allclose(ours, sp.svgp_elbo(KERNEL, X, y, Z, q, noise), rtol=1e-10)


def test_program_factor_is_the_conditional_expectation_with_minibatch_scale(regression_data):
    """At v = m (q(v) with S = 0) the program's factor is svgp_expected_log_lik; in a minibatch it is scaled N/B."""
    X, _, Z, q = regression_data
    y = (X[:, 0] > 0).astype(float)
    lik = nc.Likelihood("bernoulli-logit")
    values = {"lengthscale": KERNEL.lengthscale, "variance": KERNEL.variance, "v": q.mean}
    program = handlers.substitute(handlers.seed(sn.svgp_nonconjugate, 0), values)
    site = handlers.trace(program).get_trace(X, Z, y, likelihood=lik)["expected_log_lik"]
    point = sp.WhitenedQ(q.mean, jnp.zeros((7, 7)))
    expected = sn.svgp_expected_log_lik(lik, KERNEL, X, y, Z, point, {})
    np.testing.assert_allclose(site["fn"].log_factor, expected, rtol=1e-12)
    site = handlers.trace(program).get_trace(X, Z, y, likelihood=lik, batch_size=8)["expected_log_lik"]
    assert site["scale"] == 40 / 8


def test_bound_gap_on_one_point_is_kl_to_the_exact_posterior():
    """N = M = 1, Z = X, y = 1, probit: log Z - ELBO(q) = KL(q || p(f | y)) for any Gaussian q, with
    log Z = log Phi(0) (R&W eq. 3.82) and the KL by adaptive quadrature (scipy), to 1e-8."""
    k = 1.7
    kernel = SquaredExponential(k, jnp.array([1.0]))
    X = jnp.zeros((1, 1))
    lik, y = nc.Likelihood("bernoulli-probit"), jnp.array([1.0])
    log_z = np.log(0.5)
    for mu, s2 in ((0.5, 1.0), (0.9, 1.1), (-0.3, 0.2)):
        q = sp.WhitenedQ(jnp.array([mu / np.sqrt(k)]), jnp.array([[np.sqrt(s2 / k)]]))
        elbo = float(sn.svgp_elbo(lik, kernel, X, y, X, q, {}, jitter=0.0))
        q_pdf = stats.norm(mu, np.sqrt(s2))

        def integrand(f, q_pdf=q_pdf):
            log_post = stats.norm.logcdf(f) + stats.norm.logpdf(f, 0.0, np.sqrt(k)) - log_z
            return q_pdf.pdf(f) * (q_pdf.logpdf(f) - log_post)

        kl = integrate.quad(integrand, -30, 30, epsabs=1e-13, epsrel=1e-13, limit=200)[0]
        assert kl > 0
        np.testing.assert_allclose(log_z - elbo, kl, rtol=0, atol=1e-8)


# One compiled SVI fit per likelihood (3-8 s each on a loaded machine): probit in the default suite, the rest slow.
@pytest.mark.parametrize(
    "likelihood",
    [name if name == "bernoulli-probit" else pytest.param(name, marks=pytest.mark.slow) for name in sn.LIKELIHOODS],
)
def test_svi_fit_beats_chance(likelihood):
    """inference.run(..., "svi") with the guide view; Bernoulli on separable labels y = 1[x > 0]: predictive
    probabilities in [0, 1] classify held-out points at least 90 % right; Poisson and Student-t: the predictive
    mean is nearer the truth (mean squared error) than the best constant."""
    spec = zoo.get("gp/svgp-nonconjugate", likelihood=likelihood, num_inducing=6)
    lik = spec.views["likelihood"]
    ds = spec.simulate(jax.random.PRNGKey(3), n=60, n_test=50)
    observed, X_test = dict(ds.observed), np.asarray(ds.test["X"])
    if likelihood.startswith("bernoulli"):
        observed["y"] = (observed["X"][:, 0] > 0).astype(float)
        target = (X_test[:, 0] > 0).astype(float)
    else:
        truth = np.asarray(nc._latent_function(jnp.asarray(X_test)))
        target = np.exp(truth) if likelihood == "poisson" else truth
    run = inference.run(spec, observed, engine="svi", guide="model", num_steps=400, learning_rate=0.05, seed=0)
    kernel, Z, q, params, prior_mean = sn.fit_from(run.point_estimates.isel(chain=0), lik)
    pred = np.asarray(sn.predictive_mean(lik, kernel, Z, q, params, jnp.asarray(X_test), prior_mean))
    if likelihood.startswith("bernoulli"):
        assert np.all((pred >= 0) & (pred <= 1))
        assert np.mean((pred > 0.5) == (target == 1)) >= 0.9
    else:
        assert np.mean((pred - target) ** 2) < np.var(target)


def test_fit_from_takes_the_held_fixed_parameters_over_the_untrained_guide_values():
    """With ``params=`` the guide's point masses of those sites are never trained (they keep their initial 1.0):
    ``fit_from`` must build the kernel from the fixed values the run recorded."""
    import xarray as xr

    estimates = xr.Dataset(
        {
            "lengthscale_map": ("d", np.ones(2)),
            "variance_map": ((), 1.0),
            "inducing_inputs": (("m", "d"), np.zeros((3, 2))),
            "q_mean": ("m", np.zeros(3)),
            "q_scale_tril": (("m", "m2"), np.eye(3)),
        }
    )
    lik = zoo.get("gp/svgp-nonconjugate").views["likelihood"]
    kernel, *_ = sn.fit_from(estimates, lik, fixed={"lengthscale": [0.5, 2.0], "variance": 10.0})
    np.testing.assert_array_equal(np.asarray(kernel.lengthscale), [0.5, 2.0])
    assert float(kernel.variance) == 10.0
    kernel, *_ = sn.fit_from(estimates, lik)
    assert float(kernel.variance) == 1.0


@pytest.mark.parametrize(
    "likelihood, y, message",
    [
        ("bernoulli-probit", -1.0, "outside {0, 1}"),
        ("poisson", -2.0, "non-negative integer"),
        ("poisson", 1.5, "non-negative integer"),
        ("student-t", np.nan, "finite"),
    ],
)
def test_bad_observations_fail_before_compilation(likelihood, y, message):
    spec = zoo.get("gp/svgp-nonconjugate", likelihood=likelihood, num_inducing=3)
    X = np.linspace(-1, 1, 6)[:, None]
    data = {"X": X, "Z": X[:3], "y": np.r_[np.zeros(5), y]}
    with pytest.raises(DataError, match=message):
        inference.run(spec, data, engine="svi", guide="model", num_steps=2)


def test_quadrature_points_past_numpys_finite_weights_are_refused():
    """numpy's hermegauss weights overflow to NaN past ~370 nodes: the option and the function stop at 200."""
    with pytest.raises(OptionError, match="quadrature_points"):
        zoo.get("gp/svgp-nonconjugate", quadrature_points=400)
    with pytest.raises(OptionError, match="2 to 200 nodes"):
        sn.gauss_hermite(400)
