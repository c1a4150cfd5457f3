"""Engines keep their compiled runners in bounded caches (inference.core.cache): unbounded, a process that runs many
models
(a structure search) kept every executable until LLVM ran out of memory mappings."""

import importlib
import pkgutil

import inference
from inference.core.cache import MAX_PROGRAMS, program_cache

# Builds a closure per spec, no compiled program: unbounded, so engines keyed on the model it returns stay hits.
UNBOUNDED = {"inference.core.program.conditioned_program"}


def cached_functions():
    for info in pkgutil.walk_packages(inference.__path__, "inference."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if callable(value) and hasattr(value, "cache_info") and getattr(value, "__module__", None) == info.name:
                yield f"{info.name}.{name}", value


def test_every_engine_cache_is_bounded():
    found = dict(cached_functions())
    assert "inference.mcmc.nuts.sampler" in found and "inference.optimisation.ml2.host_program" in found
    unbounded = {name for name, fn in found.items() if fn.cache_parameters()["maxsize"] is None}
    assert unbounded == UNBOUNDED


def test_least_recently_used_runners_are_dropped():
    built = []

    @program_cache
    def runner(size):
        built.append(size)
        return object()

    first = runner(0)
    for size in range(1, MAX_PROGRAMS + 1):
        runner(size)
    assert runner(MAX_PROGRAMS) is runner(MAX_PROGRAMS) and runner(0) is not first
    assert built.count(0) == 2


def test_every_program_is_released_when_mappings_run_short(monkeypatch):
    from inference.core import cache
    from inference.core.api import Timer

    program_caches = [fn for _, fn in cached_functions() if fn.cache_parameters()["maxsize"] == MAX_PROGRAMS]
    assert len(program_caches) > 30 and all(fn in cache._caches for fn in program_caches)
    assert Timer._compiled.clear in cache._releasers
    # This test's own registry, and JAX's caches left alone: the process's compiled programs stay.
    monkeypatch.setattr(cache, "_caches", [])
    monkeypatch.setattr(cache, "_releasers", [])
    monkeypatch.setattr(cache.jax, "clear_caches", lambda: None)
    monkeypatch.setattr(cache, "MAPPING_SHARE", 0.5)  # the library's value (tests/conftest.py raises it)
    executables = {"a Timer's": object()}
    cache.on_release(executables.clear)
    built = []

    @program_cache
    def runner(size):
        built.append(size)
        return object()

    limit, releases = None, cache.releases  # None: no limit to read (not Linux), nothing is released
    monkeypatch.setattr(cache, "mapping_limit", lambda: limit)
    first = runner(0)
    runner(1)
    limit = 4 * cache.mappings_in_use()  # well inside the share
    runner(2)
    assert runner(0) is first and executables and cache.releases == releases
    limit = cache.mappings_in_use()  # past MAPPING_SHARE of it: a new program releases every kept one first
    runner(3)
    assert cache.releases == releases + 1 and not executables and runner(0) is not first
    assert built == [0, 1, 2, 3, 0]
