"""Checks of an exact expectation against Monte Carlo draws, for the tests."""

import numpy as np


def assert_mc(exact, draws, name):
    """draws (n, ...): per-draw h with E[h] = exact; fails beyond 5 Monte Carlo standard errors (a false alarm
    about once in 1.7 million per element)."""
    draws = np.asarray(draws)
    se = draws.std(0) / np.sqrt(draws.shape[0])
    err = np.abs(np.asarray(exact) - draws.mean(0))
    assert np.all(err < 5 * se + 1e-12), f"{name}: |exact - MC| / SE = {np.max(err / (se + 1e-300)):.2f}"
