"""``koord bench hostile``: hostile records on every topic, then valid pods; does the pipeline still decide?

``Generator`` draws, from a plain ``random.Random(seed)``, records of every failure class in
``CLASSES`` across all source topics plus the inboxes, the output topics and the actuations topic:
garbage bytes, keys that are not UTF-8 or missing, truncated and bit-flipped Avro of valid records,
valid Avro of a schema foreign to the topic, forged InboxEvents (unknown source topic, a source offset
far past the end, an invalid payload, no key), pods with negative requests, decisions for nodes that
do not exist, a KubeSchedulerConfiguration whose plugin args are invalid, a Pod whose manifest is not
JSON, records just above the size limit of a record; and the classes of issue 37: a forged pod InboxEvent
claiming an offset below its partition's end (``run`` aims it at the valid pods' burst), an unsigned
SchedulingDecision (written to the decisions topic, which only the pipeline writes and no aggregate reads:
the read model and the bridge take only signed records of it, and on Kafka the ACLs refuse the write), a Node
record timed ahead (``FUTURE_AHEAD_MS``), and valid objects just under the
record limit (``oversized-valid``: a Pod of ~400,000 ``"`` in a container argument, a ~790 KB PodGroup), which
the state once stored too big to write and now keeps within its budget. Each ``Hostile`` says whether its class calls for a dead letter (``dead_letter``: True,
False, or None when either is acceptable).

``run`` starts the whole pipeline as ``koord up --nodes 0 --detach`` does (a fresh broker of the
kind asked for, the worker, the projection, in a temporary ``KOORD_HOME``; KOORD_BROKER is ignored,
so hostile records never reach a broker others use), applies a few nodes, produces the hostile
records, then ``pods`` valid pods built as ``koord apply`` builds them, with the forged offsets aimed below
the ends of their burst, and waits until each pod has a decision on the decisions topic (or the timeout).
Then it forges a decision for each of a share of those pods onto another node, deletes a few of them and
sends their real decisions again, byte for byte with their signatures (``replayed-decision``, built from
what it read, so not a class ``Generator`` draws), and reads ``koord get`` and ``koord status``.

It reports what it saw, nothing assumed: per class what was sent, refused by the broker, dead-lettered,
and **wrong** (a forged decision a pod shows in ``koord get``, a deleted pod ``koord get`` shows again after
its decision's replay, a Node record timed ahead whose time the router did not clamp, a pod the router
refused that ``koord get`` shows, a pod only a forged inbox record carried that was decided; a replay's effect
on its node's batch allocatable needs NodeMetrics and a colocation config, so ``tests/integration/
test_hostile.py`` checks that one); for the run,
**lost** (valid pods never decided), valid pods decided more than once, and **stopped** (a worker or the
projection not running at the end, by ``koord status``). The target is 0 lost, 0 stopped, 0 wrong.
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
import urllib.request
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
DEAD_LETTER_READ_S = 60.0
"""Longest read of the dead-letter topic once the pods are decided (or the wait timed out): it ends
sooner when every record whose class calls for a dead letter has one."""
GHOST_NODE = "hostile-ghost-node"
FUTURE_AHEAD_MS = (50 * 60_000, 86_400_000)
"""How far ahead a ``future-timestamp`` Node record is timed: 50 minutes, which both brokers take, or a day,
which Kafka refuses (``message.timestamp.after.max.ms``, an hour) and Tansu takes."""
QUOTES = 400_000
"""``"`` characters in a container argument of an ``oversized-valid`` Pod (annotations are limited to 256 KiB):
its record (the manifest as JSON, each ``"`` escaped) is under the record limit, a state holding the manifest
as JSON again would not be."""
PODGROUP_BYTES = 790_000
"""Size of a field of the spec of an ``oversized-valid`` PodGroup (one ``koord apply`` keeps as it is)."""
BIG_CLASSES = ("oversized", "oversized-valid")
"""Classes of records of about a megabyte: never drawn at random, at most ``OVERSIZED_MAX`` in one run."""
LATE_CLASSES = ("inbox-forged-offset-below-end", "forged-decision")
"""Classes ``run`` sends after the valid pods, aimed at them: forged offsets below the ends of their burst,
forged decisions onto other nodes than theirs."""
REPLAYS_MAX = 10
"""Most valid pods ``run`` deletes to replay their decisions (a twentieth of the pods, at least one)."""
SETTLE_S = 10.0
"""Seconds ``run`` gives the pipeline after the forged and replayed decisions before it reads ``koord get``."""
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
    headers: tuple[tuple[str, bytes], ...] = ()
    timestamp_ms: int | None = None
    """The record's Kafka timestamp; None: the producer's clock."""


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
    "persistentvolumes": lambda name: {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                                       "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                                "hostPath": {"path": "/tmp/hostile"}}},
    "persistentvolumeclaims": lambda name: {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                            "metadata": {"name": name, "namespace": NAMESPACE},
                                            "spec": {"accessModes": ["ReadWriteOnce"],
                                                     "resources": {"requests": {"storage": "1Gi"}}}},
    "storageclasses": lambda name: {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
                                    "provisioner": "kubernetes.io/no-provisioner"},
    "csinodes": lambda name: {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
                              "spec": {"drivers": [{"name": "hostile.csi", "nodeID": name}]}},
}
"""A valid manifest per source topic that carries applied objects (a migration names a pod that does not exist)."""
GENERATED = ("ticks", "yarnnodes")
"""Source topics the workers or the YARN bridge write rather than ``koord apply``; ``Generator.valid`` builds
their records."""


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
        """Any source topic a router reads (``routing.CHECKED_SOURCES``). The pipeline's own outputs (``routing.COPIED_BY_AGGREGATES``) are
        read by no aggregate, so a record written there by anyone else is neither applied nor dead-lettered on
        the topic (on Kafka the ACLs refuse it); the projection and the bridge check their signatures, which the
        decision classes (``forged-decision``, ``decision-for-ghost-node``, ``replayed-decision``) aim at."""
        return self.rng.choice(list(routing.CHECKED_SOURCES))

    def _valid_source(self) -> str:
        """A source topic a router reads that ``valid`` can build a record for: all of them, unless one was
        added since."""
        return self.rng.choice([s for s in routing.CHECKED_SOURCES if s in _MANIFESTS or s in GENERATED])

    def valid(self, source_id: str) -> tuple[bytes, bytes]:
        """(key, value) of a valid record of ``source_id``'s first kind, as ``koord apply`` or a worker writes it."""
        name = self._name("hostile-valid")
        if source_id == "ticks":
            return b"tick", codec.encode("Tick", {"timestamp": self.now_ms})
        if source_id == "yarnnodes":
            return name.encode(), codec.encode("YarnNode", {
                "nodeName": name, "nodeId": f"{name}:8041", "cluster": "http://127.0.0.1:8088", "state": "RUNNING",
                "capacityVcores": 8, "capacityMemoryMB": 8192, "allocatedVcores": 0, "allocatedMemoryMB": 0,
                "containers": 0, "observedAt": self.now_ms})
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

    def inbox_forged_offset_below_end(self, partition: int | None = None, offset: int = 0) -> Hostile:
        """A forged pod claiming ``offset`` of koord.pods ``partition``, below its end: taken as real while the
        router still forwards that partition, it would make the aggregate skip the records not yet forwarded
        (issue 37, failure 1). ``run`` aims it at the last offset of the valid pods' burst."""
        return self._inbox_pod("inbox-forged-offset-below-end", routing.DEFAULT_DOMAIN.encode(), offset=offset,
                               partition=partition)

    def forged_decision(self, pod: str | None = None, node: str | None = None) -> Hostile:
        """An unsigned decision placing ``pod`` (default: one nobody applied) on ``node`` (default: one of the
        nodes ``run`` applies) (issue 37, failure 9): no aggregate reads the decisions topic, and the read model
        takes only signed decisions (it records this one in its own dead-letter table, not on the topic)."""
        name = pod or self._name("hostile-forged-pod")
        node = node or f"hostile-node-{self.rng.randrange(NODES)}"
        value = codec.encode("SchedulingDecision", self._decision(name, "Scheduled", node))
        return Hostile("forged-decision", "decisions", f"{NAMESPACE}/{name}".encode(), value, False)

    def future_timestamp(self) -> Hostile:
        """A valid Node record timed ``FUTURE_AHEAD_MS`` ahead (a node with a bad clock): the router forwards it
        at most ``streams.events.MAX_AHEAD_MS`` ahead (issue 37, failure 8)."""
        key, value = self.valid("nodes")
        return Hostile("future-timestamp", "nodes", key, value, False,
                       timestamp_ms=self.now_ms + self.rng.choice(FUTURE_AHEAD_MS))

    def oversized_valid(self) -> Hostile:
        """A valid Pod of ``QUOTES`` ``"`` in a container argument, or a PodGroup of ``PODGROUP_BYTES``, under the
        record limit: the pipeline must keep running and take it, as its stored form fits the state budget (issue
        37, failure 3; one whose stored form would not is refused by ``koord apply`` and the router)."""
        if self.rng.random() < 0.5:
            manifest = pod_manifest(self._name("hostile-quotes"))
            manifest["spec"]["containers"][0]["args"] = ['"' * QUOTES]
        else:
            manifest = _MANIFESTS["podgroups"](self._name("hostile-big-podgroup"))
            manifest["spec"]["padding"] = "x" * PODGROUP_BYTES
        topic, key, value = encoded(manifest)
        return Hostile("oversized-valid", topic, key.encode(), value, False)

    def replayed_decision(self, key: bytes, value: bytes, headers: tuple[tuple[str, bytes], ...]) -> Hostile:
        """A real decision sent again, byte for byte with its signature, after its pod was deleted (issue 37,
        failure 7): it verifies, so only the read model's dedupe by decision id keeps it from reviving the pod;
        no aggregate reads the decisions topic."""
        return Hostile("replayed-decision", "decisions", key, value, None, headers=headers)

    def garbage_output(self) -> Hostile:
        topic = self.rng.choice(["acks", "actuation-acks", "quotastatus", "deadletters"])
        key = self.rng.choice([None, self._non_utf8(), b"x"])
        return Hostile("garbage-output", topic, key, self._garbage(), None)

    def garbage_actuation(self) -> Hostile:
        key = self.rng.choice([None, self._non_utf8(), f"hostile-node-{self.rng.randrange(NODES)}".encode()])
        return Hostile("garbage-actuation", "actuations", key, self._garbage(), None)

    def draw(self, kind: str | None = None) -> Hostile:
        """One hostile record of class ``kind``, or of a class drawn at random (never one of ``BIG_CLASSES``)."""
        kind = kind or self.rng.choice([k for k in CLASSES if k not in BIG_CLASSES])
        return CLASSES[kind](self)

    def records(self, count: int, oversized: int = OVERSIZED_MAX) -> list[Hostile]:
        """``count`` hostile records: one of every class first, then random ones; at most ``oversized`` of
        them of about a megabyte (``BIG_CLASSES``; each costs a megabyte)."""
        drawn = [self.draw(kind) for kind in CLASSES if kind not in BIG_CLASSES or oversized > 0][:count]
        extra = min(max(oversized - len(BIG_CLASSES), 0), max(count - len(drawn), 0) // 1000)
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
    "inbox-forged-offset-below-end": Generator.inbox_forged_offset_below_end,
    "forged-decision": Generator.forged_decision,
    "future-timestamp": Generator.future_timestamp,
    "oversized-valid": Generator.oversized_valid,
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
    (no key on a compacted topic, a time more than an hour ahead), so a record without a key or with a time
    of its own always goes in a batch of its own and the refusal is that record's; ``one_by_one`` does so
    for every record. The producer is not idempotent:
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
            alone = one_by_one or item.key is None or item.timestamp_ms is not None
            if alone:
                await producer.flush()
            try:
                future = await producer.send(topic, key=item.key, value=item.value, partition=item.partition,
                                             timestamp_ms=item.timestamp_ms, headers=list(item.headers) or None)
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


def _koord(state: dict, *args: str, timeout: float = 120) -> dict | None:
    """``koord ARGS -o json`` against the run's home, parsed; None when it fails."""
    env = {key: value for key, value in os.environ.items() if key not in _OWN_BROKER_AND_HOME}
    env.update({"KOORD_HOME": state["home"], "KOORD_BROKER": state["bootstrap"],
                "KOORD_BROKER_KIND": state["broker_kind"], "KOORD_DATABASE_URL": state["database_url"]})
    try:
        result = subprocess.run(supervision.koord_command(*args, "-o", "json"), env=env, capture_output=True,
                                text=True, timeout=timeout)
        return json.loads(result.stdout) if result.returncode == 0 else None
    except (subprocess.TimeoutExpired, json.JSONDecodeError) as error:
        log.warning("koord %s: %s", " ".join(args), error)
        return None


def shown_pods(state: dict) -> dict[str | None, dict] | None:
    """The pods of ``NAMESPACE`` that ``koord get`` shows, by name (None for a manifest without one); None when
    ``koord get`` fails."""
    found = _koord(state, "get", "pods", "-n", NAMESPACE)
    return None if found is None else {(pod.get("metadata") or {}).get("name"): pod for pod in found["items"]}


def stopped(state: dict) -> list[str]:
    """The workers and the projection that ``koord status`` does not report alive (all when it fails)."""
    report = _koord(state, "status", "--interval", "1")
    wanted = [name for name in state["processes"] if name.startswith("worker") or name == "projection"]
    if not report or not report["running"]:
        return wanted
    return [name for name in wanted if not report["processes"].get(name, {}).get("alive")]


def worker_metric(state: dict, name: str, **labels: str) -> float | None:
    """The sum over the workers of a Prometheus sample; None when no worker answers."""
    from prometheus_client.parser import text_string_to_metric_families

    total, answered = 0.0, False
    for process, proc in state["processes"].items():
        if not process.startswith("worker") or not proc.get("metrics"):
            continue
        try:
            text = urllib.request.urlopen(proc["metrics"], timeout=5).read().decode()
        except OSError:
            continue
        answered = True
        total += sum(sample.value for family in text_string_to_metric_families(text) for sample in family.samples
                     if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()))
    return total if answered else None


def aimed(hostile: Hostile, partition: int, offset: int) -> Hostile:
    """``hostile`` (a forged InboxEvent) claiming ``offset`` of ``partition`` of its source topic instead."""
    name, envelope = codec.decode(hostile.value)
    return dataclasses.replace(hostile, value=codec.encode(name, {**envelope, "sourcePartition": partition,
                                                                  "sourceOffset": offset}))


def carried_pod(hostile: Hostile) -> str | None:
    """The name of the pod a forged InboxEvent carries, if it carries one of ``NAMESPACE``."""
    try:
        _, envelope = codec.decode(hostile.value)
    except (codec.CodecError, TypeError):
        return None
    key = envelope.get("key") or ""
    return key.split("/", 1)[1] if key.startswith(f"{NAMESPACE}/") and envelope.get("payload") else None


async def fetch_raw(bootstrap: str, topic: str, positions: set[tuple[int, int]], timeout_s: float = 30) -> dict:
    """The (key, value, headers) of the records of ``topic`` at (partition, offset) ``positions``, as written."""
    consumer = AIOKafkaConsumer(**kafka.client_settings(bootstrap), **kafka.consumer_settings(), group_id=None,
                                enable_auto_commit=False)
    found: dict = {}
    try:
        await consumer.start()
        partitions = sorted({partition for partition, _ in positions})
        consumer.assign([TopicPartition(topic, p) for p in partitions])
        for partition in partitions:
            consumer.seek(TopicPartition(topic, partition), min(o for p, o in positions if p == partition))
        deadline = time.monotonic() + timeout_s
        while len(found) < len(positions) and time.monotonic() < deadline:
            for messages in (await consumer.getmany(timeout_ms=200)).values():
                for message in messages:
                    if (message.partition, message.offset) in positions:
                        found[message.partition, message.offset] = (
                            message.key, message.value, tuple((name, value) for name, value in message.headers))
    finally:
        with contextlib.suppress(KafkaError, OSError, asyncio.CancelledError):
            await consumer.stop()
    return found


def _decisions(found: list) -> list[tuple[int, int, dict]]:
    return [(partition, offset, record) for partition, offset, schema, record in found
            if schema == "SchedulingDecision"]


async def _run(state: dict, records: int, pods: int, seed: int, timeout_s: float, oversized: int) -> dict:
    bootstrap, topology = state["bootstrap"], load_topology()
    names = topology.names()
    nodes = [encoded(node_manifest(f"hostile-node-{i}")) for i in range(NODES)]
    await produce_valid(bootstrap, topology, nodes)
    started = time.monotonic()
    generator = Generator(seed, topology)
    hostile = generator.records(records, oversized)
    early = [item for item in hostile if item.kind not in LATE_CLASSES]
    sent = await produce_hostile(bootstrap, topology, early)
    hostile_s = time.monotonic() - started
    run = f"{seed}-{int(time.time()) % 100000:05d}"
    valid = [encoded(pod_manifest(f"valid-{run}-{i:05d}")) for i in range(pods)]
    placed = await produce_valid(bootstrap, topology, valid)
    ends: dict[int, int] = {}
    for where in placed:
        ends[where.partition] = max(ends.get(where.partition, -1), where.offset)
    burst = sorted(ends.items())
    forged_offsets = [aimed(item, *burst[i % len(burst)]) if burst else item
                      for i, item in enumerate(h for h in hostile if h.kind == "inbox-forged-offset-below-end")]
    sent += await produce_hostile(bootstrap, topology, forged_offsets)
    wanted = {f"valid-{run}-{i:05d}" for i in range(pods)}

    def all_decided(found: list) -> bool:
        return wanted <= {record["pod"]["name"] for *_, record in _decisions(found)}

    found = await read_topic(bootstrap, names["decisions"], all_decided, timeout_s)
    real = {}
    for partition, offset, record in _decisions(found):
        if record["pod"]["name"] in wanted and record["result"] == "Scheduled":
            real.setdefault(record["pod"]["name"], []).append((partition, offset, record))
    decided_s = time.monotonic() - started

    replayed_pods = sorted(real)[:min(REPLAYS_MAX, max(1, pods // 20))]
    forged_pods = [name for name in sorted(real) if name not in replayed_pods]
    forged = []
    for i, item in enumerate(h for h in hostile if h.kind == "forged-decision"):
        if not forged_pods:
            forged.append(item)
            continue
        pod = forged_pods[i % len(forged_pods)]
        real_node = real[pod][0][2]["nodeName"]
        other = next(f"hostile-node-{n}" for n in range(NODES) if f"hostile-node-{n}" != real_node)
        forged.append(generator.forged_decision(pod, other))
    sent += await produce_hostile(bootstrap, topology, forged)
    replays = []
    if replayed_pods:
        await kafka.produce(bootstrap, [(names["pods"], f"{NAMESPACE}/{pod}", None) for pod in replayed_pods],
                            headers=routing.ACK_HEADERS)
        gone = await _wait_gone(state, set(replayed_pods), timeout_s=60)
        positions = {(p, o) for pod in replayed_pods for p, o, _ in real[pod][-1:]}
        raw = await fetch_raw(bootstrap, names["decisions"], positions)
        replays = [generator.replayed_decision(*raw[position]) for position in sorted(raw)]
        sent += await produce_hostile(bootstrap, topology, replays)
        replays_ready = gone
    else:
        replays_ready = True
    owed = sum(1 for item in sent if item.hostile.dead_letter and item.offset is not None)
    letters = await read_topic(bootstrap, names["deadletters"], lambda found: len(dead_lettered(sent, found)) >= owed,
                               DEAD_LETTER_READ_S)
    await asyncio.sleep(SETTLE_S)
    matched = dead_lettered(sent, letters)
    shown = shown_pods(state)
    found = await read_topic(bootstrap, names["decisions"], lambda found: False, 5)
    ours = {(s.partition, s.offset) for s in sent if s.topic == names["decisions"] and s.offset is not None}
    scheduled = collections.Counter(record["pod"]["name"] for p, o, record in _decisions(found)
                                    if (p, o) not in ours and record["pod"]["name"] in wanted
                                    and record["result"] == "Scheduled")
    decided = set(scheduled)
    clamped = worker_metric(state, "koord_future_times_total", stage="router", action="clamped")
    wrong = _wrong(sent, matched, shown, {record["pod"]["name"] for *_, record in _decisions(found)}, clamped, names)
    elapsed = time.monotonic() - started
    by_class: dict[str, dict[str, int]] = {}
    for item in sent:
        figures = by_class.setdefault(item.hostile.kind, {"sent": 0, "refused": 0, "dead_lettered": 0,
                                                          "dead_letters_missing": 0, "wrong": 0})
        figures["sent"] += 1
        figures["refused"] += item.error is not None
        figures["dead_lettered"] += (item.topic, item.partition, item.offset) in matched
        figures["dead_letters_missing"] += (bool(item.hostile.dead_letter) and item.offset is not None
                                            and (item.topic, item.partition, item.offset) not in matched)
    for kind, count in wrong.items():
        by_class[kind]["wrong"] = count
    stopped_now = stopped(state)
    lost = sorted(wanted - decided)
    return {"seconds": round(elapsed, 1), "hostile_produce_seconds": round(hostile_s, 1),
            "decided_seconds": round(decided_s, 1), "records_sent": len(sent),
            "records_refused_by_producer_or_broker": sum(item.error is not None for item in sent),
            "dead_letters": sum(schema == "DeadLetter" for _, _, schema, _ in letters),
            "dead_letters_of_hostile_records": len(matched),
            "dead_letters_missing": sum(figures["dead_letters_missing"] for figures in by_class.values()),
            "refusals": dict(collections.Counter(item.error[:160] for item in sent if item.error).most_common(5)),
            "pods": pods, "pods_decided": len(decided), "lost": len(lost), "lost_pods": lost[:20],
            "pods_decided_more_than_once": sum(count > 1 for count in scheduled.values()),
            "stopped": len(stopped_now), "stopped_processes": stopped_now,
            "wrong": sum(wrong.values()), "read_model_read": shown is not None,
            "replayed_after_deletion_seen": replays_ready, "future_times_clamped": clamped,
            "by_class": by_class}


async def _wait_gone(state: dict, pods: set[str], timeout_s: float) -> bool:
    """Wait until ``koord get`` no longer shows ``pods``; whether it happened within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        shown = await asyncio.to_thread(shown_pods, state)
        if shown is not None and not pods & set(shown):
            return True
        await asyncio.sleep(1)
    return False


def _wrong(sent: list[Sent], matched: dict, shown: dict[str | None, dict] | None, decided: set[str],
           clamped: float | None, names: dict[str, str]) -> dict[str, int]:
    """Per class, the records the pipeline acted on as it must not: a forged decision a pod shows, a deleted
    pod shown again after its decision's replay, a Node record timed ahead not clamped, a refused pod shown,
    a pod only a forged inbox record carried that was decided (``decided``: the pods of every decision). A
    read model that cannot be read counts every forged and replayed decision wrong, and workers whose metrics
    cannot be read every record timed ahead, since nothing shows they were not taken."""
    wrong: collections.Counter = collections.Counter()
    written = [item for item in sent if item.offset is not None]
    for item in written:
        kind = item.hostile.kind
        if kind == "forged-decision":
            _, decision = codec.decode(item.hostile.value)
            pod = (shown or {}).get(decision["pod"]["name"], {})
            wrong[kind] += shown is None or pod.get("spec", {}).get("nodeName") == decision["nodeName"]
        elif kind == "replayed-decision":
            _, decision = codec.decode(item.hostile.value)
            wrong[kind] += shown is None or decision["pod"]["name"] in shown
        elif item.topic == names["inbox-scheduling"]:
            wrong[kind] += carried_pod(item.hostile) in decided
        elif (item.topic == names["pods"] and (item.topic, item.partition, item.offset) in matched and shown is not None
              and isinstance(item.hostile.key, bytes) and item.hostile.key.startswith(f"{NAMESPACE}/".encode())):
            wrong[kind] += item.hostile.key.decode(errors="replace").split("/", 1)[1] in shown
    future = sum(1 for item in written if item.hostile.kind == "future-timestamp")
    if future:
        wrong["future-timestamp"] += future if clamped is None else max(0, future - int(clamped))
    return dict(wrong)


def run(broker_kind: str, records: int, pods: int, seed: int, timeout_s: float,
        oversized: int = OVERSIZED_MAX) -> dict:
    with pipeline(broker_kind) as state:
        result = asyncio.run(_run(state, records, pods, seed, timeout_s, oversized))
        processes = alive(state)
    return {"broker": broker_kind, "seed": seed, **result, "processes_alive": processes,
            "all_alive": all(processes.values()), "record_limit_bytes": RECORD_MAX_BYTES}
