"""``approx="quasisep-parallel"`` (zoo/approx/parallel.py; docs/approximations.md#parallel): the parallel-in-time
Kalman filter's log evidence, its gradient and the parallel smoother's predictive mean and variance equal the dense
Cholesky's and tinygp's sequential quasiseparable solve's on small data (exact algorithms: rounding only, measured
~1e-13), and the rung is chosen, recorded and refused like the others."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest

import zoo
from zoo import gp, kernels
from zoo.approx import parallel, quasisep
from zoo.kernels import KernelError

# Small on purpose: the scans unroll into O(log N) levels at trace time, and their compile takes seconds
N = 12
_rng = np.random.default_rng(3)
X = jnp.asarray(np.sort(_rng.uniform(-3.0, 3.0, (N, 1)), 0))
X = X.at[7].set(X[6])  # a repeated input: a zero step (A = I, Q = 0) in the scans
Y = jnp.sin(2.0 * X[:, 0]) + 0.3 * jnp.asarray(_rng.standard_normal(N))
X_NEW = jnp.concatenate([jnp.linspace(-3.5, 3.5, 4), X[9:11, 0]])[:, None]  # outside, between, on the inputs
NOISE = 0.09
# exact algorithms in float64: rounding only (measured <= 2e-13 on these values, |log Z| ~ 50-100)
TOL = 1e-9


def kernel_of(expr: str, lengthscale: float):
    template = kernels.parse(expr)
    values = {
        name: (
            1.3 if name.endswith("period") else jnp.full(jnp.shape(v), lengthscale if "lengthscale" in name else 1.2)
        )
        for name, v in kernels.default_values(template).items()
    }
    return kernels.with_values(template, values, D=1)


def answers(kernel_fn, evidence, predict=None):
    """(log Z, d log Z / d lengthscale[, predictive mean, variance]) of one solver, one compiled program."""

    def log_z(ell):
        return evidence(kernel_fn(ell), X, NOISE).log_prob(Y)

    @jax.jit
    def run(ell):
        value, grad = jax.value_and_grad(log_z)(ell)
        return (value, grad) + (() if predict is None else tuple(predict(kernel_fn(ell), X, Y, NOISE, X_NEW)))

    return [np.asarray(a) for a in run(0.8)]


def dense_evidence(kernel, X_, noise):
    return gp.GaussianEvidence(kernel(X_) + noise * jnp.eye(X_.shape[0]))


def dense_predict(kernel, X_, y, noise, X_new):
    return tuple(gp.predict(kernel, X_, y, noise, X_new, full_cov=False))


def check_against(expr: str, references, with_predictions: bool = True) -> None:
    def kernel_fn(ell):
        return kernel_of(expr, ell)

    mine = answers(kernel_fn, parallel.evidence, parallel.predict if with_predictions else None)
    for evidence, predict in references:
        reference = answers(kernel_fn, evidence, predict if with_predictions else None)
        for name, a, b in zip(("log Z", "gradient", "mean", "variance"), mine, reference, strict=False):
            assert np.max(np.abs(a - b)) < TOL, (expr, name, a, b)


def test_parallel_log_evidence_equals_the_dense_one():
    """The quick check of the default suite: a sum of both Matern kernels (5 states) against the dense Cholesky. The
    gradient and the predictions are in the slow tests: compiling the unrolled scan's gradient takes ~6 s of CPU."""
    kernel = kernel_of("M52 + M32", 0.8)
    dense = jax.jit(lambda: dense_evidence(kernel, X, NOISE).log_prob(Y))()
    assert abs(float(jax.jit(lambda: parallel.evidence(kernel, X, NOISE).log_prob(Y))()) - float(dense)) < TOL


@pytest.mark.slow
@pytest.mark.parametrize("expr", ["M32", "M52", "M32 + M12 x Cos"])
def test_parallel_solve_equals_the_dense_and_the_sequential_one(expr):
    """Each kernel's log Z, gradient and predictive mean and variance (test inputs outside, between and on the
    training inputs) against the dense Cholesky and tinygp's sequential quasiseparable solve."""
    check_against(expr, [(dense_evidence, dense_predict), (quasisep.evidence, quasisep.predict)])


@pytest.mark.slow
def test_unsorted_inputs_and_batched_values():
    """The evidence sorts the points itself (the density is permutation-invariant) and maps over leading axes."""
    kernel = kernel_of("M32", 0.8)
    perm = np.random.default_rng(0).permutation(N)
    ref = float(parallel.evidence(kernel, X, NOISE).log_prob(Y))
    shuffled = parallel.evidence(kernel, X[perm], NOISE)
    batch = shuffled.log_prob(jnp.stack([Y[perm], Y[perm] + 1.0]))
    assert batch.shape == (2,) and abs(float(batch[0]) - ref) < TOL
    assert abs(float(batch[1]) - float(quasisep.evidence(kernel, X, NOISE).log_prob(Y + 1.0))) < TOL


def test_the_rung_is_refused_with_its_name():
    """SE and a 2-D input are refused naming this rung, the former when the variant is built, the latter before
    anything is compiled."""
    with pytest.raises(KernelError, match="approx='quasisep-parallel' has no state-space form of SE"):
        zoo.get("gp/regression", kernel="SE", approx="quasisep-parallel")
    with pytest.raises(KernelError, match="approx='quasisep-parallel' takes 1-D inputs.*2 columns"):
        parallel.evidence(kernel_of("M32", 1.0), jnp.zeros((5, 2)), NOISE)


@pytest.mark.slow
def test_the_program_has_the_dense_programs_log_joint():
    """Through zoo.get: the program's log joint (priors + evidence) equals the dense program's."""
    params = {"lengthscale": jnp.array([0.7]), "variance": 1.2, "noise": NOISE}
    data = {"X": X, "y": Y}

    def log_joint(**options):
        spec = zoo.get("gp/regression", kernel="M52", **options)
        return float(jax.jit(lambda: numpyro.infer.util.log_density(spec.program, (), data, params)[0])())

    assert abs(log_joint(approx="quasisep-parallel") - log_joint()) < TOL


@pytest.mark.slow
def test_ml2_and_nuts_run_on_the_rung_and_record_it():
    """Through inference.run: ml2's optimum equals the sequential rung's (the same exact evidence) and the NUTS
    result records the variant."""
    import json

    import inference

    data = zoo.get("gp/regression").simulate(jax.random.key(0), n=40)
    fits = {
        approx: inference.run(zoo.get("gp/regression", kernel="M52", approx=approx), data, "ml2", 0).point_estimates
        for approx in ("quasisep", "quasisep-parallel")
    }
    for name in ("lengthscale", "variance", "noise"):  # rtol: L-BFGS's stopping, as in tests/test_approx.py
        assert np.allclose(fits["quasisep-parallel"][name], fits["quasisep"][name], rtol=1e-5), name
    spec = zoo.get("gp/regression", kernel="M52", approx="quasisep-parallel")
    result = inference.run(spec, data, "nuts", 0, num_chains=1, num_warmup=20, num_samples=10)
    assert json.loads(result.posterior.attrs["model_options"])["approx"] == "quasisep-parallel"
    assert np.all(np.isfinite(result.posterior["lengthscale"]))
