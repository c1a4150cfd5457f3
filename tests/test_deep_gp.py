"""Deep GPs (zoo/deep_gp.py): a one-layer DSVI is SVGP exactly; the NumPyro program's ELBO is the DSVI bound."""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest
from numpyro import handlers
from numpyro.infer import Trace_ELBO

import zoo
from zoo import deep_gp as dg
from zoo import sparse as sp
from zoo.errors import OptionError
from zoo.kernels import SquaredExponential

NOISE = 0.05


@pytest.fixture(scope="module")
def data():
    ds = zoo.get("deep_gp/dsvi").simulate(jax.random.PRNGKey(0), n=30, m=6)
    return tuple(jnp.asarray(ds.observed[k]) for k in ("X", "y", "Z"))


def some_layers(Z, num_layers):
    """Layers with arbitrary (non-optimal) q(v): random means and scaled, perturbed Cholesky factors."""
    layers = []
    M = Z.shape[0]
    for layer, k in zip(range(1, num_layers + 1), jax.random.split(jax.random.PRNGKey(3), num_layers), strict=True):
        k_m, k_s = jax.random.split(k)
        tril = 0.3 * jnp.eye(M) + 0.05 * jnp.tril(jax.random.normal(k_s, (M, M)), -1)
        kernel = SquaredExponential(1.0 + 0.2 * layer, jnp.array([0.8 + 0.1 * layer]))
        layers.append(
            dg.DeepLayer(
                kernel,
                Z + 0.01 * layer,
                0.5 * jax.random.normal(k_m, (1, M)),
                tril[None],
                identity_mean=layer < num_layers,
            )
        )
    return layers


def test_one_layer_dsvi_equals_svgp(data):
    X, y, Z = data
    (layer,) = some_layers(Z, 1)
    q = sp.WhitenedQ(layer.q_mean[0], layer.q_scale_tril[0])
    np.testing.assert_allclose(
        dg.dsvi_elbo([layer], X, y, NOISE, []), sp.svgp_elbo(layer.kernel, X, y, layer.Z, q, NOISE), rtol=1e-12
    )
    # ... and its predictive is the SVGP predictive (every mixture component identical).
    means, variances = dg.dsvi_predict([layer], X[:5], jax.random.PRNGKey(0), 3)
    pred = sp.sparse_predict(layer.kernel, layer.Z, q, X[:5])
    np.testing.assert_allclose(means, jnp.broadcast_to(pred.mean, (3, 5)), rtol=1e-12)
    np.testing.assert_allclose(variances, jnp.broadcast_to(pred.cov, (3, 5)), rtol=1e-12)


def guide_params(layers, noise):
    params = {"noise_map": noise}
    for i, layer in enumerate(layers, start=1):
        params |= {
            f"lengthscale_{i}_map": layer.kernel.lengthscale,
            f"variance_{i}_map": layer.kernel.variance,
            f"inducing_inputs_{i}": layer.Z,
            f"q_mean_{i}": layer.q_mean,
            f"q_scale_tril_{i}": layer.q_scale_tril,
        }
    return params


def log_prior(layers, noise):
    total = dist.LogNormal(-2.0, 1.0).log_prob(noise)
    for layer in layers:
        total += dist.LogNormal(0.0, 1.0).log_prob(layer.kernel.lengthscale).sum()
        total += dist.LogNormal(0.0, 1.0).log_prob(layer.kernel.variance)
    return total


@pytest.mark.slow  # ~10-20 s of compilation; the exact one-layer identity runs by default above
@pytest.mark.parametrize("num_layers", [1, 2])
def test_program_elbo_is_dsvi_bound(data, num_layers):
    """Trace_ELBO of the dsvi program + guide (v ~ q(v), f_l ~ p(f_l | v_l, h), minibatches of 10 of 30) averages
    to the locally reparameterised DSVI bound (eq. 2.89) plus the MAP log prior: within 5 combined MC standard errors.
    For one layer the reference is the analytic SVGP bound (no MC error on that side)."""
    X, y, Z = data
    layers = some_layers(Z, num_layers)
    params = guide_params(layers, NOISE)
    spec = zoo.get("deep_gp/dsvi")

    @partial(jax.jit, static_argnums=1)
    def program_draws(keys, batch_size):
        loss = Trace_ELBO()
        data = dict(X=X, Z=Z, y=y, num_layers=num_layers, batch_size=batch_size)
        return jax.vmap(lambda k: -loss.loss(k, params, spec.program, spec.views["guide"], **data))(keys)

    @jax.jit
    def reference_draws(keys):
        def one(k):
            eps = [jax.random.normal(kk, X.shape) for kk in jax.random.split(k, num_layers)[: num_layers - 1]]
            return dg.dsvi_elbo(layers, X, y, NOISE, eps)

        return jax.vmap(one)(keys)

    draws = np.asarray(program_draws(jax.random.split(jax.random.PRNGKey(1), 1000), 10))
    ref = np.asarray(reference_draws(jax.random.split(jax.random.PRNGKey(2), 1000))) + float(log_prior(layers, NOISE))
    se = np.sqrt(draws.var() / draws.size + ref.var() / ref.size)
    if num_layers == 1:
        assert ref.std() < 1e-9 * abs(ref.mean())
    assert abs(draws.mean() - ref.mean()) < 5 * se, (draws.mean(), ref.mean(), se)


def test_bad_layers_raise(data):
    X, y, Z = data
    with pytest.raises(OptionError, match="num_layers"), handlers.seed(rng_seed=0):
        dg.dsvi(X, Z, y, num_layers=0)
