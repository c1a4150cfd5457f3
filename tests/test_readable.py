"""Readable ``zoo run`` output (inference/results/readable.py): parameters in full, a few rows of each large latent
with what was left out, no columns that are NaN in every row."""

import numpy as np
import pandas as pd

import zoo_cli
from inference.results.readable import condense


def _table() -> pd.DataFrame:
    labels = [f"f[{i}]" for i in range(40)] + ["noise", "w[0]", "w[1]"]
    return pd.DataFrame(
        {"mean": np.arange(43.0), "sd": np.ones(43), "r_hat": np.full(43, np.nan)}, index=pd.Index(labels)
    )


def test_condense_keeps_parameters_and_cuts_large_latents():
    shown, notes = condense(_table(), per_variable=5)
    assert list(shown.index) == ["noise", "w[0]", "w[1]", "f[0]", "f[1]", "f[2]", "f[3]", "f[4]"]
    assert list(shown.columns) == ["mean", "sd"]  # r_hat is NaN in every row
    assert notes == ["f: 5 of 40 rows shown, 35 omitted (--all-rows prints them; --out FILE.nc keeps every draw)"]
    everything, notes = condense(_table(), per_variable=5, show_all=True)
    assert len(everything) == 43 and notes == []


def test_point_estimates_print_without_nan_columns(capsys):
    assert zoo_cli.main(["run", "gp/regression", "--engine", "ml2", "--size", "n=20"]) == 0
    out = capsys.readouterr().out
    assert "nan" not in out.lower(), out
    assert all(name in out for name in ("lengthscale", "variance", "noise")) and "point estimates" in out


def test_large_latents_are_cut_with_a_note(capsys):
    argv = ["run", "gp/regression-latent", "--engine", "exact", "--size", "n=30", "--samples", "200"]
    assert zoo_cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "f: 5 of 30 rows shown, 25 omitted" in out and "f[5]" not in out
