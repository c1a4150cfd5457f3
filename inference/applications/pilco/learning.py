"""PILCO with GP dynamics (McHutchon 2014, ch. 4; docs/sources/mchutchon.md#pilco): dynamics learning through
``inference.run``, policy optimisation by L-BFGS on the predicted long-term cost, and the control loop (Fig 4.2).

* ``learn_dynamics(model, observed)``: ``"ar-gp"`` is the original PILCO model, D GPs on the observed pairs
  [y_{t-1}; u_{t-1}] -> y_t with identity mean (eq. 4.17), by ML-II ``gp/regression`` fits under ``ml2`` (the AR1-GP's
  settings), seeing sin and cos of the pendulum angle by default (docs/sources/mchutchon.md#pilco-angle-inputs);
  ``"gp-ssm"`` is the direct-method GP-SSM (``gpssm/sparse-cartpole`` under the ``direct`` engine, "without further
  modifications"). Both return a ``inference.applications.pilco.trajectory.GPDynamics``.
* ``optimise_policy``: L-BFGS (optax, zoom line search, as ``ml2``) on sum_t E[L(x_t)] by moment matching
  (eqs. 4.19-4.23) or by particles with frozen random numbers (M18), gradients by autodiff through the trajectory.
* ``control_loop``: random roll-outs, then repeat {learn dynamics, optimise policy, roll out on the true plant}.

The AR-GP's training set grows each trial; it is padded up to a multiple of ``bucket`` rows with far-away inputs whose
weights are zero and whose kernel rows vanish, so the moments are unchanged and one compiled policy optimisation
serves every iteration in a bucket (``pad_far``): the cost per gradient grows as N^2 (the E^2 N x N matrices Q of
every step), so padding every iteration to the final size would make the early ones pay the last one's price
(docs/sources/mchutchon.md#pilco-speed). The GP-SSM has a fixed number of pseudo-inputs.
"""

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from inference.applications import ar1
from inference.applications.pilco import cost as costs
from inference.applications.pilco import inputs as gp_inputs
from inference.applications.pilco import plant, policies
from inference.applications.pilco import trajectory as tr
from inference.applications.preparation import run
from inference.core import options as opt
from inference.core.program import observed_args
from inference.optimisation import optimise
from zoo import moments, ssm
from zoo import registry as zoo_registry
from zoo.errors import DataError, OptionError, ZooError
from zoo.gp import cholesky_with_jitter
from zoo.gp_ssm_view import GPSSMParams, linear_mean_of, pseudo_predictor
from zoo.gpssm import ar1_regression_data
from zoo.kernels import SquaredExponential
from zoo.options import Option, validate

Array = Any

MODELS = ("ar-gp", "gp-ssm")
EVALUATIONS = ("mm", "particles")


class PlantError(ZooError):
    """The true plant returned a non-finite state. ``trials`` holds every complete trial before the failing one."""

    def __init__(self, message: str, trials: list):
        super().__init__(message)
        self.trials = trials


# ----------------------------------------------------------------------------------------------------------------
# Dynamics models
# ----------------------------------------------------------------------------------------------------------------


def pad_far(X: np.ndarray, R: np.ndarray, capacity: int) -> tuple[np.ndarray, np.ndarray]:
    """Pad inputs X (N, D) and targets R (N, E) to ``capacity`` rows with inputs 1e6 (1 + max|X|) apart from the data
    and each other and zero targets: their kernel values underflow to exactly 0, so K is block diagonal, their
    weights are 0 and their share of tr(K^{-1} Q) is 0; the GP's moments are those of the unpadded GP."""
    N, D = X.shape
    if capacity <= N:
        return X, R
    far = 1e6 * (1.0 + np.max(np.abs(X)))
    pad = far * (1.0 + np.arange(capacity - N))[:, None] * np.ones((1, D))
    return np.concatenate([X, pad]), np.concatenate([R, np.zeros((capacity - N, R.shape[1]))])


def bucketed(n: int, bucket: int) -> int:
    """The smallest multiple of ``bucket`` that is >= n (n itself when bucket < 1)."""
    return n if bucket < 1 else -(-n // bucket) * bucket


def ar_gp_dynamics(
    observed: dict, bucket: int = 100, num_steps: int = ar1.NUM_STEPS, angle: int | None = None
) -> tr.GPDynamics:
    """PILCO's AR-GP (eq. 4.17): ML-II GPs on observed transitions, identity mean, its noise on every prediction.
    ``angle``: the GP sees sin and cos of that state coordinate instead of the coordinate (PILCO's ``dyni``,
    docs/sources/mchutchon.md#pilco-angle-inputs); None: the raw [y; u]. The controller sees the model's state
    directly (obs_var = 0): the AR-GP's state is the observation. K + sn2 I is factorised without jitter unless that
    fails; ``jitter`` (D,) records what each output needed."""
    X, R, A, b = ar1_regression_data(observed, "identity")
    inputs = None if angle is None else gp_inputs.angle_map(X.shape[1], angle)
    if inputs is not None:
        X = np.asarray(jax.vmap(gp_inputs.apply, in_axes=(None, 0))(inputs, jnp.asarray(X)))
    signal_var, lengthscale, noise_var = ar1.fit_output_gps(X, R, num_steps)
    X, R = pad_far(X, R, bucketed(X.shape[0], bucket))
    predictor, jitter = moments.exact_gp_predictor_with_jitter(X, R, signal_var, lengthscale, noise_var)
    D = R.shape[1]
    dyn = tr.GPDynamics(
        predictor,
        moments.LinearMean(jnp.asarray(A), jnp.asarray(b)),
        jnp.asarray(noise_var),
        jnp.zeros(D),
        jitter=jitter,
        inputs=inputs,
    )
    return tr.with_weights(dyn)


GPSSM_PARAMS = ("lengthscale", "signal_var", "process_var", "obs_var", "pseudo_targets")
GPSSM_OPTIONS = {
    "num_pseudo": Option("int", 50, "pseudo-inputs M, reselected from each iteration's data", minimum=1),
    "num_steps": opt.num_steps(350, doc="direct-method L-BFGS steps from Algorithm 1's initialisation (Table 3.4)"),
    "warm_steps": opt.num_steps(50, minimum=0, doc="direct-method L-BFGS steps when warm-started from the last fit"),
    "warm_start": Option("bool", True, "start each iteration's fit from the previous iteration's (else cold)"),
    "seed": Option("int", 0, "the direct engine's seed", minimum=0),
}
AR_GP_OPTIONS = {
    "bucket": Option("int", 100, "pad the training set to a multiple of this many rows (0: no padding)", minimum=0),
    "num_steps": opt.num_steps(ar1.NUM_STEPS, doc="Adam steps of each output's ML-II fit"),
    "angle_inputs": Option("bool", True, "the GP sees sin and cos of the pendulum angle, not the angle (PILCO's dyni)"),
}
DYNAMICS_OPTIONS = {"ar-gp": AR_GP_OPTIONS, "gp-ssm": GPSSM_OPTIONS}


class GPSSMFit(NamedTuple):
    """dynamics: for the controller; params: the fitted GP-SSM (the next iteration's ``warm``); log_lik: the ADF
    log-likelihood of the training data at the fit; compile_s, run_s: the direct engine's compile and run seconds."""

    dynamics: tr.GPDynamics
    params: GPSSMParams
    log_lik: float
    compile_s: float
    run_s: float


def warm_start_params(previous: GPSSMParams, pseudo_inputs: Array) -> dict[str, Array]:
    """Starting values of the direct method from the previous iteration's fitted GP-SSM ``previous``
    (docs/sources/mchutchon.md#pilco-warm-start): its hyperparameters and noise variances unchanged, and
    pseudo-targets (D, M) = its predictive mean of f at this iteration's pseudo-inputs (M, D+U), the same rule by which
    Algorithm 1 initialises them from the AR1-GP; a model that already fits the old data starts the new fit."""
    mean, _ = jax.vmap(moments.predict_point, in_axes=(None, 0, None))(
        pseudo_predictor(previous), jnp.asarray(pseudo_inputs), linear_mean_of(previous)
    )
    return {
        "lengthscale": previous.lengthscale,
        "signal_var": previous.signal_var,
        "process_var": previous.process_var,
        "obs_var": previous.obs_var,
        "pseudo_targets": mean.T,
    }


def gp_ssm_fit(
    observed: dict,
    num_pseudo: int = 50,
    num_steps: int = 350,
    warm_steps: int = 50,
    seed: int = 0,
    warm: GPSSMParams | None = None,
) -> GPSSMFit:
    """The direct-method GP-SSM (``gpssm/sparse-cartpole``, ``direct`` engine): ``num_steps`` L-BFGS steps from
    Algorithm 1's AR1-GP initialisation (350 for the cart-pole, Table 3.4), or ``warm_steps`` from
    ``warm_start_params(warm, ...)`` when ``warm`` (the previous fit) is given. The pseudo-inputs are selected from
    ``observed`` either way. The controller sees the learned observation noise."""
    spec = zoo_registry.get("gpssm/sparse-cartpole", num_pseudo=num_pseudo)
    data = ar1.prepare(spec, observed)
    dataset = data if isinstance(data, zoo_registry.Dataset) else zoo_registry.Dataset(observed=dict(data))
    init = {} if warm is None else warm_start_params(warm, dataset.observed["pseudo_inputs"])
    steps = num_steps if warm is None else warm_steps
    idata = run(spec, dataset, engine="direct", seed=seed, num_steps=steps, num_samples=1, init=init)
    params = {k: jnp.asarray(idata.point_estimates[k].values[0]) for k in GPSSM_PARAMS}
    view = spec.views["gp_ssm"]
    g = view.to_gpssm(ssm.bind(view.state_space, params, observed_args(dataset)))
    dyn = tr.GPDynamics(pseudo_predictor(g), linear_mean_of(g), g.process_var, g.obs_var, jitter=pseudo_gram_jitter(g))
    attrs = idata.posterior.attrs
    log_lik, compile_s, run_s = (float(attrs[k]) for k in ("log_evidence", "compile_s", "run_s"))
    return GPSSMFit(tr.with_weights(dyn), jax.device_get(g), log_lik, compile_s, run_s)


def pseudo_gram_jitter(g) -> Array:
    """(D,): the jitter ``cholesky_with_jitter`` would add to each noise-free pseudo-input Gram K_e(X~, X~). The
    GP-SSM (M10) always carries ``zoo.gp.cholesky``'s relative jitter as part of the model it was trained as
    (docs/sources/mchutchon.md#pseudo-inputs), so the predictor keeps it; this records whether it was needed."""
    K = jax.vmap(lambda sf2, ell: SquaredExponential(sf2, ell)(g.pseudo_inputs))(g.signal_var, g.lengthscale)
    return jax.vmap(lambda k: cholesky_with_jitter(k)[1])(K)


def validated_options(model: str, given: dict | None) -> dict:
    """The dynamics options of ``model`` (``DYNAMICS_OPTIONS``) with ``given`` validated against them."""
    if model not in MODELS:
        raise OptionError(f"dynamics model {model!r} unknown; choose one of {MODELS}.")
    return validate(f"{model} dynamics", DYNAMICS_OPTIONS[model], dict(given or {}))


def fit_dynamics(model: str, observed: dict, options: dict, warm=None) -> tuple[tr.GPDynamics, Any]:
    """One iteration's dynamics: (GPDynamics, the state the next iteration warm-starts from: a ``GPSSMFit``, or None
    for the AR-GP, whose ML-II fits are cheap and always start cold). ``options`` as returned by ``validated_options``;
    ``warm`` is the previous iteration's state."""
    if model == "ar-gp":
        angle = plant.ANGLE if options["angle_inputs"] else None
        return ar_gp_dynamics(observed, bucket=options["bucket"], num_steps=options["num_steps"], angle=angle), None
    settings = {k: v for k, v in options.items() if k != "warm_start"}
    previous = warm.params if options["warm_start"] and warm is not None else None
    fit = gp_ssm_fit(observed, **settings, warm=previous)
    return fit.dynamics, fit


def learn_dynamics(model: str, observed: dict, **options) -> tr.GPDynamics:
    """``model`` in MODELS, trained from cold; options as ``DYNAMICS_OPTIONS[model]``."""
    return fit_dynamics(model, observed, validated_options(model, options))[0]


# ----------------------------------------------------------------------------------------------------------------
# Policy optimisation
# ----------------------------------------------------------------------------------------------------------------


def policy_loss(evaluation: str, dyn, policy, u_max, cost, m0, S0, horizon, noise=None) -> Array:
    """The predicted total cost of ``policy``: moment matching (``"mm"``) or particles (``"particles"``, ``noise``)."""
    if evaluation == "mm":
        return tr.expected_total_cost(dyn, policy, u_max, cost, m0, S0, horizon)
    return tr.particle_total_cost(dyn, policy, u_max, cost, m0, S0, noise)


@partial(jax.jit, static_argnames=("evaluation", "horizon", "max_steps", "u_max"))
def _optimise(dyn, policy, cost, m0, S0, noise, evaluation, horizon, max_steps, u_max, tol):
    parameters, rebuild = policies.trainable(policy)
    flat0, unravel = ravel_pytree(parameters)

    def loss(flat):
        return policy_loss(evaluation, dyn, rebuild(unravel(flat)), u_max, cost, m0, S0, horizon, noise)

    flat, trace, steps = optimise.lbfgs(loss, flat0, max_steps, tol)
    final = loss(flat)
    ok = jnp.isfinite(final)  # a step into non-finite territory keeps the start (recorded as ok = False)
    return rebuild(unravel(jnp.where(ok, flat, flat0))), trace, steps, jnp.where(ok, final, loss(flat0)), ok


@dataclass(frozen=True)
class PolicyFit:
    """policy: the optimised policy; trace (max_steps,): loss per L-BFGS iteration (NaN past the end); steps; loss:
    the predicted total cost of the returned policy; finite: False when L-BFGS ended non-finite (start kept)."""

    policy: Any
    trace: np.ndarray
    steps: int
    loss: float
    finite: bool


def check_task(task: plant.SwingUp, policy) -> None:
    """Bad input before any compilation: horizon, start state and target dimensions, the policy's input dimension."""
    if int(task.horizon) < 1:
        raise OptionError(f"horizon must be >= 1; got {task.horizon}.")
    D = task.state_dim
    if np.shape(task.m0) != (D,) or np.shape(task.S0) != (D, D):
        raise DataError(
            f"start state: m0 must be ({D},) and S0 ({D}, {D}); got {np.shape(task.m0)}, {np.shape(task.S0)}."
        )
    n_z = task.cost.A.shape[0] + task.cost.P.shape[0]
    if task.cost.target.shape != (n_z,) or task.cost.A.shape[1] != D or task.cost.P.shape[1] != D:
        raise DataError(
            f"cost target has shape {task.cost.target.shape}; the cost's augmented state has {n_z} entries "
            f"from a {D}-dimensional state (A {task.cost.A.shape}, P {task.cost.P.shape})."
        )
    d_in = policies.input_dim(policy)
    if d_in != D:
        raise DataError(f"the policy takes {d_in}-dimensional states; the task's state has {D}.")


def optimise_policy(
    dyn: tr.GPDynamics,
    policy,
    task: plant.SwingUp,
    max_steps: int = 100,
    evaluation: str = "mm",
    num_particles: int = 1000,
    seed: int = 0,
    tol: float = 1e-6,
) -> PolicyFit:
    """L-BFGS on the predicted total cost from ``policy`` (sec. 2.14; the lab's ``minimize`` is replaced by optax
    L-BFGS, docs/sources/mchutchon.md#pilco-optimiser). Particles use frozen normals drawn from ``seed``."""
    check_task(task, policy)
    if evaluation not in EVALUATIONS:
        raise OptionError(f"evaluation {evaluation!r} unknown; choose one of {EVALUATIONS}.")
    noise = None
    if evaluation == "particles":
        noise = tr.particle_noise(jax.random.PRNGKey(seed), num_particles, task.horizon, task.state_dim)
    out = _optimise(
        dyn,
        policy,
        task.cost,
        jnp.asarray(task.m0),
        jnp.asarray(task.S0),
        noise,
        evaluation,
        int(task.horizon),
        int(max_steps),
        float(task.u_max),
        tol,
    )
    new, trace, steps, loss, ok = out
    return PolicyFit(new, np.asarray(trace), int(steps), float(loss), bool(ok))


# ----------------------------------------------------------------------------------------------------------------
# Plant roll-outs and the control loop (Fig 4.2)
# ----------------------------------------------------------------------------------------------------------------


@partial(jax.jit, static_argnames=("horizon", "u_max", "random"))
def _rollout(policy, key, m0, S0, obs_std, horizon, u_max, random):
    controller = plant.random_controller(u_max) if random else (lambda y, k: policies.action(policy, y, u_max))
    return plant.rollout(controller, key, m0, S0, obs_std, horizon)


def rollout(task: plant.SwingUp, policy, key: Array, trial_index: int = 0, previous: list | None = None) -> plant.Trial:
    """One trial on the true ODE under ``policy`` (None: random forces). Raises ``PlantError`` naming the trial and
    the first non-finite step, with the complete trials so far (``previous``) attached."""
    trial = _rollout(
        policy,
        key,
        jnp.asarray(task.m0),
        jnp.asarray(task.S0),
        jnp.asarray(task.obs_std),
        int(task.horizon),
        float(task.u_max),
        policy is None,
    )
    bad = ~np.all(np.isfinite(np.asarray(trial.states)), axis=1)
    if bad.any():
        step = int(np.argmax(bad))
        raise PlantError(
            f"trial {trial_index}: the plant returned a non-finite state at step {step}; "
            f"{len(previous or [])} earlier trials are kept in .trials.",
            list(previous or []),
        )
    return trial


def trial_cost(task: plant.SwingUp, trial: plant.Trial) -> float:
    """Total loss of a trial on the true states, sum_{t=1}^T L(x_t) (Fig 4.8's y-axis)."""
    return float(jnp.sum(jax.vmap(costs.cost_at, in_axes=(None, 0))(task.cost, trial.states[1:])))


def swung_up(task: plant.SwingUp, trial: plant.Trial, last: int = 10) -> bool:
    """Success criterion (docs/sources/mchutchon.md#pilco-success): the tip is within the cost width of upright,
    L(x_t) < 1 - exp(-1/2) (d < a), at each of the last ``last`` steps (the last second)."""
    loss = jax.vmap(costs.cost_at, in_axes=(None, 0))(task.cost, trial.states[-last:])
    return bool(jnp.all(loss < 1.0 - np.exp(-0.5)))


@dataclass
class LoopResult:
    """trials: every roll-out (random ones first); predicted (iterations,): the optimised predicted total cost;
    trial_costs (iterations,): true total cost of each policy's training roll-out; test_costs (iterations,
    num_tests): true total cost from other start states; success (iterations,): fraction of test trials swung up;
    policies: the policy of every iteration; dynamics: the last model; jitter (iterations, D): the jitter each
    dynamics GP's factorisation needed (all 0: no Cholesky failure); learn_seconds, optimise_seconds (iterations,):
    wall time of the dynamics training and of the policy optimisation (compilation included); lbfgs_steps
    (iterations,); finite (iterations,): False when L-BFGS ended non-finite and the previous policy was kept;
    iteration_seconds (iterations,): wall time of the whole iteration (training, optimisation, roll-outs). What a
    resumed loop continues from: key, the PRNG key of the next iteration, and fits (iterations,), each iteration's
    dynamics fit state (``fit_dynamics``; the next iteration warm-starts from the last)."""

    trials: list = field(default_factory=list)
    predicted: list = field(default_factory=list)
    trial_costs: list = field(default_factory=list)
    test_costs: list = field(default_factory=list)
    success: list = field(default_factory=list)
    policies: list = field(default_factory=list)
    dynamics: Any = None
    jitter: list = field(default_factory=list)
    learn_seconds: list = field(default_factory=list)
    optimise_seconds: list = field(default_factory=list)
    lbfgs_steps: list = field(default_factory=list)
    finite: list = field(default_factory=list)
    iteration_seconds: list = field(default_factory=list)
    key: Any = None
    fits: list = field(default_factory=list)

    def on_host(self) -> "LoopResult":
        """A copy with every array fetched to the host (NumPy), for pickling."""
        return dataclasses.replace(self, **{f.name: jax.device_get(getattr(self, f.name)) for f in fields(self)})


def control_loop(
    task: plant.SwingUp,
    model: str = "gp-ssm",
    seed: int = 0,
    num_random: int = 2,
    num_iterations: int = 10,
    num_tests: int = 10,
    max_steps: int = 100,
    policy_kind: str = "rbf",
    num_basis: int = 50,
    policy_angle_inputs: bool = False,
    dynamics_options: dict | None = None,
    on_iteration: Callable[[LoopResult], None] | None = None,
    resume: LoopResult | None = None,
) -> LoopResult:
    """PILCO's loop (Fig 4.2): ``num_random`` random roll-outs, then ``num_iterations`` times: learn ``model`` (the
    GP-SSM warm-started from the previous iteration's fit; options ``DYNAMICS_OPTIONS``), optimise the policy from the
    previous one, roll it out once on the plant (added to the data) and ``num_tests`` times more from other start
    states (not added). Defaults: 2 random roll-outs (lab code, M15). ``policy_kind``: "rbf" (the network's weights
    optimised directly), "rbf-targets" (PILCO's pseudo-targets, ``policies.PseudoTargetRBF``) or "linear".
    ``policy_angle_inputs``: the RBF policy sees sin and cos of the pendulum angle in place of the angle (PILCO's
    convention; ``policies.MappedPolicy``).
    ``on_iteration`` is called with the result so far after every iteration (to write partial results or save it);
    ``resume`` (such a result, with the same arguments) continues it up to ``num_iterations`` in total, as a run never
    interrupted would have."""
    options = validated_options(model, dynamics_options)
    key = jax.random.PRNGKey(seed)
    k_pol, key = jax.random.split(key)
    m0, S0 = jnp.asarray(task.m0), jnp.asarray(task.S0)
    targets = policy_kind == "rbf-targets"
    if policy_kind in ("rbf", "rbf-targets") and policy_angle_inputs:
        angle_map = gp_inputs.angle_map(task.state_dim, plant.ANGLE)
        policy = policies.init_mapped_rbf(k_pol, m0, S0, angle_map, 1, num_basis, pseudo_targets=targets)
    elif policy_kind == "rbf":
        policy = policies.init_rbf(k_pol, m0, S0, 1, num_basis)
    elif policy_kind == "rbf-targets":
        policy = policies.init_pseudo_target_rbf(k_pol, m0, S0, 1, num_basis)
    elif policy_kind == "linear" and not policy_angle_inputs:
        policy = policies.init_linear(k_pol, task.state_dim)
    else:
        raise OptionError(
            f"policy_kind {policy_kind!r} unknown (or linear with angle inputs); choose 'rbf', 'rbf-targets' "
            "(PILCO's pseudo-target parameterisation) or 'linear'."
        )
    check_task(task, policy)
    if resume is None:
        out = LoopResult()
        for _ in range(num_random):
            key, k = jax.random.split(key)
            out.trials.append(rollout(task, None, k, len(out.trials), out.trials))
    else:
        if resume.key is None or len(resume.trials) != num_random + len(resume.predicted):
            raise OptionError(
                f"resume: the saved loop has {len(resume.trials)} trials after {len(resume.predicted)} iterations; "
                f"with num_random = {num_random} it should have {num_random + len(resume.predicted)} and a key."
            )
        out, key = resume, jnp.asarray(resume.key)
        policy = out.policies[-1] if out.policies else policy
    while len(out.predicted) < num_iterations:
        start = time.perf_counter()
        dyn, state = fit_dynamics(model, plant.trials_as_data(out.trials), options, out.fits[-1] if out.fits else None)
        jax.block_until_ready(dyn)
        learned = time.perf_counter()
        fit = optimise_policy(dyn, policy, task, max_steps=max_steps)
        out.learn_seconds.append(learned - start)
        out.optimise_seconds.append(time.perf_counter() - learned)
        out.jitter.append(np.asarray(dyn.jitter).tolist())
        out.lbfgs_steps.append(fit.steps)
        out.finite.append(fit.finite)
        policy = fit.policy
        key, k, k_test = jax.random.split(key, 3)
        trial = rollout(task, policy, k, len(out.trials), out.trials)
        out.trials.append(trial)
        tests = [rollout(task, policy, kt, len(out.trials), out.trials) for kt in jax.random.split(k_test, num_tests)]
        out.predicted.append(fit.loss)
        out.trial_costs.append(trial_cost(task, trial))
        out.test_costs.append([trial_cost(task, t) for t in tests])
        out.success.append(float(np.mean([swung_up(task, t) for t in tests])))
        out.policies.append(policy)
        out.dynamics = dyn
        out.key = key
        out.fits.append(state)
        out.iteration_seconds.append(time.perf_counter() - start)
        if on_iteration is not None:
            on_iteration(out)
    return out
