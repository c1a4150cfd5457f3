"""A bounded cache for the functions that build engines' compiled programs.

Engines build their jitted runners once per (model spec, sizes, static options) and keep them, so that a second call
on data of the same shapes compiles nothing. Kept without bound, every model a process ever ran stays compiled: a
structure search fits hundreds of kernel structures in one process, and each kept executable holds memory mappings
(XLA's JIT code and data sections) until LLVM can map no more (``vm.max_map_count``) and aborts the process ("LLVM
ERROR: Unable to allocate section memory!"; docs/performance.md#bounded-caches). Beyond ``MAX_PROGRAMS`` entries the
least recently used runner is dropped, and its executables with it.
"""

import functools

MAX_PROGRAMS = 64


def program_cache(factory):
    """``functools.lru_cache(maxsize=MAX_PROGRAMS)``, for functions that return jitted programs."""
    return functools.lru_cache(maxsize=MAX_PROGRAMS)(factory)
