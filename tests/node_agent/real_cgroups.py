"""Shared by the tests that run on this machine's real cgroups: skip reasons and a busy pod cgroup."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Iterator

ROOT = Path("/sys/fs/cgroup")


def require_root(why: str) -> None:
    import pytest

    if os.geteuid() != 0:
        pytest.skip(f"needs root to {why}")


def require_writable(hierarchy: Path) -> None:
    import pytest

    if not hierarchy.is_dir():
        pytest.skip(f"no cgroup hierarchy at {hierarchy}")
    probe = hierarchy / f"koord-probe-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as err:
        pytest.skip(f"cgroup hierarchy {hierarchy} is not writable: {err.strerror}")


def remove(paths: list[Path]) -> list[str]:
    """Remove the cgroup dirs ``paths`` (deepest first, retrying while the kernel lets go of a killed
    task); returns those still there."""
    for path in reversed(paths):
        for _ in range(100):
            try:
                path.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)
    return [str(p) for p in paths if p.exists()]


@contextlib.contextmanager
def busy_pod_cgroup(hierarchies: list[Path], pod_dir: str, enable_cpu: bool = False,
                    program: str = "while True: pass") -> Iterator[subprocess.Popen]:
    """A process spinning on one core (or running ``program``) inside ``pod_dir`` of every hierarchy (dirs
    created here).

    ``enable_cpu`` turns the cpu controller on for the children of each parent (cgroup v2). The
    process runs at nice -20 so a loaded machine (a broker and workers of other tests) still gives it
    its core. Afterwards it is killed and the dirs are removed; a dir left behind fails the test.
    """
    created: list[Path] = []
    busy = None
    parts = pod_dir.split("/")
    try:
        for hierarchy in hierarchies:
            path = hierarchy
            for part in parts:
                path = path / part
                path.mkdir()
                created.append(path)
                if enable_cpu and part != parts[-1]:
                    (path / "cgroup.subtree_control").write_text("+cpu")
        busy = subprocess.Popen([sys.executable, "-c", program], preexec_fn=lambda: os.nice(-20))
        for hierarchy in hierarchies:
            (hierarchy / pod_dir / "cgroup.procs").write_text(str(busy.pid))
        yield busy
    finally:
        if busy is not None:
            busy.send_signal(signal.SIGKILL)
            busy.wait()
        leftovers = remove(created)
        assert not leftovers, f"test cgroups left behind: {leftovers}"
