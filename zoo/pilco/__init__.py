"""PILCO with GP dynamics (McHutchon 2014, ch. 4; docs/sources/mchutchon.md#pilco): the pure parts.

* ``trig.py``: exact moments of sines of a Gaussian vector (squashing and angle augmentation).
* ``policies.py``: RBF-network and linear policies with sine squashing, their moments at a Gaussian state.
* ``cost.py``: the saturating cost and its expectation at a Gaussian state.
* ``plant.py``: the cart-pole swing-up task (Table 4.1) and roll-outs on the true ODE.
* ``trajectory.py``: policy evaluation on a GP model, by moment matching (eqs. 4.19-4.23) and by particles (M18).

Training (dynamics learning through ``inference.run``, policy optimisation, the control loop) lives in
``inference.pilco``.
"""

from zoo.pilco import cost, plant, policies, trajectory, trig

__all__ = ["cost", "plant", "policies", "trajectory", "trig"]
