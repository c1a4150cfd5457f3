"""docs/gym.md#references: the reference-posterior format, the stored references, `zoo reference`'s refusals, the
stored reference in `zoo bench`, and the posteriordb export (docs/gym.md#posteriordb).

Agreement of a stored reference with a fresh run: every component's mean and second moment within 4 combined
Monte Carlo standard errors (the reference's MCSE and the fresh run's, in quadrature). For Gaussian errors the chance
that one of K components lands beyond 4 sigma by chance is at most K x 6.3e-5 (under 1 % for the K <= 120 checked
here), so a failure is a real disagreement.
"""

import json
import shlex
import zipfile

import jax
import numpy as np
import pytest

import inference
import zoo
import zoo_cli
from inference.applications import posteriordb
from inference.applications.references import NotCertifiedError, build, choose_engine
from inference.results import diagnostics
from inference.results import references as refs
from inference.results.gym_metrics import NoReferenceError
from zoo.errors import OptionError

STORED = refs.stored()
LATENT = {"lengthscale": 1.0, "variance": 1.0, "noise": 0.09}


def agree_within_mcse(ref: refs.StoredReference, idata, sigmas: float = 4.0) -> None:
    """Every component's mean and E[x^2] of ``idata`` within ``sigmas`` combined MCSE of the reference's."""
    fresh = refs.from_draws({name: idata.posterior[name].values for name in ref.quantities})
    for name, q in ref.quantities.items():
        for moment in ("mean", "second_moment"):
            error = np.abs(getattr(fresh[name], moment) - getattr(q, moment))
            mcse = np.hypot(getattr(fresh[name], f"{moment}_mcse"), getattr(q, f"{moment}_mcse"))
            worst = float(np.max(error / mcse))
            assert worst < sigmas, f"{ref.id}: {name} {moment} differs by {worst:.1f} combined MCSE"


def test_the_format_round_trips_and_names_one_posterior_once(tmp_path):
    quantities = refs.from_gaussian({"f": np.array([0.5, -1.0])}, {"f": np.array([1.0, 2.0])})
    assert np.allclose(quantities["f"].second_moment, [1.25, 5.0])  # m^2 + s^2
    assert np.allclose(quantities["f"].var_second_moment, [2 + 1.0, 32 + 16.0])  # 2 s^4 + 4 m^2 s^2
    ref = refs.StoredReference(
        "gp/classification", {"link": "probit"}, {"n": 2}, 0, {"lengthscale": [1.0]}, "abc", "exact", quantities
    )
    path = ref.save(tmp_path)
    back = refs.load(path)
    assert back.to_json() == ref.to_json() and back.model_options == {}
    # the default link is no option; a scalar and a one-element array are one parameter value
    assert ref.id == refs.reference_id("gp/classification", {}, {"n": 2}, 0, {"lengthscale": 1.0})
    assert refs.find("gp/classification", {}, {"n": 2}, 0, {"lengthscale": 1.0}, tmp_path) is not None
    assert refs.find("gp/classification", {}, {"n": 2}, 0, {"lengthscale": 2.0}, tmp_path) is None
    assert refs.find("gp/classification", {"link": "logit"}, {"n": 2}, 0, {"lengthscale": 1.0}, tmp_path) is None
    with pytest.raises(NoReferenceError, match="zoo reference gp/classification --size n=3"):
        refs.require("gp/classification", {}, {"n": 3}, 0, {"lengthscale": 1.0}, tmp_path)


@pytest.mark.parametrize("ref", STORED, ids=[r.id for r in STORED])
def test_every_stored_reference_is_whole(ref):
    """Its file name is its id, every moment is finite with a non-negative MCSE (0 for exact ones), and a certified
    one passed posteriordb's checks, with its provenance."""
    assert (refs.REFERENCES_DIR / f"{ref.id}.json").is_file()
    for q in ref.quantities.values():
        for moment in refs.MOMENTS:
            assert np.all(np.isfinite(getattr(q, moment))) and np.all(getattr(q, f"{moment}_mcse") >= 0)
            if ref.kind == "exact":
                assert np.all(getattr(q, f"{moment}_mcse") == 0)
    prov = ref.provenance
    assert prov["command"].startswith(f"zoo reference {ref.model}") and prov["versions"] and prov["date"]
    args = zoo_cli.build_parser().parse_args(shlex.split(prov["command"])[1:])  # the command regenerates it
    assert len(args.params) == len(ref.params), prov["command"]
    if ref.kind == "certified":
        assert all(prov["checks_made"].values()), prov["checks_made"]
        assert prov["chains"] * prov["draws_per_chain"] >= refs.MIN_DRAWS and prov["diagnostics"]["max_r_hat"] < 1.01


@pytest.mark.slow
@pytest.mark.parametrize("ref", STORED, ids=[r.id for r in STORED])
def test_every_stored_reference_matches_its_data(ref):
    """(slow: a simulation per model.) Its data are still what the model simulates: a changed simulator makes a
    reference stale, and the benchmark then refuses to use it (``benchmarks.runner.stored_reference``)."""
    spec = zoo.get(ref.model, **ref.model_options)
    dataset = spec.simulate(jax.random.key(ref.data_seed), **ref.size)
    assert refs.data_digest(dataset.observed) == ref.data_sha256, f"{ref.id} is stale: rebuild it"


def test_an_exact_reference_agrees_with_fresh_exact_draws():
    ref = refs.require("gp/regression-latent", {}, {"n": 20}, 0, LATENT)
    spec = zoo.get("gp/regression-latent")
    data = spec.simulate(jax.random.key(0), n=20)
    assert refs.data_digest(data.observed) == ref.data_sha256  # not stale
    idata = inference.run(spec, data, engine="exact", seed=3, num_chains=2, num_samples=2000, params=LATENT)
    agree_within_mcse(ref, idata)
    # and the stored reference is what the benchmark compares against: its errors carry only the run's MCSE
    row = diagnostics.compare({"exact": idata}, reference=ref).iloc[0]
    assert row["max_mean_err_z"] < 4 and row["max_sd_err_z"] < 4


@pytest.mark.slow
@pytest.mark.parametrize("model", ["gp/classification", "gp/poisson", "gp/robust", "gp/svgp-nonconjugate"])
def test_a_certified_reference_agrees_with_a_short_fresh_nuts_run(model):
    """(slow: a NUTS compilation per model, 20-40 s on 2 cores.)"""
    matches = [r for r in STORED if r.model == model and r.kind == "certified" and not r.model_options]
    assert matches, f"no certified reference of {model} stored"
    ref = matches[0]
    spec = zoo.get(model)
    data = spec.simulate(jax.random.key(ref.data_seed), **ref.size)
    idata = inference.run(
        spec, data, "nuts", seed=11, num_chains=4, num_warmup=500, num_samples=1000, params=ref.params
    )
    agree_within_mcse(ref, idata)


def test_zoo_reference_refuses_what_cannot_make_a_reference_before_running():
    assert choose_engine(zoo.get("gp/regression-latent")) == "exact"
    assert choose_engine(zoo.get("lgssm")) == "kalman"
    assert choose_engine(zoo.get("gp/classification")) == "nuts"
    with pytest.raises(OptionError, match="only exact, kalman, nuts"):
        choose_engine(zoo.get("gp/classification"), "mala")
    with pytest.raises(OptionError, match="needs a conjugate view"):
        choose_engine(zoo.get("gp/classification"), "exact")
    with pytest.raises(OptionError, match="no engine that can make a reference"):
        choose_engine(zoo.get("iwmm"))
    with pytest.raises(OptionError, match="thin must be"):
        build("gp/classification", size={"n": 5}, thin=0)
    with pytest.raises(OptionError, match="takes only target_accept"):  # the stored command could not regenerate it
        build("gp/classification", size={"n": 5}, engine_options={"max_tree_depth": 5})
    assert choose_engine(zoo.get("gp/svgp")) == "exact"  # without minibatches: the conjugate view
    with pytest.raises(OptionError, match="samples 1028 quantities"):  # 32 x 32 weights and 4 hyperparameters
        build("gp/cox2d", {"grid": 6, "approx": "hsgp"})


def test_a_run_failing_posteriordbs_criteria_is_not_a_reference():
    rng = np.random.default_rng(0)
    iid = {"x": rng.standard_normal((10, 1000, 3))}
    checks, diag = refs.certify(iid, divergences=0, efmi=np.full(10, 1.0), iterations=100_000)
    assert all(checks.values()), diag
    sticky = {"x": np.repeat(rng.standard_normal((10, 100, 3)), 10, axis=1)}  # each draw repeated 10 times
    checks, _ = refs.certify(sticky, divergences=1, efmi=np.full(10, 1.0), iterations=100_000)
    assert not checks["ess_above_lower_bound"] and not checks["no_divergent_transitions"]
    four = {"x": rng.standard_normal((2, 1000, 3))}
    assert not refs.certify(four, 0, np.ones(2), 20_000)[0]["nchains_is_gte_4"]
    assert issubclass(NotCertifiedError, Exception)


def test_the_ess_bound_is_joint_over_the_quantities():
    """posteriordb's bound of joint probability 0.95: each quantity's central interval at 1 - alpha with
    alpha = 1 - 0.95^(1/K), read from the simulated null table; more quantities, wider intervals."""
    table = json.loads(refs.ESS_NULL_TABLE.read_text())
    one = refs.ess_bounds(10_000, 1)["ess_tail"]
    low = float(np.interp(np.log(0.025), np.log(table["probabilities"]), table["tail"]))
    np.testing.assert_allclose(one[0], 10_000 * low, rtol=1e-12)
    sixty = refs.ess_bounds(10_000, 60)
    assert sixty["ess_tail"][0] < one[0] and sixty["ess_tail"][1] > one[1]
    assert sixty["ess_bulk"][0] > sixty["ess_tail"][0]  # the tail ESS of independent draws is biased low
    with pytest.raises(OptionError, match="resolves at most"):
        refs.ess_bounds(10_000, 5000)


def test_a_suite_asking_for_a_missing_stored_reference_is_refused_before_running():
    from benchmarks import runner, suites

    text = """
[[models]]
name = "gp/poisson"
size = { n = 7 }
reference = "stored"
  [[models.engines]]
  engine = "mala"
"""
    missing = runner.missing_references(suites.parse(text, "t").cells)
    assert len(missing) == 1 and "zoo reference gp/poisson --size n=7" in missing[0]
    assert runner.missing_references(suites.load("gym").cells) == []


# posteriordb's documented layout (stan-dev/posteriordb doc/DATABASE_CONTENT.md; files of posterior_database/)
REQUIRED = {
    "posteriors": {
        "name",
        "model_name",
        "data_name",
        "reference_posterior_name",
        "dimensions",
        "added_by",
        "added_date",
    },
    "models/info": {"name", "title", "model_code", "added_by", "added_date"},
    "data/info": {"name", "title", "data_file", "added_by", "added_date"},
    "reference_posteriors/draws/info": {"name", "inference", "diagnostics", "checks_made", "added_by", "added_date"},
}


def test_the_posteriordb_export_follows_its_documented_layout(tmp_path):
    exported = [r for r in STORED if r.kind == "exact"][:3]
    assert len(exported) == 3
    written = {ref.id: posteriordb.export(ref, tmp_path)[0] for ref in exported}
    assert len(list((tmp_path / "posteriors").glob("*.json"))) == 3
    for ref in exported:
        path = written[ref.id]
        post = json.loads(path.read_text())
        assert REQUIRED["posteriors"] <= set(post) and post["name"] == path.stem
        assert post["name"] == f"{post['data_name']}-{post['model_name']}"  # posteriordb's naming
        model = json.loads((tmp_path / "models" / "info" / f"{post['model_name']}.info.json").read_text())
        data = json.loads((tmp_path / "data" / "info" / f"{post['data_name']}.info.json").read_text())
        info_path = (
            tmp_path / "reference_posteriors" / "draws" / "info" / f"{post['reference_posterior_name']}.info.json"
        )
        info = json.loads(info_path.read_text())
        assert REQUIRED["models/info"] <= set(model) and REQUIRED["data/info"] <= set(data)
        assert REQUIRED["reference_posteriors/draws/info"] <= set(info)
        assert {"method", "method_arguments"} <= set(info["inference"])
        assert (tmp_path / model["model_code"]["numpyro"]).read_text().count("def ") >= 1
        with zipfile.ZipFile(tmp_path / f"{data['data_file']}.zip") as archive:  # stored zipped, as posteriordb does
            arrays = json.loads(archive.read(archive.namelist()[0]))
        assert set(arrays) == set(zoo.get(ref.model).data_shapes)  # the program's data arguments
        names = info["diagnostics"]["diagnostic_information"]["names"]
        assert len(names) == sum(post["dimensions"].values())
        for statistic in ("mean", "mean_squared_value"):
            folder = tmp_path / "reference_posteriors" / "summary_statistics" / statistic
            values = json.loads((folder / statistic / f"{post['name']}.json").read_text())
            assert values["names"] == names and len(values[statistic]) == len(names) == len(values["mcse_mean"])
            assert (folder / "info" / f"{post['name']}.info.json").is_file()


def test_the_report_ranks_engines_by_gradients_to_b2():
    import pandas as pd

    from benchmarks import report

    curve = {"grads": [10.0, 100.0, 1000.0], "b2": [1.0, 0.1, 0.001]}
    rows = pd.DataFrame(
        [
            {"label": "slow", "status": "ok", "grads_to_b2": 5000.0, "b2_final": 0.005, "b2_curve": curve},
            {"label": "never", "status": "ok", "grads_to_b2": float("inf"), "b2_final": 0.2, "b2_curve": curve},
            {"label": "fast", "status": "ok", "grads_to_b2": 700.0, "b2_final": 0.001, "b2_curve": curve},
            {"label": "exact", "status": "ok", "grads_to_b2": float("nan"), "b2_final": float("nan"), "b2_curve": None},
        ]
    )
    board = report.gym_leaderboard(rows)
    assert list(board.index) == ["fast", "slow", "never"]
    assert board.loc["never", "gradients to b² < 0.01"] == "not reached"
    assert report.gym_leaderboard(rows.drop(columns=["grads_to_b2"])) is None


def test_a_stale_stored_reference_is_not_used():
    """The benchmark compares a cell against a stored reference only when the cell's data are the reference's."""
    from types import SimpleNamespace

    from benchmarks import runner, suites

    cell = suites.Cell("gp/regression-latent", "exact", "exact", 0, {}, {"n": 20}, 0, suites.STORED)
    attrs = {"fixed_params": json.dumps({k: [v] if k == "lengthscale" else v for k, v in LATENT.items()})}
    idata = SimpleNamespace(posterior=SimpleNamespace(attrs=attrs))
    ref = refs.require("gp/regression-latent", {}, {"n": 20}, 0, LATENT)
    found, note = runner.stored_reference(runner.CellOutcome(cell, idata, data_sha256=ref.data_sha256))
    assert found is not None and note == f"stored:{ref.id}"
    found, note = runner.stored_reference(runner.CellOutcome(cell, idata, data_sha256="other"))
    assert found is None and "stale" in note


def test_zoo_reference_says_why_in_one_line(capsys):
    import zoo_cli

    assert zoo_cli.main(["reference", "gp/classification", "--size", "n=5", "--engine", "mala"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("zoo: error: engine 'mala' cannot make a reference") and "\n" not in error
    assert zoo_cli.main(["reference", "gp/poisson", "--size", "n=7", "--export", "unused"]) == 2
    assert "zoo reference gp/poisson --size n=7" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("ref", [r for r in STORED if "prepared_data" in r.provenance], ids=lambda r: r.id)
def test_a_stored_references_prepared_data_are_what_run_prepares(ref):
    """(slow: an AR1-GP fit.) A sparse GP-SSM's reference records the pseudo-inputs ``inference.run``'s preparation
    chose (docs/gym.md#gpssm-references); the same step on the same simulated data must choose them again, else the
    benchmark's runs would target another posterior."""
    from inference.applications import ar1

    spec = zoo.get(ref.model, **ref.model_options)
    prepared = ar1.prepare(spec, spec.simulate(jax.random.key(ref.data_seed), **ref.size))
    for name, value in ref.provenance["prepared_data"].items():
        np.testing.assert_allclose(np.asarray(prepared.observed[name]), np.asarray(value), rtol=1e-8, atol=1e-10)
