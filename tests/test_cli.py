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
    from inference.results import diagnostics

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


def test_figure_rejects_unknown_names_and_bad_jobs_before_running(capsys):
    assert zoo_cli.main(["figure", "mchutchon_sigmoid", "nosuch", "--quick"]) == 2
    assert "unknown figure 'nosuch'" in capsys.readouterr().err
    assert zoo_cli.main(["figure", "--all", "--jobs", "0"]) == 2
    assert "--jobs must be at least 1" in capsys.readouterr().err


def test_parallel_figures_run_every_name_keep_going_and_report_failures(monkeypatch, tmp_path, capsys):
    import sys

    from paper_figures import parallel

    def fake_command(name, quick, out):
        code = 3 if name == "broken" else 0
        return [sys.executable, "-c", f"import sys; print('ran {name}'); sys.exit({code})"]

    monkeypatch.setattr(parallel, "_figure_command", fake_command)
    failed = parallel.run_figures_in_parallel(["a", "broken", "c"], quick=True, out=tmp_path, jobs=2)
    assert failed == ["broken"]
    for name in ("a", "broken", "c"):
        assert (tmp_path / name / "log.txt").read_text() == f"ran {name}\n"
    err = capsys.readouterr().err
    assert "broken: " in err and "FAILED (exit 3)" in err and "ran broken" in err
