"""inference.applications.structure_report: the numbers of an ABCD report (Duvenaud 2014, sec. 4.1.3 and App. D) and
its pages.

Exact checks: each held-out component mean equals dense conditioning on the other folds (``numpy.linalg.solve``, not
the Cholesky path under test); the greedy order picks, at each step, the component with the lowest CV MAE among all
remaining ones; R^2 of all components equals that of the full posterior mean (``zoo.gp.predict``); the residual R^2
obeys Table 1's identity; the empty model's MAE is mean |y - offset|. The page: well-formed HTML with no external
link, one section and one image per component, the same text in Markdown; rendered in headless Chromium when a
``chromium`` binary is present (marked slow; CI has none), as ``benchmarks/screenshot_report.py`` checks `zoo bench`.
"""

import re
from html.parser import HTMLParser

import numpy as np
import pytest

import zoo  # noqa: F401  (float64)
from inference.applications.structure_report import compute, statistics, write_report
from zoo import gp
from zoo.errors import DataError
from zoo.kernels import SE, WN, Lin, Per

N = 60


def kernel():
    return (
        Lin(variance=4.0, location=1990.0)
        + SE(lengthscale=10.0, variance=1.0) * Per(period=1.0, lengthscale=1.0)
        + SE(lengthscale=0.5, variance=0.3)
        + WN(variance=0.02)
    )


@pytest.fixture(scope="module")
def case():
    rng = np.random.default_rng(1)
    x = 2000.0 + np.arange(N) / 12.0
    y = 10.0 + 2.0 * (x - 2000.0) + np.sin(2 * np.pi * x) + 0.3 * np.sin(3 * x) + 0.2 * rng.normal(size=N)
    x_test = x[-1] + np.arange(1, 7) / 12.0
    y_test = 10.0 + 2.0 * (x_test - 2000.0) + np.sin(2 * np.pi * x_test)
    offset = float(y.mean())
    numbers = compute(
        kernel(), 0.05, x[:, None], y, title="synthetic", offset=offset, X_test=x_test, y_test=y_test, grid_size=80
    )
    return x, y, offset, numbers


def dense_mean(part, full, x_train, y_train, noise, x_new):
    K = np.asarray(full(x_train[:, None])) + noise * np.eye(len(x_train))
    return np.asarray(part(x_new[:, None], x_train[:, None])) @ np.linalg.solve(K, y_train)


def test_folds_are_contiguous_blocks():
    x = np.random.default_rng(0).permutation(np.arange(23.0))
    folds = statistics.contiguous_folds(x)
    assert len(folds) == statistics.NUM_FOLDS
    assert sorted(np.concatenate(folds).tolist()) == list(range(23))
    for block in folds:  # consecutive ranks of x
        ranks = np.sort(np.argsort(np.argsort(x))[block])
        assert np.all(np.diff(ranks) == 1)


def test_held_out_means_are_dense_conditioning(case):
    x, y, offset, numbers = case
    full = kernel()
    parts = [t.kernel() for t in statistics.terms(full)]
    held = statistics.held_out_means(full, parts, x, y - offset, 0.05)
    for block in statistics.contiguous_folds(x)[::3]:
        train = np.setdiff1d(np.arange(N), block)
        for j, part in enumerate(parts):
            expected = dense_mean(part, full, x[train], y[train] - offset, 0.05, x[block])
            np.testing.assert_allclose(held[j, block], expected, rtol=1e-8, atol=1e-10)


def test_greedy_order_and_table(case):
    x, y, offset, numbers = case
    full = kernel()
    parts = [t.kernel() for t in statistics.terms(full)]
    held = statistics.held_out_means(full, parts, x, y - offset, 0.05)
    chosen, prediction = [], np.full(N, offset)
    for row in numbers.rows:
        remaining = [j for j in range(len(parts)) if j not in chosen]
        maes = {j: np.mean(np.abs(y - prediction - held[j])) for j in remaining}
        assert row.mae == pytest.approx(min(maes.values()), rel=1e-12)
        assert maes[row.index] == min(maes.values())
        chosen.append(row.index)
        prediction = prediction + held[row.index]
    assert sorted(chosen) == list(range(len(parts)))
    assert numbers.mae_empty == pytest.approx(np.mean(np.abs(y - offset)), rel=1e-12)
    # all components: the full posterior mean at the data
    mean = offset + np.asarray(gp.predict(full, x[:, None], y - offset, 0.05, x[:, None], full_cov=False).mean)
    assert numbers.rows[-1].r2 == pytest.approx(1 - np.var(y - mean) / np.var(y), rel=1e-9)
    previous = 0.0
    for row in numbers.rows:  # Table 1's identities
        assert row.residual_r2 == pytest.approx(1 - (1 - row.r2) / (1 - previous), abs=1e-9)
        assert row.delta_r2 == pytest.approx(row.r2 - previous, abs=1e-12)
        previous = row.r2
    assert numbers.test_rmse is not None and numbers.test_rmse > 0


class Structure(HTMLParser):
    """Tag balance (void elements excepted), ids and sources of a page."""

    VOID = {"meta", "img", "br", "hr", "link", "input"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.ids, self.links = [], [], [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.append(attrs["id"])
        self.links += [attrs[a] for a in ("src", "href") if a in attrs]
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(f"unbalanced </{tag}>")


def test_report_pages(case, tmp_path):
    x, y, offset, numbers = case
    paths = write_report(numbers, tmp_path, "synthetic")
    page = paths["html"].read_text()
    parser = Structure()
    parser.feed(page)
    assert page.startswith("<!DOCTYPE html>") and not parser.errors and not parser.stack
    assert all(link.startswith("data:image/png;base64,") for link in parser.links)
    assert not re.search(r"https?://|url\(", page)
    count = len(numbers.rows)
    assert [i for i in parser.ids if i.startswith("component-")] == [f"component-{k}" for k in range(1, count + 1)]
    assert page.count("data:image/png;base64,") == count + 2
    markdown = paths["md"].read_text()
    for k, row in enumerate(numbers.rows, start=1):
        assert f"2.{k} Component {k} : {row.description.short.rstrip('.')}" in markdown
        assert row.description.long in markdown
        assert (tmp_path / "synthetic_figures" / f"component-{k}.png").stat().st_size > 0
    assert "| - | - | - | - |" in markdown and "Extrapolation" in markdown


def test_bad_input():
    x = np.arange(30.0)
    with pytest.raises(DataError, match="at least 20"):
        compute(kernel(), 0.1, x[:10, None], x[:10], title="t")
    with pytest.raises(DataError, match="NaN"):
        compute(kernel(), 0.1, x[:, None], np.where(x > 3, x, np.nan), title="t")
    with pytest.raises(DataError, match="one input column"):
        compute(kernel(), 0.1, np.ones((30, 2)), x, title="t")


@pytest.mark.slow  # two Chromium launches: python -m pytest -m slow tests/test_structure_report.py -k chromium
def test_renders_in_chromium(case, tmp_path):
    from benchmarks.screenshot_report import chromium, find_browser

    browser = find_browser()
    if browser is None:
        pytest.skip("no chromium binary")
    paths = write_report(case[3], tmp_path, "synthetic")
    url = paths["html"].resolve().as_uri()
    shot = chromium(browser, f"--screenshot={tmp_path / 'shot.png'}", "--window-size=1000,3000", url)
    assert shot.returncode == 0, shot.stderr[-500:]
    assert (tmp_path / "shot.png").stat().st_size > 0
    dom = chromium(browser, "--dump-dom", url).stdout
    assert dom.count("<table") == 1
    assert dom.count('src="data:image/png;base64,') == len(case[3].rows) + 2
    assert all(f'id="component-{k}"' in dom for k in range(1, len(case[3].rows) + 1))


def test_shipped_series():
    from zoo.data import tsdl

    series = tsdl.load("01-airline")
    assert (len(series.x_train), len(series.x_test)) == (129, 15)  # 144 months, split 90 / 10
    assert np.all(np.diff(np.concatenate([series.x_train, series.x_test])) > 0)
    assert len(tsdl.names()) == 13  # the whole benchmark of Fig 3.6
    with pytest.raises(DataError, match="no series"):
        tsdl.load("02-solar-flares")
