"""M10: the sparse GP-SSM (McHutchon sec. 3.4.3, eqs. 3.31-3.44; docs/sources/mchutchon.md#gpssm-sparse).

x_t = f([x_{t-1}; u_{t-1}]) + eps_t, eps ~ N(0, diag(process_var)); y_t = x_t + nu_t, nu ~ N(0, diag(obs_var))
(C = I). Pseudo-inputs X~ (M, D+U) are data (``pseudo_inputs``), pseudo-targets F~ (D, M) are parameters (broad
N(0, 10^2) prior, ML-II in the thesis), or get their GP prior N(m(X~), K(X~, X~)) with ``gp_prior``. Markov:
p(x_t | x_{t-1}) = N(m_f(x^), s_f(x^) + process_var) with the noise-free pseudo-data predictive (eq. 3.40, as
corrected in docs/sources/mchutchon.md#errata). Its state-space view is exact, so the particle engines and the
moment-matching engines (the ``gp_ssm`` view) target the same model. x_1 ~ N(m0, P0) fixed per system
(docs/sources/mchutchon.md#initial-state).
"""

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from zoo import gp, moments, ssm
from zoo.data import kink_fixtures, ssm_systems
from zoo.gp_ssm_view import GPSSMParams, GPSSMView, linear_mean_of, pseudo_predictor
from zoo.gpssm.parameters import hyper_parameters, mean_parameters
from zoo.gpssm.pseudo_inputs import PseudoInputRule
from zoo.gpssm.transitions import AR1GP, ar1_gp_predict
from zoo.kernels import SquaredExponential
from zoo.registry import Dataset, frozen

Array = Any

PSEUDO_TARGET_PRIOR_SD = 10.0
SOURCE = "McHutchon 2014, sec. 3.4.3, eqs. 3.31-3.44 (model M10)"


def sparse_parameters(D: int, U: int, mean: str, gp_prior: bool, m0, P0, observed) -> dict[str, Any]:
    """Parameter sites of the sparse GP-SSM; returns theta = {"gpssm": GPSSMParams, "predictor", "mean_fn"}.

    observed["pseudo_inputs"] (M, D+U); sites lengthscale (D, D+U), signal_var (D,), process_var (D,), obs_var (D,),
    pseudo_targets (D, M), and mean_A (D, D+U), mean_b (D,) for the linear mean."""
    Xp = jnp.asarray(observed["pseudo_inputs"])
    hypers = hyper_parameters(D, U)
    A, b = mean_parameters(mean, D, U)
    prior_mean = (Xp @ A.T + b).T  # (D, M)
    if gp_prior:
        K = jax.vmap(lambda sf2, ell: SquaredExponential(sf2, ell)(Xp))(hypers["signal_var"], hypers["lengthscale"])
        L = jax.vmap(gp.cholesky)(K)
        F = numpyro.sample("pseudo_targets", dist.MultivariateNormal(prior_mean, scale_tril=L).to_event(1))
    else:
        F = numpyro.sample(
            "pseudo_targets", dist.Normal(0.0, PSEUDO_TARGET_PRIOR_SD).expand([D, Xp.shape[0]]).to_event(2)
        )
    g = GPSSMParams(
        pseudo_inputs=Xp,
        pseudo_targets=F,
        lengthscale=hypers["lengthscale"],
        signal_var=hypers["signal_var"],
        process_var=hypers["process_var"],
        mean_A=A,
        mean_b=b,
        C=jnp.eye(D),
        obs_var=hypers["obs_var"],
        m0=jnp.asarray(m0),
        P0=jnp.asarray(P0),
    )
    return {"gpssm": g, "predictor": pseudo_predictor(g), "mean_fn": linear_mean_of(g)}


def sparse_state_space_view(D: int, U: int, mean: str, gp_prior: bool, m0, P0) -> ssm.StateSpaceView:
    """The exact state-space view of M10: Gaussian transition N(m_f(x^), diag(s_f(x^) + process_var)) (eqs.
    3.38-3.43), emission N(x, diag(obs_var)), x_1 ~ N(m0 (D,), P0 (D, D))."""

    def transition_moments(theta, x, u):
        mean_f, var_f = moments.predict_point(theta["predictor"], jnp.concatenate([x, u]), theta["mean_fn"])
        return mean_f, jnp.diag(var_f + theta["gpssm"].process_var)

    def emission_matrices(theta):
        g = theta["gpssm"]
        return g.C, jnp.zeros(g.C.shape[0]), jnp.diag(g.obs_var)

    return ssm.gaussian_view(
        D,
        D,
        U,
        parameters=partial(sparse_parameters, D, U, mean, gp_prior, m0, P0),
        initial_moments=lambda theta: (theta["gpssm"].m0, theta["gpssm"].P0),
        transition_moments=transition_moments,
        emission_matrices=emission_matrices,
    )


def initial_params_from_ar1(mean: str, observed: Mapping[str, Any], fit: AR1GP) -> dict[str, Array]:
    """Algorithm 1's initialisation (docs/sources/mchutchon.md#direct) from an AR1-GP ``fit`` with the model's mean
    (``inference.applications.ar1.fit_ar1_gp``): its hyperparameters; its noise split evenly into process and
    observation noise;
    pseudo-targets (D, M) = the AR1-GP predictive mean at observed["pseudo_inputs"] (M, D+U)."""
    F, _ = ar1_gp_predict(fit, observed, jnp.asarray(observed["pseudo_inputs"]))
    params = {
        "lengthscale": fit.lengthscale,
        "signal_var": fit.signal_var,
        "process_var": 0.5 * fit.noise_var,
        "obs_var": 0.5 * fit.noise_var,
        "pseudo_targets": F.T,
    }
    if mean == "linear":
        params.update(mean_A=fit.mean_A, mean_b=fit.mean_b)
    return params


def sparse_gpssm_spec(
    name: str,
    simulate: Callable[..., Dataset],
    state_dim: int,
    control_dim: int = 0,
    mean: str = "zero",
    gp_prior: bool = False,
    num_pseudo: int = 20,
    m0=None,
    P0=None,
    source: str = SOURCE,
) -> ssm.StateSpaceSpec:
    """A sparse GP-SSM spec (M10) on the data of ``simulate`` (trajectories, no pseudo-inputs), with its state-space
    and GP-SSM views and the ``pseudo_inputs`` view: the rule by which
    ``inference.applications.ar1.with_pseudo_inputs`` chooses
    ``num_pseudo`` pseudo-inputs from the data (docs/sources/mchutchon.md#pseudo-inputs)."""
    D, U = state_dim, control_dim
    m0 = np.zeros(D) if m0 is None else np.asarray(m0, dtype=float)
    P0 = np.eye(D) if P0 is None else np.asarray(P0, dtype=float)
    view = sparse_state_space_view(D, U, mean, gp_prior, m0, P0)
    gp_view = GPSSMView(
        state_space=view,
        to_gpssm=lambda theta: theta["gpssm"],
        initial_params=partial(initial_params_from_ar1, mean),
        ar1_mean=mean,
    )
    prior = "GP prior on pseudo-targets" if gp_prior else "pseudo-targets as parameters"
    return ssm.StateSpaceSpec(
        name=name,
        summary=f"Sparse GP-SSM (D={D}, U={U}, {mean} mean, {prior}); pseudo-inputs by the Titsias criterion",
        source=source,
        program=ssm.build_program(view),
        simulate=simulate,
        data_shapes=frozen(ssm.trajectory_shapes(D, U, {"pseudo_inputs": ("M", D + U)})),
        capabilities=frozenset({"continuous", "state_space", "gp_ssm_se"}),
        views=frozen({"state_space": view, "gp_ssm": gp_view, "pseudo_inputs": PseudoInputRule(num_pseudo, mean)}),
    )


def kink_timing_problem():
    """(spec, observed) of Table 3.3's timing problem: the sparse GP-SSM spec and one 20-step kink trajectory with
    ``zoo.data.kink_fixtures.TIMING_PSEUDO_INPUTS``; observed as JAX arrays."""
    spec = sparse_gpssm_spec("figure/kink-sparse-10", lambda key: None, 1)
    data = ssm_systems.kink(jax.random.key(3), num_train=1, num_test=1, num_steps=20)
    dataset = spec.validate({**data.observed, "pseudo_inputs": kink_fixtures.TIMING_PSEUDO_INPUTS})
    return spec, {name: jnp.asarray(value) for name, value in dataset.observed.items()}
