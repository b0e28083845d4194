"""Issue 21's failure classes against a running pipeline, on both brokers.

A pipeline of its own per broker kind (broker, worker, projection, as ``koord up`` runs them; not the
shared ``cluster``, which hostile records would poison for the other tests) is given a node and pods,
then one hostile record of every class of ``streams.bench.hostile`` plus a forged InboxEvent claiming an
offset far past the end of every koord.pods partition, then pods again. Every pod, from before and
after, must be decided; every record whose class calls for a dead letter must have one; no record the
router rejected may show in the read model; ``koord get`` must still work; and the worker and the
projection must still run. A node agent's actuator loop, on the same broker, gets undecodable
actuations, a memory limit of -5 and a replayed actuation.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from node_agent.actuator.actuator import Actuator, OffsetStore, run_actuator
from node_agent.actuator.sequences import SequenceStore
from node_agent.actuator.verify import Verifier
from node_agent.publisher import Publisher
from streams import kafka, supervision
from streams.bench import hostile
from streams.partitioning import partition_for
from streams.schemas import codec
from streams.topology import load_topology
from tests.integration.conftest import Cluster, _wait_worker_ready, start_broker
from tests.node_agent.actuator.conftest import CgroupTree, actuation

pytestmark = pytest.mark.integration

TOPOLOGY = load_topology()
NAMES = TOPOLOGY.names()
NODE = "hostile-node-0"
AGENT_NODE = "hostile-agent-node"
WAIT_S = 90
"""Seconds `koord apply --wait` waits for the pods."""


def _pod_names(prefix: str) -> list[str]:
    """Pod names whose keys land on every partition of koord.pods (the producers' partitioner)."""
    partitions = list(range(TOPOLOGY.spec("pods").partitions))
    names, covered, index = [], set(), 0
    while covered != set(partitions):
        name = f"{prefix}-{index}"
        partition = partition_for(partitions, f"{hostile.NAMESPACE}/{name}")
        if partition not in covered:
            covered.add(partition)
            names.append(name)
        index += 1
    return names


def _manifests(*bodies: dict) -> str:
    return "\n".join(json.dumps(body) for body in bodies)


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory, broker_kind):
    home = tmp_path_factory.mktemp(f"hostile-{broker_kind}")
    broker = start_broker(broker_kind, home, TOPOLOGY)
    env = {**broker.env(), "KOORD_HOME": str(home), "KOORD_DATABASE_URL": f"sqlite:///{home / 'readmodel.sqlite'}"}
    cluster = Cluster(broker.bootstrap, home, env, TOPOLOGY, kind=broker_kind)
    projection = None
    try:
        cluster.start_worker()
        projection = supervision.spawn(supervision.koord_command("project"), home / "projection.log", env)
        _wait_worker_ready(cluster)
        with pytest.MonkeyPatch.context() as patch:
            for name, value in broker.env().items():
                patch.setenv(name, value)
            yield cluster, projection
    finally:
        supervision.stop([p for p in (projection, cluster.worker) if p is not None])
        broker.stop()


@pytest.fixture(scope="module")
def fed(pipeline):
    """The pipeline after: a node and pods, every hostile class, pods again. Returns what was sent."""
    cluster, projection = pipeline
    before, after = _pod_names("before"), _pod_names("after")
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", str(WAIT_S), timeout=WAIT_S + 30, input=_manifests(
        hostile.node_manifest(NODE), *(hostile.pod_manifest(name) for name in before)))
    generator = hostile.Generator(21, TOPOLOGY)
    records = [generator.draw(kind) for kind in hostile.CLASSES]
    records += [generator.inbox_huge_source_offset(partition) for partition in range(TOPOLOGY.spec("pods").partitions)]
    records.append(hostile.Hostile("missing-key-source", "nodemetrics", None, generator.valid("nodemetrics")[1], True))
    sent = asyncio.run(hostile.produce_hostile(cluster.bootstrap, TOPOLOGY, records, one_by_one=True))
    applied = cluster.koord("apply", "-f", "-", "--wait", "--timeout", str(WAIT_S), check=False, timeout=WAIT_S + 30,
                            input=_manifests(*(hostile.pod_manifest(name) for name in after)))
    owed = [s for s in sent if s.hostile.dead_letter and s.error is None]
    letters = asyncio.run(hostile.read_topic(
        cluster.bootstrap, NAMES["deadletters"], lambda found: len(hostile.dead_lettered(owed, found)) >= len(owed),
        60))
    return {"cluster": cluster, "projection": projection, "before": before, "after": after, "sent": sent,
            "applied_after": applied, "dead_letters": hostile.dead_lettered(sent, letters)}


def _pods(cluster: Cluster) -> dict[str, dict]:
    return {pod["metadata"]["name"]: pod for pod in cluster.koord_json("get", "pods", "-n", hostile.NAMESPACE)["items"]}


def _decided(pod: dict) -> bool:
    return any(c["type"] == "PodScheduled" for c in pod.get("status", {}).get("conditions", []))


def _compacted(topic: str) -> bool:
    return next(spec for spec in TOPOLOGY.topics if spec.name == topic).configs.get("cleanup.policy") == "compact"


def test_every_hostile_record_was_written_unless_the_broker_refuses_it_for_its_shape(fed, broker_kind):
    """Kafka refuses a record without a key on a compacted topic (the producer is told; nothing is
    written); Tansu takes it. Any other refusal is a finding."""
    refused = [(s.hostile.kind, s.topic, s.error) for s in fed["sent"] if s.error]
    expected = [(s.hostile.kind, s.topic, s.error) for s in fed["sent"] if s.error and broker_kind == "kafka"
                and s.hostile.key is None and _compacted(s.topic)]
    assert refused == expected


def test_pods_applied_after_the_hostile_records_are_decided(fed):
    result = fed["applied_after"]
    assert result.returncode == 0, result.stderr
    pods = _pods(fed["cluster"])
    assert [name for name in fed["after"] if not _decided(pods.get(name, {}))] == []


def test_pods_applied_before_the_hostile_records_are_not_lost(fed):
    pods = _pods(fed["cluster"])
    assert [name for name in fed["before"] if pods.get(name, {}).get("spec", {}).get("nodeName") != NODE] == []


@pytest.mark.parametrize("kind", [kind for kind, make in hostile.CLASSES.items()
                                  if make(hostile.Generator(0, TOPOLOGY)).dead_letter])
def test_each_hostile_record_that_calls_for_a_dead_letter_has_one(fed, kind):
    owed = [s for s in fed["sent"] if s.hostile.kind == kind and s.hostile.dead_letter and s.error is None]
    missing = [(s.topic, s.partition, s.offset) for s in owed if (s.topic, s.partition, s.offset) not in
               fed["dead_letters"]]
    assert missing == []


def test_records_the_router_rejected_are_not_in_the_read_model(fed):
    pods_topic = NAMES["pods"]
    rejected = {s.hostile.key.decode().split("/", 1)[1] for s in fed["sent"]
                if s.topic == pods_topic and (s.topic, s.partition, s.offset) in fed["dead_letters"]
                and s.hostile.key and s.hostile.key.startswith(f"{hostile.NAMESPACE}/".encode())}
    assert rejected
    assert sorted(rejected & set(_pods(fed["cluster"]))) == []


def test_koord_get_works_whatever_the_records_hold(fed):
    cluster = fed["cluster"]
    for args in (("get", "pods"), ("get", "pods", "-n", hostile.NAMESPACE), ("get", "nodes"), ("get", "deadletters")):
        for output in ("json", "table"):
            result = cluster.koord(*args, "-o", output, check=False)
            assert result.returncode == 0, f"koord {' '.join(args)} -o {output}: {result.stderr[-2000:]}"
            if output == "json":
                json.loads(result.stdout)


def test_a_decision_for_a_node_that_does_not_exist_makes_no_node(fed):
    nodes = {node["metadata"]["name"] for node in fed["cluster"].koord_json("get", "nodes")["items"]}
    assert sorted(name for name in nodes if name.startswith(hostile.GHOST_NODE)) == []


def test_the_worker_and_the_projection_are_still_running(fed):
    cluster = fed["cluster"]
    assert cluster.worker.poll() is None, cluster.worker_log()[-3000:]
    assert fed["projection"].poll() is None, (cluster.home / "projection.log").read_text()[-3000:]


async def _run_agent(bootstrap: str, actuator: Actuator, state, seconds: float) -> None:
    stop = asyncio.Event()
    publisher = Publisher(bootstrap, NAMES)
    tasks = [asyncio.create_task(publisher.run(stop)),
             asyncio.create_task(run_actuator(actuator, publisher, bootstrap, NAMES, stop, OffsetStore(state)))]
    await asyncio.sleep(seconds)
    await publisher.flushed(10)
    stop.set()
    await asyncio.gather(*tasks)


async def _read(bootstrap: str, topic_id: str) -> list[dict]:
    return [record for *_, record in await hostile.read_topic(bootstrap, NAMES[topic_id], lambda found: False, 5)]


@pytest.fixture(scope="module")
def agent(pipeline, tmp_path_factory):
    """A node agent's actuator loop after two undecodable actuations, memory -5, and a replayed actuation."""
    cluster, _ = pipeline
    base = tmp_path_factory.mktemp("hostile-agent")
    tree, state = CgroupTree(base / "cgroup"), base / "state"
    memory_before = tree.read("memory", "kubepods/besteffort", "memory.limit_in_bytes")
    real = actuation({"cpu.shares": "512"}, node=AGENT_NODE, sequence=2, decision="hostile-real")
    records = [(AGENT_NODE, b"\x00undecodable-1"), (AGENT_NODE, b"\xc3\x01undecodable-2"),
               (AGENT_NODE, codec.encode("Actuation", actuation({"memory.limit_in_bytes": "-5"}, node=AGENT_NODE,
                                                                sequence=1, decision="hostile-memory"))),
               (AGENT_NODE, codec.encode("Actuation", real)), (AGENT_NODE, codec.encode("Actuation", real))]
    placed = asyncio.run(kafka.produce(cluster.bootstrap, [(NAMES["actuations"], key, value) for key, value in records]))
    actuator = Actuator(AGENT_NODE, {"cgroup": tree.backend()}, Verifier(AGENT_NODE, None, SequenceStore(state)))
    asyncio.run(_run_agent(cluster.bootstrap, actuator, state, 6))
    acks = [a for a in asyncio.run(_read(cluster.bootstrap, "actuation-acks")) if a["nodeName"] == AGENT_NODE]
    letters = [d for d in asyncio.run(_read(cluster.bootstrap, "deadletters")) if d["sourceTopic"] == NAMES["actuations"]]
    return {"tree": tree, "memory_before": memory_before, "placed": placed, "acks": acks, "letters": letters}


def test_each_undecodable_actuation_has_its_own_dead_letter(agent):
    offsets = {(m.partition, m.offset) for m in agent["placed"][:2]}
    assert offsets <= {(d["sourcePartition"], d["sourceOffset"]) for d in agent["letters"]}


def test_a_negative_memory_limit_is_refused_not_made_unlimited(agent):
    (ack,) = [a for a in agent["acks"] if a["actuationId"] == "hostile-memory"]
    assert ack["applied"] is False and ack["error"].startswith("rejected (bad-value)")
    assert agent["tree"].read("memory", "kubepods/besteffort", "memory.limit_in_bytes") == agent["memory_before"]


def test_a_replayed_actuation_does_not_replace_the_real_acknowledgement(agent):
    acks = [a for a in agent["acks"] if a["actuationId"] == "hostile-real"]
    assert [a["applied"] for a in acks][:1] == [True]
    assert agent["tree"].read("cpu", "kubepods/besteffort", "cpu.shares") == "512"
