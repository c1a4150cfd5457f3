"""The closed-form limits of the Franzese lecture-notes figure script (paper_figures/franzese_notes_figures.py):
ridge -> OLS as the prior variance grows, and kernel ridge = the GP posterior mean with noise variance lambda."""

import numpy as np

from paper_figures import franzese_notes_figures as fig
from zoo import gp, kernels


def test_ridge_tends_to_ols_and_kernel_ridge_is_the_gp_mean():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 10, 30)
    X = np.stack([x, np.ones_like(x)], 1)
    y = 2 * x + 1 + rng.normal(size=30)
    errors = [np.max(np.abs(fig.ridge(X, y, 1.0 / sp2) - fig.ols(X, y))) for sp2 in (1.0, 1e3, 1e6)]
    assert errors[0] > errors[1] > errors[2] and errors[2] < 1e-6

    xk = np.linspace(0, 2 * np.pi, 15)[:, None]
    se = kernels.SquaredExponential(variance=1.0, lengthscale=1.0)
    grid = np.linspace(-1, 7, 50)[:, None]
    lam = 1e-2
    ours = np.asarray(se(grid, xk)) @ fig.kernel_ridge(np.asarray(se(xk)), np.sin(xk[:, 0]), lam)
    theirs = np.asarray(gp.predict(se, xk, np.sin(xk[:, 0]), lam, grid, full_cov=False).mean)
    np.testing.assert_allclose(ours, theirs, atol=1e-10)


def test_restart_modes_are_told_apart():
    """Figs 6.2/6.3: an optimum that explains the data as noise (tiny signal variance, noise ~ Var y) is "noise";
    the true sine's kernel is "signal" with a small RMSE against f."""
    from paper_figures import franzese_notes_ml2 as ml2

    X, y = ml2.noisy_sine(0, 40)
    grid = np.linspace(0.0, 40.0, 200)[:, None]
    flat = kernels.SquaredExponential(variance=1e-8, lengthscale=1e4)
    assert ml2.classify(flat, float(np.var(y)), X, y, grid)[0] == "noise"
    mode, rmse = ml2.classify(kernels.SquaredExponential(variance=0.5, lengthscale=2.0), 0.09, X, y, grid)
    assert mode == "signal" and rmse < 0.3
