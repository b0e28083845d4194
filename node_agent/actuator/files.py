"""Writing host files as one transaction: read every current value, skip equal ones, restore on failure.

A setting may span several files (v1 quota + period + burst). ``apply_writes``
reads each file first; a file whose current value already equals the wanted
one is skipped (idempotence); the others are written in the given order, and
if one fails, those already written get their previous text back, last
first, so the cgroup keeps its previous configuration. Files are opened
``O_WRONLY | O_TRUNC | O_NOFOLLOW`` without ``O_CREAT``: a missing file is an
error, never a new file, and a final symlink is never followed.
"""

from __future__ import annotations

import dataclasses
import errno
import os
from collections.abc import Callable
from pathlib import Path

from node_agent.hostfs import read_text


@dataclasses.dataclass(frozen=True)
class Write:
    path: Path
    value: str
    """Text written to the file."""
    same: Callable[[str], bool] | None = None
    """True when the file's current text already means ``value``; default: equal after stripping."""

    def satisfied_by(self, current: str | None) -> bool:
        if current is None:
            return False
        return self.same(current) if self.same is not None else current.strip() == self.value.strip()


@dataclasses.dataclass
class WriteResult:
    written: list[Write] = dataclasses.field(default_factory=list)
    skipped: list[Write] = dataclasses.field(default_factory=list)
    error: str | None = None
    restored: bool = True
    """False when a restore after a failure failed too (the error says which file)."""


def read_value(path: Path) -> str | None:
    text = read_text(path)
    return None if text is None else text.strip()


def write_value(path: Path, value: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        data = value.encode()
        if os.write(fd, data) != len(data):
            raise OSError(errno.EIO, "short write", str(path))
    finally:
        os.close(fd)


def describe(err: OSError) -> str:
    return f"{err.strerror or err}" + (f" ({errno.errorcode.get(err.errno, err.errno)})" if err.errno else "")


def apply_writes(writes: list[Write], writer: Callable[[Path, str], None] = write_value) -> WriteResult:
    result = WriteResult()
    previous: list[tuple[Write, str]] = []
    for write in writes:
        current = read_value(write.path)
        if current is None:
            result.error = f"cannot read {write.path} before writing it"
            break
        if write.satisfied_by(current):
            result.skipped.append(write)
            continue
        try:
            writer(write.path, write.value)
        except OSError as err:
            result.error = f"writing {write.value!r} to {write.path}: {describe(err)}"
            break
        previous.append((write, current))
        result.written.append(write)
    if result.error is not None:
        for write, old in reversed(previous):
            try:
                writer(write.path, old)
            except OSError as err:
                result.restored = False
                result.error += f"; restoring {old!r} to {write.path} failed: {describe(err)}"
        result.written = []
    return result
