"""Multi-output GPs (docs/sources/franzese.md#multioutput-tied, docs/sources/franzese.md#icm,
docs/sources/kaiser.md#convolution-process). Data: inputs X (N, D) shared by all outputs, outputs Y (N, P).

- ``base``: the multi-output kernel contract (``k(X1, out1, X2, out2)``, ``k.stacked(X)``), the dense likelihood
  (the reference) and posterior (``predict``), shared-kernel sample sites.

``tied_from``, ``icm_from``, ``convolution_from`` read a fitted kernel and noise from a result's point estimates.
- ``kronecker``: log N(vec Y | 0, B kron K_x + diag(noise) kron I) from two eigendecompositions, exact for
  per-output noise (whitening), with a hand-written derivative.
- ``tied``: P independent GPs with a tied input kernel (Franzese ch. 9), family ``gp/multioutput-tied``.
- ``coregion``: ICM/LMC coregionalisation kernels, family ``gp/icm``.
- ``convolution``: the convolution-process kernel (Kaiser sec. 4.1), family ``gp/convolution``.
"""

from zoo.multioutput import base, convolution, coregion, kronecker, tied
from zoo.multioutput.base import MultiOutputKernel, dense_log_marginal_likelihood, predict
from zoo.multioutput.convolution import ConvolutionProcess, convolution_from, convolution_log_marginal_likelihood
from zoo.multioutput.coregion import ICM, LMC, Coregion, icm_from, icm_log_marginal_likelihood
from zoo.multioutput.kronecker import KroneckerNormal, kronecker_log_likelihood
from zoo.multioutput.tied import TiedKernel, tied_from, tied_log_marginal_likelihood, vector_field

__all__ = [
    "ConvolutionProcess",
    "Coregion",
    "ICM",
    "KroneckerNormal",
    "LMC",
    "MultiOutputKernel",
    "TiedKernel",
    "base",
    "convolution",
    "convolution_from",
    "convolution_log_marginal_likelihood",
    "coregion",
    "dense_log_marginal_likelihood",
    "icm_from",
    "icm_log_marginal_likelihood",
    "kronecker",
    "kronecker_log_likelihood",
    "predict",
    "tied",
    "tied_from",
    "tied_log_marginal_likelihood",
    "vector_field",
]
