"""Deep GPs: doubly stochastic variational inference (DSVI; Salimbeni & Deisenroth 2017).

Source: Kaiser 2021, sec. 2.7 (eqs. 2.75-2.77 and 2.86-2.90; docs/sources/kaiser.md#dsvi). A deep GP composes L
GP layers, y = f_L(f_{L-1}(... f_1(X))) + eps. Each layer l has its own inducing inputs Z_l (M, W) and whitened
inducing values v_l (W_out, M), u_l = L_ZZ v_l per output; inner layers have the identity mean function
(docs/sources/kaiser.md#deep-gp-defaults), so every hidden layer has the input width W = D; the last layer has zero
mean and one output.

Variational family (eq. 2.87): q({f_l, v_l}) = prod_l p(f_l | v_l, f_{l-1}) q(v_l). Per point, the marginal of
layer l given the previous layer's value h is Gaussian (eq. 2.86): with a = L_ZZ^{-1} k(Z_l, h),
    q(f_l | h) = N(a^T m_l + h, k(h, h) - |a|^2 + |S_l^{1/2 T} a|^2)           (whitened; ``sparse.sparse_predict``)
and samples are propagated point by point through the layers (eq. 2.88). The bound (eq. 2.89) is
    L = sum_n E_{q(f_{L,n})} log N(y_n | f_{L,n}, s2) - sum_l KL(q(v_l) || N(0, I)),
whose last-layer expectation is analytic for the Gaussian likelihood (``sparse.svgp_expected_log_lik``); a
one-layer DSVI therefore *is* SVGP (tests/test_deep_gp.py checks this to float precision).

Two forms, one bound:
  ``dsvi_elbo``   the pure Monte-Carlo estimator with local reparameterisation (f_l drawn from the marginal above).
  ``dsvi``        the NumPyro program: v_l ~ N(0, I) per layer; in the data plate, inner layers draw
                  f_l = a^T v_l + h + sqrt(k~) eps_l with an auxiliary ``eps_l`` ~ N(0, 1) site whose guide is the
                  same N(0, 1) (so log p(eps) - log q(eps) = 0 exactly and the estimator is of eq. 2.89 with
                  f_l ~ p(f_l | v_l, h) given v_l ~ q); the last layer contributes the SVGP per-point term.
  ``dsvi_guide``  q(v_l) = N(m_l, S_l) per layer and output, point masses on the hyperparameters, eps ~ N(0, 1).

Predictions (eq. 2.90; the printed q(q_{L,*}) means q(f_{L,*})) are a mixture of S Gaussians: ``dsvi_predict``.
Inner layers carry no extra noise (Salimbeni & Deisenroth; the Damianou-Lawrence per-layer sigma_l^2 of eq. 2.76
is absorbed in the kernel here).
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints

from zoo import sparse as sp
from zoo.errors import OptionError
from zoo.kernels import Kernel, SquaredExponential
from zoo.registry import Dataset, ModelSpec, frozen, positive_int, register

Array = Any
INNER_Q_VARIANCE = 1e-5  # initial S of inner layers, "low initial covariance" (docs/sources/kaiser.md#deep-gp-defaults)
# Floor added to the diagonal of every q(v) Cholesky factor. Without it an inner layer's factor can collapse to
# ~1e-150, where the Monte Carlo log q(v) of Trace_ELBO loses all precision (-5e28 measured) and the optimiser
# chases the spurious ELBO (seen at N = 200, lr 0.01: the estimate ran to 1e154). 1e-6 in whitened units changes
# no fit that is not degenerate.
Q_SCALE_FLOOR = 1e-6


class DeepLayer(NamedTuple):
    """One layer: kernel, inducing inputs Z (M, W_in), whitened q(v) with mean (W_out, M), scale_tril (W_out, M, M).

    ``identity_mean``: the layer adds its input to the GP (inner layers; requires W_out = W_in).
    """

    kernel: Kernel
    Z: Array
    q_mean: Array
    q_scale_tril: Array
    identity_mean: bool


def layer_marginals(layer: DeepLayer, H: Array) -> tuple[Array, Array]:
    """Marginal q(f_l | h_n) per point and output (eq. 2.86): mean (N, W_out), variance (N, W_out)."""

    def one_output(m, L):
        pred = sp.sparse_predict(layer.kernel, layer.Z, sp.WhitenedQ(m, L), H)
        return pred.mean, pred.cov

    mean, var = jax.vmap(one_output)(layer.q_mean, layer.q_scale_tril)  # (W_out, N) each
    mean = mean.T + (H if layer.identity_mean else 0.0)
    return mean, jnp.maximum(var.T, 0.0)


def layer_kl(layer: DeepLayer) -> Array:
    """sum over outputs of KL(q(v) || N(0, I)) (Franzese eq. 8.20 corrected, whitened)."""
    return jnp.sum(jax.vmap(lambda m, L: sp.kl_whitened(sp.WhitenedQ(m, L)))(layer.q_mean, layer.q_scale_tril))


def propagate(layers: list[DeepLayer], X: Array, eps: list[Array]) -> Array:
    """Ancestral samples through the inner layers (eq. 2.88), locally reparameterised: h_l = mean + sd * eps_l.

    layers: the inner layers (all but the last); eps: one (N, W_l) standard-normal array per inner layer.
    Returns the input of the last layer, (N, W).
    """
    H = X
    for layer, e in zip(layers, eps, strict=True):
        mean, var = layer_marginals(layer, H)
        H = mean + jnp.sqrt(var) * e
    return H


def inner_layer_sample(kernel: Kernel, Z: Array, v: Array, H: Array, eps: Array) -> Array:
    """One inner layer's draw given its whitened inducing values (eq. 2.88, identity mean):
    h_l = h + a^T v_l + sqrt(k~) eps with a = L_ZZ^{-1} k(Z, h). H (B, W), v (W, M), eps (B, W) -> (B, W)."""
    _, A = sp.whitened_projection(kernel, Z, H)  # (M, B)
    k_tilde = jnp.maximum(kernel.diag(H) - jnp.sum(A**2, 0), 0.0)
    return H + A.T @ v.T + jnp.sqrt(k_tilde)[:, None] * eps


def dsvi_elbo(layers: list[DeepLayer], X: Array, y: Array, noise: Array, eps: list[Array]) -> Array:
    """One Monte-Carlo estimate of the DSVI bound (eq. 2.89) for given inner-layer noise ``eps`` (each (N, W)).

    The last layer has one output; its Gaussian expectation is analytic (the SVGP per-point term). With one
    layer (eps = []) this is exactly ``sparse.svgp_elbo``. Average over independent eps for the bound.
    """
    last = layers[-1]
    H = propagate(layers[:-1], X, eps)
    q_last = sp.WhitenedQ(last.q_mean[0], last.q_scale_tril[0])
    expected = sp.svgp_expected_log_lik(last.kernel, H, y, last.Z, q_last, noise)
    return jnp.sum(expected) - sum(layer_kl(layer) for layer in layers)


def dsvi_predict(layers: list[DeepLayer], X_new: Array, key: Array, num_samples: int) -> tuple[Array, Array]:
    """Predictive mixture of S Gaussians for f_L (eq. 2.90): component means and variances, each (S, n)."""

    def one(k):
        eps = [
            jax.random.normal(kk, (X_new.shape[0], layer.q_mean.shape[0]))
            for kk, layer in zip(jax.random.split(k, len(layers))[:-1], layers[:-1], strict=True)
        ]
        mean, var = layer_marginals(layers[-1], propagate(layers[:-1], X_new, eps))
        return mean[:, 0], var[:, 0]

    return jax.vmap(one)(jax.random.split(key, num_samples))


def mixture_moments(means: Array, variances: Array) -> tuple[Array, Array]:
    """Mean and variance of the equal-weight mixture over axis 0 (law of total variance): (n,), (n,)."""
    mean = means.mean(0)
    return mean, variances.mean(0) + means.var(0)


# ----------------------------------------------------------------------------------------------------------------
# NumPyro program and guide


def check_layers(num_layers: Any) -> int:
    try:
        return positive_int("num_layers", num_layers)
    except Exception as exc:  # ZooError -> the option error users expect
        raise OptionError(str(exc)) from None


def layer_sites(layer: int, width: int, Z: Array, prefix: str = "") -> tuple[Kernel, Array, Array]:
    """Layer l's model sites, named ``{prefix}...``: ``lengthscale_{l}`` (D,), ``variance_{l}`` with the
    LogNormal(0, 1) priors of gp/regression, ``v_{l}`` (width, M) ~ N(0, I); param ``inducing_inputs_{l}`` starting
    at Z (M, D). Returns (kernel, inducing inputs, v). ``zoo.dagp``'s deep modes use it with prefix ``mode{j}_``."""
    D = Z.shape[1]
    lengthscale = numpyro.sample(f"{prefix}lengthscale_{layer}", dist.LogNormal(0.0, 1.0).expand([D]).to_event(1))
    variance = numpyro.sample(f"{prefix}variance_{layer}", dist.LogNormal(0.0, 1.0))
    Z_layer = numpyro.param(f"{prefix}inducing_inputs_{layer}", Z)
    v = numpyro.sample(f"{prefix}v_{layer}", dist.Normal(0.0, 1.0).expand([width, Z.shape[0]]).to_event(2))
    return SquaredExponential(variance, lengthscale), Z_layer, v


def layer_guide(layer: int, width: int, M: int, D: int, q_scale: float, prefix: str = "") -> None:
    """Layer l's guide, named as ``layer_sites``: point masses ``{prefix}lengthscale_{l}_map`` and
    ``{prefix}variance_{l}_map`` starting at 1, and q(v_l) = N(m, S) per output with m = 0 and S = q_scale^2 I at the
    start (the Cholesky factor floored by Q_SCALE_FLOOR)."""
    for name, shape in ((f"{prefix}lengthscale_{layer}", (D,)), (f"{prefix}variance_{layer}", ())):
        value = numpyro.param(f"{name}_map", jnp.full(shape, 1.0), constraint=constraints.positive)
        numpyro.sample(name, dist.Delta(value, event_dim=len(shape)))
    mean = numpyro.param(f"{prefix}q_mean_{layer}", jnp.zeros((width, M)))
    tril = numpyro.param(
        f"{prefix}q_scale_tril_{layer}",
        q_scale * jnp.broadcast_to(jnp.eye(M), (width, M, M)),
        constraint=constraints.lower_cholesky,
    )
    floored = tril + Q_SCALE_FLOOR * jnp.eye(M)
    numpyro.sample(f"{prefix}v_{layer}", dist.MultivariateNormal(mean, scale_tril=floored).to_event(1))


def layer_from_params(params: dict, layer: int, identity_mean: bool, prefix: str = "") -> DeepLayer:
    """Layer l as a DeepLayer from the guide's (constrained) parameters of ``layer_guide``."""
    tril = params[f"{prefix}q_scale_tril_{layer}"]
    return DeepLayer(
        SquaredExponential(params[f"{prefix}variance_{layer}_map"], params[f"{prefix}lengthscale_{layer}_map"]),
        params[f"{prefix}inducing_inputs_{layer}"],
        params[f"{prefix}q_mean_{layer}"],
        tril + Q_SCALE_FLOOR * jnp.eye(tril.shape[-1]),
        identity_mean=identity_mean,
    )


def layer_widths(D: int, num_layers: int) -> list[int]:
    """Output widths: W = D for inner layers (identity mean), 1 for the last."""
    return [D] * (num_layers - 1) + [1]


def dsvi(X, Z, y=None, num_layers=2, batch_size=None):
    """Doubly stochastic deep GP with ``num_layers`` SE layers (eqs. 2.86-2.89); Z (M, D) initialises every Z_l.

    Sites: per layer l = 1..L ``lengthscale_l``, ``variance_l``, ``v_l`` (W_l, M); ``noise``; in the plate
    ``data`` the inner layers' ``eps_l`` (B, D). Inducing inputs are ``numpyro.param("inducing_inputs_l", Z)``.
    """
    L = check_layers(num_layers)
    sp.check_sparse_data(X, y, Z)
    N, D = X.shape
    layers = [layer_sites(layer, width, Z) for layer, width in enumerate(layer_widths(D, L), start=1)]
    noise = numpyro.sample("noise", dist.LogNormal(-2.0, 1.0))
    with numpyro.plate("data", N, subsample_size=batch_size) as idx:
        H = X[idx]
        for layer in range(1, L):
            eps = numpyro.sample(f"eps_{layer}", dist.Normal(0.0, 1.0).expand([D]).to_event(1))
            H = inner_layer_sample(*layers[layer - 1], H, eps)
        # Last layer: the analytic E_{p(f|v)} log N(y | f, s2) of gp/svgp (docs/sources/franzese.md#svgp-pitfall).
        kernel, Z_last, v_last = layers[-1]
        _, A = sp.whitened_projection(kernel, Z_last, H)
        k_tilde = kernel.diag(H) - jnp.sum(A**2, 0)
        numpyro.sample("y", dist.Normal(A.T @ v_last[0], jnp.sqrt(noise)), obs=None if y is None else y[idx])
        numpyro.factor("dsvi_trace", -0.5 * k_tilde / noise)


def dsvi_guide(X, Z, y=None, num_layers=2, batch_size=None):
    """q(v_l) = N(m_l, S_l) per layer/output; point masses (MAP) on hyperparameters; eps_l ~ N(0, 1) as in the model.

    Inner layers start with S = 1e-5 I and m = 0 (so they start at the identity map); the last with S = I.
    """
    L = check_layers(num_layers)
    N, D = X.shape
    M = Z.shape[0]
    for layer, width in enumerate(layer_widths(D, L), start=1):
        layer_guide(layer, width, M, D, 1.0 if layer == L else np.sqrt(INNER_Q_VARIANCE))
    noise = numpyro.param("noise_map", jnp.asarray(0.1), constraint=constraints.positive)
    numpyro.sample("noise", dist.Delta(noise))
    with numpyro.plate("data", N, subsample_size=batch_size):
        for layer in range(1, L):
            numpyro.sample(f"eps_{layer}", dist.Normal(0.0, 1.0).expand([D]).to_event(1))


def layers_from_params(params: dict, num_layers: int) -> tuple[list[DeepLayer], Array]:
    """DeepLayers and the noise from the guide's (constrained) parameters, e.g. ``svi.get_params(state)``."""
    layers = [layer_from_params(params, layer, identity_mean=layer < num_layers) for layer in range(1, num_layers + 1)]
    return layers, params["noise_map"]


# ----------------------------------------------------------------------------------------------------------------
# Data and registration


def warped_step(x: Array) -> Array:
    """A smooth step composed with a sine, tanh(4 sin(x)): a function a deep GP fits better than a shallow one."""
    return jnp.tanh(4.0 * jnp.sin(x))


def simulate_warped(key, n: int = 200, m: int = 20, noise_std: float = 0.05, n_test: int = 200) -> Dataset:
    """x ~ U[-pi, pi]; y = tanh(4 sin x) + N(0, noise_std^2); Z = k-means centres of X (M = m)."""
    n, m, n_test = (positive_int(k, v) for k, v in (("n", n), ("m", m), ("n_test", n_test)))
    k_x, k_y, k_z = jax.random.split(key, 3)
    X = jax.random.uniform(k_x, (n, 1), minval=-np.pi, maxval=np.pi)
    f = warped_step(X[:, 0])
    y = f + noise_std * jax.random.normal(k_y, (n,))
    X_test = jnp.linspace(-np.pi, np.pi, n_test)[:, None]
    Z = sp.init_inducing(k_z, X, m, "kmeans")
    observed = {"X": np.asarray(X), "y": np.asarray(y), "Z": Z}
    test = {"X": np.asarray(X_test), "y": np.asarray(warped_step(X_test[:, 0]))}
    return Dataset(observed=observed, truth={"f": np.asarray(f), "noise": noise_std**2}, test=test)


register(
    ModelSpec(
        name="deep_gp/dsvi",
        summary="Doubly stochastic deep GP (2 SE layers, identity inner mean, whitened q(v_l)); guide view",
        source="Kaiser 2021, sec. 2.7 (eqs. 2.86-2.90); Salimbeni & Deisenroth 2017",
        program=dsvi,
        simulate=simulate_warped,
        data_shapes=frozen({"X": ("N", "D"), "Z": ("M", "D"), "y": ("N",)}),
        default_params=frozen({"noise": 0.01}),
        views=frozen({"guide": dsvi_guide}),
    )
)
