"""Which incarnation of a cluster and its topics a piece of state came from.

Offsets start again at 0 when a topic is created anew: on a new embedded
broker (Tansu keeps nothing across restarts), or after a topic was deleted
and re-created on Kafka. Everything keyed by offsets (decision ids, the read
model, the node agent's saved read offset) must therefore say which
incarnation its offsets belong to, or new records collide with old ones.

An incarnation is the cluster id plus the topic id of every topic it names:
Kafka gives both (Metadata v10 and later carry topic ids); Tansu gives a
cluster id (``koord up`` starts each embedded broker with a fresh one) and
topic ids too. A broker that answers no topic ids leaves only the cluster id.
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from typing import Iterable

from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import (
    AbstractType, Boolean, CompactArray, CompactString, Int16, Int32, Schema, TaggedFields)


@dataclasses.dataclass(frozen=True)
class Incarnation:
    cluster_id: str
    topic_ids: tuple[tuple[str, str], ...] = ()
    """(topic name, topic id) pairs, sorted by name; empty where the broker gives no topic ids."""

    def topic_id(self, topic: str) -> str:
        return dict(self.topic_ids).get(topic, "")

    def token(self, topics: Iterable[str] | None = None) -> str:
        """A short stable digest of the cluster id and the ids of ``topics`` (all known when None)."""
        ids = dict(self.topic_ids)
        names = sorted(ids) if topics is None else sorted(topics)
        text = "|".join([self.cluster_id, *(f"{name}={ids.get(name, '')}" for name in names)])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def describe(self) -> str:
        return f"cluster {self.cluster_id}"

    def to_record(self) -> dict:
        return {"clusterId": self.cluster_id, "topicIds": dict(self.topic_ids)}

    @classmethod
    def from_record(cls, record: dict) -> "Incarnation":
        return cls(record["clusterId"], tuple(sorted(record.get("topicIds", {}).items())))


def new_cluster_id() -> str:
    """A cluster id for a new embedded broker, so each one is a new incarnation."""
    return "koord-" + uuid.uuid4().hex[:20]


async def incarnation(admin, topics: Iterable[str] = ()) -> Incarnation:
    """The incarnation of ``topics`` on the cluster ``admin`` (an aiokafka admin client) talks to."""
    cluster_id = (await admin.describe_cluster())["cluster_id"] or ""
    names = sorted(set(topics))
    if not names:
        return Incarnation(cluster_id)
    client = admin._client
    node_id = client.get_random_node()
    try:
        answer = (await client.send(node_id, MetadataRequest(names))).to_object()
    except Exception:
        return Incarnation(cluster_id)
    ids = {topic["name"]: topic["topic_id"] for topic in answer["topics"]
           if topic["error_code"] == 0 and topic["topic_id"] != _NO_TOPIC_ID}
    return Incarnation(answer.get("cluster_id") or cluster_id, tuple(sorted(ids.items())))


_NO_TOPIC_ID = "00000000-0000-0000-0000-000000000000"


class Uuid(AbstractType[str]):
    """Kafka's 16-byte UUID, as its text form."""

    @classmethod
    def encode(cls, value: str) -> bytes:
        return uuid.UUID(value).bytes

    @classmethod
    def decode(cls, data) -> str:
        return str(uuid.UUID(bytes=data.read(16)))


class MetadataResponse_v12(Response):
    """MetadataResponse.json, version 12 (flexible); aiokafka ships versions up to 5, without topic ids."""

    API_KEY = 3
    API_VERSION = 12
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("brokers", CompactArray(("node_id", Int32), ("host", CompactString("utf-8")), ("port", Int32),
                                 ("rack", CompactString("utf-8")), ("tags", TaggedFields))),
        ("cluster_id", CompactString("utf-8")),
        ("controller_id", Int32),
        ("topics", CompactArray(
            ("error_code", Int16), ("name", CompactString("utf-8")), ("topic_id", Uuid), ("is_internal", Boolean),
            ("partitions", CompactArray(
                ("error_code", Int16), ("partition_index", Int32), ("leader_id", Int32), ("leader_epoch", Int32),
                ("replica_nodes", CompactArray(Int32)), ("isr_nodes", CompactArray(Int32)),
                ("offline_replicas", CompactArray(Int32)), ("tags", TaggedFields))),
            ("topic_authorized_operations", Int32), ("tags", TaggedFields))),
        ("tags", TaggedFields),
    )


class MetadataRequest_v12(RequestStruct):
    FLEXIBLE_VERSION = True
    API_KEY = 3
    API_VERSION = 12
    RESPONSE_TYPE = MetadataResponse_v12
    SCHEMA = Schema(
        ("topics", CompactArray(("topic_id", Uuid), ("name", CompactString("utf-8")), ("tags", TaggedFields))),
        ("allow_auto_topic_creation", Boolean),
        ("include_topic_authorized_operations", Boolean),
        ("tags", TaggedFields),
    )


class MetadataRequest(Request[MetadataRequest_v12]):
    """Metadata of named topics, version 12: the one version asked for, as it is the first whose answer
    every supported broker (Kafka 3.x/4.x, Tansu) gives with topic ids."""

    API_KEY = 3

    def __init__(self, topics: list[str]) -> None:
        self.topics = topics

    def build(self, request_struct_class: type[MetadataRequest_v12]) -> MetadataRequest_v12:
        return request_struct_class([(_NO_TOPIC_ID, name, {}) for name in self.topics], False, False, {})
