"""``zoo compare``: engines on one model and one data set, through the runner and report of ``zoo bench``; the rows
are those ``zoo bench`` computes for the same cells, bad input fails before any cell runs."""

from pathlib import Path

import numpy as np
import pytest
from report_pages import is_self_contained

import inference
import zoo_cli
from benchmarks import compare, screenshot_report, suites
from benchmarks.store import ResultsStore

DATA = Path(__file__).resolve().parent / "data"

# Tiny settings: compile time dominates. --chains reaches every engine that has num_chains (SVI's independent runs).
SETTINGS = ["--size", "n=20", "--size", "d=2", "--data-seed", "3", "--chains", "2", "--warmup", "100"]
SETTINGS += ["--samples", "100", "--steps", "300", "-o", "svi.guide=mvn"]

# The same cells as a hand-written suite file for `zoo bench`.
BENCH_TOML = """
description = "the cells of test_compare"
seeds = [0]

[[models]]
name = "blr"
size = { n = 20, d = 2 }
data_seed = 3
reference = "exact"
options = { params = { noise = 0.25 } }  # what zoo compare fixes for every engine: exact conditions on it

  [[models.engines]]
  engine = "exact"
  options = { num_chains = 2, num_samples = 100 }

  [[models.engines]]
  engine = "nuts"
  options = { num_chains = 2, num_warmup = 100, num_samples = 100 }

  [[models.engines]]
  engine = "svi"
  options = { guide = "mvn", num_chains = 2, num_steps = 300, num_samples = 100 }
"""

# Metrics fixed by the seed (timings and hosts are not), as in tests/test_bench.py.
DETERMINISTIC = ["status", "min_ess_bulk", "min_ess_tail", "max_mean_err_sd", "max_sd_err_rel", "log_evidence"]


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    out = tmp_path_factory.mktemp("compare") / "blr"
    with pytest.MonkeyPatch.context() as patch:
        lines = []
        patch.setattr("sys.stderr", _Lines(lines))
        code = zoo_cli.main(["compare", "blr", "--engines", "exact,nuts,svi", *SETTINGS, "--out", str(out)])
    assert code == 0, lines
    return ResultsStore(out), lines


class _Lines:
    def __init__(self, lines):
        self.lines = lines

    def write(self, text):
        self.lines.append(text)

    def flush(self):
        pass


def test_rows_equal_those_of_zoo_bench_on_the_same_cells(compared, tmp_path):
    store, lines = compared
    suite_file = tmp_path / "same.toml"
    suite_file.write_text(BENCH_TOML)
    assert zoo_cli.main(["bench", str(suite_file), "--out", str(tmp_path / "bench"), "--no-report"]) == 0
    bench = ResultsStore(tmp_path / "bench").rows()
    rows = store.rows()
    assert sorted(rows) == sorted(bench) == ["blr--exact--s0", "blr--nuts--s0", "blr--svi--s0"]
    for cell, row in rows.items():
        other = bench[cell]
        for key in ("model", "engine", "seed", "options", "size", "data_seed", "reference", *DETERMINISTIC):
            assert row[key] == other[key], (cell, key, row[key], other[key])
        assert row["posterior_means"] == other["posterior_means"], cell
    assert rows["blr--exact--s0"]["max_mean_err_sd"] == 0.0
    assert rows["blr--nuts--s0"]["max_mean_err_sd"] > 0.0  # a real comparison, not the reference against itself
    assert any("[3/3] 3 done, 0 running, 0 failed" in line for line in lines)  # the runner's progress lines


def test_report_has_the_engines_side_by_side_and_renders(compared, capsys):
    store, _ = compared
    md, page = (store.root / "report.md").read_text(), (store.root / "report.html").read_text()
    assert "| exact (reference) | 1/1 |" in md and "| nuts | 1/1 |" in md and "| svi | 1/1 |" in md
    assert md.index("| exact (reference)") < md.index("| nuts |") < md.index("| svi |")  # order of --engines
    for figure in ("blr-ess.png", "blr-marginals.png", "blr-nuts-trace.png"):
        assert (store.root / "figures" / figure).is_file(), figure
    assert page.count('src="data:image/png;base64,') == 3 and "<table" in page and not store.temp_files()
    assert is_self_contained(page)
    # the stored suite file is the comparison as `zoo bench` would run it
    assert suites.parse(store.suite_text(), "again").cells == suites.parse(BENCH_TOML, "same").cells


def test_report_opens_in_headless_chromium(compared, tmp_path):
    if screenshot_report.find_browser() is None:
        pytest.skip("no chromium binary (CI has none; benchmarks/screenshot_report.py is run by hand)")
    store, _ = compared
    assert screenshot_report.check_report(store.root / "report.html", tmp_path / "shot.png") == []


def test_data_file_reaches_every_engine(tmp_path, capsys):
    out = tmp_path / "file"
    argv = ["compare", "blr", "--engines", "exact,svi", "--data", str(DATA / "blr_small.csv"), "--samples", "50"]
    assert zoo_cli.main([*argv, "--steps", "50", "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"report: {out / 'report.html'} (and report.md)"
    rows = ResultsStore(out).rows()
    assert {row["status"] for row in rows.values()} == {"ok"}
    for row in rows.values():
        assert row["data"]["file"] == str((DATA / "blr_small.csv").resolve()) and len(row["data"]["sha256"]) == 64
    table = np.loadtxt(DATA / "blr_small.csv", delimiter=",", skiprows=1, usecols=(1, 2, 3))
    direct = inference.run("blr", {"X": table[:, :2], "y": table[:, 2]}, engine="exact", num_samples=50)
    stored = ResultsStore(out).read_idata("blr--exact--s0")
    np.testing.assert_array_equal(stored.posterior["w"].values, direct.posterior["w"].values)
    assert "data read from files" in (out / "suite.toml").read_text()


def test_reference_is_an_exact_engine_where_one_fits():
    suite, notes = compare.build_suite("blr", ["nuts", "svi"], [0, 1], {"num_samples": 10})
    assert [c.label for c in suite.cells if c.seed == 0] == ["exact", "nuts", "svi"]
    assert {c.reference for c in suite.cells} == {"exact"} and "added" in notes[0]
    # exact conditions on blr's noise: every engine gets the default (tests/test_one_posterior.py)
    assert all(c.options == {"num_samples": 10, "params": {"noise": 0.25}} for c in suite.cells)
    assert "fixed for every engine" in notes[1]
    suite, notes = compare.build_suite("gp/regression", ["svi", "nuts"], [0], {})
    assert suite.cells[0].label == "svi" and {c.reference for c in suite.cells} == {"svi"} and not notes
    suite, _ = compare.build_suite("lgssm", ["pf", "pgas", "kalman"], [0], {})
    assert {c.reference for c in suite.cells} == {"kalman"} and len(suite.cells) == 3


def test_options_go_to_the_engines_that_declare_them():
    declared = {"nuts": ["num_warmup", "num_samples"], "svi": ["guide", "num_samples"]}
    split = compare.split_options({"num_samples": 5, "num_warmup": 7, "svi.guide": "mvn"}, ["nuts", "svi"], declared)
    assert split == {"nuts": {"num_samples": 5, "num_warmup": 7}, "svi": {"num_samples": 5, "guide": "mvn"}}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--engines", "nutz,svi"], "Did you mean 'nuts'"),
        (["--engines", "kalman"], "engine 'kalman' does not fit model 'blr'"),
        (["--engines", "nuts", "-o", "gide=mvn"], "option 'gide' is not an option of exact, nuts"),
        (["--engines", "svi", "-o", "svi.num_steps=0"], "option num_steps must be an int >= 1"),
        (["--engines", "svi", "-o", "nuts.num_warmup=5"], "names engine 'nuts', which is not compared"),
        (["--engines", "svi", "--seeds", "0,x"], "--seeds expects integers"),
        (["--engines", "svi", "--data", str(DATA / "blr_small.csv"), "--map", "y=note"], "row 2"),
    ],
)
def test_bad_input_fails_before_any_cell_runs(argv, message, tmp_path, capsys):
    out = tmp_path / "never"
    assert zoo_cli.main(["compare", "blr", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not out.exists()  # nothing written, nothing compiled


def test_help(capsys):
    with pytest.raises(SystemExit) as exit_info:
        zoo_cli.main(["compare", "--help"])
    assert exit_info.value.code == 0 and "-o svi.guide=mvn" in capsys.readouterr().out
