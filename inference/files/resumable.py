"""Resumable full runs: each finished unit of work (one method, one repeat) kept on disk as a pickle.

Full reproductions take hours on a 2-core machine; running a script again loads what finished and computes only the
rest. A unit's file name holds a hash of everything that determines its result, so changed settings recompute.
"""

import hashlib
import pickle
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax

from inference.files.atomic import atomic_write_bytes

__all__ = ["cache_path", "cached", "load_cached"]


def cached(folder: Path | None, label: str, key: object, compute: Callable[[], Any]) -> tuple[Any, float]:
    """``compute()``'s result and its wall time (s): loaded from ``folder/<label>-<hash of key>.pkl`` when it
    finished before, else computed and saved there atomically (an interrupted run never leaves half a file).
    ``folder=None`` never caches. Delete the folder to recompute."""
    path = cache_path(folder, label, key) if folder else None
    if path is not None and path.exists():
        print(f"{label}: reusing {path}", flush=True)
        return pickle.loads(path.read_bytes())
    start = time.perf_counter()
    result = (jax.device_get(compute()), time.perf_counter() - start)
    if path is not None:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, pickle.dumps(result))
    return result


def cache_path(folder: Path, label: str, key: object) -> Path:
    """Where ``cached`` keeps the unit ``label`` whose result is determined by ``key``."""
    return folder / f"{label}-{hashlib.sha1(repr(key).encode()).hexdigest()[:10]}.pkl"


def load_cached(folder: Path, label: str, key: object) -> tuple[Any, float] | None:
    """A finished unit's (result, wall time) as ``cached`` saved it, or None when it has not finished."""
    path = cache_path(folder, label, key)
    return pickle.loads(path.read_bytes()) if path.exists() else None
