"""``inference.chains``: chains vmapped over their own inputs, shared arguments unbatched, compiled once."""

import jax
import jax.numpy as jnp
import numpy as np

from inference import pgas
from inference.api import Timer
from inference.chains import vmapped_chains


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
