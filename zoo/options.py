"""Declared options: a name, a kind, a default and a range, validated in one place before anything is compiled.

A model family declares its options once (``docs/architecture.md#model-options``); ``validate`` checks what a user
passed from Python, the command line (strings such as ``num_modes=3`` or ``depths=1,2``) or a TOML suite, and
returns the values coerced to their declared kinds. Every failure is an ``OptionError`` naming the owner and the
option.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from zoo.errors import OptionError, unknown_name

KINDS = ("int", "float", "bool", "str", "mapping")
_TRUE, _FALSE = {"true", "yes", "1"}, {"false", "no", "0"}


@dataclass(frozen=True)
class Option:
    """One declared option.

    kind: "int" | "float" | "bool" | "str" | "mapping" (a dict, e.g. parameter values by site name);
    ``sequence=True`` makes the value a tuple of that kind (from a list, a tuple or the string "a,b,c").
    minimum / maximum bound numbers inclusively, above / below strictly (every entry of a sequence); choices bound
    strings. ``default=None`` with ``optional=True`` means "derived from the other options" (or "the model's").
    """

    kind: str
    default: Any
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None
    below: float | None = None
    choices: tuple[str, ...] | None = None
    sequence: bool = False
    optional: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"option kind must be one of {KINDS}, got {self.kind!r}")

    def describe(self) -> str:
        """e.g. ``int >= 1``, ``str in {random, levels}``, ``tuple of int >= 1``."""
        text = f"tuple of {self.kind}" if self.sequence else self.kind
        if self.choices:
            text += " in {" + ", ".join(self.choices) + "}"
        low = ("[", ">=", self.minimum) if self.minimum is not None else ("(", ">", self.above)
        high = ("]", "<=", self.maximum) if self.maximum is not None else (")", "<", self.below)
        if low[2] is not None and high[2] is not None:
            return f"{text} in {low[0]}{low[2]:g}, {high[2]:g}{high[0]}"
        for _, sign, bound in (low, high):
            if bound is not None:
                text += f" {sign} {bound:g}"
        return text


def validate(owner: str, declared: Mapping[str, Option], given: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults updated by ``given``, each value coerced to its declared kind and range-checked.

    Raises OptionError for an unknown name (with the close matches) or a bad value.
    """
    for name in given:
        if name not in declared:
            raise OptionError(str(unknown_name(f"option of {owner}", name, declared)))
    values = {}
    for name, option in declared.items():
        value = given.get(name, option.default)
        values[name] = _coerce(owner, name, option, value)
    return values


def parse_assignments(owner: str, pairs: list[str]) -> dict[str, str]:
    """``["a=1", "b=x,y"]`` -> ``{"a": "1", "b": "x,y"}`` (values stay strings; ``validate`` coerces them)."""
    parsed = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise OptionError(f"{owner}: an option is written NAME=VALUE, got {pair!r}.")
        parsed[name.strip()] = value.strip()
    return parsed


def _coerce(owner: str, name: str, option: Option, value: Any) -> Any:
    if value is None or (isinstance(value, str) and value.lower() == "none" and option.optional):
        if option.optional:
            return None
        raise OptionError(f"{owner}: option {name} needs a value ({option.describe()}).")
    if not option.sequence:
        return _scalar(owner, name, option, value)
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple | np.ndarray):
        raise OptionError(f"{owner}: option {name} must be a {option.describe()}, got {value!r}.")
    return tuple(_scalar(owner, name, option, item) for item in items)


def _scalar(owner: str, name: str, option: Option, value: Any) -> Any:
    bad = OptionError(f"{owner}: option {name} must be {_article(option)}, got {value!r}.")
    if isinstance(value, str):
        value = value.strip()
    if option.kind == "bool":
        if isinstance(value, bool | np.bool_):
            return bool(value)
        if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
            return value.lower() in _TRUE
        raise bad
    if option.kind == "mapping":
        if not isinstance(value, Mapping):
            raise bad
        return dict(value)
    if option.kind == "str":
        if not isinstance(value, str) or (option.choices and value not in option.choices):
            raise bad
        return value
    number = _number(value, option.kind)
    if number is None:
        raise bad
    if not _in_range(number, option):
        raise bad
    return number


def _in_range(number: float, option: Option) -> bool:
    return (
        (option.minimum is None or number >= option.minimum)
        and (option.maximum is None or number <= option.maximum)
        and (option.above is None or number > option.above)
        and (option.below is None or number < option.below)
    )


def _number(value: Any, kind: str) -> int | float | None:
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, str):
        try:
            value = int(value) if kind == "int" else float(value)
        except ValueError:
            return None
    if kind == "int":
        return int(value) if isinstance(value, int | np.integer) else None
    if isinstance(value, int | float | np.integer | np.floating) and math.isfinite(value):
        return float(value)
    return None


def _article(option: Option) -> str:
    text = option.describe()
    if option.kind == "mapping":
        return "a mapping (dict)" + (" or None" if option.optional else "")
    return text if option.sequence else ("an " if text[0] in "aeiou" else "a ") + text
