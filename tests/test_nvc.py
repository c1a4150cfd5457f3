"""Nested variational compression (zoo/nvc.py, inference/optimisation/nvc.py): Psi-statistics against Monte Carlo and
the plain
kernel, the one-layer bound against SVGP/Titsias, the two-layer bound and moment propagation against Monte Carlo
over NVC's own Gaussian messages, training raises the bound, and bad input raises."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from numpyro import handlers

import inference
import zoo
from zoo import moments as mm
from zoo import nvc
from zoo import sparse as sp
from zoo.errors import OptionError
from zoo.kernels import SquaredExponential

NOISE = 0.05


def jitted(fn, *args):
    """fn(*args) compiled as one program (kernels are not pytrees, so the arguments are closed over)."""
    return jax.jit(lambda: fn(*args))()


def bound(layers, X, y):
    return jitted(nvc.nvc_bound, layers, X, y)


def random_layer(key, Z, width, noise, q_scale=0.3):
    k_m, k_s = jax.random.split(key)
    M = Z.shape[0]
    tril = q_scale * jnp.eye(M) + 0.05 * jnp.tril(jax.random.normal(k_s, (width, M, M)), -1)
    kernel = SquaredExponential(1.3, jnp.full(Z.shape[1], 0.9))
    return nvc.NVCLayer(kernel, Z, 0.7 * jax.random.normal(k_m, (width, M)), tril, noise)


@pytest.fixture(scope="module")
def data():
    ds = zoo.get("deep_gp/nvc").simulate(jax.random.PRNGKey(0), n=30, m=6)
    return tuple(jnp.asarray(ds.observed[k]) for k in ("X", "y", "Z"))


def test_psi_statistics_match_monte_carlo():
    """psi1 = E k(h, Z), psi2 = E k(Z, h) k(h, Z) for h ~ N(mu, diag var), 2-D inputs: within 5 MC standard errors."""
    kernel = SquaredExponential(1.3, jnp.array([0.7, 1.1]))
    Z = jax.random.normal(jax.random.PRNGKey(1), (4, 2))
    mu = jnp.array([[0.2, -0.3], [1.0, 0.5]])
    var = jnp.array([[0.3, 0.1], [0.05, 0.6]])
    psi = nvc.psi_statistics(kernel, Z, mu, var)
    n = 50_000
    for i in range(2):
        h = mu[i] + jnp.sqrt(var[i]) * jax.random.normal(jax.random.PRNGKey(10 + i), (n, 2))
        k = kernel(h, Z)  # (n, M)
        kk = k[:, :, None] * k[:, None, :]
        for exact, draws in ((psi.psi1[i], k), (psi.psi2[i], kk)):
            se = draws.std(0) / np.sqrt(n)
            assert np.all(np.abs(draws.mean(0) - exact) < 5 * se + 1e-12)
    np.testing.assert_allclose(psi.psi0, 1.3, rtol=1e-14)
    # ... and they are zoo.moments' full-covariance expectations at a diagonal covariance.
    for i in range(2):
        nu, ell, Sigma = Z - mu[i], kernel.lengthscale, jnp.diag(var[i])
        np.testing.assert_allclose(psi.psi1[i], mm._expected_kernel(nu, 1.3, ell, Sigma)[0], rtol=1e-12)
        np.testing.assert_allclose(
            psi.psi2[i], mm._expected_kernel_product(nu, nu, 1.3, 1.3, ell, ell, Sigma), rtol=1e-12
        )


def test_psi_statistics_at_zero_variance_are_the_kernel():
    kernel = SquaredExponential(0.8, jnp.array([0.5, 2.0]))
    Z = jax.random.normal(jax.random.PRNGKey(2), (5, 2))
    mu = jax.random.normal(jax.random.PRNGKey(3), (3, 2))
    psi = nvc.psi_statistics(kernel, Z, mu, jnp.zeros_like(mu))
    K = kernel(mu, Z)
    np.testing.assert_allclose(psi.psi1, K, rtol=1e-12)
    np.testing.assert_allclose(psi.psi2, K[:, :, None] * K[:, None, :], rtol=1e-12, atol=1e-300)


def test_one_layer_bound_is_the_svgp_and_titsias_bound(data):
    """One layer, deterministic input: Phi = Psi^T Psi, so the corrected bound is SVGP (any q) and, at Titsias'
    optimal q(u), the collapsed VFE bound."""
    X, y, Z = data
    layer = random_layer(jax.random.PRNGKey(4), Z, 1, NOISE)
    q = sp.WhitenedQ(layer.q_mean[0], layer.q_scale_tril[0])
    np.testing.assert_allclose(bound([layer], X, y), sp.svgp_elbo(layer.kernel, X, y, Z, q, NOISE), rtol=1e-8)
    best = sp.optimal_whitened_q(layer.kernel, X, y, Z, NOISE)
    optimal = layer._replace(q_mean=best.mean[None], q_scale_tril=best.scale_tril[None])
    np.testing.assert_allclose(bound([optimal], X, y), sp.vfe_bound(layer.kernel, X, y, Z, NOISE), rtol=1e-8)


def two_layers(Z):
    inner = random_layer(jax.random.PRNGKey(5), Z, 1, 0.02, q_scale=0.2)
    inner = inner._replace(q_mean=inner.q_mean + 0.5 * Z.T)  # roughly an increasing map
    return [inner, random_layer(jax.random.PRNGKey(6), Z, 1, NOISE)]


def test_two_layer_bound_and_moments_match_monte_carlo(data):
    """L = 2: the bound is E over NVC's message h_1 ~ N(mean_1, s2_1 + s_1) (eq. 2.80) of the last layer's SVGP
    per-point term, minus layer 1's Titsias trace and both KLs; the "moment" predictive equals the moments of
    ancestral samples (for L = 2 the sampled h_1 is exactly Gaussian). Both within 5 MC standard errors."""
    X, y, Z = data
    inner, last = two_layers(Z)
    mom = jitted(nvc.layer_moments, inner, X, jnp.zeros_like(X))
    var1 = inner.noise + mom.s

    @jax.jit
    def draw(key):
        H = mom.mean + jnp.sqrt(var1) * jax.random.normal(key, X.shape)
        q = sp.WhitenedQ(last.q_mean[0], last.q_scale_tril[0])
        return jnp.sum(sp.svgp_expected_log_lik(last.kernel, H, y, last.Z, q, last.noise))

    draws = np.asarray(jax.vmap(draw)(jax.random.split(jax.random.PRNGKey(7), 4000)))
    constant = -jnp.sum(mom.t) / (2 * inner.noise) - jitted(nvc.layer_kl, inner) - jitted(nvc.layer_kl, last)
    value = bound([inner, last], X, y)
    assert abs(draws.mean() + constant - value) < 5 * draws.std() / np.sqrt(draws.size)

    X_new = jnp.linspace(-3.0, 3.0, 7)[:, None]
    mean, var = jitted(nvc.nvc_predict, [inner, last], X_new, "moment")
    means, variances = jitted(nvc.nvc_sample, [inner, last], X_new, jax.random.PRNGKey(8), 20000)
    f = means + jnp.sqrt(variances) * jax.random.normal(jax.random.PRNGKey(9), means.shape)
    n = f.shape[0]
    assert np.all(np.abs(f.mean(0) - mean) < 5 * f.std(0) / np.sqrt(n))
    # Var of the sample variance of f: (m4 - var^2) / n.
    se_var = jnp.sqrt((((f - f.mean(0)) ** 4).mean(0) - f.var(0) ** 2) / n)
    assert np.all(np.abs(f.var(0) - var) < 5 * se_var)
    # The printed eq. 2.85 drops the t-terms: never wider than the full moment match.
    _, var_nvc = jitted(nvc.nvc_predict, [inner, last], X_new, "nvc")
    assert np.all(var_nvc <= var + 1e-12)


def test_gradient_ascent_raises_the_two_layer_bound(data):
    """30 Adam steps on q(v_l), Z_l and the log-hyperparameters of both layers raise L_NVC (one compiled gradient)."""
    X, y, Z = data
    start = two_layers(Z)
    params = {
        "q_mean": [layer.q_mean for layer in start],
        "Z": [layer.Z for layer in start],
        "log_ell": [jnp.log(layer.kernel.lengthscale) for layer in start],
        "log_noise": [jnp.log(layer.noise) for layer in start],
    }

    def objective(p):
        layers = [
            layer._replace(
                q_mean=m, Z=z, noise=jnp.exp(n), kernel=SquaredExponential(layer.kernel.variance, jnp.exp(e))
            )
            for layer, m, z, e, n in zip(start, p["q_mean"], p["Z"], p["log_ell"], p["log_noise"], strict=True)
        ]
        return nvc.nvc_bound(layers, X, y)

    value_and_grad = jax.jit(jax.value_and_grad(objective))
    optimiser = optax.adam(0.02)
    state = optimiser.init(params)
    values = []
    for _ in range(30):
        value, grad = value_and_grad(params)
        values.append(float(value))
        updates, state = optimiser.update(jax.tree.map(jnp.negative, grad), state)
        params = optax.apply_updates(params, updates)
    assert np.all(np.isfinite(values)) and values[-1] > values[0] + 1.0


@pytest.mark.slow  # ~30 s of compilation on a busy 2-core machine
def test_engine_raises_the_bound(data):
    """The MAP objective (log prior + L_NVC) rises under Adam; the fitted bound and predictive variances are sane."""
    X, y, Z = data
    idata = inference.run("deep_gp/nvc", {"X": X, "Z": Z, "y": y}, engine="nvc", num_steps=300, learning_rate=0.02)
    trace = idata.optimization["objective"].values[0]
    assert np.all(np.isfinite(trace)) and trace[-20:].mean() > trace[:20].mean() + 10.0
    assert trace[-1] >= trace[-20:].min()
    assert np.isfinite(float(idata.point_estimates["nvc_bound"].values[0]))
    assert np.all(idata.point_estimates["f_var"].values > 0)


def test_bad_input_raises(data):
    X, y, Z = data
    with pytest.raises(OptionError, match="at least one layer"):
        nvc.nvc_bound([], X, y)
    with pytest.raises(OptionError, match="num_layers"), handlers.seed(rng_seed=0):
        nvc.nvc(X, Z, y, num_layers=0)
    with pytest.raises(OptionError, match="num_layers"):
        inference.run("deep_gp/nvc", {"X": X, "Z": Z, "y": y}, engine="nvc", num_layers=0)
    with pytest.raises(OptionError, match="propagation"):
        nvc.nvc_predict(two_layers(Z), X, propagation="sampled")
    wide = random_layer(jax.random.PRNGKey(0), Z, 2, NOISE)
    with pytest.raises(OptionError, match="one output"):
        nvc.nvc_bound([wide], X, y)
