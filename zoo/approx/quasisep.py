"""The exact GP evidence in O(N) for 1-D inputs: the kernel as a quasiseparable (state-space) matrix, solved by
tinygp's ``kernels.quasisep`` (Foreman-Mackey et al. 2017, celerite; docs/approximations.md#quasiseparable).

A Matern half-integer kernel, a cosine and a constant are the covariances of linear SDEs with 1-3 states; sums and
products of such kernels are again such covariances (tinygp's ``quasisep.Sum`` stacks the states, ``quasisep.Product``
takes their Kronecker product), so the Gram matrix plus a diagonal is a symmetric quasiseparable matrix whose
Cholesky factor tinygp computes in one pass over the sorted inputs. Nothing is approximated: the log evidence
equals the dense one to rounding (``tests/test_approx.py``).

Our kernel values map to tinygp's one to one (same functions of tau = |x - x'|, only the parameter names differ):

| ours (``zoo.kernels``) | tinygp ``kernels.quasisep`` |
|---|---|
| ``M12(variance, lengthscale)`` = v exp(-tau / l) | ``Exp(scale=l, sigma=sqrt(v))`` |
| ``M32(variance, lengthscale)`` | ``Matern32(scale=l, sigma=sqrt(v))`` |
| ``M52(variance, lengthscale)`` | ``Matern52(scale=l, sigma=sqrt(v))`` |
| ``Cos(variance, period)`` = v cos(2 pi tau / p) | ``Cosine(scale=p, sigma=sqrt(v))`` |
| ``C(variance)`` = v | ``Exp(scale=inf, sigma=sqrt(v))``: exp(-tau / inf) = 1, one state that never decays |
| ``k1 + k2``, ``k1 x k2`` | ``Sum(k1, k2)``, ``Product(k1, k2)`` |
| ``k_0`` (restricted to column 0 of 1-D data) | ``k`` |

Celerite terms (Foreman-Mackey eq. 7 with b = 0) and the quasi-periodic kernels are products of these,
``M12 x Cos`` and ``M32 x Cos``; SHO terms are not in our grammar. SE, Per, ZPer and RQ have no finite state space
(their spectral densities are not rational), so they are refused rather than approximated.
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpyro.distributions as dist
from numpyro.distributions import constraints
from tinygp import GaussianProcess
from tinygp.kernels import quasisep

from zoo.kernels import ActiveDims, Constant, Cosine, Kernel, KernelError, Matern12, Matern32, Matern52, Product, Sum

Array = Any

SUPPORTED = "M12, M32, M52, Cos and C, and their sums and products (e.g. 'M32 + M12 x Cos'), on one input column"
_STATIONARY = {Matern12: quasisep.Exp, Matern32: quasisep.Matern32, Matern52: quasisep.Matern52}


def check_kernel(kernel: Kernel, approx: str = "quasisep") -> Kernel:
    """``kernel`` if every node has a quasiseparable form, else a ``KernelError`` naming what is supported (called
    when the model variant is built, before anything is traced); ``approx``: the rung named in the error."""
    if isinstance(kernel, Sum | Product):
        check_kernel(kernel.left, approx)
        check_kernel(kernel.right, approx)
    elif isinstance(kernel, ActiveDims):
        if kernel.dims != (0,):
            raise KernelError(f"approx='{approx}' takes one input column (dimension 0); {kernel} uses {kernel.dims}.")
        check_kernel(kernel.kernel, approx)
    elif type(kernel) not in (*_STATIONARY, Cosine, Constant):
        raise KernelError(
            f"approx='{approx}' has no state-space form of {kernel.SYMBOL} (in {kernel}); it supports {SUPPORTED}. "
            f"Use approx='hsgp' (SE, Matern, Per) or approx='dense'."
        )
    return kernel


def check_inputs(D: int, approx: str = "quasisep") -> None:
    if D != 1:
        raise KernelError(
            f"approx='{approx}' takes 1-D inputs (X of shape (N, 1)); the data have {D} columns. "
            f"Use approx='hsgp' (1-3 inputs) or approx='dense'."
        )


def _scalar(value: Array) -> Array:
    """A (1,) ARD lengthscale of 1-D data as the scalar tinygp takes."""
    return jnp.reshape(value, ())


def to_tinygp(kernel: Kernel) -> quasisep.Quasisep:
    """The tinygp quasiseparable kernel with the same values as ``kernel`` (module table)."""
    if isinstance(kernel, Sum):
        return quasisep.Sum(to_tinygp(kernel.left), to_tinygp(kernel.right))
    if isinstance(kernel, Product):
        return quasisep.Product(to_tinygp(kernel.left), to_tinygp(kernel.right))
    if isinstance(kernel, ActiveDims):
        return to_tinygp(kernel.kernel)
    sigma = jnp.sqrt(_scalar(kernel.variance))
    if isinstance(kernel, Cosine):
        return quasisep.Cosine(scale=_scalar(kernel.period), sigma=sigma)
    if isinstance(kernel, Constant):
        return quasisep.Exp(scale=jnp.inf, sigma=sigma)
    return _STATIONARY[type(kernel)](scale=_scalar(kernel.lengthscale), sigma=sigma)


class QuasisepEvidence(dist.Distribution):
    """N(0, K + noise I) over (n,) vectors with K the quasiseparable Gram matrix of ``kernel`` at 1-D inputs ``x``,
    whose log density tinygp's ``QuasisepSolver`` computes in O(n). The solver needs sorted inputs; the density of
    y is unchanged by permuting the points, so unsorted data are sorted here (a sort only when they are not
    sorted already: ``lax.cond`` skips it for the usual time series)."""

    support = constraints.real_vector

    def __init__(self, kernel: Kernel, x: Array, noise: Array, validate_args=None):
        order = jax.lax.cond(jnp.all(x[1:] >= x[:-1]), lambda: jnp.arange(x.shape[0]), lambda: jnp.argsort(x))
        self.order = order
        self.gp = GaussianProcess(to_tinygp(kernel), x[order], diag=noise, assume_sorted=True)
        super().__init__(batch_shape=(), event_shape=x.shape, validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        draws = self.gp.sample(key, shape=sample_shape)
        return jnp.zeros_like(draws).at[..., self.order].set(draws)  # back to the data's order

    def log_prob(self, value):
        value = value[..., self.order]
        if value.ndim == 1:
            return self.gp.log_probability(value)
        flat = value.reshape(-1, value.shape[-1])
        return jax.vmap(self.gp.log_probability)(flat).reshape(value.shape[:-1])


def evidence(kernel: Kernel, X: Array, noise: Array) -> QuasisepEvidence:
    """The evidence distribution of y at inputs X (N, 1) for the regression program."""
    check_inputs(X.shape[1])
    return QuasisepEvidence(kernel, X[:, 0], noise)


def predict(kernel: Kernel, X: Array, y: Array, noise: Array, X_new: Array) -> tuple[Array, Array]:
    """(mean (M,), variance (M,)) of f at X_new (M, 1) given y at X (N, 1): tinygp's conditioning of the
    quasiseparable GP, exact (it equals ``zoo.gp.predict``)."""
    check_inputs(X.shape[1])
    X, y = jnp.asarray(X), jnp.asarray(y)
    order = jnp.argsort(X[:, 0])
    gp = GaussianProcess(to_tinygp(kernel), X[order, 0], diag=noise, assume_sorted=True)
    posterior = gp.condition(y[order], X_new[:, 0], diag=0.0).gp  # f itself: no sqrt(eps) jitter of tinygp
    return posterior.loc, posterior.variance
