"""SIGTERM and SIGINT stop every command quietly, with exit status 0, from its first instruction to its end.

A supervisor (``koord up``, Kubernetes, Ctrl-C) may stop a process at any point, and importing the
commands takes seconds. Until a command runs its event loop, a signal raises ``SystemExit(0)``; the
signal is also remembered, because library code that catches every exception while the command starts
can swallow that ``SystemExit``. A long-running command then calls ``stop_on_signals``, which hands the
signals to its loop (a graceful stop) and stops at once if one came before. SIGUSR1 prints every
thread's stack to stderr, for a process that does not stop.
"""

from __future__ import annotations

import asyncio
import faulthandler
import signal

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_received: list[int] = []


def _stop_quietly(signum: int, frame: object) -> None:
    _received.append(signum)
    raise SystemExit(0)


def install() -> None:
    """From now on a stop signal raises ``SystemExit(0)``; SIGUSR1 dumps the threads' stacks."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, _stop_quietly)
    faulthandler.register(signal.SIGUSR1, all_threads=True)


def received() -> bool:
    """A stop signal has come (even if what it raised was swallowed)."""
    return bool(_received)


def stop_on_signals(stop: asyncio.Event) -> None:
    """Make a stop signal set ``stop`` in the running loop; set it now if one came while the command started."""
    loop = asyncio.get_running_loop()
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, stop.set)
    if received():
        stop.set()
