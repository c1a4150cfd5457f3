"""A canonical form of kernel expressions: sums and products are commutative and associative, so every sum or
product is flattened and its operands sorted by their own canonical text (docs/sources/duvenaud.md#canonical-form).

``canonical(k)`` keeps k's hyperparameters (each node moves with its values); ``key(k)`` is the canonical text,
``str(canonical(k))``, which names a structure: ``key(SE + Lin) == key(Lin + SE)`` and
``key((SE x Per) x Lin) == key(Lin x (Per x SE))``. CP and CW are not commutative (their first argument applies
before the change, or inside the window), so their arguments keep their order; ``k.on(dims)`` keeps its dims.
"""

import dataclasses
from functools import reduce

from zoo.kernels.base import ActiveDims, Kernel, Product, Sum


def summands(kernel: Kernel) -> list[Kernel]:
    """The operands of a (nested) sum, left to right; a kernel that is not a sum is its own one summand."""
    if isinstance(kernel, Sum):
        return summands(kernel.left) + summands(kernel.right)
    return [kernel]


def factors(kernel: Kernel) -> list[Kernel]:
    """The operands of a (nested) product, left to right; a kernel that is not a product is its own one factor."""
    if isinstance(kernel, Product):
        return factors(kernel.left) + factors(kernel.right)
    return [kernel]


def add(terms: list[Kernel]) -> Kernel:
    """t_0 + t_1 + ... folded to the left (the shape ``parse`` builds)."""
    return reduce(Sum, terms)


def multiply(terms: list[Kernel]) -> Kernel:
    """t_0 x t_1 x ... folded to the left."""
    return reduce(Product, terms)


def _sorted(terms: list[Kernel]) -> list[Kernel]:
    # A stable sort on the canonical text: equal texts keep their order, so hyperparameters of repeated
    # structures (SE + SE) stay with the operand they came with.
    return sorted(terms, key=str)


def canonical(kernel: Kernel) -> Kernel:
    """``kernel`` with every sum and product flattened and sorted, children first; hyperparameters kept."""
    if isinstance(kernel, Sum):
        return add(_sorted([canonical(t) for t in summands(kernel)]))
    if isinstance(kernel, Product):
        return multiply(_sorted([canonical(f) for f in factors(kernel)]))
    if isinstance(kernel, ActiveDims):
        return ActiveDims(canonical(kernel.kernel), kernel.dims)
    if kernel.CHILDREN:
        children = {name: canonical(getattr(kernel, name)) for name in kernel.CHILDREN}
        return dataclasses.replace(kernel, **children)
    return kernel


def key(kernel: Kernel) -> str:
    """The canonical text of ``kernel``'s structure (hyperparameters ignored)."""
    return str(canonical(kernel))
