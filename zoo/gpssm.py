"""GP state-space models (McHutchon 2014, ch. 3; seed notes 002, M9, M10, M13, sec. 5).

x_t = f([x_{t-1}; u_{t-1}]) + eps_t, eps ~ N(0, diag(process_var)); y_t = x_t + nu_t, nu ~ N(0, diag(obs_var))
(C = I: every state observed with noise, as in all thesis experiments). f: D independent GPs with SE-ARD kernels
(``lengthscale`` (D, D+U), ``signal_var`` (D,)) and a zero, identity or learnable linear mean m(x^) = A x^ + b.

* ``gpssm/full`` (M9, eq. 3.27): f integrated out, p(x_{1:T}) = p(x_1) prod_e N(x_{2:T,e}; m_e, K_e(X^, X^) +
  process_var_e I): non-Markov but an exact density NUTS can target. Trajectories are independent GP draws (each has
  its own f): the notes' p(x | theta) is per trajectory; sharing f across trajectories would couple them.
* ``gpssm/sparse`` (M10, eqs. 3.38-3.43): pseudo-inputs X~ (M, D+U) fixed, chosen by greedy maximisation of the
  Titsias (2009) collapsed bound of a GP fitted to the observed transitions (notes sec. 5 item 7); pseudo-targets
  F~ (D, M) are parameters (broad N(0, 10^2) prior, ML-II in the thesis); ``gpssm/sparse-gp-prior`` gives F~ its GP
  prior N(m(X~), K(X~, X~)). Markov: p(x_t | x_{t-1}) = N(m_f(x^), s_f(x^) + process_var) with the noise-free
  pseudo-data predictive (3.40 as corrected in the notes). Its state-space view is exact, so PF/PGAS/Kalman-style
  engines and the moment-matching engines (the ``gp_ssm`` view) target the same model.
* ``gpssm/ar1-gp`` (M13): a GP on the observed pairs y_{t-1} -> y_t (baseline).

Initial state: x_1 ~ N(m0, P0) fixed per system (notes sec. 5 item 8): N(0, I) for the kink and random systems.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.contrib.control_flow import scan

from zoo import gp, moments, ssm
from zoo.data import ssm_systems
from zoo.gp_ssm_view import GPSSMParams, GPSSMView, linear_mean_of, pseudo_predictor
from zoo.kernels import SquaredExponential
from zoo.registry import Dataset, frozen, register

Array = Any

PSEUDO_TARGET_PRIOR_SD = 10.0


# ----------------------------------------------------------------------------------------------------------------
# Parameters shared by the GP-SSMs
# ----------------------------------------------------------------------------------------------------------------


def _mean_parameters(mean: str, D: int, U: int) -> tuple[Array, Array]:
    if mean == "linear":
        A = numpyro.sample("mean_A", dist.Normal(0.0, 1.0).expand([D, D + U]).to_event(2))
        b = numpyro.sample("mean_b", dist.Normal(0.0, 1.0).expand([D]).to_event(1))
        return A, b
    if mean == "identity":
        return moments.identity_mean(D, U).A, jnp.zeros(D)
    return jnp.zeros((D, D + U)), jnp.zeros(D)


def _hyper_parameters(D: int, U: int) -> dict[str, Array]:
    """Weak LogNormal priors (the thesis has none; notes sec. 0 and sec. 5 item 21)."""
    return {
        "lengthscale": numpyro.sample("lengthscale", dist.LogNormal(0.0, 1.0).expand([D, D + U]).to_event(2)),
        "signal_var": numpyro.sample("signal_var", dist.LogNormal(0.0, 1.0).expand([D]).to_event(1)),
        "process_var": numpyro.sample("process_var", dist.LogNormal(jnp.log(0.1), 1.0).expand([D]).to_event(1)),
        "obs_var": numpyro.sample("obs_var", dist.LogNormal(jnp.log(0.1), 1.0).expand([D]).to_event(1)),
    }


def sparse_parameters(D: int, U: int, mean: str, gp_prior: bool, m0, P0, observed) -> dict[str, Any]:
    """Parameter sites of the sparse GP-SSM; returns theta = {"gpssm": GPSSMParams, "predictor", "mean_fn"}."""
    Xp = jnp.asarray(observed["pseudo_inputs"])
    hypers = _hyper_parameters(D, U)
    A, b = _mean_parameters(mean, D, U)
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


# ----------------------------------------------------------------------------------------------------------------
# Observed transitions, the AR1-GP (M13) and the Titsias pseudo-input selection (notes sec. 5 item 7)
# ----------------------------------------------------------------------------------------------------------------


def observed_transitions(observed: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Inputs [y_{t-1}; u_{t-1}] (N, D+U) and targets y_t (N, D) of every observed transition (masked steps dropped)."""
    y = np.asarray(observed["y"])
    K, T, D = y.shape
    lengths = np.asarray(observed["lengths"]).astype(int)
    u = np.asarray(observed["u"]) if "u" in observed else np.zeros((K, T, 0))
    inputs = [np.concatenate([y[k, :-1], u[k, :-1]], 1)[: lengths[k] - 1] for k in range(K)]
    targets = [y[k, 1:][: lengths[k] - 1] for k in range(K)]
    return np.concatenate(inputs), np.concatenate(targets)


class AR1GP(NamedTuple):
    """ML-II hyperparameters of D independent GPs on observed transitions: signal_var (D,), lengthscale (D, D+U),
    noise_var (D,), with the fixed mean (A (D, D+U), b (D,)) subtracted from the targets."""

    signal_var: Array
    lengthscale: Array
    noise_var: Array
    mean_A: Array
    mean_b: Array


@partial(jax.jit, static_argnames="num_steps")
def _fit_ar1(X, R, num_steps: int):
    """ML-II by Adam on log hyperparameters (``gp.fit_se_ml2``, learning rate 0.05), per output dim (R: residual
    targets (N, D)); this is only the initialisation of Algorithm 1."""
    scale = jnp.std(X, 0) + 1e-3

    def fit(r):
        var = jnp.var(r) + 1e-6
        init = jnp.concatenate([jnp.log(jnp.array([var, 0.1 * var])), jnp.log(scale)])
        return gp.fit_se_ml2(init, X, r, num_steps)

    return jax.vmap(fit)(R.T)


def fit_ar1_gp(observed: Mapping[str, Any], mean: str = "zero", num_steps: int = 150) -> AR1GP:
    """The AR1-GP baseline (M13): a GP per output on the observed pairs [y_{t-1}; u_{t-1}] -> y_t, ML-II.

    mean "identity" models y_t - y_{t-1}; "linear" fits the linear mean by least squares first.
    """
    X, Y = observed_transitions(observed)
    D, DU = Y.shape[1], X.shape[1]
    if mean == "identity":
        A, b = np.asarray(moments.identity_mean(D, DU - D).A), np.zeros(D)
    elif mean == "linear":
        W = np.linalg.lstsq(np.concatenate([X, np.ones((len(X), 1))], 1), Y, rcond=None)[0]
        A, b = W[:-1].T, W[-1]
    else:
        A, b = np.zeros((D, DU)), np.zeros(D)
    log_p = _fit_ar1(jnp.asarray(X), jnp.asarray(Y - X @ A.T - b), num_steps)
    return AR1GP(jnp.exp(log_p[:, 0]), jnp.exp(log_p[:, 2:]), jnp.exp(log_p[:, 1]), jnp.asarray(A), jnp.asarray(b))


def ar1_gp_predict(fit: AR1GP, observed: Mapping[str, Any], inputs: Array) -> tuple[Array, Array]:
    """AR1-GP one-step predictive of y_t at inputs [y_{t-1}; u_{t-1}] (n, D+U): mean (n, D), variance (n, D)
    (latent variance plus the GP's noise: its noise stands for the total noise)."""
    X, Y = observed_transitions(observed)
    R = Y - X @ np.asarray(fit.mean_A).T - np.asarray(fit.mean_b)
    predictor = moments.exact_gp_predictor(X, R, fit.signal_var, fit.lengthscale, fit.noise_var)
    mean_fn = moments.LinearMean(fit.mean_A, fit.mean_b)
    mean, var = jax.vmap(lambda x: moments.predict_point(predictor, x, mean_fn))(jnp.asarray(inputs))
    return mean, var + fit.noise_var


def _titsias_bound_from_rows(V: Array, r: Array, signal_var, noise_var) -> Array:
    """Titsias (2009) collapsed bound log N(r; 0, Q + s2 I) - tr(K - Q) / (2 s2) with Q = V^T V.

    V (M, N): rows of the incremental Cholesky factor of K_xx on the chosen inducing inputs (zero rows are unused
    slots: they leave Q, and so the bound, unchanged). Woodbury with A = V / s: no N x N factorisation.
    """
    N = V.shape[1]
    A = V / jnp.sqrt(noise_var)
    LB = jnp.linalg.cholesky(jnp.eye(V.shape[0]) + A @ A.T)
    c = jax.scipy.linalg.solve_triangular(LB, A @ r, lower=True) / jnp.sqrt(noise_var)
    fit = -jnp.sum(jnp.log(jnp.diagonal(LB))) - 0.5 * N * jnp.log(2 * jnp.pi * noise_var) - 0.5 * r @ r / noise_var
    return fit + 0.5 * c @ c - 0.5 * (N * signal_var - jnp.sum(V**2)) / noise_var


@partial(jax.jit, static_argnames="num_pseudo")
def _greedy_titsias(X, R, fit: AR1GP, num_pseudo: int):
    """Indices (M,) of the greedy selection: at each step the candidate whose addition maximises the bound summed
    over outputs. Adding x_j appends the row (K_j. - V_.j^T V) / sqrt(K_jj - |V_.j|^2) (pivoted Cholesky)."""
    K = jax.vmap(lambda sf2, ell: SquaredExponential(sf2, ell)(X))(fit.signal_var, fit.lengthscale)  # (D, N, N)
    D, N = K.shape[0], X.shape[0]

    def with_candidate(V, step, j):
        def one_output(Ke, Ve, r, sf2, sn2):
            resid = jnp.maximum(Ke[j, j] - Ve[:, j] @ Ve[:, j], 1e-12 * sf2)
            row = (Ke[j] - Ve[:, j] @ Ve) / jnp.sqrt(resid)
            Ve = Ve.at[step].set(row)
            return _titsias_bound_from_rows(Ve, r, sf2, sn2), Ve

        return jax.vmap(one_output)(K, V, R.T, fit.signal_var, fit.noise_var)

    def step(carry, index):
        V, chosen = carry
        bounds, _ = jax.vmap(lambda j: with_candidate(V, index, j))(jnp.arange(N))
        total = jnp.where(jnp.isin(jnp.arange(N), chosen), -jnp.inf, jnp.sum(bounds, 1))
        best = jnp.argmax(total)
        _, V = with_candidate(V, index, best)
        return (V, chosen.at[index].set(best)), None

    init = (jnp.zeros((D, num_pseudo, N)), jnp.full(num_pseudo, -1))
    (_, chosen), _ = jax.lax.scan(step, init, jnp.arange(num_pseudo))
    return chosen


def select_pseudo_inputs(observed: Mapping[str, Any], num_pseudo: int, fit: AR1GP | None = None) -> np.ndarray:
    """Greedy pseudo-inputs (M, D+U): observed inputs added one at a time, each maximising the Titsias (2009)
    collapsed bound of the AR1-GP fitted to the observed transitions (McHutchon sec. 3.4.3; notes sec. 5 item 7)."""
    X, Y = observed_transitions(observed)
    fit = fit_ar1_gp(observed) if fit is None else fit
    R = Y - X @ np.asarray(fit.mean_A).T - np.asarray(fit.mean_b)
    chosen = _greedy_titsias(jnp.asarray(X), jnp.asarray(R), fit, min(num_pseudo, len(X)))
    return X[np.asarray(chosen)]


# ----------------------------------------------------------------------------------------------------------------
# Specs
# ----------------------------------------------------------------------------------------------------------------


def initial_params_from_ar1(mean: str, gp_prior: bool, observed: Mapping[str, Any]) -> dict[str, Array]:
    """Algorithm 1's initialisation: AR1-GP hyperparameters; its noise split evenly into process and observation
    noise; pseudo-targets = the AR1-GP predictive mean at the pseudo-inputs."""
    fit = fit_ar1_gp(observed, "zero" if mean == "zero" else "identity" if mean == "identity" else "linear")
    Xp = jnp.asarray(observed["pseudo_inputs"])
    F, _ = ar1_gp_predict(fit, observed, Xp)
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


def _with_pseudo_inputs(simulate: Callable[..., Dataset], num_pseudo: int, mean: str):
    """Wrap a generator so that its data carry the Titsias-selected pseudo-inputs (train and test alike)."""

    def wrapped(key, **size) -> Dataset:
        data = simulate(key, **size)
        mode = "zero" if mean == "zero" else "identity" if mean == "identity" else "linear"
        Xp = select_pseudo_inputs(data.observed, num_pseudo, fit_ar1_gp(data.observed, mode))
        test = {**data.test, "pseudo_inputs": Xp} if data.test else {}
        return Dataset(observed={**data.observed, "pseudo_inputs": Xp}, truth=data.truth, test=test)

    return wrapped


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
    source: str = "McHutchon 2014, sec. 3.4.3, eqs. 3.31-3.44 (model M10)",
) -> ssm.StateSpaceSpec:
    """A sparse GP-SSM spec (M10) on the data of ``simulate``, with its state-space and GP-SSM views."""
    D, U = state_dim, control_dim
    m0 = np.zeros(D) if m0 is None else np.asarray(m0, dtype=float)
    P0 = np.eye(D) if P0 is None else np.asarray(P0, dtype=float)
    view = sparse_state_space_view(D, U, mean, gp_prior, m0, P0)
    gp_view = GPSSMView(
        state_space=view,
        to_gpssm=lambda theta: theta["gpssm"],
        initial_params=partial(initial_params_from_ar1, mean, gp_prior),
    )
    prior = "GP prior on pseudo-targets" if gp_prior else "pseudo-targets as parameters"
    return ssm.StateSpaceSpec(
        name=name,
        summary=f"Sparse GP-SSM (D={D}, U={U}, {mean} mean, {prior}); pseudo-inputs by the Titsias criterion",
        source=source,
        program=ssm.build_program(view),
        simulate=_with_pseudo_inputs(simulate, num_pseudo, mean),
        data_shapes=frozen(ssm.trajectory_shapes(D, U, {"pseudo_inputs": ("M", D + U)})),
        capabilities=frozenset({"continuous", "state_space", "gp_ssm_se"}),
        views=frozen({"state_space": view, "gp_ssm": gp_view}),
    )


# ----------------------------------------------------------------------------------------------------------------
# M9: the full (non-Markov) GP-SSM, f integrated out
# ----------------------------------------------------------------------------------------------------------------


class FullGPSSMParams(NamedTuple):
    """theta of M9 (eq. 3.6 plus p(x_1)). D states (E = D observations, C = I), U controls.

    lengthscale (D, D+U), signal_var (D,), process_var (D,), obs_var (D,), mean_A (D, D+U), mean_b (D,), m0 (D,),
    P0 (D, D).
    """

    lengthscale: Array
    signal_var: Array
    process_var: Array
    obs_var: Array
    mean_A: Array
    mean_b: Array
    m0: Array
    P0: Array


def full_parameters(D: int, U: int, mean: str, m0, P0):
    """``parameters(observed) -> FullGPSSMParams``: the parameter sites of M9 (the same sites, in the same order, as
    the program samples)."""

    def parameters(observed=None) -> FullGPSSMParams:
        hypers = _hyper_parameters(D, U)
        A, b = _mean_parameters(mean, D, U)
        return FullGPSSMParams(**hypers, mean_A=A, mean_b=b, m0=jnp.asarray(m0), P0=jnp.asarray(P0))

    return parameters


def effective_noise(theta: FullGPSSMParams) -> Array:
    """process_var + the relative jitter of ``gp.cholesky`` (JITTER * mean diagonal of K_e + process_var I, which is
    JITTER * (signal_var + process_var) for the SE kernel at any size) (D,). Folding the jitter into the noise keeps
    the masked sub-problems below exactly consistent with the full joint: every prefix of the path is a marginal of
    the same Gaussian."""
    return theta.process_var + gp.JITTER * (theta.signal_var + theta.process_var)


def transition_factors(theta: FullGPSSMParams, path: Array, u: Array, num_transitions):
    """The GP of M9 restricted to the first ``num_transitions`` transitions x_s -> x_{s+1} of one path, in fixed shapes.

    path (T, D), u (T, U), num_transitions () int in [0, T-1] (traceable). With n = T-1 and a = (s < num_transitions):
    inputs X^ (n, D+U) = [x_{1:T-1}, u_{1:T-1}]; per output e the Cholesky factor L (D, n, n) of
    K_e(X^, X^) + noise_e I on the active block and the identity on the inactive one, and the residuals
    r (D, n) = a * (x_{2:T,e} - m_e(X^)). Inactive coordinates then decouple: they contribute exactly -log(2 pi)/2 each
    to a Gaussian log density and nothing to a conditional (no truncation of shapes inside ``scan``).
    Returns (inputs, active (n,), L, r).
    """
    inputs = jnp.concatenate([path[:-1], u[:-1]], axis=-1)
    active = jnp.arange(inputs.shape[0]) < num_transitions
    resid = (path[1:] - inputs @ theta.mean_A.T - theta.mean_b) * active[:, None]
    both = active[:, None] & active[None, :]

    def factor(sf2, ell, noise):
        K = jnp.where(both, SquaredExponential(sf2, ell)(inputs), 0.0) + jnp.diag(jnp.where(active, noise, 1.0))
        return gp.cholesky(K, 0.0)  # jitter already in ``noise`` (effective_noise)

    L = jax.vmap(factor)(theta.signal_var, theta.lengthscale, effective_noise(theta))
    return inputs, active, L, resid.T


def _masked_log_density(L: Array, w: Array, active: Array) -> Array:
    """sum_e log N(r_e; 0, L_e L_e^T) restricted to the active coordinates, from L (D, n, n) and the whitened
    residuals w = L^{-1} r (D, n): the inactive coordinates (identity block, zero residual) are added back."""
    half_log_det = jnp.sum(jnp.log(jnp.diagonal(L, axis1=-2, axis2=-1)))  # the identity block adds 0
    return -0.5 * jnp.sum(w**2) - half_log_det - 0.5 * L.shape[0] * jnp.sum(active) * jnp.log(2.0 * jnp.pi)


def dynamics_log_density(theta: FullGPSSMParams, path: Array, u: Array, num_transitions=None) -> Array:
    """log p(x_{2:n+1} | x_1) = sum_e log N(x_{2:n+1,e}; m_e(X^), K_e(X^, X^) + process_var_e I), n = num_transitions
    (default T-1, the whole path: M9 eq. 3.27 without p(x_1)); X^ = [x_{1:n}, u_{1:n}]. path (T, D), u (T, U) -> ()."""
    num_transitions = path.shape[0] - 1 if num_transitions is None else num_transitions
    _, active, L, r = transition_factors(theta, path, u, num_transitions)
    w = jax.vmap(lambda Le, re: jax.scipy.linalg.solve_triangular(Le, re, lower=True))(L, r)
    return _masked_log_density(L, w, active)


def history_terms(theta: FullGPSSMParams, path: Array, u: Array, t) -> tuple[Array, Array, Array]:
    """The marginalised-GP sequential conditional p(path[t] | path[:t], u[:t]) (notes M9, eqs. 3.15-3.17 with the
    process noise added; Frigola, Lindsten, Schön & Rasmussen 2013, sec. 3) for one path (T, D) and a 0-based index
    t >= 1 (traceable), and the history's own dynamics density log p(path[1:t] | path[0]) from the same factorisation;
    entries of ``path`` from t on are ignored. Per output e, a GP regression on the history's t-1 transitions:
        mean_e = m_e(x^_{t-1}) + k_*^T (K + noise I)^{-1} r,  var_e = k_** + noise - k_*^T (K + noise I)^{-1} k_*,
    k_* = k_e(X^_{1:t-2}, x^_{t-1}), by Cholesky solves. Returns mean (D,), var (D,), log density ()."""
    inputs, active, L, r = transition_factors(theta, path, u, t - 1)
    query = jnp.concatenate([path[t - 1], u[t - 1]])
    noise = effective_noise(theta)

    def one_output(sf2, ell, a, b, Le, re, ne):
        k = SquaredExponential(sf2, ell)(inputs, query[None])[:, 0] * active
        v = jax.scipy.linalg.solve_triangular(Le, k, lower=True)
        w = jax.scipy.linalg.solve_triangular(Le, re, lower=True)
        return query @ a + b + v @ w, sf2 + ne - v @ v, w

    args = (theta.signal_var, theta.lengthscale, theta.mean_A, theta.mean_b, L, r, noise)
    mean, var, w = jax.vmap(one_output)(*args)
    return mean, var, _masked_log_density(L, w, active)


def history_predictive(theta: FullGPSSMParams, path: Array, u: Array, t) -> tuple[Array, Array]:
    """p(path[t] | path[:t], u[:t]): mean (D,), var (D,) (``history_terms`` without the history's density)."""
    return history_terms(theta, path, u, t)[:2]


def full_log_joint(theta: FullGPSSMParams, states: Array, y: Array, mask: Array, u: Array) -> Array:
    """log p(x_{1:T}, y_{1:T} | theta) of one trajectory: p(x_1) (eq. 3.27) p(x_{2:T} | x_1) and the emission of the
    observed steps. states (T, D), y (T, D), mask (T,), u (T, U) -> ()."""
    log_x1 = gp.mvn_logpdf_chol(states[0], theta.m0, gp.cholesky(theta.P0, 0.0))
    log_emit = dist.Normal(states, jnp.sqrt(theta.obs_var)).to_event(1).log_prob(y)
    return log_x1 + dynamics_log_density(theta, states, u) + jnp.sum(jnp.where(mask, log_emit, 0.0))


@dataclass(frozen=True, eq=False)  # hashed by identity: engines cache compiled functions per view
class MarginalGPSSMView:
    """The ``marginal_gp_ssm`` view of M9, for particle methods on the non-Markov model (PGAS, particle Gibbs).

    ``parameters(observed) -> theta`` (a NumPyro function: the program's parameter sites; ``ssm.bind`` fixes them);
    theta carries ``m0`` (D,), ``P0`` (D, D) of x_1 ~ N(m0, P0) and ``obs_var`` (D,) of y_t = x_t + N(0, diag(obs_var));
    ``history_predictive(theta, path (T, D), u (T, U), t) -> (mean (D,), var (D,))`` of p(path[t] | path[:t]) and
    ``history_terms`` (the same plus the history's dynamics density log p(path[1:t] | path[0]), one factorisation);
    ``dynamics_log_density(theta, path, u, num_transitions)`` = log p(x_{2:n+1} | x_1); ``log_joint(theta, states,
    y, mask, u)`` = log p(x_{1:T}, y_{1:T} | theta) of one trajectory. The program is built from the same functions.
    """

    state_dim: int
    control_dim: int
    parameters: Callable[..., FullGPSSMParams]
    history_predictive: Callable[..., tuple[Array, Array]] = history_predictive
    history_terms: Callable[..., tuple[Array, Array, Array]] = history_terms
    dynamics_log_density: Callable[..., Array] = dynamics_log_density
    log_joint: Callable[..., Array] = full_log_joint


def gpssm_full_program(D: int, U: int, mean: str, m0, P0):
    """M9 (eq. 3.27): per trajectory, x_1 ~ N(m0, P0) and per output e
    x_{2:T,e} ~ N(m_e(X^), K_e(X^, X^) + process_var_e I), X^ = [x_{1:T-1}, u_{1:T-1}]; y_t ~ N(x_t, obs_var).
    Padding: the last states of a short trajectory stay in the GP (future points marginalise out of a GP)."""
    parameters = full_parameters(D, U, mean, m0, P0)

    def program(y=None, lengths=None, u=None):
        K, T = y.shape[:2]
        lengths = jnp.full((K,), T) if lengths is None else lengths
        mask = ssm.observation_mask(lengths, T)
        u = ssm.controls_or_empty(u, K, T)
        theta = parameters()
        with numpyro.plate("trajectories", K):
            x1 = numpyro.sample("x1", dist.MultivariateNormal(theta.m0, theta.P0))
            rest = numpyro.sample("x_rest", dist.Normal(0.0, 1.0).expand([T - 1, D]).to_event(2).mask(False))
        states = jnp.concatenate([x1[:, None], rest], axis=1)
        numpyro.deterministic(ssm.STATES, states)
        log_dyn = jax.vmap(lambda path, uk: dynamics_log_density(theta, path, uk))(states, u)
        numpyro.factor("dynamics", jnp.sum(log_dyn))
        # the emission of padded steps is dropped
        trajectories, steps = numpyro.plate("trajectories_y", K, dim=-2), numpyro.plate("steps_y", T, dim=-1)
        with trajectories, steps, numpyro.handlers.mask(mask=mask):
            numpyro.sample("y", dist.Normal(states, jnp.sqrt(theta.obs_var)).to_event(1), obs=y)

    return program


def full_default_params(D: int, U: int, mean: str) -> dict[str, np.ndarray]:
    """The prior medians of the M9 sites (engines that condition on parameters use them when none are given)."""
    params = {
        "lengthscale": np.ones((D, D + U)),
        "signal_var": np.ones(D),
        "process_var": np.full(D, 0.1),
        "obs_var": np.full(D, 0.1),
    }
    if mean == "linear":
        params.update(mean_A=np.zeros((D, D + U)), mean_b=np.zeros(D))
    return params


def full_gpssm_spec(
    name: str, simulate, state_dim: int, control_dim: int = 0, mean: str = "zero"
) -> ssm.StateSpaceSpec:
    D, U = state_dim, control_dim
    m0, P0 = np.zeros(D), np.eye(D)
    view = MarginalGPSSMView(D, U, full_parameters(D, U, mean, m0, P0))
    return ssm.StateSpaceSpec(
        name=name,
        summary=f"Full GP-SSM (D={D}), transition f integrated out: exact non-Markov density (O(T^3))",
        source="McHutchon 2014, sec. 3.2, eqs. 3.6-3.27 (model M9)",
        program=gpssm_full_program(D, U, mean, m0, P0),
        simulate=simulate,
        data_shapes=frozen(ssm.trajectory_shapes(D, U)),
        default_params=frozen(full_default_params(D, U, mean)),
        capabilities=frozenset({"continuous", "marginal_gp_ssm"}),
        views=frozen({"marginal_gp_ssm": view}),
    )


KINK = partial(ssm_systems.kink)
FULL = register(full_gpssm_spec("gpssm/full", KINK, 1))
SPARSE = register(sparse_gpssm_spec("gpssm/sparse", KINK, 1))
SPARSE_GP_PRIOR = register(
    sparse_gpssm_spec("gpssm/sparse-gp-prior", KINK, 1, gp_prior=True, source="McHutchon 2014, sec. 3.4.3-3.4.4")
)
SPARSE_CARTPOLE = register(
    sparse_gpssm_spec(
        "gpssm/sparse-cartpole",
        ssm_systems.cartpole,
        4,
        1,
        mean="identity",
        num_pseudo=50,
        m0=[0.0, 0.0, 0.0, np.pi],
        P0=0.01 * np.eye(4),
    )
)
SPARSE_RANDOM = register(
    sparse_gpssm_spec("gpssm/sparse-random", partial(ssm_systems.random_gp_system, state_dim=2), 2, num_pseudo=10)
)


# ----------------------------------------------------------------------------------------------------------------
# M11: the variational GP-SSM (Frigola, Chen & Rasmussen 2014; McHutchon sec. 3.4.4) and its Markov-Gaussian guide
# ----------------------------------------------------------------------------------------------------------------


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


def variational_guide(D: int, m0, P0):
    """The guide of M11 (notes M11, NumPyro sketch): point masses on sf2, lengthscales and noise variances (ML-II, as in
    the thesis), a full-rank Gaussian q(F~_e) per output, a Markov-Gaussian q(x_{1:T}) per trajectory,
    x_1 ~ N(a_1, L_1 L_1^T), x_t | x_{t-1} ~ N(a_t + B_t (x_{t-1} - a_{t-1}), L_t L_t^T) (tridiagonal precision), and
    f_t from the model's own p(f_t | x_{t-1}, F~), so that it cancels in the ELBO."""
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
    m0, P0 = np.zeros(1), np.eye(1)
    return ssm.StateSpaceSpec(
        name=name,
        summary="Variational GP-SSM (M11): GP prior on pseudo-targets, explicit f_t; Markov-Gaussian guide for SVI",
        source="McHutchon 2014, sec. 3.4.4, eqs. 3.48-3.75 (model M11; Frigola, Chen & Rasmussen 2014)",
        program=variational_program(1, m0, P0),
        simulate=_with_pseudo_inputs(simulate, num_pseudo, "zero"),
        data_shapes=frozen(ssm.trajectory_shapes(1, 0, {"pseudo_inputs": ("M", 1)})),
        capabilities=frozenset({"continuous"}),
        views=frozen({"guide": variational_guide(1, m0, P0)}),
    )


VARIATIONAL = register(variational_spec("gpssm/variational", partial(ssm_systems.kink, num_train=10)))
