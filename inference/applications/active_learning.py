"""Active learning and incremental aggregation with a GP of fixed hyperparameters (Franzese 2024, ch. 7;
docs/sources/franzese.md#active-learning).

Three procedures over the same state, written BlackJAX-style: a pure ``init`` and ``step`` over an explicit state, with
fixed-capacity buffers so a whole run is one ``jax.lax.scan`` compiled once, whatever the number of points.

- ``learner(gp, candidates, oracle, rule)``: active learning (sec. 7.1). Each step predicts on the M candidates
  ((M, D), "a grid of the workspace"), picks one by the acquisition ``rule`` (``"max_variance"``: argmax of the
  posterior variance of f, the text's rule; ``"random"``: a uniform pick, the baseline it is compared with), asks
  the ``oracle`` for its label and appends it.
- ``aggregator(gp, gate, threshold)``: incremental aggregation of a stream of labelled points (sec. 7.1.1). Each
  arriving point is appended (``gate="always"``) or appended only where the GP is still uncertain about it
  (``gate="uncertainty"``: normalised variance var_f(x) / k(x, x) > ``threshold``, default 0.4).
- ``corrector(gp, threshold, edit)``: interactive corrections (sec. 7.2 is empty in the text; the rule is the
  author's ILoSA code's): a correction of the prediction at x adds a point where the GP is uncertain and edits the
  held labels elsewhere.

Appending is the bordered Cholesky update of ``zoo.linalg`` (eqs. 7.1-7.2 in factor form), O(C^2) per point.
Hyperparameters are fixed: learn them first with ``inference.run("gp/regression", data, engine="ml2")`` and pass
the fitted kernel and noise (``zoo.regression.kernel_and_noise``) as a ``FixedGP``.

Why this lives in ``inference/`` and not ``zoo/``: a model module holds a model and its algebra (the bordered
factor is such algebra, in ``zoo.linalg``); this module is a procedure run on a model, which decides what data to
condition on, draws random picks, and in practice follows an ``ml2`` fit. Sampling and fitting live in
``inference/`` (docs/architecture.md#data-flow).

Shapes: C capacity (points the buffers hold), D input dimension, M candidates, T steps of a run.
"""

import warnings
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from zoo import kernels, linalg
from zoo.errors import DataError, OptionError, unknown_name
from zoo.gp import JITTER
from zoo.kernels import Kernel

__all__ = [
    "AcquisitionInfo",
    "AggregationInfo",
    "Algorithm",
    "CorrectionInfo",
    "EDITS",
    "FixedGP",
    "GATES",
    "JitterWarning",
    "RULES",
    "State",
    "UNCERTAINTY_THRESHOLD",
    "aggregator",
    "append",
    "corrector",
    "fixed_gp",
    "init",
    "kernel_edit",
    "learner",
    "max_variance",
    "min_norm_edit",
    "posterior",
    "random_pick",
    "run_acquisitions",
    "run_stream",
    "warn_if_jittered",
]

Array = Any
UNCERTAINTY_THRESHOLD = 0.4  # default gate on var_f / k(x, x) (docs/sources/franzese.md#active-learning)


class FixedGP(NamedTuple):
    """A GP prior with fixed hyperparameters: ``kernel`` and the noise variance sigma_n^2 (> 0). A pytree."""

    kernel: Kernel
    noise: Array


class State(NamedTuple):
    """The training set in fixed-capacity buffers and the factor of its K_y = K(X, X) + sigma_n^2 I.

    The first ``size`` entries of each buffer are the points, in the order they were appended; past them the
    buffers hold zeros and the factor the identity (zoo.linalg's layout).
    """

    X: Array  # (C, D) inputs
    y: Array  # (C,) targets
    chol: Array  # (C, C) lower factor: L_n in the leading (n, n) block, identity after
    whitened_y: Array  # (C,) L_n^{-1} y_n, zeros past n: the posterior mean is k_*^T L^-T (L^-1 y)
    size: Array  # () int: n, the number of points held
    jitter: Array  # (C,) absolute jitter added to each point's diagonal entry (0.0 unless its pivot was not > 0)
    dropped: Array  # () int: appends refused because the buffers were full (a jitted step cannot raise)


class AcquisitionInfo(NamedTuple):
    """What one active-learning step saw and did. mean and variance are the posterior on the candidates *before*
    the step's point was added (the prediction the rule acted on)."""

    index: Array  # () int: the candidate chosen
    x: Array  # (D,)
    y: Array  # () the oracle's label
    mean: Array  # (M,) posterior mean of f on the candidates
    variance: Array  # (M,) posterior variance of f on the candidates


class AggregationInfo(NamedTuple):
    """What one aggregation step saw and did, at the arriving point, before it was (or was not) added."""

    aggregated: Array  # () bool
    mean: Array  # () posterior mean of f at x
    variance: Array  # () posterior variance of f at x
    normalised_variance: Array  # () variance / k(x, x), in [0, 1]: the gate's quantity


class Algorithm(NamedTuple):
    """BlackJAX's shape: ``init(X0, y0, capacity) -> State`` (validates, not jit-able) and a pure, jit-able ``step``;
    ``input_dims`` is the D the step was built for (the candidates'), None when its inputs come as arguments."""

    init: Callable
    step: Callable
    input_dims: int | None = None


class JitterWarning(UserWarning):
    """A point's pivot d^2 was not positive, so jitter was added to its diagonal entry (recorded in State.jitter)."""


# -- validation (plain Python, before anything is traced) ----------------------------------------------------------


def fixed_gp(kernel: Kernel, noise: Any) -> FixedGP:
    """A ``FixedGP`` after checking that ``noise`` is a finite positive number and the kernel's hyperparameters are
    valid: a zero noise variance would make repeated inputs singular, which the append can only patch with jitter."""
    if not isinstance(kernel, Kernel):
        raise OptionError(f"kernel must be a zoo.kernels.Kernel, got {type(kernel).__name__}.")
    try:
        value = float(noise)
    except (TypeError, ValueError, jax.errors.ConcretizationTypeError):
        raise OptionError(f"noise must be one concrete number (the noise variance), got {noise!r}.") from None
    if not (np.isfinite(value) and value > 0.0):
        raise OptionError(f"noise variance must be positive and finite, got {value!r}.")
    return FixedGP(kernels.check_hyperparameters(kernel), jnp.asarray(value))


def _inputs(name: str, X: Any) -> Array:
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise DataError(f"{name} must be a 2-D array (points, D), got shape {X.shape}.")
    if not np.all(np.isfinite(X)):
        raise DataError(f"{name} contains NaN or inf.")
    return jnp.asarray(X)


def _check_dims(name: str, X: Array, D: int, reference: str = "the state's training inputs") -> None:
    if X.shape[1] != D:
        raise DataError(f"{name} have {X.shape[1]} input dimensions, but {reference} have {D}.")


def _check_capacity(size: int, more: int, capacity: int) -> None:
    if size + more > capacity:
        raise OptionError(
            f"capacity exceeded: {size} points held + {more} to add > capacity {capacity}; "
            f"init with capacity >= {size + more}."
        )


def init(gp: FixedGP, X0: Any, y0: Any, capacity: int) -> State:
    """A state holding (X0 (n0, D), y0 (n0,)) in buffers of ``capacity`` C >= n0 rows, factorised by n0 appends (the
    same bordered update as later points, so every point's jitter is recorded the same way)."""
    if isinstance(capacity, bool) or not isinstance(capacity, int | np.integer) or capacity < 1:
        raise OptionError(f"capacity must be a positive integer, got {capacity!r}.")
    X0 = _inputs("X0", X0)
    y0 = np.asarray(y0, dtype=float)
    if y0.shape != (X0.shape[0],) or not np.all(np.isfinite(y0)):
        raise DataError(f"y0 must be finite with shape ({X0.shape[0]},), got shape {y0.shape}.")
    kernels.validate_inputs(gp.kernel, X0.shape[1])
    _check_capacity(0, X0.shape[0], int(capacity))
    state = _init(gp, X0, jnp.asarray(y0), int(capacity))
    warn_if_jittered(state, 0)
    return state


@partial(jax.jit, static_argnames="capacity")
def _init(gp: FixedGP, X0: Array, y0: Array, capacity: int) -> State:
    D = X0.shape[1]
    empty = State(
        X=jnp.zeros((capacity, D)),
        y=jnp.zeros(capacity),
        chol=linalg.empty_factor(capacity),
        whitened_y=jnp.zeros(capacity),
        size=jnp.asarray(0),
        jitter=jnp.zeros(capacity),
        dropped=jnp.asarray(0),
    )

    def one(state, point):
        return append(gp, state, *point), None

    return jax.lax.scan(one, empty, (X0, y0))[0]


def warn_if_jittered(state: State, since: int = 0) -> None:
    """A ``JitterWarning`` naming the points from index ``since`` on whose pivot needed jitter (none: silent)."""
    added = np.asarray(state.jitter)[since : int(state.size)]
    where = np.flatnonzero(added > 0.0) + since
    if where.size:
        warnings.warn(
            JitterWarning(
                f"{where.size} appended point(s) had a non-positive pivot d^2 (rounding: an input repeated with a "
                f"noise variance near rounding level); jitter up to {added.max():.3g} was added to their diagonal "
                f"entries, at indices {where.tolist()[:10]} (State.jitter records every one)."
            ),
            stacklevel=3,
        )


# -- the pure core -----------------------------------------------------------------------------------------------


def append(gp: FixedGP, state: State, x: Array, y: Array) -> State:
    """``state`` with the point (x (D,), y ()) appended by the bordered Cholesky update; a no-op counted in
    ``dropped`` when the buffers are full."""
    capacity = state.chol.shape[0]
    full = state.size >= capacity
    slot = jnp.minimum(state.size, capacity - 1)  # a valid index to compute with; discarded below when full
    cross = gp.kernel(state.X, x[None, :])[:, 0]
    new_diag = gp.kernel.diag(x[None, :])[0] + gp.noise
    bordered = linalg.bordered_row(state.chol, slot, cross, new_diag, JITTER)
    grown = State(
        X=state.X.at[slot].set(x),
        y=state.y.at[slot].set(y),
        chol=linalg.append_row(state.chol, slot, bordered.row),
        whitened_y=linalg.append_whitened(state.whitened_y, slot, bordered.row, y),
        size=state.size + 1,
        jitter=state.jitter.at[slot].set(bordered.jitter),
        dropped=state.dropped,
    )
    refused = state._replace(dropped=state.dropped + 1)
    return jax.tree.map(lambda kept, new: jnp.where(full, kept, new), refused, grown)


def posterior(gp: FixedGP, state: State, X_new: Array) -> tuple[Array, Array]:
    """Posterior mean and variance of f at X_new (m, D) given the state's points: each (m,) (Franzese eqs. 4.13-4.14,
    diagonal). One triangular solve of the (C, C) factor against the masked cross-covariances."""
    cross = linalg.masked(gp.kernel(state.X, X_new), state.size)  # (C, m)
    V = jax.scipy.linalg.solve_triangular(state.chol, cross, lower=True)  # L^-1 K(X, X_new), zeros past n
    mean = V.T @ state.whitened_y
    variance = gp.kernel.diag(X_new) - jnp.sum(V**2, axis=0)
    return mean, jnp.maximum(variance, 0.0)  # rounding can leave -1e-17 where the variance is ~0


# -- acquisition rules, (key, mean (M,), variance (M,)) -> index, and the loops that use them ---------------------


def max_variance(key: Array, mean: Array, variance: Array) -> Array:
    """Uncertainty sampling (sec. 7.1): the candidate of largest posterior variance of f (first one on ties). The
    variance of y adds the constant sigma_n^2, so its argmax is the same."""
    del key, mean
    return jnp.argmax(variance)


def random_pick(key: Array, mean: Array, variance: Array) -> Array:
    """A uniform pick among the candidates (with replacement): the baseline active learning is compared with."""
    del mean
    return jax.random.randint(key, (), 0, variance.shape[0])


RULES: dict[str, Callable] = {"max_variance": max_variance, "random": random_pick}
GATES = ("always", "uncertainty")


def learner(gp: FixedGP, candidates: Any, oracle: Callable, rule: str = "max_variance") -> Algorithm:
    """Active learning over the candidate set (M, D): ``step(key, state) -> (state, AcquisitionInfo)``.

    ``oracle(key, x (D,)) -> y ()`` labels a chosen input (a pure JAX function: the simulated supervisor). ``rule``
    is a name in ``RULES``. ``init`` checks that the initial inputs have the candidates' dimension.
    """
    if rule not in RULES:
        raise unknown_name("acquisition rule", rule, RULES)
    candidates = _inputs("candidates", candidates)
    kernels.validate_inputs(gp.kernel, candidates.shape[1])
    choose = RULES[rule]

    def start(X0, y0, capacity):
        _check_dims("initial inputs X0", _inputs("X0", X0), candidates.shape[1], "the candidates")
        return init(gp, X0, y0, capacity)

    def step(key, state):
        key_rule, key_oracle = jax.random.split(key)
        mean, variance = posterior(gp, state, candidates)
        index = choose(key_rule, mean, variance)
        x = candidates[index]
        y = oracle(key_oracle, x)
        return append(gp, state, x, y), AcquisitionInfo(index, x, y, mean, variance)

    return Algorithm(start, step, candidates.shape[1])


def aggregator(gp: FixedGP, gate: str = "always", threshold: float = UNCERTAINTY_THRESHOLD) -> Algorithm:
    """Incremental aggregation of arriving points: ``step(state, x (D,), y ()) -> (state, AggregationInfo)``.

    ``gate="always"`` appends every point (sec. 7.1.1); ``"uncertainty"`` appends it only if var_f(x) / k(x, x) >
    ``threshold`` (the text: "not aggregate if the uncertainty on the prediction was little enough"; it gives no
    threshold, 0.4 is our default, docs/sources/franzese.md#active-learning).
    """
    if gate not in GATES:
        raise unknown_name("aggregation gate", gate, GATES)
    if not (isinstance(threshold, int | float | np.floating) and 0.0 <= float(threshold) <= 1.0):
        raise OptionError(f"threshold is a normalised variance in [0, 1], got {threshold!r}.")

    def step(state, x, y):
        mean, variance = (v[0] for v in posterior(gp, state, x[None, :]))
        normalised = variance / gp.kernel.diag(x[None, :])[0]
        take = jnp.asarray(True) if gate == "always" else normalised > threshold
        grown = append(gp, state, x, y)
        new = jax.tree.map(lambda a, b: jnp.where(take, a, b), grown, state)
        return new, AggregationInfo(take, mean, variance, normalised)

    return Algorithm(partial(init, gp), step)


class CorrectionInfo(NamedTuple):
    """What one correction step saw and did at x, before the update."""

    aggregated: Array  # () bool: True if the point was added, False if the labels were edited instead
    mean: Array  # () posterior mean of f at x
    normalised_variance: Array  # () var_f(x) / k(x, x)


def kernel_edit(gp: FixedGP, state: State, x: Array, correction: Array) -> Array:
    """Label change (C,) spreading the correction over the held points by their covariance with x:
    correction k(X, x) / (k(x, x) + sigma_n^2) (the author's later ILoSA variant, ``update_with_k``)."""
    cross = linalg.masked(gp.kernel(state.X, x[None, :])[:, 0], state.size)
    return correction * cross / (gp.kernel.diag(x[None, :])[0] + gp.noise)


def min_norm_edit(gp: FixedGP, state: State, x: Array, correction: Array) -> Array:
    """The smallest label change (C,) that moves the posterior mean at x by exactly ``correction``: with
    a = K_y^{-1} k(X, x), the mean is a^T y, so the change is correction a / (a^T a) (pinv of a^T; the ILoSA 2021
    variant, ``update_with_A``, which also clips the pseudo-inverse's entries to [-1, 1]; we do not)."""
    solve = partial(jax.scipy.linalg.solve_triangular, state.chol, lower=True)
    whitened_cross = solve(linalg.masked(gp.kernel(state.X, x[None, :])[:, 0], state.size))
    a = linalg.masked(jax.scipy.linalg.solve_triangular(state.chol.T, whitened_cross, lower=False), state.size)
    return correction * a / jnp.maximum(a @ a, jnp.finfo(a.dtype).tiny)


EDITS: dict[str, Callable] = {"kernel": kernel_edit, "min_norm": min_norm_edit}


def corrector(
    gp: FixedGP,
    threshold: float = UNCERTAINTY_THRESHOLD,
    edit: str = "kernel",
    label_bounds: tuple[float, float] | None = None,
) -> Algorithm:
    """Interactive corrections: ``step(state, x (D,), correction ()) -> (state, CorrectionInfo)``.

    Sec. 7.2 of the text is empty; this is the rule of the author's public ILoSA code (outside the text,
    docs/sources/franzese.md#active-learning): a supervisor corrects the prediction mu(x) by ``correction``. Where the
    GP is uncertain (var_f(x) / k(x, x) > ``threshold``) the point (x, mu(x) + correction) is appended; elsewhere no
    point is added and the held labels are edited (``edit``: ``"kernel"`` or ``"min_norm"``, see ``EDITS``). The
    factor does not change when labels do (K_y does not depend on y); the whitened targets are re-solved, O(C^2).
    ``label_bounds`` (low, high) clips labels to physical limits (ILoSA clips them); default: no clipping.
    """
    if edit not in EDITS:
        raise unknown_name("label edit", edit, EDITS)
    if not (isinstance(threshold, int | float | np.floating) and 0.0 <= float(threshold) <= 1.0):
        raise OptionError(f"threshold is a normalised variance in [0, 1], got {threshold!r}.")
    if label_bounds is not None and not (len(label_bounds) == 2 and float(label_bounds[0]) < float(label_bounds[1])):
        raise OptionError(f"label_bounds must be (low, high) with low < high, got {label_bounds!r}.")
    change_labels = EDITS[edit]

    def clip(labels):
        return labels if label_bounds is None else jnp.clip(labels, *label_bounds)

    def step(state, x, correction):
        mean, variance = (v[0] for v in posterior(gp, state, x[None, :]))
        normalised = variance / gp.kernel.diag(x[None, :])[0]
        uncertain = normalised > threshold
        grown = append(gp, state, x, clip(mean + correction))
        y = linalg.masked(clip(state.y + change_labels(gp, state, x, correction)), state.size)
        whitened = jax.scipy.linalg.solve_triangular(state.chol, y, lower=True)
        edited = state._replace(y=y, whitened_y=whitened)
        new = jax.tree.map(lambda a, b: jnp.where(uncertain, a, b), grown, edited)
        return new, CorrectionInfo(uncertain, mean, normalised)

    return Algorithm(partial(init, gp), step)


# -- runs: one compiled scan per step function and shape ---------------------------------------------------------


def run_acquisitions(algorithm: Algorithm, key: Array, state: State, num_steps: int) -> tuple[State, AcquisitionInfo]:
    """``num_steps`` T steps of a ``learner`` in one ``lax.scan``: the final state and the stacked infos (T, ...).
    Raises before compiling if the state cannot take T more points."""
    if isinstance(num_steps, bool) or not isinstance(num_steps, int | np.integer) or num_steps < 0:
        raise OptionError(f"num_steps must be a non-negative integer, got {num_steps!r}.")
    if algorithm.input_dims is not None:
        _check_dims("the candidates", jnp.zeros((0, algorithm.input_dims)), state.X.shape[1])
    _check_capacity(int(state.size), int(num_steps), state.chol.shape[0])
    final, infos = _scan_acquisitions(algorithm.step, key, state, int(num_steps))
    warn_if_jittered(final, int(state.size))
    return final, infos


@partial(jax.jit, static_argnames=("step", "num_steps"))
def _scan_acquisitions(step, key, state, num_steps):
    return jax.lax.scan(lambda s, k: step(k, s), state, jax.random.split(key, num_steps))


def run_stream(algorithm: Algorithm, state: State, X_stream: Any, y_stream: Any) -> tuple[State, AggregationInfo]:
    """An ``aggregator`` over a stream of T points (X_stream (T, D), y_stream (T,)) in one ``lax.scan``. Raises
    before compiling if the stream's dimension differs from the state's, or if the state could overflow (every point
    counted, since the gate decides only inside the scan)."""
    X_stream = _inputs("X_stream", X_stream)
    _check_dims("stream inputs X_stream", X_stream, state.X.shape[1])
    y_stream = np.asarray(y_stream, dtype=float)
    if y_stream.shape != (X_stream.shape[0],) or not np.all(np.isfinite(y_stream)):
        raise DataError(f"y_stream must be finite with shape ({X_stream.shape[0]},), got shape {y_stream.shape}.")
    _check_capacity(int(state.size), X_stream.shape[0], state.chol.shape[0])
    final, infos = _scan_stream(algorithm.step, state, X_stream, jnp.asarray(y_stream))
    warn_if_jittered(final, int(state.size))
    return final, infos


@partial(jax.jit, static_argnames="step")
def _scan_stream(step, state, X_stream, y_stream):
    return jax.lax.scan(lambda s, point: step(s, *point), state, (X_stream, y_stream))
