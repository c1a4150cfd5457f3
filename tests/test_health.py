"""Health checks of every run (inference/results/health.py): failing runs print one warning line per failure and
record it; healthy runs print none."""

import json

import arviz as az
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import inference
from inference.results import health

BLR = {"size": {"n": 30, "d": 2}}


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning: ")]


def test_nuts_with_too_few_draws_warns_on_rhat_and_ess(capsys):
    idata = inference.run("blr", engine="nuts", seed=0, num_chains=2, num_warmup=20, num_samples=20)
    lines = _warnings(capsys.readouterr().err)
    recorded = json.loads(idata.posterior.attrs["health"])
    assert any("R-hat" in line and "> 1.01" in line for line in lines), lines
    assert any("bulk ESS" in line and "< 200 (100 per chain)" in line for line in lines), lines
    assert [line.split(": ", 2)[2] for line in lines] == recorded  # printed and recorded alike
    assert all(name in " ".join(recorded) for name in ("noise", "w"))  # each names its variable


def eight_schools(sigma, y=None):
    """The centred eight schools (Rubin 1981; Stan's case study of divergences): a funnel in (mu, tau, theta)."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    with numpyro.plate("school", sigma.shape[0]):
        theta = numpyro.sample("theta", dist.Normal(mu, tau))
        numpyro.sample("y", dist.Normal(theta, sigma), obs=y)


SCHOOLS = {
    "y": np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0]),
    "sigma": np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0]),
}


def test_eight_schools_divergences_are_flagged(capsys):
    idata = inference.run(eight_schools, SCHOOLS, engine="nuts", seed=0, num_chains=2, num_samples=500)
    divergences = int(idata.sample_stats["diverging"].sum())
    lines = _warnings(capsys.readouterr().err)
    assert divergences > 0  # the centred funnel: NUTS cannot follow tau to zero
    assert any(f"{divergences} divergent transitions" in line for line in lines), lines


def test_svi_with_too_few_steps_is_not_converged(capsys):
    idata = inference.run("blr", engine="svi", seed=0, num_steps=200)
    lines = _warnings(capsys.readouterr().err)
    assert any("SVI loss not converged" in line for line in lines), lines
    assert any("SVI loss not converged" in m for m in json.loads(idata.posterior.attrs["health"]))


def test_healthy_runs_print_no_warning(capsys):
    params = {"noise": 0.25}
    for engine, options in (("nuts", {}), ("svi", {"guide": "mvn", "num_steps": 3000}), ("exact", {})):
        idata = inference.run("blr", engine=engine, seed=0, params=params, **options)
        err = capsys.readouterr().err
        assert _warnings(err) == [], (engine, err)
        assert json.loads(idata.posterior.attrs["health"]) == []


def test_bfmi_equals_arviz():
    energy = np.random.default_rng(0).normal(size=(3, 400)).cumsum(axis=1)
    np.testing.assert_allclose(health.bfmi(energy), az.bfmi(energy), rtol=1e-12)


@pytest.mark.parametrize(
    ("trace", "improving"),
    [
        (np.random.default_rng(1).normal(-50.0, 1.0, 2000), False),  # converged: noise about a level
        (-50.0 - 40.0 * np.exp(-np.arange(2000) / 800.0), True),  # still rising at the end
        (-50.0 + 0.001 * np.arange(2000) / 2000, False),  # rising, but by far less than 1 %
        (-5.0 + 0.2 * np.arange(2000) / 2000, False),  # 2 % of an ELBO near 0, but 0.1 nats
    ],
)
def test_still_improving(trace, improving):
    assert health.still_improving(trace)[0] is improving


def _idata(**sample_stats):
    rng = np.random.default_rng(0)
    posterior = {"x": rng.normal(size=(4, 500))}
    idata = az.from_dict(posterior=posterior, sample_stats=sample_stats)
    idata.posterior.attrs["engine"] = "test"
    return idata


def test_pareto_k_of_importance_weights():
    rng = np.random.default_rng(2)
    light = rng.normal(0.0, 0.3, size=(4, 500))  # log-weights of a good proposal
    heavy = rng.standard_cauchy(size=(4, 500)) * 5.0  # weights with an infinite-variance tail
    assert [p.check for p in health.check(_idata(log_weight=light))] == []
    assert [p.check for p in health.check(_idata(log_weight=heavy))] == ["pareto_k"]


def test_low_bfmi_is_flagged():
    rng = np.random.default_rng(3)
    slow = np.cumsum(rng.normal(size=(4, 500)), axis=1)  # a random walk: energy barely resampled between draws
    assert "ebfmi" in [p.check for p in health.check(_idata(energy=slow))]
    assert "ebfmi" not in [p.check for p in health.check(_idata(energy=rng.normal(size=(4, 500))))]
