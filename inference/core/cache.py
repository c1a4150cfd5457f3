"""Bounded caches for the functions that build engines' compiled programs, and one process-wide release.

Engines build their jitted runners once per (model spec, sizes, static options) and keep them, so that a second call
on data of the same shapes compiles nothing. Every kept executable holds memory mappings (XLA's JIT code and data
sections, about three per compiled kernel) until LLVM can map no more (``vm.max_map_count``) and the process aborts
("LLVM ERROR: Unable to allocate section memory!", or a segfault in the unwinder; docs/performance.md#bounded-caches).

Two bounds. Each cache keeps at most ``MAX_PROGRAMS`` entries (least recently used dropped). That alone does not bound
the process: some forty caches and ``Timer``'s executables, each of 64 programs of up to a thousand mappings, can hold
more than the kernel allows, as a gym run over many models did. So whenever a cache builds a new program or ``Timer``
compiles one, ``release_if_mappings_short`` compares the process's mappings with the limit, and past
``MAPPING_SHARE`` of it drops every cached program at once (``release_programs``); callers keep the programs they
hold, later calls rebuild (from JAX's persistent compilation cache where it is on). Dropping one cache's entries
is not enough: a ``Timer`` executable stays mapped while the runner that built it is cached, and the converse
(measured in docs/performance.md#bounded-caches).
"""

import functools
import gc
from collections.abc import Callable

import jax

__all__ = [
    "MAPPING_SHARE",
    "MAX_PROGRAMS",
    "mapping_limit",
    "mappings_in_use",
    "on_release",
    "program_cache",
    "release_if_mappings_short",
    "release_programs",
    "releases",
]

MAX_PROGRAMS = 64
MAPPING_SHARE = 0.5  # of vm.max_map_count: what one release leaves room for, with the rest of the process

_caches: list = []  # every program_cache, cleared by release_programs
_releasers: list[Callable[[], None]] = []  # other holders of executables (Timer's)
releases = 0  # how often this process released its programs (for reports and tests)


def program_cache(factory):
    """``functools.lru_cache(maxsize=MAX_PROGRAMS)``, for functions that return jitted programs; building a new
    one first releases every cached program if the process is short of memory mappings."""

    @functools.wraps(factory)
    def build(*args, **kwargs):
        release_if_mappings_short()
        return factory(*args, **kwargs)

    cached = functools.lru_cache(maxsize=MAX_PROGRAMS)(build)
    _caches.append(cached)
    return cached


def on_release(clear: Callable[[], None]) -> None:
    """Register ``clear``, which drops executables kept outside ``program_cache`` (``Timer``'s)."""
    _releasers.append(clear)


def release_programs() -> None:
    """Drop every cached program and executable of this process (and JAX's own caches of traced functions)."""
    global releases
    for cache in _caches:
        cache.cache_clear()
    for clear in _releasers:
        clear()
    jax.clear_caches()
    gc.collect()
    releases += 1


def release_if_mappings_short() -> None:
    """``release_programs()`` when the process holds more than ``MAPPING_SHARE`` of the mappings it may hold."""
    limit = mapping_limit()
    if limit is not None and mappings_in_use() > MAPPING_SHARE * limit:
        release_programs()


def mapping_limit() -> int | None:
    """``vm.max_map_count`` (Linux), or None where the system has no such limit to read."""
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def mappings_in_use() -> int:
    """The memory mappings this process holds now (lines of /proc/self/maps; 0 where there is none)."""
    try:
        with open("/proc/self/maps", "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return 0
