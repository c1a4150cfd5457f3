"""The comparison figures' claim functions (paper_figures/nonconjugate_comparison.py, ripley_synth.py), EP's evidence
gradient (eq. 3.80) against finite differences, and type-II ML through ``inference.run`` (docs/sources/nonconjugate.md
#type-ii-ml)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import inference
import zoo
from inference.gaussian import ep, laplace
from paper_figures import nonconjugate_comparison as nc
from paper_figures import ripley_synth
from zoo.data import classification as cdata


def test_shrinkage_counts_direction():
    ref = np.array([2.0, -3.0, 0.5, 1.0])
    mcse = np.full(4, 0.01)
    nearer = np.array([1.5, -2.0, 0.5, 1.0])  # two points pulled towards zero, two equal
    assert nc.shrinkage_counts(nearer, ref, mcse) == (2, 0)
    assert nc.mode_nearer_zero(nearer, ref, mcse)
    farther = -1.2 * ref  # farther from zero everywhere (the sign does not matter)
    assert nc.shrinkage_counts(farther, ref, mcse) == (0, 4)
    assert not nc.mode_nearer_zero(farther, ref, mcse)
    assert not nc.mode_nearer_zero(ref + 0.02, ref, mcse)  # within 4 MCSE: no claim either way


def test_evidence_and_trend_claims():
    assert nc.evidence_too_low(-10.5, -10.0, 0.1)
    assert not nc.evidence_too_low(-10.3, -10.0, 0.1)  # 3 MCSE: not beyond noise
    assert not nc.evidence_too_low(-9.0, -10.0, 0.1)
    assert nc.closer(-0.1, 0.3) and not nc.closer(0.3, -0.1)
    assert nc.grows([0.0, -0.2, -0.5]) and not nc.grows([0.0, -0.3, -0.2])


def test_bayes_rule_class_assignment():
    """The generating mixture's rule must beat chance on synth.te (with the classes swapped its error is 92 %)."""
    X, y = cdata.synth("test")
    error, _ = ripley_synth.scores(ripley_synth.bayes_probability(X), y)
    assert error < 0.5
    assert ripley_synth.excess_error([{"test_error_pct": 8.0}, {"test_error_pct": 9.5}]) == [1.5]


@pytest.fixture(scope="module")
def small_classifier():
    X, y = cdata.synth("train")
    keep = np.random.default_rng(1).permutation(len(y))[:12]
    spec = zoo.get("gp/classification", link="probit")
    return spec, jnp.asarray(X[keep]), jnp.asarray(y[keep])


def test_ep_evidence_gradient_matches_finite_differences(small_classifier):
    """Eq. 3.80 (autodiff at the converged sites) against central differences of log Z_EP with EP re-run."""
    spec, X, y = small_classifier
    view = spec.views["latent_gp"]
    params = {"lengthscale": jnp.array([0.7, 0.4]), "variance": jnp.asarray(3.0)}
    evidence = jax.jit(lambda p: ep.log_evidence_and_grad(view, p, X, y))
    _, grad = evidence(params)
    h = 1e-5  # EP converges to 1e-10 per site: the difference quotient's rounding is ~1e-10 / h
    for name, index in (("lengthscale", 0), ("lengthscale", 1), ("variance", ())):
        step = jnp.zeros_like(params[name]).at[index].set(h)
        up = evidence({**params, name: params[name] + step})[0]
        down = evidence({**params, name: params[name] - step})[0]
        assert float((up - down) / (2 * h)) == pytest.approx(float(grad[name][index]), rel=1e-5, abs=1e-6)


@pytest.mark.slow  # two compiled programs (the fit and the L-BFGS objective): ~20 s on a busy core
def test_laplace_ml2_finds_a_stationary_point(small_classifier):
    """hyperparameters="ml2": the reported hyperparameters are a maximum of the Laplace evidence (gradient below the
    tolerance in the unconstrained space, evidence not lower than at the start)."""
    spec, X, y = small_classifier
    result = inference.run(spec, {"X": X, "y": y}, engine="laplace", hyperparameters="ml2", num_chains=1, num_samples=2)
    est = result.point_estimates.isel(chain=0)
    best = {"lengthscale": jnp.asarray(est["lengthscale"].values), "variance": jnp.asarray(est["variance"].values)}
    view = spec.views["latent_gp"]
    evidence = jax.jit(lambda p: laplace.log_evidence_and_grad(view, p, X, y))
    value, grad = evidence(best)
    # d/d log(theta) = theta d/d theta: the unconstrained gradient L-BFGS drove below ml2_tolerance (1e-5)
    assert np.max(np.abs(np.asarray(grad["lengthscale"]) * np.asarray(best["lengthscale"]))) < 1e-4
    assert abs(float(grad["variance"] * best["variance"])) < 1e-4
    start, _ = evidence({name: jnp.broadcast_to(v, best[name].shape) for name, v in spec.default_params.items()})
    assert float(value) >= float(start)
    assert float(value) == pytest.approx(result.posterior.attrs["log_evidence"], abs=1e-9)
    assert "fixed_params" in result.posterior.attrs and result.posterior.attrs["fixed_params"] == "{}"


def test_additive_kernel_option():
    """kernel="Add<R>": Duvenaud's additive kernel, sites lengthscale (D,) and one variance per order; R >= 1."""
    from inference.core.program import latent_sites
    from zoo.errors import OptionError
    from zoo.kernels import Additive

    spec = zoo.get("gp/classification", kernel="Add2")
    assert spec.views["latent_gp"].template == Additive(max_order=2)
    sites = latent_sites(spec, spec.validate({"X": np.zeros((4, 3)) + np.arange(3), "y": np.array([0, 1, 0, 1.0])}))
    assert sites["lengthscale"].shape == (3,) and sites["variance"].shape == (2,)
    with pytest.raises(OptionError, match="R >= 1"):
        zoo.get("gp/classification", kernel="Add0")


def test_ml2_runs_fix_no_parameters_in_comparisons():
    """laplace/ep with hyperparameters="ml2" start from params and fix nothing: a comparison must not hold the other
    engines to the model's defaults for them (benchmarks/posteriors.py)."""
    from benchmarks import posteriors

    ml2 = {"hyperparameters": "ml2"}
    assert posteriors.cell_fixed("gp/classification", {}, "laplace", ml2) == {}
    assert set(posteriors.cell_fixed("gp/classification", {}, "laplace", {})) == {"lengthscale", "variance"}
    spec = zoo.get("gp/classification")
    per_engine = {"ep": dict(ml2), "nuts": {}}
    assert posteriors.align_params(spec, ["ep", "nuts"], per_engine) == [] and "params" not in per_engine["nuts"]
