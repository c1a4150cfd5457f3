"""GP state-space models (McHutchon 2014, ch. 3; docs/sources/mchutchon.md#gpssm): registration and re-exports.

x_t = f([x_{t-1}; u_{t-1}]) + eps_t, eps ~ N(0, diag(process_var)); y_t = x_t + nu_t, nu ~ N(0, diag(obs_var))
(C = I: every state observed with noise, as in all thesis experiments). f: D independent GPs with SE-ARD kernels
(``lengthscale`` (D, D+U), ``signal_var`` (D,)) and a zero, identity or learnable linear mean m(x^) = A x^ + b.
Data: y (K, T, D), lengths (K,), u (K, T, U) for controlled systems, and ``pseudo_inputs`` (M, D+U) for the sparse
and variational models. x_1 ~ N(m0, P0) fixed per system (docs/sources/mchutchon.md#initial-state): N(0, I) for the
kink and random systems.

Modules:

* ``full.py``: ``gpssm/full`` (M9, eq. 3.27), f integrated out: an exact non-Markov density
  (docs/sources/mchutchon.md#gpssm-full).
* ``sparse.py``: ``gpssm/sparse``, ``gpssm/sparse-gp-prior``, ``gpssm/sparse-cartpole``, ``gpssm/sparse-random`` (M10,
  eqs. 3.38-3.43): pseudo-inputs X~ (M, D+U) as data, pseudo-targets F~ (D, M) as parameters or with their GP prior
  (docs/sources/mchutchon.md#gpssm-sparse).
* ``variational.py``: ``gpssm/variational`` (M11, eqs. 3.48-3.75) and its Markov-Gaussian guide
  (docs/sources/mchutchon.md#gpssm-variational).
* ``transitions.py``: the observed transitions [y_{t-1}; u_{t-1}] -> y_t, the data of the AR1-GP baseline (M13,
  docs/sources/mchutchon.md#ar1-gp), its fitted values ``AR1GP`` and predictive.
* ``pseudo_inputs.py``: the greedy Titsias selection of pseudo-inputs given an AR1-GP fit
  (docs/sources/mchutchon.md#pseudo-inputs).
* ``parameters.py``: the parameter sites and priors the models share (docs/sources/mchutchon.md#priors).

Pseudo-inputs are an explicit data-preparation step, not part of ``simulate``. The thesis picks X~ from the
observed inputs by the Titsias bound of an AR1-GP fitted to the data; fitting it is training, which lives in
``inference/``. So ``simulate`` returns trajectories only, a model that needs pseudo-inputs declares how to choose
them in its ``"pseudo_inputs"`` view (a ``PseudoInputRule``: ``num_pseudo``, the family option, and the AR1-GP's
mean), and ``inference.applications.ar1.with_pseudo_inputs(spec, dataset)`` (the AR1-GP by the ``ml2`` engine, then
``select_pseudo_inputs``) returns the dataset with ``pseudo_inputs`` in ``observed`` and ``test``.
``inference.applications.ar1.prepare(spec, data)`` applies it when the model has the view and the data lack
pseudo-inputs;
``inference.run`` applies it to the data before validation, so simulated data reach every engine complete. Data
given with their own ``pseudo_inputs`` are used as they are.
Likewise the direct method's AR1-GP initialisation: the ``gp_ssm`` view's ``initial_params(observed, fit)`` is pure,
and the engines pass it the fit of ``inference.applications.ar1.fit_ar1_gp``
(``inference.applications.ar1.initial_params``).
"""

from functools import partial

import numpy as np

from zoo.data import ssm_systems
from zoo.gpssm.full import (
    FullGPSSMParams,
    MarginalGPSSMView,
    dynamics_log_density,
    effective_noise,
    full_default_params,
    full_gpssm_spec,
    full_log_joint,
    full_parameters,
    gpssm_full_program,
    history_predictive,
    history_terms,
    transition_factors,
)
from zoo.gpssm.pseudo_inputs import PseudoInputRule, select_pseudo_inputs
from zoo.gpssm.sparse import (
    PSEUDO_TARGET_PRIOR_SD,
    initial_params_from_ar1,
    sparse_gpssm_spec,
    sparse_parameters,
    sparse_state_space_view,
)
from zoo.gpssm.transitions import AR1GP, ar1_gp_predict, ar1_regression_data, observed_transitions
from zoo.gpssm.variational import (
    q_transition_predictor,
    variational_gpssm_params,
    variational_guide,
    variational_program,
    variational_spec,
)
from zoo.options import Option
from zoo.registry import register, register_family

__all__ = [
    "AR1GP",
    "FULL",
    "KINK",
    "PSEUDO_TARGET_PRIOR_SD",
    "FullGPSSMParams",
    "MarginalGPSSMView",
    "PseudoInputRule",
    "ar1_gp_predict",
    "ar1_regression_data",
    "dynamics_log_density",
    "effective_noise",
    "full_default_params",
    "full_gpssm_spec",
    "full_log_joint",
    "full_parameters",
    "gpssm_full_program",
    "history_predictive",
    "history_terms",
    "initial_params_from_ar1",
    "observed_transitions",
    "q_transition_predictor",
    "select_pseudo_inputs",
    "sparse_gpssm_spec",
    "sparse_parameters",
    "sparse_state_space_view",
    "transition_factors",
    "variational_gpssm_params",
    "variational_guide",
    "variational_program",
    "variational_spec",
]


def _num_pseudo(default: int) -> dict[str, Option]:
    doc = (
        "pseudo-inputs M, chosen from the data by the Titsias bound of the AR1-GP "
        "(inference.applications.ar1.with_pseudo_inputs)"
    )
    return {"num_pseudo": Option("int", default, doc, minimum=1)}


KINK = partial(ssm_systems.kink)
FULL = register(full_gpssm_spec("gpssm/full", KINK, 1))
SPARSE_SOURCE = "McHutchon 2014, sec. 3.4.3, eqs. 3.31-3.44 (model M10)"


@register_family("gpssm/sparse", _num_pseudo(20), "Sparse GP-SSM on the kink (M10)", SPARSE_SOURCE)
def _sparse(num_pseudo: int):
    return sparse_gpssm_spec("gpssm/sparse", KINK, 1, num_pseudo=num_pseudo)


@register_family(
    "gpssm/sparse-gp-prior",
    _num_pseudo(20),
    "Sparse GP-SSM on the kink, GP prior on the pseudo-targets",
    "McHutchon 2014, sec. 3.4.3-3.4.4",
)
def _sparse_gp_prior(num_pseudo: int):
    source = "McHutchon 2014, sec. 3.4.3-3.4.4"
    return sparse_gpssm_spec("gpssm/sparse-gp-prior", KINK, 1, gp_prior=True, num_pseudo=num_pseudo, source=source)


@register_family("gpssm/sparse-cartpole", _num_pseudo(50), "Sparse GP-SSM on the cart-pole (M10)", SPARSE_SOURCE)
def _sparse_cartpole(num_pseudo: int):
    m0, P0 = [0.0, 0.0, 0.0, np.pi], 0.01 * np.eye(4)
    simulate = ssm_systems.cartpole
    return sparse_gpssm_spec(
        "gpssm/sparse-cartpole", simulate, 4, 1, mean="identity", num_pseudo=num_pseudo, m0=m0, P0=P0
    )


@register_family("gpssm/sparse-random", _num_pseudo(10), "Sparse GP-SSM on a random 2-D GP system", SPARSE_SOURCE)
def _sparse_random(num_pseudo: int):
    simulate = partial(ssm_systems.random_gp_system, state_dim=2)
    return sparse_gpssm_spec("gpssm/sparse-random", simulate, 2, num_pseudo=num_pseudo)


@register_family(
    "gpssm/variational",
    _num_pseudo(20),
    "Variational GP-SSM (M11) on the kink, Markov-Gaussian guide",
    "McHutchon 2014, sec. 3.4.4, eqs. 3.48-3.75 (model M11; Frigola, Chen & Rasmussen 2014)",
)
def _variational(num_pseudo: int):
    return variational_spec("gpssm/variational", partial(ssm_systems.kink, num_train=10), num_pseudo)
