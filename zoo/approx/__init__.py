"""Approximations past the dense Cholesky for the GP regression evidence (docs/approximations.md): ``hsgp`` (the
Hilbert-space basis of ``numpyro.contrib.hsgp``, 1-3 inputs) and ``quasisep`` (the exact O(N) state-space solve of
tinygp's ``kernels.quasisep``, 1-D inputs) and ``quasisep-parallel`` (module ``parallel``: the same kernels and SDEs,
solved by the parallel-in-time Kalman filter, O(log N) depth for accelerators). ``gp/regression`` chooses one with
its ``approx`` option.

Each module offers ``check_kernel(kernel)`` (raises ``KernelError`` naming what it supports, when a model variant
is built) and ``evidence(kernel, X, noise, ...)``, the NumPyro distribution of y that replaces the dense
``zoo.gp.GaussianEvidence`` in the program.
"""

from zoo.approx import hsgp, parallel, quasisep

APPROXIMATIONS = ("dense", "hsgp", "quasisep", "quasisep-parallel")

__all__ = ["APPROXIMATIONS", "hsgp", "parallel", "quasisep"]
