"""Data files (``inference/files/data.py``, ``zoo run --data/--map/--test``): a file gives exactly what the same arrays
passed in Python give, and every malformed file is a one-line DataError naming the file, the column and the row."""

from pathlib import Path

import numpy as np
import pytest

import inference
import zoo
import zoo_cli
from inference.files.data import load_data, load_dataset, parse_mapping
from inference.results import diagnostics
from zoo.errors import DataError

DATA = Path(__file__).resolve().parent / "data"
BLR_CSV = DATA / "blr_small.csv"  # columns id, X_0, X_1, y, note (12 rows)
GP_CSV = DATA / "gp_small.csv"  # columns time, response (15 rows)
BLR_SHAPES = {"X": ("N", "D"), "y": ("N",)}


def blr_arrays() -> dict[str, np.ndarray]:
    """The blr test file read independently of the loader (numpy's own CSV reader, by column position)."""
    table = np.loadtxt(BLR_CSV, delimiter=",", skiprows=1, usecols=(1, 2, 3))
    return {"X": table[:, :2], "y": table[:, 2]}


def test_csv_columns_follow_the_naming_convention():
    loaded = load_data(BLR_CSV, BLR_SHAPES)
    expected = blr_arrays()
    assert loaded.keys() == expected.keys()
    for name in expected:
        np.testing.assert_array_equal(loaded[name], expected[name])
    # a comma list of --map columns keeps its order; a single column makes a one-feature 2-D argument
    swapped = load_data(BLR_CSV, BLR_SHAPES, parse_mapping(["X=X_1,X_0"]))
    np.testing.assert_array_equal(swapped["X"], expected["X"][:, ::-1])
    gp = load_data(GP_CSV, BLR_SHAPES, {"X": "time", "y": "response"})
    assert gp["X"].shape == (15, 1) and gp["y"].shape == (15,)


def test_numbered_columns_are_ordered_by_number(tmp_path):
    header = [f"X_{i}" for i in (10, 2, 0, 1, 3, 4, 5, 6, 7, 8, 9)]
    path = tmp_path / "wide.csv"
    path.write_text(",".join([*header, "y"]) + "\n" + ",".join(h[2:] for h in header) + ",0\n")
    assert load_data(path, BLR_SHAPES)["X"].tolist() == [list(range(11))]


def test_npz_and_netcdf_give_the_csv_arrays(tmp_path):
    import xarray as xr

    expected = blr_arrays()
    np.savez(tmp_path / "d.npz", X=expected["X"], y=expected["y"], unused=np.array(["text"]))
    xr.Dataset({"X": (("n", "d"), expected["X"]), "target": (("n",), expected["y"])}).to_netcdf(
        tmp_path / "d.nc", engine="h5netcdf"
    )
    for loaded in (
        load_data(tmp_path / "d.npz", BLR_SHAPES),
        load_data(tmp_path / "d.nc", BLR_SHAPES, {"y": "target"}),
    ):
        for name in expected:
            np.testing.assert_array_equal(loaded[name], expected[name])
    np.savez(tmp_path / "cols.npz", a=expected["X"][:, 0], b=expected["X"][:, 1], y=expected["y"])
    np.testing.assert_array_equal(load_data(tmp_path / "cols.npz", BLR_SHAPES, {"X": "a,b"})["X"], expected["X"])


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    code = zoo_cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_zoo_run_with_a_csv_equals_the_arrays_in_python(tmp_path, capsys):
    out = tmp_path / "cli.nc"
    argv = ["run", "blr", "--engine", "exact", "--chains", "2", "--samples", "50", "--seed", "3"]
    code, _, err = run_cli([*argv, "--data", str(BLR_CSV), "--out", str(out)], capsys)
    assert code == 0, err
    from_file = diagnostics.from_netcdf(str(out))
    direct = inference.run("blr", blr_arrays(), engine="exact", seed=3, num_chains=2, num_samples=50)
    for name in direct.posterior.data_vars:
        np.testing.assert_array_equal(from_file.posterior[name].values, direct.posterior[name].values)
    assert from_file.posterior.attrs["log_evidence"] == direct.posterior.attrs["log_evidence"]


def test_zoo_run_gp_regression_ml2_with_mapped_columns(tmp_path, capsys):
    out = tmp_path / "ml2.nc"
    argv = ["run", "gp/regression", "--engine", "ml2", "--data", str(GP_CSV), "--map", "X=time", "--map", "y=response"]
    code, _, err = run_cli([*argv, "--out", str(out)], capsys)
    assert code == 0, err
    table = np.loadtxt(GP_CSV, delimiter=",", skiprows=1)
    direct = inference.run("gp/regression", {"X": table[:, :1], "y": table[:, 1]}, engine="ml2", seed=0)
    from_file = diagnostics.from_netcdf(str(out))
    for name in direct.point_estimates.data_vars:
        np.testing.assert_array_equal(from_file.point_estimates[name].values, direct.point_estimates[name].values)


def test_test_file_goes_to_dataset_test(tmp_path, capsys, monkeypatch):
    test_csv = tmp_path / "held_out.csv"
    test_csv.write_text("X_0,X_1,y\n0.5,1,0.25\n-1,1,-0.5\n")
    dataset = load_dataset(BLR_CSV, zoo.get("blr"), test=test_csv)
    np.testing.assert_array_equal(dataset.test["X"], [[0.5, 1], [-1, 1]])
    np.testing.assert_array_equal(dataset.observed["y"], blr_arrays()["y"])
    inputs_only = tmp_path / "inputs.csv"  # prediction inputs without targets: the --map of y does not apply
    inputs_only.write_text("X_0,X_1\n0.5,1\n")
    mapped = load_dataset(BLR_CSV, zoo.get("blr"), {"y": "y"}, test=inputs_only)
    assert list(mapped.test) == ["X"] and mapped.test["X"].tolist() == [[0.5, 1.0]]
    unrelated = tmp_path / "unrelated.csv"
    unrelated.write_text("p,q\n1,2\n")
    with pytest.raises(DataError, match=r"unrelated.csv: no column or variable of the model's data \(X, y\)"):
        load_dataset(BLR_CSV, zoo.get("blr"), test=unrelated)
    seen = {}

    def fake_run(model, data, **kwargs):  # what the CLI hands to inference.run
        seen["data"] = data
        raise DataError("stop here")

    monkeypatch.setattr(inference, "run", fake_run)
    code, _, _ = run_cli(["run", "blr", "--engine", "exact", "--data", str(BLR_CSV), "--test", str(test_csv)], capsys)
    assert code == 2 and seen["data"].test["y"].tolist() == [0.25, -0.5]
    np.testing.assert_array_equal(seen["data"].observed["X"], blr_arrays()["X"])


# (file text, --map, message parts): each malformed file names the file, the column and the row (header = row 1)
MALFORMED = {
    "missing column": ("X_0,X_1,target\n1,2,3\n", None, ["no column y for the model's 'y'", "--map y="]),
    "missing mapped column": ("X_0,X_1,target\n1,2,3\n", "y=targt", ["no column 'targt'", "Did you mean 'target'"]),
    "text in a numeric column": ("X_0,X_1,y\n1,2,3\n4,5,abc\n", None, ["column 'y', row 3", "'abc' is not a number"]),
    "NaN": ("X_0,X_1,y\n1,2,3\n4,nan,6\n", None, ["column 'X_1', row 3", "missing value 'nan'"]),
    "empty cell": ("X_0,X_1,y\n1,2,3\n4,5,6\n,8,9\n", None, ["column 'X_0', row 4", "an empty cell"]),
    "infinite": ("X_0,X_1,y\n1,2,inf\n", None, ["column 'y', row 2", "'inf' is not a finite number"]),
    "too many fields": (
        "X_0,X_1,y\n1,2,3\n4,5,6,7\n",
        None,
        ["row 3 has 4 fields", "header has 3", "after column 'y'"],
    ),
    "too few fields": ("X_0,X_1,y\n1,2,3\n4,5\n", None, ["row 3 has 2 fields", "too few", "after column 'X_1'"]),
    "gap in numbering": ("X_0,X_2,y\n1,2,3\n", None, ["X_1 is missing"]),
    "duplicate column": ("X_0,X_1,y,y\n1,2,3,4\n", None, ["column 'y' appears twice", "row 1"]),
    "header only": ("X_0,X_1,y\n", None, ["no data rows"]),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_csv_is_a_one_line_error_naming_file_column_and_row(case, tmp_path):
    text, mapping, parts = MALFORMED[case]
    path = tmp_path / f"{case.replace(' ', '_')}.csv"
    path.write_text(text)
    with pytest.raises(DataError) as info:
        load_data(path, BLR_SHAPES, parse_mapping([mapping] if mapping else []))
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    for part in parts:
        assert part in message, (part, message)


def test_file_level_errors(tmp_path):
    cases = {
        tmp_path / "absent.csv": "no such file",
        tmp_path / "data.xlsx": "unknown data file type '.xlsx'; use one of .csv, .npz, .nc",
    }
    (tmp_path / "data.xlsx").write_bytes(b"PK")
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    cases[tmp_path / "bad.npz"] = "not a readable .npz file"
    np.savez(tmp_path / "nan.npz", X=np.ones((3, 2)), y=np.array([1.0, np.nan, 2.0]))
    cases[tmp_path / "nan.npz"] = "array 'y', row 2: nan at index [1] (0-based)"
    np.savez(tmp_path / "flat.npz", X=np.ones(3), y=np.ones(3))
    cases[tmp_path / "flat.npz"] = "array 'X' has shape (3,), but the model's 'X' has 2 dimensions"
    for path, part in cases.items():
        with pytest.raises(DataError) as info:
            load_data(path, BLR_SHAPES)
        assert str(info.value).startswith(f"{path}: ") and part in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(DataError, match=r"--map names 'Y', which is not an argument of the model. Did you mean 'y'"):
        load_data(BLR_CSV, BLR_SHAPES, {"Y": "y"})
    with pytest.raises(DataError, match="--map expects ARGUMENT=COLUMN"):
        parse_mapping(["y"])
    with pytest.raises(DataError, match=r"a CSV file holds 1-D and 2-D arrays only"):
        load_data(BLR_CSV, zoo.get("lgssm").data_shapes)


def test_sizes_are_checked_against_the_model_naming_the_file(tmp_path):
    path = tmp_path / "icm.csv"
    path.write_text("X,Y_0,Y_1\n1,2,3\n")  # gp/icm takes Y of shape (N, 3)
    with pytest.raises(DataError, match=rf"^{path}: gp/icm: data 'Y' has size 2 on axis 1; expected 3"):
        load_dataset(path, zoo.get("gp/icm"))


def test_cli_errors_exit_2_with_one_line_before_compiling(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_text("X_0,X_1,y\n1,2,3\n4,5,x\n")
    code, _, err = run_cli(["run", "blr", "--engine", "exact", "--data", str(path)], capsys)
    assert code == 2 and err == f"zoo: error: {path}: column 'y', row 3: 'x' is not a number.\n"
    code, _, err = run_cli(["run", "blr", "--map", "y=target"], capsys)
    assert code == 2 and "--map needs --data" in err
    code, _, err = run_cli(["run", "blr", "--data", str(BLR_CSV), "--size", "n=5"], capsys)
    assert code == 2 and "--size would simulate it" in err
