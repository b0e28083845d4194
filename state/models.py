"""Tables of the read model (SQLAlchemy 2.x declarative, portable between SQLite and PostgreSQL).

Two kinds of table mirror the two kinds of topic:

- latest state (`pods`, `nodes`, `objects`): one row per topic key, replaced by newer records and
  kept with `deleted=True` after a tombstone, so `apply --wait` can see that a delete landed.
  `source_partition`/`source_offset` are the Kafka position of the record the row reflects.
- events (`decisions`, `evictions`, `node_resources`, `quota_statuses`, `actuations`, `actuation_acks`,
  `dead_letters`): one row
  per event, keyed by the event's own id so at-least-once redelivery inserts nothing new.
  `topic_partition`/`topic_offset` are the event's position on its output topic.

Column names are snake_case versions of the Avro fields; quantity maps stay in canonical units
(milli-cores, bytes) as JSON.
"""

from typing import Any

from sqlalchemy import JSON, BigInteger, Integer, LargeBinary, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    """Declarative base of every read-model table."""

    type_annotation_map = {str: String(), int: Integer()}


class Causation:
    """The Causation sub-record of an output event: the inbox and source record that produced it."""

    inbox_topic: Mapped[str]
    inbox_partition: Mapped[int]
    inbox_offset: Mapped[int] = mapped_column(BigInteger)
    source_topic: Mapped[str]
    source_partition: Mapped[int]
    source_offset: Mapped[int] = mapped_column(BigInteger)


class Pod(Base):
    """Latest state of each pod on the pods topic; `manifest` is the applied object as JSON."""

    __tablename__ = "pods"

    key: Mapped[str] = mapped_column(primary_key=True, doc='"<namespace>/<name>", the topic key.')
    namespace: Mapped[str]
    name: Mapped[str]
    uid: Mapped[str | None]
    node_name: Mapped[str | None]
    phase: Mapped[str | None]
    manifest: Mapped[str | None] = mapped_column(Text, doc="None only for a pod first seen as a tombstone.")
    deleted: Mapped[bool]
    source_partition: Mapped[int]
    source_offset: Mapped[int] = mapped_column(BigInteger)
    updated_ms: Mapped[int] = mapped_column(BigInteger, doc="Kafka timestamp of the record.")


class Node(Base):
    """Latest state of each node on the nodes topic."""

    __tablename__ = "nodes"

    name: Mapped[str] = mapped_column(primary_key=True)
    manifest: Mapped[str | None] = mapped_column(Text)
    deleted: Mapped[bool]
    source_partition: Mapped[int]
    source_offset: Mapped[int] = mapped_column(BigInteger)
    updated_ms: Mapped[int] = mapped_column(BigInteger)


class LatestObject(Base):
    """Latest state of every other object topic (ConfigMap, ElasticQuota, ElasticQuotaProfile,
    Reservation, Device, NodeResourceTopology, and the latest NodeMetric of each node).

    Keyed like Kafka keys them, by (logical topic, key): compaction keeps one value per key, so
    an ElasticQuotaProfile written under the key of an ElasticQuota replaces it, and a tombstone,
    which carries no kind, still finds its row. `kind` is the Avro record name, None for a row
    first seen as a tombstone.
    """

    __tablename__ = "objects"

    topic: Mapped[str] = mapped_column(primary_key=True, doc='Logical topic name, e.g. "quotas".')
    key: Mapped[str] = mapped_column(primary_key=True)
    kind: Mapped[str | None] = mapped_column(index=True)
    namespace: Mapped[str | None]
    name: Mapped[str]
    manifest: Mapped[str | None] = mapped_column(Text)
    record: Mapped[dict[str, Any] | None] = mapped_column(JSON, doc="The decoded record without `manifest`.")
    deleted: Mapped[bool]
    source_partition: Mapped[int]
    source_offset: Mapped[int] = mapped_column(BigInteger)
    updated_ms: Mapped[int] = mapped_column(BigInteger)


class Decision(Causation, Base):
    """One SchedulingDecision."""

    __tablename__ = "decisions"

    decision_id: Mapped[str] = mapped_column(primary_key=True)
    pod_key: Mapped[str] = mapped_column(index=True, doc='"<namespace>/<name>" of the pod.')
    pod_uid: Mapped[str | None]
    domain: Mapped[str]
    result: Mapped[str]
    node_name: Mapped[str | None]
    reason: Mapped[str | None]
    message: Mapped[str] = mapped_column(Text)
    filter_results: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    scores: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    requests: Mapped[dict[str, int]] = mapped_column(JSON, doc="The pod's effective requests (canonical units).")
    labels: Mapped[dict[str, str]] = mapped_column(JSON, default=dict, doc="The pod labels the decision copies.")
    annotations: Mapped[dict[str, str]] = mapped_column(
        JSON, default=dict, doc="The pod annotations the decision copies and those its PreBind plugins wrote.")
    timestamp_ms: Mapped[int] = mapped_column(BigInteger)
    topic_partition: Mapped[int]
    topic_offset: Mapped[int] = mapped_column(BigInteger)


class Eviction(Causation, Base):
    """One Eviction decided by the node-QoS planner (on the decisions topic, beside SchedulingDecisions)."""

    __tablename__ = "evictions"

    decision_id: Mapped[str] = mapped_column(primary_key=True)
    node_name: Mapped[str] = mapped_column(index=True)
    pod_key: Mapped[str] = mapped_column(index=True, doc='"<namespace>/<name>" of the pod.')
    pod_uid: Mapped[str | None]
    reason: Mapped[str]
    message: Mapped[str] = mapped_column(Text)
    timestamp_ms: Mapped[int] = mapped_column(BigInteger)
    topic_partition: Mapped[int]
    topic_offset: Mapped[int] = mapped_column(BigInteger)


class NodeResource(Causation, Base):
    """One NodeResource: a node's computed capacity and allocatable (batch/mid included)."""

    __tablename__ = "node_resources"

    decision_id: Mapped[str] = mapped_column(primary_key=True)
    node_name: Mapped[str] = mapped_column(index=True)
    capacity: Mapped[dict[str, int]] = mapped_column(JSON)
    allocatable: Mapped[dict[str, int]] = mapped_column(JSON)
    annotations: Mapped[dict[str, str]] = mapped_column(JSON)
    zones: Mapped[list[dict[str, Any]]] = mapped_column(
        JSON, default=list, doc="NUMA-level batch resources: [{name, resources: {resource: value}}], NRT zone order.")
    message: Mapped[str] = mapped_column(Text)
    timestamp_ms: Mapped[int] = mapped_column(BigInteger)
    topic_partition: Mapped[int]
    topic_offset: Mapped[int] = mapped_column(BigInteger)


class QuotaStatus(Causation, Base):
    """One ElasticQuotaStatus: a quota's runtime, used and request as the scheduler computed them."""

    __tablename__ = "quota_statuses"

    decision_id: Mapped[str] = mapped_column(primary_key=True)
    domain: Mapped[str]
    namespace: Mapped[str | None] = mapped_column(nullable=True)
    name: Mapped[str] = mapped_column(index=True)
    parent: Mapped[str | None] = mapped_column(nullable=True)
    min: Mapped[dict[str, int]] = mapped_column(JSON)
    max: Mapped[dict[str, int]] = mapped_column(JSON)
    runtime: Mapped[dict[str, int]] = mapped_column(JSON)
    used: Mapped[dict[str, int]] = mapped_column(JSON)
    request: Mapped[dict[str, int]] = mapped_column(JSON)
    timestamp_ms: Mapped[int] = mapped_column(BigInteger)
    topic_partition: Mapped[int]
    topic_offset: Mapped[int] = mapped_column(BigInteger)


class Ack(Base):
    """An aggregate's acknowledgement of an inbox event `koord apply` produced, with the ids of
    the outputs it caused: what `koord apply --wait` waits for. One per aggregate partition that
    processed the source record (a config change is broadcast to every node partition)."""

    __tablename__ = "acks"

    aggregate: Mapped[str] = mapped_column(primary_key=True)
    source_topic: Mapped[str] = mapped_column(primary_key=True)
    source_partition: Mapped[int] = mapped_column(primary_key=True)
    source_offset: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    inbox_partition: Mapped[int] = mapped_column(primary_key=True)
    inbox_topic: Mapped[str]
    inbox_offset: Mapped[int] = mapped_column(BigInteger)
    output_ids: Mapped[list[str]] = mapped_column(JSON)
    timestamp_ms: Mapped[int] = mapped_column(BigInteger)
    event_id: Mapped[str | None] = mapped_column(index=True)
    """The decision id of the inbox record processed when it is another aggregate's output (a NodeUsage)."""


class Actuation(Causation, Base):
    """One Actuation addressed to a node agent."""

    __tablename__ = "actuations"

    decision_id: Mapped[str] = mapped_column(primary_key=True)
    node_name: Mapped[str] = mapped_column(index=True)
    sequence: Mapped[int] = mapped_column(BigInteger)
    target_kind: Mapped[str]
    target_id: Mapped[str]
    mechanism: Mapped[str]
    values: Mapped[dict[str, str]] = mapped_column(JSON)
    signature: Mapped[bytes | None] = mapped_column(LargeBinary)
    timestamp_ms: Mapped[int] = mapped_column(BigInteger)
    topic_partition: Mapped[int]
    topic_offset: Mapped[int] = mapped_column(BigInteger)


class ActuationAck(Base):
    """One ActuationAck from a node agent."""

    __tablename__ = "actuation_acks"

    actuation_id: Mapped[str] = mapped_column(primary_key=True)
    sequence: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    node_name: Mapped[str] = mapped_column(index=True)
    applied: Mapped[bool]
    status: Mapped[str | None]
    """applied, partial, unsupported, failed, rejected, duplicate or dry-run (None from older agents). The
    first ack of an actuation is kept: a ``duplicate`` (a replay refused) never replaces the applied one's."""
    values: Mapped[dict[str, str]] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(Text)
    timestamp_ms: Mapped[int] = mapped_column(BigInteger)
    topic_partition: Mapped[int]
    topic_offset: Mapped[int] = mapped_column(BigInteger)


class DeadLetter(Base):
    """One DeadLetter, keyed by the stage that rejected which source record."""

    __tablename__ = "dead_letters"

    stage: Mapped[str] = mapped_column(primary_key=True)
    source_topic: Mapped[str] = mapped_column(primary_key=True)
    source_partition: Mapped[int] = mapped_column(primary_key=True)
    source_offset: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    key: Mapped[bytes | None] = mapped_column(LargeBinary)
    payload: Mapped[bytes | None] = mapped_column(LargeBinary)
    reason: Mapped[str] = mapped_column(Text)
    timestamp_ms: Mapped[int] = mapped_column(BigInteger)
    left_out: Mapped[dict | None] = mapped_column(JSON)
    """Size and SHA-256 of the key or payload a DeadLetter left out to stay within the size limit
    (``streams.deadletter``): ``{"keySize": ..., "keySha256": ..., "payloadSize": ..., "payloadSha256": ...}``."""


class SourceCluster(Base):
    """The single row naming the incarnation of the cluster and topics the read model was projected from
    (``streams.broker.incarnation``): offsets, and the event ids derived from them, mean something only
    within it, so a read model of another incarnation is set aside instead of being written on (see
    ``state.incarnation``)."""

    __tablename__ = "source_cluster"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    cluster_id: Mapped[str]
    topic_ids: Mapped[dict[str, str]] = mapped_column(JSON, doc="Real topic name -> topic id.")
    bootstrap: Mapped[str] = mapped_column(Text, doc="The bootstrap servers it was first projected from.")
    recorded_ms: Mapped[int] = mapped_column(BigInteger)
    last_record_ms: Mapped[int | None] = mapped_column(BigInteger, doc="Kafka timestamp of the newest record projected.")


class SchemaVersion(Base):
    """The single row holding the read model's schema version (see state.db)."""

    __tablename__ = "schema_version"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    version: Mapped[int]
