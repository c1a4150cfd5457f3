"""Fixed sparse GP-SSM parameters for the kink system (``ssm_systems.kink``), close to its truth.

With these an E-step sees a model near the data-generating one, so E-step comparisons (PGAS vs ADS, McHutchon 2014
Tables 3.2 and 3.3) measure the posterior approximation, not the learning. Used by ``benchmarks`` and
``paper_figures`` alike. Data only: the model these parameters belong to is built by the model family
(``zoo.gpssm.sparse.kink_timing_problem``), which builds on the data, not the reverse.
"""

import numpy as np

from zoo.data import ssm_systems


def fixed_kink_params(pseudo_inputs: np.ndarray) -> dict[str, np.ndarray]:
    """Sparse GP-SSM parameters close to the kink's truth: pseudo-targets f(X~) at pseudo_inputs (M, 1), signal
    variance 9, lengthscale 1, the true process and observation noise."""
    return {
        "lengthscale": np.array([[1.0]]),
        "signal_var": np.array([9.0]),
        "process_var": np.array([ssm_systems.KINK_PROCESS_VAR]),
        "obs_var": np.array([ssm_systems.KINK_OBS_VAR]),
        # NumPy, the same arithmetic as ssm_systems.kink_function: run through jnp it compiled programs at import
        "pseudo_targets": np.where(pseudo_inputs.T < 4.0, pseudo_inputs.T + 1.0, -4.0 * pseudo_inputs.T + 21.0),
    }


PSEUDO_INPUTS = np.linspace(-3.0, 6.0, 15)[:, None]  # (15, 1) on [-3, 6]
PARAMS = fixed_kink_params(PSEUDO_INPUTS)


# McHutchon 2014 Table 3.3's timing problem (docs/sources/mchutchon.md#settings): one 20-step trajectory of the kink,
# the sparse GP-SSM with 10 pseudo-points on [-3, 6], parameters fixed near the truth.
TIMING_PSEUDO_INPUTS = np.linspace(-3.0, 6.0, 10)[:, None]  # (10, 1)
TIMING_PARAMS = fixed_kink_params(TIMING_PSEUDO_INPUTS)
