"""Issue 37 failure 4 on both brokers: garbage on a table changelog (a key or value that is not JSON or not
UTF-8) made table recovery throw on it without counting its offset, so a restarted worker stayed in recovery
for good and decided nothing more. Recovery skips such a record (``streams.faustcompat.changelogs``) and
counts it; the restarted worker places the next pod."""

from __future__ import annotations

import asyncio

import pytest

from streams import kafka
from tests.integration.conftest import restart_worker
from tests.integration.manifests import scenario_node

pytestmark = pytest.mark.integration

SCENARIO = "changelog-garbage"
CHANGELOGS = {"changelog-scheduling": "scheduling-state", "changelog-node": "node-state",
              "changelog-routing": "routing-state"}
"""Each changelog topic id and the table it restores."""
GARBAGE = [(b"\xff\xfe not utf-8", b'{"seq": 1}'), (b'"journal/0"', b"\xc3\x28 not utf-8"),
           (b"not json", b"{not json"), (b"12345", b'"x"')]
"""(key, value) pairs no table could have written: only the node-state table, whose values are raw bytes,
takes the second's value, and it skips the rest for their keys."""


@pytest.fixture(scope="module")
def cluster(own_cluster):
    """A cluster of this module's own (``own_cluster``): its worker restarts on changelogs nobody else should
    read."""
    return own_cluster


def pod(name: str) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {SCENARIO}}}
spec:
  tolerations: [{{key: e2e-scenario, operator: Equal, value: {SCENARIO}, effect: NoSchedule}}]
  containers: [{{name: main, image: app, resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}}}]
"""


async def _send_garbage(bootstrap: str, topic: str, partitions: int) -> None:
    async with kafka.producer(bootstrap) as producer:
        for partition in range(partitions):
            for key, value in GARBAGE:
                await (await producer.send(topic, key=key, value=value, partition=partition))


def _node_of(cluster, name: str) -> str | None:
    return (cluster.koord_json("get", "pods", "-n", SCENARIO, name).get("spec") or {}).get("nodeName")


def test_a_restarted_worker_recovers_past_changelog_garbage_and_places_the_next_pod(cluster):
    apply = ["apply", "-f", "-", "--wait", "--timeout", "60"]
    cluster.koord(*apply, input=scenario_node("changelog-garbage-node", SCENARIO, cpu="4", memory="8Gi") + "---\n"
                  + pod("before"))
    assert _node_of(cluster, "before") == "changelog-garbage-node"

    for topic_id in CHANGELOGS:
        spec = cluster.topology.spec(topic_id)
        asyncio.run(_send_garbage(cluster.bootstrap, spec.name, spec.partitions))
    restart_worker(cluster)

    cluster.koord(*apply, input=pod("after"))
    assert _node_of(cluster, "after") == "changelog-garbage-node"
    assert cluster.worker.poll() is None
    assert "bulk recovery read" in cluster.worker_log()  # the garbage went through the bulk read's decoding
    skipped = {table: cluster.worker_metric("koord_changelog_skipped_total", table=table)
               for table in CHANGELOGS.values()}
    partitions = {table: cluster.topology.spec(topic_id).partitions for topic_id, table in CHANGELOGS.items()}
    assert skipped == {"scheduling-state": 4 * partitions["scheduling-state"],
                       "node-state": 3 * partitions["node-state"],
                       "routing-state": 4 * partitions["routing-state"]}
