"""Which SchedulingDecisions a node has seen: a replay of an old decision is ignored.

The inbox's dedupe is by source offset, so a decision sent again to the decisions topic (byte-identical: a new
record, a new source offset) passes it; applied, an old ``Scheduled`` would bring a deleted pod back into the
node's batch and mid allocatable and its QoS plan. So the node keeps, per pod key, a ``Mark`` of the last
decision it applied, and a decision is a **replay** when:

1. it comes from the mark's scheduling-inbox partition (``causation.inboxTopic/inboxPartition``), at the mark's
   offset or below, and not later in event time (``timestamp``). The domain handles its inbox in order, so its
   later decisions have higher offsets; a decision id is a function of the same inbox record (and the inbox's
   incarnation, which the record does not carry: a new incarnation restarts offsets from 0, but with later
   event times, which is why both must be older), so the mark's own id is a replay too;
2. or the mark is a deletion of the pod (``Released`` for ``POD_GONE_REASONS``) and the decision names the
   deleted pod's UID: a deleted object never comes back under its UID, from any partition.

Marks of pods no longer on the node are tombstones: at most ``MAX_TOMBSTONES`` per node are kept, the oldest by
event time (then key) dropped first, so a node's state stays bounded however many pods pass through it; a
replay of a pod's decision after its tombstone was dropped is applied again. Pure and deterministic: marks
come from the decisions alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Container, Mapping

MAX_TOMBSTONES = 64
"""Tombstones (marks of pods that left the node) kept per node: the last 64. About 40 bytes each in the node's
compressed state (``statecodec``) with the UID of a deleted pod, so a node with pod churn carries about 2.5 KB
of them (measured beside a 1.1 KB state of 20 pods without a NodeMetric)."""
POD_GONE_REASONS = ("Deleted", "PodSucceeded", "PodFailed")
"""Reasons of the ``Released`` decision the scheduler sends when the pod object is gone or has ended
(``streams.scheduler.orchestration``): that pod, by its UID, is never placed again."""
RELEASED = "Released"


@dataclasses.dataclass(frozen=True, slots=True)
class Mark:
    """The last decision a node applied about a pod."""

    stream: str
    """``inboxTopic/inboxPartition`` of the decision's causation: the scheduling-inbox partition it came from."""
    offset: int
    """Its ``inboxOffset``."""
    timestamp: int
    """Its event time (ms)."""
    deleted_uid: str = ""
    """The pod's UID when the decision deleted it (``POD_GONE_REASONS``), else empty."""


def pod_key(record: Mapping) -> str:
    pod = record["pod"]
    return f"{pod['namespace']}/{pod['name']}"


def mark_of(record: Mapping) -> Mark:
    cause = record["causation"]
    gone = record["result"] == RELEASED and record.get("reason") in POD_GONE_REASONS
    return Mark(f"{cause['inboxTopic']}/{cause['inboxPartition']}", cause["inboxOffset"], record["timestamp"],
                (record["pod"].get("uid") or "") if gone else "")


def is_replay(mark: Mark | None, record: Mapping) -> bool:
    """Whether decision ``record`` about a pod whose last applied decision is ``mark`` is one already applied,
    or older than it (module docstring)."""
    if mark is None:
        return False
    uid = record["pod"].get("uid")
    if mark.deleted_uid and uid == mark.deleted_uid:
        return True
    cause = record["causation"]
    return (f"{cause['inboxTopic']}/{cause['inboxPartition']}" == mark.stream
            and cause["inboxOffset"] <= mark.offset and record["timestamp"] <= mark.timestamp)


def remember(marks: Mapping[str, Mark], key: str, mark: Mark, running: Container[str]) -> dict[str, Mark]:
    """``marks`` with ``key``'s mark set to ``mark``; tombstones (keys not in ``running``) beyond
    ``MAX_TOMBSTONES`` dropped, oldest first."""
    kept = {**marks, key: mark}
    tombstones = [k for k in kept if k not in running]
    if len(tombstones) > MAX_TOMBSTONES:
        tombstones.sort(key=lambda k: (kept[k].timestamp, k))
        for k in tombstones[:len(tombstones) - MAX_TOMBSTONES]:
            del kept[k]
    return kept
