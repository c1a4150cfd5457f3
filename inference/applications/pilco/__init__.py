"""PILCO with GP dynamics (McHutchon 2014, ch. 4; docs/sources/mchutchon.md#pilco): the pure parts.

* ``trig.py``: exact moments of sines of a Gaussian vector (squashing and angle augmentation).
* ``policies.py``: RBF-network and linear policies with sine squashing, their moments at a Gaussian state.
* ``cost.py``: the saturating cost and its expectation at a Gaussian state.
* ``plant.py``: the cart-pole swing-up task (Table 4.1) and roll-outs on the true ODE.
* ``trajectory.py``: policy evaluation on a GP model, by moment matching (eqs. 4.19-4.23) and by particles (M18).

* ``learning.py``: training (dynamics learning through ``inference.run``, policy optimisation, the control loop);
  its public names are re-exported here.
"""

from inference.applications.pilco import cost, inputs, learning, plant, policies, trajectory, trig
from inference.applications.pilco.learning import (
    AR_GP_OPTIONS,
    DYNAMICS_OPTIONS,
    EVALUATIONS,
    GPSSM_OPTIONS,
    GPSSM_PARAMS,
    MODELS,
    GPSSMFit,
    LoopResult,
    PlantError,
    PolicyFit,
    ar_gp_dynamics,
    bucketed,
    check_task,
    control_loop,
    fit_dynamics,
    gp_ssm_fit,
    learn_dynamics,
    optimise_policy,
    pad_far,
    policy_loss,
    pseudo_gram_jitter,
    rollout,
    swung_up,
    trial_cost,
    validated_options,
    warm_start_params,
)

__all__ = [
    "AR_GP_OPTIONS",
    "DYNAMICS_OPTIONS",
    "EVALUATIONS",
    "GPSSM_OPTIONS",
    "GPSSM_PARAMS",
    "MODELS",
    "GPSSMFit",
    "LoopResult",
    "PlantError",
    "PolicyFit",
    "ar_gp_dynamics",
    "bucketed",
    "check_task",
    "control_loop",
    "cost",
    "fit_dynamics",
    "gp_ssm_fit",
    "inputs",
    "learn_dynamics",
    "learning",
    "optimise_policy",
    "pad_far",
    "plant",
    "policies",
    "policy_loss",
    "pseudo_gram_jitter",
    "rollout",
    "swung_up",
    "trajectory",
    "trial_cost",
    "trig",
    "validated_options",
    "warm_start_params",
]
