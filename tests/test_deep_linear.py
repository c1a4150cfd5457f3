"""The linear-layer deep GP of Kaiser 2021 Fig 6.2 (``deep_gp/linear``): its log density is invariant under flipping
the signs of two layers (the symmetry that makes the posterior multimodal) and changes under flipping one."""

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer.util import log_density

import zoo


def test_two_sign_flips_leave_the_density_unchanged():
    spec = zoo.get("deep_gp/linear", num_layers=3)
    observed = spec.simulate(jax.random.PRNGKey(0)).observed
    X, y = jnp.asarray(observed["X"]), jnp.asarray(observed["y"])

    @jax.jit
    def density(w):
        values = {f"slope_{i + 1}": w[i] for i in range(3)} | {"noise": 0.01}
        return log_density(spec.program, (X, y), {}, values)[0]

    w = jnp.array([0.7, -1.3, 1.1])
    base = density(w)
    np.testing.assert_allclose(density(w * jnp.array([-1.0, -1.0, 1.0])), base, rtol=1e-12)
    np.testing.assert_allclose(density(w * jnp.array([1.0, -1.0, -1.0])), base, rtol=1e-12)
    assert abs(density(w * jnp.array([-1.0, 1.0, 1.0])) - base) > 10.0
