"""The YARN bridge's decisions, pure: which YarnNode records to publish and which totals to write.

One round takes the NodeManagers the ResourceManager reported, the Kubernetes node each runs on, and
the NodeManager totals the node aggregate published (``yarnshare.ANNOTATION_YARN_NODE_RESOURCE``):

- a NodeManager is on node N when ``node_map`` names N for its id (``host:port``) or its host;
  otherwise it is **unknown**: reported, never guessed (yarn-copilot finds it through the
  NodeManager pod's ``yarn.hadoop.apache.org/node-id`` annotation; koordstream has no such pod);
- a YarnNode is published when what the ResourceManager reports of it (state, capacity,
  allocations, containers) differs from what was published last: the topic is compacted and the
  node aggregate recalculates on each one, so an unchanged report is not sent again;
- the total to write is ``yarnshare.writable``: the node aggregate's total, never below what YARN
  allocated. It is written when it differs from the NodeManager's capacity and the NodeManager's last
  write is at least ``min_update_interval_s`` old (rate limit); equal: nothing (idempotent).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from streams import deadletter

from streams.noderesource.yarnshare import YarnShare, writable
from streams.yarn.resourcemanager import NodeManagerReport


@dataclasses.dataclass(frozen=True)
class Update:
    node_id: str
    node_name: str
    vcores: int
    memory_mb: int


@dataclasses.dataclass(frozen=True)
class Round:
    publish: list[tuple[str, dict]]
    """(node name, YarnNode record)."""
    updates: list[Update]
    unknown: list[str]
    """NodeManager ids no node is known for."""


def node_of(report: NodeManagerReport, node_map: Mapping[str, str]) -> str | None:
    return node_map.get(report.node_id) or node_map.get(report.host)


def yarn_node_record(node_name: str, report: NodeManagerReport, rm_url: str, now_ms: int) -> dict:
    return {"nodeName": node_name, "nodeId": report.node_id, "cluster": rm_url, "state": report.state,
            "capacityVcores": report.capacity_vcores, "capacityMemoryMB": report.capacity_memory_mb,
            "allocatedVcores": report.allocated_vcores, "allocatedMemoryMB": report.allocated_memory_mb,
            "containers": report.containers, "observedAt": now_ms}


def _reported(record: dict) -> tuple:
    return tuple(value for key, value in sorted(record.items()) if key != "observedAt")


def plan(reports: list[NodeManagerReport], node_map: Mapping[str, str], targets: Mapping[str, tuple[int, int]],
         published: Mapping[str, dict], last_update_s: Mapping[str, float], now_s: float, rm_url: str,
         min_update_interval_s: float) -> Round:
    """One round (see the module docstring); ``targets``: node id -> (vcores, memory MB) the aggregate wants."""
    publish, updates, unknown = [], [], []
    for report in reports:
        node = node_of(report, node_map)
        if node is None:
            unknown.append(report.node_id)
            continue
        record = yarn_node_record(node, report, rm_url, int(now_s * 1000))
        last = published.get(node)
        if last is None or _reported(last) != _reported(record):
            publish.append((node, record))
        target = targets.get(report.node_id)
        if target is None or report.state != "RUNNING":
            continue
        share = YarnShare(report.node_id, report.state, report.allocated_vcores, report.allocated_memory_mb,
                          report.capacity_vcores, report.capacity_memory_mb)
        vcores, memory_mb = writable(target, share)
        if (vcores, memory_mb) == (report.capacity_vcores, report.capacity_memory_mb):
            continue
        if now_s - last_update_s.get(report.node_id, float("-inf")) < min_update_interval_s:
            continue
        updates.append(Update(report.node_id, node, vcores, memory_mb))
    return Round(publish, updates, unknown)


STAGE = "yarn-bridge"


def refused(update: Update, message: str, rm_url: str, now_ms: int) -> dict:
    """The DeadLetter of an ``UpdateNodeResource`` the ResourceManager refused: its source is the
    ResourceManager (no topic record caused it), its key the Kubernetes node, its payload the update and
    its reason YARN's message."""
    payload = json.dumps(dataclasses.asdict(update), sort_keys=True).encode()
    return deadletter.dead_letter_record(STAGE, rm_url, 0, 0, update.node_name.encode(), payload,
                                         f"UpdateNodeResource {update.node_id}: {message}", now_ms)
