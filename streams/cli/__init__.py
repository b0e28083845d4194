"""``koord``: the command line, a thin shell over the core and the topics.

``main`` makes SIGTERM and SIGINT stop any command quietly with exit status 0 from its first
instruction (``streams.stopsignals``).

A file that cannot be read or written (a read-only or full KOORD_HOME) ends a command with one line
naming the file and the OS error, as click prints its own errors, not a traceback.
"""

from __future__ import annotations

import sys

from streams import stopsignals


def main() -> None:
    stopsignals.install()
    from streams.cli.commands import cli

    if stopsignals.received():
        sys.exit(0)

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
