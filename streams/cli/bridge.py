"""``koord bridge``: a Kubernetes cluster's objects onto the topics and, in active mode, decisions back;
``koord shadow report``: where the cluster's scheduler and koordstream placed each pod.

``--mode observe`` is shadow mode: it writes nothing to the cluster, and the report compares. There is no
third mode, because shadow is not a different process: it is observing plus a query of the read model.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import click

from streams.bridge import observations, shadow
from streams.bridge.config import MODES, OBSERVE, BridgeConfig
from streams.bridge.run import run
from streams.cli import context

DEFAULTS = BridgeConfig(kubeconfig=None)


@click.command()
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              envvar="KUBECONFIG", help="Kubeconfig of the cluster (default $KUBECONFIG; none: the pod's "
              "service account).")
@click.option("--context", "kube_context", default=None, help="Context of the kubeconfig (default: its current one).")
@click.option("--mode", type=click.Choice(MODES), default=OBSERVE, show_default=True,
              help="observe: write nothing to the cluster (shadow mode); active: bind, mark, patch nodes, evict.")
@click.option("--scheduler-name", default=DEFAULTS.scheduler_name, show_default=True,
              help="In active mode, pods naming this schedulerName are bound by koordstream.")
@click.option("--kube-api-qps", type=float, default=DEFAULTS.kube_api_qps, show_default=True,
              envvar="KOORD_BRIDGE_KUBE_API_QPS",
              help="Requests/s to the API server (kube-scheduler's clientConnection.qps); 0: no client-side limit.")
@click.option("--kube-api-burst", type=click.IntRange(min=1), default=DEFAULTS.kube_api_burst, show_default=True,
              envvar="KOORD_BRIDGE_KUBE_API_BURST",
              help="Requests the rate limit lets through at once (kube-scheduler's clientConnection.burst).")
def bridge(kubeconfig: Path | None, kube_context: str | None, mode: str, scheduler_name: str, kube_api_qps: float,
           kube_api_burst: int) -> None:
    """Connect koordstream to a Kubernetes cluster (long-running; stops on SIGTERM)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = context.settings()
    config = BridgeConfig(kubeconfig=kubeconfig, context=kube_context, mode=mode, scheduler_name=scheduler_name,
                          state_dir=settings.home / "bridge", kube_api_qps=kube_api_qps,
                          kube_api_burst=kube_api_burst).validate()
    try:
        asyncio.run(run(config, context.bootstrap(settings), context.topology(settings).names()))
    except ValueError as error:
        raise click.ClickException(str(error)) from None


@click.group("shadow")
def shadow_group() -> None:
    """Shadow mode: koordstream's decisions against the cluster's own scheduler."""


@shadow_group.command()
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
def report(output: str) -> None:
    """Per pod and in total: same node, other node, only koordstream or only the cluster could not place it."""
    engine = context.read_model()
    result = shadow.compare(observations.cluster_pods(engine), observations.decisions_by_pod(engine))
    if output == "json":
        click.echo(json.dumps(result.to_dict(), indent=2))
        return
    rows = [("POD", "OUTCOME", "CLUSTER", "KOORDSTREAM")]
    for pod in result.pods:
        rows.append((f"{pod.namespace}/{pod.name}", pod.outcome, _side(pod.cluster), _side(pod.koordstream)))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        click.echo("   ".join([*(cell.ljust(width) for cell, width in zip(row, widths)), row[3]]).rstrip())
    click.echo("")
    click.echo("  ".join(f"{outcome}: {count}" for outcome, count in result.totals.items()))


def _side(placement: shadow.Placement | None) -> str:
    if placement is None:
        return "-"
    return placement.node or f"{placement.reason}: {placement.message}"


COMMANDS = (bridge, shadow_group)
