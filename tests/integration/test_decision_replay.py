"""Issue 37 failure 7 on both brokers: a SchedulingDecision sent again byte-identically to the decisions topic (a
new record, so a new source offset the inbox's dedupe does not know) brought a deleted pod back into its node's
batch allocatable while ``koord get`` said it was deleted. The router routed it to the node aggregate then; now
no aggregate reads the decisions topic (the scheduling domain copies its bindings to the node inbox itself,
``routing.COPIED_BY_AGGREGATES``), so the record sent again reaches no inbox, and the read model's dedupe by
decision id keeps it from showing the pod. (Were it copied again, the node aggregate would ignore a decision
older than the last one it applied about the pod, ``streams.nodeaggregate.replays``, tested there.)"""

from __future__ import annotations

import asyncio
import datetime
import json
import time

import pytest

from streams import kafka
from streams.bench.hostile import read_topic
from streams.schemas import codec
from tests.integration.manifests import COLOCATION_CONFIG

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(own_cluster):
    """A cluster of this module's own (``own_cluster``): a record no pipeline wrote must not reach the shared
    one's session replay."""
    return own_cluster


NODE = "replay-node"
NAMESPACE = "replay"
BATCH_CPU = "kubernetes.io/batch-cpu"

NODE_YAML = f"""\
apiVersion: v1
kind: Node
metadata: {{name: {NODE}}}
status:
  capacity: {{cpu: "100", memory: 120G, pods: "110"}}
  allocatable: {{cpu: "100", memory: 120G, pods: "110"}}
"""
POD_YAML = f"""\
apiVersion: v1
kind: Pod
metadata: {{name: web, namespace: {NAMESPACE}, labels: {{koordinator.sh/qosClass: LS}}}}
spec:
  containers:
  - {{name: main, image: app, resources: {{requests: {{cpu: "20", memory: 20G}}}}}}
"""
APPLY = ("apply", "-f", "-", "--wait", "--timeout", "60")


def _node_metric(seconds_later: int) -> str:
    """A fresh NodeMetric of the node naming no pod, so a prod pod counts by its request; each call's
    ``updateTime`` is a new one."""
    now = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds_later)
    return f"""\
apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata: {{name: {NODE}}}
status:
  updateTime: "{now.strftime("%Y-%m-%dT%H:%M:%SZ")}"
  nodeMetric:
    nodeUsage: {{resources: {{cpu: "10", memory: 10G}}}}
    systemUsage: {{resources: {{cpu: "2", memory: 2G}}}}
"""


def _batch_cpu_published(cluster) -> int:
    """Batch CPU of the node's last NodeResource on its topic."""
    records = asyncio.run(read_topic(cluster.bootstrap, cluster.topology.name("noderesources"), lambda _: False, 3))
    mine = sorted((partition, offset, record) for partition, offset, schema, record in records
                  if schema == "NodeResource" and record["nodeName"] == NODE)
    return mine[-1][2]["allocatable"][BATCH_CPU]


def _batch_cpu_shown(cluster) -> int:
    return int(cluster.koord_json("get", "nodes", NODE)["status"]["allocatable"][BATCH_CPU])


def _eventually(read, expected, timeout: float = 30):
    deadline, value = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        value = read()
        if value == expected:
            break
        time.sleep(0.5)
    return value


async def _placing_decision(bootstrap: str, topic: str, timeout_s: float = 30):
    """The raw record of the decision that placed the pod on the node."""
    consumer = kafka.consumer(bootstrap, [topic], group_id=None, from_beginning=True)
    await consumer.start()
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for messages in (await consumer.getmany(timeout_ms=500)).values():
                for message in messages:
                    schema, record = codec.decode(message.value)
                    if (schema == "SchedulingDecision" and record["pod"]["name"] == "web"
                            and record["nodeName"] == NODE and record["result"] in ("Scheduled", "Bound")):
                        return message
        raise AssertionError(f"no decision placed {NAMESPACE}/web on {NODE} within {timeout_s}s")
    finally:
        await consumer.stop()


async def _send_again(bootstrap: str, message) -> int:
    """``message`` written again, byte for byte with its headers (its signature), to its topic and partition;
    its new offset."""
    headers = list(message.headers)
    async with kafka.producer(bootstrap) as client:
        placed = await client.send_and_wait(message.topic, key=message.key, value=message.value,
                                            partition=message.partition, headers=headers or None)
    return placed.offset


def test_a_decision_sent_again_does_not_bring_a_deleted_pod_back_into_batch_allocatable(cluster):
    cluster.koord(*APPLY, input="---\n".join([COLOCATION_CONFIG, NODE_YAML, POD_YAML]))
    cluster.koord(*APPLY, input=_node_metric(0))
    with_pod = _batch_cpu_published(cluster)
    cluster.koord("delete", "pod", "web", "-n", NAMESPACE, "--wait")
    cluster.koord(*APPLY, input=_node_metric(1))
    deleted = _batch_cpu_published(cluster)
    assert deleted == with_pod + 20_000, "the pod's 20 cores are back in batch once it is deleted"
    assert _eventually(lambda: _batch_cpu_shown(cluster), deleted) == deleted

    decisions = cluster.topology.name("decisions")
    message = asyncio.run(_placing_decision(cluster.bootstrap, decisions))
    offset = asyncio.run(_send_again(cluster.bootstrap, message))

    cluster.koord(*APPLY, input=_node_metric(2))

    def named(found: list, position: tuple[int, int]) -> bool:
        return any(schema == "InboxEvent" and record["sourceTopic"] == decisions
                   and (record["sourcePartition"], record["sourceOffset"]) == position
                   for _, _, schema, record in found)

    inbox = asyncio.run(read_topic(cluster.bootstrap, cluster.topology.name("inbox-node"), lambda _: False, 5))
    assert named(inbox, (message.partition, message.offset)), "the domain copied the placing decision itself"
    assert not named(inbox, (message.partition, offset)), "no one copies or routes the record sent again"
    assert _batch_cpu_published(cluster) == deleted
    assert _batch_cpu_shown(cluster) == deleted
    assert cluster.koord_json("get", "pods", "-n", NAMESPACE)["items"] == []
    assert not cluster.worker_metric("koord_decision_replays_total", aggregate="node"), \
        "the node aggregate never saw the record sent again"

    replayed = cluster.koord("replay", "node", "-o", "json", check=False, timeout=120)
    report = json.loads(replayed.stdout)
    total = report["total"]
    assert (total["diverged"], total["missing"], total["extra"], total["conflicting"]) == (0, 0, 0, 0), report
    assert report["ok"], "koord replay ignores the decision sent again as the worker did"
