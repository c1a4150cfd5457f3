"""The real-series comparison (benchmarks/structure_smc.py) through the recovery benchmark's method dispatch
(``structure_recovery.run_method``), with the searches faked; the band coverage of greedy's and SMC's predictives."""

import argparse
import math
import types

import numpy as np
import pytest

import benchmarks.structure_recovery as recovery
import benchmarks.structure_smc as bench
from inference.applications.structure_search import SMCResult, Standardisation
from zoo.kernels import SE


@pytest.fixture
def faked(monkeypatch):
    """search / smc_search replaced by fakes that record their arguments; the greedy predictive faked too."""
    calls = {"greedy": [], "smc": []}

    def fake_search(x, y, **kw):
        calls["greedy"].append((len(x), kw))
        score = {"bic": -7.0, "laplace": -8.0}[kw["score"]]  # the score it ranks by; BIC always recorded
        best = types.SimpleNamespace(expression="Lin x Per", log_likelihood=5.0, num_params=5, bic=-7.0, score=score)
        fitted = types.SimpleNamespace(ok=True, expression="Lin x Per", bic=-7.0, score=score)
        return types.SimpleNamespace(best=best, trace=[fitted])

    smc = types.SimpleNamespace(
        best=types.SimpleNamespace(expression="Lin x Per + RQ"),
        posterior=lambda: {"Lin x Per + RQ": 0.6, "Per x SE": 0.3, "SE": 0.1},
        log_evidence_data_units=-50.0,
        log_evidence=-20.0,
        steps=[{"ess": 4.0}],
        log_predictive_density=lambda X, y: -61.0,
        predictive_cdf=lambda X, y: np.array([0.5, 0.99, 0.2, 0.01]),  # 2 of 4 inside the central 95 %
    )

    def fake_smc(x, y, **kw):
        calls["smc"].append((len(x), kw))
        return smc

    monkeypatch.setattr(recovery, "search", fake_search)
    monkeypatch.setattr(recovery, "smc_search", fake_smc)
    monkeypatch.setattr(recovery, "greedy_forecast", lambda *a: (-70.0, np.array([0.5, 0.5, 0.99, 0.5])))
    return calls


def test_each_method_runs_through_the_recovery_dispatch_once_and_is_cached(faked, tmp_path, capsys):
    argv = ["--series", "01-airline", "--methods", "greedy,greedy-laplace,smc", "--particles", "8", "--steps", "3",
            "--results", str(tmp_path)]  # fmt: skip
    assert bench.main(argv) == 0
    table = capsys.readouterr().out
    assert [kw["score"] for _, kw in faked["greedy"]] == ["bic", "laplace"]
    assert all(n == 129 and kw["depth"] == 2 and kw["restarts"] == 3 for n, kw in faked["greedy"])
    assert [(n, kw["particles"], kw["steps"]) for n, kw in faked["smc"]] == [(129, 8, 3)]
    greedy = (
        "| 01-airline (129 + 15) | greedy | depth 2, 3 restarts | Lin x Per | log p 5.00, BIC -7.00 | -70.00 | 0.75 |"
    )
    assert greedy in table
    assert "Laplace -8.00 | -70.00 | 0.75 |" in table
    assert "| Lin x Per + RQ 0.60, Per x SE 0.30, SE 0.10 | log Z -20.00 | -61.00 | 0.50 |" in table
    args = argparse.Namespace(results=str(tmp_path), seed=0, particles=8, steps=3, depth=2, restarts=3)
    rows = [bench.run_series_method("01-airline", m, args) for m in ("greedy", "smc")]
    assert len(faked["greedy"]) == 2 and len(faked["smc"]) == 1  # read back, not run again
    assert all(r["cpu_s"] >= 0 for r in rows) and rows[1]["posterior_top"]["Per x SE"] == 0.3


def test_bad_settings_are_refused_before_any_search(faked, tmp_path, capsys):
    for argv in (["--methods", "gpy-abcd"], ["--series", "no-such-series"], ["--particles", "1"]):
        assert bench.main([*argv, "--results", str(tmp_path)]) == 2
        assert capsys.readouterr().err.startswith("error: ")
    assert faked == {"greedy": [], "smc": []}


def test_inside_band_counts_the_central_interval():
    assert recovery.inside_band(np.array([0.03, 0.5, 0.97, 0.02, 0.98])) == pytest.approx(0.6)
    assert recovery.inside_band(np.array([0.06, 0.94]), level=0.9) == 1.0


def test_the_smc_mixture_cdf_is_the_integral_of_its_predictive_density():
    """SMCResult.predictive_cdf against log_predictive_density (a different code path: full covariances, the
    Gaussian log evidence): the CDF's central difference at one held-out point is the mixture's density there, to
    the O(h^2) error of the difference; and it runs from ~0 to ~1."""
    X = np.linspace(0.0, 3.0, 12)[:, None]
    y = np.sin(2.0 * X[:, 0])
    result = SMCResult(
        trees=[SE(lengthscale=0.5, variance=1.0), SE(lengthscale=2.0, variance=0.5)],
        noises=np.array([0.05, 0.2]),
        log_weights=np.log(np.array([0.3, 0.7])),
        log_evidence=0.0,
        steps=[],
        X=X,
        y=y,
        standardisation=Standardisation.of(X, y),
        options={},
        wall_s=0.0,
    )
    x_new, h = np.array([[3.4]]), 1e-3
    values = np.array([-0.5 - h, -0.5 + h, -50.0, 50.0])
    cdf = result.predictive_cdf(np.repeat(x_new, 4, axis=0), values)
    density = math.exp(result.log_predictive_density(x_new, np.array([-0.5])))
    assert (cdf[1] - cdf[0]) / (2 * h) == pytest.approx(density, rel=1e-5)
    assert cdf[2] < 1e-12 and cdf[3] > 1 - 1e-12
