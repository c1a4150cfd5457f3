"""What every multi-output model shares: the multi-output kernel contract, the dense likelihood, shared-kernel sites.

A multi-output kernel value is a pytree with ``k(X1, out1, X2=None, out2=None) -> (n1, n2)``, the covariance
K((x, i), (x', j)) between output ``out1[a]`` at ``X1[a]`` and output ``out2[b]`` at ``X2[b]`` (outputs may be
observed at different inputs), and ``k.stacked(X) -> (P N, P N)``, the Gram matrix when all P outputs share the N
inputs X, ordered output-major: block (i, j) is K((X, i), (X, j)). Output-major order matches ``vec`` of the data
matrix Y (N, P) stacked column by column (``Y.T.reshape(-1)``), so ICM's Gram is ``kron(B, K_x)``.

The dense likelihood here is the reference every fast path is tested against: one Cholesky factor of the
(P N, P N) covariance, jitter only when that factorisation fails (``zoo.gp.cholesky_with_jitter``); ``predict`` gives
the posterior of every output at new inputs the same way.
"""

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro import handlers
from numpyro.distributions import constraints

from zoo import gp, kernels
from zoo.eager import compile_methods
from zoo.kernels import Kernel, KernelError
from zoo.registry import Dataset

Array = Any


def pytree_dataclass(*data: str):
    """Class decorator: a frozen dataclass registered as a JAX pytree whose fields ``data`` are its children
    (arrays, kernels, tuples of them) and every other field static, so kernel values pass through jit/vmap/grad."""

    def decorate(cls):
        cls = dataclasses.dataclass(frozen=True)(cls)
        meta = [f.name for f in dataclasses.fields(cls) if f.name not in data]
        return jax.tree_util.register_dataclass(cls, data_fields=list(data), meta_fields=meta)

    return decorate


def check_positive(name: str, value: Array, what: str) -> Array:
    """``value`` if every entry is finite and > 0, else a ``KernelError`` naming it (``what`` says why it must be).
    Tracers (values sampled inside a program) pass: their priors' support keeps them positive."""
    try:
        concrete = np.asarray(value, dtype=float)
    except Exception:  # a tracer
        return value
    if not np.all(np.isfinite(concrete) & (concrete > 0)):
        raise KernelError(f"{name} must be positive and finite ({what}), got {concrete.tolist()}.")
    return value


def stacked_indices(N: int, P: int) -> Array:
    """Output index of each row of the output-major stacking of P outputs at N shared inputs: (P N,)."""
    return jnp.repeat(jnp.arange(P), N)


class MultiOutputKernel:
    """Base class: subclasses define ``num_outputs`` and ``gram(X1, out1, X2, out2)`` on (n, D) inputs and integer
    output indices (n,). ``stacked`` has a generic implementation; ICM overrides it with a Kronecker product."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        compile_methods(cls, ("__call__", "gram", "stacked"))  # one program per kernel structure and shapes

    @property
    def num_outputs(self) -> int:
        raise NotImplementedError

    def gram(self, X1: Array, out1: Array, X2: Array, out2: Array) -> Array:
        raise NotImplementedError

    def __call__(self, X1: Array, out1: Array, X2: Array | None = None, out2: Array | None = None) -> Array:
        X1 = kernels.as_inputs(X1)
        out1 = jnp.asarray(out1, dtype=int)
        if X2 is None:
            X2, out2 = X1, out1
        return self.gram(X1, out1, kernels.as_inputs(X2), jnp.asarray(out2, dtype=int))

    def stacked(self, X: Array) -> Array:
        """The (P N, P N) Gram matrix of all outputs at the shared inputs X (N, D), output-major."""
        X = kernels.as_inputs(X)
        P, N = self.num_outputs, X.shape[0]
        return self(jnp.tile(X, (P, 1)), stacked_indices(N, P))


def vec(Y: Array) -> Array:
    """Y (N, P) as the output-major vector (P N,): output 0 at every input, then output 1, ..."""
    return Y.T.reshape(-1)


def unvec(v: Array, N: int) -> Array:
    """The inverse of ``vec``: (P N,) -> (N, P)."""
    return v.reshape(-1, N).T


def noise_covariance(noise: Array, N: int) -> Array:
    """diag(noise) kron I_N: per-output noise variances (P,) on the output-major stacking, (P N, P N)."""
    return jnp.diag(jnp.repeat(noise, N))


def dense_log_marginal_likelihood(kernel: MultiOutputKernel, X: Array, Y: Array, noise: Array) -> Array:
    """log N(vec Y | 0, K_stacked + diag(noise) kron I) by one Cholesky factor: the O((P N)^3) reference.
    X (N, D), Y (N, P), noise (P,)."""
    N = Y.shape[0]
    L, _ = gp.cholesky_with_jitter(kernel.stacked(X) + noise_covariance(noise, N))
    return gp.mvn_logpdf_chol(vec(Y), jnp.zeros(Y.size), L)


class StackedNormal(dist.Distribution):
    """Y (N, P) with vec(Y) ~ N(0, L L^T), L a lower Cholesky factor of the output-major covariance (P N, P N).

    A distribution over the data matrix itself, so that a program's observed site ``Y`` has the data's shape and its
    prior predictive draws do too."""

    support = constraints.real_matrix
    arg_constraints = {}

    def __init__(self, scale_tril: Array, num_inputs: int, validate_args: bool | None = None):
        self.scale_tril = scale_tril
        PN = scale_tril.shape[-1]
        super().__init__(batch_shape=(), event_shape=(num_inputs, PN // num_inputs), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        N, P = self.event_shape
        eps = jax.random.normal(key, (*sample_shape, P * N))
        v = eps @ self.scale_tril.T
        return jnp.swapaxes(v.reshape(*sample_shape, P, N), -1, -2)

    def log_prob(self, value):
        return gp.mvn_logpdf_chol(vec(value), jnp.zeros(value.size), self.scale_tril)


def dense_normal(covariance: Array, num_inputs: int) -> StackedNormal:
    """``StackedNormal`` of an output-major covariance, factorised without jitter unless that fails."""
    L, _ = gp.cholesky_with_jitter(covariance)
    return StackedNormal(L, num_inputs)


def shared_kernel(template: Kernel, D: int) -> Kernel:
    """``template`` with its hyperparameters drawn from sample sites (``zoo.kernels.sample_sites``), except every
    ``variance``, which is fixed at 1 and gets no site: the output scales live in the multi-output model (per-output
    variances, the coregionalisation matrix B), and a free kernel variance would be a redundant direction.

    The fixed sites are conditioned and then blocked, so they neither reach the trace nor the log density."""
    kernels.validate_inputs(template, D)
    fixed = {name: 1.0 for name in kernels.site_names(template) if name.endswith("variance")}
    with handlers.block(hide=list(fixed)), handlers.condition(data=fixed):
        return kernels.sample_sites(template, D)


def shared_kernel_defaults(template: Kernel) -> dict[str, Any]:
    """Default values of the sites ``shared_kernel`` creates."""
    return {k: v for k, v in kernels.default_values(template).items() if not k.endswith("variance")}


def shared_kernel_from(template: Kernel, estimates: Any) -> Kernel:
    """The shared kernel with the hyperparameters ``shared_kernel`` samples read from ``estimates`` by site name (e.g.
    one chain of an ``ml2`` result's point estimates); its variances stay 1."""
    names = [n for n in kernels.site_names(template) if not n.endswith("variance")]
    return kernels.with_values(template, {n: jnp.asarray(estimates[n]) for n in names}, D=0)


def positive_site(name: str, loc: float, shape: tuple[int, ...]) -> Array:
    """A LogNormal(loc, 1) sample site of the given shape (() for a scalar)."""
    prior = dist.LogNormal(loc, 1.0)
    return numpyro.sample(name, prior.expand(list(shape)).to_event(len(shape)) if shape else prior)


def simulate_shared(
    key: Array,
    kernel: MultiOutputKernel,
    noise: Array,
    n: int,
    n_test: int,
    d: int,
    truth: dict[str, Any],
    low: float = -3.0,
    high: float = 3.0,
) -> Dataset:
    """A draw of all P outputs at n training and n_test held-out inputs uniform on [low, high]^d, jointly from the
    prior of ``kernel``, plus noise (P,) per output: observed X (n, d), Y (n, P); truth adds f (n, P)."""
    k_x, k_t, k_f, k_e = jax.random.split(key, 4)
    X = jax.random.uniform(k_x, (n, d), minval=low, maxval=high)
    X_test = jax.random.uniform(k_t, (n_test, d), minval=low, maxval=high)
    X_all = jnp.concatenate([X, X_test])
    # A noise-free prior Gram is singular to rounding: the always-on jitter of gp.cholesky is part of the draw.
    L = gp.cholesky(kernel.stacked(X_all))
    f = unvec(L @ jax.random.normal(k_f, (L.shape[0],)), n + n_test)
    Y = f + jnp.sqrt(jnp.asarray(noise))[None, :] * jax.random.normal(k_e, f.shape)
    return Dataset(
        observed={"X": X, "Y": Y[:n]},
        truth={**truth, "f": f[:n]},
        test={"X": X_test, "Y": Y[n:]},
    )


def predict(kernel: MultiOutputKernel, X: Array, Y: Array, noise: Array, X_new: Array) -> tuple[Array, Array]:
    """Posterior mean and variance of every output's f at X_new (M, D) given Y (N, P) at X (N, D): ((M, P), (M, P)).
    Add noise (P,) to the variance for Y_new. Dense: one Cholesky factor of the (P N, P N) training covariance, jitter
    only if that fails (Franzese eqs. 4.13-4.14 on the stacked outputs)."""
    X, X_new = kernels.as_inputs(X), kernels.as_inputs(X_new)
    (N, P), M = Y.shape, X_new.shape[0]
    L, _ = gp.cholesky_with_jitter(kernel.stacked(X) + noise_covariance(noise, N))
    X_all, out = jnp.tile(X, (P, 1)), stacked_indices(N, P)
    Xn_all, out_new = jnp.tile(X_new, (P, 1)), stacked_indices(M, P)
    Ks = kernel(X_all, out, Xn_all, out_new)  # (P N, P M)
    mean = Ks.T @ jax.scipy.linalg.cho_solve((L, True), vec(Y))
    V = jax.scipy.linalg.solve_triangular(L, Ks, lower=True)
    prior_var = jax.vmap(lambda x, o: kernel(x[None], o[None])[0, 0])(Xn_all, out_new)
    return unvec(mean, M), unvec(prior_var - jnp.sum(V**2, axis=0), M)
