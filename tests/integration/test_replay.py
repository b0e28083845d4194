"""Replay and what-if through the broker: a recorded run of 1,000 pods on 50 nodes with NodeMetrics.

The shared session cluster also holds what other tests applied; the replays cover their records
too, since replay must reproduce everything the aggregates recorded.
"""

from __future__ import annotations

import asyncio
import json
import pickle
import time
from collections import Counter

import pytest
from aiokafka import AIOKafkaConsumer

from streams import kafka, routing
from streams.replay.reader import read_topic
from streams.schemas import codec
from streams.signing import KEY_FILE, Signer

pytestmark = pytest.mark.integration

PREFIX = "rp"
NAMESPACE = "replay"
NODES = 50
PODS = 1000
NODE_CPU = 32
WHAT_IF_THRESHOLD = 40
"""cpuReclaimThresholdPercent of the what-if; the recorded run uses 65."""
SLO_CONFIG = """apiVersion: v1
kind: ConfigMap
metadata: {{name: slo-controller-config, namespace: koordinator-system}}
data:
  colocation-config: |
    {{"enable": true, "cpuReclaimThresholdPercent": {threshold}, "memoryReclaimThresholdPercent": 65,
     "degradeTimeMinutes": 15, "updateTimeThresholdSeconds": 300, "resourceDiffThreshold": 0.1}}
"""


TOO_BIG = f"""apiVersion: v1
kind: Pod
metadata: {{name: {PREFIX}-too-big, namespace: {NAMESPACE}}}
spec:
  nodeSelector: {{koordstream.io/e2e: replay}}
  tolerations: [{{key: koordstream.io/e2e, operator: Equal, value: replay, effect: NoSchedule}}]
  containers:
  - {{name: main, image: app, resources: {{requests: {{cpu: "{NODE_CPU * 4}"}}}}}}
"""


def node_name(i: int) -> str:
    return f"{PREFIX}-node-{i:02d}"


def workload() -> tuple[str, str, str]:
    """(nodes, pods, node metrics) as multi-document YAML; pods request 250m, so batch stays positive at
    both thresholds; the workload's nodes are tainted and its pods select and tolerate them, so no pod of another
    test in the shared cluster mixes with them."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    nodes = "---\n".join(f"""apiVersion: v1
kind: Node
metadata: {{name: {node_name(i)}, labels: {{koordstream.io/e2e: replay}}}}
spec: {{taints: [{{key: koordstream.io/e2e, value: replay, effect: NoSchedule}}]}}
status:
  capacity: {{cpu: "{NODE_CPU}", memory: 128Gi, pods: "110"}}
  allocatable: {{cpu: "{NODE_CPU}", memory: 128Gi, pods: "110"}}
""" for i in range(NODES))
    pods = "---\n".join(f"""apiVersion: v1
kind: Pod
metadata: {{name: {PREFIX}-pod-{i:04d}, namespace: {NAMESPACE}}}
spec:
  nodeSelector: {{koordstream.io/e2e: replay}}
  tolerations: [{{key: koordstream.io/e2e, operator: Equal, value: replay, effect: NoSchedule}}]
  containers:
  - name: main
    image: app
    resources: {{requests: {{cpu: 250m, memory: 256Mi}}, limits: {{cpu: 250m, memory: 256Mi}}}}
""" for i in range(PODS))
    metrics = "---\n".join(f"""apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata: {{name: {node_name(i)}}}
status:
  updateTime: "{now}"
  nodeMetric:
    nodeUsage: {{resources: {{cpu: "{4 + i % 5}", memory: 20Gi}}}}
    systemUsage: {{resources: {{cpu: "1", memory: 4Gi}}}}
""" for i in range(NODES))
    return nodes, pods, metrics


@pytest.fixture(scope="module")
def recorded(cluster, tmp_path_factory):
    """The workload applied and decided; the slo-controller-config is deleted again afterwards."""
    nodes, pods, metrics = workload()
    started = time.monotonic()
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=SLO_CONFIG.format(threshold=65))
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=nodes)
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "90", input=pods, timeout=120)
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=metrics)
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=TOO_BIG)
    what_if = tmp_path_factory.mktemp("what-if") / "slo.yaml"
    what_if.write_text(SLO_CONFIG.format(threshold=WHAT_IF_THRESHOLD))
    yield {"what_if": what_if, "seconds": time.monotonic() - started}
    cluster.koord("delete", "configmap", "slo-controller-config", "-n", "koordinator-system", "--wait", check=False)


def keep_for_diagnosis(cluster, report: dict, directory) -> str:
    """Every koord topic but the changelogs (partition, offset, timestamp, key, value, headers of each record)
    and the replay report, pickled to ``directory``: a divergence seen once can then be replayed at leisure."""
    async def read_all() -> dict:
        consumer = AIOKafkaConsumer(**kafka.client_settings(cluster.bootstrap))
        await consumer.start()
        try:
            topics = sorted(t for t in await consumer.topics() if t.startswith("koord") and "changelog" not in t)
        finally:
            await consumer.stop()
        return {topic: [(r.partition, r.offset, r.timestamp, r.key, r.value, list(r.headers or ()))
                        for r in await read_topic(cluster.bootstrap, topic)] for topic in topics}

    path = directory / "scheduling-replay.pickle"
    path.write_bytes(pickle.dumps({"report": report, "topics": asyncio.run(read_all())}))
    return str(path)


def replay_json(cluster, *args: str) -> dict:
    result = cluster.koord("replay", *args, "-o", "json", check=False, timeout=120)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def test_every_pod_was_decided(cluster, recorded):
    pods = {p["metadata"]["name"]: p for p in cluster.koord_json("get", "pods", "-n", NAMESPACE)["items"]}
    assert len(pods) == PODS + 1
    assert "nodeName" not in pods.pop(f"{PREFIX}-too-big")["spec"]
    assert all(p["spec"].get("nodeName", "").startswith(PREFIX) for p in pods.values())


def test_replay_scheduling_reproduces_every_decision(cluster, recorded, tmp_path):
    report = replay_json(cluster, "scheduling")
    total = report["total"]
    if not report["ok"]:
        kept = keep_for_diagnosis(cluster, report, tmp_path)
        pytest.fail(f"the whole session's scheduling replay diverged (diverged {total['diverged']}, missing "
                    f"{total['missingIds'][:5]}, extra {total['extraIds'][:5]}, conflicting "
                    f"{total['conflictingIds'][:5]}); topics and report kept in {kept}")
    assert (total["diverged"], total["missing"], total["extra"], total["conflicting"]) == (0, 0, 0, 0), report
    assert report["outputs"]["SchedulingDecision"]["reproduced"] >= PODS
    assert report["ok"]


def test_replay_routing_reproduces_every_route(cluster, recorded):
    report = replay_json(cluster, "routing")
    assert report["ok"], report
    assert report["domains"]["default"]["reproduced"] >= PODS + NODES


def test_each_output_the_pipeline_reads_again_enters_its_inbox_once(cluster, recorded):
    """Every NodeUsage and NodeResource, and every decision that binds a pod, that the pipeline wrote (signed) is
    in its inbox exactly once, named by its own position: written there by its aggregate; the router reads none
    of their topics (``streams.outputs.WRITTEN_TO_INBOXES``, ``routing.COPIED_BY_AGGREGATES``)."""
    name = cluster.topology.name
    sign = Signer((cluster.home / KEY_FILE).read_bytes(), "the cluster's record key")

    def delivered(topic_id: str) -> set[tuple[str, int, int]]:
        found = set()
        for record in asyncio.run(read_topic(cluster.bootstrap, name(topic_id))):
            if sign.problem(topic_id, record.key, record.value, record.headers) is not None:
                continue
            if topic_id == "decisions":
                schema, decision = codec.decode(record.value)
                if (schema != "SchedulingDecision" or decision["result"] not in routing.BINDING_RESULTS
                        or not decision.get("nodeName")):
                    continue
            found.add((record.topic, record.partition, record.offset))
        return found

    def copies(inbox_id: str, sources: set) -> Counter:
        counted = Counter()
        for record in asyncio.run(read_topic(cluster.bootstrap, name(inbox_id))):
            try:
                schema, envelope = codec.decode(record.value)
            except codec.CodecError:
                continue
            source = (envelope["sourceTopic"], envelope["sourcePartition"], envelope["sourceOffset"]) \
                if schema == "InboxEvent" else None
            if source in sources:
                counted[source] += 1
        return counted

    for inbox_id, topic_ids in (("inbox-routing", ("nodeusages", "noderesources")), ("inbox-node", ("decisions",))):
        sources = set().union(*(delivered(topic_id) for topic_id in topic_ids))
        assert len(sources) >= NODES, f"outputs to {inbox_id}"
        counted = copies(inbox_id, sources)
        assert set(counted) == sources and set(counted.values()) == {1}, inbox_id


def test_replay_node_reproduces_every_node_resource(cluster, recorded):
    report = replay_json(cluster, "node")
    total = report["total"]
    assert (total["diverged"], total["missing"], total["extra"], total["conflicting"]) == (0, 0, 0, 0), report
    assert report["outputs"]["NodeResource"]["reproduced"] >= 2 * NODES
    assert report["ok"]


def test_replay_of_one_node_and_a_window(cluster, recorded):
    report = replay_json(cluster, "node", "--node", node_name(7), "--from", "1")
    assert report["ok"] and report["node"] == node_name(7)
    assert 0 < report["outputs"]["NodeResource"]["reproduced"] < 2 * NODES


def test_what_if_lower_reclaim_threshold_lowers_batch_cpu_on_every_node_with_usage(cluster, recorded):
    report = replay_json(cluster, "node", "--config", str(recorded["what_if"]))
    ours = {name: r for name, r in report["nodes"].items() if name.startswith(PREFIX)}
    assert sorted(ours) == [node_name(i) for i in range(NODES)]
    margin = (65 - WHAT_IF_THRESHOLD) * NODE_CPU * 1000 // 100
    assert {name: r["kubernetes.io/batch-cpu"]["last"] for name, r in ours.items()} == {
        name: -margin for name in ours}
    summary = report["summary"]["kubernetes.io/batch-cpu"]
    assert summary["lower"] >= NODES and summary["nodesWithUsage"] >= NODES, summary
    # Other tests' nodes in the shared cluster count in the average too; their capacities differ.
    lowered = [-r["kubernetes.io/batch-cpu"]["last"] for r in report["nodes"].values()
               if r.get("kubernetes.io/batch-cpu", {}).get("last", 0) < 0]
    assert summary["averageLowerBy"] == pytest.approx(sum(lowered) / len(lowered))
    assert any(line.startswith(f"kubernetes.io/batch-cpu: lower on {summary['lower']} of") for line in report["headlines"])


def test_explain_pod_shows_the_filter_results_scores_and_cause(cluster, recorded):
    [latest, *_] = cluster.koord_json("explain", "pod", f"{PREFIX}-too-big", "-n", NAMESPACE)["decisions"]
    assert latest["result"] == "Unschedulable" and latest["message"].startswith("0/")
    assert "Insufficient cpu" in latest["filterSummary"] and latest["rejectedNodes"] >= NODES
    assert latest["causation"]["inboxTopic"] == "koord.inbox.scheduling"
    [placed, *_] = cluster.koord_json("explain", "pod", f"{PREFIX}-pod-0007", "-n", NAMESPACE)["decisions"]
    assert placed["result"] == "Scheduled" and placed["nodeName"] == placed["topScores"][0]["node"]
    assert placed["causation"]["sourceTopic"] == "koord.pods"
    text = cluster.koord("explain", "pod", f"{PREFIX}-too-big", "-n", NAMESPACE).stdout
    assert "Insufficient cpu" in text and "caused by: inbox koord.inbox.scheduling" in text


def test_explain_node_shows_batch_with_koordinators_message_and_history(cluster, recorded):
    explained = cluster.koord_json("explain", "node", node_name(7))
    latest = explained["latest"]
    assert latest["message"].startswith("batchAllocatable[CPU(Milli-Core)]:")
    assert latest["extended"]["kubernetes.io/batch-cpu"] == explained["history"][0]["kubernetes.io/batch-cpu"] > 0
    assert latest["causation"]["sourceTopic"] == "koord.nodemetrics"
    assert len(explained["history"]) >= 2
    assert "batchAllocatable[CPU(Milli-Core)]" in cluster.koord("explain", "node", node_name(7)).stdout
