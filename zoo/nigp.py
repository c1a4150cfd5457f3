"""GP regression with input noise: the noisy-input GP (NIGP) and the exact errors-in-variables model.

Source: McHutchon (2014) ch. 2, models M3 and M8 (McHutchon & Rasmussen, NIPS 2011; docs/sources/mchutchon.md#eiv,
docs/sources/mchutchon.md#nigp).

Model M3: y_in = x + eps_in, eps_in ~ N(0, diag(sigma_in^2)); y_out = f(x) + eps_out, eps_out ~ N(0, sigma_out^2),
f ~ GP(0, k_SE). NIGP linearises f about the observed input, y_out ~= f(y_in) - eps_in^T df/dx + eps_out, which adds
a per-point "corrective" variance to the diagonal (eqs. 2.75-2.78):

    K_n = K(Y_in, Y_in) + diag(Sigma~(Y_in)) + sigma_out^2 I
    NIGPm: Sigma~(y) = dfbar(y)^T Sigma_in dfbar(y)                                  (posterior-mean slope)
    NIGPu: Sigma~(y) = dfbar(y)^T Sigma_in dfbar(y) + tr(Sigma_in V[df(y)])         (slope uncertainty too)

The slopes come from a "slope GP" on the same data with the same hyperparameters (eqs. 2.85-2.86, 2.100-2.104):
    dfbar(y) = Lambda^{-1} sum_i (y_i - y) k(y_i, y) beta_s,i,    beta_s = K_s^{-1} y_out
    V[df(y)]_dd = sf2 / l_d^2 - (1/l_d^4) g_d^T K_s^{-1} g_d,     g_d,i = (y_i,d - y_d) k(y_i, y)
with K_s = K + sigma_out^2 I in the first pass (the thesis prints K^{-1} without noise in 2.86: a typo, per the
notes) and K_s = K + diag(Sigma~_prev) + sigma_out^2 I in later passes, Sigma~_prev held fixed (stop_gradient).
The slope GP shares the hyperparameters being trained, so ML-II gradients are chained through the slopes
(autodiff does it). NIGP is a pseudo-likelihood (y_out enters through the slopes too), so it is trained by ML-II,
not sampled: the model is registered as ``gp/nigp`` with the capability ``noisy_input``, and the engine ``nigp``
(``inference/optimisation/nigp.py``: the optimiser and the passes) trains it through the ``noisy_input`` view below;
``params_from`` turns the engine's point estimates back into ``NIGPParams``. This module holds the maths only.

Prediction at a noisy test input y* (eqs. 2.87-2.94): ``predict(..., method="plain")`` uses the NIGP posterior at y*
plus Sigma~(y*); ``method="moments"`` integrates over x* ~ N(y*, Sigma_in) with the exact SE moments of
``zoo.moments``. Both add sigma_out^2 (predictions of a noisy y_out; 2.76 omits it).

The exact model M3 with latent true inputs is registered as ``gp/eiv`` (docs/sources/mchutchon.md#eiv): NUTS and SVI run
it, and it is the reference NIGP approximates. MLHGP (M6) is not implemented: see
``paper_figures/mchutchon_square_wave.py``.
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.scipy.linalg import cho_solve, solve_triangular

from zoo import gp
from zoo import moments as mm
from zoo.errors import ZooError
from zoo.kernels import SquaredExponential
from zoo.registry import Dataset, ModelSpec, frozen, positive_int, register

Array = Any
MODES = ("gp", "nigpm", "nigpu")


class NIGPParams(NamedTuple):
    """Hyperparameters (constrained): lengthscale (D,), variance sf2, noise sigma_out^2, input_noise sigma_in^2 (D,)."""

    lengthscale: Array
    variance: Array
    noise: Array
    input_noise: Array

    @property
    def kernel(self) -> SquaredExponential:
        return SquaredExponential(self.variance, self.lengthscale)


# ----------------------------------------------------------------------------------------------------------------
# Slopes and the NIGP covariance


def slope_moments(params: NIGPParams, X: Array, L_s: Array, beta_s: Array, X_at: Array) -> tuple[Array, Array]:
    """Posterior mean slope dfbar (n, D) and per-dimension slope variance diag V[df] (n, D) at X_at (n, D).

    X: (N, D) slope-GP training inputs, L_s: (N, N) Cholesky factor of K_s, beta_s = K_s^{-1} y (N,).
    McHutchon eqs. 2.85-2.86 and 2.100-2.104 (App. A.1 derivatives of the SE kernel).
    """
    ell2 = params.lengthscale**2
    K = params.kernel(X, X_at)  # (N, n)
    diff = X[:, None, :] - X_at[None, :, :]  # (N, n, D): y_i - y
    G = diff * K[:, :, None]  # g_d,i at every test point
    dfbar = jnp.einsum("ind,i->nd", G, beta_s) / ell2
    N, n, D = G.shape
    W = solve_triangular(L_s, G.reshape(N, n * D), lower=True)
    var = params.variance / ell2 - jnp.sum(W**2, 0).reshape(n, D) / ell2**2
    return dfbar, var


def corrective_variance(params: NIGPParams, dfbar: Array, slope_var: Array, mode: str) -> Array:
    """Sigma~ (n,): dfbar^T Sigma_in dfbar (NIGPm), + tr(Sigma_in V[df]) (NIGPu), 0 (plain GP)."""
    if mode == "gp":
        return jnp.zeros(dfbar.shape[0])
    correction = jnp.sum(dfbar**2 * params.input_noise, -1)
    if mode == "nigpu":
        correction = correction + jnp.sum(slope_var * params.input_noise, -1)
    return correction


def training_correction(params: NIGPParams, X: Array, y: Array, mode: str, slope_extra: Array | None = None) -> Array:
    """Sigma~(Y_in) (N,) from the slope GP K_s = K + sigma_out^2 I + diag(slope_extra) (eq. 2.86 corrected)."""
    if mode == "gp":
        return jnp.zeros(X.shape[0])
    extra = jnp.zeros(X.shape[0]) if slope_extra is None else jax.lax.stop_gradient(slope_extra)
    L_s = gp.cholesky(params.kernel(X) + jnp.diag(params.noise + extra))
    beta_s = cho_solve((L_s, True), y)
    dfbar, slope_var = slope_moments(params, X, L_s, beta_s, X)
    return corrective_variance(params, dfbar, slope_var, mode)


def log_likelihood(params: NIGPParams, X: Array, y: Array, mode: str, slope_extra: Array | None = None) -> Array:
    """The NIGP approximate log marginal likelihood log N(y | 0, K + diag(Sigma~) + sigma_out^2 I) (eq. 2.78 negated;
    its D/2 log 2 pi is a typo for N/2 log 2 pi). mode "gp" is the ordinary GP evidence."""
    correction = training_correction(params, X, y, mode, slope_extra)
    L = gp.cholesky(params.kernel(X) + jnp.diag(params.noise + correction))
    return gp.mvn_logpdf_chol(y, jnp.zeros_like(y), L)


# ----------------------------------------------------------------------------------------------------------------
# Starting point, prediction, and the engine's point estimates


def initial_params(X: Array, y: Array) -> NIGPParams:
    """Data-scaled start: lengthscale = std(X) / 2, sf2 = var(y), sigma_out^2 = var(y) / 10, sigma_in = std(X) / 20."""
    sx = jnp.std(X, 0)
    return NIGPParams(0.5 * sx, jnp.var(y), 0.1 * jnp.var(y), (0.05 * sx) ** 2)


def predict(
    params: NIGPParams, X: Array, y: Array, correction: Array, X_new: Array, mode: str = "nigpm", method: str = "plain"
) -> tuple[Array, Array]:
    """Predictive mean and variance (n,) of a noisy y_out at noisy test inputs X_new (n, D) (eqs. 2.87-2.94).

    correction: the training Sigma~ (N,) of the trained model (``params_from``). method "plain": NIGP posterior at
    y* + Sigma~(y*) + sigma_out^2, slopes from the trained posterior (K_s = K_n). method "moments": exact moments of
    f(x*), x* ~ N(y*, Sigma_in), via zoo.moments (with mode "gp" the input covariance is 0: a plain GP).
    """
    if method not in ("plain", "moments"):
        raise ZooError(f"NIGP predict: method must be 'plain' or 'moments', got {method!r}")
    L_n = gp.cholesky(params.kernel(X) + jnp.diag(params.noise + correction))
    beta = cho_solve((L_n, True), y)
    if method == "plain":
        Ks = params.kernel(X, X_new)
        V = solve_triangular(L_n, Ks, lower=True)
        var = params.variance - jnp.sum(V**2, 0)
        dfbar, slope_var = slope_moments(params, X, L_n, beta, X_new)
        return Ks.T @ beta, var + corrective_variance(params, dfbar, slope_var, mode) + params.noise
    D = X.shape[1]
    predictor = mm.SEPredictor(
        X[None], beta[None], L_n[None], jnp.zeros((1, X.shape[0], 0)), params.variance[None], params.lengthscale[None]
    )
    Sigma = jnp.zeros((D, D)) if mode == "gp" else jnp.diag(params.input_noise)
    out = mm.predict_moments_batch(predictor, X_new, jnp.broadcast_to(Sigma, (X_new.shape[0], D, D)))
    return out.mean[:, 0], out.cov[:, 0, 0] + params.noise


def test_log_prob(mean: Array, var: Array, y: Array) -> Array:
    """Mean log predictive density per test point (McHutchon's 'test log probability')."""
    return jnp.mean(dist.Normal(mean, jnp.sqrt(var)).log_prob(y))


def params_from(point_estimates) -> tuple[NIGPParams, Array]:
    """The hyperparameters and the training Sigma~ (N,) from the ``point_estimates`` group of a ``nigp`` engine run
    (chain 0): ``params, correction = params_from(idata.point_estimates)``, ready for ``predict``."""
    value = {name: jnp.asarray(point_estimates[name].values[0]) for name in (*NIGPParams._fields, "correction")}
    return NIGPParams(*(value[name] for name in NIGPParams._fields)), value["correction"]


# ----------------------------------------------------------------------------------------------------------------
# Exact errors-in-variables model (M3) and the test functions of E2.1 / E2.2

INPUT_PRIOR_SCALE = 10.0  # Xin ~ N(0, 10^2): the "~flat" prior of docs/sources/mchutchon.md#eiv


def _hyperparameters(D: int) -> NIGPParams:
    """Sites lengthscale (D,), variance, noise, input_noise (D,) with the priors shared by gp/eiv and gp/nigp."""
    return NIGPParams(
        numpyro.sample("lengthscale", dist.LogNormal(0.0, 1.0).expand([D]).to_event(1)),
        numpyro.sample("variance", dist.LogNormal(0.0, 1.0)),
        numpyro.sample("noise", dist.LogNormal(-2.0, 1.5)),
        numpyro.sample("input_noise", dist.LogNormal(-2.0, 1.5).expand([D]).to_event(1)),
    )


def eiv_gp(Yin, Yout=None):
    """Errors-in-variables GP (McHutchon M3): latent true inputs Xin (N, D), Yin ~ N(Xin, diag(input_noise)),
    Yout ~ N(0, K(Xin, Xin) + noise I) with f integrated out. Sites: lengthscale (D,), variance, noise
    (= sigma_out^2), input_noise (D,) (= sigma_in^2), Xin (N, D). Priors as gp/regression, LogNormal(-2, 1.5) on the
    input-noise variances, and the ~flat N(0, 10^2) on Xin (docs/sources/mchutchon.md#eiv)."""
    N, D = Yin.shape
    params = _hyperparameters(D)
    Xin = numpyro.sample("Xin", dist.Normal(0.0, INPUT_PRIOR_SCALE).expand([N, D]).to_event(2))
    numpyro.sample("Yin", dist.Normal(Xin, jnp.sqrt(params.input_noise)).to_event(2), obs=Yin)
    K = params.kernel(Xin) + params.noise * jnp.eye(N)
    numpyro.sample("Yout", dist.MultivariateNormal(jnp.zeros(N), scale_tril=gp.cholesky(K)), obs=Yout)


def near_square_wave(x: Array) -> Array:
    """E2.1 default: tanh(4 sin(pi (x - 1) / 7)) on [-10, 10] (the thesis gives no formula).

    Its corners (steep regions) sit at x = 1 and x = -6, where Fig. 2.7's caption puts them; the simpler
    tanh(4 sin(x - 1)) (docs/sources/mchutchon.md#square-wave) has corners at 1 and -5.3 and transitions narrower than
    sigma_in = 0.3, where no first-order (slope) method can work. Maximum slope 4 pi / 7 = 1.8.
    """
    return jnp.tanh(4.0 * jnp.sin(jnp.pi * (x - 1.0) / 7.0))


def sigmoid(x: Array) -> Array:
    """E2.2 default (the thesis gives no formula; docs/sources/mchutchon.md#sigmoid): tanh(x / 3) on U(-10, 10)."""
    return jnp.tanh(x / 3.0)


def simulate_input_noise(
    key, f, n: int, n_test: int, low: float, high: float, sigma_in: float, sigma_out: float
) -> Dataset:
    """x ~ U(low, high); Yin = x + N(0, sigma_in^2); Yout = f(x) + N(0, sigma_out^2); the same for the test set."""
    keys = jax.random.split(key, 6)

    def draw(k_x, k_in, k_out, size):
        x = jax.random.uniform(k_x, (size, 1), minval=low, maxval=high)
        return (
            x,
            x + sigma_in * jax.random.normal(k_in, x.shape),
            f(x[:, 0]) + sigma_out * jax.random.normal(k_out, (size,)),
        )

    x, Yin, Yout = draw(*keys[:3], n)
    x_test, Yin_test, Yout_test = draw(*keys[3:], n_test)
    return Dataset(
        observed={"Yin": np.asarray(Yin), "Yout": np.asarray(Yout)},
        truth={"Xin": np.asarray(x), "noise": sigma_out**2, "input_noise": np.array([sigma_in**2])},
        test={"Yin": np.asarray(Yin_test), "Yout": np.asarray(Yout_test)},
    )


SQUARE_WAVE = {"low": -10.0, "high": 10.0, "sigma_in": 0.3, "sigma_out": 0.05}  # E2.1: 60 train, 1000 test


def simulate_square_wave(key, n: int = 60, n_test: int = 1000) -> Dataset:
    """E2.1 near-square wave: sigma_out = 0.05, sigma_in = 0.3, 60 training and 1000 test points
    (docs/sources/mchutchon.md#square-wave)."""
    n, n_test = positive_int("n", n), positive_int("n_test", n_test)
    return simulate_input_noise(key, near_square_wave, n, n_test, **SQUARE_WAVE)


register(
    ModelSpec(
        name="gp/eiv",
        summary="Errors-in-variables GP: latent true inputs, noisy inputs and outputs (the exact model behind NIGP)",
        source="McHutchon 2014, sec. 2.1 (eqs. 2.1-2.6), model M3",
        program=eiv_gp,
        simulate=simulate_square_wave,
        data_shapes=frozen({"Yin": ("N", "D"), "Yout": ("N",)}),
        default_params=frozen({"lengthscale": 1.0, "variance": 1.0, "noise": 0.0025, "input_noise": 0.09}),
    )
)


# ----------------------------------------------------------------------------------------------------------------
# The NIGP model (M8) as a program, and the view the ``nigp`` engine trains it through


def nigp_program(X, y=None):
    """NIGP (McHutchon M8): GP regression on noisy inputs X (N, D) with the input noise folded into the output
    covariance by the linearisation of eqs. 2.75-2.78. Sites as gp/eiv without the latent inputs: lengthscale (D,),
    variance, noise (= sigma_out^2), input_noise (D,) (= sigma_in^2), same priors.

    With y (N,) observed, the factor ``nigp_log_lik`` is the first-pass NIGPm pseudo-likelihood (slope GP
    K + sigma_out^2 I): y enters through the slopes too, so it is a factor, not a sample site. The multi-pass scheme
    (slopes held fixed from the previous pass) is the ``nigp`` engine's, through ``NOISY_INPUT_VIEW``. With y = None,
    y is drawn from the linearised model itself: under the GP prior the slope at a point has mean 0 and variance
    sf2 / l_d^2 (eq. 2.104 with no data) and is independent of f there, so y ~ N(0, K + (sigma_out^2 +
    sum_d sigma_in,d^2 sf2 / l_d^2) I).
    """
    N, D = X.shape
    params = _hyperparameters(D)
    if y is not None:
        numpyro.factor("nigp_log_lik", log_likelihood(params, X, y, "nigpm"))
        return
    prior_slope_var = jnp.broadcast_to(params.variance / params.lengthscale**2, (N, D))
    correction = corrective_variance(params, jnp.zeros((N, D)), prior_slope_var, "nigpu")
    L = gp.cholesky(params.kernel(X) + jnp.diag(params.noise + correction))
    numpyro.sample("y", dist.MultivariateNormal(jnp.zeros(N), scale_tril=L))


class NoisyInputView(NamedTuple):
    """What the ``nigp`` engine needs beyond the program, on dicts of site values (``NIGPParams`` field names).

    initial(X, y) -> values: the data-scaled starting point. log_likelihood(values, X, y, mode, slope_extra) and
    training_correction(values, X, y, mode, slope_extra): eq. 2.78 and Sigma~(Y_in) with the slope GP
    K + sigma_out^2 I + diag(slope_extra) (slope_extra held fixed).
    """

    initial: Any
    log_likelihood: Any
    training_correction: Any


NOISY_INPUT_VIEW = NoisyInputView(
    initial=lambda X, y: initial_params(X, y)._asdict(),
    log_likelihood=lambda values, X, y, mode, extra: log_likelihood(NIGPParams(**values), X, y, mode, extra),
    training_correction=lambda values, X, y, mode, extra: training_correction(NIGPParams(**values), X, y, mode, extra),
)


def simulate_square_wave_xy(key, n: int = 60, n_test: int = 1000) -> Dataset:
    """``simulate_square_wave`` with gp/nigp's names: X = Yin (N, 1), y = Yout (N,); truth as there."""
    ds = simulate_square_wave(key, n, n_test)

    def rename(arrays):
        return {"X": arrays["Yin"], "y": arrays["Yout"]}

    return Dataset(observed=rename(ds.observed), truth=ds.truth, test=rename(ds.test))


register(
    ModelSpec(
        name="gp/nigp",
        summary="Noisy-input GP (NIGP): input noise as a slope-dependent output variance; ML-II by the nigp engine",
        source="McHutchon 2014, ch. 2 (eqs. 2.75-2.78, 2.85-2.86, 2.100-2.104), procedure 2.3, model M8",
        program=nigp_program,
        simulate=simulate_square_wave_xy,
        data_shapes=frozen({"X": ("N", "D"), "y": ("N",)}),
        default_params=frozen({"lengthscale": 1.0, "variance": 1.0, "noise": 0.0025, "input_noise": 0.09}),
        capabilities=frozenset({"noisy_input"}),
        views=frozen({"noisy_input": NOISY_INPUT_VIEW}),
    )
)
