"""Library functions called outside ``jit`` compile as one program, not one per ``jnp`` operation.

Outside a trace every ``jnp`` call is compiled on its own (and again for each new shape), ~20 ms of XLA compilation
each on CPU; a function of twenty operations called eagerly (a prediction in a figure, a test's reference) costs
twenty such compilations, where ``jax.jit`` of it costs one. Inside a trace (a model, an engine's program) the
function is called as it is: nested ``jit`` boundaries made XLA's compilation of whole engine runs slower
(docs/performance.md#test-suite)."""

import functools

import jax
import numpy as np

__all__ = ["compile_methods", "compiled_when_eager"]


def _compilable(leaf) -> bool:
    """An array (not a tracer) or a float; an int or bool may be a shape or steer control flow, so it stays eager."""
    if isinstance(leaf, jax.core.Tracer):
        return False
    return isinstance(leaf, (jax.Array, np.ndarray, float))


def compiled_when_eager(function=None, *, static_argnums: tuple[int, ...] = ()):
    """``function`` under ``jax.jit`` when every argument leaf is a concrete array or a float, else as it is.
    ``static_argnums``: arguments passed to ``jit`` as static (hashable values, e.g. a frozen dataclass's ``self``),
    left out of that test. Usable as ``@compiled_when_eager`` or ``@compiled_when_eager(static_argnums=(0,))``."""
    if function is None:
        return functools.partial(compiled_when_eager, static_argnums=static_argnums)
    compiled = jax.jit(function, static_argnums=static_argnums)

    @functools.wraps(function)
    def call(*args, **kwargs):
        dynamic = [arg for i, arg in enumerate(args) if i not in static_argnums]
        leaves = jax.tree.leaves((dynamic, kwargs))
        return (compiled if all(map(_compilable, leaves)) else function)(*args, **kwargs)

    return call


def compile_methods(cls, names: tuple[str, ...]) -> None:
    """Wrap each of the methods ``names`` that ``cls`` itself defines by ``compiled_when_eager`` (for a base class's
    ``__init_subclass__``, so that every subclass's own definitions are wrapped). ``self`` is an argument leaf:
    the class must be a pytree."""
    for name in names:
        if name in cls.__dict__:
            setattr(cls, name, compiled_when_eager(cls.__dict__[name]))
