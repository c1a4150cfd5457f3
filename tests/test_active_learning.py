"""Active learning with fixed hyperparameters (inference/applications/active_learning.py, zoo/linalg.py;
docs/sources/franzese.md#active-learning): the bordered Cholesky factor against a fresh factorisation, the
max-variance rule against zoo.gp.predict, the uncertainty gate, one compilation for every size, and bad input."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from inference.applications import active_learning as al
from zoo import gp, linalg
from zoo.errors import DataError, OptionError
from zoo.kernels import SquaredExponential

NOISE = 0.09
KERNEL_1D = SquaredExponential(variance=1.0, lengthscale=jnp.array([2.0]))
KERNEL_2D = SquaredExponential(variance=1.5, lengthscale=jnp.array([0.8, 1.6]))


def sine_oracle(key, x):
    """A noisy sine of the first input: the simulated supervisor."""
    return jnp.sin(2.0 * jnp.pi * 0.1 * x[0]) + jnp.sqrt(NOISE) * jax.random.normal(key)


def se_gram(kernel, X1, X2):
    """The SE Gram matrix in NumPy (independent of zoo.kernels, and no JAX compilation per size)."""
    scaled = (np.asarray(X1)[:, None, :] - np.asarray(X2)[None, :, :]) / np.asarray(kernel.lengthscale)
    return float(kernel.variance) * np.exp(-0.5 * np.sum(scaled**2, -1))


def fresh_factor(kernel, X, noise):
    return np.linalg.cholesky(se_gram(kernel, X, X) + noise * np.eye(X.shape[0]))


def assert_factor_matches(L_updated, L_fresh):
    """rtol 1e-10 on every entry, with an absolute floor of 1e-10 x the largest entry for the near-zero ones (SE
    cross-covariances of distant points underflow to ~1e-300, where a relative tolerance means nothing)."""
    np.testing.assert_allclose(L_updated, L_fresh, rtol=1e-10, atol=1e-10 * np.abs(L_fresh).max())


def test_bordered_update_equals_fresh_factorisation_after_each_of_100_acquisitions():
    candidates = jnp.linspace(0.0, 40.0, 300)[:, None]
    model = al.fixed_gp(KERNEL_1D, NOISE)
    learner = al.learner(model, candidates, sine_oracle, "max_variance")
    state = learner.init(jnp.array([[3.0], [17.0]]), jnp.array([0.1, -0.2]), capacity=110)
    step, traces = _trace_counted(learner.step)
    step = jax.jit(step)
    for key in jax.random.split(jax.random.PRNGKey(0), 100):
        state, _ = step(key, state)
        n = int(state.size)
        # NumPy slices: a JAX slice per size would compile once per size
        X, y, chol, whitened = (np.asarray(a)[:n] for a in (state.X, state.y, state.chol, state.whitened_y))
        fresh = fresh_factor(KERNEL_1D, X, NOISE)
        assert_factor_matches(chol[:, :n], fresh)
        np.testing.assert_allclose(whitened, np.linalg.solve(fresh, y), rtol=1e-9, atol=1e-9)  # L^-1 y follows
    assert int(state.size) == 102 and float(state.jitter.max()) == 0.0
    assert len(traces) == 1, "a step must be traced (and compiled) once for every size (fixed-capacity buffers)"
    # The check can fail: bordering with the diagonal the printed eq. 7.2 uses (no noise on the new entry) differs.
    last = 101
    before_last = state.chol.at[last].set(jnp.eye(state.chol.shape[0])[last])
    x_new = state.X[last : last + 1]
    without_noise = linalg.bordered_row(before_last, last, KERNEL_1D(state.X, x_new)[:, 0], KERNEL_1D.diag(x_new)[0])
    with_noise = linalg.bordered_row(
        before_last, last, KERNEL_1D(state.X, x_new)[:, 0], KERNEL_1D.diag(x_new)[0] + NOISE
    )
    fresh_row = fresh_factor(KERNEL_1D, state.X[: last + 1], NOISE)[last]
    assert_factor_matches(np.asarray(with_noise.row[: last + 1]), fresh_row)
    with pytest.raises(AssertionError):
        assert_factor_matches(np.asarray(without_noise.row[: last + 1]), fresh_row)


def test_max_variance_picks_the_argmax_of_the_exact_posterior_variance():
    """Picks of the rule, in 2-D, against gp.predict's variances on the same points (at checkpoints: each training-set
    size is one compilation of gp.predict); the same check on the random rule's picks fails (so it can)."""
    candidates = jax.random.uniform(jax.random.PRNGKey(1), (200, 2), minval=0.0, maxval=5.0)
    model = al.fixed_gp(KERNEL_2D, NOISE)
    exact_predict = jax.jit(gp.predict, static_argnames="full_cov")
    checkpoints = (0, 1, 4, 9, 19, 29)  # step t acts on 1 + t points

    def picks_are_argmax(rule):
        learner = al.learner(model, candidates, sine_oracle, rule)
        state = learner.init(candidates[:1], jnp.array([0.3]), capacity=40)
        final, info = al.run_acquisitions(learner, jax.random.PRNGKey(2), state, 30)
        picked_max = []
        for t in checkpoints:
            n = 1 + t
            exact = np.asarray(
                exact_predict(KERNEL_2D, final.X[:n], final.y[:n], NOISE, candidates, full_cov=False).cov
            )
            np.testing.assert_allclose(info.variance[t], exact, rtol=1e-9, atol=1e-12)  # the rule saw these
            picked_max.append(exact[int(info.index[t])] >= exact.max() * (1.0 - 1e-10))
        return all(picked_max)

    assert picks_are_argmax("max_variance")
    assert not picks_are_argmax("random")


def test_uncertainty_gate_adds_only_uncertain_points_and_keeps_the_factor_exact():
    model = al.fixed_gp(KERNEL_1D, NOISE)
    key_x, key_y = jax.random.split(jax.random.PRNGKey(3))
    X_stream = jax.random.uniform(key_x, (80, 1), minval=0.0, maxval=20.0)
    y_stream = jnp.sin(X_stream[:, 0]) + 0.3 * jax.random.normal(key_y, (80,))
    gated = al.aggregator(model, gate="uncertainty", threshold=0.4)
    state, info = al.run_stream(gated, gated.init(jnp.zeros((0, 1)), jnp.zeros(0), 80), X_stream, y_stream)
    kept = np.asarray(info.aggregated)
    assert 0 < kept.sum() < 40, "the gate should keep some points and drop most of a dense stream"
    assert int(state.size) == kept.sum()
    np.testing.assert_array_equal(state.X[: kept.sum()], X_stream[kept])
    # every decision against the exact normalised variance at arrival, given the points kept before it (NumPy)
    X_numpy = np.asarray(X_stream)  # slicing the jax array would compile a program per slice length
    for t in range(80):
        before = X_numpy[:t][kept[:t]]
        x = X_numpy[t : t + 1]
        if before.shape[0] == 0:
            variance = float(KERNEL_1D.variance)
        else:
            V = np.linalg.solve(fresh_factor(KERNEL_1D, before, NOISE), se_gram(KERNEL_1D, before, x))
            variance = float(KERNEL_1D.variance) - float(np.sum(V**2))
        assert kept[t] == (variance / float(KERNEL_1D.variance) > 0.4)
    n = int(state.size)
    assert_factor_matches(np.asarray(state.chol[:n, :n]), fresh_factor(KERNEL_1D, state.X[:n], NOISE))
    everything = al.aggregator(model, gate="always")
    state_all, info_all = al.run_stream(
        everything, everything.init(jnp.zeros((0, 1)), jnp.zeros(0), 80), X_stream, y_stream
    )
    assert bool(info_all.aggregated.all()) and int(state_all.size) == 80


def _trace_counted(fn):
    """fn and a list that grows by one each time JAX traces it. Counting traces, not entries of a jitted function's
    executable cache: that cache lives in a global LRU of 8192 functions, which a long test process may overflow
    (the likely reason such a count read 0 in one CI rehearsal)."""
    traces = []

    def counted(*args):
        traces.append(None)
        return fn(*args)

    return counted, traces


def test_one_compilation_for_every_initial_size():
    candidates = jnp.linspace(0.0, 10.0, 50)[:, None]
    learner = al.learner(al.fixed_gp(KERNEL_1D, NOISE), candidates, sine_oracle)
    step, traces = _trace_counted(learner.step)
    learner = learner._replace(step=step)  # a new static argument of the scan: traced afresh, then reused
    for n0 in (1, 4, 9):
        state = learner.init(candidates[:n0], jnp.zeros(n0), capacity=30)
        al.run_acquisitions(learner, jax.random.PRNGKey(n0), state, 5)
        if n0 == 1:
            first = len(traces)
    assert first >= 1 and len(traces) == first  # other initial sizes reuse the program: no new trace


def test_a_non_positive_pivot_gets_recorded_jitter_and_a_warning():
    # K = [[1, 2], [2, 1]] is not positive definite: the pivot 1 - 2^2 = -3 is raised to jitter x new diagonal.
    bordered = linalg.bordered_row(jnp.eye(2), 1, jnp.array([2.0, 0.0]), jnp.asarray(1.0))
    assert float(bordered.pivot_sq) == pytest.approx(-3.0)
    assert float(bordered.jitter) == pytest.approx(3.0 + 1e-6)
    assert float(bordered.row[1]) == pytest.approx(1e-3)
    clean = linalg.bordered_row(jnp.eye(2), 1, jnp.array([0.5, 0.0]), jnp.asarray(1.0))
    assert float(clean.jitter) == 0.0
    state = al.init(al.fixed_gp(KERNEL_1D, NOISE), jnp.array([[0.0], [1.0]]), jnp.zeros(2), 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        al.warn_if_jittered(state)  # no jitter: silent
    with pytest.warns(al.JitterWarning, match="non-positive pivot"):
        al.warn_if_jittered(state._replace(jitter=state.jitter.at[1].set(1e-7)))


def test_bad_input_is_a_clear_error_before_compilation(monkeypatch):
    candidates_2d = jnp.zeros((10, 2))
    model = al.fixed_gp(KERNEL_1D, NOISE)
    state_1d = al.init(model, jnp.zeros((2, 1)), jnp.zeros(2), 10)  # valid, made before the compiled code is barred

    def no_compiling(*args, **kwargs):
        raise AssertionError("reached compiled code before the inputs were checked")

    for program in ("_init", "_scan_acquisitions", "_scan_stream"):
        monkeypatch.setattr(al, program, no_compiling)
    for noise in (0.0, -0.1, float("nan"), float("inf")):
        with pytest.raises(OptionError, match="noise variance must be positive"):
            al.fixed_gp(KERNEL_1D, noise)
    learner_2d = al.learner(al.fixed_gp(KERNEL_2D, NOISE), candidates_2d, sine_oracle)
    with pytest.raises(DataError, match="X0 have 1 input dimensions, but the candidates have 2"):
        learner_2d.init(jnp.zeros((2, 1)), jnp.zeros(2), 10)
    with pytest.raises(DataError, match="2-D array"):
        al.learner(model, jnp.zeros(10), sine_oracle)
    with pytest.raises(DataError, match="input dimensions"):
        al.run_acquisitions(learner_2d, jax.random.PRNGKey(0), state_1d, 2)
    with pytest.raises(OptionError, match="capacity exceeded"):
        al.init(model, jnp.zeros((11, 1)), jnp.zeros(11), 10)
    learner = al.learner(model, jnp.zeros((10, 1)), sine_oracle)
    with pytest.raises(OptionError, match="capacity exceeded: 2 points held \\+ 9 to add > capacity 10"):
        al.run_acquisitions(learner, jax.random.PRNGKey(0), state_1d, 9)
    with pytest.raises(OptionError, match="capacity exceeded"):
        al.run_stream(al.aggregator(model), state_1d, jnp.zeros((9, 1)), jnp.zeros(9))
    with pytest.raises(DataError, match="input dimensions"):
        al.run_stream(al.aggregator(model), state_1d, jnp.zeros((3, 2)), jnp.zeros(3))
    with pytest.raises(KeyError, match="unknown acquisition rule 'max_varaince'. Did you mean 'max_variance'"):
        al.learner(model, jnp.zeros((10, 1)), sine_oracle, "max_varaince")
    with pytest.raises(OptionError, match="threshold"):
        al.aggregator(model, "uncertainty", threshold=1.5)
    with pytest.raises(KeyError, match="unknown label edit 'minnorm'. Did you mean 'min_norm'"):
        al.corrector(model, edit="minnorm")
    with pytest.raises(OptionError, match="label_bounds"):
        al.corrector(model, label_bounds=(1.0, -1.0))


def test_label_edits_move_the_mean_as_defined_and_leave_the_factor_alone():
    """min_norm moves mu(x) by exactly the correction; kernel spreads it by k(X, x) / (k(x, x) + noise); where the GP
    is uncertain a point (x, mu(x) + correction) is appended instead, and the factor stays exact."""
    model = al.fixed_gp(KERNEL_1D, NOISE)
    X0 = jnp.linspace(0.0, 10.0, 15)[:, None]
    state = al.init(model, X0, jnp.sin(X0[:, 0]), capacity=20)
    x_known, x_unknown, correction = jnp.array([5.2]), jnp.array([12.5]), 0.37
    mean_before = float(al.posterior(model, state, x_known[None])[0][0])
    for edit in ("min_norm", "kernel"):
        new, info = jax.jit(al.corrector(model, 0.4, edit).step)(state, x_known, correction)
        assert not bool(info.aggregated) and int(new.size) == 15
        np.testing.assert_array_equal(new.chol, state.chol)  # K_y does not depend on the labels
        fresh = fresh_factor(KERNEL_1D, np.asarray(X0), NOISE)
        np.testing.assert_allclose(new.whitened_y[:15], np.linalg.solve(fresh, new.y[:15]), rtol=1e-9, atol=1e-12)
        shift = float(al.posterior(model, new, x_known[None])[0][0]) - mean_before
        if edit == "min_norm":
            assert shift == pytest.approx(correction, rel=1e-9)
        else:
            k_x = se_gram(KERNEL_1D, X0, x_known[None])[:, 0]
            expected = correction * k_x / (float(KERNEL_1D.variance) + NOISE)
            np.testing.assert_allclose(new.y[:15] - state.y[:15], expected, rtol=1e-12, atol=1e-15)
            assert 0.0 < shift < correction  # spread, not exact
    new, info = al.corrector(model, 0.4)[1](state, x_unknown, correction)
    assert bool(info.aggregated) and int(new.size) == 16
    assert abs(float(info.mean)) > 0.05  # near the data: the appended label must carry the mean
    assert float(new.y[15]) == pytest.approx(float(info.mean) + correction)
    np.testing.assert_array_equal(new.y[:15], state.y[:15])
    assert_factor_matches(np.asarray(new.chol[:16, :16]), fresh_factor(KERNEL_1D, np.asarray(new.X[:16]), NOISE))


def test_corrections_converge_with_few_points():
    """A supervisor that corrects the prediction towards sin(x) at 300 random inputs: the field converges while the
    data set stays small (points are added only where the GP is uncertain)."""
    model = al.fixed_gp(SquaredExponential(variance=1.0, lengthscale=jnp.array([1.0])), 0.01)
    grid = jnp.linspace(0.0, 10.0, 200)[:, None]
    corrector = al.corrector(model, 0.4, "kernel")
    state = corrector.init(jnp.zeros((0, 1)), jnp.zeros(0), 300)

    def rmse(s):
        return float(jnp.sqrt(jnp.mean((al.posterior(model, s, grid)[0] - jnp.sin(grid[:, 0])) ** 2)))

    def supervised(s, x):  # the supervisor's correction depends on the current prediction at x
        return corrector.step(s, x, jnp.sin(x[0]) - al.posterior(model, s, x[None])[0][0])

    inputs = jax.random.uniform(jax.random.PRNGKey(4), (300, 1), minval=0.0, maxval=10.0)
    final, info = jax.jit(lambda s, xs: jax.lax.scan(supervised, s, xs))(state, inputs)
    assert rmse(final) < 0.2 * rmse(state)
    assert int(final.size) == int(info.aggregated.sum()) <= 20
