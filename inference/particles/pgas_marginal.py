"""PGAS on the non-Markov full GP-SSM (M9, f integrated out): the trajectory kernel of the fully Bayesian GP-SSM of
Frigola, Lindsten, Schön & Rasmussen 2013 (M12, McHutchon eqs. 3.45-3.47; docs/sources/mchutchon.md#pmcmc-bayes),
used by the ``pgas`` and ``pmcmc`` engines on models offering the ``marginal_gp_ssm`` view.

With f marginalised, x_t depends on the whole history: p(x_t | x_{1:t-1}) is the GP predictive given the history's
t-2 transitions x_s -> x_{s+1} (s < t-1), evaluated at x^_{t-1} (McHutchon eqs. 3.15-3.17, process noise added; the
view's ``history_predictive``). The conditional SMC sweep therefore carries whole particle histories (N, T, D), and
resampling copies histories (Lindsten, Jordan & Schön 2014, JMLR 15, sec. on non-Markovian models).

One sweep for one trajectory, given the reference x'_{1:T} (particle N-1 below), fully adapted (the emission is
y_t = x_t + N(0, diag(obs_var)), and p(x_t | x_{1:t-1}) is Gaussian, diagonal over outputs, so p(y_t | x_{1:t-1}) and
p(x_t | x_{1:t-1}, y_t) are Gaussian too):

1. x_1^i ~ p(x_1 | y_1) for i < N-1, x_1^{N-1} = x'_1 (as in ``inference.particles.pgas``).
2. for t = 2..T: predictive N(mu_i, s_i) = p(x_t | x^i_{1:t-1}) per particle; resampling weights
   v^i ∝ W_{t-1}^i p(y_t | x^i_{1:t-1}) = N(y_t; mu_i, s_i + obs_var); a_t^i ~ Cat(v) for i < N-1;
   **ancestor sampling** for the reference with whole-history weights (Lindsten et al. 2014):
       P(a_t^{N-1} = j) ∝ W_{t-1}^j γ_T(x^j_{1:t-1}, x'_{t:T}) / γ_{t-1}(x^j_{1:t-1})
                        ∝ W_{t-1}^j p(x'_{t:T} | x^j_{1:t-1}) = W_{t-1}^j p(x^j_{1:t-1}, x'_{t:T}) / p(x^j_{1:t-1}),
   where γ_{t-1}(x_{1:t-1}) = p(x_{1:t-1}, y_{1:t}) is the fully adapted filter's target (its weights are the
   predictives above), so the y-terms cancel and W_{t-1} is uniform, exactly as p(x'_t | x_{t-1}^j) in the Markov
   case (corrected ancestor weights, docs/sources/mchutchon.md#pgas); then
   x_t^i ~ N(mu_a + s_a (y_t - mu_a) / (s_a + r), s_a r / (s_a + r)) for i < N-1 (a = a_t^i), x_t^{N-1} = x'_t.
3. b uniform (final weights equal under full adaptation); history b is the next reference.
Unobserved (padded) steps: resampling weights W, proposal = the predictive.

Densities: both p(x^j_{1:t-1}, x'_{t:T}) and p(x^j_{1:t-1}) are the exact marginal-GP joint of M9 (eq. 3.27, p(x_1)
cancels), evaluated by one Cholesky factorisation each of the (T-1) x (T-1) kernel matrix of the path, the
history's inactive coordinates masked to the identity (``zoo.gpssm.transition_factors``); the history's factor also
gives its predictive (``history_terms``), so a step costs two factorisations per particle and output. No truncation
of the ancestor weights (Lindsten et al. discuss truncating them; unnecessary here). Cost O(N T^4 D) per sweep, against
O(N T^3 D) for incremental Cholesky updates; chosen because T is small (10-20) in the GP-SSM experiments, the
fixed-shape masked factorisation vectorises over particles and steps without dynamic shapes, and the weights are
then literally the ratio of two evaluations of the program's own density (tested against NumPyro's log_density).
Measured (CPU, one trajectory): 13.5 ms per sweep at T = 20, N = 100; 0.7 ms at T = 10, N = 20. The engines'
defaults (4 chains x 1100 sweeps) on all 20 kink trajectories therefore cost ~20 CPU-minutes: use fewer particles
(ancestor sampling mixes well with N = 5-20) or fewer trajectories.
"""

import jax
import jax.numpy as jnp
from blackjax.smc import resampling
from jax.scipy.stats import norm

from zoo import ssm

VIEW = "marginal_gp_ssm"


def adapted_initial(theta, key, y1, observed, num_particles: int):
    """N draws (N, D) of p(x_1 | y_1) (x_1 ~ N(m0, P0), y_1 = x_1 + N(0, diag(obs_var))); of p(x_1) if unobserved."""
    D = theta.m0.shape[0]
    post_mean, post_cov, _ = ssm.condition_on_observation(
        theta.m0, theta.P0, y1, jnp.eye(D), jnp.zeros(D), jnp.diag(theta.obs_var)
    )
    mean = jnp.where(observed, post_mean, theta.m0)
    cov = jnp.where(observed, post_cov, theta.P0)
    chol = jnp.linalg.cholesky(cov + 1e-12 * jnp.eye(D))
    return mean + jax.random.normal(key, (num_particles, D)) @ chol.T


def predictive_each(view, theta, histories, u, t):
    """p(x_t | x^i_{1:t-1}) for every particle (0-based index t >= 1: the state after the history histories[i, :t]):
    histories (N, T, D), u (T, U) -> mean, var (N, D), and each history's own dynamics density (N,) (one
    factorisation per particle for both)."""
    return jax.vmap(lambda h: view.history_terms(theta, h, u, t))(histories)


def fully_adapted(mean, var, obs_var, y_t, observed):
    """Fully adapted pieces from the predictive N(mean, var) (N, D) and y_t = x_t + N(0, obs_var (D,)):
    log p(y_t | x^i_{1:t-1}) (N,) and the moments (N, D), (N, D) of p(x_t | x^i_{1:t-1}, y_t); on an unobserved
    step 0 and the predictive itself."""
    total = var + obs_var
    log_pred = jnp.sum(norm.logpdf(y_t, mean, jnp.sqrt(total)), axis=-1)
    gain = var / total
    post_mean, post_var = mean + gain * (y_t - mean), var * obs_var / total
    return (
        jnp.where(observed, log_pred, 0.0),
        jnp.where(observed, post_mean, mean),
        jnp.where(observed, post_var, var),
    )


def ancestor_log_weights(view, theta, histories, reference, u, t, history_log_density=None):
    """log p(x'_{t:T} | x^j_{1:t-1}) + const (N,) = log p(x^j_{1:t-1}, x'_{t:T}) - log p(x^j_{1:t-1}), the whole-history
    ancestor weights of non-Markov PGAS (Lindsten, Jordan & Schön 2014) under uniform W_{t-1}.

    histories (N, T, D) (entries from t on ignored), reference (T, D), u (T, U), 0-based t >= 1. Both terms are the
    M9 dynamics density (p(x_1) is common to both and dropped): the joined path over all T-1 transitions, the history
    over its first t-1 (``history_log_density`` (N,) when already computed, e.g. by ``predictive_each``)."""
    T = reference.shape[0]
    before = (jnp.arange(T) < t)[:, None]
    joined = jax.vmap(lambda h: view.dynamics_log_density(theta, jnp.where(before, h, reference), u, T - 1))
    if history_log_density is None:
        history_log_density = jax.vmap(lambda h: view.dynamics_log_density(theta, h, u, t - 1))(histories)
    return joined(histories) - history_log_density


def conditional_smc_sweep(view, theta, key, reference, y, mask, u, num_particles: int):
    """One PGAS sweep (fully adapted conditional SMC with whole histories and whole-history ancestor sampling) for one
    trajectory: reference (T, D), y (T, D), mask (T,) bool, u (T, U) -> a path (T, D) drawn uniformly from the final
    histories (the next reference)."""
    N = num_particles
    T, D = y.shape
    k0, k_scan, k_pick = jax.random.split(key, 3)
    x0 = adapted_initial(theta, k0, y[0], mask[0], N).at[N - 1].set(reference[0])
    histories = jnp.zeros((N, T, D)).at[:, 0].set(x0)

    def step(histories, inputs):
        k, t = inputs
        k_anc, k_ref, k_prop = jax.random.split(k, 3)
        mean, var, log_history = predictive_each(view, theta, histories, u, t)
        log_v, prop_mean, prop_var = fully_adapted(mean, var, theta.obs_var, y[t], mask[t])
        anc = resampling.multinomial(k_anc, jax.nn.softmax(log_v), N - 1)
        log_as = ancestor_log_weights(view, theta, histories, reference, u, t, log_history)
        anc = jnp.append(anc, jax.random.categorical(k_ref, log_as).astype(anc.dtype))
        x = prop_mean[anc] + jnp.sqrt(prop_var[anc]) * jax.random.normal(k_prop, (N, D))
        return histories[anc].at[:, t].set(x.at[N - 1].set(reference[t])), None

    steps = jnp.arange(1, T)
    histories, _ = jax.lax.scan(step, histories, (jax.random.split(k_scan, T - 1), steps))
    return histories[jax.random.randint(k_pick, (), 0, N)]


def initial_reference(view, theta, key, y, mask, u, num_particles: int):
    """The starting reference path (T, D): the observations themselves (y_t = x_t + noise, so y is a plausible path;
    padded steps hold the padding). Any start is valid for the PGAS kernel; this one costs no extra compiled filter
    (an unconditional whole-history filter would double the compile time), and warm-up sweeps forget it."""
    return y


def log_joint(view, theta, states, observed):
    """log p(x_{1:T}, y_{1:T} | theta) summed over trajectories; states (K, T, D)."""
    y, mask, u = ssm.trajectories(observed)
    return jnp.sum(jax.vmap(lambda s, yk, mk, uk: view.log_joint(theta, s, yk, mk, uk))(states, y, mask, u))
