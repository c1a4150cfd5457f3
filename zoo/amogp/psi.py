"""Psi-statistics of AMO-GP's layers under diagonal Gaussian inputs (Kaiser 2021, eqs. 4.7-4.9).

Two kinds of layer meet a Gaussian input h_n ~ N(mu_n, diag(var_n)):

- the shared convolution-process layer f (``cp_psi_statistics``): point n belongs to output d_n and inducing point i
  to output e_i, so the kernel between them is an SE of the pair's variance P_r(d_n, e_i) and lengthscale
  lhat_r(d_n, e_i) (``ConvolutionProcess.pair_terms``, with the derived PSD prefactor of
  docs/sources/kaiser.md#convolution-process). With the precision alpha = 1 / lhat^2 (the reading of eqs. 4.8/4.9
  that makes them Gaussian integrals, docs/sources/kaiser.md#psi-statistics), per input dimension
      psi0_n    = sum_r P_r(d_n, d_n)                                                           (4.7)
      psi1_ni   = sum_r P_ni (1 + v alpha_ni)^(-1/2) exp(-1/2 alpha_ni (mu - z_i)^2 / (1 + v alpha_ni))   (4.8)
      psi2_nij  = sum_{r, r'} P_ni P_nj exp(-1/2 alpha_ni alpha_nj / (alpha_ni + alpha_nj) (z_i - z_j)^2)
                  (1 + v a)^(-1/2) exp(-1/2 a (mu - zbar)^2 / (1 + v a)),  a = alpha_ni + alpha_nj,
                  zbar = (alpha_ni z_i + alpha_nj z_j) / a                                     (4.9)
  (eqs. 4.8/4.9 are written with (Sigma_a)^{-1} = 1 / v; this form also holds at v = 0, a deterministic input, where
  psi1 is the CP Gram matrix and psi2 = psi1 psi1^T). One output: the SE statistics of ``zoo.nvc.psi_statistics``.
- the SE layers with the identity mean (alignments a_d, warpings g_d): ``zoo.nvc.psi_statistics`` plus the cross
  statistic the identity mean needs, E[h_nk k(h_n, z_i)] = psi1_ni (l_k^2 mu_nk + v_nk z_ik) / (l_k^2 + v_nk) (the
  mean of the tilted Gaussian h k(h, z_i); ``identity_cross``).

Shapes: mu, var (N, K); Z (M, K); out (N,), Z_out (M,) integer output indices.
"""

from typing import Any

import jax.numpy as jnp

from zoo.eager import compiled_when_eager
from zoo.kernels import SquaredExponential
from zoo.multioutput.convolution import ConvolutionProcess
from zoo.nvc import PsiStatistics

Array = Any


@compiled_when_eager
def cp_psi_statistics(
    kernel: ConvolutionProcess, Z: Array, Z_out: Array, mu: Array, var: Array, out: Array
) -> PsiStatistics:
    """CP Psi-statistics (eqs. 4.7-4.9, module docstring): psi0 (N,), psi1 (N, M), psi2 (N, M, M)."""
    prefactor, lhat = kernel.pair_terms(out, Z_out)  # (R, N, M), (R, N, M, K)
    alpha = 1.0 / lhat**2
    mu_, var_ = mu[None, :, None, :], var[None, :, None, :]  # (1, N, 1, K)
    log1 = -0.5 * jnp.sum(jnp.log1p(var_ * alpha) + alpha * (mu_ - Z[None, None]) ** 2 / (1.0 + var_ * alpha), -1)
    psi1 = jnp.sum(prefactor * jnp.exp(log1), 0)
    # pairs (r, i) x (r', j): put (r, i) on axes 0 and 2, (r', j) on axes 1 and 3 of (R, R, N, M, M, K)
    ai, aj = alpha[:, None, :, :, None, :], alpha[None, :, :, None, :, :]
    zi, zj = Z[None, None, None, :, None, :], Z[None, None, None, None, :, :]
    a = ai + aj
    zbar = (ai * zi + aj * zj) / a
    v = var[None, None, :, None, None, :]
    m = mu[None, None, :, None, None, :]
    log2 = -0.5 * jnp.sum(ai * aj / a * (zi - zj) ** 2 + jnp.log1p(v * a) + a * (m - zbar) ** 2 / (1.0 + v * a), -1)
    pair = prefactor[:, None, :, :, None] * prefactor[None, :, :, None, :]
    psi2 = jnp.sum(pair * jnp.exp(log2), (0, 1))
    psi0 = kernel.output_variance()[out]
    return PsiStatistics(psi0, psi1, psi2)


def identity_cross(kernel: SquaredExponential, Z: Array, mu: Array, var: Array, psi1: Array) -> Array:
    """E[h_nk k(h_n, z_i)] for h_n ~ N(mu_n, diag(var_n)), SE-ARD kernel: (N, M, K); psi1 (N, M) = E k(h_n, z_i)."""
    ell2 = jnp.broadcast_to(jnp.asarray(kernel.lengthscale, dtype=float), (Z.shape[-1],)) ** 2
    tilted = (ell2 * mu[:, None, :] + var[:, None, :] * Z[None]) / (ell2 + var[:, None, :])
    return psi1[..., None] * tilted
