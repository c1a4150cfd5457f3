"""Analytic moment-matching engines for GP-SSMs (McHutchon 2014, secs. 3.5-3.6;
docs/sources/mchutchon.md#direct, docs/sources/mchutchon.md#ads, docs/sources/mchutchon.md#analytic-m-step).

* ``direct`` (Algorithm 1, sec. 3.5): the assumed-density (GP-ADF) forward pass gives an approximate marginal
  likelihood p(y_{1:T} | theta) = prod_t N(y_t; C mu_{t|t-1}, C Sigma_{t|t-1} C^T + Sigma_nu) (eqs. 3.78-3.87),
  maximised over the model's parameters by L-BFGS (or Adam) through autodiff of the ``lax.scan``.
* ``ads`` (Algorithm 2, sec. 3.6.1): the forward pass keeps Cov[x_{t-1}, x_t | y_{1:t-1}] (eq. 1.30) and the RTS-like
  backward pass of ``inference.gaussian.kalman`` gives the smoothed marginals (eqs. 3.93-3.97, 3.97 corrected).
  ``form="ep"`` runs the moment-matching EP backward pass instead (A-EP, eqs. 3.129-3.154): Gaussian beta messages
  divided out of the marginals, and the derivatives of log Z~ with W = d mu_{t|alpha} / d mu_alpha by autodiff.
  The thesis proves both identical (3.155-3.161); ``tests/test_gpssm.py`` shows it numerically.
* ``analytic-em`` (sec. 3.6.4): ADS E-step; M-step with the observation noise in closed form (3.200, with the sum over
  t the print drops), the pseudo-targets in closed form through beta_e = K_e^{-1} (F~_e - m_e(X~)) (Q is quadratic
  in beta_e, 3.194-3.198; the stationary point is solved exactly, with the linear system's coefficients from
  autodiff rather than the printed 3.198, whose signs are wrong), and sf2, Lambda, process noise by L-BFGS on Q with
  beta profiled out.

Moments of GP predictions at Gaussian inputs come from ``zoo.moments`` (issue 3); the GP-SSM view supplies the
parameters (``spec.views["gp_ssm"]``). Every engine returns the smoothed marginals as point estimates ``states_mean``
(1, K, T, D) and ``states_cov`` (1, K, T, D, D), draws of ``states`` from the joint Gaussian the smoother implies,
and ``log_evidence`` = the ADF approximate log-likelihood (approximate: marked so in ``attrs["options"]``).
"""

from typing import Any

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import optax
from jax.scipy.linalg import cho_solve
from numpyro.distributions import biject_to

from inference import optimisation
from inference.core import options as opt
from inference.core import parameter_path
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.program import check_init, observed_args
from inference.gaussian.kalman import (
    ForwardPass,
    Smoothed,
    backward_sample,
    forward_pass_from_scan,
    masked_update,
    rts_smoother,
)
from zoo import moments, ssm
from zoo.errors import OptionError
from zoo.gp_ssm_view import GPSSMParams, linear_mean_of, pseudo_predictor

__all__ = [
    "adf_all",
    "adf_forward",
    "ads",
    "ads_e_step",
    "ads_runner",
    "analytic_em",
    "analytic_m_step",
    "closed_form_obs_var",
    "direct",
    "direct_runner",
    "em_runner",
    "ep_backward",
    "minimise",
    "optimal_beta",
    "run_gp_ssm_em",
    "smooth_all",
    "time_update",
    "transition_q",
]

Array = Any


# ----------------------------------------------------------------------------------------------------------------
# GP-ADF forward pass (shared by all three engines)
# ----------------------------------------------------------------------------------------------------------------


def time_update(g: GPSSMParams, predictor, mean_fn, mean: Array, cov: Array, u_prev: Array):
    """q_time(x_t) from q(x_{t-1}) = N(mean, cov) and a known control (eqs. 3.81-3.83): predicted mean (D,),
    covariance (D, D) = Cov[f] + Sigma_eps, and Cov[x_{t-1}, x_t] (D, D) (eq. 1.30)."""
    D = mean.shape[0]
    mu, Sigma = moments.join_state_control(mean, cov, u_prev)
    mm = moments.predict_moments(predictor, mu, Sigma, mean_fn)
    return mm.mean, mm.cov + jnp.diag(g.process_var), mm.input_output[:D]


def adf_forward(g: GPSSMParams, predictor, mean_fn, y: Array, mask: Array, u: Array) -> ForwardPass:
    """Assumed-density filter of one trajectory (Algorithm 1): y (T, E), mask (T,), u (T, U)."""
    d, R = jnp.zeros(g.C.shape[0]), jnp.diag(g.obs_var)
    m1, P1, ll1 = masked_update(g.m0, g.P0, y[0], mask[0], g.C, d, R)

    def step(carry, inputs):
        m, P, ll = carry
        y_t, m_t, u_prev = inputs
        pred_m, pred_P, cross = time_update(g, predictor, mean_fn, m, P, u_prev)
        new_m, new_P, ll_t = masked_update(pred_m, pred_P, y_t, m_t, g.C, d, R)
        return (new_m, new_P, ll + ll_t), (new_m, new_P, pred_m, pred_P, cross)

    (_, _, ll), steps = jax.lax.scan(step, (m1, P1, ll1), (y[1:], mask[1:], u[:-1]))
    return forward_pass_from_scan(g.m0, g.P0, m1, P1, steps, ll)


def _theta_pieces(gp_view, params, observed):
    theta = ssm.bind(gp_view.state_space, params, observed)
    g = gp_view.to_gpssm(theta)
    return g, pseudo_predictor(g), linear_mean_of(g)


def adf_all(gp_view, params, observed) -> ForwardPass:
    """The ADF forward pass of every trajectory (vmapped): fields with a leading K axis."""
    g, predictor, mean_fn = _theta_pieces(gp_view, params, observed)
    y, mask, u = ssm.trajectories(observed)
    return jax.vmap(adf_forward, in_axes=(None, None, None, 0, 0, 0))(g, predictor, mean_fn, y, mask, u)


# ----------------------------------------------------------------------------------------------------------------
# The moment-matching EP backward pass (A-EP, eqs. 3.129-3.154)
# ----------------------------------------------------------------------------------------------------------------


def _precision(P: Array) -> Array:
    # EP works in natural parameters: the precision of a (positive-definite) marginal, by a Cholesky solve.
    return cho_solve((jnp.linalg.cholesky(P), True), jnp.eye(P.shape[0]))


def ep_backward(g: GPSSMParams, predictor, mean_fn, forward: ForwardPass, y: Array, mask: Array, u: Array):
    """Smoothed marginals by moment-matching EP (Deisenroth & Mohamed 2012; McHutchon eqs. 3.137-3.154).

    alpha_t is the ADF filter (3.134-3.136). Going back, beta_{t+1} = q(x_{t+1}) / alpha_{t+1} (3.127-3.128, in natural
    parameters, possibly improper), times p(y_{t+1} | x_{t+1}) gives the "y beta" factor N(mu_yb, S_yb); then
    d log Z~ / d mu_alpha = W^T (S_yb + S_pred)^{-1} (mu_yb - mu_pred), d^2 log Z~ = -W^T (S_yb + S_pred)^{-1} W, with
    W = d mu_{t+1|alpha} / d mu_alpha_t (autodiff; d S_pred / d mu = 0 as in 3.150), and
    mu_{t|T} = mu_alpha + S_alpha dlogZ, S_{t|T} = S_alpha + S_alpha d2logZ S_alpha (3.151-3.154). The factor is kept
    in natural parameters (Lambda, eta) so an improper beta needs no inverse:
    (S_yb + S_pred)^{-1} = (I + Lambda S_pred)^{-1} Lambda and (S_yb + S_pred)^{-1}(mu_yb - mu_pred) =
    (I + Lambda S_pred)^{-1} (eta - Lambda mu_pred).
    Returns mean (T, D), cov (T, D, D).
    """
    D = g.m0.shape[0]
    Rinv = jnp.diag(1.0 / g.obs_var)

    def predicted_mean(mean, cov, u_prev):
        return time_update(g, predictor, mean_fn, mean, cov, u_prev)[0]

    def step(carry, inputs):
        m_next, P_next = carry
        fm, fP, fm_next, fP_next, pm, pP, y_next, obs_next, u_t = inputs
        Lam_q, Lam_alpha = _precision(P_next), _precision(fP_next)
        Lam = Lam_q - Lam_alpha + jnp.where(obs_next, g.C.T @ Rinv @ g.C, 0.0)
        eta = Lam_q @ m_next - Lam_alpha @ fm_next + jnp.where(obs_next, g.C.T @ Rinv @ y_next, 0.0)
        W = jax.jacfwd(predicted_mean)(fm, fP, u_t)
        solve = jnp.linalg.solve(jnp.eye(D) + Lam @ pP, jnp.concatenate([(eta - Lam @ pm)[:, None], Lam], 1))
        d_log_z = W.T @ solve[:, 0]
        d2_log_z = -W.T @ solve[:, 1:] @ W
        m = fm + fP @ d_log_z
        P = fP + fP @ d2_log_z @ fP
        P = 0.5 * (P + P.T)
        return (m, P), (m, P)

    f = forward
    inputs = (
        f.filt_mean[:-1],
        f.filt_cov[:-1],
        f.filt_mean[1:],
        f.filt_cov[1:],
        f.pred_mean[1:],
        f.pred_cov[1:],
        y[1:],
        mask[1:],
        u[:-1],
    )
    last = (f.filt_mean[-1], f.filt_cov[-1])
    _, (m, P) = jax.lax.scan(step, last, inputs, reverse=True)
    return jnp.concatenate([m, last[0][None]]), jnp.concatenate([P, last[1][None]])


def smooth_all(gp_view, params, observed, form: str = "rts") -> tuple[ForwardPass, Smoothed | tuple[Array, Array]]:
    """ADF forward pass and ADS (``rts``) or A-EP (``ep``) smoothing of every trajectory (leading K axis)."""
    g, predictor, mean_fn = _theta_pieces(gp_view, params, observed)
    y, mask, u = ssm.trajectories(observed)
    forward = jax.vmap(adf_forward, in_axes=(None, None, None, 0, 0, 0))(g, predictor, mean_fn, y, mask, u)
    if form == "rts":
        return forward, jax.vmap(rts_smoother)(forward)
    ep = jax.vmap(ep_backward, in_axes=(None, None, None, 0, 0, 0, 0))
    return forward, ep(g, predictor, mean_fn, forward, y, mask, u)


# ----------------------------------------------------------------------------------------------------------------
# Parameters: unconstrained coordinates of the sites a learning engine estimates
# ----------------------------------------------------------------------------------------------------------------


def _transforms(gp_view, observed, learned: tuple[str, ...]):
    sites = ssm.parameter_sites(gp_view.state_space, observed)
    return {name: biject_to(sites[name]["fn"].support) for name in learned}


def _learned_and_fixed(gp_view, dataset, fixed_params, start: dict | None = None) -> tuple[dict, dict]:
    """(starting values of the learned sites, fixed values). ``start``: the ``init`` option, which ``inference.run``
    completes with Algorithm 1's AR1-GP start before the engine runs (``inference.applications.ar1.start``), so no
    engine fits the AR1-GP inside its call."""
    observed = observed_args(dataset)
    sites = ssm.parameter_sites(gp_view.state_space, observed)
    fixed, start = dict(fixed_params or {}), dict(start or {})
    check_init(sites, start, fixed)
    init = {k: jnp.asarray(v) for k, v in start.items() if k not in fixed}
    missing = set(sites) - set(init) - set(fixed)
    if missing:
        raise OptionError(
            f"no initial value for parameters {sorted(missing)}; pass them in init or params (inference.run fills "
            "init with the AR1-GP start; inference.core.api.run does not)."
        )
    return init, fixed


def _outputs(key, forward, smoothed_mean, smoothed_cov, num_samples):
    keys = jax.random.split(key, forward.filt_mean.shape[0])
    draws = jax.vmap(backward_sample, in_axes=(0, 0, None))(keys, forward, num_samples)  # (K, S, T, D)
    return jnp.swapaxes(draws, 0, 1)[None], smoothed_mean[None], smoothed_cov[None]


# ----------------------------------------------------------------------------------------------------------------
# ads
# ----------------------------------------------------------------------------------------------------------------


@program_cache
def ads_runner(gp_view, form: str, num_samples: int):
    def run(key, params, observed):
        forward, smoothed = smooth_all(gp_view, params, observed, form)
        mean, cov = (smoothed.mean, smoothed.cov) if form == "rts" else smoothed
        return (*_outputs(key, forward, mean, cov, num_samples), jnp.sum(forward.log_lik))

    return jax.jit(run)


@register_engine(
    "ads",
    requires={"gp_ssm_se"},
    options={
        "num_samples": opt.num_samples(500, doc="joint smoothing draws per trajectory"),
        "params": opt.params(),
        "init": opt.init(),
        "form": opt.choice("rts", ("rts", "ep"), "rts: ADS (GP-ADF + RTS-like backward pass); ep: moment-matching EP"),
    },
    summary="Assumed-density smoothing (GP-ADF + RTS-like backward pass), or moment-matching EP; fixed parameters",
    params_role="conditions",
)
def ads(spec, dataset, key, timer, **options) -> EngineOutput:
    """Parameters: ``params`` over the AR1-GP initialisation of the GP-SSM view (Algorithm 1's starting point)."""
    gp_view = spec.views["gp_ssm"]
    init, fixed = _learned_and_fixed(gp_view, dataset, options["params"], options["init"])
    run = ads_runner(gp_view, options["form"], options["num_samples"])
    draws, mean, cov, log_lik = timer.call(run, key, {**init, **fixed}, observed_args(dataset))
    return EngineOutput(
        posterior={ssm.STATES: draws},
        point_estimates={"states_mean": mean, "states_cov": cov},
        log_evidence=float(log_lik),
        num_lik_evals=1,
    )


# ----------------------------------------------------------------------------------------------------------------
# direct
# ----------------------------------------------------------------------------------------------------------------


def minimise(objective, init: Array, optimizer: str, num_steps: int, learning_rate: float, with_points: bool = False):
    """``num_steps`` optimiser steps on ``objective`` from ``init`` (flat); returns the final point and the trace of
    objective values (num_steps,), each at the point before its step, and with ``with_points`` those points too
    (num_steps, P): the parameter path (``inference.core.parameter_path``). Non-finite objective values stop progress
    (the update is skipped). A step (or the L-BFGS line search) can land where the objective is not finite, and the last
    step's point is never evaluated in the loop; so the point returned is the final one only if its objective is finite,
    else the last point whose value and gradient were (``init`` at worst)."""
    solver = optimisation.solver(optimizer, learning_rate)
    value_and_grad = (
        optax.value_and_grad_from_state(objective) if optimizer == "lbfgs" else jax.value_and_grad(objective)
    )

    def step(carry, _):
        p, state, good = carry
        if optimizer == "lbfgs":
            value, grad = value_and_grad(p, state=state)
            updates, new_state = solver.update(grad, state, p, value=value, grad=grad, value_fn=objective)
        else:
            value, grad = value_and_grad(p)
            updates, new_state = solver.update(grad, state, p)
        ok = jnp.isfinite(value) & jnp.all(jnp.isfinite(grad))
        new_p = jnp.where(ok, optax.apply_updates(p, updates), p)
        new_state = jax.tree.map(lambda a, b: jnp.where(ok, a, b), new_state, state)
        return (new_p, new_state, jnp.where(ok, p, good)), (value, p)

    (p, _, good), (trace, points) = jax.lax.scan(step, (init, solver.init(init), init), None, length=num_steps)
    final = jnp.where(jnp.isfinite(objective(p)), p, good)
    return (final, trace, points) if with_points else (final, trace)


@program_cache
def direct_runner(gp_view, names: tuple[str, ...], optimizer: str, num_steps: int, lr: float, num_samples: int):
    def run(key, init, fixed, observed):
        transforms = _transforms(gp_view, observed, names)
        flat0, unravel = jax.flatten_util.ravel_pytree({n: transforms[n].inv(init[n]) for n in names})

        def constrained(flat):
            z = unravel(flat)
            return {**fixed, **{n: transforms[n](z[n]) for n in names}}

        def nlml(flat):
            return -jnp.sum(adf_all(gp_view, constrained(flat), observed).log_lik)

        flat, trace, points = minimise(nlml, flat0, optimizer, num_steps, lr, with_points=True)
        params = constrained(flat)
        forward, smoothed = smooth_all(gp_view, params, observed, "rts")
        draws, mean, cov = _outputs(key, forward, smoothed.mean, smoothed.cov, num_samples)
        learned = {n: params[n][None] for n in names}
        path = jax.vmap(constrained)(points)
        traces = {"adf_log_lik": -trace[None], **parameter_path.as_traces({n: path[n][None] for n in names})}
        return draws, mean, cov, learned, traces, jnp.sum(forward.log_lik)

    return jax.jit(run)


@register_engine(
    "direct",
    requires={"gp_ssm_se"},
    options={
        "num_steps": opt.num_steps(300, minimum=0, doc="optimiser steps (0: smooth at the starting values)"),
        "optimizer": opt.choice("lbfgs", ("lbfgs", "adam"), "L-BFGS or Adam"),
        "learning_rate": opt.learning_rate(0.01),
        "num_samples": opt.num_samples(200, doc="smoothing draws per trajectory at the optimum"),
        "params": opt.params({}),
        "init": opt.init(),
    },
    summary="Direct method (Algorithm 1): maximise the GP-ADF approximate marginal likelihood by L-BFGS or Adam",
)
def direct(spec, dataset, key, timer, **options) -> EngineOutput:
    """Learns every parameter site not fixed by ``params``, from ``init`` where given (e.g. an earlier fit's point
    estimates: a warm start), else from the AR1-GP initialisation. point_estimates: the learned parameters
    (constrained) and the smoothed marginals; traces: ``adf_log_lik`` per step, at the point before the step, and that
    point's learned parameters (``path_<site>``, ``inference.core.parameter_path``)."""
    gp_view = spec.views["gp_ssm"]
    init, fixed = _learned_and_fixed(gp_view, dataset, options["params"], options["init"])
    names = tuple(sorted(init))
    run = direct_runner(
        gp_view,
        names,
        options["optimizer"],
        options["num_steps"],
        float(options["learning_rate"]),
        options["num_samples"],
    )
    draws, mean, cov, learned, traces, log_lik = timer.call(run, key, init, fixed, observed_args(dataset))
    # Adam: one gradient per step; L-BFGS: its line search adds evaluations that are not counted here.
    evals = options["num_steps"] if options["optimizer"] == "adam" else None
    return EngineOutput(
        posterior={ssm.STATES: draws},
        point_estimates={**learned, "states_mean": mean, "states_cov": cov},
        traces=traces,
        log_evidence=float(log_lik),
        num_grad_evals=evals,
    )


# ----------------------------------------------------------------------------------------------------------------
# analytic-em: ADS E-step + analytic M-step (sec. 3.6.4, docs/sources/mchutchon.md#analytic-m-step)
# ----------------------------------------------------------------------------------------------------------------


def transition_q(g: GPSSMParams, predictor, mean_fn, smoothed: Smoothed, u: Array, mask: Array) -> Array:
    """-E_q[log p(x_t | x_{t-1})] summed over the observed transitions of one trajectory, with Turner's approximations
    (ratio of expectations, Jensen on the log; eqs. 3.190-3.193):
    Q_te = 1/2 [(mu_te - M_te)^2 + Sigma_te + V[m_e] - 2 Cov[x_te, x_{t-1}]^T C_te] / sbar_te + 1/2 log(2 pi sbar_te),
    M_te = E[m_e(x^_{t-1})], C_te = Sigma_{t-1}^{-1} Cov[x_{t-1}, m_e], sbar_te = E[s_e(x^_{t-1})] + sigma_eps,e^2,
    all under the smoothed marginal of x_{t-1} and a known control."""
    D = g.m0.shape[0]
    zero_beta = predictor._replace(beta=jnp.zeros_like(predictor.beta))

    def one(m_prev, P_prev, m, P, cross, u_prev):
        mu, Sigma = moments.join_state_control(m_prev, P_prev, u_prev)
        with_mean = moments.predict_moments(predictor, mu, Sigma, mean_fn)
        expected_var = jnp.diagonal(moments.predict_moments(zero_beta, mu, Sigma).cov)  # E[s_e]: beta = 0
        var_of_mean = jnp.diagonal(with_mean.cov) - expected_var
        gain = cho_solve((jnp.linalg.cholesky(P_prev), True), with_mean.input_output[:D])  # (D, D): C_t columns
        coupling = jnp.sum(cross * gain, 0)  # Cov[x_te, x_{t-1}]^T C_te per e
        sbar = expected_var + g.process_var
        resid = (m - with_mean.mean) ** 2 + jnp.diagonal(P) + var_of_mean - 2.0 * coupling
        return jnp.sum(0.5 * resid / sbar + 0.5 * jnp.log(2.0 * jnp.pi * sbar))

    terms = jax.vmap(one)(
        smoothed.mean[:-1], smoothed.cov[:-1], smoothed.mean[1:], smoothed.cov[1:], smoothed.cross, u[:-1]
    )
    return jnp.sum(jnp.where(mask[1:], terms, 0.0))


def closed_form_obs_var(smoothed: Smoothed, y: Array, mask: Array) -> Array:
    """sigma_nu,e^2 = mean over observed steps of (y_te - mu_te)^2 + Sigma_t,ee (eq. 3.200 with its sum over t; C = I).
    smoothed fields and y carry a leading K axis."""
    sq = (y - smoothed.mean) ** 2 + jnp.diagonal(smoothed.cov, axis1=-2, axis2=-1)
    return jnp.sum(jnp.where(mask[..., None], sq, 0.0), (0, 1)) / jnp.sum(mask)


def optimal_beta(q_of_beta, beta_shape) -> Array:
    """The stationary point of Q, exactly quadratic in beta (3.194-3.198): beta* = -H^{-1} grad Q(0), with H and the
    gradient by autodiff (the printed 3.198 has sign errors; this solves dQ/dbeta = 0 directly)."""
    flat = lambda b: q_of_beta(b.reshape(beta_shape))  # noqa: E731
    zero = jnp.zeros(int(np.prod(beta_shape)))
    H = jax.hessian(flat)(zero)
    H = 0.5 * (H + H.T)
    L = jnp.linalg.cholesky(H + 1e-10 * jnp.mean(jnp.diagonal(H)) * jnp.eye(H.shape[0]))
    return -cho_solve((L, True), jax.grad(flat)(zero)).reshape(beta_shape)


def ads_e_step(gp_view, key, params, observed):
    """The ADS E-step of ``em_runner``: (ForwardPass for the posterior draws, Smoothed, ADF log-likelihood); the key is
    unused (``inference.gaussian.sampling_ep.ep_e_step`` is the sampling-EP E-step with the same signature)."""
    forward, smoothed = smooth_all(gp_view, params, observed, "rts")
    return forward, smoothed, jnp.sum(forward.log_lik)


def analytic_m_step(gp_view, names: tuple[str, ...], fixed: frozenset, m_steps: int, params, smoothed, observed):
    """The M-step of sec. 3.6.4 on a smoothed posterior (``Smoothed``, a leading K axis): the observation noise in
    closed form (3.200, unless in ``fixed``), then ``m_steps`` L-BFGS steps on the sites ``names`` with beta profiled
    out of Q, then the pseudo-targets from the optimal beta (unless fixed). Returns (new params, Q at them)."""
    transforms = _transforms(gp_view, observed, names)
    y, mask, u = ssm.trajectories(observed)

    def assemble(params):
        theta = ssm.bind(gp_view.state_space, params, observed)
        return gp_view.to_gpssm(theta), theta["predictor"], theta["mean_fn"]

    def profiled_q(params):
        """Q over all trajectories with beta at its closed-form optimum; returns (Q, beta*, predictor)."""
        g, predictor, mean_fn = assemble(params)

        def q_of_beta(beta):
            per = jax.vmap(transition_q, in_axes=(None, None, None, 0, 0, 0))
            return jnp.sum(per(g, predictor._replace(beta=beta), mean_fn, smoothed, u, mask))

        beta = optimal_beta(q_of_beta, predictor.beta.shape)
        return q_of_beta(beta), beta, predictor

    params = {**params, "obs_var": closed_form_obs_var(smoothed, y, mask)} if "obs_var" not in fixed else params
    flat0, unravel = jax.flatten_util.ravel_pytree({n: transforms[n].inv(params[n]) for n in names})

    def with_hypers(flat):
        z = unravel(flat)
        return {**params, **{n: transforms[n](z[n]) for n in names}}

    flat, _ = minimise(lambda f: profiled_q(with_hypers(f))[0], flat0, "lbfgs", m_steps, 0.0)
    params = with_hypers(flat)
    q_value, beta, predictor = profiled_q(params)
    if "pseudo_targets" not in fixed:
        K_jit = jnp.einsum("dij,dkj->dik", predictor.chol, predictor.chol)  # the jittered K(X~, X~)
        g = assemble(params)[0]
        prior_mean = (g.pseudo_inputs @ g.mean_A.T + g.mean_b).T
        params = {**params, "pseudo_targets": jnp.einsum("dij,dj->di", K_jit, beta) + prior_mean}
    return params, q_value


@program_cache
def em_runner(gp_view, names: tuple[str, ...], num_em: int, m_steps: int, num_samples: int, e_step=ads_e_step):
    """Jitted analytic EM: ``names`` are the sites the inner L-BFGS fits (everything but obs_var, pseudo_targets);
    ``e_step(gp_view, key, params, observed) -> (forward, smoothed, log_lik)`` (default: ADS); the M-step is
    ``analytic_m_step``."""

    def run(key, init, fixed, observed):
        def em_iteration(params, step_key):
            _, smoothed, log_lik = e_step(gp_view, step_key, params, observed)
            params, q_value = analytic_m_step(gp_view, names, frozenset(fixed), m_steps, params, smoothed, observed)
            return params, (log_lik, q_value, {n: params[n] for n in init})

        e_keys = jax.random.split(jax.random.fold_in(key, 1), num_em + 1)
        params, (adf_trace, q_trace, path) = jax.lax.scan(em_iteration, {**init, **fixed}, e_keys[:-1])
        forward, smoothed, log_lik = e_step(gp_view, e_keys[-1], params, observed)
        draws, mean, cov = _outputs(key, forward, smoothed.mean, smoothed.cov, num_samples)
        learned = {n: params[n][None] for n in init}
        traces = {
            "adf_log_lik": adf_trace[None],
            "q": q_trace[None],
            **parameter_path.as_traces({n: v[None] for n, v in path.items()}),
        }
        return draws, mean, cov, learned, traces, log_lik

    return jax.jit(run)


@register_engine(
    "analytic-em",
    requires={"gp_ssm_se"},
    options={
        "num_steps": opt.num_steps(20, doc="EM iterations"),
        "m_step_steps": opt.num_steps(20, doc="L-BFGS steps per M-step"),
        "num_samples": opt.num_samples(200, doc="smoothing draws per trajectory at the end"),
        "params": opt.params({}),
        "init": opt.init(),
    },
    summary="Analytic EM (GPIL): ADS E-step, closed-form pseudo-targets and observation noise, L-BFGS on the rest",
)
def analytic_em(spec, dataset, key, timer, **options) -> EngineOutput:
    """``num_steps`` EM iterations (Table 3.4: 20 for the 1-D kink, 3 for cart-pole); ``m_step_steps`` L-BFGS steps on
    sf2, lengthscales, process noise (and linear-mean weights) per M-step. traces: ``adf_log_lik`` (the ADF
    approximate log-likelihood at the start of each iteration), ``q`` (the M-step objective after it: the transition
    term of eq. 3.189 with beta profiled out) and the learned parameters after it (``path_<site>``,
    ``inference.core.parameter_path``): q[j] is Q at path[j], adf_log_lik[j + 1] the ADF value at path[j]."""
    return run_gp_ssm_em(spec, dataset, key, timer, options, options["num_samples"], ads_e_step)


def run_gp_ssm_em(spec, dataset, key, timer, options, num_draws: int, e_step) -> EngineOutput:
    """EM on a sparse GP-SSM with the analytic M-step and the given E-step (``em_runner``), shared by ``analytic-em``
    and ``is-ep-em``: options ``num_steps``, ``m_step_steps``, ``params``, ``init``."""
    gp_view = spec.views["gp_ssm"]
    init, fixed = _learned_and_fixed(gp_view, dataset, options["params"], options["init"])
    names = tuple(sorted(n for n in init if n not in ("obs_var", "pseudo_targets")))
    run = em_runner(gp_view, names, options["num_steps"], int(options["m_step_steps"]), num_draws, e_step)
    draws, mean, cov, learned, traces, log_lik = timer.call(run, key, init, fixed, observed_args(dataset))
    return EngineOutput(
        posterior={ssm.STATES: draws},
        point_estimates={**learned, "states_mean": mean, "states_cov": cov},
        traces=traces,
        log_evidence=float(log_lik),
    )
