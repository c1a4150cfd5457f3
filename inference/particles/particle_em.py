"""Particle EM with a PGAS E-step: ``pgas-em`` (McHutchon sec. 3.8, Algorithm 6 + the particle M-step of sec. 3.8.3)
and ``psaem``, particle stochastic-approximation EM (sec. 3.8.5; Delyon, Lavielle & Moulines 1999; Lindsten 2013).

E-step: ``num_samples`` PGAS sweeps (``inference.particles.pgas``, corrected ancestor weights) per EM iteration,
vmapped over
the K observed trajectories; the chain's reference carries over between iterations (the sweeps of iteration j start
from the last path of iteration j-1, under the new theta), as in PGAS-EM and PSAEM.

Monte Carlo M-step objective (eqs. 3.212-3.215 and 3.230 with the signs of a log density;
docs/sources/mchutchon.md#psaem):
    Q_j(theta) = sum_b w_b log p(x^b_{1:T}, y_{1:T} | theta),     sum_b w_b = 1,
over a buffer of sampled trajectories x^b (all K observed trajectories each). Steps past a trajectory's end are
left out of Q (transitions into and emissions at unobserved steps): they do not inform theta, so keeping them
would only pull theta towards its previous value.

* ``pgas-em``: w_b = 1/S over the S trajectories of the current E-step only.
* ``psaem``: Q_j = (1 - gamma_j) Q_{j-1} + gamma_j q_j, i.e. w = gamma^_{kj} / S with gamma^_{kj} = gamma_k
  prod_{l=k+1}^{j} (1 - gamma_l) over every past E-step k (eq. 3.233 with the printed upper limit j-1 of 3.239
  corrected to j, docs/sources/mchutchon.md#psaem). Step sizes (not given in the thesis; our default): gamma_j = 1
  for j <= k0 (``full_steps``: plain PGAS-EM while far from the fixed point), then gamma_j = (j - k0)^-alpha with
  alpha = ``step_size_exponent`` = 0.7, so sum gamma = inf and sum gamma^2 < inf (alpha in (0.5, 1]). gamma_1 = 1
  makes the weights sum to one at every j.

M-step, maximising Q_j:
* linear-Gaussian SSM (``view.linear_gaussian``, ``zoo.lgssm``): closed form, exact. [A B] by weighted least squares
  of x_t on [x_{t-1}; u_{t-1}], then the diagonal process variance from the residuals; C by weighted least squares
  of y_t on x_t, then the diagonal observation variance. (m0, P0 are fixed in the zoo's lgssm.)
* sparse GP-SSM (``gp_ssm`` view, M10): the observation variance in closed form (eq. 3.229 weighted, C = I) and the
  pseudo-targets F~ by weighted least squares (eqs. 3.218-3.222: the transition mean is affine in F~ and its variance
  does not depend on F~; we regress on F~ directly, the design being the Jacobian d m_f / d F~, which is the
  thesis's kappa K^{-1} with the model's own jitter); the remaining hyperparameters by ``m_step_steps`` Adam steps
  on Q (in the sites' unconstrained spaces), then F~ again for the new hyperparameters (a generalised EM step:
  every update increases Q). Option ``pseudo_target_prior="gp"``: F~ by MAP under its GP prior instead of ML (a
  deviation from the thesis for numerical stability; see ``closed_form_pseudo_targets``).
* any other SSM view: Adam steps on Q for all learned sites.

``params``: the starting point (model defaults; for GP-SSMs the AR1-GP initialisation of Algorithm 1 fills what is
not given); ``fixed``: names of sites held at their starting value. Compiled once per (view, sizes, names).
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.distributions import biject_to

from inference.core import options as opt
from inference.core import parameter_path
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.chains import vmapped_chains
from inference.core.program import observed_args
from inference.optimisation import adam_scan
from inference.particles.pgas import check_fully_adapted, conditional_smc_sweep, initial_reference
from zoo import ssm
from zoo.errors import OptionError
from zoo.options import Option

__all__ = [
    "closed_form_obs_var",
    "closed_form_pseudo_targets",
    "complete_data_log_density",
    "gradient_m_step",
    "linear_gaussian_m_step",
    "m_step",
    "m_step_kind",
    "monte_carlo_q",
    "particle_em_runner",
    "pgas_em",
    "pgas_sweeps",
    "psaem",
    "slot_weights",
    "starting_params",
    "step_sizes",
]

Array = Any


# ----------------------------------------------------------------------------------------------------------------
# E-step
# ----------------------------------------------------------------------------------------------------------------


def pgas_sweeps(view, theta, key, reference, y, mask, u, num_particles: int, num_sweeps: int):
    """``num_sweeps`` PGAS sweeps from ``reference`` (K, T, D), all K trajectories at once -> draws (S, K, T, D)."""
    K = y.shape[0]
    sweep = jax.vmap(lambda k, r, yk, mk, uk: conditional_smc_sweep(view, theta, k, r, yk, mk, uk, num_particles))

    def body(ref, k):
        new = sweep(jax.random.split(k, K), ref, y, mask, u)
        return new, new

    _, draws = jax.lax.scan(body, reference, jax.random.split(key, num_sweeps))
    return draws


# ----------------------------------------------------------------------------------------------------------------
# The Monte Carlo M-step objective
# ----------------------------------------------------------------------------------------------------------------


def complete_data_log_density(view, theta, states, y, mask, u):
    """log p(x_{1:T}, y_{1:T} | theta) of one trajectory (states (T, D)), unobserved steps left out (mask (T,))."""
    log_x1 = view.initial(theta).log_prob(states[0])
    log_trans = jax.vmap(lambda xp, up, x: view.transition(theta, xp, up).log_prob(x))(states[:-1], u[:-1], states[1:])
    log_emit = jax.vmap(lambda x, yt: view.emission(theta, x).log_prob(yt))(states, y)
    return log_x1 + jnp.sum(jnp.where(mask[1:], log_trans, 0.0)) + jnp.sum(jnp.where(mask, log_emit, 0.0))


def monte_carlo_q(view, params, observed, samples, weights):
    """Q(theta) = sum_b w_b sum_k log p(x^{b,k}, y^k | theta): samples (B, K, T, D), weights (B,)."""
    theta = ssm.bind(view, params, observed)
    y, mask, u = ssm.trajectories(observed)
    per_trajectory = jax.vmap(lambda x, yk, mk, uk: complete_data_log_density(view, theta, x, yk, mk, uk))
    per_sample = jax.vmap(lambda xs: jnp.sum(per_trajectory(xs, y, mask, u)))(samples)
    return weights @ per_sample


def _weighted_rows(samples, weights, mask):
    """Per-row weights w_b [t observed] (B, K, T) for the (b, k, t) rows of the samples."""
    return weights[:, None, None] * mask[None].astype(float)


def _weighted_regression(inputs, targets, row_weights):
    """argmin_W sum_r w_r |targets_r - W inputs_r|^2: inputs (R, P), targets (R, Q) -> W (Q, P), by a least-squares
    solve on sqrt-weighted rows (no normal equations: better conditioned). Minimum-norm where the inputs are rank
    deficient (SVD), which only the ill-posed ML pseudo-target solve needs; a full-rank design takes
    ``_full_rank_regression``."""
    sw = jnp.sqrt(row_weights)[:, None]
    W, *_ = jnp.linalg.lstsq(sw * inputs, sw * targets)
    return W.T


def _full_rank_regression(inputs, targets, row_weights):
    """``_weighted_regression`` for inputs of full column rank (R >= P), by a QR factorisation of the sqrt-weighted
    rows and a triangular solve. Why not the SVD: jaxlib's LAPACK SVD kernel runs part of its work on XLA's
    intra-op thread pool and waits for it; inside a compiled loop it already runs on that pool, so on a machine with
    one CPU (a pool of one thread) the program waits for itself forever (docs/performance.md#one-core-hang)."""
    sw = jnp.sqrt(row_weights)[:, None]
    q, r = jnp.linalg.qr(sw * inputs)  # (R, P), (P, P)
    return jax.scipy.linalg.solve_triangular(r, q.T @ (sw * targets)).T


def _weighted_variance(residuals, row_weights):
    """sum_r w_r res_r^2 / sum_r w_r per column: residuals (R, Q) -> (Q,)."""
    return row_weights @ residuals**2 / jnp.sum(row_weights)


def linear_gaussian_m_step(params, fixed: frozenset, samples, weights, observed):
    """Closed-form argmax of Q for ``zoo.lgssm``: samples (B, K, T, D), weights (B,) -> new params."""
    y, mask, u = ssm.trajectories(observed)
    B, K, T, D = samples.shape
    new = dict(params)
    # transitions t-1 -> t for t observed (t >= 1)
    w_trans = _weighted_rows(samples, weights, mask)[:, :, 1:].reshape(-1)
    x_prev = samples[:, :, :-1].reshape(-1, D)
    x_next = samples[:, :, 1:].reshape(-1, D)
    u_prev = jnp.broadcast_to(u[None, :, :-1], (B, *u[:, :-1].shape)).reshape(x_prev.shape[0], -1)
    U = u_prev.shape[1]
    if "A" not in fixed and ("B" not in fixed or U == 0):
        AB = _full_rank_regression(jnp.concatenate([x_prev, u_prev], axis=1), x_next, w_trans)
        new["A"] = AB[:, :D]
        if U:
            new["B"] = AB[:, D:]
    B_mat = new["B"] if U else jnp.zeros((D, 0))
    if "process_var" not in fixed:
        new["process_var"] = _weighted_variance(x_next - x_prev @ new["A"].T - u_prev @ B_mat.T, w_trans)
    # emissions at observed steps
    w_emit = _weighted_rows(samples, weights, mask).reshape(-1)
    xs = samples.reshape(-1, D)
    ys = jnp.broadcast_to(y[None], (B, *y.shape)).reshape(xs.shape[0], -1)
    if "C" not in fixed:
        new["C"] = _full_rank_regression(xs, ys, w_emit)
    if "obs_var" not in fixed:
        new["obs_var"] = _weighted_variance(ys - xs @ new["C"].T, w_emit)
    return new


def closed_form_pseudo_targets(view, params, samples, weights, observed, gp_prior: bool = False):
    """argmax over F~ (D, M) of Q with the other sites fixed (eqs. 3.218-3.222, regressing on F~ directly): per
    output e, weighted least squares of x_{t,e} - m_e(x_{t-1}; F~ = 0) on d m_e / d F~_e with weights
    w_b [t observed] / (s_e(x_{t-1}) + sigma_eps,e^2).

    ``gp_prior``: argmax of Q + log N(F~_e | m_e(X~), K_e(X~, X~)) instead (MAP-EM under the GP prior of FITC and of
    ``gpssm/sparse-gp-prior``, McHutchon sec. 3.4.2). Why: the ML solve is ill-posed along directions of F~ that the
    sampled transitions barely see (K_e has eigenvalues near its jitter for smooth kernels and 20 pseudo-points), and
    there it returns |beta| = |K^{-1} F~| up to 1e12, which moment matching then cancels catastrophically; the thesis
    reports the same instability (sec. 3.9: "solving for the pseudo-targets proved difficult to code in a numerically
    stable manner"). The prior adds M rows to the regression in the whitened coordinates v_e (F~_e = m_e + L_e v_e,
    K_e = L_e L_e^T): |v_e|^2 = (F~_e - m_e)^T K_e^{-1} (F~_e - m_e), no inverse formed."""
    y, mask, u = ssm.trajectories(observed)
    B, K, T, D = samples.shape
    F0 = params["pseudo_targets"]

    def transition_moments(F, x_prev, u_prev):
        theta = ssm.bind(view, {**params, "pseudo_targets": F}, observed)
        d = view.transition(theta, x_prev, u_prev)
        return d.loc, jnp.diagonal(d.covariance_matrix)

    x_prev = samples[:, :, :-1].reshape(-1, D)
    x_next = samples[:, :, 1:].reshape(-1, D)
    u_prev = jnp.broadcast_to(u[None, :, :-1], (B, *u[:, :-1].shape)).reshape(x_prev.shape[0], -1)
    zero = jnp.zeros_like(F0)
    offset, var = jax.vmap(lambda xp, up: transition_moments(zero, xp, up))(x_prev, u_prev)  # (R, D) each
    design = jax.vmap(lambda xp, up: jax.jacfwd(lambda F: transition_moments(F, xp, up)[0])(zero))(x_prev, u_prev)
    w_rows = _weighted_rows(samples, weights, mask)[:, :, 1:].reshape(-1)
    if gp_prior:
        theta = ssm.bind(view, params, observed)
        g = theta["gpssm"]
        prior_mean = (g.pseudo_inputs @ g.mean_A.T + g.mean_b).T  # (D, M)
        prior_chol = theta["predictor"].chol  # (D, M, M): K_e with the model's jitter

    def one_output(e):
        # the mean of output e depends on row e of F~ only (independent GPs)
        X_e, r_e, w_e = design[:, e, e, :], (x_next - offset)[:, e], w_rows / var[:, e]
        if not gp_prior:
            return _weighted_regression(X_e, r_e[:, None], w_e)[0]
        M = F0.shape[1]
        inputs = jnp.concatenate([X_e @ prior_chol[e], jnp.eye(M)])
        targets = jnp.concatenate([r_e - X_e @ prior_mean[e], jnp.zeros(M)])
        v = _full_rank_regression(inputs, targets[:, None], jnp.concatenate([w_e, jnp.ones(M)]))[0]
        return prior_mean[e] + prior_chol[e] @ v

    return jnp.stack([one_output(e) for e in range(D)])


def closed_form_obs_var(samples, weights, observed):
    """sigma_nu,e^2 = sum_b w_b sum_{k,t observed} (y_{t,e} - x_{t,e})^2 / sum w (eq. 3.229 weighted; C = I)."""
    y, mask, _ = ssm.trajectories(observed)
    w = _weighted_rows(samples, weights, mask).reshape(-1)
    residuals = (y[None] - samples).reshape(-1, y.shape[-1])
    return _weighted_variance(residuals, w)


def gradient_m_step(view, params, names: tuple[str, ...], samples, weights, observed, num_steps, learning_rate):
    """``num_steps`` Adam ascent steps on Q over the sites ``names`` (unconstrained by their supports)."""
    if not names or num_steps == 0:
        return params
    sites = ssm.parameter_sites(view, observed)
    transforms = {n: biject_to(sites[n]["fn"].support) for n in names}
    phi0 = {n: transforms[n].inv(params[n]) for n in names}

    def negative_q(phi):
        return -monte_carlo_q(view, {**params, **{n: transforms[n](phi[n]) for n in names}}, observed, samples, weights)

    phi, _ = adam_scan(lambda phi, _: (jax.grad(negative_q)(phi), None), phi0, learning_rate, num_steps=num_steps)
    return {**params, **{n: transforms[n](phi[n]) for n in names}}


def m_step(view, kind: str, params, learned: tuple[str, ...], samples, weights, observed, m_steps, lr, gp_prior=False):
    """argmax (or an increase) of Q over the ``learned`` sites; kind: 'linear_gaussian', 'gp_ssm' or 'gradient';
    ``gp_prior``: the GP-SSM's pseudo-targets by MAP under their GP prior (``closed_form_pseudo_targets``)."""
    fixed = frozenset(params) - frozenset(learned)
    if kind == "linear_gaussian":
        return linear_gaussian_m_step(params, fixed, samples, weights, observed)
    if kind == "gp_ssm":
        if "obs_var" in learned:
            params = {**params, "obs_var": closed_form_obs_var(samples, weights, observed)}
        closed = "pseudo_targets" in learned

        def with_pseudo_targets(p):
            return {**p, "pseudo_targets": closed_form_pseudo_targets(view, p, samples, weights, observed, gp_prior)}

        if closed:
            params = with_pseudo_targets(params)
        rest = tuple(n for n in learned if n not in ("obs_var", "pseudo_targets"))
        params = gradient_m_step(view, params, rest, samples, weights, observed, m_steps, lr)
        return with_pseudo_targets(params) if closed and rest else params
    return gradient_m_step(view, params, learned, samples, weights, observed, m_steps, lr)


# ----------------------------------------------------------------------------------------------------------------
# The EM loop
# ----------------------------------------------------------------------------------------------------------------


def step_sizes(num_steps: int, full_steps: int | None, exponent: float) -> np.ndarray:
    """gamma_j, j = 1..num_steps: 1 for j <= k0 then (j - k0)^-exponent; None = PGAS-EM (gamma = 1 throughout)."""
    j = np.arange(1, num_steps + 1, dtype=float)
    if full_steps is None:
        return np.ones(num_steps)
    return np.where(j <= full_steps, 1.0, np.maximum(j - full_steps, 1.0) ** -exponent)


def slot_weights(previous: Array, slot: Array, gamma: Array) -> Array:
    """Weights gamma^_{kj} of the buffer slots after E-step j (stored in ``slot``): old ones times (1 - gamma_j)."""
    return (previous * (1.0 - gamma)).at[slot].set(gamma)


@program_cache
def particle_em_runner(view, kind, learned, num_particles, num_samples, num_steps, num_slots, m_steps, lr, gp_prior):
    """Chains ``(keys (C,), start params, observed, gammas (num_steps,)) -> (params (C, ...), draws (C, S, K, T, D), q
    trace (C, num_steps), learned params after each M-step (C, num_steps, ...))`` (``inference.core.chains``): C
    independent EM runs. ``num_slots`` = 1 (PGAS-EM) or num_steps (PSAEM buffer)."""

    def one_run(key, start, observed, gammas):
        y, mask, u = ssm.trajectories(observed)
        K, T, _ = y.shape
        D = view.state_dim
        k_init, k_run = jax.random.split(key)
        theta0 = ssm.bind(view, start, observed)
        init = jax.vmap(lambda k, yk, mk, uk: initial_reference(view, theta0, k, yk, mk, uk, num_particles))
        reference = init(jax.random.split(k_init, K), y, mask, u)
        buffer = jnp.zeros((num_slots, num_samples, K, T, D))

        def iteration(carry, inputs):
            params, reference, buffer, weights = carry
            j, k, gamma = inputs
            theta = ssm.bind(view, params, observed)
            draws = pgas_sweeps(view, theta, k, reference, y, mask, u, num_particles, num_samples)
            slot = j % num_slots
            buffer = buffer.at[slot].set(draws)
            weights = slot_weights(weights, slot, gamma)
            flat = buffer.reshape(num_slots * num_samples, K, T, D)
            per_sample = jnp.repeat(weights / num_samples, num_samples)
            params = m_step(view, kind, params, learned, flat, per_sample, observed, m_steps, lr, gp_prior)
            q = monte_carlo_q(view, params, observed, flat, per_sample)
            return (params, draws[-1], buffer, weights), (q, draws, {n: params[n] for n in learned})

        inputs = (jnp.arange(num_steps), jax.random.split(k_run, num_steps), gammas)
        carry = (start, reference, buffer, jnp.zeros(num_slots))
        (params, _, _, _), (qs, draws, path) = jax.lax.scan(iteration, carry, inputs)
        return params, draws[-1], qs, path

    return vmapped_chains(one_run)


def m_step_kind(spec) -> str:
    view = spec.views["state_space"]
    if view.linear_gaussian is not None:
        return "linear_gaussian"
    return "gp_ssm" if "gp_ssm" in spec.views else "gradient"


def starting_params(spec, dataset, params, init) -> dict[str, Array]:
    """The starting point: ``params`` over ``init``, which ``inference.run`` completes with the GP-SSM's AR1-GP
    initialisation when the model has one (``inference.applications.ar1.start``)."""
    observed = observed_args(dataset)
    sites = ssm.parameter_sites(spec.views["state_space"], observed)
    start = {**(init or {}), **(params or {})}
    missing = sorted(set(sites) - set(start))
    if missing:
        raise OptionError(f"no starting value for parameters {missing}; pass them in params or init.")
    return {name: jnp.asarray(start[name], dtype=float) for name in sites}


def run_particle_em(spec, dataset, key, timer, options, full_steps: int | None, exponent: float) -> EngineOutput:
    view = spec.views["state_space"]
    check_fully_adapted(view)
    start = starting_params(spec, dataset, options["params"], options["init"])
    fixed = tuple(options["fixed"])
    unknown = sorted(set(fixed) - set(start))
    if unknown:
        raise OptionError(f"fixed names {unknown} are not parameters of {spec.name} ({sorted(start)})")
    learned = tuple(sorted(set(start) - set(fixed)))
    if options["pseudo_target_prior"] == "gp" and m_step_kind(spec) != "gp_ssm":
        raise OptionError(f"pseudo_target_prior='gp' needs a sparse GP-SSM (pseudo-targets); {spec.name} has none")
    num_steps = options["num_steps"]
    runner = particle_em_runner(
        view,
        m_step_kind(spec),
        learned,
        options["num_particles"],
        options["num_samples"],
        num_steps,
        1 if full_steps is None else num_steps,
        int(options["m_step_steps"]),
        float(options["learning_rate"]),
        options["pseudo_target_prior"] == "gp",
    )
    gammas = jnp.asarray(step_sizes(num_steps, full_steps, exponent))
    keys = jax.random.split(key, options["num_chains"])
    params, draws, qs, path = runner.run(timer, keys, start, observed_args(dataset), gammas)
    return EngineOutput(
        posterior={ssm.STATES: draws},
        point_estimates={name: params[name] for name in learned},
        traces={"q": qs, **parameter_path.as_traces(path)},
        num_lik_evals=options["num_chains"] * num_steps * options["num_samples"],
    )


PSEUDO_TARGET_PRIORS = ("none", "gp")
COMMON_OPTIONS = {
    "num_chains": opt.num_chains(1),
    "num_steps": opt.num_steps(20, doc="EM iterations"),
    "num_samples": opt.num_samples(10, doc="PGAS trajectories per E-step"),
    "num_particles": opt.num_particles(100),
    "m_step_steps": Option("int", 20, "Adam steps per M-step on the sites without a closed form", minimum=0),
    "learning_rate": opt.learning_rate(0.01),
    "params": opt.params(),
    "init": opt.init(),
    "fixed": Option("str", (), "sites held at their starting values", sequence=True),
    "pseudo_target_prior": opt.choice("none", PSEUDO_TARGET_PRIORS, "gp: the GP prior on the pseudo-targets"),
}


@register_engine(
    "pgas-em",
    requires={"state_space"},
    options=COMMON_OPTIONS,
    summary="Particle EM: PGAS E-step, closed-form M-step (lgssm; GP-SSM pseudo-targets and obs noise) + Adam",
    params_role="starts",
)
def pgas_em(spec, dataset, key, timer, **options) -> EngineOutput:
    """``num_steps`` EM iterations with ``num_samples`` PGAS trajectories each (Table 3.4, 1-D: 20 x 10, 100
    particles). posterior ``states``: the last E-step's draws; point_estimates: learned sites (chain, ...);
    traces ``q``: Q after each M-step, and the learned sites after it (``path_<site>``,
    ``inference.core.parameter_path``: q[j] is Q at path[j]; the last entry is the point estimate)."""
    return run_particle_em(spec, dataset, key, timer, options, None, 0.0)


@register_engine(
    "psaem",
    requires={"state_space"},
    options={
        **COMMON_OPTIONS,
        "num_steps": opt.num_steps(50, doc="SAEM iterations"),
        "full_steps": Option("int", 5, "iterations with gamma = 1 before the decay (k0)", minimum=1),
        # sum gamma = inf and sum gamma^2 < inf
        "step_size_exponent": Option("float", 0.7, "gamma_j = (j - k0)^-exponent", above=0.5, maximum=1.0),
    },
    summary="Particle SAEM: PGAS E-step, stochastic-approximation Q with gamma_j = 1 (j <= k0), (j - k0)^-0.7",
    params_role="starts",
)
def psaem(spec, dataset, key, timer, **options) -> EngineOutput:
    """As ``pgas-em`` with Q averaged over all past E-steps by the step sizes gamma_j (module docstring)."""
    exponent, full_steps = options["step_size_exponent"], options["full_steps"]
    return run_particle_em(spec, dataset, key, timer, options, full_steps, exponent)
