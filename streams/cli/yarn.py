"""``koord yarn up|down|status``: a local Hadoop YARN (a ResourceManager and NodeManagers) for development and tests."""

from __future__ import annotations

import json

import click

from streams.cli import context
from streams.yarn.cluster import HADOOP_VERSION, MissingPrerequisite, YarnCluster
from streams.yarn.resourcemanager import ResourceManagerError, list_node_managers


def _cluster() -> YarnCluster:
    return YarnCluster(context.settings().home.resolve() / "yarn")


@click.group()
def yarn() -> None:
    """A real Hadoop YARN on loopback (Maven Central jars fetched on first use; Java 17 and Maven needed)."""


@yarn.command()
@click.option("--node-managers", type=click.IntRange(1, 8), default=2, show_default=True,
              help="NodeManagers to start, each its own JVM.")
@click.option("--memory-mb", type=click.IntRange(256), default=4096, show_default=True,
              help="Memory each NodeManager offers until the YARN bridge sets it.")
@click.option("--vcores", type=click.IntRange(1), default=4, show_default=True,
              help="Virtual cores each NodeManager offers until the YARN bridge sets it.")
def up(node_managers: int, memory_mb: int, vcores: int) -> None:
    """Start a ResourceManager and NodeManagers in the background; print the ResourceManager's URL."""
    cluster = _cluster()
    if cluster.running():
        raise click.ClickException(f"already running at {cluster.state()['rm']} (`koord yarn down` stops it)")
    click.echo(f"fetching or reusing Hadoop {HADOOP_VERSION} (~95 MB on first use)...", err=True)
    try:
        state = cluster.start(node_managers, memory_mb, vcores)
    except MissingPrerequisite as error:
        raise click.ClickException(str(error)) from None
    except RuntimeError as error:
        raise click.ClickException(str(error)) from None
    cluster.processes.clear()
    click.echo(f"YARN {state['version']} ResourceManager at {state['rm']} with {len(state['nodes'])} NodeManagers "
               f"({', '.join(state['nodes'])}), started in {state['start_seconds']} s")
    click.echo(f"koord yarn-bridge --rm {state['rm']}")


@yarn.command()
def down() -> None:
    """Stop the ResourceManager and NodeManagers that `koord yarn up` started."""
    cluster = _cluster()
    if not cluster.state():
        raise click.ClickException("no local YARN is running")
    cluster.stop()
    click.echo("YARN stopped")


@yarn.command()
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
def status(output: str) -> None:
    """Whether the local YARN runs, its ResourceManager and each NodeManager's capacity and allocations."""
    cluster = _cluster()
    state = cluster.state() or {}
    report: dict = {"running": cluster.running(), **state}
    if report["running"]:
        try:
            report["node_managers"] = [vars(node) for node in list_node_managers(state["rm"])]
        except ResourceManagerError as error:
            report["error"] = str(error)
    if output == "json":
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(f"YARN: {'running' if report['running'] else 'not running'}")
    if state:
        click.echo(f"ResourceManager: {state['rm']}  admin: {state['admin']}")
    if "error" in report:
        click.echo(report["error"])
    for node in report.get("node_managers", ()):
        click.echo(f"{node['node_id']:<24} {node['state']:<10} vcores {node['allocated_vcores']}/"
                   f"{node['capacity_vcores']}  memory {node['allocated_memory_mb']}/{node['capacity_memory_mb']} MB  "
                   f"containers {node['containers']}")


COMMANDS = (yarn,)
