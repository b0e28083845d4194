"""A KOORD_HOME on a small filesystem of its own, to fill or make read-only without touching the machine's disk."""

from __future__ import annotations

import contextlib
import errno
import subprocess
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_filesystem(mount_point: Path, size: str = "64m"):
    """A tmpfs of ``size`` at ``mount_point``, unmounted on exit; the test is skipped when mounting is refused."""
    mount_point.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"mount -t tmpfs refused: {mounted.stderr.strip() or mounted.returncode}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(directory: Path) -> Path:
    """Fill the filesystem of ``directory`` with one file until a write fails with ENOSPC, then the rest of
    the last block of every log in it (with newlines), so that the next write to any of those logs fails."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * (1 << 20))
        except OSError as error:
            assert error.errno == errno.ENOSPC, error
    for path in [filler, *directory.glob("*.log")]:
        with open(path, "ab", buffering=0) as out, contextlib.suppress(OSError):
            while True:
                out.write(b"\n" * 64 if path.suffix == ".log" else b"\0")
    return filler


def remount_read_only(mount_point: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(mount_point)], check=True)
