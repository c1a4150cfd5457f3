"""Sampling EP (McHutchon 2014, sec. 3.6.2, Algorithm 3; ``inference.gaussian.sampling_ep``).

* The EP algebra (Gaussian messages, division 3.125-3.128, damping, sweeps) with EXACT two-slice moments on a
  linear-Gaussian SSM reproduces the Kalman filter (alpha) and the RTS smoother (marginals and cross-covariances).
* The MC-EP / IS-EP moment estimators (3.166-3.179, self-normalised weights) agree with the exact two-slice moments
  within Monte Carlo error computed from the weights' ESS -- and the same tolerance rejects IS without the 1/beta
  correction, so the check has power.
* The ``is-ep`` engine on a GP-SSM whose transition is linear (linear mean, kernel variance 1e-10) gives the RTS
  smoother within Monte Carlo error.
* MCMC-EP (3.180-3.186, ``inference.gaussian.mcmc_ep``): its random-walk Metropolis moments, and the ``mcmc-ep``
  engine on the same linear GP-SSM, within Monte Carlo error computed from the chain's autocorrelation ESS; the
  estimator tested without the alpha_{t-1} term of its target (3.182) fails the same tolerance.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import inference
import zoo
from inference.core.program import observed_args
from inference.gaussian import kalman
from inference.gaussian import mcmc_ep as mep
from inference.gaussian import sampling_ep as sep
from zoo import gpssm, lgssm, ssm
from zoo.errors import OptionError

NUM_SAMPLES = 2000
Z = 5.0  # tolerance in Monte Carlo standard errors


@pytest.fixture(scope="module")
def linear():
    """lgssm data (4 trajectories x 20 steps, D = 2), its Kalman/RTS answer, and a GP-SSM with the same transition."""
    data = zoo.get("lgssm").simulate(jax.random.key(0))
    observed = {**data.observed, "pseudo_inputs": data.observed["y"][0, :5]}
    spec = gpssm.sparse_gpssm_spec("test/linear-gpssm-ep", lambda key: None, 2, mean="linear")
    dataset = spec.validate(observed)
    truth = lgssm.true_params(2, 2)
    kview = zoo.get("lgssm").views["state_space"]
    obs = observed_args(dataset)
    lg = kview.linear_gaussian(ssm.bind(kview, truth, obs))
    y, mask, u = ssm.trajectories(obs)
    forward, smoothed = jax.vmap(kalman.kalman_smoother, in_axes=(None, 0, 0, 0))(lg, y, mask, u)
    params = {
        "mean_A": truth["A"],
        "mean_b": np.zeros(2),
        "signal_var": np.full(2, 1e-10),
        "lengthscale": np.ones((2, 2)),
        "process_var": truth["process_var"],
        "obs_var": truth["obs_var"],
        "pseudo_targets": (observed["pseudo_inputs"] @ truth["A"].T).T,
    }
    return {"lg": lg, "y": y, "mask": mask, "u": u, "forward": forward, "smoothed": smoothed, "spec": spec}, (
        dataset,
        params,
    )


def test_ep_with_exact_moments_is_the_rts_smoother(linear):
    """Exact two-slice moments: the first (undamped) sweep gives alpha = Kalman filter and alpha beta = RTS, and the
    damped second sweep stays at that fixed point; the cross-covariances are the RTS ones."""
    lin, _ = linear
    lg = lin["lg"]
    exact = sep.linear_gaussian_two_slice(lg.A, lg.b, lg.Q)
    prior = sep.to_natural(lg.m0, lg.P0)

    def one(y, mask, u, num_iters):
        obs = sep.observation_factors(lg.C, jnp.diag(lg.R), y, mask)
        flat = sep.Gaussian(jnp.zeros((y.shape[0], 2, 2)), jnp.zeros((y.shape[0], 2)))  # no ADF start needed
        return sep.ep_smoother(exact, jax.random.key(0), prior, obs, mask, u, flat, num_iters, 0.5, 0.0)

    f, s = lin["forward"], lin["smoothed"]
    res = jax.jit(jax.vmap(lambda y, m, u: one(y, m, u, 2)))(lin["y"], lin["mask"], lin["u"])
    alpha_mean, alpha_cov = jax.vmap(jax.vmap(lambda p, h: sep.to_moments(sep.Gaussian(p, h))))(*res.alpha)
    np.testing.assert_allclose(alpha_mean, f.filt_mean, atol=1e-10)
    np.testing.assert_allclose(alpha_cov, f.filt_cov, atol=1e-10)
    np.testing.assert_allclose(res.mean, s.mean, atol=1e-10)
    np.testing.assert_allclose(res.cov, s.cov, atol=1e-10)
    np.testing.assert_allclose(res.cross, s.cross, atol=1e-10)
    assert int(res.skipped.sum()) == 0


def _moment_errors(est, ref):
    """|estimate - exact| in units of the Monte Carlo standard error from the ESS (Kish): sd / sqrt(ESS) for means,
    var sqrt(2 / ESS) for variances, sqrt(2 var_a var_b / ESS) for the cross-covariance (Gaussian fourth moments)."""
    ess = est.ess
    va, vb = jnp.diagonal(ref.cov_prev), jnp.diagonal(ref.cov)
    return {
        "mean_prev": jnp.abs(est.mean_prev - ref.mean_prev) / jnp.sqrt(va / ess),
        "mean": jnp.abs(est.mean - ref.mean) / jnp.sqrt(vb / ess),
        "cov_prev": jnp.abs(est.cov_prev - ref.cov_prev) / jnp.sqrt(2.0 * jnp.outer(va, va) / ess),
        "cov": jnp.abs(est.cov - ref.cov) / jnp.sqrt(2.0 * jnp.outer(vb, vb) / ess),
        "cross": jnp.abs(est.cross - ref.cross) / jnp.sqrt(2.0 * jnp.outer(va, vb) / ess),
    }


def test_mc_and_is_moments_within_monte_carlo_error(linear):
    """One two-slice with an informative beta_{t-1} and factor: MC-EP (3.166-3.172) and IS-EP (3.173-3.179) moments vs
    exact ones within Z standard errors; IS without dividing by beta_{t-1}(x^i) is rejected by the same test."""
    lg = linear[0]["lg"]
    A, b, Q = lg.A, lg.b, lg.Q
    exact = sep.linear_gaussian_two_slice(A, b, Q)
    sampler = {v: sep.sampling_two_slice(lambda x, u: (A @ x + b, jnp.diagonal(Q)), v, 20000) for v in ("mc", "is")}
    alpha = sep.to_natural(jnp.array([0.5, -0.3]), jnp.array([[0.4, 0.1], [0.1, 0.3]]))
    beta_prev = sep.to_natural(jnp.array([1.0, 0.2]), jnp.array([[0.5, -0.1], [-0.1, 0.6]]))
    factor = sep.to_natural(jnp.array([1.2, 0.4]), jnp.array([[0.15, 0.02], [0.02, 0.2]]))
    u = jnp.zeros(0)

    @jax.jit
    def estimates(key):
        mc = sampler["mc"](key, alpha, beta_prev, factor, u)
        is_ = sampler["is"](key, alpha, beta_prev, factor, u)
        joint = sep.Gaussian(alpha.prec + beta_prev.prec, alpha.shift + beta_prev.shift)
        uncorrected = sampler["mc"](key, joint, beta_prev, factor, u)  # proposal alpha beta, weights z only
        return mc, is_, uncorrected

    ref = exact(None, alpha, beta_prev, factor, u)
    mc, is_, uncorrected = estimates(jax.random.key(1))
    for est in (mc, is_):
        assert bool(est.ok) and float(est.ess) > 1000
        errs = _moment_errors(est, ref)
        assert max(float(e.max()) for e in errs.values()) < Z, {k: float(v.max()) for k, v in errs.items()}
    assert float(is_.ess) > float(mc.ess)  # sampling near the marginal is the point of IS-EP
    wrong = _moment_errors(uncorrected, ref)
    assert max(float(e.max()) for e in wrong.values()) > Z


def assert_rts_within_monte_carlo_error(idata, s, min_ess_fraction: float) -> None:
    """A sampling-EP run's smoothed moments against the RTS smoother ``s``: min ESS above ``min_ess_fraction`` of
    NUM_SAMPLES, no skipped update, and means, covariances and cross-covariances within Z / sqrt(min ESS) (in sd
    units; sqrt(2) times that in variance units)."""
    pe = idata.point_estimates
    mean, cov, cross = (pe[k].values[0] for k in ("states_mean", "states_cov", "states_cross"))
    sd = np.sqrt(np.diagonal(np.asarray(s.cov), axis1=-2, axis2=-1))
    min_ess = float(idata.optimization["min_ess"].values.min())
    assert min_ess > min_ess_fraction * NUM_SAMPLES
    assert int(idata.optimization["skipped_updates"].values.sum()) == 0
    tol = Z / np.sqrt(min_ess)
    scale = sd[..., :, None] * sd[..., None, :]
    assert np.max(np.abs(mean - s.mean) / sd) < tol
    assert np.max(np.abs(cov - s.cov) / scale) < np.sqrt(2.0) * tol
    assert np.max(np.abs(cross - s.cross) / scale[:, :-1]) < np.sqrt(2.0) * tol


def test_is_ep_engine_reproduces_rts_on_a_linear_gp_ssm(linear):
    """GP-SSM with linear mean and kernel variance 1e-10 (the transition is the lgssm's): MC-EP with 2000 samples and
    2 sweeps vs the RTS smoother. Per step the Monte Carlo error of a mean is sd / sqrt(ESS); EP passes it along the
    chain with contraction (Kalman gains < 1), so we allow Z / sqrt(min ESS) in sd units for means (and the same in
    variance units for covariances) over all 4 x 20 x 2 coordinates."""
    lin, (dataset, params) = linear
    idata = inference.run(
        lin["spec"], dataset, engine="is-ep", params=params, variant="mc", num_samples=NUM_SAMPLES, num_ep_iters=2
    )
    assert_rts_within_monte_carlo_error(idata, lin["smoothed"], min_ess_fraction=0.3)
    assert idata.posterior[ssm.STATES].shape == (1, 200, 4, 20, 2)
    assert np.all(np.isfinite(idata.posterior[ssm.STATES].values))


def _two_slice_case():
    alpha = sep.to_natural(jnp.array([0.5, -0.3]), jnp.array([[0.4, 0.1], [0.1, 0.3]]))
    beta_prev = sep.to_natural(jnp.array([1.0, 0.2]), jnp.array([[0.5, -0.1], [-0.1, 0.6]]))
    factor = sep.to_natural(jnp.array([1.2, 0.4]), jnp.array([[0.15, 0.02], [0.02, 0.2]]))
    return alpha, beta_prev, factor


def test_mcmc_moments_within_monte_carlo_error(linear):
    """MCMC-EP's chain (start at the alpha beta mean, proposal N(x, c Sigma_ab), target alpha z) vs the exact
    two-slice moments within Z standard errors from the chain's ESS; a chain whose target drops alpha (z alone, a
    wrong acceptance ratio) is rejected by the same test."""
    lg = linear[0]["lg"]
    A, b, Q = lg.A, lg.b, lg.Q
    transition = lambda x, u: (A @ x + b, jnp.diagonal(Q))  # noqa: E731
    alpha, beta_prev, factor = _two_slice_case()
    u = jnp.zeros(0)
    ref = sep.linear_gaussian_two_slice(A, b, Q)(None, alpha, beta_prev, factor, u)
    flat = sep.Gaussian(jnp.zeros((2, 2)), jnp.zeros(2))
    estimate = jax.jit(mep.mcmc_two_slice(transition, 20000, 0.0))
    est = estimate(jax.random.key(2), alpha, beta_prev, factor, u)
    assert bool(est.ok) and 1000 < float(est.ess) < 20000
    errs = _moment_errors(est, ref)
    assert max(float(e.max()) for e in errs.values()) < Z, {k: float(v.max()) for k, v in errs.items()}
    # a flat alpha: the chain then samples z alone (3.182 without alpha), and must miss the exact moments
    wrong = estimate(jax.random.key(2), flat, beta_prev, factor, u)
    assert max(float(e.max()) for e in _moment_errors(wrong, ref).values()) > Z


@pytest.mark.slow  # ~50 s compiling the Metropolis scan inside both EP sweeps on a loaded 2-core machine; runs ~1.5 s
def test_mcmc_ep_engine_reproduces_rts_on_a_linear_gp_ssm(linear):
    """The ``mcmc-ep`` engine (2000 chain states per two-slice, 2 sweeps) vs the RTS smoother, with the tolerance of
    the is-ep test: Z / sqrt(min ESS) in sd units, the ESS the chains' own (autocorrelation)."""
    lin, (dataset, params) = linear
    idata = inference.run(
        lin["spec"], dataset, engine="mcmc-ep", params=params, num_samples=NUM_SAMPLES, num_ep_iters=2
    )
    assert_rts_within_monte_carlo_error(idata, lin["smoothed"], min_ess_fraction=0.05)


@pytest.mark.parametrize(
    "bad",
    [
        {"variant": "mcmc"},
        {"num_samples": 1},
        {"num_ep_iters": 0},
        {"damping": 0.0},
        {"damping": 1.5},
        {"min_ess": 1.0},
        {"num_draws": -1},
    ],
)
def test_bad_options_raise_before_compiling(linear, bad):
    lin, (dataset, params) = linear
    with pytest.raises(OptionError):
        inference.run(lin["spec"], dataset, engine="is-ep", params=params, **bad)


@pytest.mark.slow  # compiles the EM scan with nested L-BFGS (like analytic-em's run test)
def test_is_ep_em_runs_on_the_kink():
    from zoo.data import ssm_systems

    data = ssm_systems.kink(jax.random.key(5), num_train=4, num_test=1)
    spec = gpssm.sparse_gpssm_spec("test/kink-sparse-ep", lambda key: None, 1)
    dataset = spec.validate({**data.observed, "pseudo_inputs": np.linspace(-3.0, 6.0, 15)[:, None]})
    idata = inference.run(spec, dataset, engine="is-ep-em", num_steps=2, m_step_steps=5, num_draws=10)
    traces = idata.optimization
    assert np.all(np.isfinite(traces["adf_log_lik"].values)) and np.all(np.isfinite(traces["q"].values))
    assert idata.point_estimates["obs_var"].values[0, 0] > 0


@pytest.mark.parametrize(
    "bad", [{"proposal_scale": 0.0}, {"proposal_scale": -1.0}, {"variant": "is"}, {"num_samples": 1}]
)
def test_mcmc_ep_bad_options_raise_before_compiling(linear, bad):
    lin, (dataset, params) = linear
    with pytest.raises(OptionError):
        inference.run(lin["spec"], dataset, engine="mcmc-ep", params=params, **bad)
