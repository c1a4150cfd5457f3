"""Engines that optimise: ML-II (``ml2``), NIGP (``nigp``), nested variational compression (``nvc``) and SVI
(``svi``), and the one optimiser loop they share (``optimise``) with its ELBO (``elbo``)."""

from inference.optimisation import elbo, ml2, nigp, nvc, optimise, svi
from inference.optimisation.optimise import adam_scan, host_lbfgs, solver

__all__ = ["adam_scan", "elbo", "host_lbfgs", "ml2", "nigp", "nvc", "optimise", "solver", "svi"]
