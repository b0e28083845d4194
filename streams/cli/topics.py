"""``koord topics apply|list``: the topology file against the broker.

``apply`` also applies the ACLs of ``deploy/acls.yaml`` (``streams.acls``) when the broker has an
authorizer, and says so when it has none."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import click

from streams import acls as access
from streams import roles
from streams import topology as topo
from streams.cli import context
from streams.kafka import admin_client


@click.group()
def topics() -> None:
    """Create and inspect the topics of deploy/topics.yaml."""


@topics.command("apply")
@click.option("--dry-run", is_flag=True, help="Report what would be created; change nothing.")
@click.option("--acls", "acl_file", type=click.Path(path_type=Path, dir_okay=False, exists=True), default=None,
              help="Who may write what, applied when the broker has an authorizer "
                   "[default: acls.yaml beside the topology file, if there is one]")
@click.option("--role", "role_name", type=click.Choice(list(roles.ROLES)), default=roles.ALL, show_default=True,
              help="The worker role whose table changelogs, consumer group and transactional ids to create and "
                   "grant (streams/roles.py).")
def apply_cmd(dry_run: bool, acl_file: Path | None, role_name: str) -> None:
    """Create the missing topics and ACLs; report drift."""
    config = context.settings()
    worker_role = roles.role(role_name)
    full = context.topology(config)
    topology = worker_role.topology(full)
    acl_file = acl_file or access.beside(config.topology_file)
    want = None
    if acl_file.exists():
        try:
            want = access.bindings(access.load_roles(acl_file), full, worker_role)
        except access.AclError as error:
            raise click.ClickException(str(error)) from None

    async def run():
        async with admin_client(context.bootstrap(config)) as admin:
            plan = await topo.apply(admin, topology, dry_run=dry_run)
            if want is None:
                return plan, access.AclPlan(applied=False, reason=f"there is no {acl_file}")
            return plan, await access.apply(admin, want, dry_run=dry_run)

    try:
        plan, acl_plan = asyncio.run(run())
    except access.AclError as error:
        raise click.ClickException(str(error)) from None
    verb = "would create" if dry_run else "created"
    for spec in plan.create:
        click.echo(f"{verb} {spec.name} (partitions {spec.partitions}, replication {spec.replication_factor})")
    for line in plan.drift:
        click.echo(f"drift {line}")
    security = "" if config.security_protocol.upper() == "PLAINTEXT" else \
        " --command-config FILE (a client .properties with this cluster's security settings)"
    for name, configs in plan.set_configs:
        click.echo(f"to set the configs of {name}: "
                   f"{topo.alter_command(context.bootstrap(config), name, configs)}{security}")
    click.echo(f"{len(plan.in_sync)} in sync, {len(plan.create)} {verb}, {len(plan.drift)} drifted")
    if not acl_plan.applied:
        click.echo(f"ACLs NOT applied: {acl_plan.reason}")
        return
    for binding in acl_plan.create:
        click.echo(f"{verb} ACL {binding}")
    for binding in acl_plan.extra:
        click.echo(f"ACL not in {acl_file.name} (left in place): {binding}")
    click.echo(f"ACLs: {len(acl_plan.present)} present, {len(acl_plan.create)} {verb}, "
               f"{len(acl_plan.extra)} not in {acl_file.name}")


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
