"""The GPy-ABCD comparison's checks that need no peer: options, the missing-peer message, the translation of
GPy-ABCD's kernel text, the BIC scales, and the peer's two-step install (pinned dependencies, then --no-deps)."""

import numpy as np
import pytest

from benchmarks import abcd_vs_gpy_abcd as bench
from benchmarks import peers
from inference.applications.structure_search.scales import DataScaledFactory, Scales
from zoo.errors import OptionError
from zoo.kernels import parse


@pytest.mark.parametrize(
    "kwargs",
    [
        {"depth": 0},
        {"depth": bench.MAX_DEPTH + 1},
        {"depth": True},
        {"restarts": 0},
        {"restarts": 1.5},
        {"side": "x"},
        {"processes": 0},
    ],
)
def test_bad_options_are_refused(kwargs):
    options = {"depth": 2, "restarts": 3} | kwargs
    with pytest.raises(OptionError):
        bench.check_options(**options)


@pytest.mark.parametrize(
    "side, structure, match",
    [
        ("both", "PER + C", "side 'theirs'"),
        ("theirs", "PER + __import__('os')", "only kernel names"),
        ("theirs", "PER + ", "expected 'name'"),
        ("theirs", "SIr * LIN", "SIr"),
    ],
)
def test_a_bad_structure_is_refused(side, structure, match):
    with pytest.raises(OptionError, match=match):
        bench.check_options(2, 3, side, structure=structure)


def test_bad_depth_exits_with_a_message_before_any_work(tmp_path, capsys):
    assert bench.main(["--depth", "0", "--results", str(tmp_path / "r")]) == 2
    assert "depth must be" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_a_missing_peer_names_the_install_command(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZOO_PEERS_DIR", str(tmp_path / "peers"))
    assert bench.main(["--side", "theirs", "--results", str(tmp_path / "r")]) == 2
    assert "python -m benchmarks.peers install gpy-abcd" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "theirs, ours",
    [
        ("PER * LIN + C", "ZPer x Lin + C"),
        ("CP(LIN, PER * SE)", "CP(Lin, ZPer x SE)"),
        ("(PER + C) * LIN + WN", "(ZPer + C) x Lin + WN"),
        ("CW(C, LIN)", "CW(C, Lin)"),
    ],
)
def test_gpy_abcd_kernel_text_in_our_grammar(theirs, ours):
    translated = bench.to_zoo_expression(theirs)
    assert translated == ours and str(parse(translated)) == ours


def test_a_kernel_without_counterpart_is_refused():
    with pytest.raises(OptionError, match="SIr"):
        bench.to_zoo_expression("SIr * LIN")


def test_data_scaled_starts_keep_the_structure_and_draw_new_values():
    X = np.linspace(-1.7, 1.7, 50)[:, None]
    factory = DataScaledFactory(Scales.of(X), np.random.default_rng(0))
    for text in ("ZPer x Lin + C", "CP(Lin, ZPer x SE)", "CW(C, Lin) + WN"):
        kernel = bench.data_scaled(parse(text), factory)
        assert str(kernel) == str(parse(text))
    assert float(bench.data_scaled(parse("SE"), factory).lengthscale) != 1.0  # not the parser's default


def test_both_bics_are_shown_on_both_scales():
    ours = {"kernel": "SE", "log_likelihood": -10.0, "num_params": 3, "bic": -12.0, "wall_s": 4.0, "fits": 8}
    theirs = {"kernel": "LIN", "log_likelihood": -9.0, "num_params": 4, "bic": 30.0, "wall_s": 2.0, "fits": 2}
    rows = bench.table_rows(ours | {"process_s": 5.0}, theirs | {"process_s": 3.0}, None)
    assert rows[0]["their_bic"] == 24.0 and rows[0]["our_bic"] == -12.0 and rows[0]["fits_per_s"] == 2.0
    assert rows[1]["their_bic"] == 30.0 and rows[1]["our_bic"] == -15.0
    assert rows[2] == {"search": "GPy-ABCD's kernel, our fit"}


def test_gpy_abcd_installs_its_pins_then_itself_without_dependencies(tmp_path, monkeypatch):
    calls = []

    def fake_run(args, check):
        calls.append([str(a) for a in args])

    monkeypatch.setenv("ZOO_PEERS_DIR", str(tmp_path))
    monkeypatch.setattr(peers.subprocess, "run", fake_run)
    peers.install("gpy-abcd")
    pip = [c for c in calls if "pip" in c]
    assert "--no-deps" not in pip[0] and "numpy==1.26.4" in pip[0] and "GPy==1.13.2" in pip[0]
    assert "--no-deps" in pip[1] and pip[1][-1] == "GPy-ABCD==1.2.3"
    assert (tmp_path / "gpy-abcd").is_dir() and not list(tmp_path.glob(".tmp-*"))


def test_gpy_kernels_map_to_ours_at_their_parameter_values():
    """GPy-ABCD's LIN + PER x LIN + C at hand-written GPy parameter values, against its kernels' formulas written
    out here (LinearWithOffset: v (x - o)(x' - o); PureStdPeriodicKernel: v [exp(cos(2 pi r / p) / l^2) - I_0(1 / l^2)]
    / [exp(1 / l^2) - I_0(1 / l^2)]; Bias: v)."""
    from scipy.special import i0

    def lin(v, o):
        return {"kernel": "LinearWithOffset", "params": {"variance": [v], "offset": [o]}}

    per = {"kernel": "PureStdPeriodicKernel", "params": {"variance": [0.7], "period": [0.4], "lengthscale": [1.3]}}
    tree = {"op": "sum", "parts": [lin(0.9, -0.3), {"op": "product", "parts": [per, lin(1.1, 0.5)]},
                                   {"kernel": "Bias", "params": {"variance": [0.2]}}]}  # fmt: skip
    x = np.linspace(-1.5, 1.5, 7)[:, None]
    a = 1 / 1.3**2
    zper = 0.7 * (np.exp(np.cos(2 * np.pi * (x - x.T) / 0.4) * a) - i0(a)) / (np.exp(a) - i0(a))
    expected = 0.9 * (x + 0.3) * (x + 0.3).T + zper * 1.1 * (x - 0.5) * (x - 0.5).T + 0.2
    kernel = bench.gpy_kernel(tree)
    assert str(kernel) == "Lin + ZPer x Lin + C"
    np.testing.assert_allclose(np.asarray(kernel(x)), expected, rtol=1e-12, atol=1e-14)
    assert bench.intercept_sites(kernel) == ["lin0_offset", "lin2_offset"]
    with pytest.raises(OptionError, match="SigmoidalKernel"):
        bench.gpy_kernel({"kernel": "SigmoidalKernel", "params": {}})


def test_the_checks_at_gpy_parameters_are_rows_of_the_table():
    check = {"kernel": "ZPer + Lin", "log_likelihood": -3.0, "num_params": 6, "bic": -9.0}
    rows = bench.table_rows(None, None, {"kernel": "ZPer + Lin", "log_likelihood": -1.0, "num_params": 7,
                                          "bic": -8.0, "diagnostics": [("at GPy's parameters", check)]})  # fmt: skip
    assert rows[3] == {"search": "at GPy's parameters", "kernel": "ZPer + Lin", "log_likelihood": -3.0, "k": 6,
                       "our_bic": -9.0, "their_bic": 18.0}  # fmt: skip
