"""The walking skeleton end to end, on the real embedded broker."""

from __future__ import annotations

import asyncio
import io
import re
import json
import time
from pathlib import Path

import fastavro
import pytest
from fastavro.schema import fingerprint, load_schema_ordered, to_parsing_canonical_form

from streams.kafka import produce
from tests.integration.conftest import restart_worker

pytestmark = pytest.mark.integration

SCHEMAS = Path(__file__).resolve().parents[2] / "streams" / "schemas"


def node_yaml(name: str, cpu: str = "4", memory: str = "8Gi", pods: str = "110") -> str:
    return f"""apiVersion: v1
kind: Node
metadata: {{name: {name}}}
status:
  capacity: {{cpu: "{cpu}", memory: {memory}, pods: "{pods}"}}
  allocatable: {{cpu: "{cpu}", memory: {memory}, pods: "{pods}"}}
"""


def pod_yaml(name: str, cpu: str, namespace: str = "default") -> str:
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  containers:
  - name: main
    image: nginx
    resources: {{requests: {{cpu: "{cpu}", memory: 256Mi}}}}
"""


def scheduled(pod: dict) -> dict:
    return next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")


def test_apply_wait_then_get_shows_placed_and_unschedulable(cluster):
    manifests = "---\n".join([node_yaml("flow-node", cpu="4"), pod_yaml("fits", "3", "flow"),
                              pod_yaml("too-big", "600", "flow")])
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=manifests)

    pods = {p["metadata"]["name"]: p for p in cluster.koord_json("get", "pods", "-n", "flow")["items"]}
    assert pods["fits"]["spec"]["nodeName"] == "flow-node"
    assert scheduled(pods["fits"])["status"] == "True"
    assert "nodeName" not in pods["too-big"]["spec"]
    condition = scheduled(pods["too-big"])
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
    # Other tests' nodes in the shared cluster are tainted for their scenarios: they count as untolerated
    # taints (preemption cannot help there); every untainted node is short of cpu.
    assert re.fullmatch(r"0/(\d+) nodes are available: (.+, )?\d+ Insufficient cpu(, .+)?\. preemption: 0/\1 nodes "
                        r"are available: (\d+ No preemption victims found for incoming pod)(, .+)?\.",
                        condition["message"]), condition["message"]


def test_invalid_file_applies_nothing_and_names_the_field(cluster):
    manifests = "---\n".join([pod_yaml("valid-one", "1", "invalid"), pod_yaml("negative", "-1", "invalid")])
    result = cluster.koord("apply", "-f", "-", input=manifests, check=False)
    assert result.returncode != 0
    assert "document 1 (Pod invalid/negative)" in result.stderr
    assert "spec.containers[0].resources.requests.cpu" in result.stderr
    assert cluster.koord_json("get", "pods", "-n", "invalid")["items"] == []


def test_garbage_goes_to_dead_letters_and_the_stream_keeps_going(cluster):
    pods_topic = cluster.topology.name("pods")
    counted = cluster.worker_metric("koord_dead_letters_total", stage="router", topic=pods_topic)
    placed = asyncio.run(produce(cluster.bootstrap, [(pods_topic, "default/garbage", b"\x00not avro at all")]))[0]
    cluster.koord("apply", "-f", "-", "--wait", input="---\n".join([
        node_yaml("dl-node"), pod_yaml("after-garbage", "100m", "dl")]))

    pod = cluster.koord_json("get", "pods", "after-garbage", "-n", "dl")
    assert scheduled(pod)["status"] == "True"
    letters = _eventually(lambda: [d for d in cluster.koord_json("get", "deadletters")["items"]
                                   if d["sourceTopic"] == pods_topic and d["sourceOffset"] == placed.offset
                                   and d["sourcePartition"] == placed.partition and d["stage"] == "router"])
    assert "undecodable record" in letters[0]["reason"]
    assert cluster.worker_metric("koord_dead_letters_total", stage="router", topic=pods_topic) >= counted + 1


def test_a_source_record_over_the_size_limit_is_dead_lettered_with_its_digest_and_the_stream_keeps_going(cluster):
    """A record the broker takes but that would be too big forwarded in its envelope (``streams.limits``),
    written by a producer other than koordstream's: the router dead-letters it with its size and digest
    instead of its payload, and the next pod is decided."""
    import hashlib

    from aiokafka import AIOKafkaProducer

    from streams import limits

    pods_topic = cluster.topology.name("pods")
    value = b"x" * (limits.RECORD_MAX_BYTES + 100)

    async def send_raw():
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, max_request_size=limits.PRODUCER_MAX_BYTES)
        await producer.start()
        try:
            return await (await producer.send(pods_topic, key=b"default/huge", value=value))
        finally:
            await producer.stop()

    placed = asyncio.run(send_raw())
    cluster.koord("apply", "-f", "-", "--wait", input="---\n".join([node_yaml("big-node"),
                                                                      pod_yaml("after-huge", "100m", "big")]))
    assert scheduled(cluster.koord_json("get", "pods", "after-huge", "-n", "big"))["status"] == "True"
    letters = _eventually(lambda: [d for d in cluster.koord_json("get", "deadletters")["items"]
                                   if (d["sourceTopic"], d["sourcePartition"], d["sourceOffset"])
                                   == (pods_topic, placed.partition, placed.offset) and d["stage"] == "router"])
    assert "over the 1,044,480-byte limit of a record" in letters[0]["reason"]
    assert letters[0]["payloadSize"] == len(value)
    assert letters[0]["payloadSha256"] == hashlib.sha256(value).hexdigest()


def test_decision_decodes_with_an_independent_client_and_plain_fastavro(cluster):
    from confluent_kafka import Consumer, TopicPartition

    cluster.koord("apply", "-f", "-", "--wait", input="---\n".join([node_yaml("ind-node"), pod_yaml("ind", "1", "ind")]))
    schema = load_schema_ordered([SCHEMAS / f"{name}.avsc" for name in
                                  ("PodRef", "PluginResult", "NodeScore", "Causation", "VolumeBinding", "SchedulingDecision")])
    expected_fingerprint = bytes.fromhex(fingerprint(to_parsing_canonical_form(schema), "CRC-64-AVRO"))
    topic = cluster.topology.spec("decisions")
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "independent-reader",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic.name, p, 0) for p in range(topic.partitions)])
    found = None
    deadline = time.monotonic() + 30
    try:
        while found is None and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None or message.error():
                continue
            value = message.value()
            assert value[:2] == b"\xc3\x01"
            assert value[2:10] == expected_fingerprint
            record = fastavro.schemaless_reader(io.BytesIO(value[10:]), schema)
            if record["pod"] == {"namespace": "ind", "name": "ind", "uid": None}:
                found = record
    finally:
        consumer.close()
    assert found is not None, "no decision for ind/ind on the decisions topic"
    assert found["result"] == "Scheduled" and found["nodeName"]
    assert found["causation"]["sourceTopic"] == cluster.topology.name("pods")


def test_worker_restart_mid_stream_recovers_exact_tables(cluster):
    """A node with room for exactly 10 pods of 10 cores (no other node fits
    one): 6 before the restart, 8 after. Stale tables would place more. Which 4 of the 8 fit is the
    scheduling inbox's order, which the domain router's partitions interleave."""
    cluster.koord("apply", "-f", "-", "--wait", input=node_yaml("restart-node", cpu="100", pods="110") + "---\n"
                  + "---\n".join(pod_yaml(f"before-{i}", "10", "restart") for i in range(6)))
    restart_worker(cluster)
    assert "Highwater for active changelog partitions" in cluster.worker_log()
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "90",
                  input="---\n".join(pod_yaml(f"after-{i}", "10", "restart") for i in range(8)))

    pods = cluster.koord_json("get", "pods", "-n", "restart")["items"]
    placed = sorted(p["metadata"]["name"] for p in pods if p["spec"].get("nodeName"))
    assert [name for name in placed if name.startswith("before-")] == [f"before-{i}" for i in range(6)]
    assert len([name for name in placed if name.startswith("after-")]) == 4
    unschedulable = [p for p in pods if not p["spec"].get("nodeName")]
    assert len(unschedulable) == 4
    assert all(scheduled(p)["reason"] == "Unschedulable" for p in unschedulable)


def _eventually(probe, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("condition not met in time")


@pytest.mark.parametrize("kind, record, reason", [
    pytest.param("Pod", {"metadata": {"name": "neg", "namespace": "bad"}, "manifest": "{}", "requests": {"cpu": -500}},
                 "requests.cpu: quantity must not be negative: -500", id="negative-request"),
    pytest.param("Node", {"metadata": {"name": "bad/neg"}, "manifest": "{}"},
                 "a Node record does not belong on the pods topic", id="wrong-kind-for-topic"),
])
def test_invalid_object_produced_directly_is_dead_lettered(cluster, kind, record, reason):
    from streams.schemas import codec

    topic = cluster.topology.name("pods")
    placed = asyncio.run(produce(cluster.bootstrap, [(topic, "bad/neg", codec.encode(kind, record))]))[0]
    letters = _eventually(lambda: [d for d in cluster.koord_json("get", "deadletters")["items"]
                                   if (d["sourcePartition"], d["sourceOffset"]) == (placed.partition, placed.offset)
                                   and d["sourceTopic"] == topic])
    assert reason in letters[0]["reason"]


def test_delete_releases_the_pod(cluster):
    cluster.koord("apply", "-f", "-", "--wait", input="---\n".join([node_yaml("del-node"), pod_yaml("gone", "1", "del")]))
    cluster.koord("delete", "pod", "gone", "-n", "del", "--wait")
    assert cluster.koord_json("get", "pods", "-n", "del")["items"] == []
    decisions = cluster.koord_json("get", "decisions", "gone", "-n", "del")["items"]
    assert [d["result"] for d in decisions] == ["Scheduled", "Released"]


def test_topics_apply_is_idempotent_and_lists_everything(cluster):
    result = cluster.koord("topics", "apply", "--dry-run")
    assert f"{len(cluster.topology.topics)} in sync, 0 would create, 0 drifted" in result.stdout
    listed = json.loads(cluster.koord("topics", "list", "-o", "json").stdout)
    assert {t["name"] for t in listed if t["exists"]} == {t.name for t in cluster.topology.topics}


def test_top_shows_requests_against_allocatable(cluster):
    cluster.koord("apply", "-f", "-", "--wait", input="---\n".join([node_yaml("top-node", cpu="8"),
                                                                      pod_yaml("top-pod", "2", "top")]))
    frame = cluster.koord("top", "nodes", "--once").stdout
    line = next(row for row in frame.splitlines() if row.startswith("top-node "))
    assert "-/2/8" in line
    pods = cluster.koord("top", "pods", "-n", "top", "--once").stdout
    assert re.search(r"top\s+top-pod\s+top-node\s+-/2", pods)


def test_decision_latency_histogram_grows_when_pods_are_applied(cluster):
    before = cluster.worker_metric("koord_decision_latency_seconds_count", aggregate="scheduling")
    cluster.koord("apply", "-f", "-", "--wait", input="---\n".join(pod_yaml(f"lat-{i}", "10m", "lat") for i in range(3)))
    after = cluster.worker_metric("koord_decision_latency_seconds_count", aggregate="scheduling")
    assert after >= before + 3
    assert cluster.worker_metric("koordstream_messages_received_per_topic_total", topic="koord.inbox.scheduling") > 0
