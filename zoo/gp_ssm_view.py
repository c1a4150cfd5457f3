"""The GP-SSM view, the contract between GP-SSM models and the moment-matching engines.

Contract: docs/architecture.md#gp-ssm-view.

The transition is D independent SE-ARD GPs given by pseudo-inputs and pseudo-targets, with a linear mean (zero and
identity included); the emission is y = C x + N(0, diag(obs_var)). A model offers ``spec.views["gp_ssm"]``, a
``GPSSMView``; engines import this module, never a model family.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from zoo import moments, ssm

Array = Any


class GPSSMParams(NamedTuple):
    """The GP-SSM view's parameters (docs/architecture.md#gp-ssm-view).

    D states, E = D observations, U controls, M pseudo-points.

    pseudo_inputs (M, D+U), pseudo_targets (D, M) = f_e(X~) (mean included), lengthscale (D, D+U), signal_var (D,),
    process_var (D,), mean_A (D, D+U), mean_b (D,), C (E, D), obs_var (E,), m0 (D,), P0 (D, D).
    """

    pseudo_inputs: Array
    pseudo_targets: Array
    lengthscale: Array
    signal_var: Array
    process_var: Array
    mean_A: Array
    mean_b: Array
    C: Array
    obs_var: Array
    m0: Array
    P0: Array


def linear_mean_of(g: GPSSMParams) -> moments.LinearMean:
    return moments.LinearMean(g.mean_A, g.mean_b)


def pseudo_predictor(g: GPSSMParams) -> moments.SEPredictor:
    """The noise-free pseudo-data GP of M10: beta_e = K_e(X~, X~)^{-1} (F~_e - m_e(X~)) (with the jitter of
    ``zoo.gp.cholesky``, docs/sources/mchutchon.md#pseudo-inputs), expected variance with K_e(X~, X~)^{-1}."""
    residual = g.pseudo_targets - (g.pseudo_inputs @ g.mean_A.T + g.mean_b).T  # (D, M)
    return moments.exact_gp_predictor(g.pseudo_inputs, residual.T, g.signal_var, g.lengthscale, 0.0)


@dataclass(frozen=True, eq=False)
class GPSSMView:
    """The GP-SSM view: ``state_space`` (the exact SSM view of the same model), ``to_gpssm(theta) -> GPSSMParams``,
    and, for learning engines, ``initial_params(observed, ar1_fit) -> params`` (Algorithm 1's initialisation from an
    AR1-GP fit, pure) with ``ar1_mean`` ("zero", "identity" or "linear"), the mean that AR1-GP is fitted with
    (``inference.applications.ar1.initial_params`` fits it and calls ``initial_params``)."""

    state_space: ssm.StateSpaceView
    to_gpssm: Callable[[Any], GPSSMParams]
    initial_params: Callable[[Mapping[str, Any], Any], dict[str, Array]]
    ar1_mean: str = "zero"
