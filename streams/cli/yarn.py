"""``koord yarn up|down|status``: a local Hadoop YARN (a ResourceManager and NodeManagers) for development and
tests; ``koord yarn-bridge``: a ResourceManager's NodeManagers onto koordstream and batch totals back."""

from __future__ import annotations

import asyncio
import json
import logging
from urllib.parse import urlparse

import click

from streams.cli import context
from streams.cli.options import metrics_options
from streams.yarn.cluster import YarnCluster
from streams.maven import MissingPrerequisite
from streams.yarn.jars import HADOOP_VERSION
from streams.yarn.resourcemanager import ResourceManagerError, list_node_managers
from streams.yarn.status import BRIDGE_DIR


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
    click.echo(f"koord yarn-bridge --rm {state['rm']} --rm-admin {state['admin']} "
               + " ".join(f"--node {node}=NODE" for node in state["nodes"]))


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


def _node_map(pairs: tuple[str, ...]) -> dict[str, str]:
    mapping = {}
    for pair in pairs:
        nodemanager, _, node = pair.partition("=")
        if not nodemanager or not node:
            raise click.BadParameter(f"expected NODEMANAGER=NODE, got {pair!r}", param_hint="--node")
        mapping[nodemanager] = node
    return mapping


@click.command("yarn-bridge")
@click.option("--rm", "rm_url", required=True, help="The ResourceManager's web address, e.g. http://rm:8088.")
@click.option("--rm-admin", default=None, help="Its admin address host:port (default: the --rm host, port 8033; "
              "`koord yarn up` prints its own).")
@click.option("--node", "nodes", multiple=True, metavar="NODEMANAGER=NODE",
              help="The Kubernetes node a NodeManager (its id host:port, or its host) runs on; repeatable. "
                   "A NodeManager not named is reported, not synced.")
@click.option("--poll-interval", type=float, default=1.0, show_default=True,
              help="Seconds between reads of the NodeManagers.")
@click.option("--min-update-interval", type=float, default=5.0, show_default=True,
              help="Seconds between two writes of one NodeManager's total (rate limit).")
@metrics_options
def yarn_bridge(rm_url: str, rm_admin: str | None, nodes: tuple[str, ...], poll_interval: float,
                min_update_interval: float, metrics_port: int | None, metrics_host: str) -> None:
    """Publish a YARN ResourceManager's NodeManagers (koord.yarnnodes) and write each one's total, the node's
    batch allocatable minus BE pods' requests, back with UpdateNodeResource (long-running; stops on SIGTERM)."""
    from streams.metrics import serve
    from streams.yarn.bridge import YarnBridgeSettings, run

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = context.settings()
    admin = rm_admin or f"{urlparse(rm_url).hostname}:8033"
    try:
        config = YarnBridgeSettings(rm_url=rm_url.rstrip("/"), admin_address=admin, node_map=_node_map(nodes),
                                    state_dir=settings.home.resolve() / BRIDGE_DIR, poll_interval_s=poll_interval,
                                    min_update_interval_s=min_update_interval).validate()
        serve(metrics_port, metrics_host)
        asyncio.run(run(config, context.bootstrap(settings), context.topology(settings).names()))
    except ValueError as error:
        raise click.ClickException(str(error)) from None


COMMANDS = (yarn, yarn_bridge)
