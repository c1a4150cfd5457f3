"""The kernel grammar's notation: ``parse("SE x Per + RQ_1")`` and its inverse ``str(kernel)``.

Notation (Duvenaud 2014, ch. 3 and App. C; docs/sources/duvenaud.md#grammar): base kernels by name (``NAMES``),
``+`` for sums, ``x`` or ``*`` for products (binding tighter than ``+``), parentheses, ``CP(S, S)`` and ``CW(S, S)``,
and a subscript for active dimensions counted from 0: ``SE_0`` acts on input column 0, ``SE_{0,2}`` on columns 0
and 2, ``(SE + Lin)_1`` restricts a whole subexpression. Names are matched without regard to case; an unknown
name is an ``UnknownNameError`` with close matches. Parsed kernels carry default hyperparameters (all 1, Lin's
offset and location 0). ``str`` prints products with `` x `` and parenthesises sums inside products, so
``parse(str(k))`` gives k's structure back.
"""

import re

from zoo.errors import unknown_name
from zoo.kernels.arccos import ArcCosine0, ArcCosine1, ArcCosine2
from zoo.kernels.base import Constant, Kernel, KernelError
from zoo.kernels.nonstationary import Changepoint, ChangeWindow, Linear
from zoo.kernels.stationary import (
    Cosine,
    Matern12,
    Matern32,
    Matern52,
    Periodic,
    RationalQuadratic,
    SquaredExponential,
    White,
    ZeroMeanPeriodic,
)

BASE = (
    SquaredExponential,
    RationalQuadratic,
    Linear,
    Periodic,
    ZeroMeanPeriodic,
    Cosine,
    Constant,
    White,
    Matern12,
    Matern32,
    Matern52,
    ArcCosine0,
    ArcCosine1,
    ArcCosine2,
)
SWITCHES = (Changepoint, ChangeWindow)
NAMES = {cls.SYMBOL: cls for cls in (*BASE, *SWITCHES)}
_BY_LOWER = {name.lower(): cls for name, cls in NAMES.items()}
_TOKEN = re.compile(r"\s*(?:(?P<int>\d+)|(?P<name>[A-Za-z][A-Za-z0-9]*)|(?P<op>[-+*×(),_{}]))")


def tokenize(text: str) -> list[tuple[str, str, int]]:
    """(kind, text, position) tokens; kind is "int", "name" or the operator itself ("x" and "×" become "*")."""
    tokens, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None:
            raise KernelError(f"cannot read kernel expression {text!r} at position {pos}: {text[pos:]!r}.")
        kind = match.lastgroup
        value = match.group(kind)
        start = match.start(kind)
        if kind == "name" and value == "x" or value == "×":
            kind, value = "op", "*"
        tokens.append((value if kind == "op" else kind, value, start))
        pos = match.end()
    return tokens


class _Parser:
    def __init__(self, text: str):
        self.text, self.tokens, self.i = text, tokenize(text), 0

    def peek(self) -> str | None:
        return self.tokens[self.i][0] if self.i < len(self.tokens) else None

    def take(self, kind: str) -> str:
        if self.peek() != kind:
            where = self.tokens[self.i][2] if self.i < len(self.tokens) else len(self.text)
            found = self.tokens[self.i][1] if self.i < len(self.tokens) else "the end"
            raise KernelError(f"kernel expression {self.text!r}: expected {kind!r} at position {where}, got {found!r}.")
        self.i += 1
        return self.tokens[self.i - 1][1]

    def expression(self) -> Kernel:
        kernel = self.term()
        while self.peek() == "+":
            self.take("+")
            kernel = kernel + self.term()
        return kernel

    def term(self) -> Kernel:
        kernel = self.factor()
        while self.peek() == "*":
            self.take("*")
            kernel = kernel * self.factor()
        return kernel

    def factor(self) -> Kernel:
        kernel = self.atom()
        if self.peek() == "_":
            self.take("_")
            kernel = kernel.on(self.dims())
        return kernel

    def dims(self) -> tuple[int, ...]:
        if self.peek() != "{":
            return (int(self.take("int")),)
        self.take("{")
        dims = [int(self.take("int"))]
        while self.peek() == ",":
            self.take(",")
            dims.append(int(self.take("int")))
        self.take("}")
        return tuple(dims)

    def atom(self) -> Kernel:
        if self.peek() == "(":
            self.take("(")
            kernel = self.expression()
            self.take(")")
            return kernel
        name = self.take("name")
        cls = _BY_LOWER.get(name.lower())
        if cls is None:
            raise unknown_name("kernel", name, NAMES)
        if cls in SWITCHES:
            self.take("(")
            first = self.expression()
            self.take(",")
            second = self.expression()
            self.take(")")
            return cls(first, second)
        return cls()


def parse(text: str) -> Kernel:
    """The kernel written ``text`` in the grammar's notation, with default hyperparameters."""
    if not isinstance(text, str) or not text.strip():
        raise KernelError(f"a kernel expression is a non-empty string such as 'SE x Per + RQ', got {text!r}.")
    parser = _Parser(text)
    kernel = parser.expression()
    if parser.peek() is not None:
        parser.take("the end")
    return kernel
