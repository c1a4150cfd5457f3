"""gp/regression's ``approx`` option (zoo/approx; docs/approximations.md): the quasiseparable evidence equals the
dense one (it is exact), HSGP's error falls with the number of basis functions at the published rate, unsupported
kernels and inputs fail when the variant is built or the data are seen, and ``ml2`` / ``nuts`` run on each."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest

import inference
import zoo
from zoo import gp, kernels
from zoo.approx import hsgp, quasisep
from zoo.errors import OptionError
from zoo.kernels import KernelError

N = 200
_rng = np.random.default_rng(0)
X = np.sort(_rng.uniform(-3.0, 3.0, (N, 1)), 0)
Y = np.sin(2.0 * X[:, 0]) + 0.3 * _rng.standard_normal(N)
NOISE = 0.09


def fitted(expr: str, scale: float = 1.3, period: float = 2.0) -> kernels.Kernel:
    """The kernel of ``expr`` with every default hyperparameter times ``scale`` (periods: ``period``), so that no
    value is 1 and a swapped parameter (scale for sigma, period for lengthscale) shows."""
    template = kernels.parse(expr)
    values = {
        name: (period if name.endswith("period") else scale * np.asarray(v))
        for name, v in kernels.default_values(template).items()
    }
    return kernels.with_values(template, values, D=1)


QUASISEP_KERNELS = ["M12", "M32", "M52", "Cos", "C", "M32 + M12", "M12 x Cos", "M32 x Cos + C", "M52 + M32 x Cos"]


@pytest.mark.parametrize("expr", QUASISEP_KERNELS)
def test_quasiseparable_log_evidence_equals_the_dense_one(expr):
    """tinygp's O(N) solve against the dense Cholesky of K + noise I on the same 200 points, to 1e-8 (the values
    are ~-100 to -600: a relative 1e-11). Also on the points in shuffled order, which the evidence sorts."""
    kernel = fitted(expr)
    dense = float(gp.log_marginal_likelihood(kernel, X, Y, NOISE))
    assert abs(float(quasisep.evidence(kernel, X, NOISE).log_prob(Y)) - dense) < 1e-8
    perm = np.random.default_rng(1).permutation(N)
    assert abs(float(quasisep.evidence(kernel, X[perm], NOISE).log_prob(Y[perm])) - dense) < 1e-8


def test_the_approx_variants_have_the_dense_programs_sites_and_log_density():
    """Through zoo.get: the quasisep program's log joint (priors + evidence) equals the dense program's at the same
    parameter values, site for site; the HSGP program's differs only by its (small, at m = 128) evidence error."""
    params = {"m320_lengthscale": jnp.array([0.7]), "m320_variance": 1.2, "cos1_variance": 0.5, "cos1_period": 1.5}
    params["noise"] = NOISE
    data = {"X": X, "y": Y}

    def log_joint(**options):
        spec = zoo.get("gp/regression", kernel="M32 + Cos", **options)
        return float(numpyro.infer.util.log_density(spec.program, (), data, params)[0])

    assert abs(log_joint(approx="quasisep") - log_joint()) < 1e-8
    se = {"lengthscale": jnp.array([0.8]), "variance": 1.1, "noise": NOISE}
    dense, approx = (
        float(numpyro.infer.util.log_density(zoo.get("gp/regression", **o).program, (), data, se)[0])
        for o in ({}, {"approx": "hsgp", "num_basis": 128, "boundary_factor": 3.0})
    )
    assert abs(approx - dense) < 1e-6


def hsgp_errors(expr: str, ms, boundary_factor: float = 4.0) -> np.ndarray:
    kernel = fitted(expr, scale=1.0)
    dense = float(gp.log_marginal_likelihood(kernel, X, Y, NOISE))
    return np.array([abs(float(hsgp.evidence(kernel, X, NOISE, m, boundary_factor).log_prob(Y)) - dense) for m in ms])


@pytest.mark.parametrize("expr,ms,floor", [("SE", (16, 32, 64), 1e-6), ("M52", (32, 64, 128, 256), 1e-3)])
def test_hsgp_log_evidence_error_falls_as_the_basis_grows(expr, ms, floor):
    """|log Z_hsgp - log Z_dense| (box 4x the data's half-range, lengthscale 1 on [-3, 3]) falls at every step of
    m until it reaches rounding, and is below ``floor`` at the largest m. Measured: SE 0.42, 1.0e-2, 2e-13 at
    m = 16, 32, 64; M52 2.0, 9.0e-2, 3.0e-3, 2.7e-4 at m = 32 ... 256.

    For M52 the rate too: the spectral density of Matern nu decays as w^-(2 nu + 1), so the truncated mass beyond
    w_m = pi m / (2L) decays as m^-2nu, m^-5 here (Solin & Sarkka 2020, sec. 4; Riutort-Mayol et al. 2023,
    sec. 3.3); the log-log slope between m = 64 and 128 must be near -5 (measured -4.9)."""
    errors = hsgp_errors(expr, ms)
    assert all(b < a or b < 1e-8 for a, b in zip(errors, errors[1:], strict=False)), errors
    assert errors[-1] < floor, errors
    if expr == "M52":
        slope = np.log2(errors[2] / errors[1])
        assert -6.0 < slope < -4.0, slope


@pytest.mark.parametrize(
    "options,error,match",
    [
        ({"kernel": "Lin", "approx": "hsgp"}, KernelError, "hsgp' has no expansion of Lin.*supports SE, M12"),
        ({"kernel": "SE x M32", "approx": "hsgp"}, KernelError, "every pair of basis functions"),
        ({"kernel": "RQ", "approx": "quasisep"}, KernelError, "no state-space form of RQ.*supports M12, M32, M52"),
        ({"kernel": "SE", "approx": "quasisep"}, KernelError, "no state-space form of SE"),
        ({"kernel": "M32_1", "approx": "quasisep"}, KernelError, "one input column"),
        ({"approx": "sparse"}, OptionError, "approx must be a str in \\{dense, hsgp, quasisep, quasisep-parallel\\}"),
        ({"approx": "quasisep", "num_basis": 10}, OptionError, "apply to approx='hsgp' only"),
        ({"approx": "hsgp", "boundary_factor": 1.0}, OptionError, "boundary_factor must be a float"),
        ({"approx": "hsgp", "num_basis": 0}, OptionError, "num_basis must be an int"),
    ],
)
def test_unsupported_variants_fail_when_built(options, error, match):
    with pytest.raises(error, match=match):
        zoo.get("gp/regression", **options)


def test_unsupported_inputs_fail_before_compilation():
    """A 2-D input for quasisep, four columns for HSGP's SE: a KernelError when the program first sees the data
    (tracing, before XLA compiles anything), naming what is supported."""
    X2 = np.column_stack([X[:40, 0], X[:40, 0] ** 2])
    with pytest.raises(KernelError, match="quasisep' takes 1-D inputs.*2 columns"):
        inference.run(zoo.get("gp/regression", kernel="M32", approx="quasisep"), {"X": X2, "y": Y[:40]}, "ml2", 0)
    X4 = np.tile(X[:40], (1, 4))
    with pytest.raises(KernelError, match="SE sees 4 input columns; the expansion takes 1-3"):
        inference.run(zoo.get("gp/regression", approx="hsgp"), {"X": X4, "y": Y[:40]}, "ml2", 0)


def test_quasiseparable_prior_draws_follow_the_inputs_not_their_order():
    """Prior predictive y at shuffled inputs (the evidence sorts them internally and must put each draw back at its
    input): neighbours in x differ by O(spacing / lengthscale), neighbours in the given order by O(1)."""
    x = np.linspace(-3.0, 3.0, 300)[np.random.default_rng(2).permutation(300)][:, None]
    kernel = kernels.Matern52(variance=1.0, lengthscale=jnp.array([1.0]))
    draw = np.asarray(quasisep.evidence(kernel, x, 1e-8).sample(jax.random.key(0)))
    by_x = np.diff(draw[np.argsort(x[:, 0])])
    assert np.max(np.abs(by_x)) < 0.1 < np.mean(np.abs(np.diff(draw)))


@pytest.fixture(scope="module")
def small_data():
    return zoo.get("gp/regression").simulate(jax.random.key(0), n=40)


@pytest.fixture(scope="module")
def dense_optimum(small_data):
    return inference.run(zoo.get("gp/regression", kernel="M52"), small_data, "ml2", 0).point_estimates


def _approx_spec(approx):
    options = {"approx": approx} | ({"num_basis": 64, "boundary_factor": 2.0} if approx == "hsgp" else {})
    return zoo.get("gp/regression", kernel="M52", **options)


@pytest.mark.parametrize("approx", ["quasisep", "hsgp"])
def test_ml2_on_each_approximation_reaches_the_dense_optimum(approx, small_data, dense_optimum):
    """The same data through inference.run: ml2's optimum of the exact quasisep evidence equals the dense one; HSGP's
    (m = 64, c = 2) is close."""
    ml = inference.run(_approx_spec(approx), small_data, "ml2", 0).point_estimates
    tolerance = 1e-5 if approx != "hsgp" else 2e-2
    for name in ("lengthscale", "variance", "noise"):
        assert np.allclose(ml[name], dense_optimum[name], rtol=tolerance), (name, ml[name].values)


# NUTS on the HSGP rung runs with the slow tests: its log density and gradient are those ml2 optimises above, and
# the recording of the variant is the quasisep case's (docs/performance.md#test-suite).
@pytest.mark.parametrize("approx", ["quasisep", pytest.param("hsgp", marks=pytest.mark.slow)])
def test_nuts_runs_on_each_approximation_and_records_it(approx, small_data):
    """NUTS runs on the approximate evidence and its result records the variant (NUTS on the dense variant runs in
    tests/test_gp.py)."""
    result = inference.run(_approx_spec(approx), small_data, "nuts", 0, num_chains=1, num_warmup=20, num_samples=10)
    recorded = json.loads(result.posterior.attrs["model_options"])
    assert recorded["approx"] == approx and recorded["kernel"] == "M52"
    assert np.all(np.isfinite(result.posterior["lengthscale"]))


def test_the_ladder_measures_each_rung_against_the_exact_one():
    """benchmarks.approximation_ladder's errors: against dense where it ran, else against quasisep (also exact); the
    ML lengthscale against the first exact rung that was fitted; the reference rows print "ref"."""
    from benchmarks.approximation_ladder import table, with_errors

    rows = [
        {"problem": "p", "N": 10, "rung": "dense", "log_joint": -5.0, "grad_s": 1.0},
        {"problem": "p", "N": 10, "rung": "quasisep", "log_joint": -5.5, "grad_s": 0.1, "ml_lengthscale": 2.0},
        {"problem": "p", "N": 10, "rung": "hsgp", "log_joint": -6.0, "grad_s": 0.2, "ml_lengthscale": 2.5},
        {"problem": "p", "N": 20, "rung": "quasisep", "log_joint": -9.0, "grad_s": 0.1},
        {"problem": "p", "N": 20, "rung": "hsgp", "log_joint": -9.25, "grad_s": 0.2},
    ]
    out = with_errors(rows)
    assert [r.get("logz_err") for r in out] == [None, 0.5, 1.0, None, 0.25]
    assert [r.get("ml_lengthscale_rel_err") for r in out] == [None, None, 0.25, None, None]
    assert out[0]["reference"] and out[1]["ml_reference"] and out[3]["reference"]
    assert table(out).splitlines()[2].endswith("| ref | - |")
    # a rung that refuses the problem (quasisep in 2-D) is neither the reference nor measured; its row says why
    refused = {"problem": "q", "N": 10, "rung": "quasisep", "refused": "takes 1-D inputs"}
    dense = {"problem": "q", "N": 10, "rung": "dense", "log_joint": -1.0, "grad_s": 1.0}
    hsgp_row = {"problem": "q", "N": 10, "rung": "hsgp", "log_joint": -1.5, "grad_s": 0.5}
    out = with_errors([dense, refused, hsgp_row])
    assert [r.get("logz_err") for r in out] == [None, None, 0.5] and out[0]["reference"]
    assert "refused: takes 1-D inputs" in table(out).splitlines()[3]
    # predictive errors: the largest mean difference in exact sds, the largest relative variance difference
    dense |= {"pred_mean": [0.0, 1.0], "pred_var": [4.0, 1.0]}
    hsgp_row |= {"pred_mean": [1.0, 1.5], "pred_var": [2.0, 1.5]}
    out = with_errors([dense, refused, hsgp_row])
    assert out[2]["pred_mean_err"] == 0.5 and out[2]["pred_var_err"] == 0.5 and "pred_mean_err" not in out[0]


def test_approximate_predictions_against_the_dense_ones():
    """The ladder's predictive errors rest on these: quasisep's (tinygp's conditioning) equal the dense predictive
    mean and variance of f to rounding (measured ~1e-14); HSGP's approach them as m grows (SE, lengthscale 0.9, box
    3x: measured 8.8e-2 at m = 16 and ~1e-14 at m = 64 for the mean)."""
    X_new = jnp.linspace(-3.5, 3.5, 40)[:, None]
    values = {"lengthscale": jnp.array([0.9]), "variance": 1.2}
    m32, se = (kernels.with_values(kernels.parse(e), values, D=1) for e in ("M32", "SE"))

    def exact(k):
        return jax.jit(lambda: tuple(gp.predict(k, X, Y, NOISE, X_new, full_cov=False)))()

    mean, var = jax.jit(lambda: quasisep.predict(m32, X, Y, NOISE, X_new))()
    ref_mean, ref_var = exact(m32)
    assert np.max(np.abs(mean - ref_mean)) < 1e-10 and np.max(np.abs(var - ref_var)) < 1e-10
    ref_mean, ref_var = exact(se)
    errors = [
        np.max(np.abs(jax.jit(lambda m=m: hsgp.predict(se, X, Y, NOISE, X_new, m, 3.0))()[0] - ref_mean))
        for m in (16, 64)
    ]
    assert errors[0] > 1e-3 and errors[1] < 1e-8, errors


# -- HSGP in the latent-GP (non-conjugate) models ------------------------------------------------------------------


def _latent_f_map(spec, X_in, values):
    """(m, A) of the program's latent f = m + A beta at hyperparameter ``values``: f is linear in the site beta."""

    def f_of(beta):
        conditioned = numpyro.handlers.substitute(spec.program, data={**values, "beta": beta})
        return numpyro.handlers.trace(numpyro.handlers.seed(conditioned, 0)).get_trace(X=X_in)["f"]["value"]

    seeded = numpyro.handlers.seed(numpyro.handlers.substitute(spec.program, data=values), 0)
    beta0 = jnp.zeros(numpyro.handlers.trace(seeded).get_trace(X=X_in)["beta"]["value"].shape)
    return jax.jit(lambda b: (f_of(b), jax.jacfwd(f_of)(b)))(beta0)  # one program, not hundreds of eager ops


def test_hsgp_latent_prior_covariance_tends_to_the_dense_one():
    """The HSGP program's f = m + A beta, beta ~ N(0, I), has covariance A A^T; through the program itself, it tends
    to the kernel's Gram matrix K as num_basis grows: the largest entry error falls from m = 8 to 32, and at m = 32
    it is below 1e-7 (SE, lengthscale 1, 30 points on [-3, 3], box L = 9: SE's spectral mass beyond w_m = pi m /
    (2 L) is ~exp(-w_m^2 / 2) ~ 1e-7 at m = 32; measured 0.21, 6.6e-3, 2.6e-8 for m = 8, 16, 32). The dense
    model's prior adds its jitter 1e-6 mean(diag K) to K. Through gp/poisson, whose f has a constant mean."""
    X_in = np.linspace(-3.0, 3.0, 30)[:, None]
    values = {"lengthscale": jnp.array([1.0]), "variance": 1.3, "mean": 0.4}
    template = kernels.parse("SE")
    K = kernels.with_values(template, values, D=1)(X_in)
    errors = []
    for m in (8, 16, 32):
        spec = zoo.get("gp/poisson", kernel="SE", approx="hsgp", num_basis=m, boundary_factor=3.0)
        used = {k: v for k, v in values.items() if k in spec.default_params}
        assert set(used) == set(spec.default_params)  # every hyperparameter fixed: none drawn from its prior
        mean, A = _latent_f_map(spec, X_in, used)
        assert np.allclose(mean, values["mean"])
        errors.append(float(np.max(np.abs(A @ A.T - K))))
    assert errors[0] > errors[1] > errors[2] and errors[2] < 1e-7, errors


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"kernel": "Lin", "approx": "hsgp"}, KernelError, "supports SE, M12, M32, M52"),
        ({"kernel": "SE x M32", "approx": "hsgp"}, KernelError, "product"),
        ({"approx": "hsgp", "parameterisation": "centred"}, OptionError, "whitened by construction"),
        ({"num_basis": 64}, OptionError, "approx='hsgp' only"),
        ({"approx": "quasisep"}, OptionError, "approx"),
    ],
)
def test_unsupported_latent_hsgp_variants_fail_when_built(options, error, match):
    with pytest.raises(error, match=match):
        zoo.get("gp/cox", **options)


@pytest.mark.parametrize("family", ["gp/classification", "gp/poisson", "gp/cox", "gp/cox2d", "gp/robust"])
def test_every_latent_family_offers_hsgp_to_the_continuous_engines_only(family):
    spec = zoo.get(family, approx="hsgp", num_basis=8)
    assert spec.capabilities == frozenset({"continuous"}) and "basis expansion" in spec.notes


def test_latent_hsgp_refuses_four_inputs_and_the_dense_prior_engines_before_compiling():
    """Four input columns: a KernelError from the abstract trace of the sites; laplace (which needs the dense prior
    of the latent_gp view): the engine's capability error naming why."""
    spec = zoo.get("gp/classification", approx="hsgp", num_basis=4)
    data = {"X": np.zeros((5, 4)), "y": np.ones(5)}
    with pytest.raises(KernelError, match="1-3"):
        inference.run(spec, data, engine="nuts")
    with pytest.raises(zoo.errors.IncompatibleEngineError, match="basis expansion"):
        inference.run(spec, {"X": np.zeros((5, 1)), "y": np.ones(5)}, engine="laplace")
