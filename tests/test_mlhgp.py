"""MLHGP's pieces (``zoo.heteroscedastic``) and the application (``inference.applications.mlhgp``).

* ``gp/fixed-noise``'s log density is log N(y | 0, K + diag(r)) by scipy's dense computation.
* Kersting's step-2 estimate in closed form equals its Monte Carlo form (mean of 1/2 (y - t)^2 over draws t of the
  predictive) within 4.5 Monte Carlo standard errors.
* (slow) On data whose noise sd rises fivefold along x, MLHGP's noise levels rise with the truth's.
"""

import jax
import numpy as np
import pytest
from numpyro.infer.util import log_density
from scipy.stats import multivariate_normal, spearmanr

import zoo
from zoo import heteroscedastic
from zoo.kernels import SquaredExponential


def test_fixed_noise_program_is_the_dense_gaussian():
    rng = np.random.default_rng(0)
    X, r, y = rng.uniform(0, 5, (30, 1)), rng.uniform(0.01, 0.2, 30), rng.normal(size=30)
    params = {"lengthscale": np.array([0.7]), "variance": 1.3}
    value, trace = log_density(heteroscedastic.fixed_noise_gp, (X, r, y), {}, params)
    lik = float(trace["y"]["fn"].log_prob(trace["y"]["value"]))
    K = np.asarray(SquaredExponential(1.3, np.array([0.7]))(X)) + np.diag(r)
    np.testing.assert_allclose(lik, multivariate_normal(np.zeros(30), K).logpdf(y), rtol=1e-10)


def test_empirical_log_noise_is_kerstings_estimator_in_the_limit():
    rng = np.random.default_rng(1)
    y, mean, var = rng.normal(size=5), rng.normal(size=5), rng.uniform(0.1, 2.0, 5)
    t = mean + np.sqrt(var) * rng.standard_normal((200_000, 5))
    terms = 0.5 * (y - t) ** 2
    mc, se = terms.mean(0), terms.std(0) / np.sqrt(terms.shape[0])
    exact = np.exp(np.asarray(heteroscedastic.empirical_log_noise(y, mean, var)))
    assert np.max(np.abs(mc - exact) / se) < 4.5


@pytest.mark.slow  # 3 x 3 ml2 fits
def test_mlhgp_noise_follows_a_rising_noise_level():
    from inference.applications import mlhgp

    data = zoo.get("gp/fixed-noise").simulate(jax.random.key(3), n=150)
    X, y, true_var = (np.asarray(data.observed[k]) for k in ("X", "y", "noise_var"))
    fit = mlhgp.fit(X, y, iterations=3)[-1]
    sd = mlhgp.noise_sd(fit)
    assert spearmanr(sd, np.sqrt(true_var)).statistic > 0.5
    assert sd[X[:, 0] > 4.0].mean() > 2.0 * sd[X[:, 0] < 1.0].mean()
