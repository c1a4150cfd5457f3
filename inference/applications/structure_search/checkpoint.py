"""A greedy search kept on disk as it goes, and resumed without refitting what finished (``zoo search --resume``;
docs/sources/duvenaud.md#search-choices).

Every fitted candidate is one unit of ``inference.files.resumable`` in the checkpoint folder, written atomically as
soon as it is fitted (so an interrupted or killed search loses at most the candidates being fitted), under a hash of
everything that determines its fit: the standardised data, the search's options, the depth, the candidate's
structure with its starting values, its parent's fitted kernel and noise, its warm start, the shared program's
capacity and its seed. The search itself is replayed: its random draws (new hyperparameters, seeds) happen in the
same order whether a candidate is fitted or loaded, so a resumed search takes the path the uninterrupted one takes,
and a changed option or changed data fit anew. At the end of every depth the trace so far is written as
``trace.json`` in the folder.
"""

import hashlib
import pickle
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np

from inference.files.atomic import atomic_write_bytes
from inference.files.resumable import cache_path, load_cached

__all__ = ["fingerprint", "resumable"]

LABEL = "candidate"


def fingerprint(Xs: np.ndarray, ys: np.ndarray, options: dict) -> str:
    """A hash of the standardised data and the search's options (sorted)."""
    digest = hashlib.sha1()
    for a in (Xs, ys):
        digest.update(np.ascontiguousarray(a, float).tobytes())
    digest.update(repr(sorted(options.items())).encode())
    return digest.hexdigest()


def _unit_key(search: str, job: tuple) -> tuple:
    cand, parent, level = job[0], job[1], job[2]
    seed, capacity, warm = job[7], job[9], job[10]
    parent_fit = None if parent is None else (parent.expression, repr(parent.kernel), float(parent.noise))
    return (search, level, cand.key, repr(cand.kernel), parent_fit, seed, repr(capacity), repr(warm))


def resumable(
    fit_all: Callable[[list], Iterator], folder: Path, search: str, resume: bool, say: Callable[[str], None]
) -> Callable[[list], Iterator]:
    """``fit_all`` (jobs -> (index, Fitted) as they finish) that first loads, with ``resume``, the jobs that finished
    in ``folder`` before, fits the rest, and saves each as it arrives."""
    folder.mkdir(parents=True, exist_ok=True)

    def run(jobs: list) -> Iterable:
        keys = [_unit_key(search, job) for job in jobs]
        found = [load_cached(folder, LABEL, key) if resume else None for key in keys]
        todo = [i for i, f in enumerate(found) if f is None]
        if len(todo) < len(jobs):  # said first: the progress lines of loaded candidates show their earlier times
            say(f"resumed {len(jobs) - len(todo)} of {len(jobs)} candidates from {folder} (times as first fitted)")
        for i, f in enumerate(found):
            if f is not None:
                yield i, f[0]
        for j, entry in fit_all([jobs[i] for i in todo]):
            i = todo[j]
            atomic_write_bytes(cache_path(folder, LABEL, keys[i]), pickle.dumps((entry, entry.wall_s)))
            yield i, entry

    return run
