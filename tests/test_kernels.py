"""Every kernel: symmetric, positive semi-definite Gram matrices, diag consistent with the full matrix."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from zoo import kernels as k

X = jax.random.normal(jax.random.key(0), (30, 3))
ARD = jnp.array([0.5, 1.0, 2.0])

KERNELS = {
    "se-iso": k.SquaredExponential(1.3, 0.7),
    "se-ard": k.SquaredExponential(0.8, ARD),
    "matern12": k.Matern12(1.0, ARD),
    "matern32": k.Matern32(2.0, 0.9),
    "matern52": k.Matern52(0.5, ARD),
    "rq": k.RationalQuadratic(1.0, 1.1, alpha=0.7),
    "periodic": k.Periodic(1.0, 0.8, period=2.5),
    "linear": k.Linear(0.6, offset=0.3),
    "constant": k.Constant(0.4),
    "white": k.White(0.2),
    "sum": k.Linear(0.5) + k.Periodic(1.0, 1.0, 3.0),
    "product": k.SquaredExponential(1.0, 2.0) * k.Periodic(1.0, 1.0, 1.5),
    "active-dims": k.SquaredExponential(1.0, 0.5).on([0, 2]) + k.Matern32(1.0, 1.0).on(1),
}


@pytest.mark.parametrize("name", KERNELS)
def test_gram_is_symmetric_psd_and_matches_diag(name):
    kernel = KERNELS[name]
    K = np.asarray(kernel(X))
    assert K.shape == (30, 30)
    np.testing.assert_allclose(K, K.T, atol=1e-12)
    # PSD up to rounding: the smallest eigenvalue may be a few ulps below zero, never materially negative.
    assert np.linalg.eigvalsh(K).min() > -1e-9 * max(1.0, np.abs(K).max())
    np.testing.assert_allclose(np.asarray(kernel.diag(X)), np.diag(K), rtol=1e-12, atol=1e-12)


def test_closed_forms_against_the_definitions():
    x, y = jnp.array([[0.3]]), jnp.array([[1.1]])
    r = 0.8 / 0.7
    np.testing.assert_allclose(k.SquaredExponential(2.0, 0.7)(x, y), 2.0 * np.exp(-0.5 * r**2))
    np.testing.assert_allclose(k.Matern12(2.0, 0.7)(x, y), 2.0 * np.exp(-r))
    np.testing.assert_allclose(k.Matern32(2.0, 0.7)(x, y), 2.0 * (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r))
    np.testing.assert_allclose(
        k.Matern52(2.0, 0.7)(x, y), 2.0 * (1 + np.sqrt(5) * r + 5 * r**2 / 3) * np.exp(-np.sqrt(5) * r)
    )
    np.testing.assert_allclose(k.RationalQuadratic(2.0, 0.7, 3.0)(x, y), 2.0 * (1 + r**2 / 6.0) ** -3.0)
    # MacKay periodic, corrected form of Franzese eq. 5.3: exp(-2 sin^2(pi |x - x'| / p) / l^2)
    np.testing.assert_allclose(
        k.Periodic(2.0, 0.7, 1.5)(x, y), 2.0 * np.exp(-2 * np.sin(np.pi * 0.8 / 1.5) ** 2 / 0.49)
    )
    np.testing.assert_allclose(k.Linear(2.0, 0.5)(x, y), 0.25 + 2.0 * 0.33)


def test_white_noise_only_on_the_training_gram():
    np.testing.assert_allclose(k.White(0.3)(X), 0.3 * np.eye(30))
    assert float(jnp.abs(k.White(0.3)(X, X[:5])).max()) == 0.0


def test_rational_quadratic_tends_to_se_and_matern_is_differentiable_at_zero():
    se, rq = k.SquaredExponential(1.0, 0.9), k.RationalQuadratic(1.0, 0.9, alpha=1e6)
    np.testing.assert_allclose(rq(X), se(X), atol=1e-5)
    grad = jax.grad(lambda ls: k.Matern52(1.0, ls)(X).sum())(1.0)
    assert np.isfinite(grad)


# ------------------------------------------------------------------------------------------------------------------
# Kernels as values (issue 17): the algebra, pytrees, the grammar, sample sites, parameter counts, bad input.

X1D = jnp.linspace(-4.0, 4.0, 40)[:, None] + 0.01 * jax.random.normal(jax.random.key(1), (40, 1))
ONE_D = {
    "zper": k.ZPer(1.3, 0.8, 2.0),
    "zper-long": k.ZPer(1.0, 5.0, 1.5),
    "cos": k.Cos(0.7, 1.7),
    "lin-location": k.Lin(0.5, 0.3, 1.2),
    "cp": k.CP(k.SE(1.0, 2.0), k.Per(0.5, 1.0, 1.0), location=0.5, width=0.3),
    "cw": k.CW(k.Lin(1.0), k.M32(1.0, 0.5), start=-1.0, duration=2.0, width=0.2),
    "se-x-per-+-lin": k.SE(1.0, 2.0) * k.Per(1.0, 1.0, 1.5) + k.Lin(0.3),
    "scaled": 2.0 * k.SE(1.0, 0.5) + k.RQ(1.0, 1.0, 2.0) * 0.5 + 1.0,
    "summed": sum([k.M12(1.0, 1.0), k.M52(1.0, 0.3), k.WN(0.1)]),
    "parsed": k.parse("CP(SE, Lin x Per) + CW(ZPer, C) + RQ x M32"),
}


def _check_psd_and_diag(kernel, X):
    K = np.asarray(kernel(X))
    np.testing.assert_allclose(K, K.T, atol=1e-12)
    scale = max(1.0, np.abs(K).max())
    assert np.linalg.eigvalsh(K).min() >= -1e-10 * scale * K.shape[0]
    np.testing.assert_allclose(np.asarray(kernel.diag(X)), np.diag(K), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ONE_D)
def test_every_kernel_and_composition_is_psd_with_a_consistent_diag(name):
    _check_psd_and_diag(ONE_D[name], X1D)


def test_one_dimensional_kernels_on_one_column_of_multidimensional_inputs():
    _check_psd_and_diag(k.parse("ZPer_1 x SE_{0,2} + CP(SE, WN)_2 + Cos_0"), X)


def test_zper_is_the_periodic_kernel_without_its_constant_and_tends_to_cos():
    per, zper = k.Per(1.0, 0.9, 2.0), k.ZPer(1.0, 0.9, 2.0)
    a = 1 / 0.81
    dc = np.exp(-a) * np.i0(a)  # the phase average of Per (Duvenaud B.11)
    np.testing.assert_allclose(zper(X1D), (per(X1D) - dc) / (1 - dc), atol=1e-12)
    grid = jnp.linspace(0.0, 2.0, 2001)[:, None]  # one period: ZPer averages to zero over a phase
    assert abs(float(zper(grid[:1], grid[:-1]).mean())) < 1e-12
    np.testing.assert_allclose(k.ZPer(1.0, 300.0, 2.0)(X1D), k.Cos(1.0, 2.0)(X1D), atol=1e-4)


def test_the_se_gram_is_unchanged_bit_for_bit():
    ls, var = ARD, 0.8

    @jax.jit  # as a kernel is evaluated (zoo.eager): XLA's fused code rounds unlike op-by-op evaluation
    def expected_gram(X):
        diff = (X[:, None, :] - X[None, :, :]) / ls
        return var * jnp.exp(-0.5 * jnp.sum(diff**2, -1))

    expected = expected_gram(X)
    assert np.array_equal(np.asarray(k.SquaredExponential(var, ls)(X)), np.asarray(expected))
    se = k.SquaredExponential(var, ls)
    assert se.variance == var and se.lengthscale is ls and k.SquaredExponential is k.SE


def test_scalar_promotion_on_either_side_and_sum():
    se = k.SE(1.3, 0.7)
    for kernel in (2.0 * se, se * 2.0, np.float64(2.0) * se, jnp.asarray(2.0) * se, 2 * se):
        np.testing.assert_allclose(kernel(X), 2.0 * se(X), rtol=1e-15)
    np.testing.assert_allclose((se + 1.0)(X), se(X) + 1.0, rtol=1e-15)
    np.testing.assert_allclose((1.0 + se)(X), se(X) + 1.0, rtol=1e-15)
    assert str(se + 1.0) == "SE + C"
    total = sum([se, k.Per(), k.Lin()])
    np.testing.assert_allclose(total(X), se(X) + k.Per()(X) + k.Lin()(X), rtol=1e-15)
    assert sum([se]) is se


@pytest.mark.parametrize("bad", ["Per", [1.0, 2.0], None, True, jnp.ones(3)])
def test_combining_a_kernel_with_a_non_kernel_is_a_type_error(bad):
    for combine in (lambda a: k.SE() * a, lambda a: a * k.SE(), lambda a: k.SE() + a):
        with pytest.raises(TypeError, match="kernel"):
            combine(bad)


def test_kernels_are_pytrees_through_jit_vmap_and_grad():
    kernel = k.parse("SE x Per + RQ + CP(Lin, WN)")
    leaves, treedef = jax.tree_util.tree_flatten(kernel)
    assert len(leaves) == 2 + 3 + 3 + 2 + 3 + 1
    rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
    assert rebuilt == kernel and str(rebuilt) == str(kernel)
    np.testing.assert_allclose(jax.jit(lambda kern: kern(X1D))(kernel), kernel(X1D), rtol=1e-14)
    # vmap over a batch of lengthscales held inside the kernel
    batch = k.SE(1.0, jnp.array([0.5, 1.0, 2.0]))
    grams = jax.vmap(lambda kern: kern(X1D), in_axes=(k.SE(None, 0),))(batch)  # a kernel as in_axes tree
    np.testing.assert_allclose(grams[2], k.SE(1.0, 2.0)(X1D), rtol=1e-14)
    # grad: a kernel of gradients, checked against a finite difference in the lengthscale
    grad = jax.grad(lambda kern: kern(X1D).sum())(k.SE(1.0, 0.7))
    assert isinstance(grad, k.SE)
    h = 1e-6
    fd = (k.SE(1.0, 0.7 + h)(X1D).sum() - k.SE(1.0, 0.7 - h)(X1D).sum()) / (2 * h)
    np.testing.assert_allclose(grad.lengthscale, fd, rtol=1e-7)


def _draw(kernel, x, seed=0):
    K = np.asarray(kernel(x))
    L = np.linalg.cholesky(K + 1e-9 * np.eye(len(x)))
    return L @ np.random.default_rng(seed).standard_normal(len(x))


def _roughness(f):
    return float(np.mean(np.diff(f) ** 2))


def test_changepoint_draw_switches_from_smooth_to_rough_at_its_location():
    x = jnp.linspace(-5.0, 5.0, 201)[:, None]
    cp = k.CP(k.SE(1.0, 3.0), k.WN(1.0), location=0.0, width=0.1)  # k1 before the change, k2 after
    for seed in range(3):
        f = _draw(cp, x, seed)
        before, after = f[:80], f[121:]  # x < -1 and x > 1
        assert _roughness(before) < 1e-2 < 0.5 < _roughness(after)
    w = np.asarray(cp.weight(x))
    assert w[0] > 1 - 1e-12 and w[-1] < 1e-12  # s(x): the weight of k1, decreasing


def test_change_window_draw_is_rough_inside_and_smooth_outside():
    x = jnp.linspace(-5.0, 5.0, 201)[:, None]
    cw = k.CW(k.WN(1.0), k.SE(1.0, 3.0), start=-1.0, duration=2.0, width=0.05)
    for seed in range(3):
        f = _draw(cw, x, seed)
        inside, outside = f[85:116], np.concatenate([f[:70], f[131:]])  # |x| < 0.75 and |x| > 1.5
        assert _roughness(outside) < 1e-2 < 0.5 < _roughness(inside)


ROUND_TRIPS = [
    ("SE*Per + RQ", "SE x Per + RQ"),
    ("SE x Per + Lin", "SE x Per + Lin"),
    ("(SE + Lin) * Per", "(SE + Lin) x Per"),
    ("cp(se, WN) + cw(ZPer, C)", "CP(SE, WN) + CW(ZPer, C)"),
    ("SE_0 x M32_1 + Per_{0,2}", "SE_0 x M32_1 + Per_{0,2}"),
    ("(SE + Lin)_1 x M12 x M52", "(SE + Lin)_1 x M12 x M52"),
    ("SE × Cos", "SE x Cos"),
]


@pytest.mark.parametrize("text,printed", ROUND_TRIPS)
def test_print_and_parse_round_trip(text, printed):
    kernel = k.parse(text)
    assert str(kernel) == printed
    assert k.parse(str(kernel)) == kernel


def test_sample_sites_are_prefixed_so_that_se_plus_se_has_two_lengthscales():
    import numpyro

    def names(kernel, D=2):
        with numpyro.handlers.trace() as tr, numpyro.handlers.seed(rng_seed=0):
            sampled = k.sample_sites(kernel, D)
        return {name: site["value"].shape for name, site in tr.items()}, sampled

    plain, sampled = names(k.SE())
    assert plain == {"lengthscale": (2,), "variance": ()}
    assert isinstance(sampled, k.SE) and sampled.lengthscale.shape == (2,)
    sites, _ = names(k.parse("SE + SE"))
    assert sites == {"se0_lengthscale": (2,), "se0_variance": (), "se1_lengthscale": (2,), "se1_variance": ()}
    sites, _ = names(k.parse("CP(SE_1, Lin)"), D=3)
    assert sites["se1_lengthscale"] == (1,) and "cp0_location" in sites and "lin2_offset" in sites
    assert list(sites) == k.site_names(k.parse("CP(SE_1, Lin)"))


@pytest.mark.parametrize(
    "text,D,count",
    [
        ("SE", 3, 4),  # 3 ARD lengthscales + variance
        ("SE + SE", 1, 4),
        ("SE x Per x Lin", 1, 2 + 3 + 3 - 2),  # three scales in a product: two redundant
        ("SE x (Lin + Per)", 1, 2 + 3 + 3 - 1),
        ("CP(SE, Lin)", 1, 2 + 2 + 3),  # location and width counted in full
        ("SE_0 x SE_1", 2, 4 - 1),
        ("C x SE", 1, 2),
    ],
)
def test_parameter_counts_for_bic_drop_redundant_product_scales(text, D, count):
    assert k.num_params(k.parse(text), D) == count


def test_scalar_times_kernel_adds_no_free_parameter():
    assert k.num_params(2.0 * k.SE(), 1) == k.num_params(k.SE(), 1) == 2


def test_unknown_kernel_name_suggests_the_close_ones():
    from zoo.errors import UnknownNameError

    with pytest.raises(UnknownNameError, match="Did you mean 'Per'"):
        k.parse("SE*Pre + RQ")
    with pytest.raises(k.KernelError, match="expected"):
        k.parse("SE + ")
    with pytest.raises(k.KernelError, match="expected"):
        k.parse("SE(Per)")


def test_kernel_on_a_dimension_the_data_do_not_have():
    with pytest.raises(k.KernelError, match="dimension 3"):
        k.validate_inputs(k.parse("SE + Per_3"), D=2)
    with pytest.raises(k.KernelError, match="dimension 3"):
        k.parse("Per_3")(X)
    with pytest.raises(k.KernelError, match="one-dimensional"):
        k.validate_inputs(k.parse("ZPer"), D=3)


def test_non_positive_fixed_hyperparameters_are_refused():
    with pytest.raises(k.KernelError, match="lengthscale"):
        k.check_hyperparameters(k.SE(1.0, jnp.array([1.0, -0.5])))
    with pytest.raises(k.KernelError, match="period"):
        k.check_hyperparameters(k.SE() + k.Per(1.0, 1.0, 0.0))
    assert k.check_hyperparameters(k.Lin(1.0, 0.0, -2.0)) is not None  # a location may be anything
