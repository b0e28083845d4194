"""What the aggregates emit, as a contract without Faust: the topic of each output schema, the key each
record is sent under, the inboxes an output the pipeline reads again is copied to and the Ack an event
asking for one gets.

The live agents send by it (``streams.agents.outputs``); the replay, the CLI and the ACLs read the same
tables to know where an output went and under which key.
"""

from __future__ import annotations

from streams import deadletter, routing
from streams.events import DELETES, InboxEvent

OUTPUT_TOPICS = {
    "SchedulingDecision": "decisions",
    "Eviction": "decisions",
    "NodeResource": "noderesources",
    "NodeUsage": "nodeusages",
    "ElasticQuotaStatus": "quotastatus",
    "Actuation": "actuations",
    "DeadLetter": "deadletters",
    "Ack": "acks",
    "PodMigrationJob": "podmigrationjobs",
    "Reservation": "reservations",
    "PodGroup": "podgroups",
}
"""Topology id of the topic each output schema goes to."""


def output_key(schema: str, record: dict) -> str:
    if DELETES in record:
        return record[DELETES]
    if schema in ("SchedulingDecision", "Eviction"):
        return f"{record['pod']['namespace']}/{record['pod']['name']}"
    if schema == "ElasticQuotaStatus":
        return record["name"]
    if schema == "Ack":
        return f"{record['causation']['sourceTopic']}/{record['causation']['sourcePartition']}"
    if schema == "DeadLetter":
        return deadletter.reference_key(record)
    if schema in ("PodMigrationJob", "Reservation"):
        return record["metadata"]["name"]
    if schema == "PodGroup":
        return f"{record['metadata']['namespace']}/{record['metadata']['name']}"
    return record["nodeName"]


ACKED_OUTPUTS = ("SchedulingDecision", "NodeResource", "ElasticQuotaStatus", "NodeUsage")
"""Outputs an Ack lists: ``koord apply --wait`` waits until each is in the read model or, for a NodeUsage
(which only the scheduling domains read), until the scheduling domain's Ack names it as its ``eventId``."""
FORWARDED = ("NodeUsage",)
"""Outputs another aggregate acknowledges when their cause asked for an Ack: they carry the ack header."""


def ack(inbox: str, event: InboxEvent, outputs: list[tuple[str, dict]]) -> tuple[str, dict]:
    """The Ack saying the aggregate of ``inbox`` processed ``event`` and caused ``outputs``."""
    forwarded = event.record.get("decisionId") if event.kind in FORWARDED and event.record is not None else None
    return "Ack", {"aggregate": inbox, "causation": event.causation.to_record(), "timestamp": event.timestamp_ms,
                   "outputIds": [record["decisionId"] for schema, record in outputs if schema in ACKED_OUTPUTS],
                   "eventId": forwarded}


WRITTEN_TO_INBOXES = ("SchedulingDecision", "NodeResource", "NodeUsage")
"""Outputs the pipeline reads again: the aggregate that makes one writes it, in the same batch (the same
transaction under exactly-once), both to its topic and to the inboxes the router's rules name for it
(:func:`inbox_routes`), as the router's copy would be: the envelope names the output's own topic, partition
and offset, so the inbox readers' checks, dedupe by source offset and the replay see what they saw of the
router's copy. The router does not read their topics (``routing.COPIED_BY_AGGREGATES``).

The copy names its writer, the aggregate inbox partition whose event made the output, and the inbox readers'
dedupe keeps the highest source offset per (source partition, writer) for such copies: decisions are keyed by
pod, so one decisions partition holds the outputs of several scheduling domains, whose copies reach an inbox
partition from independent producers in any order; one writer's copies arrive in offset order
(``streams.events.Causation.seen_key``)."""


def inbox_routes(schema: str, record: dict, partitions: dict[str, int]) -> list[routing.Route]:
    """Where the router would send the output (``routing.routes`` on its topic); ``partitions`` is the
    partition count per inbox id."""
    deleted = DELETES in record
    return routing.routes(OUTPUT_TOPICS[schema], output_key(schema, record), schema, None if deleted else record,
                          partitions)
