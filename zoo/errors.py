"""Errors raised on bad input, each raised before any compilation."""

import difflib
from collections.abc import Iterable


class ZooError(ValueError):
    """Base class: a user-facing error with a message that says what to do."""


class UnknownNameError(ZooError, KeyError):
    """A model, engine or option name that does not exist."""

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


class DataError(ZooError):
    """Observed data with wrong shapes, missing arrays, NaN or inf."""


class OptionError(ZooError):
    """An invalid engine option (negative counts, unknown names, ...)."""


class IncompatibleEngineError(ZooError):
    """An engine that does not fit the model's capabilities."""


def unknown_name(kind: str, name: str, known: Iterable[str]) -> UnknownNameError:
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return UnknownNameError(f"unknown {kind} {name!r}.{hint} Known: {', '.join(known)}.")
