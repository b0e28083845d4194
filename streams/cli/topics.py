"""``koord topics apply|list``: the topology file against the broker."""

from __future__ import annotations

import asyncio
import json

import click

from streams import topology as topo
from streams.cli import context
from streams.kafka import admin_client


@click.group()
def topics() -> None:
    """Create and inspect the topics of deploy/topics.yaml."""


@topics.command("apply")
@click.option("--dry-run", is_flag=True, help="Report what would be created; change nothing.")
def apply_cmd(dry_run: bool) -> None:
    """Create the missing topics and report drift."""
    config = context.settings()
    topology = context.topology(config)

    async def run():
        async with admin_client(context.bootstrap(config)) as admin:
            return await topo.apply(admin, topology, dry_run=dry_run)

    plan = asyncio.run(run())
    verb = "would create" if dry_run else "created"
    for spec in plan.create:
        click.echo(f"{verb} {spec.name} (partitions {spec.partitions}, replication {spec.replication_factor})")
    for line in plan.drift:
        click.echo(f"drift {line}")
    click.echo(f"{len(plan.in_sync)} in sync, {len(plan.create)} {verb}, {len(plan.drift)} drifted")


@topics.command("list")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
def list_cmd(output: str) -> None:
    """List the topology's topics as the broker has them."""
    config = context.settings()
    topology = context.topology(config)

    async def run():
        async with admin_client(context.bootstrap(config)) as admin:
            return await topo.describe(admin, [t.name for t in topology.topics])

    existing = asyncio.run(run())
    rows = []
    for spec in topology.topics:
        have = existing.get(spec.name)
        rows.append({"id": spec.id, "name": spec.name, "exists": have is not None,
                     "partitions": have.partitions if have else None,
                     "replicationFactor": have.replication_factor if have else None,
                     "configs": have.configs if have else {}, "want": {
                         "partitions": spec.partitions, "replicationFactor": spec.replication_factor,
                         "configs": spec.configs}})
    if output == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        state = f"{row['partitions']} partitions, rf {row['replicationFactor']}" if row["exists"] else "MISSING"
        click.echo(f"{row['name']:<45} {state}")


COMMANDS = (topics,)
