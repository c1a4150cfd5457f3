"""The benchmark harness: suites, the runner (local and Dask), resume, failure recording, kill safety, report."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from report_pages import is_self_contained

from benchmarks import report, runner, suites
from benchmarks.store import ResultsStore
from zoo.errors import UnknownNameError

ROOT = Path(__file__).resolve().parents[1]

# Two engines that work, one that raises at run time (invalid option), one that does not exist.
TINY = """
description = "tiny suite of the tests"
seeds = [0, 1]

[[models]]
name = "blr"
size = { n = 20, d = 2 }
data_seed = 3
reference = "exact"
options = { params = { noise = 0.25 } }

  [[models.engines]]
  engine = "exact"
  options = { num_chains = 2, num_samples = 200 }

  [[models.engines]]
  engine = "svi"
  options = { guide = "mvn", num_steps = 300, num_samples = 200 }

  [[models.engines]]
  engine = "svi"
  label = "broken"
  options = { num_steps = 0 }

  [[models.engines]]
  engine = "no-such-engine"
"""

# Metrics fixed by the seed (timings and hosts are not).
DETERMINISTIC = ["status", "min_ess_bulk", "min_ess_tail", "max_mean_err_sd", "max_sd_err_rel", "log_evidence"]


def tiny_suite() -> suites.Suite:
    return suites.parse(TINY, "tiny")


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    store = ResultsStore(tmp_path_factory.mktemp("local"))
    lines = []
    result = runner.run_suite(tiny_suite(), store, out=lines.append)
    return store, result, lines


def test_shipped_suites_load():
    for name in ("quick", "gp", "gpssm"):
        suite = suites.load(name)
        assert suite.cells and all(cell.reference in {c.label for c in suite.cells} for cell in suite.cells)
        assert suite.cells[0].is_reference  # references run first


def test_bad_suites_say_what_is_wrong():
    with pytest.raises(UnknownNameError, match="Did you mean 'quick'"):
        suites.load("quik")
    with pytest.raises(suites.SuiteError, match=r"models\[0\] \(blr\): engines\[0\]: unknown key 'engin'"):
        suites.parse('[[models]]\nname = "blr"\n[[models.engines]]\nengin = "nuts"\n', "bad")
    with pytest.raises(suites.SuiteError, match="'reference' is 'exact', which is not one of its engines"):
        suites.parse('[[models]]\nname = "blr"\nreference = "exact"\n[[models.engines]]\nengine = "nuts"\n', "bad")
    with pytest.raises(suites.SuiteError, match="seeds must be a non-empty list"):
        suites.parse('seeds = [-1]\n[[models]]\nname = "blr"\n[[models.engines]]\nengine = "nuts"\n', "bad")


def test_failing_cells_are_recorded_and_the_grid_goes_on(local_run):
    store, result, lines = local_run
    rows = store.rows()
    assert result.ran == 8 and result.failed == 4 and len(rows) == 8
    status = {cell: row["status"] for cell, row in rows.items()}
    assert status == {
        **{f"blr--exact--s{s}": "ok" for s in (0, 1)},
        **{f"blr--svi--s{s}": "ok" for s in (0, 1)},
        **{f"blr--broken--s{s}": "failed" for s in (0, 1)},
        **{f"blr--no-such-engine--s{s}": "failed" for s in (0, 1)},
    }
    error = rows["blr--broken--s0"]["error"]
    assert error.startswith("OptionError: engine 'svi': option num_steps must be an int >= 1")
    assert "unknown engine 'no-such-engine'" in rows["blr--no-such-engine--s1"]["error"]
    svi = rows["blr--svi--s0"]
    # Every metric of compare, timings split, options, versions, host.
    for key in ("ess_per_s", "ess_per_grad", "max_mean_err_sd", "max_sd_err_rel", "compile_s", "run_s", "wall_s"):
        assert isinstance(svi[key], float), key
    assert svi["engine_options"]["num_steps"] == 300 and svi["versions"]["jax"] and svi["host"]
    assert rows["blr--exact--s0"]["max_mean_err_sd"] == 0.0 and rows["blr--exact--s0"]["log_evidence"] < 0
    assert svi["max_mean_err_sd"] < 1.0  # SVI with a full-rank guide is close to the exact posterior
    assert store.has_idata("blr--svi--s1") and not store.has_idata("blr--broken--s1")
    assert any("[8/8] 4 done, 0 running, 4 failed" in line for line in lines)


def test_resume_redoes_nothing(local_run):
    store, _, _ = local_run
    before = {p.name: p.stat().st_mtime_ns for p in store.cells_dir.iterdir()}
    lines = []
    result = runner.run_suite(tiny_suite(), store, resume=True, out=lines.append)
    assert (result.ran, result.skipped) == (0, 8)
    assert {p.name: p.stat().st_mtime_ns for p in store.cells_dir.iterdir()} == before
    with pytest.raises(Exception, match="pass --resume"):
        runner.run_suite(tiny_suite(), store)


def test_changed_cell_spec_is_redone_on_resume(local_run):
    store, _, _ = local_run
    finished = store.rows()
    changed = suites.parse(TINY.replace("num_steps = 300", "num_steps = 301"), "tiny")
    assert sorted(c.id for c in runner.cells_to_run(changed, finished)) == ["blr--svi--s0", "blr--svi--s1"]
    retry = runner.cells_to_run(tiny_suite(), finished, retry_failed=True)
    assert {c.label for c in retry} == {"broken", "no-such-engine"}


def test_killed_run_leaves_only_whole_files_and_resumes(tmp_path):
    # long SVI cells, so that the kill lands mid-run even when every program is already in the compilation cache
    # (with 300 steps all 8 cells once finished in the moment between the first row and the signal)
    slow = TINY.replace("num_steps = 300,", "num_steps = 20000,")
    suite_file = tmp_path / "tiny.toml"
    suite_file.write_text(slow)
    out = tmp_path / "run"
    command = [sys.executable, "-m", "zoo_cli", "bench", str(suite_file), "--out", str(out), "--no-report"]
    # Output to a file, not a pipe nobody reads: XLA can log ~1.5 KB per program it loads from the persistent cache
    # (machine-feature warnings, seen in CI logs), and once a pipe's 64 KB buffer is full the process blocks on its
    # next write and never ends.
    log = (tmp_path / "bench.log").open("w")
    process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while not list((out / "cells").glob("*.json")) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert process.poll() is None, "the run ended before it could be killed"
    process.send_signal(signal.SIGTERM)
    # the signal is handled when the running cell's compiled loop returns (Python runs handlers between bytecodes):
    # seconds on a quiet machine, over a minute on a loaded one; the timeout only guards against a hang
    process.wait(timeout=300)
    log.close()
    store = ResultsStore(out)
    assert not store.temp_files()
    rows = store.rows()  # every row parses
    assert 1 <= len(rows) < 8
    for path in store.cells_dir.glob("*.nc"):
        store.read_idata(path.stem).posterior.load()  # every netCDF opens and reads
    result = runner.run_suite(suites.parse(slow, "tiny"), store, resume=True, out=lambda line: None)
    assert result.skipped == len(rows) and result.ran == 8 - len(rows) and len(store.rows()) == 8


def test_stop_request_ends_the_run_between_cells(tmp_path):
    """run_suite(stop=...) starts no cell after stop says True (the SIGTERM path of ``zoo bench``, which must not
    depend on the signal handler's exception surviving); the stopped run resumes to the full grid."""
    store = ResultsStore(tmp_path)
    first = runner.run_suite(tiny_suite(), store, out=lambda line: None, stop=lambda: True)
    assert first.ran == 1 and len(store.rows()) == 1
    rest = runner.run_suite(tiny_suite(), store, resume=True, out=lambda line: None)
    assert (rest.skipped, rest.ran) == (1, 7) and len(store.rows()) == 8


def test_store_sweeps_temp_files_of_a_killed_writer(tmp_path):
    store = ResultsStore(tmp_path).open()
    (store.cells_dir / "blr--svi--s0.nc.tmp-12345").write_bytes(b"half")
    store.open()
    assert not store.temp_files()


def test_dask_executor_gives_the_same_table(local_run, tmp_path):
    pytest.importorskip("dask.distributed")
    store, _, _ = local_run
    # Seed 0 only (4 cells, one task each, on 2 worker processes): the same cells as the local run's seed 0.
    one_seed = suites.parse(TINY.replace("seeds = [0, 1]", "seeds = [0]"), "tiny")
    dask_store = ResultsStore(tmp_path / "dask")
    result = runner.run_suite(one_seed, dask_store, executor="dask", workers=2, out=lambda line: None)
    assert result.ran == 4
    remote = dask_store.table().sort_index()
    local = store.table().loc[remote.index]
    assert set(remote["executor"]) == {"dask"} and set(local["executor"]) == {"local"}
    for column in DETERMINISTIC:
        a, b = local[column], remote[column]
        if a.map(lambda v: isinstance(v, float)).all():
            np.testing.assert_allclose(a.to_numpy(float), b.to_numpy(float), rtol=1e-9, err_msg=column)
        else:
            assert list(a.fillna("")) == list(b.fillna("")), column
    assert list(local["error"].fillna("")) == list(remote["error"].fillna(""))
    for cell in local.index:
        pair = [_means(table.loc[cell, "posterior_means"]) for table in (local, remote)]
        assert pair[0].keys() == pair[1].keys(), cell
        for name in pair[0]:
            np.testing.assert_allclose(pair[0][name], pair[1][name], rtol=1e-9, err_msg=f"{cell} {name}")


def _means(stored) -> dict:
    """Posterior means of a row (JSON text in the table; NaN for a failed cell)."""
    return json.loads(stored) if isinstance(stored, str) else {}


def test_report_has_a_table_per_model_and_embedded_figures(local_run):
    store, _, _ = local_run
    paths = report.write_report(store)
    md, page = paths["md"].read_text(), paths["html"].read_text()
    assert "## blr" in md and "| exact (reference) | 2/2 | ok |" in md and "## Failed cells" in md
    # errors with their MCSE, what was fixed for every engine, the best engine, the health column (issue 39)
    assert "| mean err (ref sd) ± MCSE |" in md and " ± " in md.split("| svi |")[1].splitlines()[0]
    assert (
        "Parameters fixed for every engine: noise=0.25." in md
        and "Best, averaged over 2 seeds: lowest mean error" in md
    )
    assert "figures/blr-marginals.png" in md and (store.root / "figures" / "blr-ess.png").is_file()
    assert page.count('src="data:image/png;base64,') >= 2 and "<table" in page
    assert "unknown engine" in page and not store.temp_files()
    assert is_self_contained(page)


def test_cli_bench_and_report(local_run, capsys):
    import zoo_cli

    store, _, _ = local_run
    assert zoo_cli.main(["report", str(store.root)]) == 0
    assert "report.html" in capsys.readouterr().out
    assert zoo_cli.main(["bench", "quik"]) == 2
    assert "Did you mean 'quick'" in capsys.readouterr().err
    assert os.path.exists(store.root / "report.html")


def test_the_self_contained_check_sees_links_but_not_base64_text():
    image = '<img src="data:image/png;base64,iVBORw0KGgoB8T0httpoYm3AAAAAElFTkSuQmCC">'
    assert is_self_contained(f'<meta http-equiv="x">{image}')
    assert not is_self_contained(f'{image}<a href="https://example.org">') and not is_self_contained(
        '<img src="figures/a.png">'
    )
