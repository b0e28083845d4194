"""Which inbox each source event goes to: the router's pure rules.

The node aggregate is keyed by node name. What the scheduler reads goes to the domain router's inbox
(``inbox-routing``), which sends it on to the scheduling domain it belongs to (``streams.domains``); the pods
the domain router reads from their own topic, beside its inbox (``DOMAIN_ROUTER_SOURCES``). Pods and what
concerns one node go by key; quotas and profiles to every partition (each keeps the table
pods are routed by); what every domain needs, Reservations and PodMigrationJobs to partition 0.
Config changes concern every node, so they go to every node-inbox partition; clock ticks go to every
node-inbox partition and to the domain router's partition 0, which sends them to every domain. Pods
reach the node aggregate only through the scheduling decisions that place or release them, so every
binding (pre-bound pods included) takes one path.
"""

from __future__ import annotations

import dataclasses

from streams.partitioning import partition_for
from streams.schemas import codec

ACK_HEADER = "koord-ack"
"""Header ``koord apply`` sets on what it produces: the aggregates acknowledge those records."""
ACK_HEADERS = [(ACK_HEADER, b"1")]
"""The headers of a record that asks for acknowledgement."""

DEFAULT_DOMAIN = "default"
"""The scheduling domain of everything no ElasticQuotaProfile's tree holds."""
ROUTING_INBOX = "inbox-routing"
SCHEDULING_INBOX = "inbox-scheduling"
INBOXES = ("inbox-node", ROUTING_INBOX, SCHEDULING_INBOX)
ROUTER_INBOXES = ("inbox-node", ROUTING_INBOX)
"""The inboxes the router writes (the scheduling inbox is the domain router's)."""
BROADCAST_TO_ROUTING = ("ElasticQuota", "ElasticQuotaProfile")
"""Kinds every domain-router partition reads: the table pods are routed by."""
ACKED_AS = {ROUTING_INBOX: (ROUTING_INBOX, SCHEDULING_INBOX)}
"""Acks that count for an inbox: an event the domain router forwards is acknowledged by the domain that
got the copy asking for it (``streams.agents.domains``), any other by the domain router itself."""
DIRECTORY_KINDS = ("Tick", "KubeSchedulerConfiguration", "PodGroup", "PodDisruptionBudget", "Reservation",
                   "PodMigrationJob", "PersistentVolume", "PersistentVolumeClaim", "StorageClass")
"""Kinds only the domain router's partition 0 reads (``streams.domains.DIRECTORY_PARTITION``)."""

KIND_BY_SOURCE = {
    "nodes": ("Node",),
    "pods": ("Pod",),
    "nodemetrics": ("NodeMetric",),
    "devices": ("Device",),
    "noderesourcetopologies": ("NodeResourceTopology",),
    "quotas": ("ElasticQuota", "ElasticQuotaProfile"),
    "reservations": ("Reservation",),
    "podgroups": ("PodGroup",),
    "poddisruptionbudgets": ("PodDisruptionBudget",),
    "podmigrationjobs": ("PodMigrationJob",),
    "persistentvolumes": ("PersistentVolume",),
    "persistentvolumeclaims": ("PersistentVolumeClaim",),
    "storageclasses": ("StorageClass",),
    "csinodes": ("CSINode",),
    "configs": ("ConfigMap", "KubeSchedulerConfiguration", "DeschedulerConfiguration"),
    "ticks": ("Tick",),
    "decisions": ("SchedulingDecision", "Eviction"),
    "noderesources": ("NodeResource",),
    "nodeusages": ("NodeUsage",),
    "yarnnodes": ("YarnNode",),
}
"""The record kinds each source topic (by topology id) may carry. The
scheduling decisions are a source too: they tell the node aggregate which
pods run on its node (with their requests, priority and QoS); the node
resources tell the scheduler each node's batch and mid allocatable, and the node
usages what load-aware scheduling and the descheduler read of each NodeMetric
(the raw NodeMetric goes to the node aggregate only, which sends them). Evictions
share the decisions topic (anyone subscribing to decisions sees them) and are
routed nowhere: the pod's deletion, not the eviction decision, releases it. PodGroups,
Reservations and PodMigrationJobs go to the scheduling domain (gang scheduling, reservations,
descheduling; the domain writes the jobs' status back to their topic and ignores its own copies).
PersistentVolumes, PersistentVolumeClaims and StorageClasses go to every scheduling domain, CSINodes (keyed by
node name) to their node's domain: the volume plugins read them."""

COPIED_BY_AGGREGATES = ("decisions", "noderesources", "nodeusages")
"""Source topics only the pipeline writes (signed, ``streams.signing.PIPELINE_SOURCES``), every record of which
that ``routes`` sends anywhere its aggregate copies to those inboxes itself (``streams.outputs.WRITTEN_TO_INBOXES``:
the scheduling domains their binding decisions, the node aggregate its node resources and usages): the router
does not read them. A record anyone else writes there is read by no aggregate (the bridge and the read model
refuse an unsigned one; on Kafka the ACLs refuse the write). The Evictions on the decisions topic are routed
nowhere (``NOT_ROUTED``); the pipeline's scheduling domains and node aggregate write them, and the bridge
(signature checked) carries them out, with no router validation in between."""
DOMAIN_ROUTER_SOURCES = ("pods",)
"""Source topics the domain router reads itself, partition p beside its inbox's partition p (the worker's
assignor gives a worker both; ``streams.agents.domains`` refuses a topology where their partition counts
differ): it checks each record as the router would (``streams.sources``) and sends a pod to its domain in one
write, where a forward by the router to its inbox made two. ``routes`` still names the routing inbox for them:
that is where the domain router takes them in, and where records the router forwarded before still are."""
CHECKED_SOURCES = tuple(source for source in KIND_BY_SOURCE if source not in COPIED_BY_AGGREGATES)
"""Every source topic (topology id) whose records a router checks: all but the pipeline's own outputs."""
ROUTED_SOURCES = tuple(source for source in CHECKED_SOURCES if source not in DOMAIN_ROUTER_SOURCES)
"""The source topics the router reads."""

NOT_ROUTED = ("Eviction",)
"""Kinds sent to no inbox (see KIND_BY_SOURCE)."""

BINDING_RESULTS = ("Scheduled", "Bound", "Released", "Preempted")
"""Decision results that change which pods run on a node."""


@dataclasses.dataclass(frozen=True)
class Route:
    inbox: str
    key: str
    partition: int | None = None
    """None: the partition the producer's partitioner gives ``key`` (``partition_in``)."""

    def partition_in(self, partitions: int) -> int:
        """The partition of the inbox (of ``partitions``) the route's record lands in."""
        return partition_for(partitions, self.key) if self.partition is None else self.partition


def kind_of_deletion(source_id: str, key: str) -> str:
    """The kind a tombstone on ``source_id`` deletes.

    Topics that carry two kinds tell them apart by key: a
    KubeSchedulerConfiguration is cluster-scoped (no "/"), a ConfigMap is not (a cluster-scoped tombstone
    is reported as a KubeSchedulerConfiguration; the scheduling domain deletes whichever of it and the
    DeschedulerConfiguration it holds under that name);
    an ElasticQuotaProfile and an ElasticQuota share the quotas topic and a
    key shape, so a quota-topic tombstone is reported as an ElasticQuota.
    """
    if source_id == "configs" and "/" not in key:
        return "KubeSchedulerConfiguration"
    return KIND_BY_SOURCE[source_id][0]


def routes(source_id: str, key: str, kind: str, record: dict | None, partitions: dict[str, int]) -> list[Route]:
    """Where one source event goes; ``partitions`` is the partition count per inbox id."""
    if kind in NOT_ROUTED:
        return []
    if kind == "SchedulingDecision":
        node = record.get("nodeName") if record is not None else None
        return [Route("inbox-node", node)] if node and record["result"] in BINDING_RESULTS else []
    if kind == "ConfigMap":
        return _every_partition("inbox-node", key, partitions)
    if kind in ("NodeMetric", "YarnNode"):
        return [Route("inbox-node", key)]
    if kind == "Tick":
        return _every_partition("inbox-node", key, partitions) + [Route(ROUTING_INBOX, key, 0)]
    if kind in DIRECTORY_KINDS:
        return [Route(ROUTING_INBOX, key, 0)]
    if kind in BROADCAST_TO_ROUTING:
        return _every_partition(ROUTING_INBOX, key, partitions)
    if kind in ("Node", "Device", "NodeResourceTopology"):
        return [Route("inbox-node", key), Route(ROUTING_INBOX, key)]
    return [Route(ROUTING_INBOX, key)]


def envelope(source_topic: str, source_partition: int, source_offset: int, timestamp_ms: int, key: str,
             payload: bytes | None, ack: bool, writer: tuple[str, int] | None = None,
             routed_after: int | None = None) -> bytes:
    """The inbox record of the source record at ``source_topic[source_partition]@source_offset``: its value
    unchanged, its key, its time (as the router bounds it, ``streams.events.bounded_time``), whether it
    asks for an Ack, for an aggregate's copy of its own output its writer (inbox id, partition): the
    inbox partition whose consumer wrote it (``streams.events.Causation.seen_key``), and for the domain
    router's forward of a record it read itself where its table applied it (``Causation.routed_after``)."""
    return codec.encode_own("InboxEvent", {"sourceTopic": source_topic, "sourcePartition": source_partition,
                                           "sourceOffset": source_offset, "timestamp": timestamp_ms, "key": key,
                                           "payload": payload, "ack": ack,
                                           "writer": None if writer is None else {"inbox": writer[0],
                                                                                  "partition": writer[1]},
                                           "routedAfter": routed_after})


def _every_partition(inbox: str, key: str, partitions: dict[str, int]) -> list[Route]:
    return [Route(inbox, key, p) for p in range(partitions[inbox])]


def forwarded_kind(source_id: str, key: str, kind: str, record: dict | None, partitions: dict[str, int]) -> bool:
    """Whether the domain router may forward this event to a scheduling domain: every event routed to it."""
    return any(route.inbox == ROUTING_INBOX for route in routes(source_id, key, kind, record, partitions))
