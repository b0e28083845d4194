"""Options several commands share."""

from __future__ import annotations

import click


def metrics_options(command):
    """``--metrics-port`` / ``--metrics-host`` for a long-running process (see ``streams.metrics.serve``)."""
    command = click.option("--metrics-host", default="127.0.0.1", show_default=True,
                           help="Address the metrics server binds (0.0.0.0 in containers).")(command)
    return click.option("--metrics-port", type=int, default=None,
                        help="Serve Prometheus metrics on this port.")(command)
