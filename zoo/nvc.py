"""Deep GPs by nested variational compression (NVC; Hensman & Lawrence 2014) with analytic SE Psi-statistics.

Source: Kaiser 2021, sec. 2.7 (eqs. 2.78-2.85), with two corrections (docs/sources/kaiser.md#nvc-bound): the printed
tr(Psi K^{-1}) of (2.83)/(2.84) is tr(Phi K^{-1}), and the last layer carries the S-trace that the print drops.

Model (eq. 2.76, per-layer noise as in Damianou & Lawrence): h_0 = X (N, D); h_l = f_l(h_{l-1}) + eps_l,
eps_l ~ N(0, s2_l I), f_l ~ GP(0, k_l) with an SE-ARD kernel, one independent GP per output of layer l sharing Z_l and
k_l; y = h_L (s2_L is the likelihood noise). Layers have **zero mean** (as Hensman & Lawrence); inner layers are
initialised to the identity map instead (q(u_l) mean at u = Z_l). Every hidden layer has width D, the last one
output. Inducing values are whitened: u_l = L_l v_l with L_l L_l^T = K_{u_l u_l} (``zoo.gp.cholesky``), q(v_l) =
N(m_l, S_l), S_l = R_l R_l^T, per output.

Bound (the corrected eq. 2.84). Per layer, Psi-statistics under a diagonal Gaussian input N(mu_n, diag(var_n))
(eq. 2.82, per point): psi_n = E[k(h_n, h_n)] = sf2, Psi_n = E[k(Z, h_n)] (M,), Phi_n = E[k(Z, h_n) k(h_n, Z)]
(M, M) (``psi_statistics``: diagonal-input SE closed forms, equal to ``zoo.moments``' E[k], E[k k^T]). With
p_n = L^{-1} Psi_n and Phi~_n = L^{-1} Phi_n L^{-T} (whitened), per point and output:
    mean_n = p_n^T m                                                    (= Psi K^{-1} m_u, eq. 2.85)
    s_n    = p_n^T S p_n                                                (= Psi K^{-1} S_u K^{-1} Psi^T, eq. 2.85)
    t_n    = psi_n - tr Phi~_n  +  m^T Phi~_n m - mean_n^2  +  tr(Phi~_n S) - s_n
           = [psi - tr(Phi K^{-1})] + [tr((Phi - Psi^T Psi) K^{-1}(m m^T + S) K^{-1})]     (the two 2.84 penalties)
    c_n    = t_n + s_n = Var[f_l(h_n)] under q(u_l) q(h_n)                (exact moment match)
and
    L_NVC = sum_n [ log N(y_n | mean_{L,n}, s2_L) - c_{L,n} / (2 s2_L) ]      (last layer: 2.84's data fit, both
            - sum_{l<L} sum_n t_{l,n} / (2 s2_l)                              penalties and the S-trace s_L)
            - sum_l KL(q(v_l) || N(0, I))
where the input of layer l + 1 is the Gaussian message q(h_l) = N(mean_l, s2_l + s_l) per point (eq. 2.80: q(f_l) =
int p~(f_l | u_l) q(u_l) du_l with p~ = N(Psi_l K^{-1} u_l, s2_l I)); layer 1 has the deterministic input X
(var = 0), where Phi_n = Psi_n Psi_n^T and t_n = k_nn - q_nn (Titsias' trace). With one layer L_NVC is the SVGP bound.

Why this is a lower bound for every L (our derivation, following eqs. 2.79-2.81): take Q = prod_l q(u_l)
r_l(h_l | u_l) with r_l = N(h_l | Psi_l K^{-1} u_l, s2_l I) for l < L, Psi_l computed under the marginal of h_{l-1}
under Q (Gaussian by induction, N(mean_{l-1}, s2 + s) as above; Psi_1 = K_{XZ}). Titsias' inequality gives
log p(h_l | u_l, h_{l-1}) >= log N(h_l | K_fu K^{-1} u_l, s2_l I) - tr(K - Q)/(2 s2_l) pointwise; under Q, h_{l-1} is
independent of (u_l, h_l), so E_{h_{l-1}} of the right side is log N(h_l | Psi_l K^{-1} u_l, s2_l I) - t-terms with
u-quadratic u^T K^{-1}(Phi - Psi^T Psi) K^{-1} u, and the log N cancels against log r_l exactly. The last layer's
E over q(u_L) q(h_{L-1}) of log N(y | K_fu K^{-1} u_L, s2_L I) gives the data fit minus (t + s)/(2 s2)
(docs/sources/kaiser.md#nvc-bound).

Predictions (eq. 2.85, recursive Gaussian messages): ``nvc_predict`` with ``propagation="nvc"`` returns Q's own
marginal, N(mean, s) for f_L with hidden messages N(mean, s2 + s) -- the printed (2.85), which omits t and so is
under-dispersed (the thesis: "NVC tends to underestimate uncertainties"); ``propagation="moment"`` uses the exact
moment match c (all terms) at every layer. ``nvc_sample`` draws ancestrally through the fitted layers (DSVI-style,
eq. 2.88) for the "sampled posterior" of the thesis' Figs 4.6-4.7.
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.scipy.linalg import solve_triangular
from numpyro.distributions import constraints

from zoo import deep_gp as dg
from zoo import gp
from zoo import sparse as sp
from zoo.eager import compiled_when_eager
from zoo.errors import DataError, OptionError
from zoo.kernels import SquaredExponential
from zoo.registry import ModelSpec, frozen, register

Array = Any
LOG_2PI = jnp.log(2.0 * jnp.pi)
INNER_Q_VARIANCE = 1e-5  # initial S of inner layers, "low initial covariance" (docs/sources/kaiser.md#deep-gp-defaults)
PROPAGATIONS = ("nvc", "moment")


class NVCLayer(NamedTuple):
    """One layer: SE kernel, inducing inputs Z (M, W_in), whitened q(v): mean (W_out, M), scale_tril (W_out, M, M),
    and the layer noise s2_l (scalar variance; the likelihood noise for the last layer)."""

    kernel: SquaredExponential
    Z: Array
    q_mean: Array
    q_scale_tril: Array
    noise: Array


class PsiStatistics(NamedTuple):
    """Per-point Psi-statistics (eq. 2.82): psi0 (N,) = E k(h, h), psi1 (N, M) = E k(h, Z), psi2 (N, M, M)."""

    psi0: Array
    psi1: Array
    psi2: Array


class LayerMoments(NamedTuple):
    """Per point and output (N, W_out): mean = p^T m, s = p^T S p (eq. 2.85), t = the 2.84 penalties, c = t + s.
    The AMOGP's SE and convolution layers (``zoo.amogp.layers``) give their moments in this form too."""

    mean: Array
    s: Array
    t: Array

    @property
    def c(self) -> Array:
        return self.t + self.s


# ----------------------------------------------------------------------------------------------------------------
# Psi-statistics and one layer


@compiled_when_eager
def psi_statistics(kernel: SquaredExponential, Z: Array, mu: Array, var: Array) -> PsiStatistics:
    """SE-ARD Psi-statistics of inputs h_n ~ N(mu_n, diag(var_n)): mu, var (N, W); Z (M, W).

    The diagonal-covariance closed forms (Titsias & Lawrence 2010; Kaiser eqs. 4.8/4.9 read with precisions, one
    output: docs/sources/kaiser.md#psi-statistics), elementwise so they vectorise without per-point factorisations:
        psi1_nm   = sf2 prod_d (1 + v_nd / l_d^2)^(-1/2) exp(-1/2 sum_d (mu_nd - z_md)^2 / (l_d^2 + v_nd))
        psi2_nmk  = sf2^2 prod_d (1 + 2 v_nd / l_d^2)^(-1/2)
                    exp(-sum_d (z_md - z_kd)^2 / (4 l_d^2) - sum_d (mu_nd - (z_md + z_kd)/2)^2 / (l_d^2 + 2 v_nd))
    They equal ``zoo.moments``' general (full-covariance) E[k] and E[k k^T] (tests/test_nvc.py) and reduce to the
    kernel at var = 0.
    """
    W = Z.shape[-1]
    sf2 = jnp.asarray(kernel.variance, dtype=float)
    ell2 = jnp.broadcast_to(jnp.asarray(kernel.lengthscale, dtype=float), (W,)) ** 2
    mu, var = mu[:, None, :], var[:, None, :]  # (N, 1, W)
    d1 = ell2 + var
    log_psi1 = -0.5 * jnp.sum(jnp.log1p(var / ell2) + (mu - Z[None]) ** 2 / d1, -1)
    zbar = 0.5 * (Z[:, None, :] + Z[None, :, :])  # (M, M, W)
    zdist = jnp.sum((Z[:, None, :] - Z[None, :, :]) ** 2 / (4.0 * ell2), -1)  # (M, M)
    d2 = (ell2 + 2.0 * var)[:, None]  # (N, 1, 1, W)
    log_psi2 = -0.5 * jnp.sum(jnp.log1p(2.0 * var / ell2), -1)[:, None] - zdist[None]
    log_psi2 = log_psi2 - jnp.sum((mu[:, None] - zbar[None]) ** 2 / d2, -1)
    return PsiStatistics(jnp.full(mu.shape[0], sf2), sf2 * jnp.exp(log_psi1), sf2**2 * jnp.exp(log_psi2))


def layer_moments(layer: NVCLayer, mu: Array, var: Array) -> LayerMoments:
    """Moments of f_l(h_n) under q(v_l) and h_n ~ N(mu_n, diag(var_n)) (module docstring): fields (N, W_out)."""
    psi = psi_statistics(layer.kernel, layer.Z, mu, var)
    Luu = gp.cholesky(layer.kernel(layer.Z))
    # L^{-1} by one triangular solve against I (M x M): XLA's CPU triangular solve slows ~1000x once the right-hand
    # side has a few hundred columns (N M of them here), while applying the triangular factor's inverse is a matmul.
    Linv = solve_triangular(Luu, jnp.eye(Luu.shape[0]), lower=True)
    P = psi.psi1 @ Linv.T  # (N, M): rows p_n = L^{-1} Psi_n
    Phi = jnp.einsum("ai,nij,bj->nab", Linv, psi.psi2, Linv)  # (N, M, M): L^{-1} Phi_n L^{-T}
    titsias = psi.psi0 - jnp.trace(Phi, axis1=1, axis2=2)

    def one_output(m, R):
        mean = P @ m
        s = jnp.sum((P @ R) ** 2, -1)
        quad = jnp.einsum("i,nij,j->n", m, Phi, m) - mean**2
        tr_S = jnp.einsum("nij,ij->n", Phi, R @ R.T)
        return mean, s, titsias + quad + tr_S - s

    mean, s, t = jax.vmap(one_output)(layer.q_mean, layer.q_scale_tril)  # (W_out, N) each
    return LayerMoments(mean.T, s.T, t.T)


def layer_kl(layer: NVCLayer) -> Array:
    """sum over outputs of KL(q(v) || N(0, I)) (whitened, ``sparse.kl_whitened``)."""
    return jnp.sum(jax.vmap(lambda m, R: sp.kl_whitened(sp.WhitenedQ(m, R)))(layer.q_mean, layer.q_scale_tril))


# ----------------------------------------------------------------------------------------------------------------
# Bound, predictions, ancestral samples


def check_nvc_layers(layers: Any) -> list[NVCLayer]:
    """Raise OptionError unless ``layers`` is a non-empty sequence whose last layer has one output."""
    layers = list(layers)
    if len(layers) < 1:
        raise OptionError("NVC needs at least one layer (num_layers >= 1); got none.")
    if jnp.shape(layers[-1].q_mean)[0] != 1:
        raise OptionError(f"NVC: the last layer must have one output; got {jnp.shape(layers[-1].q_mean)[0]}.")
    return layers


def nvc_bound(layers: list[NVCLayer], X: Array, y: Array) -> Array:
    """The corrected NVC bound (eq. 2.84 with tr(Phi K^{-1}) and the last layer's S-trace): scalar.

    X (N, D), y (N,). One layer: the SVGP bound ``sparse.svgp_elbo`` (tests/test_nvc.py checks it to rtol 1e-8).
    """
    layers = check_nvc_layers(layers)
    penalty, mean, c = _bound_pieces(layers, X)
    noise = layers[-1].noise
    fit = -0.5 * (LOG_2PI + jnp.log(noise) + (y - mean) ** 2 / noise) - 0.5 * c / noise
    return penalty + jnp.sum(fit)


def nvc_predict(layers: list[NVCLayer], X_new: Array, propagation: str = "nvc") -> tuple[Array, Array]:
    """Analytic predictive of the latent f_L at X_new (n, D) by recursive Gaussian messages: mean, var (n,).

    propagation "nvc": the printed eq. 2.85 (variance p^T S p; hidden messages add their noise s2_l) -- the
    marginal of the variational Q the bound is taken under. "moment": the exact moment match c at every layer.
    Add the last layer's noise for the predictive of y.
    """
    layers = check_nvc_layers(layers)
    if propagation not in PROPAGATIONS:
        raise OptionError(f"propagation must be one of {', '.join(PROPAGATIONS)}, got {propagation!r}")
    mu, var = X_new, jnp.zeros_like(X_new)
    for layer in layers:
        mom = layer_moments(layer, mu, var)
        spread = jnp.maximum(mom.s if propagation == "nvc" else mom.c, 0.0)
        mu, var = mom.mean, layer.noise + spread
    return mu[:, 0], spread[:, 0]


def nvc_sample(layers: list[NVCLayer], X_new: Array, key: Array, num_samples: int) -> tuple[Array, Array]:
    """Ancestral sampling through the fitted layers (as DSVI, eq. 2.88, with the layer noise s2_l on hidden layers):
    per sample, the Gaussian of f_L given the sampled h_{L-1}: component means and variances, each (S, n)."""
    layers = check_nvc_layers(layers)

    def marginals(layer, H):
        def one_output(m, R):
            pred = sp.sparse_predict(layer.kernel, layer.Z, sp.WhitenedQ(m, R), H)
            return pred.mean, pred.cov

        mean, var = jax.vmap(one_output)(layer.q_mean, layer.q_scale_tril)
        return mean.T, jnp.maximum(var.T, 0.0)

    def one(k):
        H = X_new
        for layer, kk in zip(layers[:-1], jax.random.split(k, len(layers))[:-1], strict=True):
            mean, var = marginals(layer, H)
            H = mean + jnp.sqrt(var + layer.noise) * jax.random.normal(kk, mean.shape)
        mean, var = marginals(layers[-1], H)
        return mean[:, 0], var[:, 0]

    return jax.vmap(one)(jax.random.split(key, num_samples))


# ----------------------------------------------------------------------------------------------------------------
# NumPyro program (the bound as a factor) and the view the ``nvc`` engine uses


def _noise_site(layer: int, num_layers: int) -> str:
    return "noise" if layer == num_layers else f"noise_{layer}"


def nvc(X, Z, y=None, num_layers=2):
    """NVC deep GP: hyperparameter sites ``lengthscale_l`` (D,), ``variance_l`` (LogNormal(0, 1) as deep_gp/dsvi),
    inner-layer noise ``noise_l`` (LogNormal(-4, 1)), likelihood ``noise`` (LogNormal(-2, 1)); ``numpyro.param``s
    ``inducing_inputs_l`` (init Z), ``q_mean_l`` (W_l, M), ``q_scale_tril_l`` (W_l, M, M).

    The log joint is log p(theta) + L_NVC: y ~ N(mean_L, s2_L) carries the data fit and the factor ``nvc_terms`` the
    trace penalties and KLs (as gp/vfe). With y = None, y is drawn from N(mean_L, s2_L) (the penalties are not part
    of a generative model). Inner q(v_l) start at the identity map u_l = Z[:, d] (whitened with the initial unit
    hyperparameters) and S = 1e-5 I; the last layer at m = 0, S = I.
    """
    L = dg.check_layers(num_layers)
    sp.check_sparse_data(X, y, Z)
    N, D = X.shape
    M = Z.shape[0]
    L0 = gp.cholesky(SquaredExponential(1.0, jnp.ones(D))(Z))
    identity_v = solve_triangular(L0, Z, lower=True).T  # (D, M): u = Z at the initial hyperparameters
    layers = []
    for layer, width in enumerate(dg.layer_widths(D, L), start=1):
        lengthscale = numpyro.sample(f"lengthscale_{layer}", dist.LogNormal(0.0, 1.0).expand([D]).to_event(1))
        variance = numpyro.sample(f"variance_{layer}", dist.LogNormal(0.0, 1.0))
        prior = dist.LogNormal(-2.0, 1.0) if layer == L else dist.LogNormal(-4.0, 1.0)
        noise = numpyro.sample(_noise_site(layer, L), prior)
        inner = layer < L
        mean = numpyro.param(f"q_mean_{layer}", identity_v if inner else jnp.zeros((width, M)))
        scale = np.sqrt(INNER_Q_VARIANCE) if inner else 1.0
        tril = numpyro.param(
            f"q_scale_tril_{layer}",
            scale * jnp.broadcast_to(jnp.eye(M), (width, M, M)),
            constraint=constraints.lower_cholesky,
        )
        Z_l = numpyro.param(f"inducing_inputs_{layer}", Z)
        layers.append(NVCLayer(SquaredExponential(variance, lengthscale), Z_l, mean, tril, noise))
    penalty, mean, c = _bound_pieces(layers, X)
    last = layers[-1]
    numpyro.sample("y", dist.Normal(mean, jnp.sqrt(last.noise)).to_event(1), obs=y)
    numpyro.factor("nvc_terms", penalty - 0.5 * jnp.sum(c) / last.noise)


def _bound_pieces(layers: list[NVCLayer], X: Array) -> tuple[Array, Array, Array]:
    """L_NVC = log N(y | mean, s2_L I) - sum c / (2 s2_L) + penalty: returns penalty (inner t-terms and KLs), mean
    (N,) and c (N,) of the last layer. ``nvc_bound`` written in the program's pieces."""
    mu, var = X, jnp.zeros_like(X)
    penalty = -sum(layer_kl(layer) for layer in layers)
    for layer in layers[:-1]:
        mom = layer_moments(layer, mu, var)
        penalty = penalty - jnp.sum(mom.t) / (2.0 * layer.noise)
        mu, var = mom.mean, layer.noise + mom.s
    mom = layer_moments(layers[-1], mu, var)
    return penalty, mom.mean[:, 0], mom.c[:, 0]


def layers_from_values(values: dict, num_layers: int) -> list[NVCLayer]:
    """NVCLayers from constrained values: the hyperparameter sites and the program's params (names as in ``nvc``)."""
    missing = [
        name
        for layer in range(1, num_layers + 1)
        for name in (f"lengthscale_{layer}", f"variance_{layer}", _noise_site(layer, num_layers), f"q_mean_{layer}")
        if name not in values
    ]
    if missing:
        raise DataError(f"NVC values lack {missing} for num_layers = {num_layers}.")
    return [
        NVCLayer(
            SquaredExponential(values[f"variance_{layer}"], values[f"lengthscale_{layer}"]),
            values[f"inducing_inputs_{layer}"],
            values[f"q_mean_{layer}"],
            values[f"q_scale_tril_{layer}"],
            values[_noise_site(layer, num_layers)],
        )
        for layer in range(1, num_layers + 1)
    ]


def _x_only(arrays: dict) -> Any:
    return arrays["X"]


class NVCView(NamedTuple):
    """What the ``nvc`` engine needs beyond the program: the bound and the analytic predictive from values.

    ``inputs`` picks the bound's and the predictive's inputs from the data arrays (X here; X with each point's output
    index for a multi-output model), ``input_names`` the arrays it reads (the engine predicts at the test set when
    the test set has them all), ``depth`` a model's fixed number of layers (None: the engine's ``num_layers``)."""

    bound: Any  # (values, inputs, y, num_layers) -> scalar
    predict: Any  # (values, inputs_new, num_layers, propagation) -> mean (n,), var (n,) of f_L
    inputs: Any = _x_only
    input_names: tuple = ("X",)
    depth: int | None = None


NVC_VIEW = NVCView(
    bound=lambda values, X, y, num_layers: nvc_bound(layers_from_values(values, num_layers), X, y),
    predict=lambda values, X_new, num_layers, propagation: nvc_predict(
        layers_from_values(values, num_layers), X_new, propagation
    ),
)

register(
    ModelSpec(
        name="deep_gp/nvc",
        summary="Deep GP by nested variational compression: analytic SE Psi-statistics, corrected bound (2 layers)",
        source=(
            "Kaiser 2021, sec. 2.7, eqs. 2.78-2.85 (corrected: docs/sources/kaiser.md#nvc-bound); "
            "Hensman & Lawrence 2014"
        ),
        program=nvc,
        simulate=dg.simulate_warped,
        data_shapes=frozen({"X": ("N", "D"), "Z": ("M", "D"), "y": ("N",)}),
        default_params=frozen({"noise": 0.01}),
        capabilities=frozenset({"nvc"}),
        views=frozen({"nvc": NVC_VIEW}),
    )
)
