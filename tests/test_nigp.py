"""NIGP (zoo/nigp.py, engine inference/optimisation/nigp.py) against autodiff, the plain GP, finite differences and the
recorded
outputs of the former ``zoo.nigp.fit``; the gp/eiv program under the engines."""

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from jax.scipy.linalg import cho_solve
from jax.test_util import check_grads
from numpyro.infer.util import log_density

import inference
import zoo
from zoo import gp, nigp
from zoo.errors import DataError, OptionError

REFERENCE = json.loads((Path(__file__).parent / "nigp_fit_reference.json").read_text())["cases"]

PARAMS = nigp.NIGPParams(jnp.array([0.9, 1.4]), jnp.asarray(1.2), jnp.asarray(0.05), jnp.array([0.04, 0.09]))


def fixture_data():
    k = jax.random.split(jax.random.PRNGKey(0), 2)
    X = jax.random.uniform(k[0], (25, 2), minval=-3.0, maxval=3.0)
    y = jnp.sin(X[:, 0]) * jnp.cos(0.5 * X[:, 1]) + 0.1 * jax.random.normal(k[1], (25,))
    return X, y


@pytest.fixture(scope="module")
def data():
    return fixture_data()


def train(X, y, **options):
    """The nigp engine on gp/nigp: (NIGPParams, Sigma~ (N,)) and the InferenceData."""
    idata = inference.run("gp/nigp", {"X": X, "y": y}, engine="nigp", **options)
    return nigp.params_from(idata.point_estimates), idata


def test_slopes_match_autodiff_of_the_slope_gp(data):
    """dfbar = d m(x)/dx and V[df]_dd = d^2 c(x, x')/dx_d dx'_d at x = x' (McHutchon 2.85-2.86, 2.104)."""
    X, y = data
    kern = PARAMS.kernel
    L_s = gp.cholesky(kern(X) + PARAMS.noise * jnp.eye(25))
    beta = cho_solve((L_s, True), y)
    X_at = jnp.array([[0.3, -1.0], [2.0, 0.5], [-2.5, 2.5]])
    dfbar, slope_var = nigp.slope_moments(PARAMS, X, L_s, beta, X_at)

    def mean(x):
        return kern(X, x[None])[:, 0] @ beta

    def cov(x1, x2):
        k1, k2 = kern(X, x1[None])[:, 0], kern(X, x2[None])[:, 0]
        return kern(x1[None], x2[None])[0, 0] - k1 @ cho_solve((L_s, True), k2)

    grad_mean = jax.jit(jax.grad(mean))
    cross_hessian = jax.jit(jax.jacfwd(jax.grad(cov, argnums=0), argnums=1))
    for j, x in enumerate(X_at):
        np.testing.assert_allclose(dfbar[j], grad_mean(x), rtol=1e-10, atol=1e-12)
        hessian = cross_hessian(x, x)
        np.testing.assert_allclose(slope_var[j], jnp.diagonal(hessian), rtol=1e-8, atol=1e-10)


def test_zero_input_noise_is_plain_gp(data):
    X, y = data
    params = PARAMS._replace(input_noise=jnp.zeros(2))
    # NIGP factorises K + s2 I with gp.cholesky's jitter, 1e-6 x mean diagonal; the exact evidence adds none.
    noise_eff = params.noise + gp.JITTER * (params.kernel.variance + params.noise)
    exact = gp.log_marginal_likelihood(params.kernel, X, y, noise_eff)
    for mode in nigp.MODES:
        np.testing.assert_allclose(nigp.log_likelihood(params, X, y, mode), exact, rtol=1e-12)


def test_nigp_covariance_is_the_dense_formula(data):
    """log N(y | 0, K + diag(Sigma~) + s2 I) with Sigma~ from the slopes, NIGPm and NIGPu (eqs. 2.75-2.78)."""
    X, y = data
    kern = PARAMS.kernel
    L_s = gp.cholesky(kern(X) + PARAMS.noise * jnp.eye(25))
    dfbar, slope_var = nigp.slope_moments(PARAMS, X, L_s, cho_solve((L_s, True), y), X)
    for mode, extra in (("nigpm", 0.0), ("nigpu", slope_var)):
        correction = jnp.sum((dfbar**2 + extra) * PARAMS.input_noise, -1)
        cov = gp.add_jitter(kern(X) + jnp.diag(correction + PARAMS.noise))
        ref = dist.MultivariateNormal(jnp.zeros(25), covariance_matrix=cov).log_prob(y)
        np.testing.assert_allclose(nigp.log_likelihood(PARAMS, X, y, mode), ref, rtol=1e-11)


@pytest.mark.parametrize("mode", ["nigpm", "nigpu"])
def test_gradients_chain_through_the_slopes(data, mode):
    """ML-II gradients (w.r.t. all log-hyperparameters, through the slope GP) match finite differences."""
    X, y = data

    def objective(log_ell, log_sf2, log_sn2, log_sin2):
        params = nigp.NIGPParams(*(jnp.exp(v) for v in (log_ell, log_sf2, log_sn2, log_sin2)))
        return nigp.log_likelihood(params, X, y, mode)

    args = tuple(jnp.log(jnp.asarray(v)) for v in PARAMS)
    check_grads(jax.jit(objective), args, order=1, modes=("rev",), eps=1e-5, atol=1e-5, rtol=1e-6)


def test_moment_prediction_without_input_noise_is_plain(data):
    X, y = data
    correction = jnp.full(25, 0.01)
    X_new = jnp.array([[0.1, 0.2], [-1.0, 2.0]])
    plain = nigp.predict(PARAMS, X, y, correction, X_new, "gp", "plain")
    moments = nigp.predict(PARAMS, X, y, correction, X_new, "gp", "moments")
    np.testing.assert_allclose(moments[0], plain[0], rtol=1e-10)
    np.testing.assert_allclose(moments[1], plain[1], rtol=1e-9)
    # With input noise the moment method integrates over x* ~ N(y*, Sigma_in): a larger variance here.
    noisy = nigp.predict(PARAMS, X, y, correction, X_new, "nigpm", "moments")
    assert np.all(noisy[1] > plain[1])


def test_eiv_program_log_density(data):
    X, y = data
    site = {"lengthscale": PARAMS.lengthscale, "variance": 1.2, "noise": 0.05, "input_noise": PARAMS.input_noise}
    Xin = X + 0.1
    logp, _ = log_density(zoo.get("gp/eiv").program, (), {"Yin": X, "Yout": y}, {**site, "Xin": Xin})
    ref = (
        dist.LogNormal(0.0, 1.0).log_prob(site["lengthscale"]).sum()
        + dist.LogNormal(0.0, 1.0).log_prob(1.2)
        + dist.LogNormal(-2.0, 1.5).log_prob(0.05)
        + dist.LogNormal(-2.0, 1.5).log_prob(site["input_noise"]).sum()
        + dist.Normal(0.0, nigp.INPUT_PRIOR_SCALE).log_prob(Xin).sum()
        + dist.Normal(Xin, jnp.sqrt(site["input_noise"])).log_prob(X).sum()
        # the program factorises K + s2 I with gp.cholesky's jitter (1e-6 x mean diagonal); the exact evidence adds none
        + gp.log_marginal_likelihood(PARAMS.kernel, Xin, y, 0.05 + gp.JITTER * (PARAMS.kernel.variance + 0.05))
    )
    np.testing.assert_allclose(logp, ref, rtol=1e-11)


def test_eiv_elbo_is_finite_with_an_autoguide():
    """Quick variant of the engine runs below: one Trace_ELBO evaluation of gp/eiv with a mean-field guide."""
    from numpyro.infer import SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoNormal

    ds = zoo.get("gp/eiv").simulate(jax.random.PRNGKey(1), n=12, n_test=5)
    program = zoo.get("gp/eiv").program
    svi = SVI(program, AutoNormal(program), numpyro.optim.Adam(0.01), Trace_ELBO())

    @jax.jit  # one program: the guide's initialisation op by op compiled some 270 small ones
    def loss(key):
        return svi.evaluate(svi.init(key, **ds.observed), **ds.observed)

    assert np.isfinite(float(loss(jax.random.PRNGKey(0))))


@pytest.mark.slow
def test_eiv_runs_under_svi():
    ds = zoo.get("gp/eiv").simulate(jax.random.PRNGKey(1), n=12, n_test=5)
    idata = inference.run("gp/eiv", ds, engine="svi", num_steps=50, num_samples=10)
    assert idata.posterior["Xin"].shape[-2:] == (12, 1)
    assert np.all(np.isfinite(idata.posterior["input_noise"].values))


@pytest.mark.slow
def test_eiv_runs_under_nuts():
    ds = zoo.get("gp/eiv").simulate(jax.random.PRNGKey(1), n=12, n_test=5)
    idata = inference.run("gp/eiv", ds, engine="nuts", num_warmup=200, num_samples=200, num_chains=1)
    assert np.all(np.isfinite(idata.posterior["Xin"].values))


@pytest.mark.slow
def test_nigp_recovers_square_wave_noise():
    """The E2.1 must-show (see paper_figures/mchutchon_square_wave.py): NIGP input noise within 10 % of 0.3,
    output noise near 0.05, while a plain GP inflates its output noise."""
    ds = nigp.simulate_square_wave(jax.random.PRNGKey(0))
    X, y = ds.observed["Yin"], ds.observed["Yout"]
    (gp_params, _), _ = train(X, y, mode="gp")
    (params, _), _ = train(X, y, mode="nigpm")
    assert abs(np.sqrt(params.input_noise[0]) / 0.3 - 1.0) < 0.1
    assert np.sqrt(gp_params.noise) > 2 * np.sqrt(params.noise)


def test_bad_input_raises():
    with pytest.raises(DataError, match="N=4"):
        train(jnp.zeros((5, 1)), jnp.zeros(4))
    with pytest.raises(DataError, match="NaN"):
        train(jnp.zeros((5, 1)), jnp.array([0.0, 1.0, jnp.nan, 0.0, 1.0]))
    with pytest.raises(zoo.errors.ZooError, match="mode"):
        train(jnp.zeros((5, 1)), jnp.zeros(5), mode="nigpx")


@pytest.mark.parametrize(
    "options, match",
    [
        ({"mode": "NIGPm"}, "option mode must be a str in"),
        ({"passes": 0}, "passes"),
        ({"passes": 1.5}, "passes"),
        ({"num_steps": 0}, "num_steps"),
        ({"init": {"noise": -1.0}}, "support"),
        ({"init": {"slope": 1.0}}, "unknown parameter"),
        ({"gtol": 1e-9}, "unknown option"),
        ({"params": {"noise": 0.1}, "init": {"noise": 0.2}}, "both fixed"),
        ({"params": {"lengthscale": 1.0, "variance": 1.0, "noise": 0.1, "input_noise": 0.1}}, "nothing is left"),
    ],
)
def test_bad_option_raises_before_compiling(options, match, monkeypatch):
    def no_compiling(*args, **kwargs):
        raise AssertionError("compiled before the options were checked")

    monkeypatch.setattr(inference.core.api.Timer, "call", no_compiling)
    with pytest.raises(OptionError, match=match):
        train(*fixture_data(), **options)


@pytest.mark.parametrize("case", REFERENCE, ids=lambda c: f"{c['data']}-{'-'.join(map(str, c['options'].values()))}")
def test_engine_reproduces_recorded_fit(case):
    """The engine runs the former ``zoo.nigp.fit`` optimisation: same start, optimiser, passes and numbers."""
    if case["data"] == "fixture":
        X, y = fixture_data()
    else:
        ds = nigp.simulate_square_wave(jax.random.PRNGKey(0))
        X, y = ds.observed["Yin"], ds.observed["Yout"]
    (params, correction), idata = train(X, y, **case["options"])
    # Recorded on another CPU: XLA's reductions follow the vector width, so the L-BFGS path differs in the last
    # bits and ends ~1e-9 apart; one step or pass fewer moves some site by >= 2e-6 (and the log of a site driven
    # to its bound, < 1e-8, by > 0.5), so rtol 1e-7 still tells the same run from another.
    for name, value in params._asdict().items():
        value, recorded = np.ravel(value), np.asarray(case[name])
        at_bound = recorded < 1e-8
        np.testing.assert_allclose(value[~at_bound], recorded[~at_bound], rtol=1e-7, err_msg=name)
        np.testing.assert_allclose(np.log(value[at_bound]), np.log(recorded[at_bound]), atol=1e-3, err_msg=name)
    np.testing.assert_allclose(correction, case["correction"], rtol=1e-7, atol=1e-14)
    # the point estimate as one posterior draw; the objective trace covers every pass and, in a single pass, ends at
    # eq. 2.78 at the optimum (later passes hold an earlier Sigma~ fixed, which the final point does not determine)
    assert idata.posterior["lengthscale"].shape == (1, 1, X.shape[1])
    passes = 1 if case["options"]["mode"] == "gp" else case["options"].get("passes", 2)
    assert set(idata.optimization["pass"].values[0]) == set(range(passes))
    if passes == 1:
        final = nigp.log_likelihood(params, jnp.asarray(X), jnp.asarray(y), case["options"]["mode"])
        np.testing.assert_allclose(idata.optimization["objective"].values[0][-1], final, rtol=1e-9)


def test_fixed_sites_are_held_and_reported(data):
    """params holds sites at their values. The plain GP's objective ignores the input noise, so fixing it changes
    nothing else; NIGPm with a fixed input noise learns the other sites around it."""
    X, y = data
    (free, _), _ = train(X, y, mode="gp")
    (held, _), _ = train(X, y, mode="gp", params={"input_noise": [0.3, 0.4]})
    np.testing.assert_allclose(held.input_noise, [0.3, 0.4], rtol=0)
    for name in ("lengthscale", "variance", "noise"):
        np.testing.assert_allclose(getattr(held, name), getattr(free, name), rtol=1e-10, err_msg=name)
    (nigpm, correction), idata = train(X, y, mode="nigpm", params={"input_noise": [0.01, 0.02]})
    np.testing.assert_allclose(nigpm.input_noise, [0.01, 0.02], rtol=0)
    assert idata.posterior["input_noise"].shape == (1, 1, 2) and np.all(np.asarray(correction) > 0)


def test_nigp_program_prior_predictive_and_factor(data):
    """gp/nigp: with y the log density is the priors + the first-pass NIGPm factor (eq. 2.78); without y, y is drawn
    from N(0, K + (sigma_out^2 + sum_d sigma_in,d^2 sf2 / l_d^2) I)."""
    X, y = data
    program = zoo.get("gp/nigp").program
    site = PARAMS._asdict()
    logp, _ = log_density(program, (), {"X": X, "y": y}, site)
    prior = (
        dist.LogNormal(0.0, 1.0).log_prob(PARAMS.lengthscale).sum()
        + dist.LogNormal(0.0, 1.0).log_prob(PARAMS.variance)
        + dist.LogNormal(-2.0, 1.5).log_prob(PARAMS.noise)
        + dist.LogNormal(-2.0, 1.5).log_prob(PARAMS.input_noise).sum()
    )
    np.testing.assert_allclose(logp, prior + nigp.log_likelihood(PARAMS, X, y, "nigpm"), rtol=1e-12)
    trace = numpyro.handlers.trace(numpyro.handlers.seed(numpyro.handlers.substitute(program, site), 0)).get_trace(X)
    extra = jnp.sum(PARAMS.input_noise * PARAMS.variance / PARAMS.lengthscale**2)
    cov = PARAMS.kernel(X) + (PARAMS.noise + extra) * jnp.eye(25)
    np.testing.assert_allclose(trace["y"]["fn"].covariance_matrix, gp.add_jitter(cov), rtol=1e-10)
