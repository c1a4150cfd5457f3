"""AMO-GP (zoo/amogp): exact checks of its pieces.

The CP kernel itself (closed form against SciPy quadrature of eq. 4.3 in one and two dimensions, positive
semi-definiteness on random inputs and outputs, the printed (4.4) prefactor failing it) is checked in
tests/test_multioutput.py and not repeated here. Here:

- the CP Psi-statistics (eqs. 4.7-4.9) and the identity-mean cross statistic against Gauss-Hermite quadrature of
  their defining expectations (80 nodes: exact to rounding for these smooth integrands; rtol 1e-10);
- each layer's moments (mean and full variance t + s under q(v) and a Gaussian input) against the same expectations
  written from the conditional Gaussian of the layer given its input, by quadrature (rtol 1e-8: the two sides
  factorise different matrices with the same relative jitter);
- with every alignment and warping the identity, AMO-GP's bound is the SVGP bound of the CP multi-output GP, written
  independently in NumPy (rtol 1e-10), and with the inducing points at the data and Titsias' optimal q(u) it is the
  exact MO-GP log marginal likelihood up to the 1e-6 relative Cholesky jitter of K_uu (rtol 1e-6);
- the ancestral (DSVI) predictive against the analytic moment match, within Monte Carlo standard errors;
- the ``nvc`` engine's PointGuide starts where NumPyro's AutoDelta starts (bit for bit), without its validity search;
- the ``warp_prior`` option moves the warpings' prior medians and nothing else;
- bad input: D < 2 outputs, fixed layers outside the outputs, output indices that are not 0..D-1, a bad warping
  prior, ``init_params`` naming no param site.
"""

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np
import pytest
import scipy.linalg as sla

import inference  # before jax
import zoo
from inference.optimisation.nvc import PointGuide
from zoo.amogp import bound, layers, program, psi, sampling, structure_from
from zoo.errors import DataError, OptionError
from zoo.kernels import SquaredExponential
from zoo.multioutput.convolution import ConvolutionProcess
from zoo.nvc import psi_statistics

NODES, WEIGHTS = np.polynomial.hermite_e.hermegauss(80)
WEIGHTS = WEIGHTS / WEIGHTS.sum()  # E_{N(0,1)}[g] = sum_i w_i g(node_i)


def gauss_expect(fn, mu, var):
    """E[fn(h)] for h ~ N(mu, var), scalar h; fn maps (Q,) nodes to (Q, ...)."""
    values = fn(mu + np.sqrt(var) * NODES)
    return np.tensordot(WEIGHTS, values, axes=(0, 0))


def random_cp(seed=0, R=2, D=2):
    rng = np.random.default_rng(seed)
    return ConvolutionProcess(rng.uniform(0.5, 1.5, (R, D)), rng.uniform(0.05, 0.4, (R, D, 1)))


def test_cp_psi_statistics_equal_quadrature():
    cp = random_cp()
    rng = np.random.default_rng(1)
    Z, Z_out = rng.uniform(0, 1, (5, 1)), np.array([0, 1, 0, 1, 1])
    mu, var, out = rng.uniform(0, 1, (3, 1)), rng.uniform(0.001, 0.05, (3, 1)), np.array([0, 1, 1])
    stats = psi.cp_psi_statistics(cp, jnp.asarray(Z), jnp.asarray(Z_out), jnp.asarray(mu), jnp.asarray(var), out)
    for n in range(3):

        def k_row(h, n=n):
            return np.asarray(cp(h[:, None], np.full(h.size, out[n]), Z, Z_out))  # (Q, M)

        psi1 = gauss_expect(k_row, mu[n, 0], var[n, 0])
        psi2 = gauss_expect(lambda h, n=n: np.einsum("qi,qj->qij", k_row(h), k_row(h)), mu[n, 0], var[n, 0])
        np.testing.assert_allclose(stats.psi1[n], psi1, rtol=1e-10)
        np.testing.assert_allclose(stats.psi2[n], psi2, rtol=1e-10)
        np.testing.assert_allclose(stats.psi0[n], cp(mu[n : n + 1], out[n : n + 1])[0, 0], rtol=1e-12)
    # a deterministic input: the Gram matrix and its outer products
    zero = psi.cp_psi_statistics(cp, jnp.asarray(Z), jnp.asarray(Z_out), jnp.asarray(mu), jnp.zeros_like(mu), out)
    gram = np.asarray(cp(mu, out, Z, Z_out))
    np.testing.assert_allclose(zero.psi1, gram, rtol=1e-12)
    np.testing.assert_allclose(zero.psi2, np.einsum("ni,nj->nij", gram, gram), rtol=1e-12)


def test_cp_psi_statistics_with_one_output_are_the_se_ones():
    cp = ConvolutionProcess(np.array([[1.3]]), np.array([[[0.2]]]))
    se = SquaredExponential(np.pi**0.5 * 1.3**2 * 0.2, np.sqrt(2) * 0.2)
    rng = np.random.default_rng(2)
    Z, mu, var = rng.uniform(0, 1, (4, 1)), rng.uniform(0, 1, (3, 1)), rng.uniform(0.0, 0.1, (3, 1))
    ours = psi.cp_psi_statistics(cp, Z, np.zeros(4, int), mu, var, np.zeros(3, int))
    theirs = psi_statistics(se, jnp.asarray(Z), jnp.asarray(mu), jnp.asarray(var))
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_identity_cross_statistic_equals_quadrature():
    se = SquaredExponential(0.7, 0.3)
    Z, mu, var = np.array([[0.1], [0.5], [0.9]]), np.array([[0.4]]), np.array([[0.03]])
    stats = psi_statistics(se, jnp.asarray(Z), jnp.asarray(mu), jnp.asarray(var))
    cross = psi.identity_cross(se, jnp.asarray(Z), jnp.asarray(mu), jnp.asarray(var), stats.psi1)
    expected = gauss_expect(lambda h: h[:, None] * np.asarray(se(h[:, None], Z)), 0.4, 0.03)
    np.testing.assert_allclose(cross[0, :, 0], expected, rtol=1e-10)


def random_q(rng, M, scale=0.3):
    R = np.tril(rng.normal(0, scale, (M, M)), -1) + np.diag(rng.uniform(0.1, 0.5, M))
    return rng.normal(0, 1, M), R


def test_se_layer_moments_equal_quadrature():
    """Identity-mean layer: E[h + f(h)] and Var = E_h Var[f | h] + Var_h E[h + f | h], from the conditional."""
    rng = np.random.default_rng(3)
    Z = np.linspace(-1, 1, 6)[:, None]
    m, R = random_q(rng, 6)
    layer = layers.SELayer(SquaredExponential(0.4, 0.6), Z, m[None], R[None], 0.01)
    mu, var = np.array([[0.2], [-0.5]]), np.array([[0.05], [0.2]])
    mom = layers.se_moments(layer, jnp.asarray(mu), jnp.asarray(var))
    for n in range(2):
        cond_mean = lambda h: np.asarray(sampling.se_marginal(layer, jnp.asarray(h[:, None]))[0][:, 0])  # noqa: E731
        cond_var = lambda h: np.asarray(sampling.se_marginal(layer, jnp.asarray(h[:, None]))[1][:, 0])  # noqa: E731
        mean = gauss_expect(cond_mean, mu[n, 0], var[n, 0])
        total = (
            gauss_expect(cond_var, mu[n, 0], var[n, 0])
            + gauss_expect(lambda h, f=cond_mean: f(h) ** 2, mu[n, 0], var[n, 0])
            - mean**2
        )
        np.testing.assert_allclose(mom.mean[n, 0], mean, rtol=1e-8)
        np.testing.assert_allclose(mom.c[n, 0], total, rtol=1e-8)


def test_cp_layer_moments_equal_quadrature():
    rng = np.random.default_rng(4)
    cp = random_cp(seed=4, R=1)
    Z, Z_out = np.tile(np.linspace(0, 1, 5)[:, None], (2, 1)), np.repeat([0, 1], 5)
    m, R = random_q(rng, 10)
    layer = layers.CPLayer(cp, jnp.asarray(Z), jnp.asarray(Z_out), m, R, 0.01)
    mu, var, out = np.array([[0.3], [0.6]]), np.array([[0.01], [0.04]]), np.array([0, 1])
    mom = layers.cp_moments(layer, jnp.asarray(mu), jnp.asarray(var), jnp.asarray(out))
    for n in range(2):

        def cond(h, n=n):
            mean, v = sampling.cp_marginal(layer, jnp.asarray(h[:, None]), jnp.full(h.size, out[n]))
            return np.asarray(mean), np.asarray(v)

        mean = gauss_expect(lambda h: cond(h)[0], mu[n, 0], var[n, 0])
        total = gauss_expect(lambda h: cond(h)[1] + cond(h)[0] ** 2, mu[n, 0], var[n, 0]) - mean**2
        np.testing.assert_allclose(mom.mean[n], mean, rtol=1e-8)
        np.testing.assert_allclose(mom.c[n], total, rtol=1e-8)


# -- the bound with identity alignments and warpings is the MO-GP bound -----------------------------------------


@pytest.fixture(scope="module")
def two_outputs():
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 1, (30, 1))
    out = np.repeat([0, 1], 15)
    cp = random_cp(seed=5, R=1)
    noise = np.array([0.02, 0.05])
    y = np.sin(6 * X[:, 0]) + 0.3 * out + rng.normal(0, 0.1, 30)
    return X, out, y, cp, noise


def identity_model(cp, Z, Z_out, m, R, noise):
    shared = layers.CPLayer(cp, jnp.asarray(Z), jnp.asarray(Z_out), jnp.asarray(m), jnp.asarray(R), jnp.ones(()))
    return layers.AMOGP((None, None), shared, (None, None), jnp.asarray(noise))


def numpy_svgp_bound(cp, Z, Z_out, m, R, X, out, y, noise):
    """SVGP bound of the CP kernel (Hensman et al. 2013, whitened), written from the Gram matrices alone."""
    Kzz = np.asarray(cp(Z, Z_out))
    L = np.linalg.cholesky(Kzz + 1e-6 * np.mean(np.diag(Kzz)) * np.eye(len(Z)))  # gp.cholesky's jitter
    A = sla.solve_triangular(L, np.asarray(cp(Z, Z_out, X, out)), lower=True)
    s2 = noise[out]
    k_tilde = np.asarray(cp.output_variance())[out] - np.sum(A**2, 0)
    fit = -0.5 * (np.log(2 * np.pi * s2) + (y - A.T @ m) ** 2 / s2) - 0.5 * (k_tilde + np.sum((R.T @ A) ** 2, 0)) / s2
    kl = 0.5 * (np.sum(R**2) + m @ m - len(m) - 2 * np.sum(np.log(np.abs(np.diag(R)))))
    return fit.sum() - kl


def test_identity_layers_give_the_mogp_svgp_bound(two_outputs):
    X, out, y, cp, noise = two_outputs
    rng = np.random.default_rng(6)
    Z, Z_out = np.tile(np.linspace(0, 1, 6)[:, None], (2, 1)), np.repeat([0, 1], 6)
    m, R = random_q(rng, 12)
    ours = bound.nvc_bound(identity_model(cp, Z, Z_out, m, R, noise), jnp.asarray(X), jnp.asarray(out), y)
    np.testing.assert_allclose(ours, numpy_svgp_bound(cp, Z, Z_out, m, R, X, out, y, noise), rtol=1e-10)


def test_identity_layers_at_the_data_give_the_mogp_evidence(two_outputs):
    """Z = X and Titsias' optimal q: the collapsed bound log N(y | 0, Q + diag s2) - sum (K_nn - Q_nn) / (2 s2_n)
    with the same jittered K_uu (rtol 1e-9), which is below the exact MO-GP evidence by the jitter's effect only:
    Q = K - O(eps) with eps = 1e-6 mean diag K, so the gap is at most ~ N eps / min s2 (1.5e-3 here)."""
    X, out, y, cp, noise = two_outputs
    K = np.asarray(cp(X, out))
    s2 = noise[out]

    def log_normal(C):
        return -0.5 * (y @ np.linalg.solve(C, y) + np.linalg.slogdet(C)[1] + len(y) * np.log(2 * np.pi))

    eps = 1e-6 * np.mean(np.diag(K))
    L = np.linalg.cholesky(K + eps * np.eye(len(y)))
    A = sla.solve_triangular(L, K, lower=True)
    Q = A.T @ A
    collapsed = log_normal(Q + np.diag(s2)) - 0.5 * np.sum((np.diag(K) - np.diag(Q)) / s2)
    S = np.linalg.inv(np.eye(len(y)) + A @ np.diag(1 / s2) @ A.T)
    m = S @ A @ (y / s2)
    model = identity_model(cp, X, out, m, np.linalg.cholesky(S), noise)
    ours = float(bound.nvc_bound(model, jnp.asarray(X), jnp.asarray(out), y))
    np.testing.assert_allclose(ours, collapsed, rtol=1e-9)
    gap = log_normal(K + np.diag(s2)) - ours
    assert 0.0 <= gap < len(y) * eps / s2.min()


# -- sampled predictive against the analytic moment match ----------------------------------------------------------


def test_ancestral_predictive_matches_the_moment_match():
    """Alignment -> CP (identity warpings): the alignment is exactly Gaussian given X, so the moment-matched mean and
    variance are the exact moments of the ancestral mixture. S = 20000 samples: the mixture mean's standard error
    is sd / sqrt(S) (the per-sample means' sd), and the variance's is estimated the same way; 5 se."""
    rng = np.random.default_rng(7)
    M = 6
    Za = np.linspace(0, 1, M)[:, None]
    ma, Ra = random_q(rng, M, 0.1)
    align = layers.SELayer(SquaredExponential(0.02, 0.4), jnp.asarray(Za), ma[None] * 0.3, Ra[None] * 0.3, 1e-3)
    cp = random_cp(seed=7, R=1)
    m, R = random_q(rng, 2 * M)
    shared = layers.CPLayer(cp, jnp.tile(jnp.asarray(Za), (2, 1)), jnp.repeat(jnp.arange(2), M), m, R, 1.0)
    model = layers.AMOGP((None, align), shared, (None, None), jnp.array([0.01, 0.01]))
    X, out = jnp.linspace(0.05, 0.95, 8)[:, None], jnp.repeat(jnp.arange(2), 4)
    # jit: one compilation per function rather than some 400 op-by-op ones
    mean, var = jax.jit(bound.predict, static_argnums=3)(model, X, out, "moment")
    S = 20000
    means, variances = jax.jit(sampling.sample_predict, static_argnums=4)(model, X, out, jax.random.PRNGKey(0), S)
    mix_mean = means.mean(0)
    mix_var = variances.mean(0) + means.var(0)
    se_mean = means.std(0) / np.sqrt(S)
    se_var = np.sqrt((variances + (means - mix_mean) ** 2).var(0) / S)
    # + 1e-8: output 0 has no random layer (se = 0); there the two paths compute k - |a|^2 + |R^T a|^2 in different
    # orders, which agree to ~1e-10 (cancellation in k - |a|^2 at well-covered inputs)
    assert np.all(np.abs(mix_mean - mean) < 5 * se_mean + 1e-8)
    assert np.all(np.abs(mix_var - var) < 5 * se_var + 1e-8)
    assert float(jnp.max(means.std(0))) > 0  # the alignment's randomness reaches the output


# -- bad input ------------------------------------------------------------------------------------------------------


def test_bad_options_and_data():
    with pytest.raises(OptionError, match="num_outputs must be >= 2"):
        zoo.get("amogp", num_outputs=1, fixed_alignments=(0,), fixed_warpings=(0,))
    with pytest.raises(OptionError, match="not outputs"):
        zoo.get("amogp", fixed_alignments=(2,))
    with pytest.raises(OptionError, match="at least one"):
        zoo.get("amogp", fixed_warpings=())
    spec = zoo.get("amogp")
    good = {"X": np.zeros((4, 1)), "out": np.array([0.0, 1.0, 0.0, 1.0]), "Z": np.zeros((2, 1)), "y": np.zeros(4)}
    spec.validate(good)
    with pytest.raises(DataError, match="output indices"):
        spec.validate(good | {"out": np.array([0.0, 1.0, 2.0, 1.0])})
    with pytest.raises(DataError, match="output indices"):
        spec.validate(good | {"out": np.array([0.0, 0.5, 0.0, 1.0])})
    with pytest.raises(DataError, match="no data points"):
        spec.validate(good | {"out": np.zeros(4)})
    # a test set may hold one output only (the wind test sets are turbine 2's), but not unknown ones
    one_output = {"X": np.zeros((2, 1)), "out": np.ones(2), "y": np.zeros(2)}
    spec.validate(zoo.Dataset(observed=good, test=one_output))
    with pytest.raises(DataError, match="output indices"):
        spec.validate(zoo.Dataset(observed=good, test=one_output | {"out": np.full(2, 3.0)}))


def test_bad_data_fails_in_run_before_compiling():
    """inference.run validates through AMOGPSpec.validate: a length mismatch (the registry's shape check) and output
    indices outside 0..D-1 (``program.check_data``) are DataErrors raised before any program is traced, under both
    engines' families."""
    good = {"X": np.zeros((4, 1)), "out": np.array([0.0, 1.0, 0.0, 1.0]), "Z": np.zeros((2, 1)), "y": np.zeros(4)}
    for family, engine, options in (("amogp", "nvc", {}), ("amogp/dsvi", "svi", {"guide": "model"})):
        with pytest.raises(DataError, match="'out' has N=3"):
            inference.run(family, good | {"out": np.array([0.0, 1.0, 1.0])}, engine=engine, num_steps=1, **options)
        with pytest.raises(DataError, match="output indices"):
            bad = good | {"out": np.array([0.0, 1.0, -1.0, 1.0])}
            inference.run(family, bad, engine=engine, num_steps=1, **options)


def test_point_guide_starts_where_autodelta_starts():
    """PointGuide (inference/optimisation/nvc.py) replaces AutoDelta in the nvc engine only to drop the validity search
    from the
    compiled program: under the same key both guides' first call creates the same params, bit for bit (a small
    deep_gp/nvc program, so that AutoDelta's search compiles quickly)."""
    from numpyro import handlers
    from numpyro.infer.autoguide import AutoDelta

    ds = zoo.get("deep_gp/nvc").simulate(jax.random.PRNGKey(0), n=8, m=3)
    spec = zoo.get("deep_gp/nvc")
    observed = {k: jnp.asarray(ds.observed[k]) for k in ("X", "Z", "y")}

    def model(**obs):
        return spec.program(**obs, num_layers=1)

    def starts(guide_class, obs):
        tr = handlers.trace(handlers.seed(guide_class(model), 3)).get_trace(**obs)
        return {name: site["value"] for name, site in tr.items() if site["type"] == "param"}

    ours = jax.jit(lambda obs: starts(PointGuide, obs))(observed)
    theirs = jax.jit(lambda obs: starts(AutoDelta, obs))(observed)
    assert set(ours) == set(theirs) and ours
    for name in ours:
        np.testing.assert_array_equal(ours[name], theirs[name])


def test_warp_prior_moves_only_the_warping_medians():
    K = 1
    default = program.prior_medians(structure_from(2, (0,), (1,)), K)
    tight = program.prior_medians(structure_from(2, (0,), (1,), (0.01, 2.0)), K)
    assert float(default["warp_variance_0"]) == pytest.approx(0.1, rel=1e-12)
    assert float(tight["warp_variance_0"]) == pytest.approx(0.01, rel=1e-12)
    np.testing.assert_allclose(tight["warp_lengthscale_0"], 2.0, rtol=1e-12)
    for name in default.keys() - {"warp_variance_0", "warp_lengthscale_0"}:
        np.testing.assert_array_equal(default[name], tight[name])
    with pytest.raises(OptionError, match="warp_prior"):
        zoo.get("amogp", warp_prior=(0.1,))
    with pytest.raises(OptionError, match="warp_prior"):
        zoo.get("amogp", warp_prior=(0.1, -1.0))


def test_nvc_init_params_naming_no_param_site_fail_before_compiling():
    good = {"X": np.zeros((4, 1)), "out": np.array([0.0, 1.0, 0.0, 1.0]), "Z": np.zeros((2, 1)), "y": np.zeros(4)}
    with pytest.raises(OptionError, match="not a param site"):
        inference.run("amogp", good, engine="nvc", num_steps=1, init_params={"cp_variance": np.ones((1, 2))})
    with pytest.raises(OptionError, match="has shape"):
        inference.run("amogp", good, engine="nvc", num_steps=1, init_params={"cp_Z": np.zeros((3, 1))})
