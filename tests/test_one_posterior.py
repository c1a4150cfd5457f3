"""One posterior per comparison (benchmarks/posteriors.py, inference/core/fixed.py): every shipped suite compares
engines on the same posterior; a suite that does not is refused; ``zoo compare`` fixes what an exact engine
conditions on; ``inference.run`` says which parameters it fixed at the model's defaults."""

import json

import pytest

import inference
import zoo_cli
from benchmarks import compare, posteriors, suites
from inference.core import options as opt
from zoo.errors import OptionError

# The mistake of issue 39: the exact engine conditions on blr's noise (0.25 by default), NUTS samples it.
MISMATCHED = """
description = "exact at the default noise against NUTS sampling it"

[[models]]
name = "blr"
size = { n = 20, d = 2 }
reference = "exact"

  [[models.engines]]
  engine = "exact"

  [[models.engines]]
  engine = "nuts"
"""


@pytest.mark.parametrize("name", suites.available())
def test_every_shipped_suite_compares_one_posterior(name):
    assert posteriors.check(suites.load(name).cells) == []


def test_a_suite_comparing_different_posteriors_is_refused(tmp_path, capsys):
    problems = posteriors.check(suites.parse(MISMATCHED, "mismatched").cells)
    assert problems == [
        "blr: nuts samples noise, which the reference exact fixes at noise=0.25: they describe different posteriors "
        "(give the model's engines the same params, e.g. options = { params = { ... } } on the [[models]] table)"
    ]
    fixed_for_all = MISMATCHED.replace(
        'reference = "exact"', 'reference = "exact"\noptions = { params = { noise = 0.25 } }'
    )
    assert posteriors.check(suites.parse(fixed_for_all, "fixed").cells) == []
    other_value = fixed_for_all.replace('engine = "nuts"', 'engine = "nuts"\n  options = { params = { noise = 0.3 } }')
    assert (
        "nuts fixes noise=0.3, the reference exact noise=0.25"
        in posteriors.check(suites.parse(other_value, "other").cells)[0]
    )
    path = tmp_path / "mismatched.toml"
    path.write_text(MISMATCHED)
    assert zoo_cli.main(["bench", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "compares different posteriors" in err and "nuts samples noise" in err
    assert not (tmp_path / "out").exists()  # refused before any cell ran


def test_zoo_compare_fixes_what_the_exact_engine_conditions_on():
    suite, notes = compare.build_suite("blr", ["nuts", "svi"], [0], {})
    assert {cell.engine: cell.options["params"] for cell in suite.cells} == {
        "exact": {"noise": 0.25},
        "nuts": {"noise": 0.25},
        "svi": {"noise": 0.25},
    }
    assert any("parameters fixed for every engine at blr's defaults: noise=0.25" in note for note in notes)
    given, _ = compare.build_suite("blr", ["nuts"], [0], {"params": {"noise": 0.5}})
    assert {json.dumps(cell.options["params"]) for cell in given.cells} == {'{"noise": 0.5}'}


def test_zoo_compare_refuses_an_engine_that_cannot_hold_them_fixed():
    with pytest.raises(OptionError, match="kalman conditions on lgssm's parameters .* pmcmc cannot hold them fixed"):
        compare.build_suite("lgssm", ["pmcmc"], [0], {})


def test_every_engine_that_defaults_to_the_model_params_declares_its_role():
    for name in inference.engine_names():
        engine = inference.get_engine(name)
        declared = engine.options.get("params")
        defaults_to_model = declared is not None and declared.default is None
        assert defaults_to_model == (engine.role({}) in ("conditions", "starts")), name


def test_a_registration_that_contradicts_its_params_option_is_refused():
    params = {"params": opt.params()}  # defaults to None: the model's defaults
    with pytest.raises(TypeError, match="goes with params_role 'conditions' or 'starts'"):
        inference.register_engine("contradiction", {"continuous"}, params, "", params_role="learns")(lambda: None)
    with pytest.raises(TypeError, match="is not one of conditions, starts, learns"):
        inference.register_engine("typo", {"continuous"}, params, "", params_role="conditioning")(lambda: None)
    assert "contradiction" not in inference.engine_names() and "typo" not in inference.engine_names()


def test_run_says_which_parameters_it_fixed_at_the_defaults(capsys):
    idata = inference.run("blr", engine="exact", seed=0, num_samples=200)
    err = capsys.readouterr().err
    assert "note: exact conditions on parameters fixed at blr's defaults: noise=0.25" in err
    assert json.loads(idata.posterior.attrs["fixed_at_defaults"]) == ["noise"]
    assert json.loads(idata.posterior.attrs["fixed_params"]) == {"noise": 0.25}

    given = inference.run("blr", engine="exact", seed=0, num_samples=200, params={"noise": 0.5})
    assert "note:" not in capsys.readouterr().err
    assert json.loads(given.posterior.attrs["fixed_at_defaults"]) == []
    assert json.loads(given.posterior.attrs["fixed_params"]) == {"noise": 0.5}

    sampled = inference.run("blr", engine="svi", seed=0, num_steps=100)
    assert "note:" not in capsys.readouterr().err
    assert json.loads(sampled.posterior.attrs["fixed_params"]) == {}


def test_zoo_run_prints_the_note_on_stderr(capsys):
    assert zoo_cli.main(["run", "blr", "--engine", "exact", "--samples", "100"]) == 0
    captured = capsys.readouterr()
    assert "fixed at blr's defaults: noise=0.25" in captured.err
