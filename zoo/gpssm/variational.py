"""M11: the variational GP-SSM (Frigola, Chen & Rasmussen 2014; McHutchon sec. 3.4.4, eqs. 3.48-3.75;
docs/sources/mchutchon.md#gpssm-variational) and its Markov-Gaussian guide for SVI.

Pseudo-inputs X~ (M, 1) are data, as in M10 (``sparse.py``), chosen by the same rule (the ``pseudo_inputs`` view,
docs/sources/mchutchon.md#pseudo-inputs). Zero mean, no controls, D = 1 (the thesis tested it on the 1-D kink only).
"""

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.contrib.control_flow import scan

from zoo import moments, ssm
from zoo.gp_ssm_view import GPSSMParams, pseudo_predictor
from zoo.gpssm.pseudo_inputs import PseudoInputRule
from zoo.gpssm.sparse import sparse_parameters
from zoo.registry import frozen

Array = Any


def variational_program(D: int, m0, P0):
    """M11 as a NumPyro program: F~ ~ N(0, K(X~, X~)) per output (GP prior), and per step an explicit
    f_t ~ N(A(x_{t-1})^T F~, B(x_{t-1})) (eqs. 3.54-3.55: the noise-free pseudo-data predictive),
    x_t ~ N(f_t, Sigma_eps),
    y_t ~ N(x_t, Sigma_nu). With the guide below, Trace_ELBO is a Monte Carlo estimate of the bound 3.51/3.53 (the
    -1/2 tr(Sigma_eps^{-1} B) term arises from sampling f_t from its prior conditional in the guide). Zero mean, no
    controls (the thesis tested it on the 1-D kink only)."""

    def program(y=None, lengths=None, pseudo_inputs=None):
        K, T = y.shape[:2]
        mask = ssm.observation_mask(jnp.full((K,), T) if lengths is None else lengths, T)
        theta = sparse_parameters(D, 0, "zero", True, m0, P0, {"pseudo_inputs": pseudo_inputs})
        g, predictor = theta["gpssm"], theta["predictor"]
        with numpyro.plate("trajectories", K):
            x1 = numpyro.sample("x1", dist.MultivariateNormal(g.m0, g.P0))
            with numpyro.handlers.mask(mask=mask[:, 0]):
                numpyro.sample("y1", dist.Normal(x1, jnp.sqrt(g.obs_var)).to_event(1), obs=y[:, 0])

        def step(x_prev, inputs):
            y_t, m_t = inputs
            mean, var = jax.vmap(lambda x: moments.predict_point(predictor, x))(x_prev)
            with numpyro.plate("trajectories", K):
                f = numpyro.sample("f", dist.Normal(mean, jnp.sqrt(jnp.maximum(var, 1e-12))).to_event(1))
                x = numpyro.sample("x", dist.Normal(f, jnp.sqrt(g.process_var)).to_event(1))
                with numpyro.handlers.mask(mask=m_t):
                    numpyro.sample("y", dist.Normal(x, jnp.sqrt(g.obs_var)).to_event(1), obs=y_t)
            return x, x

        _, xs = scan(step, x1, (jnp.swapaxes(y[:, 1:], 0, 1), mask[:, 1:].T))
        numpyro.deterministic(ssm.STATES, jnp.concatenate([x1[:, None], jnp.swapaxes(xs, 0, 1)], axis=1))

    return program


def variational_gpssm_params(pseudo_inputs, pseudo_targets, hypers: Mapping[str, Array], m0, P0) -> GPSSMParams:
    """M11's transition as ``GPSSMParams``: zero mean, C = I, the point-mass hyperparameters ``hypers`` (lengthscale,
    signal_var, process_var, obs_var) and one value of the pseudo-targets (D, M)."""
    D = hypers["signal_var"].shape[0]
    return GPSSMParams(
        jnp.asarray(pseudo_inputs), pseudo_targets, hypers["lengthscale"], hypers["signal_var"], hypers["process_var"],
        jnp.zeros((D, D)), jnp.zeros(D), jnp.eye(D), hypers["obs_var"], jnp.asarray(m0), jnp.asarray(P0),
    )  # fmt: skip


def q_transition_predictor(pseudo_inputs, guide_params: Mapping[str, Array]) -> moments.SEPredictor:
    """The transition GP under the fitted guide (``variational_guide``'s params, constrained): f(x) with F~ integrated
    over q(F~_e) = N(mu_e, L_e L_e^T) per output, mean a_e(x)^T mu_e and variance B_e(x) + a_e(x)^T L_e L_e^T a_e(x),
    a_e(x) = K_e^{-1} k_e(X~, x) (eqs. 3.54-3.55; the predictive eq. 3.75 is scored with). In the predictor's form
    (``zoo.moments.SEPredictor``: variance sf2 - k^T W k with W = K^{-1} - B B^T) the spread of q(F~) is the
    low-rank term B = K^{-1} L, so its plain and uncertain-input predictions (``zoo.moments``) both carry it. The
    process noise (``q_process_var``) is not included."""
    hypers = {name: guide_params[f"q_{name}"] for name in ("lengthscale", "signal_var", "process_var", "obs_var")}
    D = hypers["signal_var"].shape[0]
    g = variational_gpssm_params(pseudo_inputs, guide_params["q_F_loc"], hypers, jnp.zeros(D), jnp.eye(D))
    plain = pseudo_predictor(g)  # its chol is the jittered K(X~, X~) per output
    spread = jax.vmap(lambda L, F_tril: jax.scipy.linalg.cho_solve((L, True), F_tril))(
        plain.chol, guide_params["q_F_tril"]
    )
    return plain._replace(post_sqrt=spread)


def variational_guide(D: int, m0, P0):
    """The guide of M11 (docs/sources/mchutchon.md#gpssm-variational): point masses on sf2, lengthscales and noise
    variances (ML-II, as in the thesis), a full-rank Gaussian q(F~_e) per output, a Markov-Gaussian q(x_{1:T}) per
    trajectory, x_1 ~ N(a_1, L_1 L_1^T), x_t | x_{t-1} ~ N(a_t + B_t (x_{t-1} - a_{t-1}), L_t L_t^T) (tridiagonal
    precision), and f_t from the model's own p(f_t | x_{t-1}, F~), so that it cancels in the ELBO."""
    positive = dist.constraints.positive

    def guide(y=None, lengths=None, pseudo_inputs=None):
        K, T = y.shape[:2]
        M = pseudo_inputs.shape[0]
        hypers = {
            "lengthscale": numpyro.param("q_lengthscale", jnp.ones((D, D)), constraint=positive),
            "signal_var": numpyro.param("q_signal_var", jnp.ones(D), constraint=positive),
            "process_var": numpyro.param("q_process_var", jnp.full(D, 0.1), constraint=positive),
            "obs_var": numpyro.param("q_obs_var", jnp.full(D, 0.1), constraint=positive),
        }
        for name, value in hypers.items():
            numpyro.sample(name, dist.Delta(value, event_dim=jnp.ndim(value)))
        F_loc = numpyro.param("q_F_loc", jnp.zeros((D, M)))
        F_tril = numpyro.param(
            "q_F_tril", jnp.broadcast_to(jnp.eye(M), (D, M, M)), constraint=dist.constraints.lower_cholesky
        )
        F = numpyro.sample("pseudo_targets", dist.MultivariateNormal(F_loc, scale_tril=F_tril).to_event(1))
        predictor = pseudo_predictor(variational_gpssm_params(pseudo_inputs, F, hypers, m0, P0))
        loc = numpyro.param("q_x_loc", jnp.where(jnp.isfinite(y), y, 0.0))
        coupling = numpyro.param("q_x_coupling", jnp.zeros((K, T - 1, D, D)))
        tril = numpyro.param(
            "q_x_tril", jnp.broadcast_to(0.3 * jnp.eye(D), (K, T, D, D)), constraint=dist.constraints.lower_cholesky
        )
        with numpyro.plate("trajectories", K):
            x1 = numpyro.sample("x1", dist.MultivariateNormal(loc[:, 0], scale_tril=tril[:, 0]))

        def step(x_prev, inputs):
            a_prev, a, B, L = inputs
            mean_f, var_f = jax.vmap(lambda x: moments.predict_point(predictor, x))(x_prev)
            with numpyro.plate("trajectories", K):
                numpyro.sample("f", dist.Normal(mean_f, jnp.sqrt(jnp.maximum(var_f, 1e-12))).to_event(1))
                mean = a + jnp.einsum("kde,ke->kd", B, x_prev - a_prev)
                x = numpyro.sample("x", dist.MultivariateNormal(mean, scale_tril=L))
            return x, None

        inputs = (loc[:, :-1], loc[:, 1:], coupling, tril[:, 1:])
        scan(step, x1, jax.tree.map(lambda a: jnp.swapaxes(a, 0, 1), inputs))

    return guide


def variational_spec(name: str, simulate, num_pseudo: int = 20) -> ssm.StateSpaceSpec:
    """An M11 spec on the data of ``simulate`` (trajectories; ``num_pseudo`` pseudo-inputs by the ``pseudo_inputs``
    view's rule), with the guide view."""
    m0, P0 = np.zeros(1), np.eye(1)
    return ssm.StateSpaceSpec(
        name=name,
        summary="Variational GP-SSM (M11): GP prior on pseudo-targets, explicit f_t; Markov-Gaussian guide for SVI",
        source="McHutchon 2014, sec. 3.4.4, eqs. 3.48-3.75 (model M11; Frigola, Chen & Rasmussen 2014)",
        program=variational_program(1, m0, P0),
        simulate=simulate,
        data_shapes=frozen(ssm.trajectory_shapes(1, 0, {"pseudo_inputs": ("M", 1)})),
        capabilities=frozenset({"continuous"}),
        views=frozen({"guide": variational_guide(1, m0, P0), "pseudo_inputs": PseudoInputRule(num_pseudo, "zero")}),
    )
