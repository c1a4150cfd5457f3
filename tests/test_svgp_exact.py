"""The exact posterior of ``gp/svgp``'s inducing values at fixed hyperparameters (``zoo.sparse.svgp_conjugate``; the
``conjugate`` view behind ``exact`` and ``zoo reference gp/svgp``, docs/gym.md#references).

Three independent checks, each to float64 rounding (no Monte Carlo): the program's own log joint minus the claimed
log N(v | m, S) is the same number at any v and equals the claimed evidence plus the hyperparameters' prior (so m, S
and the evidence are those of the program); the mean and covariance match Titsias' unwhitened formulas as printed
(Kaiser eq. 2.70: m_u = K_ZZ B^-1 K_ZX y / s2, S_u = K_ZZ B^-1 K_ZZ, B = K_ZZ + K_ZX K_XZ / s2) solved densely; the
evidence equals the ``gp/vfe`` program's log likelihood. A slow check compares a NUTS run with the exact moments.
"""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest
from numpyro.infer.util import log_density

import zoo
from inference.applications.references import choose_engine
from inference.results import references as refs

PARAMS = {"lengthscale": 0.7, "variance": 1.3, "noise": 0.05}


@pytest.fixture(scope="module")
def problem():
    """A small data set made here (the simulator's k-means is slow eagerly); the view's answer, the gaps
    log p(y, v, theta) - log N(v | m, S) at four v and the ``gp/vfe`` program's log joint, in one compiled program."""
    rng = np.random.default_rng(1)
    X = np.sort(rng.uniform(-3.0, 3.0, (30, 1)), axis=0)
    obs = {
        "X": jnp.asarray(X),
        "Z": jnp.asarray(X[::5]),
        "y": jnp.asarray(np.sin(2 * X[:, 0]) + 0.3 * rng.standard_normal(30)),
    }
    values = {"lengthscale": jnp.array([PARAMS["lengthscale"]]), "variance": PARAMS["variance"]}
    values["noise"] = PARAMS["noise"]
    svgp, vfe = zoo.get("gp/svgp").program, zoo.get("gp/vfe").program

    @jax.jit
    def answer(obs, offsets):
        post = zoo.get("gp/svgp").views["conjugate"](values, **obs)
        gaussian = dist.MultivariateNormal(post.mean, post.cov)

        def gap(v):
            return log_density(svgp, (), obs, {**values, "v": v})[0] - gaussian.log_prob(v)

        gaps = jax.vmap(gap)(post.mean + offsets)
        vfe_joint = log_density(vfe, (), obs, values)[0]
        return post.mean, post.cov, post.log_evidence, post.to_sites(post.mean)["v"], gaps, vfe_joint

    offsets = np.concatenate([np.zeros((1, 6)), 2.0 * rng.standard_normal((3, 6))])
    return (
        values,
        obs,
        dict(zip(("mean", "cov", "log_evidence", "v", "gaps", "vfe"), answer(obs, offsets), strict=True)),
    )


def _log_normal(x, mu, sigma) -> float:
    return float(-np.log(x * sigma * np.sqrt(2 * np.pi)) - (np.log(x) - mu) ** 2 / (2 * sigma**2))


def _hyperprior(values) -> float:
    """log p(hyperparameters) under the priors of zoo.sparse._hyperparameters (LogNormal(0, 1), (0, 1), (-2, 1))."""
    return (
        _log_normal(PARAMS["lengthscale"], 0, 1)
        + _log_normal(PARAMS["variance"], 0, 1)
        + _log_normal(PARAMS["noise"], -2, 1)
    )


def _se(A, B):
    """The SE kernel written out: variance exp(-|a - b|^2 / (2 lengthscale^2)); A (n, 1), B (m, 1)."""
    return PARAMS["variance"] * np.exp(-0.5 * (A - B.T) ** 2 / PARAMS["lengthscale"] ** 2)


def test_the_programs_log_joint_is_the_claimed_gaussian_times_the_claimed_evidence(problem):
    values, _, got = problem
    gaps = np.asarray(got["gaps"])
    # log p(y, v | theta) + log p(theta) - log p(v | y, theta) = log p(y | theta) + log p(theta), whatever v is
    assert np.allclose(gaps, gaps[0], rtol=0, atol=1e-8), gaps
    assert np.isclose(gaps[0], float(got["log_evidence"]) + _hyperprior(values), rtol=0, atol=1e-8)
    assert np.array_equal(got["v"], got["mean"])


def test_the_moments_are_titsias_unwhitened_formulas_and_the_evidence_is_vfes(problem):
    values, obs, got = problem
    mean, cov = np.asarray(got["mean"]), np.asarray(got["cov"])
    X, Z, y = (np.asarray(obs[k], dtype=float) for k in ("X", "Z", "y"))
    s2 = PARAMS["noise"]
    Kzz = _se(Z, Z)
    Kzz = Kzz + 1e-6 * np.mean(np.diag(Kzz)) * np.eye(len(Z))  # the model's relative jitter (zoo.gp.cholesky)
    Kzx = _se(Z, X)
    B = Kzz + Kzx @ Kzx.T / s2
    m_u = Kzz @ np.linalg.solve(B, Kzx @ y) / s2
    S_u = Kzz @ np.linalg.solve(B, Kzz)
    L = np.linalg.cholesky(Kzz)  # u = L v
    assert np.allclose(L @ np.asarray(mean), m_u, rtol=1e-7, atol=1e-9)
    assert np.allclose(L @ np.asarray(cov) @ L.T, S_u, rtol=1e-6, atol=1e-10)
    assert np.isclose(float(got["log_evidence"]), float(got["vfe"]) - _hyperprior(values), rtol=0, atol=1e-8)


def test_only_the_full_batch_program_has_a_closed_form():
    assert choose_engine(zoo.get("gp/svgp")) == "exact"
    minibatch = zoo.get("gp/svgp", batch_size=10)
    assert "conjugate" not in minibatch.capabilities and choose_engine(minibatch) == "nuts"


@pytest.mark.slow
def test_nuts_on_the_svgp_program_meets_the_exact_moments():
    """(slow: a NUTS compilation.) Every v's mean and E[v^2] within 4 MCSE of the exact ones (10 quantities: a
    false alarm below 1e-3)."""
    import inference
    from inference.applications.references import build

    exact = build("gp/svgp", size={"n": 30, "m": 5}, data_seed=1, params=PARAMS, log=lambda _: None)
    spec = zoo.get("gp/svgp")
    data = spec.simulate(jax.random.key(1), n=30, m=5)
    idata = inference.run(spec, data, "nuts", seed=2, num_chains=4, num_warmup=500, num_samples=2000, params=PARAMS)
    fresh = refs.from_draws({"v": idata.posterior["v"].values})["v"]
    for moment in ("mean", "second_moment"):
        z = np.abs(getattr(fresh, moment) - getattr(exact.quantities["v"], moment)) / getattr(fresh, f"{moment}_mcse")
        assert float(np.max(z)) < 4, (moment, z)
