"""Wet-Chicken (Kaiser 2021, ch. 5): the simulator against hand-computed steps and its closed-form transition
statistics, the pathwise policy gradient against finite differences, policy search on a known-dynamics toy, and the
two-output DAGP's bad input, and the conservative reward r_cons (eq. 5.14)."""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import zoo
from inference.applications import policy_search as ps
from zoo import dagp
from zoo.dagp import reward_shaping as rs
from zoo.dagp import transition
from zoo.data import wetchicken as wc
from zoo.errors import DataError, OptionError

SCALE = jnp.array([5.0, 5.0])


@pytest.mark.parametrize(
    "x_hat, y_hat, expected",
    [
        (5.2, 3.0, (0.0, 0.0)),  # over the waterfall: reset to (0, 0) whatever y^ is
        (-0.3, 6.0, (0.0, 5.0)),  # x^ < 0 clipped to 0, y^ > w clipped to w
        (2.0, -0.5, (2.0, 0.0)),  # y^ < 0 clipped to 0
        (2.0, 2.5, (2.0, 2.5)),  # inside: unchanged
        (5.0, 5.0, (5.0, 5.0)),  # on the boundaries: not clipped (eq. 5.1 uses strict inequalities)
    ],
)
def test_clip_and_reset_by_hand(x_hat, y_hat, expected):
    np.testing.assert_array_equal(wc.clip_and_reset(jnp.array(x_hat), jnp.array(y_hat)), expected)


def test_steps_by_hand():
    """Candidates whose whole uniform range lies on one side of a boundary (eq. 5.2 by hand), for 200 draws."""
    keys = jax.random.split(jax.random.PRNGKey(0), 200)

    @jax.jit
    def sample(s, a):
        return jax.vmap(lambda k: wc.step(s, a, k))(keys)

    def draws(s, a):
        return sample(jnp.array(s), jnp.array(a))

    # s = (5, 5), a = 0: v = 3, b = 0.5, x^ in 5 - 0.5 + 3 +- 0.5 = [7, 8] > l: always the waterfall, (0, 0)
    np.testing.assert_array_equal(draws([5.0, 5.0], [0.0, 0.0]), 0.0)
    # s = (1, 5), a = (-1, 1): x^ in 1 - 2 + 3 +- 0.5 = [1.5, 2.5]; y^ = 6 clipped to w = 5
    out = draws([1.0, 5.0], [-1.0, 1.0])
    assert np.all((out[:, 0] >= 1.5) & (out[:, 0] <= 2.5)) and np.all(out[:, 1] == 5.0)
    # s = (0, 0), a = (-1, -1): x^ in -2 +- 3.5 = [-5.5, 1.5]: x' = 0 when x^ < 0, y' = 0
    out = draws([0.0, 0.0], [-1.0, -1.0])
    assert np.all(out[:, 1] == 0.0) and np.all((out[:, 0] >= 0.0) & (out[:, 0] <= 1.5))
    # actions are clipped to [-1, 1]^2: a = (3, -7) moves as a = (1, -1)
    key = jax.random.PRNGKey(3)
    s = jnp.array([2.0, 2.0])
    np.testing.assert_array_equal(wc.step(s, jnp.array([3.0, -7.0]), key), wc.step(s, jnp.array([1.0, -1.0]), key))


def test_one_step_distribution_matches_closed_forms():
    """Fall frequency and mean x' of 20,000 draws per (s, a) on a grid against the closed forms of eqs. 5.1-5.2.
    Tolerance 4.5 Monte Carlo standard errors (binomial sd sqrt(p (1 - p) / n); sample sd / sqrt(n) for the
    mean): with 2 x 27 comparisons a false failure has probability < 4e-4 (seeded, so the outcome is fixed)."""
    n = 20_000
    grid = jnp.array([[x, y, ax, 0.3] for x in (0.5, 3.0, 4.6) for y in (0.0, 2.5, 5.0) for ax in (-1.0, 0.2, 1.0)])
    states, actions = grid[:, :2], grid[:, 2:]
    keys = jax.random.split(jax.random.PRNGKey(1), n)
    draws = jax.jit(jax.vmap(lambda k: wc.step(states, actions, k)))(keys)  # (n, G, 2)
    centre, half, y_hat = wc.candidate_moments(states, actions)
    # a fall is the only way to reach y' = 0 from y^ > 0; and x' = 0 with y' = 0
    fell = (draws[..., 0] == 0.0) & (draws[..., 1] == 0.0) & (y_hat > 0)
    p = wc.fall_probability(states, actions)
    freq = fell.mean(0)
    se_p = jnp.sqrt(jnp.maximum(p * (1 - p), 1.0 / n) / n)
    assert np.all(np.abs(freq - p) <= 4.5 * se_p), (freq, p)
    mean = draws[..., 0].mean(0)
    se_m = jnp.maximum(draws[..., 0].std(0), 1e-3) / jnp.sqrt(n)
    assert np.all(np.abs(mean - wc.mean_next_x(states, actions)) <= 4.5 * se_m)
    assert np.any(p > 0.2) and np.any(p == 0.0)  # the grid covers both regimes


def toy_step(s, a, key):
    """Known smooth dynamics: s' = s + 0.5 a + 0.05 eps."""
    return s + 0.5 * a + 0.05 * jax.random.normal(key, s.shape)


def toy_reward(s, a=None):
    return -jnp.sum((s - jnp.array([3.0, 2.0])) ** 2, -1)


def random_fit(key, K: int = 2, P: int = 2, D: int = 4, M: int = 6) -> dagp.DagpFit:
    """A two-output heteroscedastic DAGP with random params of the shapes ``dagp_program`` trains."""
    config = dagp.dagp_config(K, outputs=P, heteroscedastic=True, noise_floor=1e-4)
    ks = iter(jax.random.split(key, 12))

    def q(count):
        return jax.random.normal(next(ks), (count, M)), 0.3 * jnp.broadcast_to(jnp.eye(M), (count, M, M))

    params = {}
    for prefix, count, kernel in (("q", K * P, ""), ("alpha_q", K, "alpha_"), ("noise_q", K * P, "noise_")):
        params[f"{prefix}_mean"], params[f"{prefix}_scale_tril"] = q(count)
        inducing = "inducing_inputs" if prefix == "q" else f"{prefix.removesuffix('_q')}_inducing_inputs"
        params[inducing] = jax.random.uniform(next(ks), (count, M, D)) * 3.0
        params[f"{kernel}variance_map"] = jnp.full(count, 0.8)
        params[f"{kernel}lengthscale_map"] = jnp.full((count, D), 1.5)
    params["noise_map"] = jnp.array([0.3, 0.01, 0.02, 0.05])
    return dagp.DagpFit(params, config)


@pytest.mark.parametrize("model", ["toy", "dagp"])
def test_pathwise_gradient_matches_finite_differences(model):
    """d/d theta of the sampled return (eq. 5.12) at a fixed key, by autodiff (eq. 5.13) and by central differences
    along random directions (float64; step 1e-5 gives an error ~1e-9 relative for these smooth roll-outs). The DAGP
    roll-out uses the Concrete relaxation (smooth); straight-through's backward pass is not a derivative."""
    if model == "toy":
        step = toy_step
    else:
        fit = random_fit(jax.random.PRNGKey(2))

        def step(s, a, key):
            return transition.sample_next(fit, jnp.concatenate([s, a], -1), key, relaxation="concrete")

    settings = ps.PolicySettings(horizon=3, particles=4)
    params = ps.init_policy(jax.random.PRNGKey(0), (2, 5, 5, 2))
    s0 = jax.random.uniform(jax.random.PRNGKey(1), (4, 2)) * 3.0
    reward = toy_reward if model == "toy" else wc.reward
    value = jax.jit(partial(ps.sampled_return, step=step, reward=reward, s0=s0, key=jax.random.PRNGKey(4),
                            settings=settings, state_scale=SCALE))  # fmt: skip
    grad = jax.jit(jax.grad(value))(params)
    flat, unravel = jax.flatten_util.ravel_pytree(params)
    flat_grad, _ = jax.flatten_util.ravel_pytree(grad)
    for i, direction in enumerate(jax.random.normal(jax.random.PRNGKey(5), (2, flat.size))):
        h = 1e-5
        fd = (value(unravel(flat + h * direction)) - value(unravel(flat - h * direction))) / (2 * h)
        np.testing.assert_allclose(fd, flat_grad @ direction, rtol=1e-5, atol=1e-8, err_msg=f"direction {i}")


def test_straight_through_draws_are_hard():
    """Straight-through next states equal the hard draws (same key): one mode's sample per point, never a blend."""
    fit = random_fit(jax.random.PRNGKey(2))
    X = jax.random.uniform(jax.random.PRNGKey(3), (50, 4)) * 3.0
    draw = jax.jit(partial(transition.sample_next, fit, X, jax.random.PRNGKey(6)), static_argnames="relaxation")
    hard, straight = draw(relaxation="hard"), draw(relaxation="straight-through")
    np.testing.assert_allclose(straight, hard, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="relaxation"):
        transition.sample_next(fit, X, jax.random.PRNGKey(6), relaxation="soft")


def test_policy_search_improves_a_known_toy():
    """On known smooth dynamics (``toy_step``), 300 Adam iterations of the pathwise policy search raise the
    expected return, estimated with 4000 fresh roll-outs (common random numbers before and after), by far more than
    its Monte Carlo error (asserted: > 10 standard errors of the difference), and the greedy target is reached."""
    pool = jax.random.uniform(jax.random.PRNGKey(0), (200, 2)) * SCALE
    settings = ps.PolicySettings(horizon=5, particles=20, learning_rate=1e-2, iterations=300)
    search = partial(ps.policy_search, step=toy_step, reward=toy_reward, settings=settings, sizes=(2, 20, 20, 2),
                     state_scale=SCALE)  # fmt: skip
    params, returns = jax.jit(search)(jax.random.PRNGKey(1), initial_pool=pool)
    before = ps.init_policy(jax.random.split(jax.random.PRNGKey(1))[0], (2, 20, 20, 2))
    s0 = jax.random.uniform(jax.random.PRNGKey(9), (4000, 2)) * SCALE

    @jax.jit
    def per_rollout(p):
        one = partial(ps.sampled_return, step=toy_step, reward=toy_reward, settings=settings._replace(particles=1),
                      state_scale=SCALE)  # fmt: skip
        keys = jax.random.split(jax.random.PRNGKey(10), s0.shape[0])
        return jax.vmap(lambda s, k: one(p, s0=s[None], key=k))(s0, keys)

    gain = per_rollout(params) - per_rollout(before)
    assert gain.mean() > 10 * gain.std() / np.sqrt(gain.size), (gain.mean(), gain.std())
    assert returns[-30:].mean() > returns[:30].mean()


def test_two_output_dagp_bad_input():
    spec = zoo.get("dagp", outputs=2, heteroscedastic=True)
    assert spec.data_shapes["y"] == ("N", "P")
    data = dagp.simulate_wet_chicken(jax.random.PRNGKey(0), 30, 5)
    with pytest.raises(DataError, match="y must be"):
        dagp.dagp_program(data.observed["X"], data.observed["Z"], data.observed["y"][:, 0], config=dagp.config_of(spec))
    with pytest.raises(OptionError, match="deep modes"):
        zoo.get("dagp", outputs=2, depths=(2, 1))
    with pytest.raises(OptionError, match="heteroscedastic"):
        zoo.get("dagp", heteroscedastic=True, depths=(2, 1))


def test_conservative_reward_by_hand():
    """r_cons (eq. 5.14) by hand, and the drop mode is the one whose flow is nearest the reset state."""
    np.testing.assert_allclose(rs.conservative(jnp.array([3.0, 0.0]), jnp.array([0.2, 1.0])), [1.4, -5.0])
    flows = jnp.array([[[2.0, 1.0], [0.1, -0.1], [0.3, 0.0]]])  # (n = 1, K = 3, P = 2): mode 1 is nearest (0, 0)
    assert rs.drop_mode(transition.Components(flows, *([None] * 7))) == 1


@pytest.mark.slow
def test_conservative_reward_in_a_fit():
    """r_cons in a random DAGP fit: its p(drop | s, a) against a 20,000-draw estimate of the predictive assignment
    probability (eq. 3.8) within 5 Monte Carlo standard errors of the 64 common draws; its derivative in the action
    against central differences (the policy search's pathwise gradient goes through it)."""
    fit = random_fit(jax.random.PRNGKey(2))
    s = jax.random.uniform(jax.random.PRNGKey(3), (40, 2)) * 3.0
    a = jax.random.uniform(jax.random.PRNGKey(4), (40, 2), minval=-1.0, maxval=1.0)
    direction = jax.random.normal(jax.random.PRNGKey(6), a.shape)
    reward = rs.conservative_reward(fit, 0)

    @jax.jit
    def measured(s, a):
        mean, var = transition.assignment_marginals(fit, jnp.concatenate([s, a], -1))
        draws = mean + jnp.sqrt(var) * jax.random.normal(jax.random.PRNGKey(5), (20_000, 40, 2))
        probs = jax.nn.softmax(draws, -1)[..., 0]
        total = lambda a_: reward(s, a_).sum()  # noqa: E731
        fd = (total(a + 1e-5 * direction) - total(a - 1e-5 * direction)) / 2e-5
        derivative = (jax.grad(total)(a) * direction).sum()
        return probs.mean(0), probs.std(0), reward(s, a), rs.drop_probability(fit, s, a, 0), fd, derivative

    reference, sd, r, p_drop, fd, derivative = measured(s, a)
    p = (s[:, 0] - r) / (s[:, 0] + 5.0)  # eq. 5.14 solved for p
    assert np.all(np.abs(p - reference) < 5 * sd * (1 / np.sqrt(64) + 1 / np.sqrt(20_000)))
    np.testing.assert_allclose(p, p_drop, rtol=1e-10)
    np.testing.assert_allclose(fd, derivative, rtol=1e-6)
