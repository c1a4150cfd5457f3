"""Tied independent outputs (Franzese 2024, ch. 9; docs/sources/franzese.md#multioutput-tied): P independent GPs
f_p ~ GP(0, sigma_v,p^2 k) that share the input kernel k (for SE its ARD lengthscales), with per-output signal
variance sigma_v,p^2 and noise sigma_n,p^2, each optionally shared (``share_variance``, ``share_noise``).

Outputs are conditionally independent: Y[:, p] ~ N(0, sigma_v,p^2 K + sigma_n,p^2 I). Their joint covariance is
diag(sigma_v^2) kron K + diag(sigma_n^2) kron I, the ICM form with a diagonal B, so the likelihood is the Kronecker
path (``zoo.multioutput.kronecker``): one eigendecomposition of the shared Gram K for all outputs
(docs/sources/franzese.md#multioutput-tied states the efficiency argument).

Simulated data: Franzese's worked example, a vector field "position -> displacement" learnt from demonstrations
(``vector_field``, ``simulate_demonstrations``).
"""

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpyro

from zoo import kernels
from zoo.kernels import Kernel
from zoo.multioutput import base
from zoo.multioutput.kronecker import KroneckerNormal
from zoo.options import Option
from zoo.registry import Dataset, ModelSpec, frozen, positive_int, register_family

VARIANCE_LOC, NOISE_LOC = 0.0, -2.0  # LogNormal(0, 1) and LogNormal(-2, 1), as gp/regression


def tied_program(X, Y=None, *, template: Kernel, num_outputs: int, share_variance: bool, share_noise: bool):
    """P tied independent GPs with f integrated out. X (N, D), Y (N, P).

    Sites: the shared input kernel's hyperparameters except its variance (for SE ``lengthscale`` (D,)), ``variance``
    (P,) (or () when shared) ~ LogNormal(0, 1), ``noise`` (P,) (or ()) ~ LogNormal(-2, 1)."""
    kb = base.shared_kernel(template, X.shape[1])
    variance = base.positive_site("variance", VARIANCE_LOC, () if share_variance else (num_outputs,))
    noise = base.positive_site("noise", NOISE_LOC, () if share_noise else (num_outputs,))
    variance = jnp.broadcast_to(variance, (num_outputs,))
    noise = jnp.broadcast_to(noise, (num_outputs,))
    numpyro.sample("Y", KroneckerNormal(jnp.diag(variance), kb(X), noise), obs=Y)


def tied_log_marginal_likelihood(kernel: Kernel, variance, noise, X, Y):
    """sum_p log N(Y[:, p] | 0, variance_p k(X) + noise_p I) by the shared eigendecomposition. variance, noise (P,)."""
    return KroneckerNormal(jnp.diag(variance), kernel(kernels.as_inputs(X)), noise).log_prob(Y)


def tied_from(estimates, num_outputs: int, kernel: "Kernel | str" = "SE") -> tuple["TiedKernel", jax.Array]:
    """(``TiedKernel``, noise (P,)) of gp/multioutput-tied's sites in ``estimates`` (e.g. one chain of an ``ml2``
    result's point estimates) for the variant with ``num_outputs`` and ``kernel``; shared sites are broadcast."""
    template = kernels.parse(kernel) if isinstance(kernel, str) else kernel
    variance = jnp.broadcast_to(jnp.asarray(estimates["variance"]), (num_outputs,))
    noise = jnp.broadcast_to(jnp.asarray(estimates["noise"]), (num_outputs,))
    return TiedKernel(base.shared_kernel_from(template, estimates), variance), noise


# -- the vector-field example --------------------------------------------------------------------------------------

DT = 0.1  # time step of the demonstrations: displacement = DT * velocity
SWIRL = 2.0  # strength of the rotation near the attractor


def vector_field(X):
    """Displacement per step of a field converging to the origin with a swirl that fades away from it:
    dx = DT (-x + SWIRL exp(-|x|^2 / 2) J x), J the 90-degree rotation. X (n, 2) -> (n, 2)."""
    rotated = jnp.stack([-X[:, 1], X[:, 0]], axis=1)
    fade = jnp.exp(-0.5 * jnp.sum(X**2, axis=1, keepdims=True))
    return DT * (-X + SWIRL * fade * rotated)


def demonstrations(starts, steps: int):
    """Positions visited by following ``vector_field`` from each start (k, 2) for ``steps`` steps: (k steps, 2)."""

    def step(x, _):
        return x + vector_field(x), x

    _, path = jax.lax.scan(step, starts, None, length=steps)
    return jnp.swapaxes(path, 0, 1).reshape(-1, 2)


TRUE_NOISE_STD = (0.005, 0.01)  # the two "sensors" differ, so unshared noise is the right model


def simulate_demonstrations(key, num_outputs: int, num_demos: int = 4, steps: int = 15, n_test: int = 100) -> Dataset:
    """Franzese's vector-field example: ``num_demos`` demonstrations from starts on the circle of radius 2.5 (random
    phase), ``steps`` positions each, labelled with their displacement plus noise of std 0.005 (x) and 0.01 (y);
    the test set is the field on random positions in [-3, 3]^2. Needs num_outputs == 2 (a 2-D field)."""
    if num_outputs != 2:
        return simulate_prior(key, num_outputs, n=positive_int("num_demos", num_demos) * steps, n_test=n_test)
    num_demos, steps, n_test = (
        positive_int("num_demos", num_demos),
        positive_int("steps", steps),
        positive_int("n_test", n_test),
    )
    k_phase, k_noise, k_test, k_test_noise = jax.random.split(key, 4)
    angles = jax.random.uniform(k_phase) * 2 * jnp.pi + jnp.arange(num_demos) * 2 * jnp.pi / num_demos
    starts = 2.5 * jnp.stack([jnp.cos(angles), jnp.sin(angles)], axis=1)
    X = demonstrations(starts, steps)
    std = jnp.asarray(TRUE_NOISE_STD)
    F = vector_field(X)
    X_test = jax.random.uniform(k_test, (n_test, 2), minval=-3.0, maxval=3.0)
    F_test = vector_field(X_test)
    return Dataset(
        observed={"X": X, "Y": F + std * jax.random.normal(k_noise, F.shape)},
        truth={"f": F, "noise": std**2},
        test={"X": X_test, "Y": F_test + std * jax.random.normal(k_test_noise, F_test.shape)},
    )


def simulate_prior(key, num_outputs: int, n: int = 60, n_test: int = 100) -> Dataset:
    """For P != 2: a draw from the model itself on [-3, 3]^2 (SE lengthscales 1, variance 0.5 (p + 1), noise
    0.01 (p + 1))."""
    variance = 0.5 * np.arange(1, num_outputs + 1)
    noise = 0.01 * np.arange(1, num_outputs + 1)
    kernel = TiedKernel(kernels.SE(1.0, np.ones(2)), variance)
    truth = {"lengthscale": np.ones(2), "variance": variance, "noise": noise}
    return base.simulate_shared(key, kernel, noise, n, n_test, 2, truth)


@base.pytree_dataclass("kernel", "variance")
class TiedKernel(base.MultiOutputKernel):
    """K((x, i), (x', j)) = [i = j] variance_i k(x, x'): the prior of the tied model as a multi-output kernel.
    variance (P,)."""

    kernel: Kernel
    variance: Any

    @property
    def num_outputs(self) -> int:
        return int(np.shape(self.variance)[0])

    def gram(self, X1, out1, X2, out2):
        variance = jnp.asarray(self.variance, dtype=float)
        same = out1[:, None] == out2[None, :]
        return jnp.where(same, variance[out1][:, None], 0.0) * self.kernel(X1, X2)


TIED_SOURCE = "Franzese 2024, ch. 9 (eq. 9.3, the vector field 9.4): tied independent outputs"


@register_family(
    "gp/multioutput-tied",
    {
        "num_outputs": Option("int", 2, "number of outputs P (columns of Y); 2 for the vector-field data", minimum=1),
        "share_variance": Option("bool", False, "one signal variance for all outputs (else one per output)"),
        "share_noise": Option("bool", False, "one noise variance for all outputs (else one per output)"),
        "kernel": Option("str", "SE", "shared input kernel, a kernel-grammar expression (variances fixed at 1)"),
    },
    "P independent GPs with tied input kernel (shared ARD lengthscales), per-output signal and noise variances",
    TIED_SOURCE,
)
def _gp_multioutput_tied(num_outputs: int, share_variance: bool, share_noise: bool, kernel: str) -> ModelSpec:
    template = kernels.parse(kernel)
    defaults = {
        **base.shared_kernel_defaults(template),
        "variance": 1.0 if share_variance else np.ones(num_outputs),
        "noise": 0.1 if share_noise else np.full(num_outputs, 0.1),
    }
    program = partial(
        tied_program,
        template=template,
        num_outputs=num_outputs,
        share_variance=share_variance,
        share_noise=share_noise,
    )
    return ModelSpec(
        name="gp/multioutput-tied",
        summary=f"{num_outputs} tied independent GPs (input kernel {template}), f integrated out",
        source=TIED_SOURCE,
        program=program,
        simulate=partial(simulate_demonstrations, num_outputs=num_outputs),
        data_shapes=frozen({"X": ("N", "D"), "Y": ("N", num_outputs)}),
        default_params=frozen(defaults),
        capabilities=frozenset({"continuous", "collapsed"}),
    )
