"""A Bayesian linear regression whose every gradient of the log density is counted, for the tests of the engines'
reported gradient counts (docs/gym.md#engines).

The mean is a ``custom_vjp`` function whose forward pass (run once per gradient of the log density, never for a
value alone) tells ``COUNTER`` through ``jax.debug.callback``. The start search is not the engine's (it evaluates
values and gradients to find finite starts), so ``count_after_starts`` resets the counter after it.
"""

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from inference.mcmc import gym_common
from inference.mcmc.pathfinder import GradientCounter

NOISE = 0.5
COUNTER = GradientCounter()


@jax.custom_vjp
def counted_mean(X, w):
    return X @ w


def _forward(X, w):
    jax.debug.callback(COUNTER.add, w)
    return X @ w, (X, w)


def _backward(residuals, g):
    X, w = residuals
    return jnp.outer(g, w), X.T @ g


counted_mean.defvjp(_forward, _backward)


def counted_blr(X, y=None):
    """y ~ N(X w, NOISE^2), w ~ N(0, I_3). X: (N, 3)."""
    w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([3]).to_event(1))
    numpyro.sample("y", dist.Normal(counted_mean(X, w), NOISE), obs=y)


def count_after_starts(monkeypatch) -> None:
    """Restart ``COUNTER`` once the engine's uniform start search has found its starts."""
    search = gym_common.starts

    def starts_then_reset(*args, **kwargs):
        z0 = search(*args, **kwargs)
        jax.effects_barrier()
        COUNTER.count = 0
        return z0

    monkeypatch.setattr(gym_common, "starts", starts_then_reset)
