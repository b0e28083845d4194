"""Reading host files that may be missing, unreadable or garbage.

Every read of /proc, /sys and the cgroup trees goes through these helpers. A
file that is absent, unreadable (EACCES, EIO, a cgroup removed mid-read),
larger than expected or not text yields None instead of an exception, so an
odd host costs a missing value, never the agent. Parsers skip lines they do
not understand rather than failing the whole file.

Only regular files are read. Kernel files in /proc, /sys and cgroupfs are
regular; a FIFO, device or socket where one is expected is planted, and
reading it could block the collector for good (a FIFO with no writer blocks
``open()`` itself). Opening with ``O_NONBLOCK`` makes that open return at
once, and the type is checked on the open descriptor before any read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_FILE_BYTES = 8 << 20
"""Largest file read. Cgroup stat files are a few KiB and /proc/cpuinfo of a
512-CPU machine about 1 MiB; anything larger is garbage, not kernel output."""


def read_text(path: str | os.PathLike) -> str | None:
    """The file's text, or None when it cannot be read as a small ASCII/UTF-8 regular file."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        with open(descriptor, "rb", closefd=True) as file:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                return None
            data = file.read(MAX_FILE_BYTES + 1)
    except (OSError, ValueError):
        return None
    if len(data) > MAX_FILE_BYTES:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def read_int(path: str | os.PathLike) -> int | None:
    """The file's content as one integer (e.g. ``cpuacct.usage``), or None."""
    text = read_text(path)
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None


def parse_int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def parse_key_values(text: str | None) -> dict[str, int]:
    """``key value`` lines (cpu.stat, memory.stat) as integers; other lines are skipped."""
    result: dict[str, int] = {}
    if not text:
        return result
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2 and (value := parse_int(fields[1])) is not None:
            result[fields[0]] = value
    return result


def parse_cpu_list(text: str | None) -> tuple[int, ...] | None:
    """A kernel CPU list ("0-3,8,10-11") as sorted CPU ids; None when malformed."""
    if text is None:
        return None
    text = text.strip()
    if not text:
        return ()
    cpus: set[int] = set()
    for part in text.split(","):
        low, sep, high = part.partition("-")
        first, last = parse_int(low), parse_int(high) if sep else parse_int(low)
        if first is None or last is None or first < 0 or last < first or last - first > 1 << 16:
            return None
        cpus.update(range(first, last + 1))
    return tuple(sorted(cpus))


def list_dirs(path: str | os.PathLike) -> list[str]:
    """Names of the sub-directories of ``path`` (sorted); [] when it cannot be listed."""
    try:
        with os.scandir(path) as entries:
            return sorted(entry.name for entry in entries if _is_dir(entry))
    except OSError:
        return []


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def exists(path: str | os.PathLike) -> bool:
    try:
        return Path(path).exists()
    except OSError:
        return False
