"""The compiled part of SMC over structures (docs/sources/duvenaud.md#smc): the target of every particle, its log
likelihood on the observations seen so far, and HMC on its hyperparameters, for all particles at once.

Every particle's structure is data: its encoding in ``gp/structure``'s shared program (``zoo.structure.program``;
``factor_index`` (terms, factors) and ``columns`` (slots,)), padded to the prior's capacity. So one compiled
program, vmapped over the particles, evaluates P different structures, and the observed prefix of the series is a
mask (n,) rather than a shape, so that the whole data-annealed run compiles once.

Why not ``inference.run`` per particle (the one data path): an HMC move of one particle through ``inference.run``
compiles ``gp/regression`` per structure and per number of observations and assembles an InferenceData per call;
a run makes (particles x annealing steps x rounds) such moves, hundreds to thousands of compilations for one
search. The target here is ``gp/structure``'s own density (its priors: ``zoo.structure.program.priors`` and the
noise's ``zoo.regression.default_priors``; its Gram matrix: ``program.gram``) with the likelihood restricted to the
observed prefix, and the HMC kernel is BlackJAX's, as the ``tsmc`` engine uses it.

Parameters live in NumPyro's unconstrained space: z = log of positive values, locations as they are; the prior's
density there includes the log-Jacobian. Slots a particle's structure does not use do not enter its likelihood; an
HMC move first redraws them from their prior (their exact conditional), so the move leaves the particle's target
(structure, used hyperparameters, noise) invariant.

Masked likelihood: with m the 0/1 mask of observed points, C = K + noise I, C_m = (m m^T) * C + diag(1 - m) and
r = m * y, log N(r | 0, C_m) = log N(y_obs | 0, C_obs) + (n - n_obs) log N(0 | 0, 1), so the log likelihood of the
observed prefix is log N(r | 0, C_m) + (n - n_obs) log(2 pi) / 2 (one Cholesky of the full n x n, by
``zoo.gp.gaussian_log_evidence``: jitter only on failure).
"""

import math

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from numpyro.distributions import transforms

from inference.core.cache import program_cache
from zoo import gp
from zoo.kernels import NAMES, with_values
from zoo.kernels.base import Kernel
from zoo.regression import default_priors
from zoo.structure import program

__all__ = ["ParticleProgram"]


class _Target:
    """The target's pure functions for one capacity (module docstring); data are arguments, so that one compiled
    program serves every series of the same length."""

    def __init__(self, capacity: program.Capacity, num_integration_steps: int):
        self.capacity = capacity
        self.priors = {**program.priors(capacity), "noise": default_priors()["noise"]}
        self.transforms = {name: transforms.biject_to(p.support) for name, p in self.priors.items()}
        template = {name: jnp.zeros(p.event_shape) for name, p in self.priors.items()}
        flat, self.unravel = ravel_pytree(template)
        self.dimension = flat.shape[0]
        self.integration_steps = num_integration_steps

    def constrain(self, z):
        return {name: self.transforms[name](v) for name, v in self.unravel(z).items()}

    def unconstrain(self, values):
        return ravel_pytree({name: self.transforms[name].inv(values[name]) for name in self.priors})[0]

    def log_prior(self, z):
        total = 0.0
        for name, u in self.unravel(z).items():
            t = self.transforms[name]
            x = t(u)
            total = total + jnp.sum(self.priors[name].log_prob(x)) + jnp.sum(t.log_abs_det_jacobian(u, x))
        return total

    def log_likelihood(self, z, factor_index, columns, X, y, mask):
        values = self.constrain(z)
        K = program.gram(X, values, factor_index, columns, self.capacity)
        m = mask.astype(float)
        n = y.shape[0]
        C = (K + values["noise"] * jnp.eye(n)) * jnp.outer(m, m) + jnp.diag(1.0 - m)
        value, _ = gp.gaussian_log_evidence(y * m, C)
        return value + 0.5 * math.log(2 * math.pi) * (n - jnp.sum(m))

    def prior_draw(self, key):
        keys = jax.random.split(key, len(self.priors))
        draws = {name: p.sample(k) for (name, p), k in zip(self.priors.items(), keys, strict=True)}
        return self.unconstrain(draws)

    def hmc_moves(self, key, z, factor_index, columns, used, X, y, mask, step_size, num_moves: int):
        """``num_moves`` HMC moves of one particle: (z', mean acceptance probability)."""
        k_fresh, k_moves = jax.random.split(key)
        z = jnp.where(used, z, self.prior_draw(k_fresh))  # unused slots: their exact conditional, the prior

        def logdensity(u):
            return self.log_prior(u) + self.log_likelihood(u, factor_index, columns, X, y, mask)

        kernel = blackjax.hmc.build_kernel()
        inverse_mass = jnp.ones(self.dimension)  # the prior's covariance in z (every prior is unit-scale there)

        def one(state, k):
            state, info = kernel(k, state, logdensity, step_size, inverse_mass, self.integration_steps)
            return state, info.acceptance_rate

        state, rates = jax.lax.scan(one, blackjax.hmc.init(z, logdensity), jax.random.split(k_moves, num_moves))
        return state.position, jnp.mean(rates)


@program_cache
def _compiled(capacity: program.Capacity, num_integration_steps: int):
    """The target and its batched, jitted calls for one capacity (bounded cache: ``inference.core.cache``)."""
    target = _Target(capacity, num_integration_steps)
    return target, {
        "log_likelihoods": jax.jit(jax.vmap(target.log_likelihood, in_axes=(0, 0, 0, None, None, None))),
        "hmc": jax.jit(
            jax.vmap(target.hmc_moves, in_axes=(0, 0, 0, 0, 0, None, None, None, 0, None)), static_argnums=9
        ),
        "unconstrain": jax.jit(jax.vmap(target.unconstrain)),
        "constrain": jax.jit(jax.vmap(target.constrain)),
    }


class ParticleProgram:
    """The batched target on data X (n, 1), y (n,) for structures within ``capacity`` (module docstring)."""

    def __init__(self, capacity: program.Capacity, X: np.ndarray, y: np.ndarray, num_integration_steps: int = 10):
        self.capacity = capacity
        self._target, self._calls = _compiled(capacity, int(num_integration_steps))
        self.priors = self._target.priors
        self.X, self.y = jnp.asarray(X, float), jnp.asarray(y, float)

    # -- particles in and out -------------------------------------------------------------------------------------

    def pack(self, trees: list[Kernel], noises) -> dict[str, np.ndarray]:
        """The particles as arrays: z (P, d), factor_index (P, terms, factors), columns (P, slots), used (P, d)."""
        blocks = {name: [] for name in self.priors}
        used = {name: [] for name in self.priors}
        indices, columns = [], []
        for tree, noise in zip(trees, noises, strict=True):
            encoding = program.encode(tree, 1)
            arrays = encoding.arrays(self.capacity)
            indices.append(arrays["factor_index"])
            columns.append(arrays["columns"])
            values = encoding.slot_values(tree, self.capacity)
            flags = {name: np.zeros(v.shape, bool) for name, v in values.items()}
            for kind, slot in encoding.nodes:
                for param in NAMES[kind].PARAMS:
                    flags[program.site_name(kind, param)][slot] = True
            for name in self.priors:
                blocks[name].append(np.asarray(noise, float) if name == "noise" else values[name])
                used[name].append(np.asarray(True) if name == "noise" else flags[name])
        stacked = {name: jnp.asarray(np.stack(v)) for name, v in blocks.items()}
        flags = jax.vmap(lambda u: ravel_pytree({n: u[n].astype(float) for n in self.priors})[0])(
            {name: jnp.asarray(np.stack(v)) for name, v in used.items()}
        )
        return {
            "z": self._calls["unconstrain"](stacked),
            "factor_index": np.stack(indices),
            "columns": np.stack(columns),
            "used": flags > 0.5,
        }

    def unpack(self, trees: list[Kernel], z) -> tuple[list[Kernel], np.ndarray]:
        """The trees with the hyperparameters of z (P, d), and the noise variances (P,)."""
        values = {name: np.asarray(v) for name, v in self._calls["constrain"](z).items()}
        out = []
        for i, tree in enumerate(trees):
            encoding = program.encode(tree, 1)
            mine = {name: v[i] for name, v in values.items()}
            out.append(with_values(tree, encoding.kernel_values(tree, mine), 1))
        return out, values["noise"].copy()

    # -- the batched calls ------------------------------------------------------------------------------------------

    def log_likelihoods(self, packed: dict, mask: np.ndarray) -> np.ndarray:
        """log p(y_obs | structure, theta) of every particle (P,), y_obs the points where ``mask`` is true."""
        args = (packed["z"], packed["factor_index"], packed["columns"], self.X, self.y, jnp.asarray(mask))
        return np.asarray(self._calls["log_likelihoods"](*args))

    def hmc(self, key, packed: dict, mask: np.ndarray, step_size, num_moves: int):
        """``num_moves`` HMC moves of every particle with its step size (a scalar or (P,)): (z' (P, d), acceptance
        rates (P,))."""
        keys = jax.random.split(key, packed["z"].shape[0])
        z, rates = self._calls["hmc"](
            keys,
            packed["z"],
            packed["factor_index"],
            packed["columns"],
            packed["used"],
            self.X,
            self.y,
            jnp.asarray(mask),
            jnp.broadcast_to(jnp.asarray(step_size, float), keys.shape[:1]),
            int(num_moves),
        )
        return z, np.asarray(rates)
