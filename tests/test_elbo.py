"""``OrderedTraceELBO`` is NumPyro's ``Trace_ELBO`` estimator with the sites added in trace order: on the same key it
gives the same value to rounding (same random numbers), and its lowered program does not depend on the process's
string-hash seed (the reason it exists: docs/performance.md#first-call)."""

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.infer import Trace_ELBO

from inference.optimisation.elbo import OrderedTraceELBO


def model(y):
    scale = numpyro.sample("scale", dist.LogNormal(0.0, 1.0))
    loc = numpyro.sample("loc", dist.Normal(0.0, 2.0))
    with numpyro.plate("data", y.shape[0]):
        numpyro.sample("y", dist.Normal(loc, scale), obs=y)


def guide(y):
    numpyro.sample("scale", dist.LogNormal(numpyro.param("m_scale", 0.1), 0.5))
    numpyro.sample("loc", dist.Normal(numpyro.param("m_loc", 0.3), 0.7))


Y = jnp.array([0.5, -1.2, 2.0, 0.3, 1.1])
PARAMS = {"m_scale": jnp.array(0.1), "m_loc": jnp.array(0.3)}


@pytest.mark.parametrize("num_particles", [1, 7])
def test_same_value_as_trace_elbo_on_the_same_key(num_particles):
    key = jax.random.key(3)
    ours = OrderedTraceELBO(num_particles=num_particles).loss(key, PARAMS, model, guide, Y)
    numpyros = Trace_ELBO(num_particles=num_particles).loss(key, PARAMS, model, guide, Y)
    np.testing.assert_allclose(ours, numpyros, rtol=1e-13)


LOWERED = """
import jax, jax.numpy as jnp, hashlib
import inference.optimisation.elbo, test_elbo as t
f = jax.jit(lambda p, k: inference.optimisation.elbo.OrderedTraceELBO(3).loss(k, p, t.model, t.guide, t.Y))
print(hashlib.sha256(f.lower(t.PARAMS, jax.random.key(0)).as_text(debug_info=False).encode()).hexdigest())
"""


def test_lowered_program_does_not_depend_on_the_hash_seed():
    here = os.path.dirname(os.path.abspath(__file__))

    def lowered(hash_seed: str) -> str:
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": here}
        out = subprocess.run([sys.executable, "-c", LOWERED], env=env, capture_output=True, text=True, check=True)
        return out.stdout.strip().splitlines()[-1]

    assert lowered("1") == lowered("2") == lowered("3")
