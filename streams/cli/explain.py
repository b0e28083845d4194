"""``koord explain pod|node``: why the read model shows what it shows, from the recorded decisions.

A pod: its latest decisions with the filter results aggregated as
kube-scheduler reports them, the top scores, the chosen node and the inbox
and source record each decision came from. A node: its latest NodeResource
with batch/mid values and Koordinator's calculation message, what caused it,
and batch/mid over the last few NodeResources.
"""

from __future__ import annotations

import datetime
import json

import click

from state import queries
from streams.cli.readmodel import open_for_view
from streams.objects.quantity import format_quantity


@click.command()
@click.argument("kind", type=click.Choice(["pod", "node"]))
@click.argument("name")
@click.option("-n", "--namespace", default="default", show_default=True, help="pod: its namespace.")
@click.option("--history", default=None, type=int, help="Decisions (pod, default 3) or NodeResources (node, default 5).")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
def explain(kind: str, name: str, namespace: str, history: int | None, output: str) -> None:
    """Explain a pod's scheduling decision or a node's batch/mid allocatable."""
    engine = open_for_view()
    if kind == "pod":
        found = queries.explain_pod(engine, namespace, name, history or 3)
        missing = f'pod "{namespace}/{name}" not found in the read model'
    else:
        found = queries.explain_node(engine, name, history or 5)
        missing = f'node "{name}" not found in the read model'
    if found is None:
        raise click.ClickException(missing)
    if output == "json":
        click.echo(json.dumps(found, indent=2))
    elif kind == "pod":
        _print_pod(found)
    else:
        _print_node(found)


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).isoformat(timespec="milliseconds")


def _cause(cause: dict) -> str:
    return (f"inbox {cause['inboxTopic']}[{cause['inboxPartition']}]@{cause['inboxOffset']}, "
            f"source {cause['sourceTopic']}[{cause['sourcePartition']}]@{cause['sourceOffset']}")


def _print_pod(found: dict) -> None:
    pod = found["pod"]
    state = "deleted" if pod["deleted"] else f"phase {pod['phase'] or '-'}"
    click.echo(f"Pod {pod['namespace']}/{pod['name']} (uid {pod['uid'] or '-'}, {state})")
    if not found["decisions"]:
        click.echo("  no decision yet")
    for index, decision in enumerate(found["decisions"]):
        label = "Latest decision" if index == 0 else "Earlier decision"
        click.echo(f"\n{label}: {decision['result']}" + (f" on {decision['nodeName']}" if decision["nodeName"] else ""))
        click.echo(f"  id:        {decision['decisionId']} at {_when(decision['timestamp'])}")
        for key, value in sorted(decision["allocated"].items()):
            click.echo(f"  {key}: {value}")
        if decision["message"]:
            click.echo(f"  message:   {decision['message']}")
        if decision["filterResults"]:
            click.echo(f"  filtered:  {decision['rejectedNodes']} node(s) rejected: {decision['filterSummary']}")
            for result in decision["filterResults"]:
                click.echo(f"    {result['plugin']}: {result['count']} x {result['reason']}")
        if decision["topScores"]:
            click.echo("  top scores: " + ", ".join(f"{s['node']}={s['score']}" for s in decision["topScores"]))
            for score in decision["topScores"]:
                if score.get("plugins"):
                    click.echo(f"    {score['node']}: " + ", ".join(
                        f"{plugin} {value}" for plugin, value in sorted(score["plugins"].items(), key=lambda p: -p[1])))
        click.echo(f"  caused by: {_cause(decision['causation'])}")
    for eviction in found.get("evictions") or []:
        click.echo(f"\nEvicted from {eviction['nodeName'] or '-'} ({eviction['reason']}) at {_when(eviction['timestamp'])}")
        click.echo(f"  why:       {eviction['message']}")
    for job in found.get("migrationJobs") or []:
        click.echo(f"\nPodMigrationJob {job['name']}: {job['phase'] or 'Pending'}"
                   + (f" ({job['reason']})" if job["reason"] else ""))
        if job["trigger"]:
            click.echo(f"  why:       {job['trigger']}")
        if job["heldBy"]:
            click.echo(f"  held by:   {job['heldBy']}")
        if job["message"]:
            click.echo(f"  status:    {job['message']}")


def _print_node(found: dict) -> None:
    click.echo(f"Node {found['node']['name']}" + (" (deleted)" if found["node"]["deleted"] else ""))
    latest = found["latest"]
    if latest is None:
        click.echo("  no NodeResource yet")
        return
    click.echo(f"Latest NodeResource {latest['decisionId']} at {_when(latest['timestamp'])}")
    requested = found.get("requested") or {}
    for resource, value in latest["extended"].items():
        used = requested.get(resource)
        click.echo(f"  {resource}: {'-' if value is None else format_quantity(resource, value)}"
                   + ("" if not used else f" (requested by its pods: {format_quantity(resource, used)})"))
    for part in filter(None, latest["message"].split("; ")):
        click.echo(f"  {part}")
    for line in yarn_lines(latest.get("annotations") or {}):
        click.echo(f"  {line}")
    click.echo(f"  caused by: {_cause(latest['causation'])}")
    metric = found["latestNodeMetric"]
    if metric is not None:
        click.echo(f"  latest NodeMetric in the read model: source partition {metric['sourcePartition']} offset "
                   f"{metric['sourceOffset']}, updateTime {_when(metric['updateTime'])}")
        usage = metric.get("nodeUsage") or {}
        if usage:
            click.echo("  node usage: " + ", ".join(f"{resource} {format_quantity(resource, value)}"
                                                    for resource, value in sorted(usage.items())))
    click.echo("History (newest first):")
    rows = [("TIME", "BATCH-CPU", "BATCH-MEMORY", "MID-CPU", "MID-MEMORY", "CAUSE")]
    for item in found["history"]:
        rows.append((_when(item["timestamp"]),
                     *("-" if item[r] is None else format_quantity(r, item[r]) for r in queries.EXTENDED_RESOURCES),
                     "{sourceTopic}[{sourcePartition}]@{sourceOffset}".format(**item["causation"])))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  " + "   ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


def yarn_lines(annotations: dict) -> list[str]:
    """The node's YARN share (``streams.noderesource.yarnshare``): what YARN holds of the batch pool and the
    NodeManager total the YARN bridge writes; none when no NodeManager runs on the node."""
    from streams.koordinator.annotations import ANNOTATION_THIRD_PARTY_ALLOCATIONS
    from streams.koordinator.resources import BATCH_CPU, BATCH_MEMORY
    from streams.noderesource.yarnshare import ANNOTATION_YARN_NODE_RESOURCE, YARN_ALLOCATION_NAME

    text = annotations.get(ANNOTATION_YARN_NODE_RESOURCE)
    if not text:
        return []
    total = json.loads(text)
    allocations = json.loads(annotations.get(ANNOTATION_THIRD_PARTY_ALLOCATIONS) or "{}")
    held = next((a["resources"] for a in allocations.get("allocations", []) if a.get("name") == YARN_ALLOCATION_NAME),
                {})
    return [f"YARN NodeManager {total['nodeId']}: holds {held.get(BATCH_CPU, '0')} batch-cpu, "
            f"{format_quantity(BATCH_MEMORY, int(held.get(BATCH_MEMORY, 0)))} "
            f"batch-memory (subtracted above); total written to YARN {total['vcores']} vcores, "
            f"{total['memoryMB']} MB (batch minus BE pods' requests)"]


COMMANDS = (explain,)
