"""Exact symmetries of a model's posterior, declared once per family (``ModelSpec.symmetry``), for the random
permutation sampler of Fruhwirth-Schnatter (2001, JASA 96:194-209, sec. 3.2; docs/gym.md#symmetry).

A ``Symmetry`` is a finite group G acting on the values of a model's latent sites (deterministic ones included) with
p(g . x | y) = p(x | y) for every g in G and every data set: the prior and the likelihood are both unchanged, and the
action has unit Jacobian (sign flips and permutations), so the density on NumPyro's unconstrained space is unchanged
too. Moving a posterior draw by a uniformly random g in G is then a Metropolis move with acceptance 1: it leaves the
posterior invariant, and a chain that settled in one of the |G| mirror modes visits all of them.

The declared ones:
- ``signed_column_permutations("W", rank)``: W (P, R) -> W Pi S for a permutation Pi and signs S of its R columns,
  which leaves W W^T unchanged (``gp/icm``'s B = W W^T + diag(kappa)); order 2^R R!, for R = 1 just W -> -W.
- ``even_sign_flips(names)``: x_l -> s_l x_l with s_l in {-1, 1} and prod_l s_l = 1 (``deep_gp/linear``, whose
  slopes enter only through their squares and their product); order 2^(L-1).
- ``relabellings(names, k)``: one permutation of the leading (mode) axis of every named site (``dagp/exact``'s K
  exchangeable modes); order K!.
"""

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

Array = Any

__all__ = [
    "STEP_STREAM",
    "Symmetry",
    "even_sign_flips",
    "relabellings",
    "signed_column_permutations",
    "step_key",
    "symmetrise",
]

# The random stream of the symmetry step, apart from the run's own (which uses jax.random.key(seed) directly).
STEP_STREAM = 1


@dataclass(frozen=True)
class Symmetry:
    """A finite group under which a model's posterior is exactly invariant.

    description: the group and why the posterior is invariant, in words.
    order: |G|.
    sites: the sites some element moves; every other site is invariant (a site held fixed in ``sites`` breaks the
        symmetry of the conditional posterior, unless its value is a fixed point).
    random_element: ``key -> g``, uniform on G (a pytree of arrays).
    act: ``(g, values) -> values``: one draw's site values (no leading axes) moved by g; sites not in ``sites``
        and sites absent from ``values`` pass through.
    """

    description: str
    order: int
    sites: frozenset[str]
    random_element: Callable[[Array], Any]
    act: Callable[[Any, Mapping[str, Array]], dict[str, Array]]


def symmetrise(symmetry: Symmetry, draws: Mapping[str, Array], key: Array) -> dict[str, np.ndarray]:
    """Every draw (each site (chain, draw, *shape)) moved by its own uniformly random element of the group, from
    independent keys (``jax.random.split(key, chains * draws)``, in chain-major order)."""
    shapes = {name: np.shape(x) for name, x in draws.items()}
    chains, per_chain = next(iter(shapes.values()))[:2]
    flat = {name: np.reshape(np.asarray(x), (chains * per_chain, *shapes[name][2:])) for name, x in draws.items()}
    moved = _move_each(symmetry, jax.random.split(key, chains * per_chain), flat)
    return {name: np.asarray(moved[name]).reshape(shapes[name]) for name in draws}


def step_key(seed: int) -> Array:
    """The key of the symmetry step applied to the draws of a run seeded ``seed`` (``symmetrise``'s ``key``)."""
    return jax.random.fold_in(jax.random.key(seed), STEP_STREAM)


@partial(jax.jit, static_argnums=0)
def _move_each(symmetry: Symmetry, keys: Array, flat: Mapping[str, Array]) -> dict[str, Array]:
    """keys (S,), each site (S, *shape): draw s moved by the element of keys[s] (one compiled program)."""
    return jax.vmap(lambda k, values: symmetry.act(symmetry.random_element(k), values))(keys, flat)


def signed_column_permutations(name: str, rank: int) -> Symmetry:
    """W (P, R) -> W[:, perm] * signs: W W^T is unchanged, and so is an iid N(0, s^2) prior on W's entries."""

    def random_element(key):
        k_perm, k_sign = jax.random.split(key)
        return jax.random.permutation(k_perm, rank), jax.random.rademacher(k_sign, (rank,), dtype=float)

    def act(g, values):
        perm, signs = g
        moved = dict(values)
        if name in values:
            moved[name] = values[name][..., perm] * signs
        return moved

    return Symmetry(
        description=f"signed permutations of the {rank} column(s) of {name} (W W^T is unchanged)",
        order=2**rank * math.factorial(rank),
        sites=frozenset({name}),
        random_element=random_element,
        act=act,
    )


def even_sign_flips(names: tuple[str, ...]) -> Symmetry:
    """x_l -> s_l x_l for the scalar sites ``names`` with signs s_l whose product is 1: the first L - 1 signs
    uniform and independent, the last their product (a uniform element of the even sign patterns)."""
    count = len(names)

    def random_element(key):
        free = jax.random.rademacher(key, (count - 1,), dtype=float)
        return jnp.concatenate([free, jnp.prod(free, keepdims=True)])

    def act(signs, values):
        moved = dict(values)
        for index, name in enumerate(names):
            if name in values:
                moved[name] = values[name] * signs[index]
        return moved

    return Symmetry(
        description=f"sign flips of an even number of {', '.join(names)} (their product and squares are unchanged)",
        order=2 ** (count - 1),
        sites=frozenset(names),
        random_element=random_element,
        act=act,
    )


def relabellings(names: tuple[str, ...], k: int) -> Symmetry:
    """One permutation of the leading (mode) axis of every site in ``names``: K exchangeable components."""

    def random_element(key):
        return jax.random.permutation(key, k)

    def act(perm, values):
        moved = dict(values)
        for name in names:
            if name in values:
                moved[name] = values[name][perm]
        return moved

    return Symmetry(
        description=f"relabellings of the {k} exchangeable modes (one permutation of the mode axis of "
        f"{', '.join(names)})",
        order=math.factorial(k),
        sites=frozenset(names),
        random_element=random_element,
        act=act,
    )
