"""``koord bench hostile``: hostile records on every topic, then valid pods; does the pipeline still decide?

``Generator`` draws, from a plain ``random.Random(seed)``, records of every failure class in
``CLASSES`` across all source topics plus the inboxes, the output topics and the actuations topic:
garbage bytes, keys that are not UTF-8 or missing, truncated and bit-flipped Avro of valid records,
valid Avro of a schema foreign to the topic, forged InboxEvents (unknown source topic, a source offset
far past the end, an invalid payload, no key), pods with negative requests, decisions for nodes that
do not exist, a KubeSchedulerConfiguration whose plugin args are invalid, a Pod whose manifest is not
JSON, and records just above the size limit of a record. Each ``Hostile`` says whether its class
calls for a dead letter (``dead_letter``: True, False, or None when either is acceptable).

``run`` starts the whole pipeline as ``koord up --nodes 0 --detach`` does (a fresh broker of the
kind asked for, the worker, the projection, in a temporary ``KOORD_HOME``; KOORD_BROKER is ignored,
so hostile records never reach a broker others use), applies a few nodes, produces the hostile
records, then ``pods`` valid pods built as ``koord apply`` builds them, and waits until each pod has a
decision on the decisions topic (or the timeout). It reports what it saw: nothing is assumed.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import json
import logging
import os
import random
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError

from streams import kafka, routing, supervision
from streams.koordinator.classes import QOS_BE
from streams.objects import Document, to_record
from streams.schemas import codec
from streams.topology import Topology, load_topology

try:
    from streams.limits import PRODUCER_MAX_BYTES, RECORD_MAX_BYTES
except ImportError:
    PRODUCER_MAX_BYTES = RECORD_MAX_BYTES = 1_048_576
"""The largest record the pipeline accepts, and the largest a producer sends (``streams.limits``; 1 MiB
both where that module is absent)."""

NAMESPACE = "hostile"
NODES = 4
OVERSIZED_MAX = 3
"""Most records just above the size limit in one run: each is a megabyte the broker keeps."""
HUGE_OFFSET = 1 << 62
DEAD_LETTER_READ_S = 20.0
"""Longest read of the dead-letter topic once the pods are decided (or the wait timed out): it ends
sooner when every record whose class calls for a dead letter has one."""
GHOST_NODE = "hostile-ghost-node"
log = logging.getLogger(__name__)
_OWN_BROKER_AND_HOME = ("KOORD_BROKER", "KOORD_BROKER_KIND", "KOORD_HOME", "KOORD_DATABASE_URL")


@dataclasses.dataclass(frozen=True)
class Hostile:
    """One hostile record: where it goes, what it is, and whether its class calls for a dead letter."""

    kind: str
    topic_id: str
    key: bytes | None
    value: bytes | None
    dead_letter: bool | None
    partition: int | None = None


def node_manifest(name: str) -> dict:
    resources = {"cpu": "64", "memory": "256Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"capacity": resources, "allocatable": resources}}


def pod_manifest(name: str, cpu: str = "100m", memory: str = "128Mi") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"containers": [{"name": "main", "image": "hostile",
                                     "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}


_MANIFESTS: dict[str, Callable[[str], dict]] = {
    "nodes": node_manifest,
    "pods": pod_manifest,
    "nodemetrics": lambda name: {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
                                 "metadata": {"name": name}, "status": {"nodeMetric": {}}},
    "devices": lambda name: {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Device",
                             "metadata": {"name": name}, "spec": {"devices": [{"type": "gpu", "minor": 0}]}},
    "noderesourcetopologies": lambda name: {"apiVersion": "topology.node.k8s.io/v1alpha1",
                                            "kind": "NodeResourceTopology", "metadata": {"name": name}, "zones": []},
    "quotas": lambda name: {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
                            "metadata": {"name": name, "namespace": NAMESPACE},
                            "spec": {"min": {"cpu": "1"}, "max": {"cpu": "2"}}},
    "reservations": lambda name: {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation",
                                  "metadata": {"name": name}, "spec": {
                                      "template": {"spec": {"containers": [
                                          {"name": "main", "resources": {"requests": {"cpu": "1m"}}}]}},
                                      "owners": [{"object": {"name": name}}]}},
    "configs": lambda name: {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NAMESPACE},
                             "data": {"hostile": "yes"}},
    "podgroups": lambda name: {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "PodGroup",
                               "metadata": {"name": name, "namespace": NAMESPACE}, "spec": {"minMember": 2}},
    "podmigrationjobs": lambda name: {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "PodMigrationJob",
                                      "metadata": {"name": name},
                                      "spec": {"podRef": {"namespace": NAMESPACE, "name": f"{name}-absent"}}},
    "poddisruptionbudgets": lambda name: {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                                          "metadata": {"name": name, "namespace": NAMESPACE},
                                          "spec": {"selector": {"matchLabels": {"app": name}}, "maxUnavailable": 1}},
}
"""A valid manifest per source topic that carries applied objects (a migration names a pod that does not exist)."""
GENERATED = ("ticks", "decisions", "noderesources", "nodeusages")
"""Source topics the workers write rather than ``koord apply``; ``Generator.valid`` builds their records."""


def encoded(manifest: dict) -> tuple[str, str, bytes]:
    """(topic id, key, value) of a manifest, exactly as ``koord apply`` produces it."""
    record = to_record(Document("<hostile>", 0, 1, manifest))
    return record.topic, record.key, codec.encode(record.schema, record.record)


def _causation(topology: Topology) -> dict:
    return {"inboxTopic": topology.name("inbox-scheduling"), "inboxPartition": 0, "inboxOffset": 0,
            "sourceTopic": topology.name("pods"), "sourcePartition": 0, "sourceOffset": 0}


class Generator:
    """Seeded hostile records for ``topology``; the same seed and ``now_ms`` (the timestamp the records carry,
    default: the time of construction) draw the same records."""

    def __init__(self, seed: int, topology: Topology | None = None, now_ms: int | None = None) -> None:
        self.rng = random.Random(seed)
        self.topology = topology or load_topology()
        self.now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        self.serial = 0

    def _name(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}-{self.serial:06d}"

    def _source(self) -> str:
        """Any source topic."""
        return self.rng.choice(list(routing.KIND_BY_SOURCE))

    def _valid_source(self) -> str:
        """A source topic ``valid`` can build a record for: all of them, unless one was added since."""
        return self.rng.choice([s for s in routing.KIND_BY_SOURCE if s in _MANIFESTS or s in GENERATED])

    def valid(self, source_id: str) -> tuple[bytes, bytes]:
        """(key, value) of a valid record of ``source_id``'s first kind, as ``koord apply`` or a worker writes it."""
        name = self._name("hostile-valid")
        if source_id == "ticks":
            return b"tick", codec.encode("Tick", {"timestamp": self.now_ms})
        if source_id == "decisions":
            decision = self._decision(name, "Unschedulable", None)
            return f"{NAMESPACE}/{name}".encode(), codec.encode("SchedulingDecision", decision)
        if source_id == "noderesources":
            return name.encode(), codec.encode("NodeResource", {"decisionId": name, "nodeName": name,
                                                                "causation": _causation(self.topology),
                                                                "timestamp": self.now_ms})
        if source_id == "nodeusages":
            return name.encode(), codec.encode("NodeUsage", {"decisionId": name, "nodeName": name,
                                                             "causation": _causation(self.topology),
                                                             "timestamp": self.now_ms})
        topic, key, value = encoded(_MANIFESTS[source_id](name))
        assert topic == source_id
        return key.encode(), value

    def _decision(self, name: str, result: str, node: str | None) -> dict:
        return {"decisionId": self._name("hostile-decision"), "pod": {"namespace": NAMESPACE, "name": name},
                "result": result, "nodeName": node, "causation": _causation(self.topology),
                "timestamp": self.now_ms}

    def _envelope(self, source_topic: str, key: str, payload: bytes | None, offset: int = 0,
                  partition: int = 0) -> bytes:
        return codec.encode("InboxEvent", {"sourceTopic": source_topic, "sourcePartition": partition,
                                           "sourceOffset": offset, "timestamp": self.now_ms, "key": key,
                                           "payload": payload, "ack": False})

    def _garbage(self, size: int = 64) -> bytes:
        return self.rng.randbytes(self.rng.randrange(0, size))

    def _non_utf8(self) -> bytes:
        return b"\xff\xfe" + self.rng.randbytes(self.rng.randrange(0, 8)) + b"\xc3\x28"

    # The failure classes, one method each; CLASSES lists them.

    def garbage_source(self) -> Hostile:
        source = self._source()
        return Hostile("garbage-source", source, self._name("garbage").encode(), self._garbage(), True)

    def non_utf8_key_source(self) -> Hostile:
        source = self._valid_source()
        return Hostile("non-utf8-key-source", source, self._non_utf8(), self.valid(source)[1], True)

    def missing_key_source(self) -> Hostile:
        source = self._valid_source()
        return Hostile("missing-key-source", source, None, self.valid(source)[1], True)

    def non_utf8_key_tombstone(self) -> Hostile:
        return Hostile("non-utf8-key-tombstone", self._source(), self._non_utf8(), None, True)

    def truncated_avro(self) -> Hostile:
        source = self._valid_source()
        key, value = self.valid(source)
        return Hostile("truncated-avro", source, key, value[:self.rng.randrange(0, len(value))], True)

    def bit_flipped_avro(self) -> Hostile:
        source = self._valid_source()
        key, value = self.valid(source)
        flipped = bytearray(value)
        bit = self.rng.randrange(len(flipped) * 8)
        flipped[bit // 8] ^= 1 << (bit % 8)
        return Hostile("bit-flipped-avro", source, key, bytes(flipped), None)

    def wrong_schema(self) -> Hostile:
        source = self._source()
        value = codec.encode("Actuation", {"decisionId": "x", "nodeName": "n", "sequence": 1, "targetKind": "qos",
                                           "targetId": QOS_BE, "mechanism": "cgroup",
                                           "causation": _causation(self.topology), "timestamp": 0})
        return Hostile("wrong-schema", source, self._name(f"{NAMESPACE}/hostile-wrong").encode(), value, True)

    def negative_requests_pod(self) -> Hostile:
        _, key, value = encoded(pod_manifest(self._name("hostile-negative")))
        name, record = codec.decode(value)
        record["requests"] = {**record["requests"], "cpu": -self.rng.randrange(1, 10_000)}
        return Hostile("negative-requests-pod", "pods", key.encode(), codec.encode(name, record), True)

    def manifest_not_json(self) -> Hostile:
        _, key, value = encoded(pod_manifest(self._name("hostile-manifest")))
        name, record = codec.decode(value)
        record["manifest"] = self.rng.choice(["{not json", "", "[]", "\x00", "null"])
        return Hostile("manifest-not-json", "pods", key.encode(), codec.encode(name, record), None)

    def decision_for_ghost_node(self) -> Hostile:
        name = self._name("hostile-ghost-pod")
        value = codec.encode("SchedulingDecision", self._decision(name, "Scheduled", self._name(GHOST_NODE)))
        return Hostile("decision-for-ghost-node", "decisions", f"{NAMESPACE}/{name}".encode(), value, None)

    def invalid_scheduler_args(self) -> Hostile:
        manifest = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                    "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [
                        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Bogus"}}}]}]}
        _, key, value = encoded(manifest)
        return Hostile("invalid-scheduler-args", "configs", key.encode(), value, True)

    def oversized(self) -> Hostile:
        source = self._source()
        key = self._name(f"{NAMESPACE}/hostile-oversized").encode()
        size = RECORD_MAX_BYTES + self.rng.randrange(1, 1024)
        return Hostile("oversized", source, key, self.rng.randbytes(size - len(key) - 96), True)

    def garbage_inbox(self) -> Hostile:
        inbox = self.rng.choice(["inbox-node", "inbox-scheduling"])
        return Hostile("garbage-inbox", inbox, routing.DEFAULT_DOMAIN.encode(), self._garbage(), True)

    def _inbox_pod(self, kind: str, inbox_key: bytes | None, offset: int = 0, negative: bool = False,
                   partition: int | None = None) -> Hostile:
        _, key, value = encoded(pod_manifest(self._name(f"hostile-{kind}")))
        if negative:
            name, record = codec.decode(value)
            record["requests"] = {**record["requests"], "cpu": -1000}
            value = codec.encode(name, record)
        if partition is None:
            partition = self.rng.randrange(self.topology.spec("pods").partitions)
        envelope = self._envelope(self.topology.name("pods"), key, value, offset, partition)
        return Hostile(kind, "inbox-scheduling", inbox_key, envelope, True)

    def inbox_missing_key(self) -> Hostile:
        return self._inbox_pod("inbox-missing-key", None)

    def inbox_non_utf8_key(self) -> Hostile:
        return self._inbox_pod("inbox-non-utf8-key", self._non_utf8())

    def inbox_unknown_source_topic(self) -> Hostile:
        topic = self.rng.choice(["koord.nope", "", self.topology.name("acks"), "koord.pods.x"])
        _, key, _ = encoded(pod_manifest(self._name("hostile-deleted")))
        envelope = self._envelope(topic, key, None)
        return Hostile("inbox-unknown-source-topic", "inbox-scheduling", routing.DEFAULT_DOMAIN.encode(), envelope, True)

    def inbox_huge_source_offset(self, partition: int | None = None) -> Hostile:
        """A forged pod claiming an offset of koord.pods ``partition`` far past its end: taken as real, it
        would make the aggregate drop every later record of that partition as already seen."""
        return self._inbox_pod("inbox-huge-source-offset", routing.DEFAULT_DOMAIN.encode(),
                               offset=HUGE_OFFSET + self.rng.randrange(1 << 20), partition=partition)

    def inbox_negative_requests(self) -> Hostile:
        return self._inbox_pod("inbox-negative-requests", routing.DEFAULT_DOMAIN.encode(), negative=True)

    def inbox_invalid_payload(self) -> Hostile:
        key = f"{NAMESPACE}/{self._name('hostile-payload')}"
        envelope = self._envelope(self.topology.name("pods"), key, self._garbage())
        return Hostile("inbox-invalid-payload", "inbox-scheduling", routing.DEFAULT_DOMAIN.encode(), envelope, True)

    def garbage_output(self) -> Hostile:
        topic = self.rng.choice(["acks", "actuation-acks", "quotastatus", "deadletters"])
        key = self.rng.choice([None, self._non_utf8(), b"x"])
        return Hostile("garbage-output", topic, key, self._garbage(), None)

    def garbage_actuation(self) -> Hostile:
        key = self.rng.choice([None, self._non_utf8(), f"hostile-node-{self.rng.randrange(NODES)}".encode()])
        return Hostile("garbage-actuation", "actuations", key, self._garbage(), None)

    def draw(self, kind: str | None = None) -> Hostile:
        """One hostile record of class ``kind``, or of a class drawn at random (never ``oversized``)."""
        kind = kind or self.rng.choice([k for k in CLASSES if k != "oversized"])
        return CLASSES[kind](self)

    def records(self, count: int, oversized: int = OVERSIZED_MAX) -> list[Hostile]:
        """``count`` hostile records: one of every class first, then random ones; at most ``oversized`` of
        them just above the size limit (each costs a megabyte)."""
        drawn = [self.draw(kind) for kind in CLASSES if kind != "oversized" or oversized > 0][:count]
        extra = min(max(oversized - 1, 0), max(count - len(drawn), 0) // 1000)
        drawn += [self.draw("oversized") for _ in range(extra)]
        drawn += [self.draw() for _ in range(count - len(drawn))]
        self.rng.shuffle(drawn)
        return drawn


CLASSES: dict[str, Callable[[Generator], Hostile]] = {
    "garbage-source": Generator.garbage_source,
    "non-utf8-key-source": Generator.non_utf8_key_source,
    "missing-key-source": Generator.missing_key_source,
    "non-utf8-key-tombstone": Generator.non_utf8_key_tombstone,
    "truncated-avro": Generator.truncated_avro,
    "bit-flipped-avro": Generator.bit_flipped_avro,
    "wrong-schema": Generator.wrong_schema,
    "negative-requests-pod": Generator.negative_requests_pod,
    "manifest-not-json": Generator.manifest_not_json,
    "decision-for-ghost-node": Generator.decision_for_ghost_node,
    "invalid-scheduler-args": Generator.invalid_scheduler_args,
    "oversized": Generator.oversized,
    "garbage-inbox": Generator.garbage_inbox,
    "inbox-missing-key": Generator.inbox_missing_key,
    "inbox-non-utf8-key": Generator.inbox_non_utf8_key,
    "inbox-unknown-source-topic": Generator.inbox_unknown_source_topic,
    "inbox-huge-source-offset": Generator.inbox_huge_source_offset,
    "inbox-negative-requests": Generator.inbox_negative_requests,
    "inbox-invalid-payload": Generator.inbox_invalid_payload,
    "garbage-output": Generator.garbage_output,
    "garbage-actuation": Generator.garbage_actuation,
}
"""Every failure class, by name."""


@dataclasses.dataclass(frozen=True)
class Sent:
    hostile: Hostile
    topic: str
    partition: int | None
    offset: int | None
    error: str | None
    """Why the producer or the broker refused the record (it was then never written), else None."""


async def produce_hostile(bootstrap: str, topology: Topology, hostile: list[Hostile],
                          one_by_one: bool = False) -> list[Sent]:
    """Send every hostile record as it is (raw key and value, no checks); a record the producer or the
    broker refuses is reported, not raised. Kafka refuses a whole batch when one record of it is invalid
    (no key on a compacted topic), so a record without a key always goes in a batch of its own and the
    refusal is that record's; ``one_by_one`` does so for every record. The producer is not idempotent:
    after one refused batch an idempotent producer's sequence numbers for that partition are out of step
    and Kafka refuses every later batch there (OutOfOrderSequenceNumber), which would hide what the
    pipeline does with the records behind it."""
    names = topology.names()
    producer = AIOKafkaProducer(**kafka.client_settings(bootstrap), acks="all", enable_idempotence=False,
                                max_request_size=PRODUCER_MAX_BYTES)
    await producer.start()
    try:
        pending = []
        for item in hostile:
            topic = names[item.topic_id]
            alone = one_by_one or item.key is None
            if alone:
                await producer.flush()
            try:
                future = await producer.send(topic, key=item.key, value=item.value, partition=item.partition)
            except KafkaError as error:
                future = f"{type(error).__name__}: {error}"
            pending.append((item, topic, future))
            if alone and not isinstance(future, str):
                await asyncio.wait([future])
        sent = []
        for item, topic, future in pending:
            if isinstance(future, str):
                sent.append(Sent(item, topic, None, None, future))
                continue
            try:
                placed = await future
                sent.append(Sent(item, topic, placed.partition, placed.offset, None))
            except KafkaError as error:
                sent.append(Sent(item, topic, None, None, f"{type(error).__name__}: {error}"))
        return sent
    finally:
        await producer.stop()


async def produce_valid(bootstrap: str, topology: Topology, records: list[tuple[str, str, bytes]]) -> list:
    """Send (topic id, key, value) records as ``koord apply`` does (with its ack header); where each landed."""
    names = topology.names()
    return await kafka.produce(bootstrap, [(names[topic], key, value) for topic, key, value in records],
                               headers=routing.ACK_HEADERS)


async def read_topic(bootstrap: str, topic: str, done: Callable[[list], bool], timeout_s: float) -> list:
    """Records of ``topic`` from its beginning, decoded (undecodable ones skipped), until ``done(records)``
    or ``timeout_s``; each item is (partition, offset, schema, record). A broker that went away (the
    pipeline's supervisor stops it when a process dies) ends the read with what was read so far."""
    consumer = AIOKafkaConsumer(**kafka.client_settings(bootstrap), **kafka.consumer_settings(), group_id=None,
                                enable_auto_commit=False)
    found: list = []
    try:
        await consumer.start()
        tps = [TopicPartition(topic, p) for p in await kafka.partitions_for(consumer, topic)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + timeout_s
        while not done(found) and time.monotonic() < deadline:
            for messages in (await consumer.getmany(timeout_ms=200)).values():
                for message in messages:
                    try:
                        schema, record = codec.decode(message.value)
                    except codec.CodecError:
                        continue
                    found.append((message.partition, message.offset, schema, record))
    except (KafkaError, OSError) as error:
        log.warning("reading %s stopped: %s", topic, error)
    finally:
        # aiokafka's fetcher lets the cancellation of its own task escape stop() when the broker is gone.
        with contextlib.suppress(KafkaError, OSError, asyncio.CancelledError):
            await consumer.stop()
    return found


def dead_lettered(sent: list[Sent], letters: list) -> dict[tuple[str, int, int], dict]:
    """The DeadLetter of each sent record that has one, by (topic, partition, offset)."""
    wanted = {(s.topic, s.partition, s.offset) for s in sent if s.offset is not None}
    return {key: record for _, _, schema, record in letters if schema == "DeadLetter"
            and (key := (record["sourceTopic"], record["sourcePartition"], record["sourceOffset"])) in wanted}


@contextlib.contextmanager
def pipeline(broker_kind: str) -> Iterator[dict]:
    """``koord up --nodes 0 --detach --broker KIND`` in a temporary home; yields its ``up.json`` state with
    ``home`` set, and the environment this process's clients need while it runs."""
    with tempfile.TemporaryDirectory(prefix="koord-hostile-") as home:
        env = {key: value for key, value in os.environ.items() if key not in _OWN_BROKER_AND_HOME}
        env["KOORD_HOME"] = home
        subprocess.run(supervision.koord_command("up", "--nodes", "0", "--detach", "--broker", broker_kind),
                       env=env, check=True, stdout=subprocess.DEVNULL)
        saved = {key: os.environ.get(key) for key in _OWN_BROKER_AND_HOME}
        try:
            state = json.loads((Path(home) / "up.json").read_text())
            os.environ.update({"KOORD_BROKER": state["bootstrap"], "KOORD_BROKER_KIND": state["broker_kind"],
                               "KOORD_HOME": home})
            yield state
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            subprocess.run(supervision.koord_command("down"), env=env, check=False, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)


def alive(state: dict) -> dict[str, bool]:
    """Whether the supervisor and each process it started is still running."""
    return {"supervisor": supervision.pid_alive(state["pid"]),
            **{name: supervision.pid_alive(proc["pid"]) for name, proc in state["processes"].items()}}


async def _run(state: dict, records: int, pods: int, seed: int, timeout_s: float) -> dict:
    bootstrap, topology = state["bootstrap"], load_topology()
    names = topology.names()
    nodes = [encoded(node_manifest(f"hostile-node-{i}")) for i in range(NODES)]
    await produce_valid(bootstrap, topology, nodes)
    started = time.monotonic()
    hostile = Generator(seed, topology).records(records)
    sent = await produce_hostile(bootstrap, topology, hostile)
    hostile_s = time.monotonic() - started
    run = f"{seed}-{int(time.time()) % 100000:05d}"
    valid = [encoded(pod_manifest(f"valid-{run}-{i:05d}")) for i in range(pods)]
    await produce_valid(bootstrap, topology, valid)
    wanted = {f"valid-{run}-{i:05d}" for i in range(pods)}

    def all_decided(found: list) -> bool:
        return wanted <= {record["pod"]["name"] for _, _, schema, record in found if schema == "SchedulingDecision"}

    found = await read_topic(bootstrap, names["decisions"], all_decided, timeout_s)
    decided = wanted & {record["pod"]["name"] for _, _, schema, record in found if schema == "SchedulingDecision"}
    elapsed = time.monotonic() - started
    owed = sum(1 for item in sent if item.hostile.dead_letter and item.offset is not None)
    letters = await read_topic(bootstrap, names["deadletters"], lambda found: len(dead_lettered(sent, found)) >= owed,
                               DEAD_LETTER_READ_S)
    matched = dead_lettered(sent, letters)
    by_class: dict[str, dict[str, int]] = {}
    for item in sent:
        figures = by_class.setdefault(item.hostile.kind, {"sent": 0, "refused": 0, "dead_lettered": 0})
        figures["sent"] += 1
        figures["refused"] += item.error is not None
        figures["dead_lettered"] += (item.topic, item.partition, item.offset) in matched
    return {"seconds": round(elapsed, 1), "hostile_produce_seconds": round(hostile_s, 1), "records_sent": len(sent),
            "records_refused_by_producer_or_broker": sum(item.error is not None for item in sent),
            "dead_letters": sum(schema == "DeadLetter" for _, _, schema, _ in letters),
            "dead_letters_of_hostile_records": len(matched),
            "dead_letters_missing": sum(1 for item in sent if item.hostile.dead_letter and item.offset is not None
                                        and (item.topic, item.partition, item.offset) not in matched),
            "refusals": dict(collections.Counter(item.error[:160] for item in sent if item.error).most_common(5)),
            "pods": pods, "pods_decided": len(decided), "by_class": by_class}


def run(broker_kind: str, records: int, pods: int, seed: int, timeout_s: float) -> dict:
    with pipeline(broker_kind) as state:
        result = asyncio.run(_run(state, records, pods, seed, timeout_s))
        processes = alive(state)
    return {"broker": broker_kind, "seed": seed, **result, "processes_alive": processes,
            "all_alive": all(processes.values()), "record_limit_bytes": RECORD_MAX_BYTES}
