"""Time expectations for ``zoo run``: what the last run of the same kind took, and a line every so often while it runs.

An engine runs as one compiled program (compilation, warm-up and sampling inside it), so there is no per-draw
progress to show without host callbacks in every engine's loop. What a user needs before a long run is an estimate,
and during it a sign of life: ``expect`` prints the wall time of the last run with the same model, engine, options
and data sizes (kept in ``~/.cache/structured-gp-zoo/run_times.json``, ``$ZOO_RUN_TIMES`` to move it, ``off`` to
keep none), and ``Heartbeat`` prints the elapsed time every ``every`` seconds once a run has taken longer than that.
"""

import contextlib
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

DEFAULT_PATH = Path.home() / ".cache" / "structured-gp-zoo" / "run_times.json"
MAX_ENTRIES = 500


def _path() -> Path | None:
    chosen = os.environ.get("ZOO_RUN_TIMES", str(DEFAULT_PATH))
    return None if chosen.lower() in {"", "off", "none", "0"} else Path(chosen)


def run_key(model: str, engine: str, options: dict[str, Any], sizes: dict[str, Any]) -> str:
    """A digest of what decides a run's duration: model variant, engine, its options, the data's shapes."""
    text = json.dumps(
        {"model": model, "engine": engine, "options": options, "sizes": sizes}, sort_keys=True, default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _load(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def last_time(key: str) -> float | None:
    """Seconds the last run with ``key`` took, or None when none was recorded."""
    path = _path()
    entry = _load(path).get(key) if path else None
    return float(entry["wall_s"]) if isinstance(entry, dict) and "wall_s" in entry else None


def record(key: str, wall_s: float) -> None:
    """Remember ``wall_s`` for ``key`` (atomically; the oldest entries go beyond MAX_ENTRIES)."""
    path = _path()
    if path is None:
        return
    with contextlib.suppress(OSError):
        entries = _load(path)
        entries.pop(key, None)
        entries[key] = {"wall_s": float(wall_s), "at": time.time()}
        entries = dict(list(entries.items())[-MAX_ENTRIES:])
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps(entries))
        os.replace(tmp, path)


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class Heartbeat:
    """Prints ``label: N s elapsed`` every ``every`` seconds until stopped (a daemon thread; nothing for short runs)."""

    def __init__(self, label: str, every: float = 15.0, out: Callable[[str], None] | None = None) -> None:
        self.label, self.every = label, every
        self.out = out or (lambda line: print(line, file=sys.stderr, flush=True))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)
        self.start = time.perf_counter()

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            self.out(f"{self.label}: {duration(time.perf_counter() - self.start)} elapsed")

    def __enter__(self) -> "Heartbeat":
        self.start = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


@contextlib.contextmanager
def expectations(label: str, key: str, every: float = 15.0, out: Callable[[str], None] | None = None) -> Iterator[None]:
    """Around a run: the last run's time as an estimate, a heartbeat while it runs, its time recorded when it ends."""
    say = out or (lambda line: print(line, file=sys.stderr, flush=True))
    previous = last_time(key)
    if previous is not None:
        say(f"{label}: the last run like this took {duration(previous)}")
    with Heartbeat(label, every, say) as beat:
        yield
    record(key, time.perf_counter() - beat.start)
