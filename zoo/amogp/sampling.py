"""AMO-GP by sampling through the layers (DSVI, Kaiser 2021 eqs. 2.86-2.90, applied to eq. 4.2's three layers).

Per point, each layer's output given its (sampled) input is Gaussian (eq. 2.86). With a = L^{-1} k(Z, h):
    given v:       N(a^T v [+ h], k(h, h) - |a|^2)                       (``conditional``: the program's draws)
    under q(v):    N(a^T m [+ h], k(h, h) - |a|^2 + |R^T a|^2)           (``marginal``: predictions)
([+ h]: the identity mean of alignments and warpings). Hidden layers add their noise (s2_a, s2_f) to the draw, as in
``layers``' generative model. ``sample_predict`` is the predictive mixture (eq. 2.90) of S ancestral samples; on an
NVC fit it is the thesis' "sampled posterior" of Figs 4.6-4.7.
"""

from typing import Any

import jax
import jax.numpy as jnp

from zoo import sparse as sp
from zoo.amogp.layers import AMOGP, CPLayer, SELayer

Array = Any


def se_projection(layer: SELayer, H: Array) -> tuple[Array, Array]:
    """(A (M, N), k~ (N,)) of an SE layer at inputs H (N, W): A = L^{-1} k(Z, H), k~ = k(h, h) - |a|^2."""
    _, A = sp.whitened_projection(layer.kernel, layer.Z, H)
    return A, jnp.maximum(layer.kernel.diag(H) - jnp.sum(A**2, 0), 0.0)


def cp_projection(layer: CPLayer, H: Array, out: Array) -> tuple[Array, Array]:
    """(A (M, N), k~ (N,)) of the CP layer at inputs H (N, K) of outputs ``out`` (N,) int."""
    from zoo import gp

    K_zz = layer.kernel(layer.Z, layer.Z_out, layer.Z, layer.Z_out)
    Luu = gp.cholesky(K_zz)
    A = jax.scipy.linalg.solve_triangular(Luu, layer.kernel(layer.Z, layer.Z_out, H, out), lower=True)
    prior_var = layer.kernel.output_variance()[out]
    return A, jnp.maximum(prior_var - jnp.sum(A**2, 0), 0.0)


def se_marginal(layer: SELayer, H: Array) -> tuple[Array, Array]:
    """Identity-mean SE layer under q(v) at inputs H (N, W): mean, var (N, W)."""
    A, k_tilde = se_projection(layer, H)
    mean = H + (layer.q_mean @ A).T
    s = jnp.sum(jnp.einsum("wij,in->wjn", layer.q_scale_tril, A) ** 2, 1).T  # |R_w^T a_n|^2
    return mean, k_tilde[:, None] + s


def cp_marginal(layer: CPLayer, H: Array, out: Array) -> tuple[Array, Array]:
    """CP layer under q(v) at inputs H (N, K) of outputs ``out``: mean, var (N,)."""
    A, k_tilde = cp_projection(layer, H, out)
    return A.T @ layer.q_mean, k_tilde + jnp.sum((layer.q_scale_tril.T @ A) ** 2, 0)


def sample_predict(model: AMOGP, X_new: Array, out_new: Array, key: Array, num_samples: int) -> tuple[Array, Array]:
    """Mixture of S ancestral samples (eq. 2.90) for the latent y_d at X_new (n, K), outputs out_new (n,):
    component means and variances, each (S, n)."""
    masks = [out_new == d for d in range(len(model.alignments))]

    def one(k):
        return _one_sample(model, X_new, out_new, masks, k)

    return jax.vmap(one)(jax.random.split(key, num_samples))


def _one_sample(model: AMOGP, X_new, out_new, masks, key):
    k_a, k_f = jax.random.split(key)
    H = X_new
    for d, layer in enumerate(model.alignments):
        if layer is None:
            continue
        mean, var = se_marginal(layer, X_new)
        draw = mean + jnp.sqrt(var + layer.noise) * jax.random.normal(jax.random.fold_in(k_a, d), mean.shape)
        H = jnp.where(masks[d][:, None], draw, H)
    f_mean, f_var = cp_marginal(model.shared, H, out_new)
    f_draw = f_mean + jnp.sqrt(f_var + model.shared.noise) * jax.random.normal(k_f, f_mean.shape)
    mean, var = f_mean, f_var
    for d, layer in enumerate(model.warpings):
        if layer is None:
            continue
        g_mean, g_var = se_marginal(layer, f_draw[:, None])
        mean = jnp.where(masks[d], g_mean[:, 0], mean)
        var = jnp.where(masks[d], g_var[:, 0], var)
    return mean, var
