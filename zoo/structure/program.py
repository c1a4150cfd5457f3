"""A kernel structure as data, so that one compiled program evaluates every structure within a capacity
(docs/performance.md#shared-program).

Every kernel of the search grammar is a sum of products once changepoints and windows are multiplied out:
CP(k1, k2)(x, x') = s(x) k1(x, x') s(x') + (1 - s(x)) k2(x, x') (1 - s(x')) is a sum of two products whose extra
factors are the rank-one matrices s s^T and (1 - s)(1 - s)^T (Duvenaud eq. 2.21), and products distribute over
sums. So a kernel is encoded by

- its *slots*: one per parametrised node (a base kernel on one input column, or a CP / CW on one column), numbered
  per type in reading order, each with its input column;
- its *terms*: a (terms, factors) array of indices into a bank of (n, n) matrices that holds, for every slot of the
  capacity, the base kernel's Gram matrix or the switch's weight and complement outer products, after a matrix of
  ones (the padding factor, index 0) and one of zeros (the padding term, index 1).

K = sum_p prod_f bank[index[p, f]] is then the kernel's training Gram matrix for any structure that fits the
capacity: the structure is in the index array and the slots' columns (data), the capacity (slots per type, terms,
factors per term) in the shapes, so a search compiles one program per capacity instead of one per structure. Each
base kernel's matrix is computed by the kernel's own class, so the numbers are those of ``kernel(X)`` up to the order
of the floating-point sums.

A kernel is encodable when every base kernel and switch sees one input column (the search's grammar: base kernels
on one column each, CP / CW along the only one); anything else (an ARD kernel over several columns, the additive
kernel) raises ``NotEncodable`` and is fitted by its own program.
"""

import dataclasses
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from zoo.kernels import NAMES, default_priors, site_names
from zoo.kernels.base import ActiveDims, Constant, Kernel, Product, Sum
from zoo.kernels.priors import LOCATIONS, parametrised_nodes

Array = Any

BASES = ("SE", "RQ", "Lin", "Per", "ZPer", "Cos", "C", "WN", "M12", "M32", "M52")
SWITCHES = ("CP", "CW")
TYPES = BASES + SWITCHES  # the order of slots in the bank and of the ``columns`` array
ONES, ZEROS = 0, 1  # bank indices of the padding factor and the padding term


class NotEncodable(ValueError):
    """A kernel outside the encodable set (module docstring)."""


@dataclasses.dataclass(frozen=True)
class Capacity:
    """Slots per type (a count for each of ``TYPES``), terms and factors per term: the shapes of one program."""

    slots: tuple[int, ...]
    terms: int
    factors: int

    def __post_init__(self):
        if len(self.slots) != len(TYPES) or any(s < 0 for s in self.slots) or min(self.terms, self.factors) < 1:
            raise ValueError(f"invalid capacity {self}.")

    @classmethod
    def of(cls, counts: Mapping[str, int], terms: int, factors: int) -> "Capacity":
        unknown = set(counts) - set(TYPES)
        if unknown:
            raise ValueError(f"unknown slot types {sorted(unknown)}; types are {list(TYPES)}.")
        return cls(tuple(int(counts.get(t, 0)) for t in TYPES), int(terms), int(factors))

    @classmethod
    def parse(cls, text: str, terms: int, factors: int) -> "Capacity":
        """From ``"SE:2,Per:1,CP:1"`` (the model option's form)."""
        counts = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            name, _, count = part.partition(":")
            if not count.strip().isdigit():
                raise ValueError(f"slot counts are written TYPE:COUNT, e.g. 'SE:2,Per:1'; got {part!r}.")
            counts[name.strip()] = int(count)
        return cls.of(counts, terms, factors)

    def counts(self) -> dict[str, int]:
        return {t: s for t, s in zip(TYPES, self.slots, strict=True) if s}

    def text(self) -> str:
        return ",".join(f"{t}:{s}" for t, s in self.counts().items())

    def union(self, other: "Capacity") -> "Capacity":
        """The smallest capacity that holds both."""
        slots = tuple(max(a, b) for a, b in zip(self.slots, other.slots, strict=True))
        return Capacity(slots, max(self.terms, other.terms), max(self.factors, other.factors))

    def holds(self, other: "Capacity") -> bool:
        return self.union(other) == self

    def offsets(self) -> dict[str, int]:
        """Bank index of each type's first matrix (a switch has two per slot: weight, then complement)."""
        index, out = 2, {}
        for t, s in zip(TYPES, self.slots, strict=True):
            out[t] = index
            index += 2 * s if t in SWITCHES else s
        return out


@dataclasses.dataclass(frozen=True)
class Encoding:
    """One kernel's structure as slots and terms (module docstring).

    nodes: (type, slot) of each parametrised node in reading order (``zoo.kernels.priors.parametrised_nodes``);
    columns: the input column of each slot, by type; terms: each term's factors as (type, slot, part), part 1 for
    a switch's complement, else 0."""

    nodes: tuple[tuple[str, int], ...]
    columns: Mapping[str, tuple[int, ...]]
    terms: tuple[tuple[tuple[str, int, int], ...], ...]

    @property
    def capacity(self) -> Capacity:
        counts = {t: len(c) for t, c in self.columns.items()}
        return Capacity.of(counts, len(self.terms), max(len(t) for t in self.terms))

    def arrays(self, capacity: Capacity) -> dict[str, np.ndarray]:
        """The data of the shared program, padded to ``capacity``: ``factor_index`` (terms, factors), each term's
        factors as bank indices (padding: ``ONES``; a padding term: ``ZEROS`` first), and ``columns`` (total slots,),
        each slot's input column (-1: unused)."""
        if not capacity.holds(self.capacity):
            raise ValueError(f"capacity {capacity} cannot hold {self.capacity}.")
        offsets = capacity.offsets()
        index = np.full((capacity.terms, capacity.factors), ONES, dtype=np.int64)
        index[len(self.terms) :, 0] = ZEROS
        for p, term in enumerate(self.terms):
            for f, (t, slot, part) in enumerate(term):
                index[p, f] = offsets[t] + (2 * slot + part if t in SWITCHES else slot)
        columns = np.full(sum(capacity.slots), -1, dtype=np.int64)
        start = 0
        for t, count in zip(TYPES, capacity.slots, strict=True):
            used = self.columns.get(t, ())
            columns[start : start + len(used)] = used
            start += count
        return {"factor_index": index, "columns": columns}

    def slot_values(self, kernel: Kernel, capacity: Capacity, given: Mapping[str, Array] | None = None) -> dict:
        """Constrained values of the shared program's sites (``site_name(type, param)``: (slots,)) holding
        ``kernel``'s hyperparameters in its slots (or ``given``, by the kernel's own site names), 1 in unused
        slots (0 for locations)."""
        values = {
            site_name(t, p): np.full(count, 0.0 if p in LOCATIONS else 1.0)
            for t, count in capacity.counts().items()
            for p in NAMES[t].PARAMS
        }
        given = dict(given or {})
        names = iter(site_names(kernel))
        for node, (t, slot) in zip(parametrised_nodes(kernel), self.nodes, strict=True):
            for p in node.PARAMS:
                value = given.get(next(names), getattr(node, p))
                values[site_name(t, p)][slot] = float(np.ravel(np.asarray(value, float))[0])
        return values

    def kernel_values(self, kernel: Kernel, estimates: Mapping[str, Array]) -> dict[str, np.ndarray]:
        """``kernel``'s hyperparameters by its own site names, read from the shared program's site values (one
        chain); an ARD lengthscale of a base kernel on one column gets shape (1,), as ``gp/regression`` has it."""
        out = {}
        names = iter(site_names(kernel))
        for node, (t, slot) in zip(parametrised_nodes(kernel), self.nodes, strict=True):
            for p in node.PARAMS:
                value = np.asarray(estimates[site_name(t, p)], float)[slot]
                out[next(names)] = value.reshape(node.param_shape(p, 1))
        return out


def site_name(kind: str, param: str) -> str:
    """The shared program's site of hyperparameter ``param`` of every slot of type ``kind``: ``se_lengthscale``."""
    return f"{kind.lower()}_{param}"


def encode(kernel: Kernel, D: int) -> Encoding:
    """``kernel`` (acting on inputs with D columns) as slots and terms, or ``NotEncodable``."""
    nodes: list[tuple[str, int]] = []
    columns: dict[str, list[int]] = {}

    def slot(kind: str, cols: tuple[int, ...], node: Kernel) -> int:
        if len(cols) != 1:
            raise NotEncodable(f"{node.SYMBOL} in {kernel} sees {len(cols)} input columns; slots see one.")
        columns.setdefault(kind, []).append(cols[0])
        nodes.append((kind, len(columns[kind]) - 1))
        return nodes[-1][1]

    def walk(node: Kernel, cols: tuple[int, ...]) -> list[tuple]:
        if isinstance(node, Sum):
            return walk(node.left, cols) + walk(node.right, cols)
        if isinstance(node, Product):
            left, right = walk(node.left, cols), walk(node.right, cols)  # in reading order: slots are numbered so
            return [a + b for a in left for b in right]
        if isinstance(node, ActiveDims):
            return walk(node.kernel, tuple(cols[d] for d in node.dims))
        if node.SYMBOL in SWITCHES and type(node) is NAMES[node.SYMBOL]:
            s = slot(node.SYMBOL, cols, node)
            first, second = (walk(getattr(node, c), cols) for c in node.CHILDREN)
            weight, complement = (node.SYMBOL, s, 0), (node.SYMBOL, s, 1)
            return [t + (weight,) for t in first] + [t + (complement,) for t in second]
        if node.SYMBOL in BASES and type(node) is NAMES[node.SYMBOL]:
            return [((node.SYMBOL, slot(node.SYMBOL, cols, node), 0),)]
        raise NotEncodable(f"{node.SYMBOL} in {kernel} is not among the encodable kernels {list(TYPES)}.")

    terms = walk(kernel, tuple(range(D)))
    return Encoding(tuple(nodes), {t: tuple(c) for t, c in columns.items()}, tuple(terms))


def bank(X: Array, values: Mapping[str, Array], columns: Array, capacity: Capacity) -> Array:
    """The bank of ``capacity``'s slots on inputs X (n, D), (2 + slot matrices, n, n): ones, zeros, then each type's
    Gram matrices (bases) or weight and complement outer products (switches), slot by slot. ``values``: the constrained
    site values (``site_name``: (slots,)); columns: (total slots,) input column per slot, -1 for a slot the structure
    does not use (computed on column 0 and never gathered). Every slot is computed, vmapped per type: skipping the
    unused ones by a ``cond`` in a loop over the slots made the airline search 1.4x slower
    (docs/performance.md#shared-program)."""
    n = X.shape[0]
    parts = [jnp.ones((1, n, n)), jnp.zeros((1, n, n))]
    start = 0
    for kind, count in zip(TYPES, capacity.slots, strict=True):
        if count == 0:
            continue
        cols = jnp.maximum(columns[start : start + count], 0)
        start += count
        params = {p: values[site_name(kind, p)] for p in NAMES[kind].PARAMS}
        x = jnp.take(X, cols, axis=1).T  # (count, n)
        matrices = jax.vmap(lambda p, xi, kind=kind: _slot_matrices(kind, p, xi))(params, x)
        parts.append(matrices.reshape(-1, n, n))  # a switch's weight and complement, slot by slot
    return jnp.concatenate(parts)


def _slot_matrices(kind: str, params: Mapping[str, Array], x: Array) -> Array:
    """One slot's matrices on inputs x (n,): a base kernel's Gram matrix (1, n, n); a switch's weight and
    complement outer products w w^T, (1 - w)(1 - w)^T (2, n, n), w the weight of a CP's first / a CW's inside
    argument."""
    if kind in SWITCHES:
        w = NAMES[kind](Constant(), Constant(), **params).weight(x[:, None])
        return jnp.stack([w[:, None] * w[None, :], (1 - w)[:, None] * (1 - w)[None, :]])
    return NAMES[kind](**params)(x[:, None])[None]


def gram(X: Array, values: Mapping[str, Array], factor_index: Array, columns: Array, capacity: Capacity) -> Array:
    """The encoded kernel's training Gram matrix K (n, n) = sum_p prod_f bank[factor_index[p, f]].

    A gather of each term's factors: a product over a 0/1 mask of the whole bank (no gather, no scatter-add in the
    derivative) was 1.2-4x slower in the marginal likelihood's gradient (docs/performance.md#shared-program)."""
    matrices = bank(X, values, columns, capacity)
    index = jnp.asarray(factor_index).astype(jnp.int32)
    terms = matrices[index[:, 0]]
    for f in range(1, capacity.factors):
        terms = terms * matrices[index[:, f]]
    return jnp.sum(terms, 0)


def priors(capacity: Capacity) -> dict:
    """The prior of each site of the shared program: the default prior of its hyperparameter, per slot."""
    defaults = default_priors()
    return {
        site_name(t, p): defaults[p].expand([count]).to_event(1)
        for t, count in capacity.counts().items()
        for p in NAMES[t].PARAMS
    }
