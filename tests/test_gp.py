"""GP algebra against direct dense formulas (Franzese eqs. 4.6-4.14, 6.2; R&W eq. 2.8)."""

import jax
import jax.numpy as jnp
import numpy as np
from scipy.stats import multivariate_normal

from zoo import gp
from zoo.kernels import Linear, SquaredExponential

key_x, key_y = jax.random.split(jax.random.key(1))
X = jax.random.uniform(key_x, (25, 2), minval=-2, maxval=2)
y = jnp.sin(X[:, 0]) + 0.1 * jax.random.normal(key_y, (25,))
KERNEL = SquaredExponential(1.2, jnp.array([0.7, 1.5]))
NOISE = 0.05


def test_predict_matches_dense_inverse_formulas():
    Xs = jnp.linspace(-3, 3, 7)[:, None] * jnp.ones((1, 2))
    Ky = np.asarray(KERNEL(X) + NOISE * jnp.eye(25))  # predict adds no jitter where K + noise I factorises
    Ks, Kss = np.asarray(KERNEL(X, Xs)), np.asarray(KERNEL(Xs))
    mean = Ks.T @ np.linalg.solve(Ky, np.asarray(y))
    cov = Kss - Ks.T @ np.linalg.solve(Ky, Ks)
    post = gp.predict(KERNEL, X, y, NOISE, Xs)
    np.testing.assert_allclose(post.mean, mean, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(post.cov, cov, rtol=1e-8, atol=1e-10)
    diag = gp.predict(KERNEL, X, y, NOISE, Xs, full_cov=False)
    np.testing.assert_allclose(diag.cov, np.diag(cov), rtol=1e-8, atol=1e-10)


def test_log_marginal_likelihood_matches_scipy():
    Ky = np.asarray(KERNEL(X) + NOISE * jnp.eye(25))  # predict adds no jitter where K + noise I factorises
    expected = multivariate_normal(np.zeros(25), Ky).logpdf(np.asarray(y))
    np.testing.assert_allclose(gp.log_marginal_likelihood(KERNEL, X, y, NOISE), expected, rtol=1e-10)


def test_bayesian_linear_regression_equals_gp_with_linear_kernel():
    design = jnp.concatenate([X, jnp.ones((25, 1))], axis=1)
    prior_cov = jnp.diag(jnp.array([0.5, 2.0, 1.0]))
    post, log_evidence = gp.linear_gaussian_posterior(prior_cov, design, y, NOISE)
    A = np.asarray(design.T @ design / NOISE + jnp.linalg.inv(prior_cov))  # R&W eq. 2.8, dense check only
    np.testing.assert_allclose(post.cov, np.linalg.inv(A), rtol=1e-9)
    np.testing.assert_allclose(post.mean, np.linalg.solve(A, np.asarray(design.T @ y)) / NOISE, rtol=1e-9)
    # The same evidence from the GP view: k(x, x') = x^T Sigma_p x' (docs/sources/franzese.md#blr).
    gram = design @ prior_cov @ design.T + NOISE * jnp.eye(25)
    np.testing.assert_allclose(log_evidence, multivariate_normal(np.zeros(25), np.asarray(gram)).logpdf(y), rtol=1e-10)
    linear = Linear(variance=0.5).on([0]) + Linear(variance=2.0).on([1]) + Linear(variance=0.0, offset=1.0)
    np.testing.assert_allclose(linear(design), design @ prior_cov @ design.T, rtol=1e-12)


def test_small_cholesky_and_solve_match_lapack():
    """The unrolled factorisation and forward substitution for n <= UNROLL_MAX (batched) equal LAPACK's."""
    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 4):
        B = rng.normal(size=(5, n, n))
        A = jnp.asarray(B @ np.swapaxes(B, 1, 2) + n * np.eye(n))
        b = jnp.asarray(rng.normal(size=(5, n)))
        L = gp.small_cholesky(A)
        np.testing.assert_allclose(L, np.linalg.cholesky(np.asarray(A)), rtol=1e-12, atol=1e-12)
        expected = np.linalg.solve(np.asarray(L), np.asarray(b)[..., None])[..., 0]
        np.testing.assert_allclose(gp.small_solve_lower(L, b), expected, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------------------------------------------------------
# Jitter only where needed, and the kernel-expression family gp/regression against scikit-learn.

import numpyro  # noqa: E402
import pytest  # noqa: E402
from sklearn.gaussian_process import GaussianProcessRegressor  # noqa: E402
from sklearn.gaussian_process import kernels as sk  # noqa: E402

import inference  # noqa: E402
import zoo  # noqa: E402
from zoo import kernels, regression  # noqa: E402
from zoo.errors import OptionError, ZooError  # noqa: E402


def test_cholesky_adds_jitter_only_when_the_factorisation_fails_and_says_so():
    X1 = jnp.linspace(-3.0, 3.0, 40)[:, None]
    K = SquaredExponential(1.0, 1.0)(X1)  # singular to rounding: the plain factor has NaNs
    assert bool(jnp.isnan(jnp.linalg.cholesky(K)).any())
    L, added = gp.cholesky_with_jitter(K)
    assert float(added) == pytest.approx(gp.JITTER) and not bool(jnp.isnan(L).any())
    L, added = gp.cholesky_with_jitter(K + 1e-3 * jnp.eye(40))
    assert float(added) == 0.0
    np.testing.assert_array_equal(L, jnp.linalg.cholesky(K + 1e-3 * jnp.eye(40)))
    # Gradients are those of the factor returned, also when the first attempt failed (no NaN leaks in).
    grad = jax.grad(lambda ls: gp.cholesky_with_jitter(SquaredExponential(1.0, ls)(X1))[0].sum())(1.0)
    assert np.isfinite(grad)
    value, added = gp.log_marginal_likelihood(KERNEL, X, y, NOISE, return_jitter=True)
    assert float(added) == 0.0


def test_hand_written_evidence_derivatives_equal_autodiff_through_the_cholesky():
    """gaussian_log_evidence's JVP (R&W eq. 5.9) against JAX differentiating mvn_logpdf_chol through the factor:
    value, gradient and Hessian in (lengthscale, variance, noise) and the gradient in the data, to rounding; also
    where the factorisation needs jitter (then both differentiate the jittered factor cholesky_with_jitter returns)."""

    def by_hand(theta, X, y):
        K = SquaredExponential(theta[1], theta[0])(X) + theta[2] * jnp.eye(X.shape[0])
        return gp.gaussian_log_evidence(y, K)[0]

    def through_factor(theta, X, y):
        K = SquaredExponential(theta[1], theta[0])(X) + theta[2] * jnp.eye(X.shape[0])
        return gp.mvn_logpdf_chol(y, jnp.zeros_like(y), gp.cholesky_with_jitter(K)[0])

    theta = jnp.array([0.7, 1.3, 0.05])
    X1 = jnp.linspace(-3.0, 3.0, 40)[:, None]  # noise-free SE on a dense grid: singular to rounding
    for args, jittered in (((theta, X, y), False), ((jnp.array([1.0, 1.0, 0.0]), X1, jnp.sin(X1[:, 0])), True)):
        theta_, X_, y_ = args
        K = SquaredExponential(theta_[1], theta_[0])(X_) + theta_[2] * jnp.eye(X_.shape[0])
        assert (float(gp.gaussian_log_evidence(y_, K)[1]) > 0.0) is jittered
        # The Hessian (forward over reverse: ml2's Laplace score) once; the jittered branch's rule is the same code.
        for transform in (lambda f: f, jax.grad, *([] if jittered else [jax.hessian])):
            # jit: one compilation per function rather than one per operation
            np.testing.assert_allclose(
                jax.jit(transform(by_hand))(*args), jax.jit(transform(through_factor))(*args), rtol=1e-8
            )
        np.testing.assert_allclose(
            jax.jit(jax.grad(by_hand, 2))(*args), jax.jit(jax.grad(through_factor, 2))(*args), rtol=1e-8, atol=1e-12
        )
    # The evidence site of gp/regression is this density; batched values are scored one by one.
    K = SquaredExponential(1.3, 0.7)(X) + 0.05 * jnp.eye(X.shape[0])
    d = gp.GaussianEvidence(K)
    np.testing.assert_allclose(d.log_prob(jnp.stack([y, 2 * y])), [by_hand(theta, X, y), by_hand(theta, X, 2 * y)])


def _sklearn(kernel):
    """The scikit-learn kernel with the same hyperparameters (fixed bounds: nothing is optimised)."""
    kernel = jax.tree_util.tree_map(lambda v: float(np.asarray(v).reshape(-1)[0]), kernel)  # 1-D: scalar values
    if isinstance(kernel, kernels.Sum):
        return _sklearn(kernel.left) + _sklearn(kernel.right)
    if isinstance(kernel, kernels.Product):
        return _sklearn(kernel.left) * _sklearn(kernel.right)
    scale = sk.ConstantKernel(float(kernel.variance), "fixed")
    if isinstance(kernel, kernels.RQ):
        return scale * sk.RationalQuadratic(float(kernel.lengthscale), float(kernel.alpha), "fixed", "fixed")
    if isinstance(kernel, kernels.SE):
        return scale * sk.RBF(float(kernel.lengthscale), "fixed")
    if isinstance(kernel, kernels.Per):
        return scale * sk.ExpSineSquared(float(kernel.lengthscale), float(kernel.period), "fixed", "fixed")
    if isinstance(kernel, (kernels.M12, kernels.M32, kernels.M52)):
        nu = {kernels.M12: 0.5, kernels.M32: 1.5, kernels.M52: 2.5}[type(kernel)]
        return scale * sk.Matern(float(kernel.lengthscale), "fixed", nu=nu)
    if isinstance(kernel, kernels.Lin):  # offset^2 + variance x x' = variance (offset^2 / variance + x x')
        return scale * sk.DotProduct(float(kernel.offset) / np.sqrt(float(kernel.variance)), "fixed")
    if isinstance(kernel, kernels.WN):
        return sk.WhiteKernel(float(kernel.variance), "fixed")
    raise NotImplementedError(type(kernel))


COMPOSITES = {
    "SE + Per x Lin": kernels.SE(1.3, 0.8) + kernels.Per(0.9, 1.1, 1.7) * kernels.Lin(0.6, 0.4),
    "RQ": kernels.RQ(1.1, 0.6, 0.8),
    "M12 + M32 x M52": kernels.M12(0.5, 1.2) + kernels.M32(1.4, 0.7) * kernels.M52(0.8, 2.0),
    "SE x SE + WN": kernels.SE(1.0, 3.0) * kernels.SE(0.7, 0.5) + kernels.WN(0.01),
}


@pytest.mark.parametrize("noise", [1e-3, 1e-2, 0.3])
@pytest.mark.parametrize("name", COMPOSITES)
def test_log_marginal_likelihood_of_composite_kernels_equals_scikit_learn(name, noise):
    kernel = COMPOSITES[name]
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(-3.0, 3.0, 30))[:, None]
    target = np.sin(2 * x[:, 0]) + 0.3 * x[:, 0] + np.sqrt(noise) * rng.standard_normal(30)
    reference = GaussianProcessRegressor(_sklearn(kernel), alpha=noise, optimizer=None).fit(x, target)
    ours, added = gp.log_marginal_likelihood(kernel, jnp.asarray(x), jnp.asarray(target), noise, return_jitter=True)
    assert float(added) == 0.0
    np.testing.assert_allclose(float(ours), reference.log_marginal_likelihood_value_, rtol=0, atol=1e-8)


def test_gp_regression_family_log_likelihood_equals_scikit_learn_at_the_same_hyperparameters():
    spec = zoo.get("gp/regression", kernel="SE + Per x Lin")
    rng = np.random.default_rng(1)
    x = np.sort(rng.uniform(-3.0, 3.0, 25))[:, None]
    target = np.cos(x[:, 0]) * x[:, 0] + 0.03 * rng.standard_normal(25)
    params = {
        "se0_lengthscale": jnp.array([0.9]),
        "se0_variance": 1.2,
        "per1_lengthscale": jnp.array([1.1]),
        "per1_variance": 0.7,
        "per1_period": 2.2,
        "lin2_variance": 0.5,
        "lin2_offset": 0.3,
        "lin2_location": 0.0,
        "noise": 1e-3,
    }
    assert set(params) == set(spec.default_params)
    log_likelihood = numpyro.infer.util.log_likelihood
    ll = log_likelihood(spec.program, params, X=jnp.asarray(x), y=jnp.asarray(target), batch_ndims=0)["y"]
    kernel, noise = zoo.regression.kernel_and_noise(params, "SE + Per x Lin")
    reference = GaussianProcessRegressor(_sklearn(kernel), alpha=1e-3, optimizer=None).fit(x, target)
    np.testing.assert_allclose(float(ll), reference.log_marginal_likelihood_value_, rtol=0, atol=1e-8)


def test_default_gp_regression_keeps_its_sites_and_program():
    spec = zoo.get("gp/regression")
    assert spec is zoo.get("gp/regression", kernel="SE")
    assert spec.program is zoo.regression.gp_regression
    assert dict(spec.default_params) == {"lengthscale": 1.0, "variance": 1.0, "noise": 0.1}
    with numpyro.handlers.trace() as tr, numpyro.handlers.seed(rng_seed=0):
        spec.program(X=X)
    assert [n for n, s in tr.items() if s["type"] == "sample"] == ["lengthscale", "variance", "noise", "y"]


def test_bad_kernel_options_fail_before_anything_is_compiled():
    with pytest.raises(ZooError, match="Did you mean 'Per'"):
        zoo.get("gp/regression", kernel="SE x Pre")
    data = {"X": X, "y": y}  # two input columns
    with pytest.raises(kernels.KernelError, match="dimension 2"):
        inference.run(zoo.get("gp/regression", kernel="SE_0 + Per_2"), data, "ml2", 0)
    with pytest.raises(OptionError, match="se0_lengthscale"):
        inference.run(zoo.get("gp/regression", kernel="SE + SE"), data, "ml2", 0, params={"se0_lengthscale": -1.0})


@pytest.mark.parametrize(
    "engine,options",
    [
        ("ml2", {}),
        # svi and tsmc compile 8-20 s of CPU each on this kernel; the optimisation and MCMC families run by default
        pytest.param("svi", {"num_steps": 50, "num_chains": 1}, marks=pytest.mark.slow),
        ("nuts", {"num_chains": 1, "num_warmup": 20, "num_samples": 10}),
        pytest.param("tsmc", {"num_particles": 8}, marks=pytest.mark.slow),
    ],
)
def test_a_composite_kernel_runs_under_every_engine_of_a_collapsed_model(engine, options):
    spec = zoo.get("gp/regression", kernel="SE x Per + Lin")
    data = spec.simulate(jax.random.key(0), n=12)
    result = inference.run(spec, data, engine, 0, **options)
    group = result.point_estimates if engine in ("ml2", "svi") else result.posterior
    assert {"se0_lengthscale", "per1_period", "lin2_location", "noise"} <= set(group.data_vars)
    assert all(np.isfinite(group[name]).all() for name in group.data_vars)


@pytest.mark.parametrize("noise", [1e-3, 1e-2, 0.1])
@pytest.mark.parametrize("n", [10, 60])  # 60 inputs on [-3, 3]: K alone no longer factorises in float64
def test_exact_log_evidence_of_gp_regression_equals_an_independent_cholesky(n, noise):
    """Both GP regression programs against scipy's dense log density of N(0, K + noise I) (LAPACK on the numpy
    side): the exact engine on the latent program, and the collapsed program's log density, to 1e-8. The latent
    program's factor of K alone gets jitter only where K does not factorise, and the result says so."""
    params = {"lengthscale": jnp.array([1.0]), "variance": 1.0, "noise": noise}
    data = zoo.get("gp/regression").simulate(jax.random.key(0), n=n)
    X, y = np.asarray(data.observed["X"]), np.asarray(data.observed["y"])
    K = np.exp(-0.5 * (X - X.T) ** 2)
    independent = multivariate_normal(np.zeros(n), K + noise * np.eye(n)).logpdf(y)

    result = inference.run("gp/regression-latent", data, "exact", 0, num_chains=1, num_samples=2, params=params)
    assert abs(result.posterior.attrs["log_evidence"] - independent) < 1e-8
    collapsed, _ = numpyro.infer.util.log_density(zoo.get("gp/regression").program, (), {"X": X, "y": y}, params)
    prior = sum(d.log_prob(params[k]).sum() for k, d in regression.default_priors().items())
    assert abs(float(collapsed - prior) - independent) < 1e-8
    jitter = float(result.point_estimates["jitter"].values[0])
    assert (jitter > 0) == (n == 60)


# ~13 s cold. Quick variants: ml2 against the exact evidence (test_model_options_and_svi.py), NUTS against exact
# posteriors (test_exactness.py), an additive kernel under every engine (test_additive.py).
@pytest.mark.slow
def test_the_ml2_point_of_an_additive_kernel_lies_in_the_bulk_of_the_nuts_posterior():
    """Data drawn from SE_0 + SE_1 on 2-D inputs: the type-II ML optimum (best of 4 starts) must lie inside the central
    99 % of NUTS's marginal posterior of every hyperparameter (log scale). Either engine wrong -- an optimiser that
    stops short, a sampler off target -- moves the point or the bulk apart; with 60 points the likelihood dominates
    the LogNormal priors, so the ML point sits near the posterior mode."""
    text = "SE_0 + SE_1"
    truth = {"se0_lengthscale": 0.8, "se0_variance": 1.0, "se1_lengthscale": 2.0, "se1_variance": 0.5}
    k_x, k_f, k_e = jax.random.split(jax.random.key(3), 3)
    X = jax.random.uniform(k_x, (60, 2), minval=-3, maxval=3)
    K = kernels.with_values(kernels.parse(text), truth, D=2)(X)
    f = jnp.linalg.cholesky(K + 1e-9 * jnp.eye(60)) @ jax.random.normal(k_f, (60,))
    data = {"X": X, "y": f + 0.2 * jax.random.normal(k_e, (60,))}
    spec = zoo.get("gp/regression", kernel=text)

    ml = inference.run(spec, data, "ml2", 0, num_chains=4).point_estimates
    best = int(np.argmax(ml["log_likelihood"].values))
    posterior = inference.run(spec, data, "nuts", 1, num_chains=2, num_warmup=300, num_samples=400).posterior
    for name in [*truth, "noise"]:
        draws = np.log(np.asarray(posterior[name]).reshape(-1))
        point = np.log(np.asarray(ml[name]).reshape(4, -1)[best, 0])
        low, high = np.quantile(draws, [0.005, 0.995])
        assert low < point < high, (name, point, low, high)
