"""Tempered SMC (``tsmc``) against the exact evidence and posterior of GP regression at fixed hyperparameters.

Tolerances are Monte Carlo errors estimated from independent runs (chains): the mean over R runs of log Z_r must
lie within 4 sd/sqrt(R) of the exact value, plus sd^2/2, the delta-method bias of the log of an unbiased
estimator (E log Z_hat ≈ log Z - Var(Z_hat)/(2 Z^2) ≈ log Z - sd^2/2).
"""

import jax
import numpy as np
import pytest

import inference
import zoo
from zoo.errors import OptionError

MODEL = "gp/regression-latent"


def per_run_log_evidence(idata) -> np.ndarray:
    """The last finite entry of each chain's cumulative log-evidence trace."""
    trace = idata.optimization["log_evidence"].values
    return np.array([row[np.isfinite(row)][-1] for row in trace])


def check_against_exact(n: int, num_runs: int, num_particles: int):
    spec = zoo.get(MODEL)
    data = spec.simulate(jax.random.key(1), n=n)
    params = dict(spec.default_params)
    exact = inference.run(spec, data, engine="exact", params=params, num_chains=1, num_samples=4000)
    smc = inference.run(
        spec, data, engine="tsmc", seed=3, params=params, num_chains=num_runs, num_particles=num_particles
    )
    log_z = per_run_log_evidence(smc)
    exact_log_z = exact.posterior.attrs["log_evidence"]
    sd = log_z.std(ddof=1)
    assert abs(log_z.mean() - exact_log_z) < 4 * sd / np.sqrt(num_runs) + sd**2 / 2, (log_z, exact_log_z)
    # the run-combined estimate (log of the mean of Z_r) is what the engine reports
    assert np.isclose(smc.posterior.attrs["log_evidence"], np.log(np.mean(np.exp(log_z - log_z.max()))) + log_z.max())

    # posterior of f: per-run particle means scatter around the exact posterior mean by their MC error
    run_means = smc.posterior["f"].mean("draw").values  # (R, n)
    exact_mean = exact.posterior["f"].mean(("chain", "draw")).values
    exact_mcse = exact.posterior["f"].std(("chain", "draw")).values / np.sqrt(4000)
    mcse = np.sqrt(run_means.var(axis=0, ddof=1) / num_runs + exact_mcse**2)
    assert np.all(np.abs(run_means.mean(axis=0) - exact_mean) < 4.5 * mcse)
    return log_z, exact_log_z


def test_tsmc_log_evidence_matches_exact_quick():
    check_against_exact(n=15, num_runs=8, num_particles=500)


@pytest.mark.slow
def test_tsmc_log_evidence_matches_exact_full():
    check_against_exact(n=40, num_runs=16, num_particles=1000)


def test_tsmc_rejects_bad_options():
    spec = zoo.get(MODEL)
    data = spec.simulate(jax.random.key(1), n=5)
    with pytest.raises(OptionError, match="num_particles"):
        inference.run(spec, data, engine="tsmc", num_particles=1)
    with pytest.raises(OptionError, match="mutation"):
        inference.run(spec, data, engine="tsmc", mutation="gibbs")
