"""The recovery benchmark's pieces (benchmarks/structure_recovery.py), the residual changepoint of the changepoint-cost
recipes (benchmarks/changepoint_cost.py) and the search's subset option and scoring after a refit; cheap: no search
runs here."""

import numpy as np
import pytest

from benchmarks.changepoint_cost import residual_changepoint
from benchmarks.structure_recovery import (
    DRAWN_GRAMMAR,
    DRAWN_RANGES,
    TRUTHS,
    draw_truth,
    main,
    markdown,
    same_structure,
    simulate,
    truth_depth,
    truth_kernel,
    verdict,
)
from zoo.errors import OptionError
from zoo.kernels import SE
from zoo.structure.canonical import key
from zoo.structure.grammar import expand


@pytest.mark.parametrize(
    "found, truth, same",
    [
        ("Per + SE", "SE + Per", True),
        ("C + ZPer", "Per", True),  # GPy-ABCD's PER + C is our Per
        ("SE x C", "SE", True),
        ("SE + Per", "SE", False),
        ("Lin x Per", "Per x Lin", True),
        ("CP(SE, Lin)", "CP(Lin, SE)", False),  # a changepoint's arguments keep their order
        ("CP(SE, SE)", "CP(SE, SE)", True),
    ],
)
def test_same_structure_up_to_constants_noise_and_order(found, truth, same):
    assert same_structure(found, truth) is same


def test_simulated_series_have_the_stated_sizes_noise_and_seeds():
    a, b = simulate("SE", 40, 10.0, 0), simulate("SE", 40, 10.0, 0)
    assert a["x"].shape == a["y"].shape == (40,) and a["x_test"].shape == (8,)
    assert np.array_equal(a["y"], b["y"]) and not np.array_equal(a["y"], simulate("SE", 40, 10.0, 1)["y"])
    assert a["noise"] == pytest.approx(0.1)  # SE's variance 1 at snr 10
    assert set(TRUTHS) >= {"SE", "Per", "Lin", "SE + Per", "CP(SE, SE)"}


def test_a_miss_is_blamed_on_the_score_or_the_search_by_bic():
    row = {"recovered": False, "bic": -10.0, "truth_refit": {"bic": -12.0}}
    assert verdict(row) == "miss: score's limit"
    assert verdict({**row, "bic": -13.0}) == "miss: search's"
    assert verdict({**row, "bic": -13.0, "truth": "SE", "trace_bic": {"RQ": -13.0}}).startswith("miss: search's path")
    assert verdict({**row, "bic": -13.0, "truth": "SE", "trace_bic": {"SE": -14.5}}).startswith("miss: optimiser's")
    assert verdict({"recovered": True}) == "recovered"
    assert verdict({**row, "method": "gpy-abcd", "truth": "CP(SE, SE)"}).endswith("outside its grammar (no SE)")
    rows = [
        {"truth": "SE", "method": "greedy", "recovered": True, "log_density": -1.0, "oracle_log_density": -0.5,
         "wall_s": 2.0, "kernel": "SE", "seed": 0},
        {"truth": "SE", "method": "greedy", "kernel": "RQ", "seed": 1, "wall_s": 4.0, "log_density": -2.0,
         "oracle_log_density": -0.5, **row},
    ]  # fmt: skip
    table = markdown([{**r, "n": 100, "snr": 10.0, "truth_depth": 1} for r in rows])
    assert "| 1 | 100 | 10.0 | 1/2 |" in table  # recovery by depth, length and ratio
    assert "| SE | 100 | 10.0 | 1/2 | -1.00 | 3.0 |" in table
    assert "| SE | 100 | 10.0 | 1 | greedy | RQ | -10.00 | -12.00 | miss: score's limit |" in table


def test_drawn_truths_are_reproducible_grammar_structures_of_distinct_bases():
    """d<depth>.<index>: the same kernel every time, ``depth`` distinct bases, reachable by the grammar's + and x
    from a base kernel, every hyperparameter within its stated range."""
    for depth in (1, 2, 3):
        for index in range(3):
            kernel = draw_truth(depth, index)
            assert str(kernel) == str(truth_kernel(f"d{depth}.{index}")) and truth_depth(kernel) == depth
            leaves = str(kernel).replace("(", " ").replace(")", " ").replace("+", " ").replace("x", " ").split()
            assert len(set(leaves)) == depth
            reached = [None]
            for _ in range(depth):
                reached = [c.kernel for k in reached for c in expand(k, DRAWN_GRAMMAR)]
            assert key(kernel) in {key(k) for k in reached}
    kernel = draw_truth(2, 1)
    for leaf in (kernel.left, kernel.right) if kernel.CHILDREN else (kernel,):
        for name in leaf.PARAMS:
            low, high, _ = DRAWN_RANGES[leaf.SYMBOL, name]
            assert low <= float(getattr(leaf, name)) <= high
    a, b = simulate("d2.1", 40, 10.0, 0), simulate("d2.1", 40, 10.0, 0)
    assert np.array_equal(a["y"], b["y"]) and not np.array_equal(a["y"], simulate("d2.2", 40, 10.0, 0)["y"])


def test_bad_settings_are_refused_before_any_run(tmp_path, capsys):
    with pytest.raises(OptionError, match="unknown truth"):
        truth_kernel("d3")
    for argv, message in (
        (["--truths", "d3.0", "--depth", "2"], "deeper than --depth 2"),
        (["--n", "100,10"], "every n must be at least 20"),
        (["--snr", "10,0"], "every snr positive"),
        (["--drawn", "-1"], "drawn must be 0 or more"),
        (["--truths", "Foo"], "unknown truth 'Foo'"),
        (["--truths", "CP(SE, SE),Foo"], "unknown truth 'Foo'"),  # the comma inside CP(...) is its own
    ):
        assert main([*argv, "--methods", "greedy", "--results", str(tmp_path)]) == 2
        assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing written


def test_the_residual_changepoint_finds_where_the_residuals_change():
    """Residuals of a smooth parent on a series whose noise sd jumps from 0.1 to 0.5 at x = 0.3: the split is
    within two spacings of it (the likelihood ratio peaks at the change; spacing 0.034)."""
    rng = np.random.default_rng(0)
    x = np.linspace(-1.7, 1.7, 101)[:, None]
    y = np.sin(x[:, 0]) + np.where(x[:, 0] < 0.3, 0.1, 0.5) * rng.normal(size=101)
    location = residual_changepoint(SE(lengthscale=1.0, variance=1.0), 0.1, x, y)
    assert abs(location - 0.3) < 2 * 0.034


def test_a_child_refitted_from_its_warm_start_is_scored_by_its_recorded_likelihood(monkeypatch):
    """search._evaluate: when a nesting child's restarts end below its parent and the refit from the warm start
    climbs higher, BIC must be computed from the recorded (refitted) log likelihood; it was computed from the first
    fit's, so the child's score sat below its parent's although its likelihood did not (fits faked here: the
    first 5 nats below the parent, the refit 2 above; the neutral limit at the parent's likelihood)."""
    import importlib

    from inference.applications.structure_search.fit import FitOutcome
    from inference.applications.structure_search.result import Fitted
    from inference.applications.structure_search.scales import Scales
    from inference.applications.structure_search.scores import bic
    from inference.applications.structure_search.starts import warm_starts
    from zoo.kernels import num_params
    from zoo.structure.grammar import Grammar, expand

    search_module = importlib.import_module("inference.applications.structure_search.search")
    x = np.linspace(-1.7, 1.7, 30)[:, None]
    y = np.sin(3 * x[:, 0])
    kernel, noise = SE(lengthscale=0.5, variance=1.0), 0.1
    parent = Fitted(1, "SE", "start", None, kernel=kernel, noise=noise, log_likelihood=-20.0)
    grammar = Grammar(("SE",), 1, ("C.1",))
    cand = expand(kernel, grammar)[0]
    warm = warm_starts(kernel, grammar, Scales.of(x), None)[cand.key]
    made = iter([parent.log_likelihood - 5.0, parent.log_likelihood + 2.0])
    monkeypatch.setattr(search_module, "fit_ml2", lambda k, *a, **kw: FitOutcome(k, noise, next(made), [], 0.0))
    monkeypatch.setattr(search_module, "log_likelihood_at", lambda *a: parent.log_likelihood)  # the limit nests
    options = {"optimizer": "host-lbfgs", "restarts": 1, "jitter": 1.0, "num_steps": 10, "score": "bic",
               "score_options": {}}  # fmt: skip
    entry = search_module._evaluate(cand, parent, 2, x, y, noise, options, 0, None, None, warm)
    assert entry.nests_parent and entry.log_likelihood == parent.log_likelihood + 2.0
    assert entry.bic == bic(entry.log_likelihood, num_params(entry.kernel, 1) + 1, 30) == entry.score


def test_the_subset_option_applies_to_switching_candidates_of_long_series_only():
    """search(subset=m): changepoint / window candidates (C.4-C.7) of a series longer than m fit their restarts on
    every k-th point, k = ceil(n / m); others, and shorter series, on all points; a subset under 20 is refused
    before anything is fitted."""
    import importlib

    from inference.applications.structure_search import search
    from zoo.errors import OptionError

    search_module = importlib.import_module("inference.applications.structure_search.search")
    step = search_module._subset_step
    assert step("C.4", 521, 200) == 3 and step("C.7", 401, 200) == 3 and step("C.5", 200, 200) == 1
    assert step("C.1", 521, 200) == 1 and step("C.4", 521, None) == 1
    with pytest.raises(OptionError, match="subset must be at least 20"):
        search(np.arange(30.0), np.sin(np.arange(30.0)), subset=5)


def test_greedy_laplace_is_the_greedy_search_ranked_by_laplace(monkeypatch, tmp_path):
    """--methods greedy-laplace passes the argument check and runs search(..., score="laplace") (faked here), its
    row keeps the best's Laplace evidence and a miss is judged by it against the refitted truth's."""
    import argparse
    import types

    import benchmarks.structure_recovery as bench

    calls = []
    best = types.SimpleNamespace(expression="SE", log_likelihood=-5.0, num_params=3, bic=-9.0, score=-11.0)
    fitted = types.SimpleNamespace(ok=True, expression="SE", bic=-9.0, score=-11.0)

    def fake_search(x, y, **kw):
        calls.append(kw)
        return types.SimpleNamespace(best=best, trace=[fitted])

    monkeypatch.setattr(bench, "search", fake_search)
    monkeypatch.setattr(bench, "greedy_forecast", lambda *a: (-3.0, np.full(4, 0.5)))
    monkeypatch.setattr(bench, "oracle_log_density", lambda *a: -2.0)
    args = argparse.Namespace(
        truths=["SE"], seeds=[0], methods=["greedy-laplace"], n=[20], snr=[10.0], depth=2, restarts=3,
        smc_particles=32, results=str(tmp_path), drawn=0,
    )  # fmt: skip
    bench.check_args(args)
    row = bench.run_cell(("SE", 20, 10.0, 0, "greedy-laplace"), args, None)
    assert [c["score"] for c in calls] == ["laplace"] and calls[0]["depth"] == 2 and calls[0]["restarts"] == 3
    assert row["recovered"] and row["laplace"] == -11.0 and row["trace_laplace"] == {"SE": -11.0}
    assert row["inside_95"] == 1.0 and row["cpu_s"] >= 0
    assert bench.run_cell(("SE", 20, 10.0, 0, "greedy-laplace"), args, None) == row and len(calls) == 1  # cached
    miss = {
        **row,
        "recovered": False,
        "truth": "Per",
        "truth_expression": "Per",
        "bic": 0.0,
        "truth_refit": {"bic": -1.0, "laplace": -10.0},
    }
    assert verdict(miss).startswith("miss: search's path")  # Laplace -11 < -10 although BIC 0 > -1
    assert verdict({**miss, "laplace": -9.0}) == "miss: score's limit"


def test_greedy_tsmc_passes_its_engine_options_and_they_are_the_engines(monkeypatch):
    """--methods greedy-tsmc runs search(..., score="tsmc") with TSMC_SCORE_OPTIONS (faked here), options the tsmc
    engine accepts (checked where the search checks them, before any fit)."""
    import types

    import benchmarks.structure_recovery as bench
    from inference.applications.structure_search.scores import check_score_options

    calls = []
    best = types.SimpleNamespace(expression="SE", log_likelihood=-5.0, num_params=3, bic=-9.0, score=-7.0)

    def fake_search(x, y, **kw):
        calls.append(kw)
        return types.SimpleNamespace(best=best, trace=[])

    monkeypatch.setattr(bench, "search", fake_search)
    monkeypatch.setattr(bench, "greedy_forecast", lambda *a: (-3.0, np.full(4, 0.5)))
    row = bench.run_method("greedy-tsmc", simulate("SE", 20, 10.0, 0), 2, 3, 0, 32)
    assert calls[0]["score"] == "tsmc" and calls[0]["score_options"] == bench.TSMC_SCORE_OPTIONS
    assert row["tsmc"] == -7.0
    check_score_options("tsmc", bench.TSMC_SCORE_OPTIONS)
