"""The convolution-process (CP) multi-output GP (Kaiser 2021, sec. 4.1, eqs. 4.1-4.4; Alvarez & Lawrence; Boyle &
Frean; docs/sources/kaiser.md#convolution-process), and the ``gp/convolution`` family.

Output d is latent white noise w_r (R independent processes) smoothed by an SE kernel
T_dr(x) = sigma_dr exp(-1/2 sum_k x_k^2 / l_drk^2): f_d(x) = sum_r int T_dr(x - z) w_r(z) dz. The cross-covariance is
the integral of two Gaussians, in closed form with lhat_dd'rk^2 = l_drk^2 + l_d'rk^2:

    cov[f_d(x), f_d'(x')] = sum_r sigma_dr sigma_d'r prod_k [sqrt(2 pi) l_drk l_d'rk / lhat_dd'rk]
                                  exp(-1/2 sum_k (x_k - x'_k)^2 / lhat_dd'rk^2).

This is the prefactor we derive, not the printed (4.4) (docs/sources/kaiser.md#convolution-process says why): as an
inner product of smoothing kernels it is positive semi-definite for any inputs, outputs and hyperparameters. With one
output (and one latent) it is an SE kernel of variance pi^{K/2} sigma^2 prod_k l_k and lengthscales sqrt(2) l_k.

``ConvolutionProcess`` is a pytree value (amplitudes (R, P), smoothing lengthscales (R, P, K)); ``pair_terms`` gives
the combined variance and lengthscale of each pair of outputs, what the CP Psi-statistics of AMO-GP need.
"""

import math
from functools import partial
from typing import Any

import jax.numpy as jnp
import numpy as np
import numpyro

from zoo import kernels
from zoo.kernels import KernelError
from zoo.multioutput import base
from zoo.options import Option
from zoo.registry import Dataset, ModelSpec, frozen, positive_int, register_family

Array = Any


@base.pytree_dataclass("amplitude", "lengthscale")
class ConvolutionProcess(base.MultiOutputKernel):
    """CP kernel: amplitude sigma (R, P), smoothing lengthscales l (R, P, K) > 0 (R latent processes, P outputs,
    K input dimensions)."""

    amplitude: Array
    lengthscale: Array

    @classmethod
    def from_variance(cls, variance: Array, lengthscale: Array) -> "ConvolutionProcess":
        """The CP kernel whose latent r contributes variance[r, d] to output d's marginal variance:
        sigma_rd = sqrt(variance_rd / (pi^{K/2} prod_k l_rdk)). variance (R, P) > 0, lengthscale (R, P, K)."""
        lengthscale = jnp.asarray(lengthscale, dtype=float)
        K = lengthscale.shape[-1]
        norm = math.pi ** (K / 2) * jnp.prod(lengthscale, axis=-1)
        return cls(jnp.sqrt(jnp.asarray(variance, dtype=float) / norm), lengthscale)

    @property
    def num_outputs(self) -> int:
        return int(np.shape(self.amplitude)[1])

    def check(self, D: int) -> "ConvolutionProcess":
        """This kernel if its shapes agree ((R, P) and (R, P, D)) and lengthscales are positive, else KernelError."""
        a_shape, l_shape = np.shape(self.amplitude), np.shape(self.lengthscale)
        if len(a_shape) != 2 or l_shape != (*a_shape, D):
            raise KernelError(
                f"convolution process: amplitude (R, P) and lengthscale (R, P, D={D}) expected, got {a_shape} and "
                f"{l_shape}."
            )
        try:
            positive = bool(np.all(np.asarray(self.lengthscale) > 0))
        except Exception:  # a tracer: positive by the prior's support
            positive = True
        if not positive:
            raise KernelError("convolution process: smoothing lengthscales must be positive.")
        return self

    def pair_terms(self, out1: Array, out2: Array) -> tuple[Array, Array]:
        """(prefactor (R, n1, n2), lhat (R, n1, n2, K)) of each pair of outputs: cov = sum_r prefactor
        exp(-1/2 sum_k (x_k - x'_k)^2 / lhat_k^2); prefactor = sigma sigma' prod_k sqrt(2 pi) l l' / lhat."""
        a = jnp.asarray(self.amplitude, dtype=float)
        ls = jnp.asarray(self.lengthscale, dtype=float)
        l1, l2 = ls[:, out1, None, :], ls[:, None, out2, :]  # (R, n1, 1, K), (R, 1, n2, K)
        lhat = jnp.sqrt(l1**2 + l2**2)
        prefactor = a[:, out1, None] * a[:, None, out2] * jnp.prod(math.sqrt(2 * math.pi) * l1 * l2 / lhat, axis=-1)
        return prefactor, lhat

    def gram(self, X1: Array, out1: Array, X2: Array, out2: Array) -> Array:
        prefactor, lhat = self.pair_terms(out1, out2)
        diff = X1[:, None, :] - X2[None, :, :]  # (n1, n2, K)
        return jnp.sum(prefactor * jnp.exp(-0.5 * jnp.sum((diff / lhat) ** 2, axis=-1)), axis=0)

    def output_variance(self) -> Array:
        """Marginal variance of each output, sum_r pi^{K/2} sigma_rd^2 prod_k l_rdk: (P,)."""
        ls = jnp.asarray(self.lengthscale, dtype=float)
        K = ls.shape[-1]
        return jnp.sum(math.pi ** (K / 2) * jnp.asarray(self.amplitude) ** 2 * jnp.prod(ls, axis=-1), axis=0)


def convolution_from(estimates) -> tuple[ConvolutionProcess, Array]:
    """(``ConvolutionProcess``, noise (P,)) of gp/convolution's sites in ``estimates`` (e.g. one chain of an ``ml2``
    result's point estimates)."""
    kern = ConvolutionProcess.from_variance(jnp.asarray(estimates["variance"]), jnp.asarray(estimates["lengthscale"]))
    return kern, jnp.asarray(estimates["noise"])


# -- the gp/convolution family -------------------------------------------------------------------------------------

VARIANCE_LOC, LENGTHSCALE_LOC, NOISE_LOC = 0.0, 0.0, -2.0  # LogNormal(., 1) priors, as gp/regression


def convolution_program(X, Y=None, *, num_outputs: int, num_latents: int):
    """CP multi-output regression with f integrated out, all outputs at the inputs X (N, D); Y (N, P).

    Sites: ``variance`` (R, P), the marginal variance latent r gives output d (a reparameterisation of the
    amplitude, ``ConvolutionProcess.from_variance``, so that priors act on the output scale), ``lengthscale``
    (R, P, D), the smoothing lengthscales, and ``noise`` (P,). The (P N, P N) covariance is factorised by Cholesky,
    jitter only when that fails: per-output lengthscales leave no Kronecker structure."""
    R, P, D = num_latents, num_outputs, X.shape[1]
    variance = base.positive_site("variance", VARIANCE_LOC, (R, P))
    lengthscale = base.positive_site("lengthscale", LENGTHSCALE_LOC, (R, P, D))
    noise = base.positive_site("noise", NOISE_LOC, (P,))
    kern = ConvolutionProcess.from_variance(variance, lengthscale)
    cov = kern.stacked(X) + base.noise_covariance(noise, X.shape[0])
    numpyro.sample("Y", base.dense_normal(cov, X.shape[0]), obs=Y)


def true_parameters(num_outputs: int, num_latents: int, d: int) -> dict[str, np.ndarray]:
    """The simulation's hyperparameters: smoothing lengthscales from 0.3 to 0.8 over the outputs (so outputs differ
    in smoothness, the point of the CP model), variance 1 / R per latent, noise 0.01."""
    ls = np.linspace(0.3, 0.8, num_outputs)
    return {
        "variance": np.full((num_latents, num_outputs), 1.0 / num_latents),
        "lengthscale": np.broadcast_to(ls[None, :, None], (num_latents, num_outputs, d)).copy(),
        "noise": np.full(num_outputs, 0.01),
    }


def simulate_convolution(key, num_outputs: int, num_latents: int, n: int = 40, d: int = 1, n_test: int = 50) -> Dataset:
    """Draws from the CP prior at ``true_parameters`` on [-3, 3]^d."""
    n, d, n_test = positive_int("n", n), positive_int("d", d), positive_int("n_test", n_test)
    truth = true_parameters(num_outputs, num_latents, d)
    kern = ConvolutionProcess.from_variance(truth["variance"], truth["lengthscale"])
    return base.simulate_shared(key, kern, truth["noise"], n, n_test, d, truth)


def convolution_log_marginal_likelihood(kernel: ConvolutionProcess, X, Y, noise) -> Array:
    """log p(Y | CP kernel, noise): X (N, D), Y (N, P), noise (P,); the dense Cholesky path."""
    X = kernels.as_inputs(X)
    return base.dense_log_marginal_likelihood(kernel.check(X.shape[1]), X, Y, noise)


CP_SOURCE = "Kaiser 2021, sec. 4.1 (eqs. 4.1-4.4, prefactor corrected); Alvarez & Lawrence 2011"


@register_family(
    "gp/convolution",
    {
        "num_outputs": Option("int", 2, "number of outputs P (columns of Y)", minimum=1),
        "num_latents": Option("int", 1, "number R of latent white-noise processes", minimum=1),
    },
    "Convolution-process multi-output GP (SE smoothing of shared white noise), f integrated out",
    CP_SOURCE,
)
def _gp_convolution(num_outputs: int, num_latents: int) -> ModelSpec:
    R, P = num_latents, num_outputs
    return ModelSpec(
        name="gp/convolution",
        summary=f"convolution-process GP, {P} outputs from {R} latent process(es), f integrated out",
        source=CP_SOURCE,
        program=partial(convolution_program, num_outputs=P, num_latents=R),
        simulate=partial(simulate_convolution, num_outputs=P, num_latents=R),
        data_shapes=frozen({"X": ("N", "D"), "Y": ("N", P)}),
        # lengthscale defaults broadcast to (R, P, D) whatever D the data have
        default_params=frozen({"variance": np.ones((R, P)), "lengthscale": 1.0, "noise": np.full(P, 0.1)}),
        capabilities=frozenset({"continuous", "collapsed"}),
    )
