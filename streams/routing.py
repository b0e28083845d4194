"""Which inbox each source event goes to: the routers' pure rules.

The node aggregate is keyed by node name; the scheduling aggregate by
scheduling domain (one domain, ``default``, until quota trees add more).
Config changes concern every node, so they go to every node-inbox partition;
clock ticks go to every partition of both inboxes.
"""

from __future__ import annotations

import dataclasses

DEFAULT_DOMAIN = "default"

KIND_BY_SOURCE = {
    "nodes": ("Node",),
    "pods": ("Pod",),
    "nodemetrics": ("NodeMetric",),
    "devices": ("Device",),
    "quotas": ("ElasticQuota", "ElasticQuotaProfile"),
    "reservations": ("Reservation",),
    "configs": ("ConfigMap", "KubeSchedulerConfiguration"),
    "ticks": ("Tick",),
}
"""The record kinds each source topic (by topology id) may carry."""


@dataclasses.dataclass(frozen=True)
class Route:
    inbox: str
    key: str
    partition: int | None = None


def kind_of_deletion(source_id: str, key: str) -> str:
    """The kind a tombstone on ``source_id`` deletes.

    Topics that carry two kinds tell them apart by key: a
    KubeSchedulerConfiguration is cluster-scoped (no "/"), a ConfigMap is not;
    an ElasticQuotaProfile and an ElasticQuota share the quotas topic and a
    key shape, so a quota-topic tombstone is reported as an ElasticQuota.
    """
    if source_id == "configs" and "/" not in key:
        return "KubeSchedulerConfiguration"
    return KIND_BY_SOURCE[source_id][0]


def routes(source_id: str, key: str, kind: str, record: dict | None, partitions: dict[str, int]) -> list[Route]:
    """Where one source event goes; ``partitions`` is the partition count per inbox id."""
    if kind == "Tick":
        return [Route(inbox, key, p) for inbox in ("inbox-node", "inbox-scheduling") for p in range(partitions[inbox])]
    if kind == "Node":
        return [Route("inbox-node", key), Route("inbox-scheduling", DEFAULT_DOMAIN)]
    if kind == "Pod":
        out = [Route("inbox-scheduling", DEFAULT_DOMAIN)]
        if record is not None and record.get("nodeName"):
            out.append(Route("inbox-node", record["nodeName"]))
        return out
    if kind in ("NodeMetric", "Device"):
        return [Route("inbox-node", key)]
    if kind == "ConfigMap":
        return [Route("inbox-node", key, p) for p in range(partitions["inbox-node"])]
    return [Route("inbox-scheduling", DEFAULT_DOMAIN)]
