"""``koord``: the command line, a thin shell over the core and the topics.

``main`` makes SIGTERM and SIGINT stop any command quietly with exit status 0 from its first
instruction: importing the commands takes seconds, and a supervisor (``koord up``, Kubernetes,
Ctrl-C) may stop a process at any point. A long-running command replaces these handlers with
its event loop's, which stop it gracefully (``loop.add_signal_handler``).

A file that cannot be read or written (a read-only or full KOORD_HOME) ends a command with one line
naming the file and the OS error, as click prints its own errors, not a traceback.
"""

from __future__ import annotations

import signal
import sys


def _stop_quietly(signum: int, frame: object) -> None:
    raise SystemExit(0)


def main() -> None:
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _stop_quietly)
    from streams.cli.commands import cli

    try:
        cli()
    except OSError as error:
        if error.filename is None:
            raise
        print(f"Error: {error.filename}: {error.strerror}", file=sys.stderr)
        sys.exit(1)


def __getattr__(name: str) -> object:
    if name == "cli":
        from streams.cli.commands import cli

        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
