"""GP-SSMs and the moment-matching engines: reductions to Kalman, ADS = moment-matching EP, direct on random GP
systems, NUTS on the full and sparse kink models, metrics, bad input."""

import json
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import multivariate_normal

import inference
import zoo
from inference.applications import ar1
from inference.applications import gpssm_metrics as gm
from inference.core.program import observed_args
from inference.gaussian import kalman
from inference.gaussian import moment_matching as mm
from zoo import gpssm, lgssm, ssm
from zoo.data import ssm_systems
from zoo.errors import DataError

# Fixed kink hyperparameters for the E-step checks: signal sd 3 (the kink's range), lengthscale 1; the pseudo-targets
# are the (assumed) kink function at 15 pseudo-inputs spanning the visited states.
KINK_PSEUDO_INPUTS = np.linspace(-3.0, 6.0, 15)[:, None]
KINK_PARAMS = {
    "lengthscale": np.array([[1.0]]),
    "signal_var": np.array([9.0]),
    "process_var": np.array([ssm_systems.KINK_PROCESS_VAR]),
    "obs_var": np.array([ssm_systems.KINK_OBS_VAR]),
}
KINK_SPARSE_PARAMS = {**KINK_PARAMS, "pseudo_targets": np.asarray(ssm_systems.kink_function(KINK_PSEUDO_INPUTS.T))}


@pytest.fixture(scope="module")
def linear_problem():
    """lgssm data and a GP-SSM with linear mean A x, negligible kernel variance (1e-10) and the lgssm's noise."""
    data = zoo.get("lgssm").simulate(jax.random.key(0))
    observed = {**data.observed, "pseudo_inputs": data.observed["y"][0, :5]}
    spec = gpssm.sparse_gpssm_spec("test/linear-gpssm", lambda key: None, 2, mean="linear")
    dataset = spec.validate(observed)
    truth = lgssm.true_params(2, 2)
    params = {
        "mean_A": truth["A"],
        "mean_b": np.zeros(2),
        "signal_var": np.full(2, 1e-10),
        "lengthscale": np.ones((2, 2)),
        "process_var": truth["process_var"],
        "obs_var": truth["obs_var"],
        "pseudo_targets": (observed["pseudo_inputs"] @ truth["A"].T).T,
    }
    kview = zoo.get("lgssm").views["state_space"]
    obs = observed_args(dataset)
    forward, smoothed = jax.vmap(kalman.kalman_smoother, in_axes=(None, 0, 0, 0))(
        kview.linear_gaussian(ssm.bind(kview, truth, obs)), *ssm.trajectories(obs)
    )
    return spec, dataset, params, forward, smoothed


def test_direct_and_ads_reduce_to_kalman(linear_problem):
    """With a linear mean and kernel variance 1e-10 the GP-ADF time update is the Kalman prediction up to O(1e-10)."""
    spec, dataset, params, k_forward, k_smoothed = linear_problem
    smooth = jax.jit(lambda p, o: mm.smooth_all(spec.views["gp_ssm"], p, o, "rts"))
    forward, smoothed = smooth(params, observed_args(dataset))
    np.testing.assert_allclose(forward.log_lik, k_forward.log_lik, rtol=1e-8)  # the direct method's objective
    np.testing.assert_allclose(smoothed.mean, k_smoothed.mean, atol=1e-8)
    np.testing.assert_allclose(smoothed.cov, k_smoothed.cov, atol=1e-8)
    np.testing.assert_allclose(smoothed.cross, k_smoothed.cross, atol=1e-8)
    idata = inference.run(spec, dataset, engine="ads", params=params, num_samples=10)
    np.testing.assert_allclose(idata.posterior.attrs["log_evidence"], np.sum(k_forward.log_lik), rtol=1e-8)
    np.testing.assert_allclose(idata.point_estimates["states_mean"].values[0], k_smoothed.mean, atol=1e-8)


@pytest.fixture(scope="module")
def kink_problem():
    data = ssm_systems.kink(jax.random.key(5), num_train=4, num_test=4, ragged=True)
    spec = gpssm.sparse_gpssm_spec("test/kink-sparse", lambda key: None, 1)
    dataset = spec.validate({**data.observed, "pseudo_inputs": KINK_PSEUDO_INPUTS})
    return spec, dataset, data


def test_ads_and_moment_matching_ep_agree(kink_problem):
    """A-EP (explicit beta messages, W by autodiff) equals ADS (J = C Sigma^-1) on the nonlinear kink (3.155-3.161)."""
    spec, dataset, _ = kink_problem
    observed = observed_args(dataset)
    both = jax.jit(
        lambda p, o: (
            mm.smooth_all(spec.views["gp_ssm"], p, o, "rts")[1],
            mm.smooth_all(spec.views["gp_ssm"], p, o, "ep")[1],
        )
    )
    ads, (ep_mean, ep_cov) = both(KINK_SPARSE_PARAMS, observed)
    assert float(jnp.max(jnp.abs(ads.mean - ep_mean))) < 1e-10
    assert float(jnp.max(jnp.abs(ads.cov - ep_cov))) < 1e-10


def _direct_on_random_system(D: int):
    # the thesis protocol: 20 training trajectories of 20 steps (docs/sources/mchutchon.md#protocol); 10 pseudo-points
    # as in Fig 3.14
    simulate = partial(ssm_systems.random_gp_system, state_dim=D, num_train=20, num_test=10)
    spec = gpssm.sparse_gpssm_spec(f"test/random-{D}", simulate, D, num_pseudo=10)
    dataset = ar1.with_pseudo_inputs(spec, spec.simulate(jax.random.key(D)))
    idata = inference.run(spec, dataset, engine="direct", num_steps=100, num_samples=10)
    pe = idata.point_estimates
    learnt = np.sqrt(pe["process_var"].values[0] + pe["obs_var"].values[0])
    error = gm.noise_percent_error(learnt, ssm_systems.total_noise_std(dataset.truth))
    trace = idata.optimization["adf_log_lik"].values[0]
    names = ("lengthscale", "signal_var", "process_var", "obs_var", "pseudo_targets")
    params = {k: jnp.asarray(pe[k].values[0]) for k in names}
    g = ssm.bind(spec.views["state_space"], params, observed_args(dataset))["gpssm"]
    truth, test = dataset.truth, dataset.test
    nlp_direct = gm.one_step_nlp(gm.gpssm_predict(g), truth["test_states"], test["lengths"], None, truth["obs_var"])
    fit = ar1.fit_ar1_gp(dataset.observed)

    def ar1_dynamics(x, u):
        mean, var = gpssm.ar1_gp_predict(fit, dataset.observed, jnp.concatenate([x, u])[None])
        return mean[0], jnp.diag(var[0])

    nlp_ar1 = gm.one_step_nlp(ar1_dynamics, truth["test_states"], test["lengths"], None, truth["obs_var"])
    print(f"D={D}: noise error % {np.round(error, 1)}, one-step NLP direct {nlp_direct:.3f} vs AR1-GP {nlp_ar1:.3f}")
    return error, nlp_direct, nlp_ar1, trace


@pytest.mark.slow  # 1-4 min each on 2 cores (AR1-GP fits, Titsias selection, L-BFGS compile); quick variant below
@pytest.mark.parametrize("D", [1, 2, 4])
def test_direct_recovers_noise_and_beats_ar1_gp(D):
    error, nlp_direct, nlp_ar1, trace = _direct_on_random_system(D)
    assert trace[-1] > trace[0]  # the ADF log-likelihood increased
    assert np.all(np.abs(error) < 20.0)
    assert nlp_direct < nlp_ar1


AR1_REFERENCE = json.loads((Path(__file__).parent / "ar1_fit_reference.json").read_text())
SMALL_KINK = gpssm.sparse_gpssm_spec(
    "test/kink-small", partial(ssm_systems.kink, num_train=3, num_test=2), 1, num_pseudo=5
)


@pytest.fixture(scope="module")
def kink_data():
    """The data the AR1-GP reference numbers were recorded on."""
    return ssm_systems.kink(jax.random.key(0))


@pytest.mark.parametrize("mean", ["zero", "identity", "linear"])
def test_ar1_gp_through_ml2_reproduces_the_old_adam_fit(kink_data, mean):
    """The AR1-GP (M13) as gp/regression under ml2 (Adam, lr 0.05, 150 steps, from [var(r), var(r) / 10,
    std(X, 0) + 1e-3]) equals the numbers recorded from the former in-zoo Adam loop: same arithmetic, except that
    gp/regression no longer adds 1e-6 x mean-diagonal jitter where K + noise I factorises (zoo.gp.cholesky_with_jitter):
    the noise variance absorbs the removed jitter (measured: up to 1.5e-5 relative), the others move less (2.3e-6)."""
    fit = ar1.fit_ar1_gp(kink_data.observed, mean)
    for name, expected in AR1_REFERENCE["fits"][mean].items():
        rtol = 5e-5 if name == "noise_var" else 1e-5
        np.testing.assert_allclose(getattr(fit, name), expected, rtol=rtol, atol=1e-12, err_msg=name)


def test_simulate_selects_no_pseudo_inputs_but_engines_get_them(kink_data):
    """Pseudo-inputs are an explicit step (inference.applications.ar1): ``simulate`` returns trajectories only;
    ``prepare`` adds the greedy Titsias selection (the recorded one) by the model's rule and leaves given
    pseudo-inputs alone (that ``inference.run`` prepares simulated data and an engine runs on them: the next test,
    slow)."""
    spec = zoo.get("gpssm/sparse")
    assert spec.views["pseudo_inputs"] == gpssm.PseudoInputRule(20, "zero")
    assert "pseudo_inputs" not in spec.simulate(jax.random.key(0)).observed
    prepared = ar1.prepare(spec, kink_data)
    # the selection is recorded; the values it picks come out of an AR1-GP fit, equal up to another CPU's rounding
    recorded = AR1_REFERENCE["pseudo_inputs_zero_20"]
    np.testing.assert_allclose(prepared.observed["pseudo_inputs"], recorded, rtol=1e-12)
    np.testing.assert_array_equal(prepared.test["pseudo_inputs"], prepared.observed["pseudo_inputs"])
    assert ar1.prepare(spec, prepared) is prepared
    with pytest.raises(DataError, match="lengths"):
        ar1.prepare(spec, {"y": kink_data.observed["y"]})
    assert zoo.get("gpssm/sparse", num_pseudo=5).views["pseudo_inputs"].num_pseudo == 5


@pytest.mark.slow  # an AR1-GP fit and the direct program for its own sizes: ~20 s cold; prepare is checked above
def test_run_gives_simulated_data_their_pseudo_inputs():
    """``inference.run`` on simulated data (data=None) prepares them: the engine sees the model's pseudo-inputs."""
    idata = inference.run(SMALL_KINK, engine="direct", num_steps=2, num_samples=2)
    assert idata.point_estimates["pseudo_targets"].shape == (1, 1, 5)


def test_direct_maximises_the_exact_likelihood_on_a_linear_system(linear_problem):
    """Quick variant: on the linear problem the ADF objective is the exact Kalman log-likelihood, so the noise variances
    ``direct`` learns (from the AR1-GP initialisation) must score at least the true ones under the Kalman filter."""
    spec, dataset, params, k_forward, _ = linear_problem
    fixed = {k: v for k, v in params.items() if k not in ("process_var", "obs_var")}
    idata = inference.run(spec, dataset, engine="direct", params=fixed, num_steps=30, num_samples=5)
    assert np.all(np.diff(idata.optimization["adf_log_lik"].values[0]) > -1e-8)
    assert idata.posterior.attrs["log_evidence"] >= float(np.sum(k_forward.log_lik)) - 1e-8


def _gaussian_marginals(draws):
    """Per-step Gaussian moments of posterior draws (S, T, D) -> mean (T, D), cov (T, D, D)."""
    mean = draws.mean(0)
    centred = draws - mean
    return mean, jnp.einsum("std,ste->tde", centred, centred) / (draws.shape[0] - 1)


@pytest.mark.slow  # ~40 s unloaded (two NUTS runs); the E-step checks above are the quick variants
def test_nuts_gold_standard_on_full_and_sparse_kink(kink_problem):
    """NUTS with hyperparameters fixed on one 20-step kink trajectory; log density of the true latents (per point,
    under per-step Gaussian fits of the draws) reported next to ADS's."""
    _, _, data = kink_problem
    single = {"y": data.observed["y"][:1], "lengths": data.observed["lengths"][:1]}
    truth = data.truth["states"][:1]
    results = {}
    for name, params in (("gpssm/full", KINK_PARAMS), ("gpssm/sparse", KINK_SPARSE_PARAMS)):
        spec = zoo.get(name)
        observed = single if name == "gpssm/full" else {**single, "pseudo_inputs": KINK_PSEUDO_INPUTS}
        idata = inference.run(
            spec, observed, engine="nuts", params=params, num_chains=2, num_warmup=300, num_samples=300
        )
        draws = idata.posterior[ssm.STATES].values.reshape(-1, *truth.shape)[:, 0]
        rhat = float(inference.results.diagnostics.az.rhat(idata, var_names=[ssm.STATES])[ssm.STATES].max())
        assert rhat < 1.05
        mean, cov = _gaussian_marginals(jnp.asarray(draws))
        results[name] = gm.latent_log_density(truth, mean[None], cov[None], single["lengths"])
    ads_spec = zoo.get("gpssm/sparse")
    ads = inference.run(
        ads_spec, {**single, "pseudo_inputs": KINK_PSEUDO_INPUTS}, engine="ads", params=KINK_SPARSE_PARAMS
    )
    pe = ads.point_estimates
    results["ads"] = gm.latent_log_density(truth, pe["states_mean"].values[0], pe["states_cov"].values[0], [20])
    print("log density of the true latents per point:", {k: round(v, 3) for k, v in results.items()})
    assert all(np.isfinite(v) for v in results.values())


def test_metrics_match_direct_formulas():
    rng = np.random.default_rng(0)
    states = rng.normal(size=(2, 4, 2))
    obs_var = np.array([0.1, 0.2])

    def predict(x, u):
        return 0.5 * x, jnp.diag(jnp.array([0.3, 0.4]))

    nlp = gm.one_step_nlp(predict, states, np.array([4.0, 3.0]), None, obs_var)
    pairs = [(states[k, t - 1], states[k, t]) for k, n in ((0, 4), (1, 3)) for t in range(1, n)]
    cov = np.diag([0.3, 0.4]) + np.diag(obs_var)
    expected = -np.mean([multivariate_normal(0.5 * a, cov).logpdf(b) for a, b in pairs])
    np.testing.assert_allclose(nlp, expected, rtol=1e-12)
    assert gm.ranks({"a": np.array([1.0, 3.0]), "b": np.array([2.0, 2.0])}) == {"a": 1.5, "b": 1.5}
    np.testing.assert_allclose(gm.noise_percent_error([0.55], [0.5]), [10.0])
    lp = gm.latent_log_density(states, np.zeros_like(states), np.broadcast_to(np.eye(2), (2, 4, 2, 2)), [4, 4])
    np.testing.assert_allclose(lp, np.mean(-0.5 * states**2 - 0.5 * np.log(2 * np.pi)), rtol=1e-12)


def test_gpssm_bad_input():
    spec = zoo.get("gpssm/sparse-cartpole")
    good = {
        "y": np.zeros((2, 5, 4)),
        "lengths": np.array([5.0, 3.0]),
        "u": np.zeros((2, 5, 1)),
        "pseudo_inputs": np.zeros((3, 5)),
    }
    spec.validate(good)
    with pytest.raises(DataError, match="controls u have 2 dimensions"):
        spec.validate({**good, "u": np.zeros((2, 5, 2))})
    with pytest.raises(DataError, match="length 0"):
        spec.validate({**good, "lengths": np.array([5.0, 0.0])})
    bad = good["y"].copy()
    bad[0, 1, 2] = np.nan
    with pytest.raises(DataError, match="NaN"):
        spec.validate({**good, "y": bad})
    with pytest.raises(DataError, match="pseudo_inputs"):
        spec.validate({**good, "pseudo_inputs": np.zeros((3, 4))})


def test_analytic_m_step_closed_forms_are_stationary(kink_problem):
    """dQ/dbeta = 0 at the closed-form beta (3.194-3.198); d/dsigma_nu^2 of the observation term = 0 at 3.200."""
    spec, dataset, _ = kink_problem
    observed = observed_args(dataset)
    gp_view = spec.views["gp_ssm"]

    @jax.jit
    def gradients(params, observed):
        _, smoothed = mm.smooth_all(gp_view, params, observed, "rts")
        y, mask, u = ssm.trajectories(observed)
        theta = ssm.bind(gp_view.state_space, params, observed)
        g, predictor, mean_fn = theta["gpssm"], theta["predictor"], theta["mean_fn"]

        def q_of_beta(beta):
            per = jax.vmap(mm.transition_q, in_axes=(None, None, None, 0, 0, 0))
            return jnp.sum(per(g, predictor._replace(beta=beta), mean_fn, smoothed, u, mask))

        beta = mm.optimal_beta(q_of_beta, predictor.beta.shape)
        obs_var = mm.closed_form_obs_var(smoothed, y, mask)

        def obs_term(v):  # -E[log p(y_t | x_t)] (3.199), C = I
            sq = (y - smoothed.mean) ** 2 + jnp.diagonal(smoothed.cov, axis1=-2, axis2=-1)
            return jnp.sum(jnp.where(mask[..., None], 0.5 * sq / v + 0.5 * jnp.log(2 * jnp.pi * v), 0.0))

        scale = jnp.abs(jax.grad(q_of_beta)(jnp.zeros_like(beta))).max()
        return jax.grad(q_of_beta)(beta) / scale, jax.grad(obs_term)(obs_var) * obs_var

    grad_beta, grad_obs = gradients(KINK_SPARSE_PARAMS, observed)
    assert float(jnp.abs(grad_beta).max()) < 1e-6
    assert float(jnp.abs(grad_obs).max()) < 1e-10


@pytest.mark.slow  # compiles nested L-BFGS inside the EM scan; the stationarity test above is the quick variant
def test_analytic_em_runs_and_learns_noise(kink_problem):
    spec, dataset, _ = kink_problem
    idata = inference.run(spec, dataset, engine="analytic-em", num_steps=3, m_step_steps=5, num_samples=10)
    traces = idata.optimization
    assert np.all(np.isfinite(traces["adf_log_lik"].values)) and np.all(np.isfinite(traces["q"].values))
    assert idata.point_estimates["obs_var"].values[0, 0] > 0
    print("analytic-em ADF log-lik per iteration", traces["adf_log_lik"].values[0])


@pytest.mark.slow  # ~30 s unloaded: SVI compiles two scans (model and guide)
def test_variational_gpssm_svi_with_the_model_guide(kink_problem):
    """M11 by SVI with the model's Markov-Gaussian guide (guide="model"): the ELBO improves and stays finite."""
    _, _, data = kink_problem
    observed = {
        "y": data.observed["y"][:2],
        "lengths": data.observed["lengths"][:2],
        "pseudo_inputs": KINK_PSEUDO_INPUTS,
    }
    idata = inference.run("gpssm/variational", observed, engine="svi", guide="model", num_steps=300, num_samples=20)
    elbo = idata.optimization["elbo"].values[0]
    assert np.all(np.isfinite(elbo))
    assert elbo[-50:].mean() > elbo[:50].mean()
    assert idata.posterior[ssm.STATES].shape[-3:] == (2, 20, 1)


def test_multi_step_simulation_reduces_to_linear_prediction(linear_problem):
    """Moment-matching simulation with a linear mean and negligible kernel variance is the Kalman prediction from a
    known state: m_t = A m_{t-1}, P_t = A P_{t-1} A^T + Q; scores are eq. 3.75 of those beliefs."""
    spec, dataset, params, _, _ = linear_problem
    g = jax.jit(lambda p, o: ssm.bind(spec.views["state_space"], p, o)["gpssm"])(params, observed_args(dataset))
    truth = lgssm.true_params(2, 2)
    A, Q = truth["A"], np.diag(truth["process_var"])
    x1 = np.array([1.0, -0.5])
    mean, cov = gm.simulate_gpssm(g, jnp.asarray(x1), jnp.zeros((6, 0)), 6)
    m, P = x1, np.zeros((2, 2))
    for t in range(1, 6):
        m, P = A @ m, A @ P @ A.T + Q
        np.testing.assert_allclose(mean[t], m, atol=1e-8)
        np.testing.assert_allclose(cov[t], P, atol=1e-8)
    states = np.stack([np.stack([x1 * (k + 1)] * 6) for k in range(2)])  # (2, 6, 2)
    scores = gm.multi_step_scores(g, states, np.array([6.0, 4.0]), None, truth["obs_var"])
    m, P, expected = states[1, 0], np.zeros((2, 2)), []
    for t in range(1, 4):
        m, P = A @ m, A @ P @ A.T + Q
        expected.append(-multivariate_normal(m, P + np.diag(truth["obs_var"])).logpdf(states[1, t]))
    np.testing.assert_allclose(scores[1], np.mean(expected), rtol=1e-6)
    assert gm.ranks({"model": scores, "worse": scores + 1.0}) == {"model": 1.0, "worse": 2.0}
