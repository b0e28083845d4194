"""Compaction on real Kafka: object topics and table changelogs keep only the latest value per key, and
a restarted worker, ``koord get`` and ``koord replay`` stay right afterwards.

The topology compacts what is state (objects, changelogs) and keeps by time what is history (inboxes,
outputs, node metrics): replay reads only inboxes, so compaction never removes what it needs. What it
does remove is the older source records an inbox record points to (its causation); ``koord explain``
then names a source offset that compaction has replaced by a later value of the same key.

The test makes Kafka's log cleaner run within seconds (rolling segments every 100 ms, cleaning at any
dirty ratio), updates one node 30 times and binds and deletes pods, waits until the cleaner has removed
older values from ``koord.nodes`` and the scheduling changelog, then restarts the worker from the
compacted changelog and checks that it schedules against the true state.
"""

from __future__ import annotations

import asyncio
import collections
import json
import time

import pytest
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from click.testing import CliRunner

from streams.cli.commands import cli
from streams.kafka import admin_client
from streams.replay.reader import read_topic
from streams.topology import load_topology
from tests.brokers import require_kafka
from tests.integration.crash_support import CrashCluster

pytestmark = pytest.mark.integration

NODE = "compact-node"
NAMESPACE = "compaction"
UPDATES = 30
NODE_CPU_M = 4000
POD_CPU_M = 1000
COMPACT_NOW = {"segment.ms": "100", "min.cleanable.dirty.ratio": "0.001", "min.compaction.lag.ms": "0",
               "delete.retention.ms": "100"}
"""Topic configs that make the log cleaner compact within seconds (the topology's own values are Kafka's
defaults: segments roll after 7 days, so nothing is compacted in a test's lifetime)."""
COMPACTED = ("nodes", "pods", "changelog-scheduling", "changelog-node")
CLEANED_TIMEOUT_S = 60


def node(revision: int) -> str:
    return f"""apiVersion: v1
kind: Node
metadata: {{name: {NODE}, labels: {{revision: "{revision}"}}}}
spec: {{taints: [{{key: koordstream.io/e2e, value: compaction, effect: NoSchedule}}]}}
status:
  capacity: {{cpu: "{NODE_CPU_M}m", memory: 8Gi, pods: "110"}}
  allocatable: {{cpu: "{NODE_CPU_M}m", memory: 8Gi, pods: "110"}}
"""


def pod(name: str) -> str:
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {NAMESPACE}}}
spec:
  tolerations: [{{key: koordstream.io/e2e, operator: Exists}}]
  containers:
  - {{name: main, image: app, resources: {{requests: {{cpu: {POD_CPU_M}m, memory: 64Mi}}}}}}
"""


async def compact_now(bootstrap: str, topology, topic_ids) -> None:
    """Add :data:`COMPACT_NOW` to each topic's configs (AlterConfigs replaces a topic's whole set, so the
    topology's own, cleanup.policy among them, are sent along)."""
    async with admin_client(bootstrap) as admin:
        responses = await admin.alter_configs([
            ConfigResource(ConfigResourceType.TOPIC, topology.name(t), {**topology.spec(t).configs, **COMPACT_NOW})
            for t in topic_ids])
    errors = [resource for response in responses for resource in response.resources if resource[0] != 0]
    assert not errors, errors


def records_per_key(bootstrap: str, topic: str) -> collections.Counter:
    return collections.Counter(r.key for r in asyncio.run(read_topic(bootstrap, topic)))


def apply_here(cluster: CrashCluster, manifest: str) -> None:
    """``koord apply -f -`` run in this process: the same command without a Python start-up per update."""
    result = CliRunner().invoke(cli, ["apply", "-f", "-"], input=manifest, env=cluster.env)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def compacted(tmp_path_factory):
    require_kafka()
    cluster = CrashCluster.start(tmp_path_factory.mktemp("compaction-home"), "kafka")
    topology = load_topology()
    names = {topic_id: topology.name(topic_id) for topic_id in COMPACTED}
    try:
        cluster.start_worker("worker")
        asyncio.run(compact_now(cluster.bootstrap, topology, COMPACTED))
        for revision in range(UPDATES):
            apply_here(cluster, node(revision))
            time.sleep(0.15)
        applied = cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60",
                                input="---\n".join(pod(f"pod-{i}") for i in range(3)))
        assert applied.returncode == 0, applied.stderr
        deleted = cluster.koord("delete", "pod", "pod-0", "-n", NAMESPACE, "--wait")
        assert deleted.returncode == 0, deleted.stderr
        for revision in range(UPDATES, UPDATES + 3):
            assert cluster.koord("apply", "-f", "-", "--wait", input=node(revision)).returncode == 0
            time.sleep(0.3)
        deadline = time.monotonic() + CLEANED_TIMEOUT_S
        while True:
            counts = {topic_id: records_per_key(cluster.bootstrap, name) for topic_id, name in names.items()}
            if counts["nodes"][NODE.encode()] < UPDATES and counts["changelog-scheduling"].most_common(1)[0][1] < 10:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"the log cleaner did not compact within {CLEANED_TIMEOUT_S}s: "
                                   f"{ {t: c.most_common(2) for t, c in counts.items()} }")
            time.sleep(1)
        cluster.stop_worker("worker")
        cluster.start_worker("worker")
        after = cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60",
                              input="---\n".join(pod(f"after-{i}") for i in range(3)))
        assert after.returncode == 0, after.stderr
        yield {
            "counts": counts,
            "pods": {p["metadata"]["name"]: p for p in json.loads(
                cluster.koord("get", "pods", "-n", NAMESPACE, "-o", "json").stdout)["items"]},
            "node": json.loads(cluster.koord("get", "nodes", NODE, "-o", "json").stdout),
            "replay": {aggregate: cluster.koord("replay", aggregate, "-o", "json")
                       for aggregate in ("scheduling", "node")},
        }
    finally:
        cluster.stop()


def test_the_cleaner_removed_older_values(compacted):
    counts = compacted["counts"]
    assert counts["nodes"][NODE.encode()] < UPDATES
    assert counts["changelog-scheduling"].most_common(1)[0][1] < 10


def test_koord_get_shows_the_latest_values(compacted):
    assert compacted["node"]["metadata"]["labels"]["revision"] == str(UPDATES + 2)
    assert "pod-0" not in compacted["pods"]


def test_a_worker_restored_from_compacted_changelogs_schedules_against_the_true_state(compacted):
    """Two pods of 1 cpu were bound before the restart and one deleted: of three new pods on the
    4-cpu node exactly two fit (a state that forgot the binding would place three, one that forgot
    the deletion only one)."""
    pods = compacted["pods"]
    placed = sorted(name for name, p in pods.items() if p["spec"].get("nodeName") == NODE)
    assert placed == sorted(["pod-1", "pod-2", *[n for n in placed if n.startswith("after-")]])
    assert len([n for n in placed if n.startswith("after-")]) == 2
    [unplaced] = [name for name, p in pods.items() if not p["spec"].get("nodeName")]
    conditions = {c["type"]: c for c in pods[unplaced]["status"]["conditions"]}
    assert conditions["PodScheduled"]["reason"] == "Unschedulable"


@pytest.mark.parametrize("aggregate", ["scheduling", "node"])
def test_replay_reproduces_everything_after_compaction(compacted, aggregate):
    result = compacted["replay"][aggregate]
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["outputs"] and all(o["diverged"] == o["missing"] == o["extra"] == 0
                                     for o in report["outputs"].values()), report["outputs"]
