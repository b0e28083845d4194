"""Child processes that cannot outlive their parent.

``koord up`` starts the broker, the worker, the projection and the simulator
as children. Each child runs in its own process group, so a Ctrl-C in the
terminal reaches only the supervisor, which stops the children in order
(the broker last). Each child also asks the kernel for SIGTERM when its
parent dies (``PR_SET_PDEATHSIG``), so even a SIGKILLed ``koord up`` leaves
no orphan holding a port.

A child other than the broker that exits is started again (:class:`Child`):
the worker and the projection resume from their committed offsets, and the
broker, with everything on it, stays up. One that keeps failing
(:data:`RESTARTS` exits within :data:`RESTART_WINDOW_S`) is left stopped and
reported, never restarted in a silent loop.
"""

from __future__ import annotations

import ctypes
import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def child_preexec() -> None:
    """Run in the child between fork and exec: die with the parent. The kernel signals the child when the
    parent *thread* that forked it ends, so spawn from a thread that outlives the child (the main one)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


def spawn(args: list[str], log_path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start ``args`` as a supervised child logging to ``log_path``."""
    log = open(log_path, "ab")
    return subprocess.Popen(
        args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})}, preexec_fn=child_preexec, process_group=0,
    )


def koord_command(*args: str) -> list[str]:
    """The command line that runs ``koord ARGS`` with this interpreter."""
    return [sys.executable, "-m", "streams.cli", *args]


def stop(procs: list[subprocess.Popen], timeout: float = 15.0) -> None:
    """SIGTERM each child (in the given order), then SIGKILL what is left."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.1)
    return not pid_alive(pid)


RESTARTS = 3
RESTART_WINDOW_S = 300.0
"""A child that exits ``RESTARTS`` times within ``RESTART_WINDOW_S`` seconds is given up on."""


@dataclasses.dataclass
class Child:
    """A supervised child and how to start it again."""

    name: str
    args: list[str]
    log_path: Path
    env: dict[str, str]
    proc: subprocess.Popen
    exits: list[float] = dataclasses.field(default_factory=list)
    """Monotonic times of its exits within the window."""
    failed: str | None = None
    """Why it was given up on, once it was."""

    @classmethod
    def start(cls, name: str, args: list[str], log_path: Path, env: dict[str, str]) -> "Child":
        return cls(name, args, log_path, env, spawn(args, log_path, env))

    def exited(self) -> bool:
        return self.failed is None and self.proc.poll() is not None

    def restart_or_give_up(self, now: float) -> str:
        """After the child exited: start it again, or give up when it keeps failing; return what was done."""
        code = self.proc.returncode
        self.exits = [t for t in self.exits if now - t < RESTART_WINDOW_S] + [now]
        last = last_error(self.log_path)
        why = f"{self.name} exited with code {code}" + (f" ({last})" if last else "")
        if len(self.exits) >= RESTARTS:
            self.failed = f"{why}; {len(self.exits)} exits within {RESTART_WINDOW_S:.0f}s"
            return (f"{self.failed}: not starting it again; see {self.log_path}. The broker and the other "
                    f"processes keep running; `koord down` stops them")
        self.proc = spawn(self.args, self.log_path, self.env)
        return f"{why}; started it again (pid {self.proc.pid}, exit {len(self.exits)} of {RESTARTS} allowed " \
               f"within {RESTART_WINDOW_S:.0f}s)"


def last_error(log_path: Path, tail_bytes: int = 65536) -> str | None:
    """The last CRITICAL or ERROR line of a child's log, without its timestamp prefix."""
    try:
        with open(log_path, "rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - tail_bytes))
            lines = log.read().decode(errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        for level in ("[CRITICAL]", "[ERROR]", "Error:"):
            if level in line:
                return line[line.index(level):].strip()[:300]
    return None
