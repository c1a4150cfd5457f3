"""docs/architecture.md#bad-input: bad input raises a clear error before anything is compiled."""

import dataclasses
from functools import cache

import jax
import numpy as np
import pytest

import inference
import zoo
from zoo.errors import DataError, IncompatibleEngineError, OptionError, UnknownNameError


@cache
def blr_data():
    """Simulated when a test first asks, not at collection (which every pytest worker repeats)."""
    return zoo.get("blr").simulate(jax.random.key(0), n=10)


@pytest.fixture(autouse=True)
def no_compilation(monkeypatch):
    """Fail the test if an engine gets as far as compiling: errors must come first."""

    def refuse(*args, **kwargs):
        raise AssertionError("compiled before the error was raised")

    monkeypatch.setattr(inference.core.api.Timer, "call", refuse)


def test_unknown_model_suggests_close_matches():
    with pytest.raises(UnknownNameError, match="gp/regression"):
        inference.run("gp/regresion", engine="nuts")


def test_unknown_engine_suggests_close_matches():
    with pytest.raises(UnknownNameError, match="'nuts'"):
        inference.run("blr", blr_data(), engine="nutz")


def test_incompatible_engine_names_the_engines_that_fit():
    with pytest.raises(IncompatibleEngineError, match="engines that fit: .*nuts"):
        inference.run("gp/regression", engine="exact")


def test_nan_in_data():
    y = np.array(blr_data().observed["y"])
    y[3] = np.nan
    with pytest.raises(DataError, match="'y' has 1 NaN"):
        inference.run("blr", {"X": blr_data().observed["X"], "y": y}, engine="exact")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"X": np.ones((10, 2)), "y": np.ones(9)}, "N=9"),
        ({"X": np.ones(10), "y": np.ones(10)}, "expected 2 dimensions"),
        ({"X": np.ones((10, 2))}, "missing data \\['y'\\]"),
        ({"X": np.ones((10, 2)), "y": np.ones(10), "z": np.ones(3)}, "unexpected data \\['z'\\]"),
        ({"X": np.ones((0, 2)), "y": np.ones(0)}, "empty"),
        ({"X": [["a", "b"]], "y": [1.0]}, "not numeric"),
    ],
)
def test_wrong_shapes_and_missing_arrays(data, message):
    with pytest.raises(DataError, match=message):
        inference.run("blr", data, engine="nuts")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"num_samples": -5}, "option num_samples must be an int >= 1, got -5"),
        ({"num_chains": 0}, "option num_chains must be an int >= 1"),
        ({"num_warmup": 2.5}, "option num_warmup must be an int >= 1, got 2.5"),
        ({"num_warmup": 0}, "option num_warmup must be an int >= 1, got 0"),
        ({"num_sample": 10}, "Did you mean 'num_samples'"),
        ({"target_accept": 1.5}, "option target_accept must be a float in \\(0, 1\\)"),
        ({"params": {"noize": 0.1}}, "Did you mean 'noise'"),
        ({"params": {"noise": -1.0}}, "outside the support"),
        ({"params": {"w": [1.0, 2.0, 3.0]}}, "has shape"),
    ],
)
def test_invalid_options(options, message):
    with pytest.raises(OptionError, match=message):
        inference.run("blr", blr_data(), engine="nuts", **options)


def test_invalid_svi_guide_and_seed():
    with pytest.raises(OptionError, match="guide must be one of"):
        inference.run("blr", blr_data(), engine="svi", guide="flow")
    with pytest.raises(IncompatibleEngineError, match="provides no guide"):
        inference.run("blr", blr_data(), engine="svi", guide="model")
    with pytest.raises(OptionError, match="seed"):
        inference.run("blr", blr_data(), engine="exact", seed=-1)


def test_negative_simulation_size():
    with pytest.raises(zoo.errors.ZooError, match="n must be a positive integer"):
        zoo.get("gp/regression").simulate(jax.random.key(0), n=-3)


def _bad_values(option):
    """Values just outside each declared bound, a choice not offered, and a value of the wrong kind."""
    if option.minimum is not None:
        yield option.minimum - 1
    if option.above is not None:
        yield option.above
    if option.maximum is not None:
        yield option.maximum + 1
    if option.below is not None:
        yield option.below
    if option.choices:
        yield "no-such-choice"
    yield {"int": 2.5, "float": "many", "bool": "maybe", "str": 3, "mapping": 3}[option.kind]


def _cheapest_model_for(engine_name):
    fitting = [name for name in zoo.names() if engine_name in inference.engines_for(zoo.get(name))]
    return fitting[0]


ENGINE_OPTION_CASES = [
    (engine_name, option_name, bad)
    for engine_name in inference.engine_names()
    for option_name, option in inference.get_engine(engine_name).options.items()
    for bad in _bad_values(option)
]


@pytest.mark.parametrize(("engine_name", "option_name", "bad"), ENGINE_OPTION_CASES)
def test_every_declared_engine_option_out_of_range_fails_before_any_compilation(
    monkeypatch, engine_name, option_name, bad
):
    """Loops over the declarations themselves, so an option added later is covered; nothing may be simulated,
    prepared or compiled before the error."""

    def must_not_run(*args, **kwargs):
        raise AssertionError("reached simulation or compilation before the option was checked")

    monkeypatch.setattr(inference.core.api.Timer, "call", must_not_run)
    model = dataclasses.replace(zoo.get(_cheapest_model_for(engine_name)), simulate=must_not_run)
    with pytest.raises(OptionError, match=f"option {option_name} must be"):
        inference.run(model, None, engine=engine_name, **{option_name: bad})


def test_an_unknown_parameter_lists_the_parameters_not_the_latent_states():
    with pytest.raises(OptionError) as error:
        tiny = {"y": np.zeros((1, 3, 2)), "lengths": np.array([3.0])}  # no simulation to compile
        inference.run("lgssm", tiny, engine="kalman", params={"noize": 1.0})
    known, _, latent = str(error.value).partition("Latent variables")
    assert "Known: A, C, obs_var, process_var." in known and "x1" not in known
    assert "x, x1" in latent
