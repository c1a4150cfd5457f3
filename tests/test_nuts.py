"""``inference.mcmc.nuts``: warm-up and sampling in one scan give the draws of BlackJAX's ``window_adaptation``
followed by
a sampling scan of the tuned kernel (the composition its documentation shows)."""

import blackjax
import jax
import numpy as np
from numpyro.infer.util import constrain_fn, potential_energy

import zoo
from inference.core.api import Timer
from inference.core.program import conditioned_program, observed_args
from inference.mcmc import nuts, starts

NUM_WARMUP, NUM_SAMPLES = 30, 20


def window_adaptation_then_sampling(model, algorithm, observed, key, z0, extra):
    """One chain the documented way: ``window_adaptation(...).run``, then a scan of the tuned kernel."""

    def logdensity(z):
        return -potential_energy(model, ({},), observed, z)

    kernel = getattr(blackjax, algorithm)
    k_warm, k_sample = jax.random.split(key)
    warmup = blackjax.window_adaptation(kernel, logdensity, target_acceptance_rate=0.8, **extra)
    (state, tuned), _ = warmup.run(k_warm, z0, num_steps=NUM_WARMUP)
    step = kernel(logdensity, **tuned).step

    def one_step(state, k):
        state, info = step(k, state)
        return state, (state.position, info.num_integration_steps)

    return jax.lax.scan(one_step, state, jax.random.split(k_sample, NUM_SAMPLES))[1]


def test_one_scan_equals_window_adaptation_then_sampling():
    """NUTS only: HMC differs in the kernel BlackJAX builds, not in this module's scan."""
    algorithm, extra = "nuts", {"max_num_doublings": 6}
    spec = zoo.get("blr")
    model, observed = conditioned_program(spec), observed_args(spec.simulate(jax.random.key(0), n=12))
    z0 = starts.initial_positions(model, jax.random.key(1), 1, {}, observed, 2.0)
    keys = jax.random.split(jax.random.key(2), 1)
    static = tuple(sorted({"target_accept": 0.8, "dense_mass": False, **extra}.items()))
    chains = nuts.sampler(model, algorithm, NUM_WARMUP, NUM_SAMPLES, static)
    draws, stats, _, _ = chains.run(Timer(), (keys, z0), {}, observed)

    @jax.jit
    def reference(key, z):
        positions, n_steps = window_adaptation_then_sampling(model, algorithm, observed, key, z, extra)
        return jax.vmap(lambda z: constrain_fn(model, ({},), observed, z))(positions), n_steps

    expected, n_steps = reference(keys[0], jax.tree.map(lambda x: x[0], z0))
    np.testing.assert_array_equal(stats["n_steps"][0], n_steps)
    for site, value in expected.items():  # equal up to rounding: two programs may fuse differently
        np.testing.assert_allclose(draws[site][0], value, rtol=1e-12, atol=1e-14)
