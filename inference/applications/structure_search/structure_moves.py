"""Metropolis-Hastings moves on kernel structures for SMC over structures (docs/sources/duvenaud.md#smc).

Each proposal returns the new tree and log R, the log of

    p(T') q(T | T') / (p(T) q(T' | T))

without the likelihood: p is the truncated PCFG of ``tree_prior.py`` times the hyperparameters' priors, q the
proposal. The caller accepts with probability min(1, exp(log p(y | T') - log p(y | T) + log R)); log R is -inf for a
tree outside the prior's support. New parts are drawn from their prior (structure and hyperparameters), so their
prior densities cancel against the proposal's and log R reduces to the counting terms below.

- ``replace`` (subtree regeneration; Saad et al. 2023 sec. 3.2, and the "Bayesian synthesis" move it builds on):
  pick one of the N(T) nodes uniformly, redraw its subtree from the PCFG conditioned on the height left at that
  depth. The reverse picks the same position in T'. log R = log N(T) - log N(T').
- ``grow`` / ``prune`` (one kernel, each proposal with probability 1/2; AutoGP's attach / detach): grow picks a
  node u of T uniformly, an operator uniformly, a side uniformly, and a new subtree B from the PCFG conditioned on
  height <= r = max_depth - depth(u) - 1: T' has op(T_u, B) (or op(B, T_u)) at u. Prune picks one of the C(T)
  composite nodes uniformly and keeps one child, chosen uniformly. They are each other's reverse, and
  log R_grow = log(1 - p_leaf) + log Z_r + log N(T) - log C(T') (Z_r = ``TreePrior.height_probability(r)``: the
  conditioned PCFG's normaliser; the operator's prior (1 - p_leaf) / |ops| against its proposal 1 / |ops|; side and
  kept child 1/2 each), log R_prune its negative with the roles exchanged.
"""

import math

import numpy as np

from inference.applications.structure_search.tree_prior import TreePrior, height, nodes, replace_at
from zoo.kernels.base import Kernel

__all__ = ["grow_or_prune", "replace"]


def replace(tree: Kernel, prior: TreePrior, rng: np.random.Generator) -> tuple[Kernel, float]:
    """Subtree regeneration (module docstring): (T', log R)."""
    where = nodes(tree)
    node = where[rng.integers(len(where))]
    new = replace_at(tree, node.path, prior.sample(rng, prior.max_depth - node.depth))
    if not prior.in_support(new):
        return new, -math.inf
    return new, math.log(len(where)) - math.log(len(nodes(new)))


def grow_or_prune(tree: Kernel, prior: TreePrior, rng: np.random.Generator) -> tuple[Kernel, float]:
    """Grow with probability 1/2, else prune (module docstring): (T', log R); (T, 0) when the move is impossible
    (a tree without composite nodes cannot be pruned; a node at the maximal depth cannot grow)."""
    return _grow(tree, prior, rng) if rng.random() < 0.5 else _prune(tree, prior, rng)


def _grow(tree: Kernel, prior: TreePrior, rng: np.random.Generator) -> tuple[Kernel, float]:
    where = nodes(tree)
    node = where[rng.integers(len(where))]
    op = prior.operators[rng.integers(len(prior.operators))]
    new_on_left = rng.random() < 0.5
    r = prior.max_depth - node.depth - 1
    if r < 0:
        return tree, 0.0
    if height(node.kernel) > r:  # the old subtree would sink below the maximal depth
        return tree, -math.inf
    branch = prior.sample(rng, r)
    pair = (branch, node.kernel) if new_on_left else (node.kernel, branch)
    new = replace_at(tree, node.path, prior.composite(op, *pair, rng))
    if not prior.in_support(new):
        return new, -math.inf
    composites = sum(n.composite for n in nodes(new))
    log_r = math.log1p(-prior.p_leaf) + math.log(prior.height_probability(r))
    return new, log_r + math.log(len(where)) - math.log(composites)


def _prune(tree: Kernel, prior: TreePrior, rng: np.random.Generator) -> tuple[Kernel, float]:
    composites = [n for n in nodes(tree) if n.composite]
    if not composites:
        return tree, 0.0
    node = composites[rng.integers(len(composites))]
    kept = getattr(node.kernel, node.kernel.CHILDREN[rng.integers(2)])
    new = replace_at(tree, node.path, kept)
    r = prior.max_depth - node.depth - 1
    log_r = math.log1p(-prior.p_leaf) + math.log(prior.height_probability(r))
    return new, math.log(len(composites)) - math.log(len(nodes(new))) - log_r
