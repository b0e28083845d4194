"""Child processes that cannot outlive their parent.

``koord up`` starts the broker, the worker, the projection and the simulator
as children. Each child runs in its own process group, so a Ctrl-C in the
terminal reaches only the supervisor, which stops the children in order
(the broker last). Each child also asks the kernel for SIGTERM when its
parent dies (``PR_SET_PDEATHSIG``), so even a SIGKILLed ``koord up`` leaves
no orphan holding a port.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time

_PR_SET_PDEATHSIG = 1


def child_preexec() -> None:
    """Run in the child between fork and exec: die with the parent."""
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
