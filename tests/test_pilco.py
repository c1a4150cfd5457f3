"""PILCO (inference/applications/pilco, inference/applications/pilco/learning.py): exact moments against 10^5-sample
Monte Carlo, gradients against finite
differences, the plant and bad input.

Monte Carlo tolerances: every checked moment is the mean of a per-draw quantity h (the value, a centred product for a
(co)variance, 1 - exp(...) for a cost); its standard error is std(h) / sqrt(n). We require |exact - MC| < 5 SE per
entry (two-sided 5 sigma: false alarms ~6e-7 per entry). Centring at the sample mean instead of the true mean
changes a covariance estimate by O(1/n), far below 5 SE at n = 10^5.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree
from monte_carlo import assert_mc

import zoo  # noqa: F401  (float64)
from inference.applications import pilco
from inference.applications.pilco import cost as C
from inference.applications.pilco import plant, policies
from inference.applications.pilco import trajectory as tr
from zoo import moments
from zoo.errors import DataError, OptionError

N_MC = 100_000
U_MAX = 10.0


def mc_checks(exact_mean, exact_cov, exact_io, x, v, name):
    """x (n, D) Gaussian draws, v (n, K) = g(x): mean, covariance, Cov[x, v] against Monte Carlo."""
    dv, dx = v - v.mean(0), x - x.mean(0)
    assert_mc(exact_mean, v, f"{name} mean")
    assert_mc(exact_cov, dv[:, :, None] * dv[:, None, :], f"{name} cov")
    assert_mc(exact_io, dx[:, :, None] * dv[:, None, :], f"{name} input-output cov")


@pytest.fixture(scope="module")
def gaussian_state():
    key = jax.random.PRNGKey(0)
    m = jnp.array([0.1, -0.2, 0.3, 2.9])
    F = 0.3 * jax.random.normal(key, (4, 4))
    S = F @ F.T + 0.02 * jnp.eye(4)
    x = m + jax.random.normal(jax.random.PRNGKey(1), (N_MC, 4)) @ jnp.linalg.cholesky(S).T
    return m, S, x


def test_rbf_network_moments_exact(gaussian_state):
    m, S, x = gaussian_state
    pol = policies.init_rbf(jax.random.PRNGKey(2), m, S, num_controls=2, num_basis=50)
    pol = pol._replace(weights=10.0 * pol.weights, log_lengthscale=pol.log_lengthscale - 0.5)
    z = jax.jit(jax.vmap(policies.pre_squash, in_axes=(None, 0)))(pol, x)
    mm = jax.jit(policies.pre_squash_moments)(pol, m, S)
    mc_checks(mm.mean, mm.cov, mm.input_output, x, z, "RBF network")


def test_linear_policy_action_moments_exact(gaussian_state):
    """Linear policy: z is Gaussian, so the squashed action's moments are exact end to end."""
    m, S, x = gaussian_state
    pol = policies.LinearPolicy(jnp.array([[0.5, -0.3, 0.2, 0.4], [0.1, 0.2, -0.4, 0.3]]), jnp.array([0.3, -1.0]))
    u = jax.jit(jax.vmap(policies.action, in_axes=(None, 0, None)), static_argnums=2)(pol, x, U_MAX)
    am = policies.action_moments(pol, m, S, U_MAX)
    mc_checks(am.mean, am.cov, am.input_output, x, u, "squashed linear policy")


def test_tip_cost_augmentation_and_gaussian_expectation_exact(gaussian_state):
    m, S, x = gaussian_state
    cost = C.tip_cost()
    z = jax.jit(jax.vmap(C.augment, in_axes=(None, 0)))(cost, x)
    mz, Sz = C.augmented_moments(cost, m, S)
    dz = z - z.mean(0)
    assert_mc(mz, z, "[x, sin, cos] mean")
    assert_mc(Sz, dz[:, :, None] * dz[:, None, :], "[x, sin, cos] cov")
    # E[L] given a Gaussian z is the closed form (the trig step is the only approximation of the tip cost)
    zg = mz + jax.random.normal(jax.random.PRNGKey(3), (N_MC, 3)) @ jnp.linalg.cholesky(Sz).T
    loss = 1.0 - jnp.exp(-0.5 * jnp.sum(((zg - cost.target) @ cost.V) ** 2, -1))
    assert_mc(C.expected_gaussian(cost.V, cost.target, mz, Sz), loss, "saturating cost at a Gaussian")
    # the point cost is the tip distance: d^2 = (x - l sin)^2 + l^2 (1 - cos)^2, a = 0.25, l = 0.5
    xi = jnp.array([0.3, 0.0, 0.0, 0.7])
    d2 = (0.3 - 0.5 * jnp.sin(0.7)) ** 2 + 0.25 * (1 - jnp.cos(0.7)) ** 2
    np.testing.assert_allclose(C.cost_at(cost, xi), 1 - jnp.exp(-d2 / (2 * 0.25**2)), rtol=1e-12)


def random_dynamics(key, n_train=30, obs_var=0.0):
    """A GP dynamics model on [x; u] (5 inputs, 4 outputs), identity mean."""
    k = jax.random.split(key, 3)
    X = jnp.concatenate([jax.random.normal(k[0], (n_train, 4)), 5.0 * jax.random.uniform(k[1], (n_train, 1))], 1)
    Y = 0.3 * jax.random.normal(k[2], (n_train, 4))
    predictor = moments.exact_gp_predictor(X, Y, 0.2, jnp.array([1.0, 1.5, 1.0, 2.0, 4.0]), 0.01)
    return tr.GPDynamics(predictor, moments.identity_mean(4, 1), jnp.full(4, 1e-3), jnp.full(4, obs_var))


@pytest.fixture(scope="module")
def setting():
    dyn = random_dynamics(jax.random.PRNGKey(4))
    pol = policies.init_rbf(jax.random.PRNGKey(5), jnp.zeros(4), jnp.eye(4), 1, 20)
    return dyn, pol._replace(weights=5.0 * pol.weights)


@jax.jit
def one_step(dyn, pol, cost, x0, S0, noise):
    m1, S1 = tr.mm_step(dyn, pol, U_MAX, x0, S0)
    return m1, S1, tr.particle_trajectory(dyn, pol, U_MAX, cost, x0, S0, noise)[0][0]


def test_expected_cost_from_fixed_states_matches_monte_carlo(setting):
    """Must-show: from fixed states (S = 1e-12 I: a point numerically; obs_var = 0, so u is fixed) the next state
    is exactly Gaussian, and the moment-matched E[L(x_1)] (state cost, exact at a Gaussian) agrees with 10^5
    particles through the same GP and policy; so do the mean and covariance of x_1."""
    dyn, pol = setting
    cost = C.state_cost(jnp.zeros(4), jnp.diag(jnp.array([1.0, 0.5, 0.5, 1.0])))
    for i, x0 in enumerate([jnp.array([0.1, 0.2, -0.3, 0.5]), jnp.array([-0.5, 0.0, 0.4, -0.2])]):
        S0 = 1e-12 * jnp.eye(4)
        noise = tr.particle_noise(jax.random.PRNGKey(10 + i), N_MC, 1, 4)
        m1, S1, x1 = one_step(dyn, pol, cost, x0, S0, noise)
        d = x1 - x1.mean(0)
        assert_mc(m1, x1, "x_1 mean")
        assert_mc(S1, d[:, :, None] * d[:, None, :], "x_1 cov")
        loss = jax.jit(jax.vmap(C.cost_at, in_axes=(None, 0)))(cost, x1)
        assert_mc(C.expected_cost(cost, m1, S1), loss, "E[L(x_1)]")


def test_state_action_joint_moments_exact():
    """Eqs. 4.19-4.21: mean and covariance of [x; u] with u = pi(x + nu) are exact (only the Gaussian shape of the
    joint is an approximation); linear policy, so the squashed action's moments are exact."""
    dyn = random_dynamics(jax.random.PRNGKey(6), obs_var=0.05)
    pol = policies.LinearPolicy(jnp.array([[0.5, -0.3, 0.2, 0.4]]), jnp.array([0.3]))
    m, F = jnp.array([0.1, -0.2, 0.3, 0.4]), 0.3 * jax.random.normal(jax.random.PRNGKey(7), (4, 4))
    S = F @ F.T + 0.02 * jnp.eye(4)
    kx, kn = jax.random.split(jax.random.PRNGKey(8))
    x = m + jax.random.normal(kx, (N_MC, 4)) @ jnp.linalg.cholesky(S).T
    y = x + jnp.sqrt(dyn.obs_var) * jax.random.normal(kn, (N_MC, 4))
    act = jax.jit(jax.vmap(policies.action, in_axes=(None, 0, None)), static_argnums=2)
    xu = jnp.concatenate([x, act(pol, y, U_MAX)], 1)
    mj, Sj = jax.jit(tr.state_action, static_argnums=2)(dyn, pol, U_MAX, m, S)
    d = xu - xu.mean(0)
    assert_mc(mj, xu, "[x; u] mean")
    assert_mc(Sj, d[:, :, None] * d[:, None, :], "[x; u] cov")


@pytest.fixture(scope="module")
def total_costs(setting):
    dyn, pol = setting
    dyn = dyn._replace(obs_var=jnp.full(4, 0.01))
    cost, m0, S0, T = C.tip_cost(), jnp.array([0.0, 0.0, 0.0, 0.5]), 0.05 * jnp.eye(4), 3
    noise = tr.particle_noise(jax.random.PRNGKey(9), 200, T, 4)
    flat, unravel = ravel_pytree(pol)

    def mm_cost(f):
        return tr.expected_total_cost(dyn, unravel(f), U_MAX, cost, m0, S0, T)

    def particle_cost(f):
        return tr.particle_total_cost(dyn, unravel(f), U_MAX, cost, m0, S0, noise)

    return flat, jax.jit(jax.value_and_grad(mm_cost)), jax.jit(jax.value_and_grad(particle_cost))


@pytest.mark.parametrize("which", [1, 2])
def test_gradients_against_finite_differences(total_costs, which):
    """Gradients through the moment-matched trajectory (1) and the frozen-noise particle estimate (2): directional
    derivatives along random directions against central differences, rtol 1e-5 (the central-difference error is
    O(h^2) = 1e-8 relative at h = 1e-4; rounding error ~1e-16 / h = 1e-12)."""
    flat, fn = total_costs[0], total_costs[which]
    h = 1e-4
    for k in range(2):
        d = jax.random.normal(jax.random.PRNGKey(20 + k), flat.shape)
        _, grad = fn(flat)
        fd = (fn(flat + h * d)[0] - fn(flat - h * d)[0]) / (2 * h)
        np.testing.assert_allclose(grad @ d, fd, rtol=1e-5)


def test_far_padding_leaves_moments_unchanged(setting):
    dyn, _ = setting
    X = jax.random.normal(jax.random.PRNGKey(11), (12, 5))
    R = 0.3 * jax.random.normal(jax.random.PRNGKey(12), (12, 4))
    Xp, Rp = pilco.pad_far(np.asarray(X), np.asarray(R), 20)
    mu, S = jnp.zeros(5), 0.3 * jnp.eye(5)
    predict = jax.jit(lambda X, R: moments.predict_moments(moments.exact_gp_predictor(X, R, 0.2, 1.3, 0.01), mu, S))
    a, b = predict(X, R), predict(Xp, Rp)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-14)


def test_plant_rollout_matches_the_ode_and_reports_non_finite_states():
    task = plant.SwingUp(horizon=5)
    trial = pilco.rollout(task, None, jax.random.PRNGKey(0))
    assert trial.states.shape == (6, 4) and trial.y.shape == (6, 4) and trial.u.shape == (5, 1)
    from zoo.data import ssm_systems

    np.testing.assert_allclose(trial.states[3], ssm_systems.cartpole_step(trial.states[2], trial.u[2, 0]), rtol=1e-12)
    bad = plant.SwingUp(horizon=5, m0=np.array([0.0, 0.0, np.inf, np.pi]))
    with pytest.raises(pilco.PlantError, match="trial 3: the plant returned a non-finite state at step 0") as err:
        pilco.rollout(bad, None, jax.random.PRNGKey(0), trial_index=3, previous=[trial, trial, trial])
    assert len(err.value.trials) == 3


def test_bad_input_is_refused_before_compiling(setting):
    dyn, pol = setting
    with pytest.raises(OptionError, match="horizon must be >= 1"):
        pilco.optimise_policy(dyn, pol, plant.SwingUp(horizon=0))
    wrong_target = C.tip_cost()._replace(target=jnp.zeros(4))
    with pytest.raises(DataError, match="cost target has shape"):
        pilco.optimise_policy(dyn, pol, plant.SwingUp(cost=wrong_target))
    with pytest.raises(DataError, match="policy takes 3-dimensional"):
        pilco.optimise_policy(dyn, policies.init_linear(jax.random.PRNGKey(0), 3), plant.SwingUp())
    with pytest.raises(OptionError, match="dynamics model"):
        pilco.control_loop(plant.SwingUp(), model="arx")


def test_precomputed_variance_weights_give_the_same_moments(setting):
    """The trajectory forms W = K^{-1} - B B^T once (moments.variance_weights); the moments must equal the per-call
    solve's to rounding (both use the same Cholesky factor)."""
    dyn, _ = setting
    mu, F = jnp.array([0.1, -0.2, 0.3, 0.4, 2.0]), 0.3 * jax.random.normal(jax.random.PRNGKey(13), (5, 5))
    S = F @ F.T + 0.02 * jnp.eye(5)
    a = moments.predict_moments(dyn.predictor, mu, S, dyn.mean_fn)
    b = moments.predict_moments(dyn.predictor, mu, S, dyn.mean_fn, moments.variance_weights(dyn.predictor))
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)


def test_noisy_dynamics_gp_factorises_without_jitter(setting):
    """A GP with noise needs no jitter (recorded 0); a Gram matrix that cannot factorise (a duplicated input and a
    negative 'noise': an eigenvalue near -1e-3) records the jitter that the retry added."""
    X = jax.random.normal(jax.random.PRNGKey(14), (10, 5))
    R = jax.random.normal(jax.random.PRNGKey(15), (10, 4))
    _, jitter = moments.exact_gp_predictor_with_jitter(X, R, 0.2, 1.0, 0.01)
    np.testing.assert_array_equal(jitter, 0.0)
    X2 = jnp.concatenate([X, X[:1]])
    _, jitter = moments.exact_gp_predictor_with_jitter(X2, jnp.concatenate([R, R[:1]]), 0.2, 1.0, -1e-3)
    assert np.all(np.asarray(jitter) > 0.0)


def test_bucketed_padding_sizes():
    assert [pilco.bucketed(n, 100) for n in (1, 100, 101, 250)] == [100, 100, 200, 300]
    assert pilco.bucketed(37, 0) == 37


def test_fig4_8_from_run_files(tmp_path):
    """Fig 4.8's tables from benchmarks/pilco_learning_run.py's JSON lines: the final iteration's successes per model
    (a seed counts when >= half its test trials swing up), Fisher's exact p between the models (0/5 vs 4/5 swung up:
    the two tables as extreme, 0 or 4 of the 4 successes in the first row, each C(5,4) / C(10,4): p = 10/210), and a
    run given twice is refused."""
    import json

    from paper_figures.mchutchon_pilco import model_difference, read_runs, success_table

    paths = []
    for model, swung in (("ar-gp", 0), ("gp-ssm", 4)):
        for seed in range(5):
            lines = [
                {"model": model, "noise_factor": 2.0, "seed": seed, "iteration": i, "predicted": 30.0,
                 "trial_cost": 40.0, "test_cost_mean": 20.0 + i, "test_success": float(i == 2 and seed < swung)}
                for i in (1, 2)
            ]  # fmt: skip
            paths.append(tmp_path / f"{model}_{seed}.jsonl")
            paths[-1].write_text("\n".join(json.dumps(line) for line in lines))
    rows = read_runs(paths)
    assert [r["ours"] for r in success_table(rows)] == ["0/5 (final test cost 22.0)", "4/5 (final test cost 22.0)"]
    assert model_difference(rows)[0]["ours"] == f"{10 / 210:.2g}"
    with pytest.raises(ValueError, match="both hold"):
        read_runs([paths[0], paths[0]])
    with pytest.raises(FileNotFoundError, match="no such run file"):
        read_runs([tmp_path / "missing.jsonl"])


def test_learning_run_warns_and_fails_on_a_non_finite_policy_optimisation(tmp_path, monkeypatch, capsys):
    """benchmarks/pilco_learning_run.py: an iteration whose policy L-BFGS ended non-finite is warned of when it happens,
    the run's state is still saved, and the run exits with status 1 (GP-SSM seed 7 of Fig 4.8 ran on for hours with
    every iteration failing and exit status 0). The loop is faked: two iterations, the second non-finite."""
    from benchmarks import pilco_learning_run as runner

    def fake_loop(task, *, on_iteration, resume, **_):
        out = pilco.LoopResult()
        out.trials = [None, None]
        for finite in (True, False):
            out.trials.append(None)
            for name, value in (("predicted", 40.0), ("trial_costs", 45.0), ("test_costs", [45.0]),
                                ("success", 0.0), ("learn_seconds", 1.0), ("optimise_seconds", 1.0),
                                ("iteration_seconds", 2.0), ("lbfgs_steps", 3), ("jitter", [0.0]),
                                ("finite", finite)):  # fmt: skip
                getattr(out, name).append(value)
            on_iteration(out)
        return out

    monkeypatch.setattr(pilco, "control_loop", fake_loop)
    out = tmp_path / "run.jsonl"
    monkeypatch.setattr("sys.argv", ["pilco_learning_run", "gp-ssm", "7", str(out), "--iterations", "2"])
    with pytest.raises(SystemExit, match=r"non-finite at iterations \[2\]"):
        runner.main()
    assert "warning: iteration 2:" in capsys.readouterr().err
    assert [line.count('"lbfgs_finite": false') for line in out.read_text().splitlines()] == [0, 1]
    assert runner.state_path(out).is_file()
