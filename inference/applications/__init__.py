"""Applications: clients of ``inference.run`` that are not engines. Structure search and its report, PILCO (with
its plant, cost and policies), Wet-Chicken policy search and NFQ, policy search as inference, active learning,
trimmed fits, the most-likely heteroscedastic GP (MLHGP), the AR1-GP initialiser, the GP-SSM metrics and sequential
Bayesian quadrature. They import engines' public names; no engine imports them.

Nothing is imported here, so that importing one application does not import (and compile) the others."""

__all__ = [
    "active_learning",
    "ar1",
    "bayesian_quadrature",
    "gpssm_metrics",
    "mlhgp",
    "nfq",
    "pilco",
    "policy_inference",
    "policy_search",
    "structure_report",
    "structure_search",
    "trimmed",
]
