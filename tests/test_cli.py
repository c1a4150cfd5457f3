"""The ``zoo`` command: list, run (prints R-hat, bulk/tail ESS and ESS/s), clear errors with exit code 2."""

import pytest

import zoo_cli


def test_list_shows_models_engines_and_fit(capsys):
    assert zoo_cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "gp/hyperposterior" in out and "numpyro-nuts" in out
    assert "engines: " in out


def test_run_prints_diagnostics_and_writes_netcdf(capsys, tmp_path):
    out_file = tmp_path / "run.nc"
    argv = ["run", "gp/regression", "--engine", "nuts", "--chains", "2", "--warmup", "100", "--samples", "100"]
    assert zoo_cli.main([*argv, "--out", str(out_file)]) == 0
    out = capsys.readouterr().out
    for column in ("r_hat", "ess_bulk", "ess_tail", "ess_bulk_per_s", "lengthscale[0]", "divergences"):
        assert column in out
    from inference import diagnostics

    idata = diagnostics.from_netcdf(str(out_file))
    assert idata.posterior.attrs["engine"] == "nuts"
    assert not list(tmp_path.glob("*.tmp-*"))


def test_errors_exit_with_code_2_and_a_message(capsys):
    assert zoo_cli.main(["run", "gp/regresion"]) == 2
    assert "Did you mean 'gp/regression'" in capsys.readouterr().err
    assert zoo_cli.main(["run", "blr", "--engine", "nuts", "--samples", "-1"]) == 2
    assert "option num_samples must be an int >= 1, got -1" in capsys.readouterr().err


def test_help_everywhere(capsys):
    for argv in (["--help"], ["run", "--help"], ["list", "--help"], ["figure", "--help"]):
        with pytest.raises(SystemExit) as exit_info:
            zoo_cli.main(argv)
        assert exit_info.value.code == 0
    assert "usage: zoo" in capsys.readouterr().out
