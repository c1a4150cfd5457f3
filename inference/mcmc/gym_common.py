"""What the gym's BlackJAX engines (``mclmc``, ``mams``, ``chees``, ``mala``, ``pathfinder``; docs/gym.md) share:
the program's log density on NumPyro's unconstrained space, the chains' starting points, the map back to
constrained draws and the options every one of them declares.

The log density is the one ``nuts`` samples (``-potential_energy``: log-Jacobian included), and the starts are
``nuts``' start search (uniform on (-r, r) in the unconstrained space, retried until the potential and its gradient
are finite: ``inference.mcmc.starts``), so the engines differ from NUTS in the sampler only. ``init="pathfinder"``
(``inference.mcmc.pathfinder.chain_starts``, docs/gym.md#pathfinder-init) starts ``mams`` and ``chees`` elsewhere.
"""

from typing import Any

import jax
from numpyro.infer.util import constrain_fn, potential_energy

from inference.core import options as opt
from inference.mcmc.starts import initial_positions
from zoo.errors import IncompatibleEngineError
from zoo.options import Option


def logdensity(model, params, observed):
    """``z -> log p(z | data)`` up to a constant on the unconstrained space (BlackJAX's ``logdensity_fn``)."""

    def fn(z):
        return -potential_energy(model, (params,), observed, z)

    return fn


def constrained(model, params, observed, positions):
    """Unconstrained draws (S, ...) -> constrained values of every site, deterministic ones included."""
    return jax.vmap(lambda z: constrain_fn(model, (params,), observed, z, True))(positions)


def starts(model, key, num_chains: int, params, observed, radius: float, timer) -> dict[str, jax.Array]:
    """One unconstrained start per chain, each leaf (C, ...); finite potential and gradient (NumPyro's check)."""
    return initial_positions(model, key, num_chains, params, observed, radius, timer, check_gradient=True)


def dimension(z0: dict[str, jax.Array]) -> int:
    """Unconstrained dimension of one chain's start (leaves carry the chain axis first)."""
    return sum(int(leaf[0].size) for leaf in jax.tree.leaves(z0))


def require_dimension(engine: str, z0, minimum: int) -> None:
    """MCLMC's momentum lives on the unit sphere, which needs two dimensions (BlackJAX's ``mclmc.init`` raises
    inside the trace otherwise); say so by name rather than from inside a jitted program."""
    if dimension(z0) < minimum:
        raise IncompatibleEngineError(
            f"engine {engine} needs at least {minimum} unconstrained dimensions; the model has {dimension(z0)}"
        )


def common_options(num_chains: int, num_samples: int) -> dict[str, Option]:
    """Chains, draws, fixed parameters and the start radius (the meanings of ``nuts``' options of those names)."""
    return {
        "num_chains": opt.num_chains(num_chains),
        "num_samples": opt.num_samples(num_samples),
        "params": opt.params({}),
        "init_radius": Option("float", 2.0, "chains start uniform on (-r, r) in the unconstrained space", above=0.0),
    }


def tuning_stages(frac_tune3: float) -> dict[str, Option]:
    """The lengths of BlackJAX's three MCLMC tuning stages (Robnik et al. 2023, Alg. 1), as fractions of
    num_samples; stage 3 (L from the autocorrelation) defaults differ between mclmc and mams."""
    return {
        "frac_tune1": Option(
            "float", 0.1, "stage 1 (step size) length, as a fraction of num_samples", minimum=0.0, maximum=1.0
        ),
        "frac_tune2": Option(
            "float",
            0.1,
            "stage 2 (step size, L, preconditioner) length, fraction of num_samples",
            minimum=0.0,
            maximum=1.0,
        ),
        "frac_tune3": Option(
            "float",
            frac_tune3,
            "stage 3 (L from the autocorrelation) length, fraction of num_samples",
            minimum=0.0,
            maximum=1.0,
        ),
    }


def chain_method() -> Option:
    return opt.chain_method()


def static_options(options: dict[str, Any], runner: set[str]) -> tuple:
    """The options that shape the compiled program (hashable, for ``program_cache``)."""
    return tuple(sorted((k, v) for k, v in options.items() if k not in runner))
