"""The search operators of the kernel grammar (Duvenaud 2014, sec. 3.3 and App. C; docs/sources/duvenaud.md#grammar)
and the expansion of a kernel into its candidates, each structure once (``zoo.structure.canonical``).

S is any subexpression, B any base-kernel occurrence, B' any base kernel (every type on every input dimension),
C the constant kernel:

    C.1  S -> S + B          C.4  S -> CP(S, S)       C.8   S -> B
    C.2  S -> S x B          C.5  S -> CW(S, S)       C.9   S + S' -> S
    C.3  B -> B'             C.6  S -> CW(S, C)       C.10  S x S' -> S
                             C.7  S -> CW(C, S)       C.11  S -> S x (B + C)

Subexpressions are read on the canonical n-ary form (docs/sources/duvenaud.md#grammar-subexpressions): the whole
kernel, every operand of every sum and product, every argument of CP and CW, recursively; a sum's partial sums
(a + b of a + b + c) are not subexpressions. The search starts from no kernel (the thesis's WN: our regression
model always has its noise variance), whose only expansions are the base kernels.

New kernels come from a ``Factory``: the default gives default hyperparameters; the search passes one that draws
them on the data's scales. A copied subexpression (the two arguments of C.4 and C.5) keeps its values in both.
"""

import dataclasses
from collections.abc import Callable, Iterator, Sequence

from zoo.errors import ZooError
from zoo.kernels import NAMES
from zoo.kernels.base import ActiveDims, Constant, Kernel, Product, Sum
from zoo.kernels.nonstationary import Changepoint, ChangeWindow
from zoo.structure.canonical import add, canonical, factors, key, multiply, summands

OPERATORS = ("C.1", "C.2", "C.3", "C.4", "C.5", "C.6", "C.7", "C.8", "C.9", "C.10", "C.11")
BASIC = ("C.1", "C.2", "C.3")  # all that the thesis's multidimensional experiments used (sec. 3.8.4)
ONE_DIMENSIONAL = frozenset({"C.4", "C.5", "C.6", "C.7"})  # CP and CW switch along one input
TIME_SERIES_BASE = ("SE", "RQ", "Lin", "Per")  # sec. 3.6 (WN is the model's own noise)


class GrammarError(ZooError):
    """An unknown base kernel or operator, or a grammar that cannot act on the data."""


@dataclasses.dataclass(frozen=True)
class Factory:
    """Makes the kernels an operator introduces. Override to choose their starting hyperparameters."""

    def base(self, cls: type, dim: int | None) -> Kernel:
        """Base kernel ``cls`` on input column ``dim`` (None: the only column, no subscript)."""
        kernel = cls()
        return kernel if dim is None else kernel.on(dim)

    def constant(self) -> Kernel:
        return Constant()

    def changepoint(self, first: Kernel, second: Kernel) -> Kernel:
        return Changepoint(first, second)

    def window(self, inside: Kernel, outside: Kernel) -> Kernel:
        return ChangeWindow(inside, outside)


@dataclasses.dataclass(frozen=True)
class Grammar:
    """Base kernels (names of ``zoo.kernels.NAMES``), input columns D and the operators to apply."""

    base: tuple[str, ...] = TIME_SERIES_BASE
    D: int = 1
    operators: tuple[str, ...] = OPERATORS

    def __post_init__(self):
        unknown = [b for b in self.base if b not in NAMES or b in ("CP", "CW")]
        if unknown or not self.base:
            raise GrammarError(
                f"base kernels must be among {sorted(set(NAMES) - {'CP', 'CW'})}, got {list(self.base)}."
            )
        bad = [o for o in self.operators if o not in OPERATORS]
        if bad or not self.operators:
            raise GrammarError(f"operators must be among {list(OPERATORS)}, got {list(self.operators)}.")
        if isinstance(self.D, bool) or not isinstance(self.D, int) or self.D < 1:
            raise GrammarError(f"D (input columns) must be a positive integer, got {self.D!r}.")
        if self.D > 1 and ONE_DIMENSIONAL & set(self.operators):
            raise GrammarError(
                f"operators {sorted(ONE_DIMENSIONAL & set(self.operators))} (changepoints, windows) switch along one "
                f"input; with D = {self.D} use the basic operators {list(BASIC)}."
            )

    def base_kernels(self, factory: Factory) -> list[Kernel]:
        """Every base type on every input dimension (B' of the grammar)."""
        dims = [None] if self.D == 1 else list(range(self.D))
        return [factory.base(NAMES[name], d) for name in self.base for d in dims]


def _is_base(kernel: Kernel) -> bool:
    inner = kernel.kernel if isinstance(kernel, ActiveDims) else kernel
    return not inner.CHILDREN


def rewrites(kernel: Kernel, rule: Callable[[Kernel], Sequence[Kernel]]) -> Iterator[Kernel]:
    """``kernel`` with one subexpression S replaced by each of ``rule(S)``, over every subexpression (module
    docstring). ``kernel`` is in canonical form."""
    yield from rule(kernel)
    if isinstance(kernel, Sum | Product):
        operands = summands(kernel) if isinstance(kernel, Sum) else factors(kernel)
        join = add if isinstance(kernel, Sum) else multiply
        for i, operand in enumerate(operands):
            for new in rewrites(operand, rule):
                yield join([*operands[:i], new, *operands[i + 1 :]])
    elif isinstance(kernel, ActiveDims):
        return  # a restricted base kernel is a leaf of the grammar
    else:
        for name in kernel.CHILDREN:
            for new in rewrites(getattr(kernel, name), rule):
                yield dataclasses.replace(kernel, **{name: new})


def _removals(kernel: Kernel) -> list[Kernel]:
    """C.9 and C.10 at one node: a sum or product without one of its operands."""
    if isinstance(kernel, Sum):
        terms, join = summands(kernel), add
    elif isinstance(kernel, Product):
        terms, join = factors(kernel), multiply
    else:
        return []
    return [join(terms[:i] + terms[i + 1 :]) for i in range(len(terms))]


def rules(grammar: Grammar, factory: Factory) -> dict[str, Callable[[Kernel], list[Kernel]]]:
    """Each operator as a function from a subexpression S to its replacements."""
    bases = grammar.base_kernels(factory)

    def replace_base(s):
        return [b for b in bases if _is_base(s) and key(b) != key(s)]

    return {
        "C.1": lambda s: [s + b for b in bases],
        "C.2": lambda s: [s * b for b in bases],
        "C.3": replace_base,
        "C.4": lambda s: [factory.changepoint(s, s)],
        "C.5": lambda s: [factory.window(s, s)],
        "C.6": lambda s: [factory.window(s, factory.constant())],
        "C.7": lambda s: [factory.window(factory.constant(), s)],
        "C.8": lambda s: [] if _is_base(s) else list(bases),
        "C.9": lambda s: _removals(s) if isinstance(s, Sum) else [],
        "C.10": lambda s: _removals(s) if isinstance(s, Product) else [],
        "C.11": lambda s: [s * (b + factory.constant()) for b in bases],
    }


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A kernel the grammar reached: its canonical form, canonical text and the operator that made it."""

    kernel: Kernel
    key: str
    operator: str


def expand(kernel: Kernel | None, grammar: Grammar, factory: Factory | None = None) -> list[Candidate]:
    """Every kernel one operator away from ``kernel``, each structure once, in order of first appearance; ``kernel``
    itself is not among them. ``None`` (the start, only noise) expands to the base kernels."""
    factory = factory or Factory()
    if kernel is None:
        made = [(b, "start") for b in grammar.base_kernels(factory)]
    else:
        start = canonical(kernel)
        table = rules(grammar, factory)
        made = [(new, op) for op in grammar.operators for new in rewrites(start, table[op])]
    seen = set() if kernel is None else {key(kernel)}
    out = []
    for new, op in made:
        new = canonical(new)
        text = str(new)
        if text not in seen:
            seen.add(text)
            out.append(Candidate(new, text, op))
    return out
