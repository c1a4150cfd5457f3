"""Model options (zoo.get, the CLI, suites), the svi engine's minibatches, restarts and starts, and the ml2 engine."""

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer import Trace_ELBO

import inference
import zoo
import zoo_cli
from benchmarks import suites
from zoo import gp, regression
from zoo import sparse as sp
from zoo.errors import OptionError
from zoo.options import Option, validate

# ----------------------------------------------------------------------------------------------------------------
# Declared options


def test_options_coerce_strings_and_reject_bad_values():
    declared = {
        "count": Option("int", 2, "", minimum=1),
        "rate": Option("float", 0.5, "", minimum=0.0, maximum=1.0),
        "flag": Option("bool", False, ""),
        "kind": Option("str", "a", "", choices=("a", "b")),
        "sizes": Option("int", None, "", minimum=1, sequence=True, optional=True),
    }
    got = validate("m", declared, {"count": "3", "rate": "0.25", "flag": "yes", "kind": "b", "sizes": "1,2"})
    assert got == {"count": 3, "rate": 0.25, "flag": True, "kind": "b", "sizes": (1, 2)}
    assert validate("m", declared, {})["sizes"] is None
    for bad, match in (
        ({"count": 0}, "count must be an int >= 1, got 0"),
        ({"count": 2.5}, "count"),
        ({"count": True}, "count"),
        ({"rate": "nan"}, "rate"),
        ({"rate": 2}, r"rate must be a float in \[0, 1\], got 2"),
        ({"rate": -0.5}, "rate"),
        ({"flag": "maybe"}, "flag"),
        ({"kind": "c"}, r"kind must be a str in \{a, b\}"),
        ({"sizes": (1, 0)}, "sizes"),
        ({"cuont": 1}, "Did you mean 'count'"),
    ):
        with pytest.raises(OptionError, match=match):
            validate("m", declared, bad)


def test_fixed_models_take_no_options_and_families_list_theirs():
    with pytest.raises(OptionError, match="takes no options"):
        zoo.get("blr", n=3)
    assert set(zoo.registry.family_options("gp/svgp")) == {"num_inducing", "batch_size"}
    assert zoo.registry.family_options("blr") == {}
    assert zoo.get("gp/svgp", num_inducing=5).simulate(jax.random.PRNGKey(0), n=20).observed["Z"].shape == (5, 1)


@pytest.mark.parametrize("option", ["num_modes=0", "num_modes=two", "num_mode=3"])
def test_cli_bad_model_option_is_one_line_before_compiling(option, capsys):
    assert zoo_cli.main(["run", "dagp", "-m", option, "--engine", "svi"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("zoo: error:") and "\n" not in err and ("num_modes" in err), err


def test_suite_model_options_name_the_variant():
    text = """
[[models]]
name = "dagp"
model_options = { num_modes = 3, depths = [1, 2, 1] }
  [[models.engines]]
  engine = "svi"
"""
    (cell,) = suites.parse(text, "t").cells
    assert cell.model_options == {"num_modes": 3, "depths": [1, 2, 1]}
    assert cell.variant == "dagp+depths=1,2,1+num_modes=3" and cell.id == "dagp+depths=1,2,1+num_modes=3--svi--s0"
    assert cell.spec()["model_options"] == {"num_modes": 3, "depths": [1, 2, 1]}


# ----------------------------------------------------------------------------------------------------------------
# svi: minibatches


@pytest.fixture(scope="module")
def sparse_data():
    ds = zoo.get("gp/svgp").simulate(jax.random.PRNGKey(0), n=40, m=5)
    return {k: jnp.asarray(ds.observed[k]) for k in ("X", "y", "Z")}


def test_minibatch_elbo_gradient_averages_to_the_full_batch_gradient(sparse_data):
    """The gradient (w.r.t. every param of the guide and model) of the minibatch ELBO of gp/svgp with batch_size 8
    of 40, averaged over 4000 draws (indices and v ~ q), equals the full-batch ELBO's gradient averaged over the same
    number of v draws, each coordinate within 5 Monte-Carlo standard errors of the difference."""
    full, batched = zoo.get("gp/svgp"), zoo.get("gp/svgp", batch_size=8)
    M = sparse_data["Z"].shape[0]
    params = {
        "lengthscale_map": jnp.array([0.8]),
        "variance_map": jnp.array(1.2),
        "noise_map": jnp.array(0.1),
        "q_mean": 0.3 * jnp.ones(M),
        "q_scale_tril": 0.5 * jnp.eye(M),
        "inducing_inputs": sparse_data["Z"],
    }

    def gradients(spec, keys):
        def one(key):
            loss = lambda p: Trace_ELBO().loss(key, p, spec.program, spec.views["guide"], **sparse_data)  # noqa: E731
            flat, _ = jax.flatten_util.ravel_pytree(jax.grad(loss)(params))
            return flat

        return np.asarray(jax.jit(jax.vmap(one))(keys))

    keys = jax.random.split(jax.random.PRNGKey(1), 4000)
    g_batch, g_full = gradients(batched, keys), gradients(full, keys)
    diff = g_batch.mean(0) - g_full.mean(0)
    se = np.sqrt(g_batch.var(0) / len(keys) + g_full.var(0) / len(keys))
    assert np.all(np.abs(diff) < 5 * se + 1e-12), np.max(np.abs(diff) / (se + 1e-12))
    assert np.max(se) > 0  # the check has Monte-Carlo noise to be measured against


def test_minibatch_svgp_reaches_the_full_batch_optimum(sparse_data):
    """SVI on gp/svgp with minibatches of 10 of 40 and with the full batch (same steps, cosine-decayed Adam) end at
    the same optimum: their full-data ELBOs (analytic, Franzese eq. 8.19) agree within 0.5 nats and the learnt noise
    within 10 %. (Distinct optima of this bound differ by several nats; an unscaled minibatch, 4x too little data
    weight, ends with a noise variance off by far more.)"""

    def fit(spec):
        idata = inference.run(
            spec, sparse_data, engine="svi", guide="model", num_steps=3000, learning_rate=0.02, num_samples=1, seed=3
        )
        kernel, noise, Z, q = sp.svgp_from(idata.point_estimates.isel(chain=0))
        return float(sp.svgp_elbo(kernel, sparse_data["X"], sparse_data["y"], Z, q, noise)), float(noise)

    (elbo_full, noise_full), (elbo_batch, noise_batch) = fit(zoo.get("gp/svgp")), fit(zoo.get("gp/svgp", batch_size=10))
    assert abs(elbo_batch - elbo_full) < 0.5, (elbo_batch, elbo_full)
    assert abs(noise_batch / noise_full - 1) < 0.1, (noise_batch, noise_full)


# ----------------------------------------------------------------------------------------------------------------
# svi: restarts and starting values


@cache
def blr_data():
    """Simulated when a test first asks, not at collection (which every pytest worker repeats)."""
    return zoo.get("blr").simulate(jax.random.PRNGKey(0), n=30, d=2)


SVI_SHORT = {"engine": "svi", "guide": "normal", "num_steps": 30, "num_samples": 5, "learning_rate": 0.05}


def test_restarts_keep_the_fit_with_the_best_final_elbo():
    """restarts = 3 runs the same three fits as num_chains = 3 (same keys, one shared scoring key) and keeps the one
    whose many-sample final ELBO is highest."""
    each = inference.run("blr", blr_data(), seed=4, num_chains=3, score_particles=64, **SVI_SHORT)
    kept = inference.run("blr", blr_data(), seed=4, restarts=3, score_particles=64, **SVI_SHORT)
    scores = each.point_estimates["final_elbo"].values
    assert len(set(np.round(scores, 6))) == 3
    np.testing.assert_allclose(kept.point_estimates["final_elbo"].values, [scores.max()], rtol=1e-12)
    best = int(np.argmax(scores))
    np.testing.assert_allclose(kept.optimization["elbo"].values[0], each.optimization["elbo"].values[best])
    with pytest.raises(OptionError, match="restarts"):
        inference.run("blr", blr_data(), restarts=0, **SVI_SHORT)


def test_init_params_start_every_fit_where_asked():
    """init_params: a shared value or one per fit (leading axis num_chains x restarts); with a learning rate of
    1e-9 the fits end where they started. Unknown names and wrong shapes are OptionErrors before compiling."""
    tiny = {**SVI_SHORT, "learning_rate": 1e-9}
    starts = np.array([[0.5, -1.0], [2.0, 3.0]])
    idata = inference.run("blr", blr_data(), num_chains=2, init_params={"w_auto_loc": starts}, **tiny)
    np.testing.assert_allclose(idata.point_estimates["w"].values, starts, atol=1e-6)
    shared = inference.run("blr", blr_data(), num_chains=2, init_params={"w_auto_loc": starts[0]}, **tiny)
    np.testing.assert_allclose(shared.point_estimates["w"].values, starts[[0, 0]], atol=1e-6)
    with pytest.raises(OptionError, match="not a param site"):
        inference.run("blr", blr_data(), init_params={"w_loc": starts[0]}, **tiny)
    with pytest.raises(OptionError, match="shape"):
        inference.run("blr", blr_data(), num_chains=2, init_params={"w_auto_loc": np.zeros(3)}, **tiny)


# ----------------------------------------------------------------------------------------------------------------
# ml2


def test_ml2_maximises_the_exact_log_marginal_likelihood():
    """ml2 on gp/regression: L-BFGS and Adam reach the same optimum; the reported log-likelihood is the exact
    log N(y | 0, K + s2 I) (zoo.gp) at the estimates; and the optimum is a maximum of it (every +-1 % change of one
    hyperparameter lowers it)."""
    data = zoo.get("gp/regression").simulate(jax.random.PRNGKey(1), n=30)
    lbfgs = inference.run("gp/regression", data, engine="ml2", num_chains=2)
    adam = inference.run("gp/regression", data, engine="ml2", optimizer="adam", num_steps=3000, learning_rate=0.02)
    X, y = (jnp.asarray(data.observed[k]) for k in ("X", "y"))
    best = lbfgs.point_estimates.isel(chain=0)
    kernel, noise = regression.kernel_and_noise(best)
    exact = float(gp.log_marginal_likelihood(kernel, X, y, noise))
    np.testing.assert_allclose(lbfgs.point_estimates["log_likelihood"].values, exact, rtol=1e-9)
    np.testing.assert_allclose(adam.point_estimates["log_likelihood"].values, exact, atol=1e-5)
    for name in ("lengthscale", "variance", "noise"):
        for factor in (0.99, 1.01):
            moved = {k: best[k].values * (factor if k == name else 1.0) for k in ("lengthscale", "variance", "noise")}
            k_moved, n_moved = regression.kernel_and_noise(moved)
            assert float(gp.log_marginal_likelihood(k_moved, X, y, n_moved)) < exact
    map_fit = inference.run("gp/regression", data, engine="ml2", objective="map")
    total = map_fit.point_estimates["log_likelihood"] + map_fit.point_estimates["log_prior"]
    assert float(total[0]) >= exact + float(lbfgs.point_estimates["log_prior"][0]) - 1e-9


def test_ml2_bad_options_and_models():
    with pytest.raises(OptionError, match="optimizer"):
        inference.run("gp/regression", engine="ml2", optimizer="newton")
    with pytest.raises(OptionError, match="nothing to optimise"):
        inference.run("gp/regression", engine="ml2", params={"lengthscale": 1.0, "variance": 1.0, "noise": 0.1})
    with pytest.raises(zoo.errors.IncompatibleEngineError, match="collapsed"):
        inference.run("gp/regression-latent", engine="ml2")
