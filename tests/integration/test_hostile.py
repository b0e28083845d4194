"""Issue 21's and issue 37's failure classes against a running pipeline, on both brokers.

A pipeline of its own per broker kind (broker, worker, projection, as ``koord up`` runs them; not the
shared ``cluster``, which hostile records would poison for the other tests) is given two nodes and pods,
then one hostile record of every class of ``streams.bench.hostile`` (Node records timed 50 minutes and a
day ahead among them), a forged InboxEvent claiming an offset far past the end of every koord.pods
partition, and issue 37's fuzz: ``FUZZ_RECORDS`` records drawn over every class, kind and topic. Then a
burst of ``AFTER`` pods, with forged InboxEvents claiming offsets just below the ends of that burst sent
right behind it, while the router still forwards it; then forged decisions moving some of those pods to
the other node, and the real decisions of two deleted pods sent again byte for byte; and the decision of
a 40-CPU pod bound to a colocation node, sent again after the pod's deletion.

Every valid pod, from before and after, must be decided exactly once (one Scheduled decision on the
decisions topic, not counting what the test wrote there); every record whose class calls for a dead letter
must have one; the decisions topic is read by no aggregate (the scheduling domains copy their bindings to the
node inbox themselves), so a forged decision there has no dead letter on the topic and is refused by the read
model, which records it in its own dead-letter table; no record the router rejected may show in the read
model, nor a forged decision, nor a pod deleted before its decision's replay, which must not lower its node's
batch CPU either; ``koord get`` must
still work; the router must clamp the times ahead; and the worker and the projection must still run. A node agent's actuator loop, on the same broker, gets
undecodable actuations, a memory limit of -5 and a replayed actuation. Last, oversized-but-valid objects (a
Pod of 400,000 ``"``, a 790 KB PodGroup) must be dead letters with the reason, and must not stop the worker.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import datetime
import json
import time

import pytest

from node_agent.actuator.actuator import Actuator, OffsetStore, run_actuator
from node_agent.actuator.sequences import SequenceStore
from node_agent.actuator.verify import Verifier
from node_agent.publisher import Publisher
from streams import kafka, routing, supervision
from streams.bench import hostile
from streams.partitioning import partition_for
from streams.schemas import codec
from streams.signing import HEADER
from streams.topology import load_topology
from tests.integration.conftest import Cluster, _wait_worker_ready, start_broker
from tests.integration.manifests import COLOCATION_CONFIG, pre_bound_node
from tests.node_agent.actuator.conftest import CgroupTree, actuation

pytestmark = pytest.mark.integration

TOPOLOGY = load_topology()
NAMES = TOPOLOGY.names()
NODES = ("hostile-node-0", "hostile-node-1")
AGENT_NODE = "hostile-agent-node"
WAIT_S = 90
"""Seconds `koord apply --wait` waits for the pods."""
FUZZ_RECORDS = 10_000
"""Records of issue 37's fuzz over every class, kind and topic (none of about a megabyte)."""
AFTER = 300
"""Pods of the burst sent after the hostile records."""
DECIDED_S = 180
"""Seconds the burst's pods (and those before it) have to be decided."""
HOUR_MS = 3_600_000
"""Kafka refuses a record timed more than this ahead (``message.timestamp.after.max.ms``); Tansu takes any."""
REPLAYED = 2
"""Pods deleted before their decisions are sent again."""
SETTLE_S = 10
"""Seconds given to the projection after the forged and replayed decisions."""
OVERSIZED_WAIT_S = 30
"""Seconds `koord apply --wait` waits for the pod behind the oversized-but-valid objects."""


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


def _decisions(bootstrap: str, done, timeout_s: float) -> list[tuple[int, int, dict]]:
    found = asyncio.run(hostile.read_topic(bootstrap, NAMES["decisions"], done, timeout_s))
    return [(partition, offset, record) for partition, offset, schema, record in found
            if schema == "SchedulingDecision"]


def _scheduled(decisions: list[tuple[int, int, dict]], written: set[tuple[int, int]]) -> collections.Counter:
    """Scheduled decisions per pod of ``hostile.NAMESPACE``, not counting those at ``written`` positions."""
    return collections.Counter(record["pod"]["name"] for partition, offset, record in decisions
                               if (partition, offset) not in written and record["result"] == "Scheduled"
                               and record["pod"]["namespace"] == hostile.NAMESPACE)


def _wait_gone(cluster: Cluster, names: set[str], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and names & set(_pods(cluster)):
        time.sleep(1)


@pytest.fixture(scope="module")
def fed(pipeline):
    """The pipeline after: nodes and pods, every hostile class, the fuzz, a burst with forged offsets behind
    it, forged decisions, replayed decisions. Returns what was sent and what the decisions topic holds."""
    cluster, projection = pipeline
    before, after = _pod_names("before"), [f"after-{i}" for i in range(AFTER)]
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", str(WAIT_S), timeout=WAIT_S + 30, input=_manifests(
        *(hostile.node_manifest(node) for node in NODES), *(hostile.pod_manifest(name) for name in before)))
    generator = hostile.Generator(21, TOPOLOGY)
    records = [generator.draw(kind) for kind in hostile.CLASSES
               if kind not in ("oversized-valid", "inbox-forged-offset-below-end")]
    records += [dataclasses.replace(generator.future_timestamp(), timestamp_ms=generator.now_ms + ahead_ms)
                for ahead_ms in hostile.FUTURE_AHEAD_MS]
    records += [generator.inbox_huge_source_offset(partition) for partition in range(TOPOLOGY.spec("pods").partitions)]
    records.append(hostile.Hostile("missing-key-source", "nodemetrics", None, generator.valid("nodemetrics")[1], True))
    sent = asyncio.run(hostile.produce_hostile(cluster.bootstrap, TOPOLOGY, records, one_by_one=True))
    fuzz = generator.records(FUZZ_RECORDS, oversized=0)
    fuzz_sent = asyncio.run(hostile.produce_hostile(
        cluster.bootstrap, TOPOLOGY, [h for h in fuzz if h.kind != "inbox-forged-offset-below-end"]))

    placed = asyncio.run(hostile.produce_valid(cluster.bootstrap, TOPOLOGY, [
        hostile.encoded(hostile.pod_manifest(name)) for name in after]))
    ends: dict[int, int] = {}
    for where in placed:
        ends[where.partition] = max(ends.get(where.partition, -1), where.offset)
    aimed = [hostile.aimed(generator.inbox_forged_offset_below_end(), partition, offset)
             for partition, offset in sorted(ends.items())]
    aimed += [hostile.aimed(h, *sorted(ends.items())[i % len(ends)])
              for i, h in enumerate(h for h in fuzz if h.kind == "inbox-forged-offset-below-end")]
    sent += asyncio.run(hostile.produce_hostile(cluster.bootstrap, TOPOLOGY, aimed))
    valid = set(before) | set(after)
    decisions = _decisions(cluster.bootstrap, lambda found: valid <= {
        record["pod"]["name"] for *_, schema, record in found if schema == "SchedulingDecision"}, DECIDED_S)

    real = {record["pod"]["name"]: (partition, offset, record) for partition, offset, record in decisions
            if record["pod"]["name"] in valid and record["result"] == "Scheduled"}
    replayed = sorted(name for name in before if name in real)[:REPLAYED]
    forged_pods = sorted(name for name in after if name in real)[:10]
    forged = [generator.forged_decision(name, next(node for node in NODES if node != real[name][2]["nodeName"]))
              for name in forged_pods]
    sent += asyncio.run(hostile.produce_hostile(cluster.bootstrap, TOPOLOGY, forged))
    asyncio.run(kafka.produce(cluster.bootstrap, [(NAMES["pods"], f"{hostile.NAMESPACE}/{name}", None)
                                                  for name in replayed], headers=routing.ACK_HEADERS))
    _wait_gone(cluster, set(replayed))
    raw = asyncio.run(hostile.fetch_raw(cluster.bootstrap, NAMES["decisions"], {real[name][:2] for name in replayed}))
    replays = [generator.replayed_decision(*raw[position]) for position in sorted(raw)]
    sent += asyncio.run(hostile.produce_hostile(cluster.bootstrap, TOPOLOGY, replays))

    owed = [s for s in sent if s.hostile.dead_letter and s.error is None]
    letters = asyncio.run(hostile.read_topic(
        cluster.bootstrap, NAMES["deadletters"], lambda found: len(hostile.dead_lettered(owed, found)) >= len(owed),
        60))
    time.sleep(SETTLE_S)
    written = {(s.partition, s.offset) for s in sent + fuzz_sent
               if s.topic == NAMES["decisions"] and s.offset is not None}
    return {"cluster": cluster, "projection": projection, "before": before, "after": after, "sent": sent,
            "fuzz_sent": fuzz_sent, "dead_letters": hostile.dead_lettered(sent + fuzz_sent, letters),
            "scheduled": _scheduled(_decisions(cluster.bootstrap, lambda found: False, 5), written),
            "replayed": replayed, "replays": replays, "forged": forged}


def _pods(cluster: Cluster) -> dict[str, dict]:
    """The pods ``koord get`` shows in ``hostile.NAMESPACE``, by name (a manifest without one is shown as it is, and
    kept under None)."""
    return {(pod.get("metadata") or {}).get("name"): pod
            for pod in cluster.koord_json("get", "pods", "-n", hostile.NAMESPACE)["items"]}


def _decided(pod: dict) -> bool:
    return any(c["type"] == "PodScheduled" for c in pod.get("status", {}).get("conditions", []))


def _compacted(topic: str) -> bool:
    return next(spec for spec in TOPOLOGY.topics if spec.name == topic).configs.get("cleanup.policy") == "compact"


def test_every_hostile_record_was_written_unless_the_broker_refuses_it_for_its_shape(fed, broker_kind):
    """Kafka refuses a record without a key on a compacted topic, and one timed more than an hour ahead (the
    producer is told; nothing is written); Tansu takes both. Any other refusal is a finding."""
    everything = fed["sent"] + fed["fuzz_sent"]
    refused = [(s.hostile.kind, s.topic, s.error) for s in everything if s.error]
    expected = [(s.hostile.kind, s.topic, s.error) for s in everything if s.error and broker_kind == "kafka"
                and ((s.hostile.key is None and _compacted(s.topic))
                     or (s.hostile.timestamp_ms or 0) > time.time() * 1000 + HOUR_MS)]
    assert refused == expected


def test_pods_sent_after_the_hostile_records_are_decided(fed):
    pods = _pods(fed["cluster"])
    assert [name for name in fed["after"] if not _decided(pods.get(name, {}))] == []


def test_pods_applied_before_the_hostile_records_are_not_lost(fed):
    pods = _pods(fed["cluster"])
    kept = [name for name in fed["before"] if name not in fed["replayed"]]
    assert [name for name in kept if pods.get(name, {}).get("spec", {}).get("nodeName") not in NODES] == []


def test_every_valid_pod_is_decided_exactly_once_after_the_fuzz(fed):
    """Issue 37's measure: after every class, kind and topic, and forged offsets below the burst's ends,
    each valid pod has one Scheduled decision: none skipped, none decided twice."""
    scheduled = fed["scheduled"]
    assert {name: scheduled[name] for name in fed["before"] + fed["after"] if scheduled[name] != 1} == {}


@pytest.mark.parametrize("kind", [kind for kind, make in hostile.CLASSES.items()
                                  if kind != "oversized-valid" and make(hostile.Generator(0, TOPOLOGY)).dead_letter])
def test_each_hostile_record_that_calls_for_a_dead_letter_has_one(fed, kind):
    owed = [s for s in fed["sent"] if s.hostile.kind == kind and s.hostile.dead_letter and s.error is None]
    missing = [(s.topic, s.partition, s.offset) for s in owed if (s.topic, s.partition, s.offset) not in
               fed["dead_letters"]]
    assert missing == []


@pytest.mark.parametrize("kind", ["inbox-forged-offset-below-end", "inbox-huge-source-offset"])
def test_each_forged_record_of_the_fuzz_is_a_dead_letter(fed, kind):
    owed = [s for s in fed["sent"] + fed["fuzz_sent"] if s.hostile.kind == kind and s.error is None]
    missing = [(s.topic, s.partition, s.offset) for s in owed if (s.topic, s.partition, s.offset) not in
               fed["dead_letters"]]
    assert len(owed) > 100
    assert missing == []


def test_each_forged_decision_of_the_fuzz_is_read_by_no_aggregate_and_refused_by_the_read_model(fed):
    """No aggregate reads the decisions topic, so nothing writes a dead letter of a forged decision to the
    topic; the read model takes only signed decisions and keeps each refused one in its dead-letter table."""
    owed = [s for s in fed["sent"] + fed["fuzz_sent"] if s.hostile.kind == "forged-decision" and s.error is None]
    assert len(owed) > 100
    positions = {(s.topic, s.partition, s.offset) for s in owed}
    assert sorted(positions & set(fed["dead_letters"])) == []
    refused = {(letter["sourceTopic"], letter["sourcePartition"], letter["sourceOffset"]): letter
               for letter in fed["cluster"].koord_json("get", "deadletters")["items"]
               if letter["stage"] == "projection"}
    assert sorted(positions - set(refused)) == []
    assert {refused[position]["reason"] for position in positions} == {
        f"the record has no {HEADER} header: only the pipeline writes decisions"}


def test_records_the_router_rejected_are_not_in_the_read_model(fed):
    pods_topic = NAMES["pods"]
    rejected = {s.hostile.key.decode().split("/", 1)[1] for s in fed["sent"]
                if s.topic == pods_topic and (s.topic, s.partition, s.offset) in fed["dead_letters"]
                and s.hostile.key and s.hostile.key.startswith(f"{hostile.NAMESPACE}/".encode())}
    assert rejected
    assert sorted(rejected & set(_pods(fed["cluster"]))) == []


def test_a_forged_decision_is_not_a_pods_decision_in_the_read_model(fed):
    pods = _pods(fed["cluster"])
    taken = []
    for forged in fed["forged"]:
        _, decision = codec.decode(forged.value)
        if pods.get(decision["pod"]["name"], {}).get("spec", {}).get("nodeName") == decision["nodeName"]:
            taken.append(decision["pod"]["name"])
    assert fed["forged"]
    assert taken == []


def test_a_replayed_decision_does_not_bring_a_deleted_pod_back_in_koord_get(fed):
    assert len(fed["replays"]) == REPLAYED
    assert sorted(set(fed["replayed"]) & set(_pods(fed["cluster"]))) == []


def test_the_router_clamps_the_node_records_timed_ahead(fed):
    ahead = [s for s in fed["sent"] + fed["fuzz_sent"] if s.hostile.kind == "future-timestamp" and s.error is None]
    assert ahead
    assert fed["cluster"].worker_metric("koord_future_times_total", stage="router", action="clamped") >= len(ahead)


def test_koord_get_works_whatever_the_records_hold(fed):
    cluster = fed["cluster"]
    for args in (("get", "pods"), ("get", "pods", "-n", hostile.NAMESPACE), ("get", "nodes"), ("get", "deadletters")):
        for output in ("json", "table"):
            result = cluster.koord(*args, "-o", output, check=False)
            assert result.returncode == 0, f"koord {' '.join(args)} -o {output}: {result.stderr[-2000:]}"
            if output == "json":
                json.loads(result.stdout)


def test_a_decision_for_a_node_that_does_not_exist_makes_no_node(fed):
    nodes = {(node.get("metadata") or {}).get("name") or ""
             for node in fed["cluster"].koord_json("get", "nodes")["items"]}
    assert sorted(name for name in nodes if name.startswith(hostile.GHOST_NODE)) == []


def test_every_object_koord_get_shows_is_named_as_its_record_is_keyed(fed):
    cluster = fed["cluster"]
    listed = {"pod": ("get", "pods", "-n", hostile.NAMESPACE), "node": ("get", "nodes")}
    unnamed = [(kind, item) for kind, args in listed.items()
               for item in cluster.koord_json(*args)["items"] if not (item.get("metadata") or {}).get("name")]
    assert unnamed == []


def test_the_worker_and_the_projection_are_still_running(fed):
    cluster = fed["cluster"]
    assert cluster.worker.poll() is None, cluster.worker_log()[-3000:]
    assert fed["projection"].poll() is None, (cluster.home / "projection.log").read_text()[-3000:]


BATCH_NODE = "hostile-batch-node"
BATCH_POD = "hostile-batch-pod"


def _node_metric() -> str:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return json.dumps({"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
                       "metadata": {"name": BATCH_NODE}, "status": {
                           "updateTime": now, "nodeMetric": {"nodeUsage": {"resources": {"cpu": "10", "memory": "10G"}},
                                                             "systemUsage": {"resources": {"cpu": "2", "memory": "2G"}}},
                           "podsMetric": []}})


def _batch_cpu(cluster: Cluster) -> str | None:
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "30", check=False, timeout=60, input=_node_metric())
    time.sleep(2)
    return (cluster.koord_json("get", "nodes", BATCH_NODE).get("status") or {}).get("allocatable", {}).get(
        "kubernetes.io/batch-cpu")


@pytest.fixture(scope="module")
def replayed_batch(pipeline, fed):
    """Batch CPU of a colocation node with a pod of 40 CPUs bound to it, after the pod's deletion, and after
    its decision is sent again byte for byte (each read after a fresh NodeMetric)."""
    cluster, _ = pipeline
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", str(WAIT_S), timeout=WAIT_S + 30,
                  input="---\n".join([COLOCATION_CONFIG, pre_bound_node(BATCH_NODE, cpu="100", memory="120G")]))
    pod = hostile.pod_manifest(BATCH_POD, cpu="40", memory="1Gi")
    pod["spec"]["nodeName"] = BATCH_NODE
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", str(WAIT_S), timeout=WAIT_S + 30, input=json.dumps(pod))
    with_pod = _batch_cpu(cluster)
    decisions = _decisions(cluster.bootstrap, lambda found: False, 5)
    position = max((partition, offset) for partition, offset, record in decisions
                   if record["pod"]["name"] == BATCH_POD and record["result"] in ("Scheduled", "Bound"))
    cluster.koord("delete", "pod", BATCH_POD, "-n", hostile.NAMESPACE, "--wait", "--timeout", "60", timeout=90)
    deleted = _batch_cpu(cluster)
    raw = asyncio.run(hostile.fetch_raw(cluster.bootstrap, NAMES["decisions"], {position}))
    generator = hostile.Generator(7, TOPOLOGY)
    asyncio.run(hostile.produce_hostile(cluster.bootstrap, TOPOLOGY, [generator.replayed_decision(*raw[position])]))
    time.sleep(3)
    return {"with_pod": with_pod, "deleted": deleted, "replayed": _batch_cpu(cluster),
            "shown": BATCH_POD in _pods(cluster)}


def test_deleting_a_bound_pod_raises_the_nodes_batch_cpu(replayed_batch):
    assert replayed_batch["with_pod"] is not None and replayed_batch["deleted"] is not None
    assert int(replayed_batch["deleted"]) > int(replayed_batch["with_pod"])


def test_a_replayed_decision_does_not_revive_a_deleted_pod_in_batch_allocatable(replayed_batch):
    assert replayed_batch["replayed"] == replayed_batch["deleted"]


def test_a_replayed_decision_does_not_revive_a_deleted_bound_pod_in_koord_get(replayed_batch):
    assert replayed_batch["shown"] is False


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


@pytest.fixture(scope="module")
def oversized(pipeline, fed, agent):
    """After everything else (each object stopped the worker before issue 37's failure 3 was fixed): a Pod of
    ``hostile.QUOTES`` ``"`` and a PodGroup of ``hostile.PODGROUP_BYTES``, then a pod applied behind them."""
    cluster, projection = pipeline
    generator = hostile.Generator(37, TOPOLOGY)
    drawn: dict[str, hostile.Hostile] = {}
    while len(drawn) < 2:
        item = generator.draw("oversized-valid")
        drawn.setdefault(item.topic_id, item)
    sent = asyncio.run(hostile.produce_hostile(cluster.bootstrap, TOPOLOGY, list(drawn.values()), one_by_one=True))
    applied = cluster.koord("apply", "-f", "-", "--wait", "--timeout", str(OVERSIZED_WAIT_S), check=False,
                            timeout=OVERSIZED_WAIT_S + 30, input=_manifests(hostile.pod_manifest("behind-oversized")))
    letters = asyncio.run(hostile.read_topic(cluster.bootstrap, NAMES["deadletters"],
                                             lambda found: len(hostile.dead_lettered(sent, found)) >= len(sent), 20))
    return {"cluster": cluster, "projection": projection, "sent": sent, "applied": applied,
            "dead_letters": hostile.dead_lettered(sent, letters)}


def test_oversized_but_valid_objects_were_written(oversized):
    assert [(s.topic, s.error) for s in oversized["sent"] if s.error] == []


def test_oversized_but_valid_objects_do_not_stop_the_worker_nor_the_pods_behind_them(oversized):
    cluster = oversized["cluster"]
    assert oversized["applied"].returncode == 0, oversized["applied"].stderr[-2000:]
    assert cluster.worker.poll() is None, cluster.worker_log()[-3000:]
    assert oversized["projection"].poll() is None


def test_oversized_but_valid_objects_whose_stored_form_fits_the_budget_are_taken(oversized):
    """Both are valid and, stored as the scheduler keeps them (``podinfo.KEPT_MANIFEST``, decoded envelopes),
    within the state budget: taken, not dead-lettered, and the pod is listed and decided like any other."""
    letters = oversized["dead_letters"]
    assert [letters.get((s.topic, s.partition, s.offset), {}).get("reason") for s in oversized["sent"]] == [None, None]
    (pod,) = [s.hostile for s in oversized["sent"] if s.hostile.topic_id == "pods"]
    namespace, name = pod.key.decode().split("/")
    listed = {item["metadata"]["name"]: item for item in
              oversized["cluster"].koord_json("get", "pods", "-n", namespace)["items"]}
    assert any(c["type"] == "PodScheduled" for c in listed[name].get("status", {}).get("conditions", []))
