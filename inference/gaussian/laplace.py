"""``laplace``: the Laplace approximation of a latent GP at fixed hyperparameters (Rasmussen & Williams 2006,
sec. 3.4; docs/sources/nonconjugate.md#laplace).

- Mode: Newton's method on Psi(f) = log p(y|f) - (f - m)^T K^-1 (f - m) / 2 in the stable form of Algorithm 3.1
  (B = I + W^1/2 K W^1/2, a = K^-1 (f - m) carried so that K is never inverted), with a prior mean m.
- ``damping="none"``: Algorithm 3.1's full Newton steps; only for log-concave likelihoods (W >= 0), refused
  before compiling for a likelihood that is not (Student-t), where B may be indefinite.
- ``damping="line-search"``: the Newton direction with the true W when K^-1 + W is positive definite, else with
  W clipped at 0 (an ascent direction either way), and a backtracking line search (halving) that accepts the
  first step that does not decrease Psi. ``auto`` (default) is ``none`` for log-concave likelihoods and
  ``line-search`` otherwise.
- Approximate log marginal likelihood, eq. 3.32 / Alg. 3.1 line 10: -a^T (f^ - m) / 2 + log p(y|f^) - log|B|/2,
  with |B| = |C| for the general case (``inference.gaussian.latent_gaussian``). Reported NaN when the stationary
  point found is not a maximum (C not positive definite).
- Predictions (Algorithm 3.2): E[f*] = m* + k*^T grad log p(y|f^) (eq. 3.21), V[f*] = k** - v^T v with
  v = L_B \\ W^1/2 k* (eq. 3.24), and E[y*] by the likelihood (Phi(mean / sqrt(1 + var)) for probit, Gauss-Hermite
  for the logit integral eq. 3.25).
- Gradient of the approximate evidence with respect to the hyperparameters: ``log_evidence_and_grad``, Algorithm
  5.1's quantity obtained by autodiff (see its docstring for how the implicit dependence through f^ enters).

Draws of the latent sites come from N(f^, (K^-1 + W)^-1); the hyperparameters are fixed (``params``, else the
model's defaults) or, with ``hyperparameters="ml2"``, maximise the approximate evidence from there (type-II ML by
L-BFGS with ``log_evidence_and_grad``, ``inference.gaussian.type2``).
"""

from typing import Any

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_solve, solve_triangular

from inference.core import options as opt
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.fixed import conditions_unless_ml2
from inference.gaussian import latent_gaussian as lg
from inference.gaussian import type2
from zoo.errors import OptionError
from zoo.options import Option

Array = Any

__all__ = ["DAMPING", "damping_of", "find_mode", "fit", "held_out_inputs", "laplace", "log_evidence_and_grad"]

DAMPING = ("auto", "none", "line-search")
MAX_HALVINGS = 30  # step 2^-30 of a Newton step: below that the direction is no ascent at float64 resolution


def _newton_step_b(K, m, f, d1, d2):
    """Algorithm 3.1 lines 4-8 with a prior mean: returns (f_new, a_new)."""
    w = -d2
    s = jnp.sqrt(w)
    L_B = lg.b_factor(K, w)
    b = w * (f - m) + d1
    a = b - s * cho_solve((L_B, True), s * (K @ b))
    return m + K @ a, a


def _newton_step_c(L_K, m, f, d1, d2):
    """The Newton step in the C form (module docstring of ``latent_gaussian``), with W clipped at 0 when K^-1 + W
    is not positive definite: returns (f_new, a_new)."""
    w = -d2
    L_C = lg.c_factor(L_K, w)
    indefinite = jnp.isnan(L_C).any()
    w = jnp.where(indefinite, jnp.maximum(w, 0.0), w)
    L_C = jnp.where(indefinite, lg.c_factor(L_K, w), L_C)
    b = w * (f - m) + d1
    u = cho_solve((L_C, True), L_K.T @ b)
    return m + L_K @ u, solve_triangular(L_K, u, lower=True, trans=1)


def find_mode(view, params, X, y, damped: bool, max_iterations: int, tolerance: float):
    """Newton's method for f^ = argmax Psi(f) from f = m. Returns (f, a = K^-1 (f - m), iterations, converged);
    converged when the largest change of f in one step is at most ``tolerance``."""
    m, K = view.prior(params, X)
    L_K = jnp.linalg.cholesky(K)

    def log_lik(f):
        return view.log_likelihood(params, f, y)

    def psi(f, a):
        return -0.5 * a @ (f - m) + log_lik(f).sum()

    def step(state):
        f, a, it, _ = state
        _, d1, d2 = lg.derivatives(log_lik, f)
        if not damped:
            f_new, a_new = _newton_step_b(K, m, f, d1, d2)
        else:
            f_prop, a_prop = _newton_step_c(L_K, m, f, d1, d2)
            psi0 = psi(f, a)

            def shorter(t):
                return t * 0.5

            def worse(t):
                value = psi(f + t * (f_prop - f), a + t * (a_prop - a))
                return (~(value >= psi0)) & (t > 2.0**-MAX_HALVINGS)

            t = jax.lax.while_loop(worse, shorter, 1.0)
            f_new, a_new = f + t * (f_prop - f), a + t * (a_prop - a)
        change = jnp.max(jnp.abs(f_new - f))
        return f_new, a_new, it + 1, change

    def running(state):
        _, _, it, change = state
        return (it < max_iterations) & ~(change <= tolerance)

    f0 = m
    f, a, iterations, change = jax.lax.while_loop(running, step, (f0, jnp.zeros_like(m), 0, jnp.inf))
    return f, a, iterations, change <= tolerance


def fit(view, params, X, y, X_test, damped: bool, log_concave: bool, max_iterations: int, tolerance: float):
    """The Laplace approximation at ``params`` (a ``GaussianFit``), with Algorithm 3.2's predictions at X_test."""
    m, K = view.prior(params, X)
    L_K = jnp.linalg.cholesky(K)
    f, a, iterations, converged = find_mode(view, params, X, y, damped, max_iterations, tolerance)
    log_lik, d1, d2 = lg.derivatives(lambda g: view.log_likelihood(params, g, y), f)
    w = -d2
    L_C = lg.c_factor(L_K, w)
    maximum = ~jnp.isnan(L_C).any()
    log_det = 2.0 * jnp.sum(jnp.log(jnp.diagonal(L_C)))  # log|B| = log|C|
    log_evidence = jnp.where(maximum, -0.5 * a @ (f - m) + log_lik.sum() - 0.5 * log_det, jnp.nan)
    k_cross, k_diag, m_test = view.cross(params, X, X_test)
    test_mean = m_test + k_cross.T @ d1  # eq. 3.21
    if log_concave:  # Algorithm 3.2 as printed
        test_var = lg.b_variance(lg.b_factor(K, w), w, k_cross, k_diag)
    else:  # W may be negative: V = k** - u^T u + u^T C^-1 u, u = L_K^-1 k* (latent_gaussian's C form)
        u = solve_triangular(L_K, k_cross, lower=True)
        r = solve_triangular(L_C, u, lower=True)
        test_var = k_diag - jnp.sum(u**2, axis=0) + jnp.sum(r**2, axis=0)
    stats = {"iterations": iterations, "converged": converged & maximum}
    y_test = view.predictive_mean(params, test_mean, test_var)
    return lg.GaussianFit(f, L_K, L_C, log_evidence, test_mean, test_var, y_test, stats)


def log_evidence_and_grad(view, params, X, y, damped=None, max_iterations=100, tolerance=1e-10):
    """(log q(y | X, theta), its gradient with respect to ``params``): Algorithm 5.1's quantities.

    The evidence Z(theta, f^(theta)) depends on theta directly and through the mode. The direct part is the gradient
    of Z at the mode held fixed (Alg. 5.1 line 8's first two terms, s1). At the mode dPsi/df = 0, so f^ enters only
    through log|B| (W depends on f^): the implicit part is s2^T df^/dtheta, with s2 = d(-log|B|/2)/df^ =
    +1/2 diag((K^-1 + W)^-1) d^3 log p/df^3 (docs/sources/nonconjugate.md#laplace-gradient on the sign), and
    df^/dtheta = (I + K W)^-1 d(m + K grad log p)/dtheta at fixed f^ (eq. 5.24, extended to a prior mean and to
    the likelihood's own hyperparameters, which R&W do not treat). So the implicit part is the gradient of
    r^T (m(theta) + K(theta) grad log p(y | f^, theta)) with r = (I + W K)^-1 s2 held fixed: autodiff gives Alg.
    5.1's sum over dK/dtheta_j without forming each. Checked against finite differences (tests/test_nonconjugate.py).
    """
    damped = (not view.likelihood.log_concave) if damped is None else damped
    f_hat, _, _, _ = find_mode(view, params, X, y, damped, max_iterations, tolerance)
    f_hat = jax.lax.stop_gradient(f_hat)

    def loglik(g):
        return view.log_likelihood(params, g, y)

    def third(g):  # d^3/df^3 of the elementwise log-likelihood (diagonal), by nested jvp
        return jax.jvp(lambda h: lg.derivatives(loglik, h)[2], (g,), (jnp.ones_like(g),))[1]

    def explicit(p):
        m, K = view.prior(p, X)
        L_K = jnp.linalg.cholesky(K)
        a = cho_solve((L_K, True), f_hat - m)
        log_lik, _, d2 = lg.derivatives(lambda g: view.log_likelihood(p, g, y), f_hat)
        L_C = lg.c_factor(L_K, -d2)
        return -0.5 * a @ (f_hat - m) + log_lik.sum() - jnp.sum(jnp.log(jnp.diagonal(L_C)))

    value, direct = jax.value_and_grad(explicit)(params)
    m, K = view.prior(params, X)
    L_K = jnp.linalg.cholesky(K)
    _, d1, d2 = lg.derivatives(loglik, f_hat)
    w = -d2
    L_C = lg.c_factor(L_K, w)
    sigma_diag = jnp.sum(solve_triangular(L_C, L_K.T, lower=True) ** 2, axis=0)  # diag(L_K C^-1 L_K^T)
    s2 = 0.5 * sigma_diag * third(f_hat)  # sign: docs/sources/nonconjugate.md#laplace-gradient
    # r = (I + W K)^-1 s2 = K^-1 Sigma s2 ... computed as s2 - W Sigma s2 (since (I + W K)^-1 = I - W (K^-1 + W)^-1)
    sigma_s2 = L_K @ cho_solve((L_C, True), L_K.T @ s2)
    r = jax.lax.stop_gradient(s2 - w * sigma_s2)

    def implicit(p):
        # m + K grad log p(y | f^): its derivative at fixed f^ is (I + K W) df^/dtheta, for the kernel's and the
        # mean's hyperparameters (eq. 5.24) and for the likelihood's own (the Student-t scale) alike.
        m_p, K_p = view.prior(p, X)
        _, grad_p, _ = lg.derivatives(lambda g: view.log_likelihood(p, g, y), f_hat)
        return r @ (m_p + K_p @ grad_p)

    indirect = jax.grad(implicit)(params)
    return value, jax.tree.map(jnp.add, direct, indirect)


@program_cache
def laplace_program(view, damped: bool, max_iterations: int, tolerance: float, num_chains: int, num_samples: int):
    def run(key, params, X, y, X_test):
        result = fit(view, params, X, y, X_test, damped, view.likelihood.log_concave, max_iterations, tolerance)
        f_draws = lg.draws(key, result, num_chains, num_samples)
        return result, jax.vmap(jax.vmap(lambda f: view.to_sites(params, X, f)))(f_draws)

    return jax.jit(run)


@program_cache
def laplace_ml2_program(view, damped: bool, max_iterations: int, tolerance: float, layout: tuple):
    def evidence(params, X, y):
        return log_evidence_and_grad(view, params, X, y, damped, max_iterations, tolerance)

    return type2.loss_program(evidence, layout)


def damping_of(view, damping: str, engine: str = "laplace") -> bool:
    """Whether to damp; a OptionError, before compiling, for undamped Newton on a non-log-concave likelihood."""
    if damping == "auto":
        return not view.likelihood.log_concave
    if damping == "none" and not view.likelihood.log_concave:
        raise OptionError(
            f"{engine}: the {view.likelihood.name} likelihood is not log-concave, so W = -d^2 log p(y|f)/df^2 is "
            "negative for outlying points and B = I + W^1/2 K W^1/2 is not positive definite: Algorithm 3.1's "
            "undamped Newton does not apply. Use damping='line-search' (or 'auto')."
        )
    return damping == "line-search"


def held_out_inputs(dataset, X) -> Array:
    """The test inputs of ``dataset`` (M, D), or an empty (0, D) array."""
    return jnp.asarray(dataset.test["X"]) if "X" in dataset.test else jnp.zeros((0, X.shape[1]))


@register_engine(
    "laplace",
    requires={"latent_gp"},
    options={
        "num_chains": opt.num_chains(4),
        "num_samples": opt.num_samples(1000, doc="draws per chain from the Gaussian approximation"),
        "params": opt.params(),
        "damping": opt.choice("auto", DAMPING, "Newton damping: none (Alg. 3.1), line-search, auto (by log-concavity)"),
        "max_iterations": Option("int", 100, "Newton iterations at most", minimum=1),
        "tolerance": Option("float", 1e-10, "stop when no f_i moves more than this in one step", above=0.0),
        **type2.options(),
    },
    summary="Laplace approximation of a latent GP (R&W Alg. 3.1/3.2), log evidence eq. 3.32; fixed or ML-II hypers",
    params_role=conditions_unless_ml2,
)
def laplace(spec, dataset, key, timer, **options) -> EngineOutput:
    view = spec.views["latent_gp"]
    damped = damping_of(view, options["damping"])
    program = laplace_program(
        view, damped, options["max_iterations"], options["tolerance"], options["num_chains"], options["num_samples"]
    )
    X, y = jnp.asarray(dataset.observed["X"]), jnp.asarray(dataset.observed["y"])

    params, fitted = options["params"], {}
    if options["hyperparameters"] == "ml2" and params:
        layout = type2.layout_of(spec, dataset, params)
        loss = laplace_ml2_program(view, damped, options["max_iterations"], options["tolerance"], layout)
        params, fitted = type2.maximise(
            loss, layout, params, X, y, timer, options["ml2_steps"], options["ml2_tolerance"]
        )
    result, sites = timer.call(program, key, params, X, y, held_out_inputs(dataset, X))
    out = lg.output(result, sites, options["num_chains"], fitted)
    out.num_lik_evals = int(result.stats["iterations"]) + 1
    return out
