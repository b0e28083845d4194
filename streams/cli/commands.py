"""The ``koord`` command group: every command module's ``COMMANDS``."""

from __future__ import annotations

import click

from streams.cli import (
    apply, bench, bridge, explain, get, kube, nodeagent, replay, simulate, top, topics, up, webhook, yarn)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """koordstream: Koordinator's co-location control plane on Kafka."""


for module in (up, topics, apply, get, top, simulate, nodeagent, bench, replay, explain, kube, bridge, webhook, yarn):
    for command in module.COMMANDS:
        cli.add_command(command)
