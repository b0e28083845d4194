"""``koord get`` (the read model) and ``koord watch decisions`` (the stream).

A row the read model cannot show as an object (``state.queries.broken_reason``) is listed with
status ``Broken`` and its reason (``-o wide``, and one warning line per row on stderr); a cell that
cannot be computed from an object shows ``<broken>``: one bad row never hides the others.
"""

from __future__ import annotations

import asyncio
import json

import click

from state import queries
from streams import kafka
from streams.stopsignals import stop_on_signals
from streams.cli import context
from streams.cli.output import FORMATS, emit
from streams.cli.readmodel import open_for_view
from streams.koordinator.annotations import ANNOTATION_EVICT_REASON
from streams.koordinator.resources import BATCH_CPU, BATCH_MEMORY
from streams.schemas import codec


def _condition(pod: dict, field: str) -> str:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled":
            return condition.get(field) or ""
    return ""


BROKEN = "Broken"


def _pod_status(pod: dict) -> str:
    if queries.broken_reason(pod):
        return BROKEN
    return (pod.get("status") or {}).get("phase") or ("Scheduled" if pod["spec"].get("nodeName") else "Pending")


POD_COLUMNS = (
    ("NAMESPACE", lambda p: p["metadata"].get("namespace", "")),
    ("NAME", lambda p: p["metadata"]["name"]),
    ("STATUS", _pod_status),
    ("NODE", lambda p: p["spec"].get("nodeName") or "<none>"),
)
POD_WIDE = (("REASON", lambda p: BROKEN if queries.broken_reason(p) else _condition(p, "reason")),
            ("MESSAGE", lambda p: queries.broken_reason(p) or _condition(p, "message")))
NODE_COLUMNS = (
    ("NAME", lambda n: n["metadata"]["name"]),
    ("CPU", lambda n: (n.get("status") or {}).get("allocatable", {}).get("cpu", "")),
    ("MEMORY", lambda n: (n.get("status") or {}).get("allocatable", {}).get("memory", "")),
    ("BATCH-CPU", lambda n: (n.get("status") or {}).get("allocatable", {}).get(BATCH_CPU, "<none>")),
    ("BATCH-MEMORY", lambda n: (n.get("status") or {}).get("allocatable", {}).get(BATCH_MEMORY, "<none>")),
)
def _zone_batch(topology: dict, resource: str) -> str:
    """``zone=value`` of a batch resource over the zones that carry it, e.g. ``node-0=10000,node-1=15000``."""
    shown = [f"{zone['name']}={entry['allocatable']}" for zone in topology.get("zones") or []
             for entry in zone.get("resources") or [] if entry.get("name") == resource]
    return ",".join(shown) or "<none>"


TOPOLOGY_COLUMNS = (
    ("NAME", lambda t: t["metadata"]["name"]),
    ("ZONES", lambda t: ",".join(zone.get("name", "") for zone in t.get("zones") or []) or "<none>"),
    ("BATCH-CPU", lambda t: _zone_batch(t, BATCH_CPU)),
    ("BATCH-MEMORY", lambda t: _zone_batch(t, BATCH_MEMORY)),
)
DECISION_COLUMNS = (
    ("POD", lambda d: f"{d['pod']['namespace']}/{d['pod']['name']}"),
    ("RESULT", lambda d: d["result"]),
    ("NODE", lambda d: d.get("nodeName") or "<none>"),
    ("MESSAGE", lambda d: d.get("message") or ""),
)
DECISION_WIDE = (("ID", lambda d: d["decisionId"]),
                 ("CAUSE", lambda d: "{sourceTopic}[{sourcePartition}]@{sourceOffset}".format(**d["causation"])))
def _quota_annotation(quota: dict, key: str) -> str:
    return (quota["metadata"].get("annotations") or {}).get(key, "")


QUOTA_COLUMNS = (
    ("NAMESPACE", lambda q: q["metadata"].get("namespace", "")),
    ("NAME", lambda q: q["metadata"]["name"]),
    ("RUNTIME", lambda q: _quota_annotation(q, queries.RUNTIME_ANNOTATION)),
    ("USED", lambda q: json.dumps((q.get("status") or {}).get("used", {}), sort_keys=True)),
)
QUOTA_WIDE = (("REQUEST", lambda q: _quota_annotation(q, queries.REQUEST_ANNOTATION)),)
def _status(obj: dict, field: str) -> str:
    return str((obj.get("status") or {}).get(field) or "")


def _pod_ref(job: dict) -> str:
    ref = (job.get("spec") or {}).get("podRef") or {}
    return f"{ref.get('namespace', '')}/{ref.get('name', '')}"


MIGRATION_JOB_COLUMNS = (
    ("NAME", lambda j: j["metadata"]["name"]),
    ("PHASE", lambda j: _status(j, "phase") or "Pending"),
    ("POD", _pod_ref),
    ("NODE", lambda j: _status(j, "nodeName") or "<none>"),
    ("REASON", lambda j: _status(j, "reason")),
)
MIGRATION_JOB_WIDE = (("MESSAGE", lambda j: _status(j, "message")),
                      ("TRIGGER", lambda j: (j["metadata"].get("annotations") or {}).get(ANNOTATION_EVICT_REASON, "")))
RESERVATION_COLUMNS = (
    ("NAME", lambda r: r["metadata"]["name"]),
    ("PHASE", lambda r: _status(r, "phase") or "Pending"),
    ("NODE", lambda r: _status(r, "nodeName") or "<none>"),
    ("ALLOCATABLE", lambda r: json.dumps((r.get("status") or {}).get("allocatable") or {}, sort_keys=True)),
    ("ALLOCATED", lambda r: json.dumps((r.get("status") or {}).get("allocated") or {}, sort_keys=True)),
)
RESERVATION_WIDE = (("OWNERS", lambda r: ",".join(f"{o['namespace']}/{o['name']}" for o in
                                                  (r.get("status") or {}).get("currentOwners") or [])),
                    ("REASON", lambda r: ((r.get("status") or {}).get("conditions") or [{}])[0].get("reason", "")))
OBJECT_COLUMNS = (
    ("NAMESPACE", lambda o: o["metadata"].get("namespace") or ""),
    ("NAME", lambda o: o["metadata"]["name"]),
)
POD_GROUP_COLUMNS = (
    *OBJECT_COLUMNS,
    ("PHASE", lambda g: _status(g, "phase") or "<none>"),
    ("MINMEMBER", lambda g: str((g.get("spec") or {}).get("minMember") or 0)),
    ("SCHEDULED", lambda g: _status(g, "scheduled") or "0"),
    ("RUNNING", lambda g: _status(g, "running") or "0"),
)
POD_GROUP_WIDE = (("SUCCEEDED", lambda g: _status(g, "succeeded") or "0"),
                  ("FAILED", lambda g: _status(g, "failed") or "0"),
                  ("OCCUPIEDBY", lambda g: _status(g, "occupiedBy")),
                  ("SCHEDULESTARTTIME", lambda g: _status(g, "scheduleStartTime")))
CLAIM_COLUMNS = (
    *OBJECT_COLUMNS,
    ("STATUS", lambda c: _status(c, "phase") or "Pending"),
    ("VOLUME", lambda c: (c.get("spec") or {}).get("volumeName") or ""),
    ("STORAGECLASS", lambda c: (c.get("spec") or {}).get("storageClassName") or ""),
)
CLAIM_WIDE = (("SELECTED-NODE", lambda c: (c["metadata"].get("annotations") or {}).get(
    "volume.kubernetes.io/selected-node", "")),)
VOLUME_COLUMNS = (
    ("NAME", lambda v: v["metadata"]["name"]),
    ("CAPACITY", lambda v: str(((v.get("spec") or {}).get("capacity") or {}).get("storage", ""))),
    ("ACCESS MODES", lambda v: ",".join((v.get("spec") or {}).get("accessModes") or [])),
    ("STATUS", lambda v: _status(v, "phase") or "Pending"),
    ("CLAIM", lambda v: "/".join(filter(None, ((((v.get("spec") or {}).get("claimRef") or {}).get(k) or "")
                                               for k in ("namespace", "name"))))),
    ("STORAGECLASS", lambda v: (v.get("spec") or {}).get("storageClassName") or ""),
)
STORAGE_CLASS_COLUMNS = (
    ("NAME", lambda c: c["metadata"]["name"]),
    ("PROVISIONER", lambda c: c.get("provisioner") or ""),
    ("VOLUMEBINDINGMODE", lambda c: c.get("volumeBindingMode") or "Immediate"),
)
CSINODE_COLUMNS = (
    ("NAME", lambda c: c["metadata"]["name"]),
    ("DRIVERS", lambda c: ",".join(d.get("name", "") for d in (c.get("spec") or {}).get("drivers") or [])),
)
OBJECT_KINDS = {
    "podmigrationjobs": ("podmigrationjobs", "PodMigrationJob", MIGRATION_JOB_COLUMNS, MIGRATION_JOB_WIDE),
    "podgroups": ("podgroups", "PodGroup", POD_GROUP_COLUMNS, POD_GROUP_WIDE),
    "reservations": ("reservations", "Reservation", RESERVATION_COLUMNS, RESERVATION_WIDE),
    "devices": ("devices", "Device", OBJECT_COLUMNS, ()),
    "persistentvolumeclaims": ("persistentvolumeclaims", "PersistentVolumeClaim", CLAIM_COLUMNS, CLAIM_WIDE),
    "persistentvolumes": ("persistentvolumes", "PersistentVolume", VOLUME_COLUMNS, ()),
    "storageclasses": ("storageclasses", "StorageClass", STORAGE_CLASS_COLUMNS, ()),
    "csinodes": ("csinodes", "CSINode", CSINODE_COLUMNS, ()),
}
"""Object kinds shown as last written to their topic: resource -> (topic id, kind, columns, wide columns)."""
OBJECT_ALIASES = {"podmigrationjob": "podmigrationjobs", "pmj": "podmigrationjobs", "podgroup": "podgroups",
                  "pg": "podgroups", "reservation": "reservations", "device": "devices",
                  "pvc": "persistentvolumeclaims", "persistentvolumeclaim": "persistentvolumeclaims",
                  "pv": "persistentvolumes", "persistentvolume": "persistentvolumes", "sc": "storageclasses",
                  "storageclass": "storageclasses", "csinode": "csinodes"}
DEADLETTER_COLUMNS = (
    ("TOPIC", lambda d: f"{d['sourceTopic']}[{d['sourcePartition']}]@{d['sourceOffset']}"),
    ("STAGE", lambda d: d["stage"]),
    ("REASON", lambda d: d["reason"]),
)


def _cell(column):
    """`column` (header, function) whose function gives ``<broken>`` instead of raising on an odd object."""
    header, function = column

    def guarded(item: dict) -> str:
        try:
            return function(item)
        except (KeyError, TypeError, AttributeError, ValueError, IndexError):
            return "<broken>"

    return header, guarded


def _warn_broken(resource: str, items: list[dict]) -> None:
    for item in items:
        reason = queries.broken_reason(item)
        if reason:
            metadata = item["metadata"]
            name = f"{metadata['namespace']}/{metadata['name']}" if metadata.get("namespace") else metadata["name"]
            click.echo(f"warning: {resource} {name} is broken in the read model: {reason}", err=True)


@click.command()
@click.argument("resource", type=click.Choice(["pods", "pod", "po", "nodes", "node", "no", "noderesourcetopologies",
                                               "noderesourcetopology", "nrt", "elasticquotas", "elasticquota", "eq",
                                               "decisions", "deadletters", *OBJECT_KINDS, *OBJECT_ALIASES]))
@click.argument("name", required=False)
@click.option("-n", "--namespace", default=None, help="Pods: only this namespace.")
@click.option("-o", "--output", type=FORMATS, default="table")
def get(resource: str, name: str | None, namespace: str | None, output: str) -> None:
    """Show pods, nodes, noderesourcetopologies, elasticquotas, podmigrationjobs, podgroups, reservations,
    devices, persistentvolumeclaims, persistentvolumes, storageclasses, csinodes, decisions or dead letters from
    the read model."""
    engine = open_for_view()
    if resource in ("pods", "pod", "po"):
        items = queries.get_pods(engine, namespace=namespace if namespace or not name else "default", name=name)
        columns, wide = POD_COLUMNS, POD_WIDE
    elif resource in ("nodes", "node", "no"):
        items, columns, wide = queries.get_nodes(engine, name=name), NODE_COLUMNS, ()
    elif resource in ("noderesourcetopologies", "noderesourcetopology", "nrt"):
        items, columns, wide = queries.get_noderesourcetopologies(engine, name=name), TOPOLOGY_COLUMNS, ()
    elif resource in ("elasticquotas", "elasticquota", "eq"):
        items = queries.get_elasticquotas(engine, namespace=namespace, name=name)
        columns, wide = QUOTA_COLUMNS, QUOTA_WIDE
    elif resource in OBJECT_KINDS or resource in OBJECT_ALIASES:
        topic, kind, columns, wide = OBJECT_KINDS[OBJECT_ALIASES.get(resource, resource)]
        items = queries.get_objects(engine, topic, kind, name=name, namespace=namespace)
    elif resource == "decisions":
        pod_key = f"{namespace or 'default'}/{name}" if name else None
        items, columns, wide = queries.get_decisions(engine, pod_key=pod_key), DECISION_COLUMNS, DECISION_WIDE
    else:
        items, columns, wide = queries.get_deadletters(engine), DEADLETTER_COLUMNS, ()
    if name and not items and resource not in ("decisions",):
        raise click.ClickException(f'{resource} "{name}" not found')
    _warn_broken(resource, items)
    emit(items, output, single=bool(name) and resource not in ("decisions",),
         columns=[_cell(column) for column in columns], wide_columns=[_cell(column) for column in wide])


async def print_decisions(bootstrap: str, topology, fmt: str, from_beginning: bool, stop: asyncio.Event) -> None:
    """Print the decision stream until ``stop`` is set."""
    consumer = kafka.consumer(bootstrap, [topology.name("decisions")], None, from_beginning)
    await consumer.start()
    try:
        while not stop.is_set():
            batches = await consumer.getmany(timeout_ms=200)
            for messages in batches.values():
                for message in messages:
                    try:
                        schema, decision = codec.decode(message.value)
                    except codec.CodecError as error:
                        click.echo(f"undecodable decision at offset {message.offset}: {error}", err=True)
                        continue
                    if fmt == "json":
                        click.echo(json.dumps(decision, default=lambda b: b.hex()))
                    else:
                        node = decision.get("nodeName") or "-"
                        result = decision["result"] if schema == "SchedulingDecision" else schema
                        click.echo(f"{decision['pod']['namespace']}/{decision['pod']['name']}  "
                                   f"{result}  {node}  {decision.get('message') or ''}".rstrip())
    finally:
        await consumer.stop()


@click.command()
@click.argument("stream", type=click.Choice(["decisions"]))
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
@click.option("--from-beginning", is_flag=True, help="Start at the first decision, not the next one.")
def watch(stream: str, output: str, from_beginning: bool) -> None:
    """Subscribe to the decision stream (Ctrl-C stops)."""
    config = context.settings()

    async def main() -> None:
        stop = asyncio.Event()
        stop_on_signals(stop)
        await print_decisions(context.bootstrap(config), context.topology(config), output, from_beginning, stop)

    asyncio.run(main())


COMMANDS = (get, watch)
