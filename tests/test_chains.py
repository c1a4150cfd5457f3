"""``inference.core.chains``: chains vmapped over their own inputs, shared arguments unbatched, compiled once."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import inference
import zoo
from inference.core.api import Timer
from inference.core.chains import vmapped_chains
from inference.core.program import conditioned_program, observed_args
from inference.mcmc import starts
from inference.particles import pgas


def one_chain(key, scale, offset):
    return {"draw": scale * jax.random.normal(key, (3,)) + offset, "first": offset[0]}


def test_outputs_stack_one_chain_per_key():
    keys = jax.random.split(jax.random.key(0), 4)
    scale, offset = jnp.asarray(2.0), jnp.arange(3.0)
    out = vmapped_chains(one_chain).run(Timer(), keys, scale, offset)
    assert out["draw"].shape == (4, 3) and out["first"].shape == (4,)
    for c in range(4):  # equal up to fused multiply-add: the compiled program may fuse what eager code does not
        np.testing.assert_allclose(out["draw"][c], one_chain(keys[c], scale, offset)["draw"], rtol=1e-14)


def test_per_chain_pytree_input():
    keys = jax.random.split(jax.random.key(1), 2)
    starts = jnp.array([10.0, 20.0])
    out = vmapped_chains(lambda own, shift: own[1] + shift + 0 * jax.random.uniform(own[0])).run(
        Timer(), (keys, starts), jnp.asarray(1.0)
    )
    np.testing.assert_array_equal(out, [11.0, 21.0])


def test_second_run_of_the_same_chains_compiles_nothing():
    chains = vmapped_chains(one_chain)
    args = (jnp.asarray(1.0), jnp.zeros(3))
    chains.run(Timer(), jax.random.split(jax.random.key(2), 3), *args)
    again = Timer()
    chains.run(again, jax.random.split(jax.random.key(3), 3), *args)  # other seeds, same shapes
    assert again.compile_s == 0.0 and again.run_s > 0.0


def test_engine_factories_return_the_same_program():
    """Engines build their chains in functools.cache-d factories, so Timer's (program, shapes) key hits."""
    view = object()  # hashable; nothing is traced
    assert pgas.pgas_runner(view, 10, 0, 5).program is pgas.pgas_runner(view, 10, 0, 5).program


def test_sequential_chains_equal_the_vmapped_ones():
    """``sequential=True`` runs the same per-chain computation one chain after another (lax.map)."""
    keys = jax.random.split(jax.random.key(4), 3)
    chains, args = vmapped_chains(one_chain), (jnp.asarray(2.0), jnp.arange(3.0))
    vmapped = chains.run(Timer(), keys, *args)
    sequential = chains.run(Timer(), keys, *args, sequential=True)
    np.testing.assert_allclose(sequential["draw"], vmapped["draw"], rtol=1e-14)
    np.testing.assert_array_equal(sequential["first"], vmapped["first"])
    again = Timer()
    chains.run(again, jax.random.split(jax.random.key(5), 3), *args, sequential=True)
    assert again.compile_s == 0.0


# The vectorized chains run with the slow tests: the program cache that makes the second call free is the same for
# both chain methods (inference/mcmc/nuts.py), and vmapped chains compiling nothing on a second run is checked above
# (test_second_run_of_the_same_chains_compiles_nothing; docs/performance.md#test-suite).
@pytest.mark.parametrize("method", ["sequential", pytest.param("vectorized", marks=pytest.mark.slow)])
def test_nuts_on_new_data_of_the_same_shapes_compiles_nothing(method):
    """inference.run's second call (other data, other seed, same shapes) reuses the start search and the sampler."""
    spec = zoo.get("blr")
    options = {"num_chains": 2, "num_warmup": 5, "num_samples": 5}
    inference.run(spec, spec.simulate(jax.random.key(0), n=10), engine="nuts", chain_method=method, **options)
    again = inference.run(
        spec, spec.simulate(jax.random.key(1), n=10), engine="nuts", seed=1, chain_method=method, **options
    )
    assert again.posterior.attrs["compile_s"] == 0.0, method


def test_compiled_start_search_equals_numpyros_eager_one():
    spec = zoo.get("blr")
    model, observed = conditioned_program(spec), observed_args(spec.simulate(jax.random.key(2), n=8))
    key = jax.random.key(6)
    eager = starts._eager_initial_positions(model, jax.random.split(key, 3), {}, observed, 2.0)
    for check_gradient in (True, False):  # without the gradient check: the same points where the gradient is finite
        compiled = starts.initial_positions(model, key, 3, {}, observed, 2.0, Timer(), check_gradient)
        for site in eager:
            np.testing.assert_allclose(compiled[site], eager[site], rtol=1e-15, atol=0)


def test_a_start_with_an_infinite_gradient_is_refused_as_numpyro_refuses_it():
    """The start search checks only the potential; the sampler's first state checks the gradient and sends the run
    back to NumPyro's search with the gradient, which here finds no start and raises NumPyro's error."""

    def program(y=None):
        x = numpyro.sample("x", dist.Normal(0.0, 1.0))
        # finite potential, NaN gradient wherever starts are drawn: the derivative multiplies sqrt'(x - 10 < 0) by 0
        numpyro.factor("trap", jnp.where(x < 10.0, 0.0, jnp.sqrt(x - 10.0)))
        numpyro.sample("y", dist.Normal(x, 1.0), obs=y)

    with pytest.raises(RuntimeError, match="Cannot find valid initial parameters"):
        inference.run(program, {"y": np.zeros(3)}, engine="nuts", num_chains=1, num_warmup=5, num_samples=5)
