"""AMO-GP as values: its layers, and the Gaussian moments of each layer under a Gaussian input (NVC messages).

Model (Kaiser 2021, eqs. 4.2 and 4.5), per output d = 0..D-1 and point n of that output:
    a_n = x_n + f_a,d(x_n) + eps_a,     f_a,d ~ GP(0, SE), eps_a ~ N(0, s2_a,d)     (alignment, identity mean)
    h_n = f(a_n, d) + eps_f,            f ~ CP, eps_f ~ N(0, s2_f)                  (shared convolution process)
    y_n = h_n + f_g,d(h_n) + eps_y,     f_g,d ~ GP(0, SE), eps_y ~ N(0, s2_y,d)     (warping, identity mean)
An identity alignment is a_n = x_n; for an output with the identity warping the CP layer is the last one,
y_n = f(a_n, d) + eps_y (its noise is the likelihood's: no separate s2_f for that output).

``SELayer`` (alignment or warping: SE-ARD kernel, identity mean, width = input width) and ``CPLayer`` (shared, zero
mean, one output per point) hold whitened q(v) = N(m, R R^T), u = L_ZZ v. ``AMOGP`` holds one entry per output in
``alignments`` and ``warpings``: a layer, or None for the identity.

``se_moments`` / ``cp_moments`` give, per point, the layer's output under q(v) and the input h_n ~ N(mu_n,
diag(var_n)) as in ``zoo.nvc`` (p_n = L^{-1} Psi_n, Phi~_n = L^{-1} Phi_n L^{-T}):
    mean = [mu] + p^T m,    s = p^T S p   (eq. 2.85),
    t    = psi - tr Phi~ + m^T Phi~ m - (p^T m)^2 + tr(Phi~ S) - s        (the 2.84 penalties: E_h Var[f | h, v])
           [+ var + 2 Cov_h(h, f(h))]                                      (identity mean only)
and Var = t + s is the exact variance of the output under q(v) q(h). The identity mean's extra terms are the
variance of h itself and its covariance with f(h), Cov = (E[h k(h, Z)] - mu Psi) L^{-T} m
(``psi.identity_cross``); docs/sources/kaiser.md#amogp-bound derives them.
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular

from zoo import gp
from zoo import nvc as nvc_se
from zoo import sparse as sp
from zoo.amogp import psi as ps
from zoo.kernels import SquaredExponential
from zoo.multioutput.convolution import ConvolutionProcess

Array = Any


class SELayer(NamedTuple):
    """Alignment or warping: kernel, Z (M, W), q_mean (W, M), q_scale_tril (W, M, M), noise (hidden s2; unused on a
    warping, whose noise is the likelihood's)."""

    kernel: SquaredExponential
    Z: Array
    q_mean: Array
    q_scale_tril: Array
    noise: Array


class CPLayer(NamedTuple):
    """Shared layer: CP kernel, Z (M, K) with output labels Z_out (M,) (int), q_mean (M,), q_scale_tril (M, M), and
    the hidden noise s2_f of outputs that have a warping."""

    kernel: ConvolutionProcess
    Z: Array
    Z_out: Array
    q_mean: Array
    q_scale_tril: Array
    noise: Array


class AMOGP(NamedTuple):
    """alignments, warpings: one SELayer or None (identity) per output; shared: CPLayer; noise (D,) likelihood."""

    alignments: tuple
    shared: CPLayer
    warpings: tuple
    noise: Array


def _inverse_factor(K: Array) -> Array:
    """L^{-1} of K = L L^T (with ``gp.cholesky``'s jitter) by one solve against I (see zoo/nvc.py on why)."""
    Luu = gp.cholesky(K)
    return solve_triangular(Luu, jnp.eye(Luu.shape[0]), lower=True)


def _whitened_moments(psi, Linv: Array, m: Array, R: Array) -> tuple[Array, Array, Array, Array]:
    """(P (N, M), mean (N,), s (N,), t (N,)) of one zero-mean GP output with whitened q(v) = N(m, R R^T)."""
    P = psi.psi1 @ Linv.T
    Phi = jnp.einsum("ai,nij,bj->nab", Linv, psi.psi2, Linv)
    mean = P @ m
    s = jnp.sum((P @ R) ** 2, -1)
    quad = jnp.einsum("i,nij,j->n", m, Phi, m) - mean**2
    tr_S = jnp.einsum("nij,ij->n", Phi, R @ R.T)
    t = psi.psi0 - jnp.trace(Phi, axis1=1, axis2=2) + quad + tr_S - s
    return P, mean, s, t


def se_moments(layer: SELayer, mu: Array, var: Array) -> nvc_se.LayerMoments:
    """Identity-mean SE layer under h_n ~ N(mu_n, diag(var_n)): mu, var (N, W) -> fields (N, W)."""
    psi = nvc_se.psi_statistics(layer.kernel, layer.Z, mu, var)
    Linv = _inverse_factor(layer.kernel(layer.Z))
    cross = ps.identity_cross(layer.kernel, layer.Z, mu, var, psi.psi1)  # (N, M, W)

    def one_output(m, R, k):
        _, mean_f, s, t = _whitened_moments(psi, Linv, m, R)
        cov = (cross[:, :, k] - mu[:, k, None] * psi.psi1) @ (Linv.T @ m)  # E[h_k f_k] - mu_k E[f_k]
        return mu[:, k] + mean_f, s, t + var[:, k] + 2.0 * cov

    W = layer.q_mean.shape[0]
    mean, s, t = jax.vmap(one_output)(layer.q_mean, layer.q_scale_tril, jnp.arange(W))
    return nvc_se.LayerMoments(mean.T, s.T, t.T)


def cp_moments(layer: CPLayer, mu: Array, var: Array, out: Array) -> nvc_se.LayerMoments:
    """Shared CP layer under a_n ~ N(mu_n, diag(var_n)) for points of outputs ``out`` (N,) int: fields (N,)."""
    psi = ps.cp_psi_statistics(layer.kernel, layer.Z, layer.Z_out, mu, var, out)
    Linv = _inverse_factor(layer.kernel(layer.Z, layer.Z_out, layer.Z, layer.Z_out))
    _, mean, s, t = _whitened_moments(psi, Linv, layer.q_mean, layer.q_scale_tril)
    return nvc_se.LayerMoments(mean, s, t)


def layer_kl(layer: SELayer | CPLayer) -> Array:
    """KL(q(v) || N(0, I)) summed over the layer's outputs."""
    if isinstance(layer, CPLayer):
        return sp.kl_whitened(sp.WhitenedQ(layer.q_mean, layer.q_scale_tril))
    return jnp.sum(jax.vmap(lambda m, R: sp.kl_whitened(sp.WhitenedQ(m, R)))(layer.q_mean, layer.q_scale_tril))


def kl_total(model: AMOGP) -> Array:
    layers = [*model.alignments, model.shared, *model.warpings]
    return sum(layer_kl(layer) for layer in layers if layer is not None)
