"""DAGP (zoo/dagp.py): bad input, exact assignment marginalisation, K = 1 reduces to SVGP, outlier separation."""

import itertools
import json
import math
import os
from functools import partial
from pathlib import Path
from typing import Any

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest
import scipy.special
from numpyro import handlers
from numpyro.infer import Trace_ELBO
from numpyro.infer.util import log_density

import inference
import zoo
from inference.applications import trimmed
from zoo import dagp, deep_gp, gp
from zoo import sparse as sp
from zoo.data.association import choicenet, choicenet_test
from zoo.errors import OptionError, ZooError
from zoo.kernels import SquaredExponential
from zoo.registry import Dataset


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_modes": 0}, "num_modes"),
        ({"num_modes": -2}, "num_modes"),
        ({"num_modes": 1.5}, "num_modes"),
        ({"temperature": 0.0}, "temperature"),
        ({"temperature": -0.5}, "temperature"),
        ({"temperature": float("nan")}, "temperature"),
        ({"num_modes": 2, "kernels": ("se", "matern")}, "unknown mode kernel"),
        ({"num_modes": 3, "kernels": ("se", "white")}, "kernels has 2 entries"),
        ({"num_modes": 1, "kernels": ("white",)}, "at least one mode"),
        ({"mode_init": "kmeans"}, "mode_init"),
        ({"num_modes": 2, "mode_init": "trimmed"}, "mode_init"),
        ({"num_modes": 2, "depths": (1, 0)}, "depths"),
        ({"num_modes": 2, "depths": (2,)}, "depths has 1 entries"),
        ({"num_modes": 2, "kernels": ("se", "white"), "depths": (2, 2)}, "white mode"),
    ],
)
def test_bad_options_raise(kwargs, match):
    with pytest.raises(OptionError, match=match):
        dagp.dagp_config(**kwargs)
    assert issubclass(OptionError, ZooError)


@pytest.mark.parametrize(
    "options, match",
    [
        ({"num_modes": 0}, "num_modes must be an int >= 1, got 0"),
        ({"num_modes": "two"}, "num_modes must be an int >= 1, got 'two'"),
        ({"num_mode": 3}, "Did you mean 'num_modes'"),
        ({"temperature": -1.0}, "temperature"),
        ({"kernels": ("se", "matern")}, "kernels"),
        ({"num_modes": 3, "depths": (1, 2)}, "depths has 2 entries"),
        ({"noise_prior_loc": (0.0, 0.0)}, "together"),
        ({"batch_size": 0}, "batch_size"),
    ],
)
def test_family_rejects_bad_options_before_compiling(options, match):
    """zoo.get("dagp", ...) validates every option (declared kinds and ranges, then the combination) with one-line
    OptionErrors, before any program is traced or compiled."""
    with pytest.raises(OptionError, match=match):
        zoo.get("dagp", **options)


def test_family_options_build_the_config_and_reach_the_result():
    """Options become the spec's DagpConfig (one spec object per variant, so compiled programs are reused); the
    noise-separation config round-trips through ``options_of``. That the result records them is checked with the
    labelled start below (one compiled run for both)."""
    spec = zoo.get("dagp", num_modes=3, kernels="se,se,white", depths=(1, 2, 1))
    assert zoo.get("dagp", num_modes=3, kernels=("se", "se", "white"), depths="1,2,1") is spec
    assert dagp.config_of(spec) == dagp.dagp_config(3, ("se", "se", "white"), depths=(1, 2, 1))
    assert dagp.config_of(zoo.get("dagp", **dagp.options_of(dagp.NOISE_SEPARATION))) == dagp.NOISE_SEPARATION


def test_exact_program_sums_out_assignments():
    """dagp/exact: log p(y | f, alpha) equals the brute-force sum over all K^N assignments of
    prod_n softmax(alpha_n)_{a_n} N(y_n | f_n^(a_n), s_{a_n}^2) (N = 4, K = 3: 81 terms)."""
    K, N = 3, 4
    X = jnp.linspace(-1.0, 1.0, N)[:, None]
    y = jnp.array([0.3, -0.2, 1.1, 0.4])
    key = jax.random.split(jax.random.PRNGKey(0), 2)
    sites = {
        "lengthscale": jnp.array([0.5, 1.0, 2.0]),
        "variance": jnp.array([1.0, 0.5, 2.0]),
        "alpha_lengthscale": jnp.array([1.0, 0.7, 1.3]),
        "alpha_variance": jnp.array([1.0, 2.0, 0.5]),
        "noise": jnp.array([0.1, 0.2, 0.05]),
        "f_white": jax.random.normal(key[0], (K, N)),
        "alpha_white": jax.random.normal(key[1], (K, N)),
    }
    logp, trace = log_density(partial(dagp.dagp_exact, num_modes=K), (X,), {"y": y}, sites)
    f, alpha = trace["f"]["value"], trace["alpha"]["value"]
    log_prior = sum(trace[name]["fn"].log_prob(trace[name]["value"]).sum() for name in sites)
    # the sum over assignments in NumPy: indexing jax arrays by Python ints compiles a program per index
    log_pi = np.asarray(jax.nn.log_softmax(alpha, 0))  # (K, N)
    log_comp = np.asarray(dist.Normal(f, jnp.sqrt(sites["noise"])[:, None]).log_prob(y))  # (K, N)
    terms = [sum(log_pi[a, n] + log_comp[a, n] for n, a in enumerate(A)) for A in itertools.product(range(K), repeat=N)]
    np.testing.assert_allclose(logp - log_prior, scipy.special.logsumexp(terms), rtol=1e-12)


def test_exact_predict_interpolates_the_latent_draws():
    """exact_predict at the training inputs returns each draw's f (the GP conditional of f given itself) with ~0
    variance, and predictive weights on the simplex over the K modes."""
    S, K, N = 3, 2, 6
    X = jnp.linspace(-1.0, 1.0, N)[:, None]
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    draws = {
        "lengthscale": jnp.full((S, K), 0.7),
        "variance": jnp.full((S, K), 1.3),
        "alpha_lengthscale": jnp.ones((S, K)),
        "alpha_variance": jnp.ones((S, K)),
        "noise": jnp.full((S, K), 0.1),
        "f_white": jax.random.normal(keys[0], (S, K, N)),
        "alpha_white": jax.random.normal(keys[1], (S, K, N)),
    }
    pred = dagp.exact_predict(draws, X, X, jax.random.PRNGKey(1), 8)
    f = jnp.einsum("ij,skj->ski", gp.cholesky(SquaredExponential(1.3, 0.7)(X)), draws["f_white"])
    np.testing.assert_allclose(pred.mean, jnp.swapaxes(f, 1, 2), atol=1e-4)  # jitter 1e-6
    assert pred.f_var.shape == (S, N, K) and float(pred.f_var.max()) < 1e-4
    np.testing.assert_allclose(pred.weights.sum(-1), 1.0, rtol=1e-12)
    assert dagp.posterior_mixture_log_density(pred, jnp.zeros(N)).shape == (N,)


def test_level_starts_put_each_signal_mode_on_its_own_y_quantile():
    """mode_init="levels" (spread 0): f(Z) = L v of signal mode j is the constant y quantile (j + 1/2) / S under the
    guide's initial kernel; the white mode gets no q(v); "random" with spread 0 starts every mode at zero."""
    y = jnp.linspace(-3.0, 5.0, 41)
    Z = jnp.linspace(-2.0, 2.0, 6)[:, None]
    config = dagp.dagp_config(3, ("se", "white", "se"), init_spread=0.0, mode_init="levels")
    v = dagp.initial_q_means(jax.random.PRNGKey(0), config, Z, y)
    f_at_Z = v @ gp.cholesky(dagp.INITIAL_KERNEL(Z)).T
    np.testing.assert_allclose(f_at_Z, jnp.broadcast_to(jnp.array([-1.0, 3.0])[:, None], (2, 6)), atol=1e-8)
    random_start = config._replace(mode_init="random")
    assert not np.any(dagp.initial_q_means(jax.random.PRNGKey(0), random_start, Z, y))


def test_trimmed_fits_peel_one_curve_per_mode():
    """The forward search (inference.applications.trimmed) on 30 + 30 points of two curves >= 2.5 apart (10 noise sd):
    the first
    peeled half is exactly one curve. A random half has 30 of one curve with probability ~1e-17; a search from a random
    half (no forward growth) ended on one curve in 1 of 12 measured cases, a subset mixing the curves."""
    x = jax.random.uniform(jax.random.PRNGKey(0), (60,), minval=-3.0, maxval=3.0)
    label = np.arange(60) % 2
    y = np.asarray(
        jnp.where(label == 1, curve_b(x), curve_a(x)) + 0.25 * jax.random.normal(jax.random.PRNGKey(1), (60,))
    )
    peeled = trimmed.peel(jax.random.PRNGKey(0), np.asarray(x)[:, None], (y - y.mean()) / y.std(), 2)
    assert np.bincount(peeled).tolist() == [30, 30]
    assert len(set(label[peeled == 0])) == 1, label[peeled == 0]


def test_labelled_start_puts_each_point_on_its_mode():
    """Assignment logits from labels (e.g. ``trimmed.peel``'s), passed as the svi engine's init_params, start at
    +-TRIMMED_LOGIT on the labelled modes; the result records the family's options (three modes here)."""
    X, y = two_curves(jax.random.PRNGKey(3), 30)
    labels = np.arange(30) % 3
    init = {"assignment_logits": dagp.assignment_logits_from_labels(labels, 3)}
    observed = {"X": X, "y": y, "Z": X[:4]}
    spec = zoo.get("dagp", num_modes=3)
    idata = inference.run(
        spec, observed, engine="svi", guide="model", num_steps=1, learning_rate=1e-6, init_params=init, num_samples=1
    )
    assert json.loads(idata.posterior.attrs["model_options"])["num_modes"] == 3
    assert idata.point_estimates["assignment_logits"].shape == (1, 30, 3)
    fit = dagp.fit_from(idata, dagp.config_of(spec))
    np.testing.assert_array_equal(np.argmax(fit.params["assignment_logits"], -1), labels)
    np.testing.assert_allclose(np.abs(fit.params["assignment_logits"]), dagp.TRIMMED_LOGIT, rtol=1e-3)


def test_deep_mode_is_the_dsvi_deep_gp():
    """K = 1 with a 2-layer mode: a^ = 1 and log softmax = 0, so DAGP's likelihood factor, at the same inducing values,
    hyperparameters and inner-layer noise, is the DSVI program's per-point term (its y density plus its trace
    correction): the deep mode is ``deep_gp.dsvi`` (eqs. 3.9-3.12)."""
    N, D, M = 7, 2, 3
    key = iter(jax.random.split(jax.random.PRNGKey(0), 8))
    X, y, Z = (jax.random.normal(next(key), shape) for shape in ((N, D), (N,), (M, D)))
    v1, v2, eps = (jax.random.normal(next(key), shape) for shape in ((D, M), (1, M), (N, D)))
    ls1, ls2 = jnp.array([0.8, 1.3]), jnp.array([1.1, 0.6])
    dagp_values = {
        "mode0_lengthscale_1": ls1,
        "mode0_variance_1": 0.7,
        "mode0_v_1": v1,
        "mode0_eps_1": eps,
        "lengthscale": ls2[None],
        "variance": jnp.array([1.4]),
        "v": v2,
        "noise": jnp.array([0.09]),
        "inducing_inputs": Z[None],
        "mode0_inducing_inputs_1": Z + 0.1,
    }
    config = dagp.dagp_config(1, depths=(2,))
    seeded = handlers.seed(handlers.substitute(partial(dagp.dagp_program, config=config), dagp_values), 1)
    factor = handlers.trace(seeded).get_trace(X, Z, y)["likelihood"]["fn"].log_factor
    dsvi_values = {
        "lengthscale_1": ls1,
        "variance_1": 0.7,
        "v_1": v1,
        "eps_1": eps,
        "lengthscale_2": ls2,
        "variance_2": 1.4,
        "v_2": v2,
        "noise": 0.09,
        "inducing_inputs_1": Z + 0.1,
        "inducing_inputs_2": Z,
    }
    trace = handlers.trace(handlers.seed(handlers.substitute(deep_gp.dsvi, dsvi_values), 1)).get_trace(X, Z, y)
    per_point = trace["y"]["fn"].log_prob(y) + trace["dsvi_trace"]["fn"].log_factor
    np.testing.assert_allclose(factor, per_point, rtol=1e-10)


def test_deep_prediction_is_the_mixture_of_its_draws():
    """A prediction with a draw axis (S, n, K) scores each mode as the mean density over draws; S equal draws give
    the Gaussian of the 2-D prediction, and two draws the average of their densities."""
    pred = dagp.DagpPrediction(
        jnp.array([[0.0, 1.0], [2.0, -1.0]]), jnp.full((2, 2), 0.3), jnp.array([0.1, 0.2]), jnp.full((2, 2), 0.5)
    )
    y = jnp.array([0.2, 1.5])
    stacked = pred._replace(mean=jnp.stack([pred.mean] * 3), f_var=jnp.stack([pred.f_var] * 3))
    np.testing.assert_allclose(dagp.mixture_log_density(stacked, y), dagp.mixture_log_density(pred, y), rtol=1e-12)
    shifted = pred._replace(mean=pred.mean + 0.7)
    two = pred._replace(mean=jnp.stack([pred.mean, shifted.mean]), f_var=jnp.stack([pred.f_var] * 2))
    average = 0.5 * (jnp.exp(dagp.mode_log_density(pred, y, 1)) + jnp.exp(dagp.mode_log_density(shifted, y, 1)))
    np.testing.assert_allclose(dagp.mode_log_density(two, y, 1), jnp.log(average), rtol=1e-12)


def test_concrete_sample_is_a_relaxed_one_hot():
    logits = jnp.array([[0.0, 1.0, -1.0]])
    g = dist.Gumbel(0.0, 1.0).sample(jax.random.PRNGKey(0), (20000, 1, 3))
    for temperature in (1.0, 0.1):
        a = dagp.concrete_sample(logits, g, temperature)
        np.testing.assert_allclose(a.sum(-1), 1.0, rtol=1e-12)
    # lambda -> 0 gives the Gumbel-max categorical: frequencies equal softmax(logits) within 5 binomial SEs.
    hard = jax.nn.one_hot(jnp.argmax(dagp.concrete_sample(logits, g, 1e-3), -1), 3).mean((0, 1))
    p = jax.nn.softmax(logits[0])
    assert np.all(np.abs(hard - p) < 5 * np.sqrt(p * (1 - p) / g.shape[0]))


@pytest.mark.slow  # ~15 s of compilation under load
def test_one_mode_dagp_is_svgp():
    """K = 1: a^ = 1 and log softmax = 0, so the DAGP bound is the SVGP bound minus KL(q(v_alpha)) (analytic), plus
    the MAP log prior. Trace_ELBO (v, v_alpha ~ q) matches within 5 Monte-Carlo standard errors."""
    data = choicenet(jax.random.PRNGKey(0), 30, 0.0)
    X, y = jnp.asarray(data.X), jnp.asarray(data.y)
    Z = jnp.asarray(sp.init_inducing(jax.random.PRNGKey(1), X, 5))
    config = dagp.dagp_config(1, temperature=0.3)
    M = Z.shape[0]
    q = sp.WhitenedQ(0.3 * jnp.arange(M) / M, 0.4 * jnp.eye(M))
    q_alpha = sp.WhitenedQ(jnp.full(M, 0.2), 0.7 * jnp.eye(M))
    kernel, noise = SquaredExponential(1.2, jnp.array([0.9])), 0.07
    params = {
        "lengthscale_map": kernel.lengthscale[None],
        "variance_map": jnp.array([1.2]),
        "alpha_lengthscale_map": jnp.ones((1, 1)),
        "alpha_variance_map": jnp.ones(1),
        "noise_map": jnp.array([noise]),
        "q_mean": q.mean[None],
        "q_scale_tril": q.scale_tril[None],
        "alpha_q_mean": q_alpha.mean[None],
        "alpha_q_scale_tril": q_alpha.scale_tril[None],
        "inducing_inputs": Z[None],
        "alpha_inducing_inputs": Z[None],
        "assignment_logits": jnp.zeros((30, 1)),
    }
    log_prior = dist.LogNormal(0.0, 1.0).log_prob(jnp.array([0.9, 1.2, 1.0, 1.0])).sum() + dist.LogNormal(
        -2.0, 1.0
    ).log_prob(noise)
    expected = sp.svgp_elbo(kernel, X, y, Z, q, noise) - sp.kl_whitened(q_alpha) + log_prior
    program, guide = partial(dagp.dagp_program, config=config), partial(dagp.dagp_guide, config=config)

    @jax.jit
    def draws(keys):
        return jax.vmap(lambda k: -Trace_ELBO().loss(k, params, program, guide, X=X, Z=Z, y=y, batch_size=10))(keys)

    d = np.asarray(draws(jax.random.split(jax.random.PRNGKey(2), 400)))
    assert abs(d.mean() - expected) < 5 * d.std() / np.sqrt(d.size), (d.mean(), expected)


def test_program_prior_predictive_and_registration():
    spec = zoo.get("dagp")
    ds = spec.simulate(jax.random.PRNGKey(0), n=40, m=5)
    obs = {k: jnp.asarray(v) for k, v in ds.observed.items()}
    with handlers.seed(rng_seed=0):
        tr = handlers.trace(spec.program).get_trace(X=obs["X"], Z=obs["Z"], y=None)
    assert tr["y"]["value"].shape == (40,) and np.all(np.isfinite(tr["y"]["value"]))
    with pytest.raises(OptionError, match="num_modes"), handlers.seed(rng_seed=0):
        dagp.dagp_exact(obs["X"], obs["y"], num_modes=0)


def test_dagp_separates_outliers_quick():
    """20 % ChoiceNet outliers, N = 60, M = 6: q(a_n) recovers the labels and the signal mode fits the clean
    function (a coarse version of Table 3.2; the full run is paper_figures/kaiser_dagp_noise_separation.py)."""
    data = choicenet(jax.random.PRNGKey(0), 60, 0.2)
    Z = sp.init_inducing(jax.random.PRNGKey(1), data.X, 6)
    spec = zoo.get("dagp", **dagp.options_of(dagp.NOISE_SEPARATION))
    observed = {"X": data.X, "y": data.y, "Z": Z}
    idata = inference.run(
        spec,
        observed,
        engine="svi",
        seed=2,
        guide="model",
        num_steps=250,
        learning_rate=0.03,
        final_lr_fraction=0.05,
        num_samples=1,
    )
    fit = dagp.fit_from(idata, dagp.NOISE_SEPARATION)
    assigned_outlier = np.asarray(dagp.training_assignments(fit))[:, 1] > 0.5
    assert np.mean(assigned_outlier == data.labels) > 0.9
    X_test, f_test = choicenet_test(100)
    pred = dagp.predict(fit, X_test, jax.random.PRNGKey(3))
    rmse = float(jnp.sqrt(jnp.mean((pred.mean[:, 0] - f_test) ** 2)))
    assert rmse < 0.1, rmse
    assert math.isfinite(float(dagp.mixture_log_density(pred, f_test).mean()))


# ----------------------------------------------------------------------------------------------------------------
# NUTS on dagp/exact vs SVI on dagp, and label switching across NUTS chains


def curve_a(x):
    return 2.0 + 0.6 * jnp.sin(1.5 * x)


def curve_b(x):
    return -2.0 + 0.3 * x


def two_curves(key, n: int, noise_std: float = 0.25):
    """x ~ U[-3, 3]; each point from curve A = 2 + 0.6 sin(1.5 x) or B = -2 + 0.3 x with probability 1/2, plus
    N(0, 0.25^2). The curves are >= 2.5 (10 noise sd) apart (they were 1.5 apart in the first measured run, where a
    NUTS chain found a "crossing" mode: a mode's f jumping between the curves needs a change of >= 2.5 between
    neighbouring inputs, ~0.15 apart at N = 40, which the SE prior makes implausible for lengthscales near 1), so
    the posterior is unimodal up to the mode labels."""
    k_x, k_label, k_noise = jax.random.split(key, 3)
    x = jax.random.uniform(k_x, (n,), minval=-3.0, maxval=3.0)
    label = jax.random.bernoulli(k_label, 0.5, (n,))
    f = jnp.where(label, curve_b(x), curve_a(x))
    return np.asarray(x)[:, None], np.asarray(f + noise_std * jax.random.normal(k_noise, (n,)))


EXACT_SITES = ("lengthscale", "variance", "alpha_lengthscale", "alpha_variance", "noise", "f_white", "alpha_white")


def nuts_exact(n: int, warmup: int, draws: int, max_doublings: int = 10, chains: int = 4, seed: int = 0):
    """NUTS on dagp/exact with overdispersed starts (init_radius 2 in the unconstrained space)."""
    X, y = two_curves(jax.random.PRNGKey(0), n)
    idata = inference.run(
        "dagp/exact",
        Dataset(observed={"X": X, "y": y}),
        engine="nuts",
        seed=seed,
        num_chains=chains,
        num_warmup=warmup,
        num_samples=draws,
        init_radius=2.0,
        max_num_doublings=max_doublings,
    )
    return X, y, idata


def exact_draws(idata) -> dict:
    """The dagp/exact sites, chains and draws flattened: (S, ...)."""
    post = idata.posterior
    return {k: jnp.asarray(post[k].values.reshape(-1, *post[k].shape[2:])) for k in EXACT_SITES}


def grid_densities(pred: dagp.DagpPrediction, y_grid) -> jax.Array:
    """p(y | x) = sum_k w_k N(y | mean_k, f_var_k + noise_k) on a y grid: pred (n, K) -> (n, G)."""
    var = (pred.f_var + pred.noise)[:, None, :]
    comp = jnp.exp(-0.5 * (y_grid[None, :, None] - pred.mean[:, None, :]) ** 2 / var) / jnp.sqrt(2 * jnp.pi * var)
    return jnp.sum(pred.weights[:, None, :] * comp, -1)


X_TEST = jnp.linspace(-2.5, 2.5, 7)[:, None]
Y_GRID = jnp.linspace(-4.0, 4.0, 321)
DY = float(Y_GRID[1] - Y_GRID[0])
NUTS_SETTINGS = {"n": 100, "warmup": 400, "draws": 200, "max_doublings": 8}
REFERENCE = Path(__file__).with_name("dagp_nuts_reference.json")
WRITE_REFERENCE = "ZOO_WRITE_DAGP_NUTS_REFERENCE"  # set to 1 with the slow tests to rewrite REFERENCE


def nuts_summary(n: int, warmup: int, draws: int, max_doublings: int) -> tuple[Any, np.ndarray, dict]:
    """NUTS on dagp/exact (two_curves data): the run, its per-draw predictive densities (C, D, 7, G) at X_TEST on
    Y_GRID, and the label-invariant summary that ``check_agreement`` compares SVI with:

    * ``p`` (7, G): the posterior predictive density; ``mc`` (7,): 1/2 int 3 mcse(y) dy, the Monte-Carlo envelope
      of p; ``allowance`` (7,): the median total variation between one draw's predictive and p;
    * ``sorted_mean``, ``sorted_sd``, ``sorted_mcse`` (7, 2): the sorted mode means' posterior mean, sd and MCSE.
    """
    X, _, idata = nuts_exact(n, warmup, draws, max_doublings=max_doublings)
    chains, num = idata.posterior.sizes["chain"], idata.posterior.sizes["draw"]
    stats = idata.sample_stats
    print("per chain: sorted noise sd", np.sort(np.sqrt(idata.posterior["noise"].values), -1).mean(1).round(3))
    print("per chain: mean leapfrogs", stats["n_steps"].values.mean(1), "divergences", stats["diverging"].values.sum(1))
    preds = dagp.exact_predict(exact_draws(idata), X, X_TEST, jax.random.PRNGKey(5), 16)
    dens = np.asarray(jax.vmap(grid_densities, (0, None))(preds, Y_GRID)).reshape(chains, num, len(X_TEST), -1)
    sorted_ = np.sort(np.asarray(preds.mean), -1).reshape(chains, num, len(X_TEST), 2)
    p = dens.mean((0, 1))
    mcse = np.array([[az.mcse(dens[:, :, i, g]) for g in range(dens.shape[-1])] for i in range(dens.shape[2])])
    tv_draws = 0.5 * np.abs(dens - p).sum(-1) * DY  # (C, D, 7)
    summary = {
        "p": p,
        "mc": 0.5 * 3 * mcse.sum(-1) * DY,
        "allowance": np.median(tv_draws.reshape(-1, tv_draws.shape[-1]), 0),
        "sorted_mean": sorted_.mean((0, 1)),
        "sorted_sd": sorted_.std((0, 1)),
        "sorted_mcse": np.array([[az.mcse(sorted_[:, :, i, k]) for k in range(2)] for i in range(len(X_TEST))]),
    }
    return idata, dens, summary


def svi_predictive(n: int, svi_steps: int, m: int, restarts: int) -> tuple[np.ndarray, np.ndarray]:
    """SVI on dagp (K = 2 SE modes, the paper's objective, same priors as dagp/exact, modes started at the two y
    quartiles (mode_init="levels"), best of ``restarts``) on the same data: its predictive density (7, G) at X_TEST
    on Y_GRID and its sorted mode means (7, 2)."""
    X, y = two_curves(jax.random.PRNGKey(0), n)
    Z = sp.init_inducing(jax.random.PRNGKey(1), X, m)
    # Started from zero-mean modes, SVI ends in "crossing" optima (dagp.initial_q_means); level starts avoid them.
    config = dagp.dagp_config(2, mode_init="levels")
    idata = inference.run(
        zoo.get("dagp", **dagp.options_of(config)),
        {"X": X, "y": y, "Z": Z},
        engine="svi",
        seed=2,
        guide="model",
        restarts=restarts,
        num_steps=svi_steps,
        learning_rate=0.03,
        final_lr_fraction=0.05,
        num_samples=1,
    )
    fit = dagp.fit_from(idata, config)
    final = idata.point_estimates["final_elbo"].values if restarts > 1 else None
    print("SVI best final objective", final, "noise sd", np.sqrt(np.asarray(fit.params["noise_map"])))
    pred = dagp.predict(fit, X_TEST, jax.random.PRNGKey(3), num_samples=2000)
    return np.asarray(grid_densities(pred, Y_GRID)), np.sort(np.asarray(pred.mean), -1)


def check_agreement(summary: dict, density, sorted_means) -> dict:
    """Label-invariant agreement of a predictive (SVI's) with NUTS's ``summary`` (``nuts_summary``), per test x:

    * total variation TV(x) = 1/2 int |p_svi(y|x) - p_nuts(y|x)| dy of the predictive mixtures must stay below
      3 MCSE of the NUTS density (``mc``) plus an allowance: the *median TV of a single posterior draw's predictive*
      from the posterior predictive, measured on the same NUTS run. Rationale: SVI is a point estimate of the
      hyperparameters and assignments (plus a sparse q(f)), so it is one plausible member of the posterior;
      agreement means it is no further from the Bayesian predictive than a typical posterior draw is. (SVI also
      keeps its own f-variance, so it is usually closer.)
    * the sorted mode means at x: |svi - nuts| <= 4 MCSE + 2 posterior sd (SVI's mean inside the 95 % band).
    """
    return {
        "tv": 0.5 * np.abs(density - summary["p"]).sum(-1) * DY,
        "tv_bound": summary["mc"] + summary["allowance"],
        "mean_gap": np.abs(sorted_means - summary["sorted_mean"]),
        "mean_bound": 4 * summary["sorted_mcse"] + 2 * summary["sorted_sd"],
    }


def agrees(c: dict) -> bool:
    return bool(np.all(c["tv"] <= c["tv_bound"]) and np.all(c["mean_gap"] <= c["mean_bound"]))


def wrong_predictives() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Two failures the agreement check must reject (its power), as (density (7, G), sorted means (7, 2)): one
    broad mode covering both curves (both modes at the curves' midpoint with the two-curve mixture's variance; the
    optimum that a too loose noise prior gave in kaiser_dagp_noise_separation.py), and both modes on curve A
    (curve B's points unexplained)."""
    a, b = curve_a(X_TEST[:, 0]), curve_b(X_TEST[:, 0])
    half, noise = jnp.full((len(a), 2), 0.5), jnp.full(2, 0.25**2)
    cases = {
        "one broad mode": dagp.DagpPrediction(
            jnp.stack([(a + b) / 2] * 2, -1), jnp.stack([((a - b) / 2) ** 2] * 2, -1), noise, half
        ),
        "both modes on curve A": dagp.DagpPrediction(jnp.stack([a, a], -1), jnp.zeros((len(a), 2)), noise, half),
    }
    return {k: (np.asarray(grid_densities(v, Y_GRID)), np.sort(np.asarray(v.mean), -1)) for k, v in cases.items()}


def read_reference() -> dict:
    """The stored NUTS summary (``nuts_summary`` of NUTS_SETTINGS, written by the slow test with WRITE_REFERENCE)."""
    stored = json.loads(REFERENCE.read_text())
    assert stored["settings"] == NUTS_SETTINGS, "tests/dagp_nuts_reference.json was made with other settings"
    return {k: np.array(v) for k, v in stored["summary"].items()}


def check_label_switching(idata, dens) -> dict:
    """R-hat across chains of label-dependent quantities (mode 1's f at 5 training inputs) and of label-invariant
    ones (the sorted f's there, and the predictive density at both curves' values at the 7 test inputs)."""
    f = idata.posterior["f"].values[:, :, :, :5]  # (C, D, K, 5)
    labelled = np.array([az.rhat(f[:, :, 0, j]) for j in range(5)])
    sorted_f = np.sort(f, 2)
    invariant = [az.rhat(sorted_f[:, :, k, j]) for k in range(2) for j in range(5)]
    for i, x in enumerate(np.asarray(X_TEST[:, 0])):
        for curve in (float(curve_a(x)), float(curve_b(x))):
            invariant.append(az.rhat(dens[:, :, i, np.argmin(np.abs(np.asarray(Y_GRID) - curve))]))
    return {"labelled": labelled, "invariant": np.array(invariant), "chain_means": f[:, :, 0, 0].mean(1)}


@pytest.fixture(scope="module")
def exact_vs_svi():
    """One NUTS run (NUTS_SETTINGS: N = 100, 4 chains, 400 warmup + 200 draws, tree depth <= 8) and the best of 3
    SVI fits (M = 15, 6000 Adam steps each, level starts) shared by the slow checks below. N = 100 (50 points per
    curve) so that curve A's 0.6-amplitude wiggle is well identified against the 0.25 noise."""
    idata, dens, summary = nuts_summary(**NUTS_SETTINGS)
    if os.environ.get(WRITE_REFERENCE) == "1":
        rounded = {k: np.round(v, 6).tolist() for k, v in summary.items()}
        REFERENCE.write_text(json.dumps({"settings": NUTS_SETTINGS, "summary": rounded}) + "\n")
    density, sorted_means = svi_predictive(NUTS_SETTINGS["n"], svi_steps=6000, m=15, restarts=3)
    return {"idata": idata, "dens": dens, "summary": summary, "svi": (density, sorted_means)}


# Measured runs (the bounds in check_agreement / the label test were set before the first run and never changed).
# Earlier configurations failed for two reasons, each fixed at its cause:
# * NUTS not mixed: at N = 40 (120-160 warmup) a chain sat in a crossing mode or all chains took one labelling
#   (label-invariant R-hat 1.53-1.54); at N = 100 with tree depth <= 6 (200 warmup + 120 draws, quiet machine, 126 s)
#   every transition hit the depth limit (63 leapfrogs), one chain had not found the posterior (noise sds 0.25/0.42
#   against 0.25/0.28) and invariant R-hat reached 1.41. Depth <= 8 with 400 warmup: trees of 81-127 leapfrogs,
#   no divergences, invariant R-hat <= 1.006 (label test passed, 463 s). At N = 30 with 150 warmup, depth <= 6
#   (33 s), one chain's step size collapsed (85 divergences) and the rest hit the depth limit: the MCSE envelope
#   then made the bounds useless (sorted-mean bounds up to 4.9), so there is no quick NUTS run with power; the
#   quick test below checks SVI against this run's stored summary instead (written 2026-11-21 by the slow tests with
#   ZOO_WRITE_DAGP_NUTS_REFERENCE=1, 327 s on one core, all three passing). Its power, measured against that
#   summary: the two wrong predictives have TV 0.25-0.68 against bounds 0.14-0.18; of 3 SVI fits from zero-mean
#   modes (3000 steps), the one that separated the curves (noise sds 0.26/0.27) passes and the two crossing optima
#   (0.38/0.49, 0.46/0.59) fail (TV 0.24-0.55).
# * SVI in a local optimum: every fit from zero-mean modes (48 starts: 1500-6000 steps, lr 0.01-0.03, init spread
#   1-3, temperature 0.1/0.5, with/without the q(a) entropy) ended at objective -127 ... -260 with noise sds 0.3-1.2,
#   so the TV check failed (0.17-0.23 against bounds 0.14-0.18) while the sorted-mean check passed. Started from the
#   true labels (a diagnostic) SVI reaches -103.6 with noise sds 0.26/0.26; from y-quartile levels -103.3 ... -104.0.
@pytest.mark.slow
def test_nuts_exact_and_svi_agree_on_the_predictive_mixture(exact_vs_svi):
    """NUTS on dagp/exact and SVI on dagp agree on label-invariant quantities where the posterior is unimodal up to
    labels (well-separated curves): the predictive mixture densities and the sorted mode means (bounds in
    ``check_agreement``)."""
    c = check_agreement(exact_vs_svi["summary"], *exact_vs_svi["svi"])
    print({k: np.round(v, 3) for k, v in c.items()})
    assert agrees(c), c


@pytest.mark.slow
def test_stored_nuts_reference_is_reproduced(exact_vs_svi):
    """This NUTS run reproduces the stored summary the quick test uses: the two predictive densities are within
    their Monte-Carlo envelopes of each other (TV <= mc_fresh + mc_stored) and the sorted means within 4 joint
    MCSE. (Same seeds: identical on the machine that wrote it; elsewhere float differences change the chains.)"""
    fresh, stored = exact_vs_svi["summary"], read_reference()
    tv = 0.5 * np.abs(fresh["p"] - stored["p"]).sum(-1) * DY
    assert np.all(tv <= fresh["mc"] + stored["mc"]), (tv, fresh["mc"] + stored["mc"])
    joint_mcse = np.hypot(fresh["sorted_mcse"], stored["sorted_mcse"])
    assert np.all(np.abs(fresh["sorted_mean"] - stored["sorted_mean"]) <= 4 * joint_mcse)


@pytest.mark.slow
def test_label_switching_shows_in_rhat_across_chains(exact_vs_svi):
    """The two SE modes of dagp/exact have identical priors, so the posterior is symmetric under relabelling and
    overdispersed chains (init_radius 2) settle in different labellings: R-hat of mode 1's f > 1.1, while R-hat of
    label-invariant quantities (sorted f's, predictive densities) < 1.05. The chains pick their labelling from their
    random starts (no permuted starts needed: in the measured run the chains took both labellings)."""
    r = check_label_switching(exact_vs_svi["idata"], exact_vs_svi["dens"])
    print({k: np.round(v, 3) for k, v in r.items()})
    assert np.all(r["labelled"] > 1.1), r
    assert np.all(r["invariant"] < 1.05), r


def test_svi_agrees_with_the_stored_nuts_reference():
    """The quick variant of the slow agreement test: one SVI fit on the same data passes ``check_agreement``
    against the stored summary of the slow test's NUTS run on dagp/exact (reference draws computed offline, as
    posteriordb does; the slow test checks that a fresh run reproduces them), and the same check rejects the two
    wrong predictives of ``wrong_predictives``, so it can tell a fit that separated the curves from one that did
    not."""
    reference = read_reference()
    c = check_agreement(reference, *svi_predictive(NUTS_SETTINGS["n"], svi_steps=3000, m=15, restarts=1))
    print({k: np.round(v, 3) for k, v in c.items()})
    assert agrees(c), c
    for name, (density, sorted_means) in wrong_predictives().items():
        assert not agrees(check_agreement(reference, density, sorted_means)), name
