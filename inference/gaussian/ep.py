"""``ep``: expectation propagation for GP classification with the probit likelihood at fixed hyperparameters
(Rasmussen & Williams 2006, sec. 3.6, Algorithms 3.5 and 3.6; docs/sources/nonconjugate.md#ep).

Sites t~_i(f_i) = Z~_i N(f_i | nu~_i / tau~_i, 1 / tau~_i), in natural parameters (tau~, nu~), start at zero.
One update of site i (Alg. 3.5 lines 5-9): the cavity tau_-i = 1 / Sigma_ii - tau~_i, nu_-i = mu_i / Sigma_ii - nu~_i
(eq. 3.56); the tilted moments Z^_i, mu^_i, sigma^2_i of Phi(y_i f_i) N(f_i | mu_-i, sigma^2_-i) in closed form
(eq. 3.58, labels y_i = 2 y01_i - 1); the site matching them (eq. 3.59), blended with the old site by ``damping``
delta: new = (1 - delta) matched + delta old (delta = 0: R&W as printed).

- ``updates="sequential"`` (Alg. 3.5): sites in turn, Sigma updated by the rank-one formula of line 10 written as
  Sigma - dtau / (1 + dtau Sigma_ii) s_i s_i^T (the printed ((dtau)^-1 + Sigma_ii)^-1 divides by zero when a site
  does not move), mu = Sigma nu~ (line 11); after each sweep Sigma and mu are recomputed from
  B = I + S~^1/2 K S~^1/2 (lines 13-15) so rounding from the rank-one updates does not accumulate.
- ``updates="parallel"``: every site from the same cavities, then Sigma and mu from B once per sweep (needs
  damping more often; a standard variant, e.g. GPML's infEP is sequential, Minka 2001 discusses both).
- Stop when no tau~_i or nu~_i moved more than ``tolerance`` in a sweep, or after ``max_sweeps``.
- log Z_EP (eq. 3.65 in the stable form of Alg. 3.6, terms 3 + 4&1 + 5a + 5b&2), with a prior mean m handled by
  shifting to g = f - m (docs/sources/nonconjugate.md#ep-evidence).
- Predictions (Alg. 3.6 lines 4-7): E[f*] = m* + k*^T K^-1 (mu - m), V[f*] = k** - v^T v with v = L \\ S~^1/2 k*,
  and p(y*=1) = Phi(E[f*] / sqrt(1 + V[f*])) (eq. 3.82).

- Gradient of log Z_EP with respect to the hyperparameters (eq. 3.80): ``log_evidence_and_grad``, by autodiff of the
  part of log Z_EP that depends on theta with the converged sites held fixed; ``hyperparameters="ml2"`` maximises
  log Z_EP by L-BFGS with it (``inference.gaussian.type2``) and fits at the optimum.

Draws of the latent sites come from the EP posterior N(mu, (K^-1 + S~)^-1).
"""

from typing import Any

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_solve, solve_triangular
from jax.scipy.special import log_ndtr
from jax.scipy.stats import norm

from inference.core import options as opt
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.fixed import conditions_unless_ml2
from inference.gaussian import latent_gaussian as lg
from inference.gaussian import type2
from inference.gaussian.laplace import held_out_inputs
from zoo.options import Option

Array = Any

__all__ = ["UPDATES", "ep", "fit", "log_evidence", "log_evidence_and_grad", "run_ep", "tilted_moments"]

UPDATES = ("sequential", "parallel")


def tilted_moments(s: Array, tau_cav: Array, nu_cav: Array) -> tuple[Array, Array, Array]:
    """(log Z^, mu^, sigma^2) of Phi(s f) N(f | nu_cav / tau_cav, 1 / tau_cav) (R&W eq. 3.58); s = +-1.

    N(z) / Phi(z) is formed as exp(log N(z) - log Phi(z)) so that it stays finite far in the lower tail."""
    mu_cav, var_cav = nu_cav / tau_cav, 1.0 / tau_cav
    root = jnp.sqrt(1.0 + var_cav)
    z = s * mu_cav / root
    log_z = log_ndtr(z)
    ratio = jnp.exp(norm.logpdf(z) - log_z)
    mean = mu_cav + s * var_cav * ratio / root
    var = var_cav - var_cav**2 * ratio * (z + ratio) / (1.0 + var_cav)
    return log_z, mean, var


def _posterior(K: Array, m: Array, tau: Array, nu: Array) -> tuple[Array, Array, Array]:
    """(Sigma, mu, L_B) from the sites (Alg. 3.5 lines 13-15, with prior mean m: mu = m + Sigma (nu - tau m))."""
    s = jnp.sqrt(tau)
    L_B = lg.b_factor(K, tau)
    V = solve_triangular(L_B, s[:, None] * K, lower=True)
    Sigma = K - V.T @ V
    return Sigma, m + Sigma @ (nu - tau * m), L_B


def _site_update(s_i, tau_i, nu_i, sigma_ii, mu_i, damping):
    """The damped new site (tau~_i, nu~_i) from the current marginal (Alg. 3.5 lines 5-9)."""
    tau_cav = 1.0 / sigma_ii - tau_i
    nu_cav = mu_i / sigma_ii - nu_i
    _, mean, var = tilted_moments(s_i, tau_cav, nu_cav)
    tau_new = 1.0 / var - tau_cav
    nu_new = mean / var - nu_cav
    return (1.0 - damping) * tau_new + damping * tau_i, (1.0 - damping) * nu_new + damping * nu_i


def run_ep(m: Array, K: Array, y01: Array, updates: str, damping: float, max_sweeps: int, tolerance: float):
    """EP sites and posterior for prior N(m, K) and labels y01 in {0, 1}.

    Returns (tau~, nu~, Sigma, mu, L_B, sweeps, converged)."""
    s = 2.0 * y01 - 1.0
    N = m.shape[0]

    def sequential_sweep(tau, nu, Sigma, mu):
        def one_site(i, state):
            tau, nu, Sigma, mu = state
            tau_i, nu_i = _site_update(s[i], tau[i], nu[i], Sigma[i, i], mu[i], damping)
            d_tau = tau_i - tau[i]
            col = Sigma[:, i]
            Sigma = Sigma - (d_tau / (1.0 + d_tau * Sigma[i, i])) * jnp.outer(col, col)
            tau, nu = tau.at[i].set(tau_i), nu.at[i].set(nu_i)
            return tau, nu, Sigma, m + Sigma @ (nu - tau * m)

        tau, nu, _, _ = jax.lax.fori_loop(0, N, one_site, (tau, nu, Sigma, mu))
        return tau, nu

    def parallel_sweep(tau, nu, Sigma, mu):
        return _site_update(s, tau, nu, jnp.diagonal(Sigma), mu, damping)

    sweep = sequential_sweep if updates == "sequential" else parallel_sweep

    def step(state):
        tau, nu, Sigma, mu, it, _ = state
        tau_new, nu_new = sweep(tau, nu, Sigma, mu)
        Sigma, mu, _ = _posterior(K, m, tau_new, nu_new)
        change = jnp.maximum(jnp.max(jnp.abs(tau_new - tau)), jnp.max(jnp.abs(nu_new - nu)))
        return tau_new, nu_new, Sigma, mu, it + 1, change

    def running(state):
        *_, it, change = state
        return (it < max_sweeps) & ~(change <= tolerance)

    zeros = jnp.zeros(N)
    tau, nu, Sigma, mu, sweeps, change = jax.lax.while_loop(running, step, (zeros, zeros, K, m, 0, jnp.inf))
    Sigma, mu, L_B = _posterior(K, m, tau, nu)
    return tau, nu, Sigma, mu, L_B, sweeps, change <= tolerance


def log_evidence(m, y01, tau, nu, Sigma, mu, L_B) -> Array:
    """log Z_EP (R&W eq. 3.65 as Alg. 3.6 computes it), in the coordinates g = f - m, with the cavities of the
    final posterior: sum log Z^_i + 1/2 sum log(1 + tau~ / tau_-) - sum log L_ii (terms 4&1)
    + 1/2 nu_g^T (mu - m) - 1/2 sum nu_g^2 / (tau_- + tau~) (5b&2) + 1/2 sum tau_- (tau~ mu_-g^2 - 2 mu_-g nu_g) /
    (tau_- + tau~) (5a), where nu_g = nu~ - tau~ m and mu_-g = mu_- - m (docs/sources/nonconjugate.md#ep-evidence)."""
    s = 2.0 * y01 - 1.0
    sigma_diag = jnp.diagonal(Sigma)
    tau_cav = 1.0 / sigma_diag - tau
    nu_cav = mu / sigma_diag - nu
    log_z, _, _ = tilted_moments(s, tau_cav, nu_cav)
    mu_cav_g = nu_cav / tau_cav - m
    nu_g = nu - tau * m
    total = tau_cav + tau
    return (
        jnp.sum(log_z)
        + 0.5 * jnp.sum(jnp.log1p(tau / tau_cav))
        - jnp.sum(jnp.log(jnp.diagonal(L_B)))
        + 0.5 * nu_g @ (mu - m)
        - 0.5 * jnp.sum(nu_g**2 / total)
        + 0.5 * jnp.sum(tau_cav * (tau * mu_cav_g**2 - 2.0 * mu_cav_g * nu_g) / total)
    )


def fit(view, params, X, y, X_test, updates, damping, max_sweeps, tolerance) -> lg.GaussianFit:
    m, K = view.prior(params, X)
    tau, nu, Sigma, mu, L_B, sweeps, converged = run_ep(m, K, y, updates, damping, max_sweeps, tolerance)
    L_K = jnp.linalg.cholesky(K)
    k_cross, k_diag, m_test = view.cross(params, X, X_test)
    s = jnp.sqrt(tau)
    nu_g = nu - tau * m
    a = nu_g - s * cho_solve((L_B, True), s * (K @ nu_g))  # K^-1 (mu - m) (Alg. 3.6 line 4)
    test_mean = m_test + k_cross.T @ a
    test_var = lg.b_variance(L_B, tau, k_cross, k_diag)
    y_test = view.predictive_mean(params, test_mean, test_var)
    return lg.GaussianFit(
        mu,
        L_K,
        lg.c_factor(L_K, tau),
        log_evidence(m, y, tau, nu, Sigma, mu, L_B),
        test_mean,
        test_var,
        y_test,
        {"sweeps": sweeps, "converged": converged, "site_precision": tau, "site_nu": nu},
    )


def log_evidence_and_grad(view, params, X, y, updates="sequential", damping=0.0, max_sweeps=100, tolerance=1e-10):
    """(log Z_EP, its gradient with respect to ``params``) (R&W eq. 3.80, extended to a prior mean).

    With the sites (tau~, nu~, Z~) fixed, log Z_EP = sum log Z~_i + log N(mu~ | m, K + S~^-1); at an EP fixed point
    log Z_EP is stationary in the site parameters (R&W sec. 3.6.3), so its total derivative in theta is that of
    -1/2 log|K + S~^-1| - 1/2 (mu~ - m)^T (K + S~^-1)^-1 (mu~ - m) = -log|L_B| - 1/2 c^T B^-1 c + const, with
    c = S~^1/2 (mu~ - m) = (nu~ - tau~ m) / sqrt(tau~) and B = I + S~^1/2 K S~^1/2; autodiff of that expression at
    the converged sites gives eq. 3.80's 1/2 tr((b b^T - S~^1/2 B^-1 S~^1/2) dK/dtheta) and the mean's term. Checked
    against finite differences of log Z_EP with EP re-run at each point (tests/test_nonconjugate_comparison.py)."""
    m, K = view.prior(params, X)
    tau, nu, Sigma, mu, L_B, _, _ = run_ep(m, K, y, updates, damping, max_sweeps, tolerance)
    value = log_evidence(m, y, tau, nu, Sigma, mu, L_B)
    tau, nu = jax.lax.stop_gradient(tau), jax.lax.stop_gradient(nu)

    def theta_part(p):
        m_p, K_p = view.prior(p, X)
        L = lg.b_factor(K_p, tau)
        c = (nu - tau * m_p) / jnp.sqrt(tau)
        r = solve_triangular(L, c, lower=True)
        return -jnp.sum(jnp.log(jnp.diagonal(L))) - 0.5 * r @ r

    return value, jax.grad(theta_part)(params)


@program_cache
def ep_program(view, updates, damping, max_sweeps, tolerance, num_chains, num_samples):
    def run(key, params, X, y, X_test):
        result = fit(view, params, X, y, X_test, updates, damping, max_sweeps, tolerance)
        f_draws = lg.draws(key, result, num_chains, num_samples)
        return result, jax.vmap(jax.vmap(lambda f: view.to_sites(params, X, f)))(f_draws)

    return jax.jit(run)


@program_cache
def ep_ml2_program(view, updates, damping, max_sweeps, tolerance, layout: tuple):
    def evidence(params, X, y):
        return log_evidence_and_grad(view, params, X, y, updates, damping, max_sweeps, tolerance)

    return type2.loss_program(evidence, layout)


@register_engine(
    "ep",
    requires={"latent_gp", "probit"},
    options={
        "num_chains": opt.num_chains(4),
        "num_samples": opt.num_samples(1000, doc="draws per chain from the EP posterior"),
        "params": opt.params(),
        "updates": opt.choice("sequential", UPDATES, "site updates: sequential (Alg. 3.5) or parallel"),
        "damping": Option("float", 0.0, "weight of the old site in each update", minimum=0.0, below=1.0),
        "max_sweeps": Option("int", 100, "sweeps over all sites at most", minimum=1),
        "tolerance": Option("float", 1e-10, "stop when no site parameter moves more than this in a sweep", above=0.0),
        **type2.options(),
    },
    summary="Expectation propagation for probit GP classification (R&W Alg. 3.5/3.6), log Z_EP; fixed or ML-II hypers",
    params_role=conditions_unless_ml2,
)
def ep(spec, dataset, key, timer, **options) -> EngineOutput:
    view = spec.views["latent_gp"]
    program = ep_program(
        view,
        options["updates"],
        options["damping"],
        options["max_sweeps"],
        options["tolerance"],
        options["num_chains"],
        options["num_samples"],
    )
    X, y = jnp.asarray(dataset.observed["X"]), jnp.asarray(dataset.observed["y"])
    params, fitted = options["params"], {}
    if options["hyperparameters"] == "ml2" and params:
        layout = type2.layout_of(spec, dataset, params)
        static = (options["updates"], options["damping"], options["max_sweeps"], options["tolerance"])
        loss = ep_ml2_program(view, *static, layout)
        params, fitted = type2.maximise(
            loss, layout, params, X, y, timer, options["ml2_steps"], options["ml2_tolerance"]
        )
    result, sites = timer.call(program, key, params, X, y, held_out_inputs(dataset, X))
    out = lg.output(result, sites, options["num_chains"], fitted)
    out.num_lik_evals = int(result.stats["sweeps"]) * X.shape[0]
    return out
