"""The node aggregate: one state per node, fed by the node inbox.

For now it publishes the node's own capacity and allocatable as a
NodeResource on every Node event (batch and mid allocatable come with the
node-profile calculation). Like the scheduling aggregate it remembers the
last source offset per source partition, so a re-forwarded event is applied
once, and reads time only from the event.
"""

from __future__ import annotations

from streams.events import InboxEvent, decision_id

ECHO_MESSAGE = "allocatable echoed from the Node (batch and mid resources not calculated yet)"


def initial_state() -> dict:
    return {"sources": {}, "node": None}


def handle(state: dict, event: InboxEvent) -> tuple[dict, list[dict]]:
    """Apply one event to a node's state; return (new state, NodeResource records)."""
    cause = event.causation
    source = f"{cause.source_topic}/{cause.source_partition}"
    if state["sources"].get(source, -1) >= cause.source_offset:
        return state, []
    state = {**state, "sources": {**state["sources"], source: cause.source_offset}}
    if event.kind != "Node":
        return state, []
    if event.deleted:
        return {**state, "node": None}, []
    record = event.record
    node = {"capacity": dict(record["capacity"]), "allocatable": dict(record["allocatable"])}
    output = {
        "decisionId": decision_id(cause, 0),
        "nodeName": event.key,
        "capacity": node["capacity"],
        "allocatable": node["allocatable"],
        "message": ECHO_MESSAGE,
        "causation": cause.to_record(),
        "timestamp": event.timestamp_ms,
    }
    return {**state, "node": node}, [output]
