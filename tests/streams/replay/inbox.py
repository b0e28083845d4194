"""Inbox records as the routers write them, built from YAML manifests, for the replay tests."""

from __future__ import annotations

import types

from streams.inbox import InboxReader
from streams.objects import load_and_validate
from streams.schemas import codec
from streams.topology import load_topology

SCHEDULING_INBOX, NODE_INBOX = "koord.inbox.scheduling", "koord.inbox.node"
READERS = {SCHEDULING_INBOX: InboxReader.of(load_topology(), "inbox-scheduling"),
           NODE_INBOX: InboxReader.of(load_topology(), "inbox-node")}
"""The agents' inbox readers, by inbox topic name."""
T0 = 1_700_000_000_000


def node(name: str, cpu: str = "4") -> str:
    return f"""apiVersion: v1
kind: Node
metadata: {{name: {name}}}
status:
  capacity: {{cpu: "{cpu}", memory: 16Gi, pods: "110"}}
  allocatable: {{cpu: "{cpu}", memory: 16Gi, pods: "110"}}
"""


def pod(name: str, cpu: str = "1", namespace: str = "default") -> str:
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  containers:
  - {{name: main, image: app, resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}}}
"""


def node_metric(name: str, cpu: str, update_ms: int) -> str:
    import datetime

    when = datetime.datetime.fromtimestamp(update_ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"""apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata: {{name: {name}}}
status:
  updateTime: "{when}"
  nodeMetric:
    nodeUsage: {{resources: {{cpu: "{cpu}", memory: 4Gi}}}}
    systemUsage: {{resources: {{cpu: "1", memory: 1Gi}}}}
"""


def slo_config(threshold: int) -> str:
    return f"""apiVersion: v1
kind: ConfigMap
metadata: {{name: slo-controller-config, namespace: koordinator-system}}
data:
  colocation-config: '{{"enable": true, "cpuReclaimThresholdPercent": {threshold}}}'
"""


def records(inbox: str, inbox_key: str | None, *manifests: str, partition: int = 0, start_offset: int = 0,
            t0: int = T0, step_ms: int = 1000) -> list[types.SimpleNamespace]:
    """One inbox record per manifest, in order, as consumer records of ``inbox``: keyed by ``inbox_key``,
    else by the object's own key (the node inbox); source offsets count up per source topic."""
    out, source_offsets = [], {}
    for index, record in enumerate(load_and_validate("-", stdin_text="---\n".join(manifests))):
        source = f"koord.{record.topic}"
        source_offset = source_offsets[source] = source_offsets.get(source, -1) + 1
        envelope = {"sourceTopic": source, "sourcePartition": 0, "sourceOffset": source_offset,
                    "timestamp": t0 + index * step_ms, "key": record.key,
                    "payload": codec.encode(record.schema, record.record), "ack": False}
        out.append(types.SimpleNamespace(
            topic=inbox, partition=partition, offset=start_offset + index, key=(inbox_key or record.key).encode(),
            value=codec.encode("InboxEvent", envelope), timestamp=envelope["timestamp"]))
    return out
