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

A child's output reaches its log through a pipe that this process drains
(:class:`LogPump`): a log write that fails (a full or read-only KOORD_HOME)
drops output instead of reaching the child, which would die of it (Tansu
panics when it cannot write its stdout), and is recorded for
``koord status``. :class:`TolerantStream` does the same for the
supervisor's own stdout and stderr.
"""

from __future__ import annotations

import ctypes
import dataclasses
import io
import os
import re
import signal
import subprocess
import sys
import threading
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


class LogWriter:
    """Appends to a log, recording instead of raising when a write fails: since when, the OS error and
    how much was dropped, until a write succeeds again (it then starts with a line saying what was lost)."""

    def __init__(self) -> None:
        self.since: float | None = None
        self.error: str | None = None
        self.dropped = 0

    def append(self, fd: int, data: bytes) -> None:
        note = b"" if self.since is None else \
            f"[{self.dropped} bytes of output dropped since {_utc(self.since)}: {self.error}]\n".encode()
        try:
            write_all(fd, note + data)
        except OSError as error:
            self.failed(error, len(data))
        else:
            self.since, self.error, self.dropped = None, None, 0

    def failed(self, error: OSError, dropped: int) -> None:
        if self.since is None:
            self.since, self.error = time.time(), error.strerror or str(error)
        self.dropped += dropped

    def failing(self) -> str | None:
        """``"No space left on device since 2026-...Z"`` while writes fail, else None."""
        return None if self.since is None else f"{self.error} since {_utc(self.since)}"


def _utc(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class LogPump(threading.Thread):
    """Copies a child's output from a pipe to the end of its log file until the child closes it."""

    def __init__(self, pipe: int, log_path: Path) -> None:
        super().__init__(name=f"log {Path(log_path).name}", daemon=True)
        self.pipe, self.log_path, self.writer = pipe, Path(log_path), LogWriter()
        self.log = self._open(dropping=0)

    def _open(self, dropping: int) -> int | None:
        """The log's file descriptor; None (and ``dropping`` bytes recorded as dropped) when it cannot be opened."""
        try:
            return os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as error:
            self.writer.failed(error, dropping)
            return None

    def run(self) -> None:
        try:
            while chunk := os.read(self.pipe, 65536):
                if self.log is None:
                    self.log = self._open(dropping=len(chunk))
                if self.log is not None:
                    self.writer.append(self.log, chunk)
        finally:
            os.close(self.pipe)
            if self.log is not None:
                os.close(self.log)


class Supervised(subprocess.Popen):
    """A child whose output a :class:`LogPump` copies to its log."""

    log: LogPump

    def log_complete(self, timeout: float = 2.0) -> None:
        """Wait until the output of the exited child is in its log."""
        self.log.join(timeout)


def spawn(args: list[str], log_path, env: dict[str, str] | None = None) -> Supervised:
    """Start ``args`` as a supervised child logging to ``log_path``."""
    read, write = os.pipe()
    try:
        proc = Supervised(
            args, stdout=write, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})}, preexec_fn=child_preexec, process_group=0,
        )
    except BaseException:
        os.close(read)
        raise
    finally:
        os.close(write)
    proc.log = LogPump(read, log_path)
    proc.log.start()
    return proc


class TolerantStream(io.TextIOBase):
    """A text stream on a file descriptor whose failing writes are dropped and recorded: the supervisor's
    stdout or stderr, which must not stop the children when its log cannot be written. Unbuffered, so
    that no failed write stays behind to fail again."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd, self.writer = fd, LogWriter()

    def fileno(self) -> int:
        return self.fd

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return os.isatty(self.fd)

    def write(self, text: str) -> int:
        self.writer.append(self.fd, text.encode(self.encoding, self.errors))
        return len(text)


def koord_command(*args: str) -> list[str]:
    """The command line that runs ``koord ARGS`` with this interpreter."""
    return [sys.executable, "-m", "streams.cli", *args]


def stop(procs: list[subprocess.Popen], timeout: float = 15.0) -> None:
    """SIGTERM each child (in the given order), then SIGKILL what is left; return once their logs are complete."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if isinstance(proc, Supervised):
            proc.log_complete()


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
    last_exit: str | None = None
    """How it last exited: the exit code and the last error of its log."""

    @classmethod
    def start(cls, name: str, args: list[str], log_path: Path, env: dict[str, str]) -> "Child":
        return cls(name, args, log_path, env, spawn(args, log_path, env))

    def exited(self) -> bool:
        return self.failed is None and self.proc.poll() is not None

    def restart_or_give_up(self, now: float) -> str:
        """After the child exited: start it again, or give up when it keeps failing; return what was done."""
        code = self.proc.returncode
        self.proc.log_complete()
        self.exits = [t for t in self.exits if now - t < RESTART_WINDOW_S] + [now]
        last = last_error(self.log_path)
        why = self.last_exit = f"{self.name} exited with code {code}" + (f" ({last})" if last else "")
        if len(self.exits) >= RESTARTS:
            self.failed = f"{why}; {len(self.exits)} exits within {RESTART_WINDOW_S:.0f}s"
            return (f"{self.failed}: not starting it again; see {self.log_path}. The broker and the other "
                    f"processes keep running; `koord down` stops them")
        self.proc = spawn(self.args, self.log_path, self.env)
        return f"{why}; started it again (pid {self.proc.pid}, exit {len(self.exits)} of {RESTARTS} allowed " \
               f"within {RESTART_WINDOW_S:.0f}s)"


GENERIC_ERRORS = ("We experienced a crash!",)
"""Lines that say a child failed but not why (mode's worker logs this one after the crash reason)."""
LOG_LEVELS = ("[CRITICAL]", "[ERROR]", "Error:")
EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?::\s.*)?$")
"""The last line of a Python traceback: the exception's (qualified) type, then its message."""


def last_error(log_path: Path, tail_bytes: int = 65536) -> str | None:
    """The last meaningful error of a child's log: the exception (type and message) ending a traceback, or
    a CRITICAL or ERROR line without its timestamp prefix; lines that only say that it crashed are skipped."""
    try:
        with open(log_path, "rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - tail_bytes))
            lines = log.read().decode(errors="replace").splitlines()
    except OSError:
        return None
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index]
        if any(generic in line for generic in GENERIC_ERRORS):
            continue
        if index and lines[index - 1].startswith(" ") and EXCEPTION_LINE.match(line):
            return line.strip()[:300]
        for level in LOG_LEVELS:
            if level in line:
                return line[line.index(level):].strip()[:300]
    return None
