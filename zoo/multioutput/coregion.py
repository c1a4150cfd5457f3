"""ICM/LMC coregionalisation: K((x, i), (x', j)) = sum_q B_q[i, j] k_q(x, x'), B_q = W_q W_q^T + diag(kappa_q),
and the ``gp/icm`` family (docs/sources/franzese.md#icm: our extension; the lecture notes describe only tied
independent outputs).

- ``Coregion(W (P, R), kappa (P,))``: the positive definite P x P matrix B = W W^T + diag(kappa) (kappa > 0).
- ``ICM(kernel, coregion)``: B kron k on shared inputs (``stacked`` is the Kronecker product); the model's
  likelihood uses the Kronecker fast path (``zoo.multioutput.kronecker``) when all outputs share the inputs.
- ``LMC(terms)``: a sum of ICM terms with their own input kernels. Its covariance is a sum of Kronecker products,
  which has no joint eigenbasis: its likelihood is the dense one (``zoo.multioutput.base``).

The API follows the shape of GPJax's ``ICMKernel`` (a base input kernel and a coregionalisation matrix); the code is
ours.
"""

from functools import partial
from typing import Any

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from zoo import kernels
from zoo.errors import OptionError
from zoo.kernels import Kernel
from zoo.multioutput import base
from zoo.multioutput.kronecker import KroneckerNormal
from zoo.options import Option
from zoo.registry import Dataset, ModelSpec, frozen, positive_int, register_family
from zoo.symmetry import signed_column_permutations

Array = Any


@base.pytree_dataclass("W", "kappa")
class Coregion:
    """B = W W^T + diag(kappa): W (P, R) mixes R shared latent functions into P outputs, kappa (P,) > 0 adds an
    independent part per output, so B is positive definite for any W."""

    W: Array
    kappa: Array

    def matrix(self) -> Array:
        """B: (P, P)."""
        W = jnp.asarray(self.W, dtype=float)
        return W @ W.T + jnp.diag(jnp.asarray(self.kappa, dtype=float))

    @property
    def num_outputs(self) -> int:
        return int(np.shape(self.W)[0])


@base.pytree_dataclass("kernel", "coregion")
class ICM(base.MultiOutputKernel):
    """The intrinsic coregionalisation model: K((x, i), (x', j)) = B[i, j] k(x, x')."""

    kernel: Kernel
    coregion: Coregion

    @property
    def num_outputs(self) -> int:
        return self.coregion.num_outputs

    def gram(self, X1: Array, out1: Array, X2: Array, out2: Array) -> Array:
        B = self.coregion.matrix()
        return B[out1][:, out2] * self.kernel(X1, X2)

    def stacked(self, X: Array) -> Array:
        """kron(B, k(X)): (P N, P N), output-major."""
        return jnp.kron(self.coregion.matrix(), self.kernel(X))


@base.pytree_dataclass("terms")
class LMC(base.MultiOutputKernel):
    """The linear model of coregionalisation: sum_q B_q[i, j] k_q(x, x') over a tuple of ``ICM`` terms."""

    terms: tuple[ICM, ...]

    @property
    def num_outputs(self) -> int:
        return self.terms[0].num_outputs

    def gram(self, X1: Array, out1: Array, X2: Array, out2: Array) -> Array:
        return sum(term.gram(X1, out1, X2, out2) for term in self.terms)

    def stacked(self, X: Array) -> Array:
        return sum(term.stacked(X) for term in self.terms)


def icm_log_marginal_likelihood(icm: ICM, X: Array, Y: Array, noise: Array) -> Array:
    """log p(Y | ICM, noise) by the Kronecker fast path: X (N, D) shared by all outputs, Y (N, P), noise (P,) > 0."""
    base.check_positive("kappa", icm.coregion.kappa, "B = W W^T + diag(kappa) must be positive definite")
    return KroneckerNormal(icm.coregion.matrix(), icm.kernel(kernels.as_inputs(X)), noise).log_prob(Y)


def icm_from(estimates, kernel: "Kernel | str" = "SE") -> tuple[ICM, Array]:
    """(``ICM``, noise (P,)) of gp/icm's sites in ``estimates`` (e.g. one chain of an ``ml2`` result's point
    estimates) for the variant built with ``kernel``."""
    template = kernels.parse(kernel) if isinstance(kernel, str) else kernel
    coregion = Coregion(jnp.asarray(estimates["W"]), jnp.asarray(estimates["kappa"]))
    return ICM(base.shared_kernel_from(template, estimates), coregion), jnp.asarray(estimates["noise"])


# -- the gp/icm family --------------------------------------------------------------------------------------------

W_PRIOR_SCALE = 1.0  # W ~ N(0, 1): prior output variance R + E[kappa] (docs/sources/franzese.md#icm)
KAPPA_LOC, NOISE_LOC = -2.0, -2.0  # LogNormal(-2, 1) on kappa and on each noise variance


def icm_program(X, Y=None, *, template: Kernel, num_outputs: int, rank: int):
    """ICM regression with f integrated out, all outputs observed at the inputs X (N, D); Y (N, P).

    Sites: the input kernel's hyperparameters except its variance (fixed at 1, the scale is in B; for SE the
    lengthscale (D,)), ``W`` (P, R) ~ N(0, 1), ``kappa`` (P,) and ``noise`` (P,) ~ LogNormal(-2, 1)."""
    kx = base.shared_kernel(template, X.shape[1])
    W = numpyro.sample("W", dist.Normal(0.0, W_PRIOR_SCALE).expand([num_outputs, rank]).to_event(2))
    kappa = base.positive_site("kappa", KAPPA_LOC, (num_outputs,))
    noise = base.positive_site("noise", NOISE_LOC, (num_outputs,))
    icm = ICM(kx, Coregion(W, kappa))
    numpyro.sample("Y", KroneckerNormal(icm.coregion.matrix(), kx(X), noise), obs=Y)


def default_W(num_outputs: int, rank: int) -> np.ndarray:
    """A start for W with distinct columns (W = 0 is a saddle of the likelihood, equal columns stay equal under
    gradient steps): 1 on the diagonal, 0.5 elsewhere."""
    return np.where(np.eye(num_outputs, rank, dtype=bool), 1.0, 0.5)


def true_W(num_outputs: int, rank: int) -> np.ndarray:
    """The simulation's W: W[p, r] = cos(pi (p + 1/2) / P + r): outputs correlated with mixed signs (for P = 2,
    W = (0.71, -0.71): a correlation of -0.83 with kappa = 0.1)."""
    p, r = np.meshgrid(np.arange(num_outputs), np.arange(rank), indexing="ij")
    return np.cos(np.pi * (p + 0.5) / num_outputs + r)


def simulate_icm(key, num_outputs: int, rank: int, n: int = 40, d: int = 1, n_test: int = 50) -> Dataset:
    """Draws from the ICM prior with SE inputs kernel (lengthscale 1) on [-3, 3]^d: W = ``true_W``, kappa = 0.1,
    noise 0.01 (p + 1) for output p (unequal, so that per-output noise matters)."""
    n, d, n_test = positive_int("n", n), positive_int("d", d), positive_int("n_test", n_test)
    W, kappa = true_W(num_outputs, rank), np.full(num_outputs, 0.1)
    noise = 0.01 * np.arange(1, num_outputs + 1)
    icm = ICM(kernels.SE(1.0, np.ones(d)), Coregion(W, kappa))
    truth = {"W": W, "kappa": kappa, "noise": noise, "lengthscale": np.ones(d)}
    return base.simulate_shared(key, icm, noise, n, n_test, d, truth)


ICM_SOURCE = "Bonilla et al. 2008; Alvarez, Rosasco & Lawrence 2012 (our extension of Franzese 2024, ch. 9)"
KERNEL_OPTION = Option("str", "SE", "input kernel, an expression of the kernel grammar (its variances fixed at 1)")


@register_family(
    "gp/icm",
    {
        "num_outputs": Option("int", 3, "number of outputs P (columns of Y)", minimum=1),
        "rank": Option("int", 1, "rank R of W in B = W W^T + diag(kappa)", minimum=1),
        "kernel": KERNEL_OPTION,
    },
    "ICM coregionalised multi-output GP regression, Kronecker fast path on shared inputs",
    ICM_SOURCE,
)
def _gp_icm(num_outputs: int, rank: int, kernel: str) -> ModelSpec:
    if rank > num_outputs:
        raise OptionError(
            f"model 'gp/icm': rank {rank} exceeds num_outputs {num_outputs}; W W^T has rank at most P, so use "
            f"rank <= {num_outputs}."
        )
    template = kernels.parse(kernel)
    defaults = {
        **base.shared_kernel_defaults(template),
        "W": default_W(num_outputs, rank),
        "kappa": np.full(num_outputs, 0.1),
        "noise": np.full(num_outputs, 0.1),
    }
    return ModelSpec(
        name="gp/icm",
        summary=f"ICM multi-output GP ({num_outputs} outputs, rank {rank}, input kernel {template}), f integrated out",
        source=ICM_SOURCE,
        program=partial(icm_program, template=template, num_outputs=num_outputs, rank=rank),
        simulate=partial(simulate_icm, num_outputs=num_outputs, rank=rank),
        data_shapes=frozen({"X": ("N", "D"), "Y": ("N", num_outputs)}),
        default_params=frozen(defaults),
        capabilities=frozenset({"continuous", "collapsed"}),
        # W -> W Pi S leaves B = W W^T + diag(kappa) and W's iid prior unchanged: 2^R R! mirror modes (for R = 1,
        # W and -W), which NUTS's chains do not cross (docs/gym.md#symmetry)
        symmetry=signed_column_permutations("W", rank),
    )
