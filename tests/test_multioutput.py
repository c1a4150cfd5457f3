"""Multi-output GPs (zoo/multioutput/): the Kronecker fast path against the dense likelihood, tied outputs against
independent single-output GPs, the convolution-process kernel against quadrature, and bad input.

References are independent implementations: one Cholesky factor of the dense (P N, P N) covariance
(``base.dense_log_marginal_likelihood``), SciPy's multivariate normal, ``zoo.gp.log_marginal_likelihood`` per output,
SciPy quadrature of the convolution integral. Tolerances: rtol 1e-10 for float64 linear algebra on matrices whose
condition number is ~1e3 (noise >= 0.05 against unit-scale signals), quadrature to its own 1e-10 error target.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro import handlers
from scipy import integrate
from scipy.stats import multivariate_normal

import inference
import zoo
import zoo.multioutput as mo
from zoo import gp, kernels
from zoo.errors import DataError, OptionError
from zoo.kernels import KernelError
from zoo.multioutput import (
    ICM,
    LMC,
    ConvolutionProcess,
    Coregion,
    TiedKernel,
    base,
    dense_log_marginal_likelihood,
    icm_log_marginal_likelihood,
    kronecker,
    tied_log_marginal_likelihood,
)

RNG = np.random.default_rng(17)
N, P, D = 30, 3, 2
X = RNG.uniform(-2, 2, size=(N, D))
Y = RNG.normal(size=(N, P))
W = RNG.normal(size=(P, 2))
KAPPA = np.array([0.1, 0.3, 0.05])
LENGTHSCALE = np.array([0.7, 1.4])
NOISE = np.array([0.05, 0.2, 0.1])  # unequal per-output noise: the case the whitening must get right


def norm_rel_error(a, b) -> float:
    a, b = np.concatenate([np.ravel(x) for x in a]), np.concatenate([np.ravel(x) for x in b])
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def icm_both(W, kappa, lengthscale, noise, Y):
    icm = ICM(kernels.SE(1.0, lengthscale), Coregion(W, kappa))
    return icm_log_marginal_likelihood(icm, X, Y, noise), dense_log_marginal_likelihood(icm, X, Y, noise)


# -- ICM and the Kronecker path ----------------------------------------------------------------------------------


def test_kronecker_path_equals_dense_likelihood_and_gradient():
    fast, dense = jax.jit(icm_both)(W, KAPPA, LENGTHSCALE, NOISE, Y)
    np.testing.assert_allclose(fast, dense, rtol=1e-10)
    icm = ICM(kernels.SE(1.0, LENGTHSCALE), Coregion(W, KAPPA))
    cov = np.asarray(icm.stacked(X)) + np.diag(np.repeat(NOISE, N))
    np.testing.assert_allclose(fast, multivariate_normal(np.zeros(N * P), cov).logpdf(Y.T.reshape(-1)), rtol=1e-10)

    args = (W, KAPPA, LENGTHSCALE, NOISE, Y)
    grad_fast = jax.jit(jax.grad(lambda *a: icm_both(*a)[0], argnums=range(5)))(*args)
    grad_dense = jax.jit(jax.grad(lambda *a: icm_both(*a)[1], argnums=range(5)))(*args)
    assert norm_rel_error(grad_fast, grad_dense) < 1e-10
    for g_fast, g_dense in zip(grad_fast, grad_dense, strict=True):
        assert norm_rel_error([g_fast], [g_dense]) < 1e-10


def test_kronecker_forward_mode_equals_dense():
    direction = RNG.normal(size=W.shape)
    _, t_fast = jax.jvp(lambda w: icm_both(w, KAPPA, LENGTHSCALE, NOISE, Y)[0], (W,), (direction,))
    _, t_dense = jax.jvp(lambda w: icm_both(w, KAPPA, LENGTHSCALE, NOISE, Y)[1], (W,), (direction,))
    np.testing.assert_allclose(t_fast, t_dense, rtol=1e-10)


def test_kronecker_gradient_exact_with_degenerate_eigenvalues():
    # Tied outputs with one shared variance and noise make B~ = (variance / noise) I exactly degenerate, and duplicated
    # inputs repeat eigenvalues of K_x: differentiating through eigh gives NaN here (1 / 0 eigenvalue gaps); the
    # hand-written rule needs no gaps and must equal the dense derivative.
    Xd = np.repeat(X[:5], 3, axis=0)
    Yd = RNG.normal(size=(15, P))
    noise = np.full(P, 0.1)
    se = kernels.SE(1.0, LENGTHSCALE)

    def loglik(v):
        return kronecker.kronecker_log_likelihood(jnp.eye(P) * v, se(Xd), noise, Yd)

    def dense(v):
        return base.dense_log_marginal_likelihood(TiedKernel(se, jnp.full(P, v)), Xd, Yd, noise)

    np.testing.assert_allclose(jax.jit(jax.grad(loglik))(0.7), jax.jit(jax.grad(dense))(0.7), rtol=1e-10)


def test_icm_stacked_is_the_kernel_evaluated_pairwise():
    icm = ICM(kernels.SE(1.3, LENGTHSCALE), Coregion(W, KAPPA))
    generic = base.MultiOutputKernel.stacked(icm, X)  # pair by pair through gram(), not the Kronecker product
    np.testing.assert_allclose(icm.stacked(X), generic, rtol=1e-14)
    # heterotopic: each input carries its own output
    out = RNG.integers(0, P, size=N)
    B = W @ W.T + np.diag(KAPPA)
    np.testing.assert_allclose(icm(X, out), B[out][:, out] * np.asarray(kernels.SE(1.3, LENGTHSCALE)(X)), rtol=1e-14)


def test_lmc_is_a_sum_of_icms_and_psd():
    terms = (
        ICM(kernels.SE(1.0, LENGTHSCALE), Coregion(W, KAPPA)),
        ICM(kernels.Per(1.0, 1.0, 1.5).on(0), Coregion(RNG.normal(size=(P, 1)), KAPPA[::-1])),
    )
    lmc = LMC(terms)
    K = np.asarray(lmc.stacked(X))
    np.testing.assert_allclose(K, np.asarray(terms[0].stacked(X) + terms[1].stacked(X)), rtol=1e-14)
    assert np.linalg.eigvalsh(K).min() > -1e-10 * np.abs(K).max()
    # an LMC is a pytree: jit and grad take it as an argument
    value = jax.jit(lambda k: dense_log_marginal_likelihood(k, X, Y, NOISE))(lmc)
    grads = jax.jit(jax.grad(lambda k: dense_log_marginal_likelihood(k, X, Y, NOISE)))(lmc)
    assert np.isfinite(value) and np.all(np.isfinite(grads.terms[1].coregion.W))


def test_kronecker_sampler_has_the_model_covariance():
    n, draws = 4, 40_000
    B = np.array([[1.0, 0.6], [0.6, 0.5]])
    Kx = np.asarray(kernels.SE(1.0, 1.0)(np.linspace(0, 2, n)))
    noise = np.array([0.1, 0.3])
    samples = kronecker.kronecker_sample(jax.random.key(0), B, Kx, noise, (draws,))
    flat = np.asarray(jnp.swapaxes(samples, -1, -2).reshape(draws, -1))
    target = np.kron(B, Kx) + np.kron(np.diag(noise), np.eye(n))
    # standard error of a sample covariance entry: sqrt((S_ij^2 + S_ii S_jj) / draws); 5 of them
    se = np.sqrt((target**2 + np.outer(np.diag(target), np.diag(target))) / draws)
    assert np.all(np.abs(np.cov(flat, rowvar=False) - target) < 5 * se)


# -- tied independent outputs ------------------------------------------------------------------------------------


def test_tied_likelihood_is_the_sum_of_independent_gps():
    variance = np.array([0.5, 1.5, 3.0])
    se = kernels.SE(1.0, LENGTHSCALE)

    def separate(variance, lengthscale, noise):
        k = kernels.SE(1.0, lengthscale)
        return sum(gp.log_marginal_likelihood(variance[p] * k, X, Y[:, p], noise[p]) for p in range(P))

    def tied(variance, lengthscale, noise):
        return tied_log_marginal_likelihood(kernels.SE(1.0, lengthscale), variance, noise, X, Y)

    np.testing.assert_allclose(tied(variance, LENGTHSCALE, NOISE), separate(variance, LENGTHSCALE, NOISE), rtol=1e-10)
    g_tied = jax.grad(tied, argnums=(0, 1, 2))(variance, LENGTHSCALE, NOISE)
    g_sep = jax.grad(separate, argnums=(0, 1, 2))(variance, LENGTHSCALE, NOISE)
    assert norm_rel_error(g_tied, g_sep) < 1e-10
    # the same model as a multi-output kernel, by the dense path
    dense = dense_log_marginal_likelihood(TiedKernel(se, variance), X, Y, NOISE)
    np.testing.assert_allclose(tied(variance, LENGTHSCALE, NOISE), dense, rtol=1e-10)


def y_site_log_prob(spec, params, observed):
    trace = handlers.trace(handlers.substitute(spec.program, data=params)).get_trace(**observed)
    return trace["Y"]["fn"].log_prob(trace["Y"]["value"]), trace


@pytest.mark.parametrize("share_variance, share_noise", [(False, False), (True, True), (True, False)])
def test_tied_program_sites_and_likelihood(share_variance, share_noise):
    spec = zoo.get("gp/multioutput-tied", num_outputs=P, share_variance=share_variance, share_noise=share_noise)
    variance = 0.8 if share_variance else np.array([0.5, 1.5, 3.0])
    noise = 0.1 if share_noise else NOISE
    params = {"lengthscale": LENGTHSCALE, "variance": variance, "noise": noise}
    value, trace = y_site_log_prob(spec, params, {"X": X, "Y": Y})
    latent = {k: np.shape(s["value"]) for k, s in trace.items() if s["type"] == "sample" and not s["is_observed"]}
    assert latent == {
        "lengthscale": (D,),
        "variance": () if share_variance else (P,),
        "noise": () if share_noise else (P,),
    }
    expected = sum(
        gp.log_marginal_likelihood(
            kernels.SE(np.broadcast_to(variance, P)[p], LENGTHSCALE), X, Y[:, p], np.broadcast_to(noise, P)[p]
        )
        for p in range(P)
    )
    np.testing.assert_allclose(value, expected, rtol=1e-10)


def test_tied_composite_kernel_has_no_free_variance():
    spec = zoo.get("gp/multioutput-tied", kernel="SE + Per_0")
    trace = handlers.trace(handlers.seed(spec.program, 0)).get_trace(X=X, Y=Y[:, :2])
    latent = sorted(k for k, s in trace.items() if s["type"] == "sample" and not s["is_observed"])
    assert latent == ["noise", "per1_lengthscale", "per1_period", "se0_lengthscale", "variance"]


def test_vector_field_data_converge_to_the_attractor():
    data = zoo.get("gp/multioutput-tied").simulate(jax.random.key(0))
    spec = zoo.get("gp/multioutput-tied")
    observed = spec.validate(data).observed
    assert observed["X"].shape == (60, 2) and observed["Y"].shape == (60, 2)
    radius = np.linalg.norm(observed["X"].reshape(4, 15, 2), axis=-1)
    assert np.all(np.diff(radius, axis=1) < 0)  # every demonstration moves toward the origin


# -- the ICM program -----------------------------------------------------------------------------------------------


def test_icm_program_uses_the_kronecker_likelihood_of_its_sites():
    spec = zoo.get("gp/icm", num_outputs=P, rank=2)
    params = {"lengthscale": LENGTHSCALE, "W": W, "kappa": KAPPA, "noise": NOISE}
    value, trace = y_site_log_prob(spec, params, {"X": X, "Y": Y})
    assert {k for k, s in trace.items() if s["type"] == "sample" and not s["is_observed"]} == set(params)
    np.testing.assert_allclose(value, icm_both(W, KAPPA, LENGTHSCALE, NOISE, Y)[1], rtol=1e-10)


def test_simulated_data_validate_for_every_family():
    for name, options in [("gp/icm", {"num_outputs": 4, "rank": 2}), ("gp/convolution", {"num_latents": 2})]:
        spec = zoo.get(name, **options)
        data = spec.validate(spec.simulate(jax.random.key(1), n=12, n_test=5))
        assert data.observed["Y"].shape[1] == spec.data_shapes["Y"][1]
        assert data.test["Y"].shape[1] == spec.data_shapes["Y"][1]


# -- convolution process -------------------------------------------------------------------------------------------


def random_cp(R=2, P=3, D=2, seed=0):
    rng = np.random.default_rng(seed)
    return ConvolutionProcess(rng.uniform(0.3, 2.0, (R, P)), rng.uniform(0.05, 3.0, (R, P, D)))


def test_cp_kernel_is_psd_on_random_inputs_and_outputs():
    for seed in range(5):
        cp = random_cp(seed=seed)
        rng = np.random.default_rng(100 + seed)
        Xr, out = rng.normal(size=(40, 2)), rng.integers(0, 3, size=40)
        K = np.asarray(cp(Xr, out))
        np.testing.assert_allclose(K, K.T, rtol=1e-14)
        assert np.linalg.eigvalsh(K).min() > -1e-10 * np.abs(K).max()
        np.testing.assert_allclose(cp.stacked(Xr[:10]), base.MultiOutputKernel.stacked(cp, Xr[:10]), rtol=1e-14)


def printed_prefactor_gram(sigma, ls, x, out):
    """The prefactor as the thesis prints (4.4): (2 pi)^{K/2} sigma sigma' prod_k lhat_k (1-D, one latent)."""
    lhat = np.sqrt(ls[out][:, None] ** 2 + ls[out][None, :] ** 2)
    d = x[:, None] - x[None, :]
    return np.sqrt(2 * np.pi) * sigma[out][:, None] * sigma[out][None, :] * lhat * np.exp(-0.5 * d**2 / lhat**2)


def test_printed_prefactor_is_not_psd_but_ours_is():
    # Two outputs, one smooth and one rough: the printed prefactor grows with lhat, so the cross term exceeds what
    # the two marginal variances allow (a 2 x 2 minor with negative determinant at x = x').
    sigma, ls = np.array([1.0, 1.0]), np.array([0.1, 2.0])
    x, out = np.zeros(2), np.array([0, 1])
    assert np.linalg.eigvalsh(printed_prefactor_gram(sigma, ls, x, out)).min() < 0
    ours = np.asarray(ConvolutionProcess(sigma[None, :], ls[None, :, None])(x, out))
    assert np.linalg.eigvalsh(ours).min() >= 0


def smoothing(sigma, ls, t):
    return sigma * math.exp(-0.5 * t**2 / ls**2)


def test_cp_closed_form_equals_quadrature_of_the_convolution():
    sigma, ls = np.array([[0.7, 1.3, 2.0]]), np.array([[[0.3], [1.1], [2.5]]])
    cp = ConvolutionProcess(sigma, ls)
    for d, e, x, xp in [(0, 0, 0.2, -0.4), (0, 1, 0.5, 1.7), (1, 2, -1.0, 0.3), (2, 0, 2.0, 0.0)]:

        def integrand(z, d=d, e=e, x=x, xp=xp):
            return smoothing(sigma[0, d], ls[0, d, 0], x - z) * smoothing(sigma[0, e], ls[0, e, 0], xp - z)

        value, err = integrate.quad(integrand, -np.inf, np.inf, epsabs=1e-13, epsrel=1e-11)
        closed = float(cp(np.array([x]), np.array([d]), np.array([xp]), np.array([e]))[0, 0])
        np.testing.assert_allclose(closed, value, rtol=1e-9)


def test_cp_closed_form_equals_2d_quadrature_with_two_latents():
    cp = random_cp(R=2, P=2, D=2, seed=3)
    sigma, ls = np.asarray(cp.amplitude), np.asarray(cp.lengthscale)
    x, xp = np.array([0.3, -0.2]), np.array([-0.5, 0.4])
    total = 0.0
    for r in range(2):

        def integrand(z1, z0, r=r):
            z = np.array([z0, z1])
            t0 = sigma[r, 0] * np.exp(-0.5 * np.sum((x - z) ** 2 / ls[r, 0] ** 2))
            t1 = sigma[r, 1] * np.exp(-0.5 * np.sum((xp - z) ** 2 / ls[r, 1] ** 2))
            return t0 * t1

        value, _ = integrate.dblquad(integrand, -12, 12, -12, 12, epsabs=1e-12, epsrel=1e-10)
        total += value
    closed = float(cp(x[None], np.array([0]), xp[None], np.array([1]))[0, 0])
    np.testing.assert_allclose(closed, total, rtol=1e-8)


def test_cp_with_one_output_is_an_se_kernel():
    sigma, ls = 1.7, np.array([0.4, 1.3])
    cp = ConvolutionProcess(np.array([[sigma]]), ls[None, None, :])
    se = kernels.SE(math.pi ** (2 / 2) * sigma**2 * np.prod(ls), math.sqrt(2) * ls)
    Xr = RNG.normal(size=(12, 2))
    np.testing.assert_allclose(cp(Xr, np.zeros(12, int)), se(Xr), rtol=1e-13)
    np.testing.assert_allclose(cp.output_variance(), [se.variance], rtol=1e-14)
    # from_variance sets the output's variance exactly
    np.testing.assert_allclose(ConvolutionProcess.from_variance([[2.5]], ls[None, None]).output_variance(), [2.5])


def test_convolution_program_is_the_dense_cp_likelihood():
    spec = zoo.get("gp/convolution", num_outputs=P, num_latents=2)
    variance, lengthscale = RNG.uniform(0.5, 2, (2, P)), RNG.uniform(0.3, 2, (2, P, D))
    params = {"variance": variance, "lengthscale": lengthscale, "noise": NOISE}
    value, _ = y_site_log_prob(spec, params, {"X": X, "Y": Y})
    cp = ConvolutionProcess.from_variance(variance, lengthscale)
    cov = np.asarray(cp.stacked(X)) + np.diag(np.repeat(NOISE, N))
    np.testing.assert_allclose(value, multivariate_normal(np.zeros(N * P), cov).logpdf(Y.T.reshape(-1)), rtol=1e-10)


def test_kernel_values_are_pytrees_for_jit_and_grad():
    values = [
        ICM(kernels.SE(1.0, LENGTHSCALE), Coregion(W, KAPPA)),
        TiedKernel(kernels.SE(1.0, LENGTHSCALE), np.array([0.5, 1.5, 3.0])),
        random_cp(R=2, P=3, D=2),
    ]
    for kernel in values:
        np.testing.assert_allclose(jax.jit(lambda k: k.stacked(X))(kernel), kernel.stacked(X), rtol=1e-13)
        grads = jax.jit(jax.grad(lambda k: dense_log_marginal_likelihood(k, X, Y, NOISE)))(kernel)
        assert type(grads) is type(kernel)
        leaves = jax.tree_util.tree_leaves(grads)
        assert leaves and all(np.all(np.isfinite(leaf)) and np.any(leaf != 0) for leaf in leaves)


# -- prediction and reading fitted values -----------------------------------------------------------------------------


def test_predict_of_tied_outputs_is_each_outputs_gp_posterior():
    variance = np.array([0.5, 1.5, 3.0])
    se = kernels.SE(1.0, LENGTHSCALE)
    X_new = RNG.uniform(-2, 2, size=(7, D))
    mean, var = base.predict(TiedKernel(se, variance), X, Y, NOISE, X_new)
    for p in range(P):
        post = gp.predict(variance[p] * se, X, Y[:, p], NOISE[p], X_new, full_cov=False)
        np.testing.assert_allclose(mean[:, p], post.mean, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(var[:, p], post.cov, rtol=1e-9, atol=1e-12)


def test_predict_of_icm_equals_the_dense_kronecker_formulas():
    # cross-output blocks: the posterior of output q at X_new uses every output's data through B[p, q]
    se = kernels.SE(1.0, LENGTHSCALE)
    B = W @ W.T + np.diag(KAPPA)
    X_new = RNG.uniform(-2, 2, size=(6, D))
    mean, var = base.predict(ICM(se, Coregion(W, KAPPA)), X, Y, NOISE, X_new)
    K = np.kron(B, np.asarray(se(X))) + np.kron(np.diag(NOISE), np.eye(N))
    Ks = np.kron(B, np.asarray(se(X, X_new)))  # (P N, P M)
    expected_mean = Ks.T @ np.linalg.solve(K, Y.T.reshape(-1))
    expected_var = np.repeat(np.diag(B), 6) - np.einsum("ij,ij->j", Ks, np.linalg.solve(K, Ks))
    np.testing.assert_allclose(mean.T.reshape(-1), expected_mean, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(var.T.reshape(-1), expected_var, rtol=1e-9, atol=1e-12)


def test_fitted_values_rebuild_the_programs_likelihood():
    variance, lengthscale = RNG.uniform(0.5, 2, (1, P)), RNG.uniform(0.3, 2, (1, P, D))
    cases = [
        (
            zoo.get("gp/multioutput-tied", num_outputs=P, share_variance=True),
            {"lengthscale": LENGTHSCALE, "variance": 0.7, "noise": NOISE},
            lambda e: mo.tied_from(e, P),
        ),
        (
            zoo.get("gp/icm", num_outputs=P, rank=2),
            {"lengthscale": LENGTHSCALE, "W": W, "kappa": KAPPA, "noise": NOISE},
            mo.icm_from,
        ),
        (
            zoo.get("gp/convolution", num_outputs=P),
            {"variance": variance, "lengthscale": lengthscale, "noise": NOISE},
            mo.convolution_from,
        ),
    ]
    for spec, estimates, read in cases:
        value, _ = y_site_log_prob(spec, estimates, {"X": X, "Y": Y})
        kernel, noise = read(estimates)
        np.testing.assert_allclose(dense_log_marginal_likelihood(kernel, X, Y, noise), value, rtol=1e-10)


# -- bad input -------------------------------------------------------------------------------------------------------


def test_bad_input_is_refused_before_compilation(monkeypatch):
    with pytest.raises(DataError, match="'Y' has size 2 on axis 1; expected 3"):
        zoo.get("gp/icm", num_outputs=3).validate({"X": X, "Y": Y[:, :2]})
    with pytest.raises(OptionError, match="rank"):
        zoo.get("gp/icm", rank=0)
    with pytest.raises(OptionError, match="rank 4 exceeds num_outputs 3"):
        zoo.get("gp/icm", num_outputs=3, rank=4)
    with pytest.raises(OptionError, match="num_latents"):
        zoo.get("gp/convolution", num_latents=0)
    with pytest.raises(KernelError, match="input dimension 3"):
        spec = zoo.get("gp/multioutput-tied", kernel="SE_3")
        handlers.trace(handlers.seed(spec.program, 0)).get_trace(X=X, Y=Y[:, :2])

    # through inference.run: refused while the parameters are resolved, before anything is compiled
    def must_not_run(*args, **kwargs):
        raise AssertionError("reached compilation")

    monkeypatch.setattr(inference.core.api.Timer, "call", must_not_run)
    with pytest.raises(KernelError, match="input dimension 3"):
        inference.run(zoo.get("gp/multioutput-tied", kernel="SE_3"), {"X": X, "Y": Y[:, :2]}, engine="ml2")
    with pytest.raises(DataError, match="'Y' has size 3 on axis 1; expected 2"):
        inference.run(zoo.get("gp/convolution"), {"X": X, "Y": Y}, engine="nuts")
    with pytest.raises(KernelError, match="noise must be positive"):
        icm_log_marginal_likelihood(ICM(kernels.SE(), Coregion(W, KAPPA)), X, Y, np.array([0.1, 0.0, 0.1]))
    with pytest.raises(KernelError, match="kappa must be positive"):
        icm_log_marginal_likelihood(ICM(kernels.SE(), Coregion(W, -KAPPA)), X, Y, NOISE)
    with pytest.raises(KernelError, match=r"lengthscale \(R, P, D=2\)"):
        ConvolutionProcess(np.ones((1, 3)), np.ones((1, 3, 1))).check(2)
    with pytest.raises(KernelError, match="positive"):
        from zoo.multioutput import convolution_log_marginal_likelihood

        convolution_log_marginal_likelihood(ConvolutionProcess(np.ones((1, 3)), -np.ones((1, 3, 2))), X, Y, NOISE)
