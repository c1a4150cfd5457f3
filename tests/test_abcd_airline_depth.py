"""The depth benchmark's table is rebuilt from stamped progress lines: only depths whose last candidate was fitted
count, fits and compile seconds accumulate over depths, failed candidates count as fits."""

import pytest

from benchmarks.abcd_airline_depth import markdown, summarise

LOG = """\
      3.5 depth 1: 2 candidates
      3.5 depth 1 [1/2] SE: bic -75.94, 3.5 s (compile 1.2 s); best SE (-75.94)
      5.0 depth 1 [2/2] RQ: bic -25.58, 1.5 s (compile 0.9 s); best RQ (-25.58)
      5.0 depth 2: 3 candidates
      6.0 depth 2 [1/3] RQ + SE: failed (FitFailure: a, b), 1.0 s (compile 0.5 s); best RQ (-25.58)
      8.0 depth 2 [2/3] RQ x SE: bic 3.25, 2.0 s (compile 1.0 s); best RQ x SE (3.25)
      9.0 depth 2 [3/3] Lin x RQ: bic -4.74, 1.0 s (compile 0.4 s); best RQ x SE (3.25)
      9.5 depth 3: 9 candidates
     11.0 depth 3 [1/9] RQ x SE x SE: bic 4.00, 1.5 s (compile 1.0 s); best RQ x SE x SE (4.00)
"""


def test_rows_of_completed_depths_only():
    rows = summarise(LOG.splitlines())
    assert [r["depth"] for r in rows] == [1, 2]
    assert [r["fits"] for r in rows] == [2, 5]
    assert rows[1]["wall_s"] == 9.0 and rows[1]["fits_per_s"] == pytest.approx(5 / 9.0)
    assert rows[1]["compile_s"] == pytest.approx(1.2 + 0.9 + 0.5 + 1.0 + 0.4)
    assert (rows[1]["best"], rows[1]["bic"]) == ("RQ x SE", 3.25)
    assert markdown(rows).count("\n") == 3
