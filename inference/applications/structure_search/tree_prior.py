"""A prior over kernel structures and their hyperparameters for SMC over structures (docs/sources/duvenaud.md#smc):
a probabilistic context-free grammar over binary kernel trees, as AutoGP's (Saad et al. 2023, sec. 3.1), truncated
to a maximal depth and to the capacity of the shared program that evaluates every structure
(``zoo.structure.program``).

A node is a leaf with probability ``p_leaf``: a base kernel, chosen uniformly among ``base``; otherwise a composite
node: an operator chosen uniformly among ``operators`` ("+", "x", "CP") with two children drawn the same way. Every
hyperparameter is drawn from its default prior (``zoo.kernels.default_priors``: LogNormal(0, 1) on positive ones,
Normal(0, 1) on locations, the priors of ``gp/regression`` and ``gp/structure`` on standardised data). The tree is
an ordered binary tree of zoo kernels (``Sum``, ``Product``, ``Changepoint``); ``SE + Per`` and ``Per + SE`` are two
trees of one structure (``zoo.structure.canonical.key``), each with its own prior mass.

The truncation: the prior is the PCFG restricted to trees of depth <= ``max_depth`` (the root at depth 0) whose
encoding fits the capacity; its normaliser is a constant and cancels in every Metropolis-Hastings ratio. A subtree
drawn at a node of depth d is drawn from the PCFG conditioned on height <= max_depth - d (by rejection), whose
normaliser ``height_probability`` enters the grow and prune moves (``structure_moves.py``).
"""

import dataclasses
import functools
import math
from collections.abc import Iterator

import numpy as np
import numpyro.distributions as dist

from zoo.kernels import NAMES, default_priors
from zoo.kernels.base import Kernel, Product, Sum
from zoo.kernels.nonstationary import Changepoint
from zoo.structure.grammar import TIME_SERIES_BASE
from zoo.structure.program import Capacity, NotEncodable, encode

__all__ = ["OPERATORS", "Node", "TreePrior", "draw_value", "height", "nodes", "replace_at"]

OPERATORS = ("+", "x", "CP")
_MAX_TERMS, _MAX_FACTORS = 8, 4  # the capacity's cap (terms x factors gathered per evaluation, smc_program.py)


@dataclasses.dataclass(frozen=True)
class Node:
    """A node of a tree: its path from the root (child field names), the kernel there, its depth (root 0)."""

    path: tuple[str, ...]
    kernel: Kernel
    depth: int

    @property
    def composite(self) -> bool:
        return bool(self.kernel.CHILDREN)


def nodes(tree: Kernel, path: tuple[str, ...] = ()) -> list[Node]:
    """Every node of ``tree``, in reading order (a node before its children)."""
    out = [Node(path, tree, len(path))]
    for child in tree.CHILDREN:
        out += nodes(getattr(tree, child), (*path, child))
    return out


def height(tree: Kernel) -> int:
    """0 for a leaf, else 1 + the children's largest height."""
    return 1 + max(height(getattr(tree, c)) for c in tree.CHILDREN) if tree.CHILDREN else 0


def replace_at(tree: Kernel, path: tuple[str, ...], new: Kernel) -> Kernel:
    """``tree`` with the subtree at ``path`` replaced by ``new``."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    return dataclasses.replace(tree, **{head: replace_at(getattr(tree, head), rest, new)})


@functools.lru_cache(maxsize=1)
def _prior_constants() -> dict[str, tuple[float, float, bool]]:
    """(loc, scale, log-normal) of each default prior, read once (building NumPyro distributions per draw cost
    ~3 ms per leaf)."""
    out = {}
    for name, prior in default_priors().items():
        base = prior.base_dist if isinstance(prior, dist.LogNormal) else prior
        if not isinstance(base, dist.Normal):
            raise TypeError(f"tree_prior draws LogNormal and Normal priors only, got {type(prior).__name__}.")
        out[name] = (float(base.loc), float(base.scale), isinstance(prior, dist.LogNormal))
    return out


def draw_value(name: str, rng: np.random.Generator) -> float:
    """One draw of hyperparameter ``name``'s default prior with NumPy: exp(loc + scale e) or loc + scale e."""
    loc, scale, log_normal = _prior_constants()[name]
    value = loc + scale * rng.standard_normal()
    return math.exp(value) if log_normal else value


@dataclasses.dataclass(frozen=True)
class TreePrior:
    """The truncated PCFG (module docstring) over one input column."""

    base: tuple[str, ...] = TIME_SERIES_BASE
    operators: tuple[str, ...] = ("+", "x")
    p_leaf: float = 0.5
    max_depth: int = 2
    max_per_type: int = 2  # leaves of one base type: every slot of the capacity is computed at every evaluation

    def __post_init__(self):
        bad = [b for b in self.base if b not in NAMES or b in ("CP", "CW")]
        if bad or not self.base:
            raise ValueError(f"base kernels must be among {sorted(set(NAMES) - {'CP', 'CW'})}, got {list(self.base)}.")
        if not self.operators or any(o not in OPERATORS for o in self.operators):
            raise ValueError(f"operators must be among {list(OPERATORS)}, got {list(self.operators)}.")
        if not 0.0 < self.p_leaf < 1.0:
            raise ValueError(f"p_leaf must lie in (0, 1), got {self.p_leaf}.")
        for name in ("max_depth", "max_per_type"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < (name == "max_per_type"):
                raise ValueError(f"{name} must be a non-negative integer (max_per_type positive), got {value!r}.")

    @property
    def capacity(self) -> Capacity:
        """Slots for every tree of the support: min(2^max_depth, max_per_type) leaves of each base type,
        2^max_depth - 1 switches; the worst-case terms and factors of a depth-``max_depth`` tree, capped at 8 and 4.
        Trees beyond the capacity are out of the support. The per-type cap is a cost: each evaluation computes every
        slot's Gram matrix (n^2 transcendentals each), used or not, and at n = 60 the base kernels' matrices were
        most of an HMC gradient's time with 4 slots per type."""
        leaves = 2**self.max_depth
        terms, factors = 1, 1
        for _ in range(self.max_depth):
            grown = [(2 * terms, factors)] if "+" in self.operators else []
            grown += [(terms * terms, 2 * factors)] if "x" in self.operators else []
            grown += [(2 * terms, factors + 1)] if "CP" in self.operators else []
            terms, factors = max(t for t, _ in grown), max(f for _, f in grown)
        counts = dict.fromkeys(self.base, min(leaves, self.max_per_type))
        if "CP" in self.operators:
            counts["CP"] = leaves - 1
        return Capacity.of(counts, min(terms, _MAX_TERMS), min(factors, _MAX_FACTORS))

    def height_probability(self, r: int) -> float:
        """P(height <= r) of an untruncated PCFG tree: Z_0 = p_leaf, Z_r = p_leaf + (1 - p_leaf) Z_{r-1}^2."""
        z = self.p_leaf
        for _ in range(r):
            z = self.p_leaf + (1.0 - self.p_leaf) * z * z
        return z

    def in_support(self, tree: Kernel, capacity: Capacity | None = None) -> bool:
        """Depth <= max_depth and the encoding fits the capacity."""
        if height(tree) > self.max_depth:
            return False
        try:
            need = encode(tree, 1).capacity
        except NotEncodable:
            return False
        return (capacity or self.capacity).holds(need)

    def leaf(self, name: str, rng: np.random.Generator) -> Kernel:
        """Base kernel ``name`` with its hyperparameters drawn from their priors."""
        cls = NAMES[name]
        return cls(**{p: draw_value(p, rng) for p in cls.PARAMS})

    def composite(self, op: str, left: Kernel, right: Kernel, rng: np.random.Generator) -> Kernel:
        """``op`` of two subtrees (a changepoint's location and width drawn from their priors)."""
        if op == "+":
            return Sum(left, right)
        if op == "x":
            return Product(left, right)
        return Changepoint(left, right, **{p: draw_value(p, rng) for p in Changepoint.PARAMS})

    def sample(self, rng: np.random.Generator, max_height: int | None = None) -> Kernel:
        """A tree from the PCFG conditioned on height <= ``max_height`` (default ``max_depth``), by rejection."""
        limit = self.max_depth if max_height is None else max_height
        if limit < 0:
            raise ValueError("no tree has a negative height.")
        while True:
            tree = self._grow(rng, limit)
            if tree is not None:
                return tree

    def draw(self, rng: np.random.Generator) -> Kernel:
        """A tree from the truncated prior (depth and capacity), by rejection: an SMC particle's initial structure."""
        while True:
            tree = self.sample(rng)
            if self.in_support(tree):
                return tree

    def _grow(self, rng: np.random.Generator, limit: int) -> Kernel | None:
        """A PCFG draw, or None as soon as it exceeds height ``limit`` (then the caller draws again)."""
        if rng.random() < self.p_leaf:
            return self.leaf(self.base[rng.integers(len(self.base))], rng)
        if limit == 0:
            return None
        op = self.operators[rng.integers(len(self.operators))]
        left = self._grow(rng, limit - 1)
        if left is None:
            return None
        right = self._grow(rng, limit - 1)
        return None if right is None else self.composite(op, left, right, rng)

    def log_probability(self, tree: Kernel) -> float:
        """log PCFG(tree) of the structure's choices (not its hyperparameters), without the truncation's normaliser."""
        if not tree.CHILDREN:
            return math.log(self.p_leaf / len(self.base))
        children = sum(self.log_probability(getattr(tree, c)) for c in tree.CHILDREN)
        return math.log((1.0 - self.p_leaf) / len(self.operators)) + children

    def trees(self, max_height: int | None = None) -> Iterator[Kernel]:
        """Every ordered tree of the PCFG up to ``max_height`` (default ``max_depth``), with default
        hyperparameters: for exact checks on small grammars."""
        limit = self.max_depth if max_height is None else max_height
        for name in self.base:
            yield NAMES[name]()
        if limit == 0:
            return
        smaller = list(self.trees(limit - 1))
        rng = np.random.default_rng(0)
        for op in self.operators:
            for left in smaller:
                for right in smaller:
                    yield self.composite(op, left, right, rng)
