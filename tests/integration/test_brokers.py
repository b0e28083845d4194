"""The Tansu workarounds (``streams.broker.tansu_workarounds``) are needed on Tansu and harmless on Kafka."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import NewTopic

from streams import kafka
from streams.broker.tansu_workarounds import true_highwaters
from tests.integration.conftest import restart_worker

pytestmark = pytest.mark.integration

BATCHES, PER_BATCH = 3, 5
NODE = """apiVersion: v1
kind: Node
metadata: {name: workaround-node, labels: {koordstream.io/e2e: workarounds}}
spec: {taints: [{key: koordstream.io/e2e, value: workarounds, effect: NoSchedule}]}
status:
  capacity: {cpu: "40", memory: 64Gi, pods: "110"}
  allocatable: {cpu: "40", memory: 64Gi, pods: "110"}
"""


async def _end_offsets(bootstrap: str, topic: str) -> tuple[int, int]:
    """(ListOffsets latest, the Fetch high watermark ``true_highwaters`` reads) after 3 batches of 5 records."""
    async with kafka.admin_client(bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, 1, 1)])
    async with kafka.producer(bootstrap) as producer:
        for batch in range(BATCHES):
            sent = [await producer.send(topic, key=b"k", value=b"%d" % (batch * PER_BATCH + i)) for i in range(PER_BATCH)]
            await asyncio.gather(*sent)
    consumer = AIOKafkaConsumer(**kafka.client_settings(bootstrap), group_id=None, enable_auto_commit=False)
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        reported = (await consumer.end_offsets([tp]))[tp]
        return reported, (await true_highwaters(consumer, {tp: reported}))[tp]
    finally:
        await consumer.stop()


def test_fetch_high_watermark_is_the_true_end_offset(cluster):
    reported, corrected = asyncio.run(_end_offsets(cluster.bootstrap, f"koord.test.highwater-{cluster.kind}"))
    assert corrected == BATCHES * PER_BATCH
    if cluster.kind == "kafka":
        assert reported == corrected


def test_a_worker_with_the_workarounds_recovers_exact_tables(cluster):
    """The worker restarted with ``KOORD_BROKER_KIND=tansu`` (every workaround installed) on either
    broker: a node with room for exactly 4 pods of 10 cores, 3 placed before the restart, 3 after. The
    node and pods are deleted afterwards, so other tests' Unschedulable messages do not count them."""
    cluster.koord("apply", "-f", "-", "--wait", input=NODE + "---\n"
                  + "---\n".join(_pod(f"before-{i}") for i in range(3)))
    normal = dict(cluster.env)
    cluster.env["KOORD_BROKER_KIND"] = "tansu"
    try:
        restart_worker(cluster)
        cluster.koord("apply", "-f", "-", "--wait", "--timeout", "90",
                      input="---\n".join(_pod(f"after-{i}") for i in range(3)))
    finally:
        cluster.env = normal
        restart_worker(cluster)
    pods = cluster.koord_json("get", "pods", "-n", "workarounds")["items"]
    manifests = cluster.home / "workarounds.yaml"
    manifests.write_text("---\n".join([NODE, *(_pod(p["metadata"]["name"]) for p in pods)]))
    cluster.koord("delete", "-f", str(manifests), "--wait")
    placed = sorted(p["metadata"]["name"] for p in pods if p["spec"].get("nodeName") == "workaround-node")
    assert len(placed) == 4 and {f"before-{i}" for i in range(3)} <= set(placed)


def _pod(name: str) -> str:
    """A 10-core pod that selects and tolerates :data:`NODE` (no other test's pod lands there)."""
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: workarounds}}
spec:
  nodeSelector: {{koordstream.io/e2e: workarounds}}
  tolerations: [{{key: koordstream.io/e2e, value: workarounds, effect: NoSchedule}}]
  containers:
  - {{name: main, image: app, resources: {{requests: {{cpu: "10"}}}}}}
"""
