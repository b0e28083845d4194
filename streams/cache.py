"""The download and build cache outside the checkout: ``~/.cache/koordstream`` (``KOORD_CACHE_DIR``).

Kafka's jars and the Kubernetes control-plane binaries are fetched or built there once per version and
reused by every checkout, test session and CI run on the machine. :func:`build_once` serialises
concurrent first uses with a file lock and marks a finished entry, so an interrupted build is redone.
"""

from __future__ import annotations

import fcntl
from pathlib import Path
from typing import Callable

from streams.settings import Settings


def cache_dir() -> Path:
    return Settings.from_env().cache_dir


def build_once(entry: str, build: Callable[[Path], None]) -> Path:
    """The folder ``cache_dir()/entry``, made by ``build(folder)`` unless a finished one is there."""
    folder = cache_dir() / entry
    done = folder / ".complete"
    if done.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            build(folder)
            done.touch()
    return folder
