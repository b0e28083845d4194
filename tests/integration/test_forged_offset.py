"""Issue 37 failure 1 on both brokers: one record on the scheduling inbox claiming an offset of a koord.pods
partition below its end, sent while the router still forwards a burst of that partition, moved the default
domain's dedupe mark (the highest source offset seen) past every pod of the burst not yet forwarded, and
those pods were never decided, with no dead letter (1,500 on Tansu and 1,477 on Kafka of 1,500). Inbox
records are now signed by the pipeline (``streams.signing``): the forged one is a dead letter and moves
nothing, and the whole burst is decided."""

from __future__ import annotations

import asyncio
import time

import pytest

from streams import kafka, routing
from streams.bench.hostile import encoded, pod_manifest, read_topic
from streams.partitioning import partition_for
from streams.schemas import codec

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(own_cluster):
    """A cluster of this module's own (``own_cluster``): what these tests write would change the shared one's
    placements and its session replay."""
    return own_cluster


NAMESPACE = "forged-offset"
BURST = 1_500
NODE = """\
apiVersion: v1
kind: Node
metadata: {name: forged-offset-node}
status: {capacity: {cpu: "1000", memory: 4000Gi, pods: "5000"}, allocatable: {cpu: "1000", memory: 4000Gi, pods: "5000"}}
"""


def _burst(partitions: int, partition: int) -> list[tuple[str, bytes]]:
    """BURST pods whose keys land on ``partition`` of koord.pods, as ``koord apply`` produces them."""
    found, index = [], 0
    while len(found) < BURST:
        manifest = pod_manifest(f"burst-{index}")
        manifest["metadata"]["namespace"] = NAMESPACE
        _, key, value = encoded(manifest)
        if partition_for(list(range(partitions)), key) == partition:
            found.append((key, value))
        index += 1
    return found


async def _burst_then_forge(cluster, partition: int, pods: list[tuple[str, bytes]]) -> None:
    pods_topic = cluster.topology.name("pods")
    placed = await kafka.produce(cluster.bootstrap, [(pods_topic, key, value) for key, value in pods],
                                 headers=routing.ACK_HEADERS)
    forged = pod_manifest("forged-offset-invented")
    forged["metadata"]["namespace"] = NAMESPACE
    _, key, value = encoded(forged)
    envelope = codec.encode("InboxEvent", {
        "sourceTopic": pods_topic, "sourcePartition": partition, "sourceOffset": placed[-1].offset,
        "timestamp": int(time.time() * 1000), "key": key, "payload": value, "ack": False})
    await kafka.produce(cluster.bootstrap, [(cluster.topology.name("inbox-scheduling"), routing.DEFAULT_DOMAIN,
                                             envelope)])


def test_a_forged_scheduling_inbox_offset_below_the_end_does_not_drop_a_burst(cluster):
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=NODE)
    partitions = cluster.topology.spec("pods").partitions
    pods = _burst(partitions, 0)
    asyncio.run(_burst_then_forge(cluster, 0, pods))
    deadline, decided = time.monotonic() + 60, set()
    while time.monotonic() < deadline and len(decided) < BURST:
        items = cluster.koord_json("get", "pods", "-n", NAMESPACE)["items"]
        decided = {pod["metadata"]["name"] for pod in items
                   if any(c["type"] == "PodScheduled" for c in pod.get("status", {}).get("conditions", []))}
        time.sleep(2)
    assert len(decided) == BURST, f"{BURST - len(decided)} of {BURST} pods never decided"
    letters = asyncio.run(read_topic(cluster.bootstrap, cluster.topology.name("deadletters"),
                                     lambda found: bool(_refused(found)), 30))
    assert [record["reason"] for record in _refused(letters)] == [
        "the record has no koord-mac header: only the pipeline writes inbox-scheduling"]


def _refused(letters: list) -> list:
    return [record for _, _, schema, record in letters
            if schema == "DeadLetter" and record["stage"] == "scheduling" and record["key"] == routing.DEFAULT_DOMAIN.encode()]
