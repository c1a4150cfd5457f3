"""Bayesian linear regression and GP regression (Franzese 2024, chs. 2-6; Kaiser 2021, sec. 2.4;
docs/sources/franzese.md#blr, docs/sources/franzese.md#gp-regression, docs/sources/kaiser.md#gp-regression).

Sites: ``lengthscale`` (D,), ``variance`` = sigma_v^2, ``noise`` = sigma_n^2 (a variance: the prior is on the
variance, docs/sources/franzese.md#conventions), latent ``z``/``f`` in the latent form, weights ``w`` in BLR.
``gp/regression`` is a family with the option ``kernel``: an expression of the kernel grammar (``"SE x Per + RQ"``,
``zoo.kernels.parse``; docs/sources/duvenaud.md#grammar) whose hyperparameters all get sample sites with priors
(``zoo.kernels.priors``); the default ``"SE"`` is the SE-ARD model with the sites above. Its option ``approx``
(``"dense"``, ``"hsgp"`` with ``num_basis`` and ``boundary_factor``, ``"quasisep"``, ``"quasisep-parallel"``)
replaces the dense evidence by one of ``zoo.approx`` (docs/approximations.md); the sites and priors stay the same.
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from zoo import approx as approximations
from zoo import gp, kernels
from zoo.data.regression import linear_design, noisy_sine
from zoo.errors import OptionError
from zoo.kernels import Kernel, SquaredExponential
from zoo.options import Option
from zoo.registry import ConjugatePosterior, Dataset, ModelSpec, frozen, positive_int, register, register_family

BLR_PRIOR_SCALE = 1.0  # w ~ N(0, I): Franzese eq. 2.17 with Sigma_p = I (docs/sources/franzese.md#blr)


def blr(X, y=None):
    """Bayesian linear regression y = X w + eps (Franzese eqs. 2.12-2.17). X: (N, D), y: (N,)."""
    noise = numpyro.sample("noise", dist.LogNormal(-2.0, 1.0))
    w = numpyro.sample("w", dist.Normal(0.0, BLR_PRIOR_SCALE).expand([X.shape[1]]).to_event(1))
    numpyro.sample("y", dist.Normal(X @ w, jnp.sqrt(noise)).to_event(1), obs=y)


def blr_conjugate(params, X, y) -> ConjugatePosterior:
    """w | y, noise ~ N(A^-1 X^T y / s2, A^-1), A = X^T X / s2 + Sigma_p^-1 (R&W eq. 2.8;
    docs/sources/franzese.md#blr)."""
    prior_cov = BLR_PRIOR_SCALE**2 * jnp.eye(X.shape[1])
    post, log_evidence = gp.linear_gaussian_posterior(prior_cov, X, y, params["noise"])
    return ConjugatePosterior(post.mean, post.cov, lambda w: {"w": w}, log_evidence)


def simulate_blr(key, n: int = 50, d: int = 2) -> Dataset:
    n, d = positive_int("n", n), positive_int("d", d)
    k_x, k_w, k_y = jax.random.split(key, 3)
    X = linear_design(k_x, n, d)
    noise = 0.25
    w = BLR_PRIOR_SCALE * jax.random.normal(k_w, (d,))
    y = X @ w + jnp.sqrt(noise) * jax.random.normal(k_y, (n,))
    return Dataset(observed={"X": X, "y": y}, truth={"w": w, "noise": noise})


def default_priors() -> dict[str, dist.Distribution]:
    """Priors of docs/sources/franzese.md#gp-priors. A function, not a module constant: NumPyro distributions cache
    derived values on first use, and a shared instance first used under a jit trace would leak tracers."""
    return {
        "lengthscale": dist.LogNormal(0.0, 1.0),
        "variance": dist.LogNormal(0.0, 1.0),
        "noise": dist.LogNormal(-2.0, 1.0),
    }


def _hyperparameters(D: int, priors: dict[str, dist.Distribution], kernel: Kernel | None = None):
    """(kernel with sampled hyperparameters, noise variance): the kernel's sites (``zoo.kernels.sample_sites``; for
    the plain SE ``lengthscale`` (D,) and ``variance``), then ``noise``."""
    kernel = kernels.sample_sites(SquaredExponential() if kernel is None else kernel, D, priors)
    noise = numpyro.sample("noise", priors["noise"])
    return kernel, noise


def gp_regression(X, y=None, priors=None, kernel: Kernel | None = None, evidence=None):
    """GP regression with f integrated out: y ~ N(0, K + sigma_n^2 I) (Franzese eq. 3.4 / 6.2).

    ``kernel``: the structure (default SE-ARD); every hyperparameter is a sample site. Priors LogNormal(0, 1) on
    lengthscales and variances (and the other positive hyperparameters), LogNormal(-2, 1) on the noise variance
    (docs/sources/franzese.md#gp-priors, docs/sources/duvenaud.md#kernel-priors). The covariance is factorised
    without jitter unless that fails (``gp.cholesky_with_jitter``), so the log density is the exact evidence.
    ``evidence(kernel, X, noise)``, when given, is the distribution of y instead (``zoo.approx``). X: (N, D), y: (N,).
    """
    if kernel is not None:
        kernels.validate_inputs(kernel, X.shape[1])
    kern, noise = _hyperparameters(X.shape[1], priors or default_priors(), kernel)
    if evidence is not None:
        numpyro.sample("y", evidence(kern, X, noise), obs=y)
        return
    numpyro.sample("y", gp.GaussianEvidence(kern(X) + noise * jnp.eye(X.shape[0])), obs=y)


def kernel_and_noise(estimates, kernel: "Kernel | str" = "SE") -> tuple[Kernel, jax.Array]:
    """(kernel, noise variance) of gp/regression's sites in ``estimates`` (e.g. one chain of an ``ml2`` result's
    point estimates), for the variant built with ``kernel`` (default SE: ``lengthscale`` (D,), ``variance``)."""
    template = kernels.parse(kernel) if isinstance(kernel, str) else kernel
    names = [*kernels.site_names(template), "noise"]
    value = {name: jnp.asarray(estimates[name]) for name in names}
    fitted = kernels.with_values(template, value, D=0)
    return fitted, value["noise"]


def gp_regression_latent(X, y=None):
    """GP regression with latent f in non-centred form: z ~ N(0, I), f = L z, y ~ N(f, sigma_n^2 I).

    (docs/sources/franzese.md#gp-latent; docs/sources/kaiser.md#gp-regression.) Given the hyperparameters the posterior
    of f is eqs. 4.6-4.7, which the ``conjugate`` view computes.
    """
    kernel, noise = _hyperparameters(X.shape[1], default_priors())
    L, _ = gp.cholesky_with_jitter(kernel(X))  # jitter only when K is singular to rounding (many close inputs)
    z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([X.shape[0]]).to_event(1))
    f = numpyro.deterministic("f", L @ z)
    numpyro.sample("y", dist.Normal(f, jnp.sqrt(noise)).to_event(1), obs=y)


def gp_latent_conjugate(params, X, y) -> ConjugatePosterior:
    """z | y ~ N with y = L z + eps; f = L z then has mean K (K + s2 I)^-1 y (Franzese eqs. 4.6-4.7).

    The log evidence is GP regression's, log N(y | 0, K + s2 I), factorised without jitter (the noise makes it
    positive definite): the same number ``gp/regression`` gives. The program's factor L of K gets jitter only when
    K alone does not factorise (``jitter`` > 0 then, and f = L z has covariance K + jitter I)."""
    kernel = SquaredExponential(params["variance"], params["lengthscale"])
    L, jitter = gp.cholesky_with_jitter(kernel(X))
    post, _ = gp.linear_gaussian_posterior(jnp.eye(X.shape[0]), L, y, params["noise"])
    log_evidence = gp.log_marginal_likelihood(kernel, X, y, params["noise"])
    return ConjugatePosterior(post.mean, post.cov, lambda z: {"z": z, "f": L @ z}, log_evidence, jitter)


def simulate_regression(key, n: int = 40, d: int = 1, n_test: int = 100) -> Dataset:
    """Noisy sine sin(2x) on [-3, 3]^d with noise std 0.3 (the probe's test problem)."""
    n, d, n_test = positive_int("n", n), positive_int("d", d), positive_int("n_test", n_test)
    k_train, k_test = jax.random.split(key)
    sine = partial(noisy_sine, low=-3.0, high=3.0, frequency=1.0 / jnp.pi, noise_std=0.3, dims=d)
    X, f, y = sine(k_train, n)
    X_test, f_test, y_test = sine(k_test, n_test)
    return Dataset(
        observed={"X": X, "y": y},
        truth={"f": f, "noise": 0.09},
        test={"X": X_test, "y": y_test},
    )


# The hyperparameter problem of Franzese Figs 6.2/6.3 (docs/sources/franzese.md#hyperposterior):
# sin(2 pi 0.1 x) on [0, 40] with heavy noise. Few points leave two explanations: a period-10 signal, or all
# noise. Priors are broad on the scale of the inputs so both explanations keep posterior mass.
HYPERPOSTERIOR_NOISE_STD = 0.8


def hyperposterior_priors() -> dict[str, dist.Distribution]:
    """Broad priors on the scale of this problem (inputs on [0, 40], unit signal, noise variance 0.64)."""
    return {
        "lengthscale": dist.LogNormal(jnp.log(3.0), 1.5),
        "variance": dist.LogNormal(jnp.log(0.5), 1.0),
        "noise": dist.LogNormal(jnp.log(0.5), 1.0),
    }


def gp_hyperposterior(X, y=None):
    """``gp_regression`` with ``hyperposterior_priors``."""
    gp_regression(X, y, priors=hyperposterior_priors())


def simulate_hyperposterior(key, n: int = 20) -> Dataset:
    n = positive_int("n", n)
    X, f, y = noisy_sine(key, n, 0.0, 40.0, 0.1, HYPERPOSTERIOR_NOISE_STD)
    return Dataset(observed={"X": X, "y": y}, truth={"f": f, "noise": HYPERPOSTERIOR_NOISE_STD**2})


REGRESSION_SHAPES = frozen({"X": ("N", "D"), "y": ("N",)})
GP_DEFAULTS = frozen({"lengthscale": 1.0, "variance": 1.0, "noise": 0.1})

register(
    ModelSpec(
        name="blr",
        summary="Bayesian linear regression with a conjugate Gaussian prior on the weights",
        source="Franzese 2024, sec. 2.3 (eqs. 2.12-2.19); Kaiser 2021, sec. 2.4 (eqs. 2.20-2.21)",
        program=blr,
        simulate=simulate_blr,
        data_shapes=REGRESSION_SHAPES,
        default_params=frozen({"noise": 0.25}),
        capabilities=frozenset({"continuous", "conjugate"}),
        views=frozen({"conjugate": blr_conjugate}),
    )
)
GP_SOURCE = (
    "Franzese 2024, ch. 4, ch. 5 (kernels) and eq. 6.2; Kaiser 2021, sec. 2.4 (eqs. 2.39-2.49); "
    "Duvenaud 2014, ch. 2-3 and App. B (kernel grammar)"
)
KERNEL_OPTION = Option("str", "SE", "kernel expression of the grammar, e.g. 'SE x Per + RQ' or 'SE_0 + Lin_1'")
# docs/approximations.md: which kernels each supports, and how num_basis and boundary_factor set HSGP's error.
APPROX_OPTIONS = {
    "approx": Option(
        "str",
        "dense",
        "evidence: dense Cholesky, hsgp (Hilbert-space basis, 1-3 inputs), quasisep (exact O(N), 1-D) or "
        "quasisep-parallel (the same, O(log N) depth for GPUs)",
        choices=approximations.APPROXIMATIONS,
    ),
    "num_basis": Option("int", 32, "hsgp only: basis functions per input column (m^D in all)", minimum=1, maximum=4096),
    "boundary_factor": Option(
        "float", 1.5, "hsgp only: box half-width L = factor x the data's half-range", above=1.0, maximum=100.0
    ),
}


def _approx_evidence(template: Kernel, approx: str, num_basis: int, boundary_factor: float):
    """The ``evidence`` argument of ``gp_regression`` for ``approx`` (None: dense); the kernel is checked here,
    when the variant is built, so an unsupported kernel fails before anything is traced."""
    defaults = (APPROX_OPTIONS["num_basis"].default, APPROX_OPTIONS["boundary_factor"].default)
    if approx != "hsgp" and (num_basis, boundary_factor) != defaults:
        raise OptionError("model 'gp/regression': num_basis and boundary_factor apply to approx='hsgp' only.")
    if approx == "hsgp":
        approximations.hsgp.check_kernel(template)
        return partial(approximations.hsgp.evidence, num_basis=num_basis, boundary_factor=boundary_factor)
    if approx == "quasisep":
        approximations.quasisep.check_kernel(template)
        return approximations.quasisep.evidence
    if approx == "quasisep-parallel":
        approximations.parallel.check_kernel(template)
        return approximations.parallel.evidence
    return None


@register_family(
    "gp/regression",
    {"kernel": KERNEL_OPTION, **APPROX_OPTIONS},
    "GP regression, f integrated out, kernel given by a grammar expression (default SE-ARD); priors on all hypers",
    GP_SOURCE,
)
def _gp_regression(kernel: str, approx: str = "dense", num_basis: int = 32, boundary_factor: float = 1.5) -> ModelSpec:
    template = kernels.parse(kernel)
    evidence = _approx_evidence(template, approx, num_basis, boundary_factor)
    if template == SquaredExponential():
        program, defaults = gp_regression, GP_DEFAULTS  # the plain SE: today's sites, program and defaults
    else:
        program = partial(gp_regression, kernel=template)
        defaults = frozen({**kernels.default_values(template), "noise": GP_DEFAULTS["noise"]})
    if evidence is not None:
        program = partial(program, evidence=evidence)
    where = "" if approx == "dense" else f" ({approx} evidence)"
    return ModelSpec(
        name="gp/regression",
        summary=f"GP regression with kernel {template}{where}, f integrated out; priors on every hyperparameter",
        source=GP_SOURCE,
        program=program,
        simulate=simulate_regression,
        data_shapes=REGRESSION_SHAPES,
        default_params=defaults,
        capabilities=frozenset({"continuous", "collapsed"}),
    )


register(
    ModelSpec(
        name="gp/regression-latent",
        summary="GP regression with latent f in non-centred form (f = L z); conjugate given hyperparameters",
        source="Franzese 2024, eqs. 4.6-4.7 (non-centred form)",
        program=gp_regression_latent,
        simulate=simulate_regression,
        data_shapes=REGRESSION_SHAPES,
        default_params=GP_DEFAULTS,
        capabilities=frozenset({"continuous", "conjugate"}),
        views=frozen({"conjugate": gp_latent_conjugate}),
    )
)
register(
    ModelSpec(
        name="gp/hyperposterior",
        summary="Noisy-sine hyperparameter posterior, bimodal for N=20 (signal vs all-noise); N=40 unimodal",
        source="Franzese 2024, sec. 6 Figs 6.2-6.3 (recast in Bayesian form)",
        program=gp_hyperposterior,
        simulate=simulate_hyperposterior,
        data_shapes=REGRESSION_SHAPES,
        default_params=GP_DEFAULTS,
        capabilities=frozenset({"continuous", "collapsed"}),
    )
)
