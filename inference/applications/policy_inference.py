"""Policy search as variational inference (Kaiser 2021, sec. 6.3, eqs. 6.3-6.9;
docs/sources/kaiser.md#policy-inference).

The optimal policy pi* gets a GP prior and a sparse variational posterior q(pi*) (whitened inducing values v,
q(v) = N(m, L L^T) at fixed inducing states Z). With the rewards' maximum 0, the value of a T-step roll-out
J = sum_{t=1}^T r(s_t) is at most J^max = 0, and an exponential likelihood p(J^max | J) = lambda exp(lambda J)
(6.8) gives the bound (6.7) on the marginal likelihood of the optimal value,
    log p(J* | s_0) >= lambda E_{q(J)}[J] - T KL(q(pi*) || p(pi*)) + log lambda (- T KL(q(f) || p(f))),   (6.7, 6.9)
the dynamics model's KL a constant here (the model is trained first and fixed). Samples of J come from ancestral
roll-outs in the dynamics model: at every step the policy's latent is drawn from its marginal under q (DSVI-style,
eq. 2.88), the action is tanh of it (actions in [-1, 1]; our choice), and the model draws the next state. Adam on
(m, L) by the reparameterised gradient, every step a fresh batch of start states and draws; one ``lax.scan``
(``adam_scan``), recording q after every step so that the belief can be shown after any number of steps.
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from inference.optimisation import adam_scan
from zoo import sparse as sp
from zoo.kernels import Kernel

__all__ = ["InferenceSettings", "PolicyPrior", "bound", "policy_belief", "policy_inference"]

Array = Any


class InferenceSettings(NamedTuple):
    """horizon T, particles P (roll-outs per step), the likelihood's rate lambda (6.8; the thesis: 1), Adam's
    learning rate and steps (the thesis gives no optimiser settings)."""

    horizon: int = 150
    particles: int = 10
    rate: float = 1.0
    learning_rate: float = 0.05
    steps: int = 500


class PolicyPrior(NamedTuple):
    """The GP prior of the policy's latent on scaled states: kernel and inducing states Z (M, S)."""

    kernel: Kernel
    Z: Array


def policy_belief(q: sp.WhitenedQ, prior: PolicyPrior, states: Array) -> tuple[Array, Array]:
    """Mean and variance (n,) of the policy's latent under q at scaled states (n, S)."""
    post = sp.sparse_predict(prior.kernel, prior.Z, q, states)
    return post.mean, jnp.maximum(post.cov, 0.0)


def bound(q: sp.WhitenedQ, prior: PolicyPrior, model_step, reward, scale, s0: Array, key, settings: InferenceSettings):
    """One sample estimate of the bound (6.7/6.9) without its constants, from P roll-outs starting at s0 (P, S):
    lambda mean_p J_p - T KL(q || p). model_step(s, a, key) -> s'; reward(s) -> (P,); scale(s) -> scaled states."""

    def one(s, k):
        k_pi, k_f = jax.random.split(k)
        mean, var = policy_belief(q, prior, scale(s))
        action = jnp.tanh(mean + jnp.sqrt(var) * jax.random.normal(k_pi, mean.shape))
        s_next = model_step(s, action, k_f)
        return s_next, reward(s_next)

    _, rewards = jax.lax.scan(one, s0, jax.random.split(key, settings.horizon))
    return settings.rate * rewards.sum(0).mean() - settings.horizon * sp.kl_whitened(q)


def policy_inference(key, prior: PolicyPrior, model_step, reward, scale, start, settings: InferenceSettings):
    """Maximise the bound from q = p (m = 0, L = I). start(key, P) -> start states (P, S). Returns q after every Adam
    step (stacked: mean (steps, M), scale_tril (steps, M, M)) and the bound's estimate before each step (steps,)."""
    M = prior.Z.shape[0]
    q0 = (jnp.zeros(M), jnp.zeros((M, M)))  # (m, the lower triangle's offset from I)

    def as_q(z):
        return sp.WhitenedQ(z[0], jnp.eye(M) + jnp.tril(z[1]))

    def gradient(z, k):
        k_s, k_roll = jax.random.split(k)
        s0 = start(k_s, settings.particles)
        value, grad = jax.value_and_grad(
            lambda z_: -bound(as_q(z_), prior, model_step, reward, scale, s0, k_roll, settings)
        )(z)
        q = as_q(z)
        return grad, (-value, q.mean, q.scale_tril)

    _, (values, means, trils) = adam_scan(gradient, q0, settings.learning_rate, jax.random.split(key, settings.steps))
    return sp.WhitenedQ(means, trils), values
