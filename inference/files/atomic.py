"""Atomic file writes: a reader (or a resumed run) sees a file whole or not at all.

Every file is written under a temporary name in the same folder (holding ``TEMP_MARK``) and renamed into place; a
killed writer can leave only such temporary files behind, which its owner may remove.
"""

import os
from pathlib import Path

__all__ = ["TEMP_MARK", "atomic_write_bytes", "atomic_write_text"]

TEMP_MARK = ".tmp-"


def atomic_write_bytes(path: Path, payload: bytes) -> None:
    """Write ``payload`` to ``path`` via a temporary file in the same folder and an atomic rename."""
    tmp = path.with_name(f"{path.name}{TEMP_MARK}{os.getpid()}")
    try:
        with open(tmp, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())  # the rename must not expose a file whose bytes are not on disk yet
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))
