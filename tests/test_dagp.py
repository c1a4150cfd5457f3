"""DAGP (zoo/dagp.py): bad input, exact assignment marginalisation, K = 1 reduces to SVGP, outlier separation."""

import itertools
import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest
from numpyro import handlers
from numpyro.infer import Trace_ELBO
from numpyro.infer.util import log_density

import zoo
from zoo import dagp
from zoo import sparse as sp
from zoo.data.association import choicenet, choicenet_test
from zoo.errors import OptionError, ZooError
from zoo.kernels import SquaredExponential


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
    ],
)
def test_bad_options_raise(kwargs, match):
    with pytest.raises(OptionError, match=match):
        dagp.dagp_config(**kwargs)
    assert issubclass(OptionError, ZooError)


@pytest.mark.parametrize(
    "config, match",
    [
        (dagp.DagpConfig(kernels=()), "num_modes"),  # K = 0 built directly, past dagp_config
        (dagp.DagpConfig(temperature=0.0), "temperature"),
        (dagp.DagpConfig(temperature=-1.0), "temperature"),
        (dagp.DagpConfig(init_spread=-1.0), "init_spread"),
        ({"kernels": ("se", "se")}, "DagpConfig"),
    ],
)
def test_fit_rejects_bad_config_before_compiling(config, match):
    """dagp.fit re-validates a config that skipped dagp_config, before its training run is built or compiled."""
    X, y = np.linspace(-1.0, 1.0, 8)[:, None], np.zeros(8)
    built = dagp._training_run.cache_info().misses
    with pytest.raises(OptionError, match=match):
        dagp.fit(X, y, X[:3], config, jax.random.PRNGKey(0), steps=5)
    with pytest.raises(OptionError, match="steps"):
        dagp.fit(X, y, X[:3], dagp.dagp_config(2), jax.random.PRNGKey(0), steps=0)
    assert dagp._training_run.cache_info().misses == built


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
    log_pi = jax.nn.log_softmax(alpha, 0)  # (K, N)
    log_comp = dist.Normal(f, jnp.sqrt(sites["noise"])[:, None]).log_prob(y)  # (K, N)
    terms = [sum(log_pi[a, n] + log_comp[a, n] for n, a in enumerate(A)) for A in itertools.product(range(K), repeat=N)]
    np.testing.assert_allclose(logp - log_prior, jax.scipy.special.logsumexp(jnp.array(terms)), rtol=1e-12)


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
    fit = dagp.fit(data.X, data.y, Z, dagp.NOISE_SEPARATION, jax.random.PRNGKey(2), steps=250, lr=0.03)
    assigned_outlier = np.asarray(dagp.training_assignments(fit))[:, 1] > 0.5
    assert np.mean(assigned_outlier == data.labels) > 0.9
    X_test, f_test = choicenet_test(100)
    pred = dagp.predict(fit, X_test, jax.random.PRNGKey(3))
    rmse = float(jnp.sqrt(jnp.mean((pred.mean[:, 0] - f_test) ** 2)))
    assert rmse < 0.1, rmse
    assert math.isfinite(float(dagp.mixture_log_density(pred, f_test).mean()))
