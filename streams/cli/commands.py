"""The ``koord`` command group: every command module's ``COMMANDS``, each module imported when one of its
commands runs (or ``koord --help`` lists them), so ``koord worker`` does not import the bridge, the read
model's database drivers or the benchmarks: a worker's start, and so its restart, is shorter by that."""

from __future__ import annotations

import importlib

import click

MODULES = {
    "up": "up", "down": "up", "status": "up", "worker": "up", "project": "up",
    "topics": "topics", "apply": "apply", "delete": "apply", "get": "get", "watch": "get", "top": "top",
    "simulate": "simulate", "node-agent": "nodeagent", "bench": "bench", "replay": "replay", "explain": "explain",
    "kube": "kube", "bridge": "bridge", "shadow": "bridge", "webhook": "webhook", "yarn": "yarn",
    "yarn-bridge": "yarn",
}
"""Command name -> the module under ``streams.cli`` whose ``COMMANDS`` holds it."""


class Koord(click.Group):
    """A click group whose commands come from :data:`MODULES`, each module imported on first use."""

    def list_commands(self, ctx: click.Context | None) -> list[str]:
        return sorted(MODULES)

    def get_command(self, ctx: click.Context | None, name: str) -> click.Command | None:
        module = MODULES.get(name)
        if module is None:
            return None
        commands = importlib.import_module(f"streams.cli.{module}").COMMANDS
        return next(command for command in commands if command.name == name)


@click.group(cls=Koord, context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """koordstream: Koordinator's co-location control plane on Kafka."""
