"""Project decoded topic records into the read-model tables.

The Kafka consumer loop decodes a batch and calls `Projector.apply`; one batch is one
transaction, so committing the consumer offsets after `apply` returns gives at-least-once
projection. Redelivery is harmless because every write is idempotent:

- latest-state topics (objects) upsert by key only when the record's offset is >= the stored
  one. A key always hashes to the same partition, so offsets order its records and a redelivered
  older record never overwrites a newer one. A tombstone sets `deleted` and the offset and keeps
  the row (with the manifest it had), so `apply --wait` can observe the delete.
- event topics insert or ignore by the event's id: under at-least-once the same id is the same
  content.

Upserts use the dialect's `INSERT .. ON CONFLICT` (SQLite and PostgreSQL), one statement per
table and kind of write.

Nothing is lost and nothing stops the projection: a record the read model cannot represent (the
consumer found a problem with it, unknown topic, unexpected schema, undecoded value, key that is
not UTF-8 on a latest-state topic, tombstone on an event topic, a field its row cannot be built
from) becomes a dead-letter row with stage "projection" in the same transaction as the rest of its
batch. When writing the batch fails, it is written again record by record, each in its own
transaction, and a record whose write fails is dead-lettered instead; only an unreachable
database (an OperationalError or InterfaceError) is raised, since that is no record's fault and
the batch must then be retried, not dead-lettered. `apply` returns the dead letters it wrote so
the consumer can count them.
"""

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import InterfaceError, OperationalError

from state.models import (
    Ack,
    Actuation,
    ActuationAck,
    DeadLetter,
    Decision,
    Eviction,
    LatestObject,
    Node,
    NodeResource,
    Pod,
    QuotaStatus,
)
from state.incarnation import note_last_record
from state.topics import resolve_topics
from streams.deadletter import dead_letter_record

logger = logging.getLogger(__name__)

Row = dict[str, Any]

STAGE = "projection"
"""The stage of the dead letters the projection records."""

DATABASE_UNAVAILABLE = (OperationalError, InterfaceError)
"""Write errors that are the database's, not a record's: raised, never dead-lettered."""


@dataclass(frozen=True, slots=True)
class ProjectedRecord:
    """One consumed record. `schema`/`value` are the decoded record (Avro record name and dict),
    both None for a tombstone; `raw` is the undecoded value, None for a tombstone, so a record
    with `raw` but no `value` is one the consumer could not decode."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: str | None
    schema: str | None
    value: dict[str, Any] | None
    raw: bytes | None
    raw_key: bytes | None = None
    problem: str | None = None

    @property
    def is_tombstone(self) -> bool:
        return self.value is None and self.raw is None


@dataclass(frozen=True)
class _LatestState:
    """How one latest-state topic maps to its table."""

    table: Table
    kinds: frozenset[str]
    key_columns: tuple[str, ...]
    row: Callable[[str, ProjectedRecord], Row]
    tombstone_row: Callable[[str, ProjectedRecord], Row]


@dataclass(frozen=True)
class _Events:
    """How one event topic maps to its table."""

    table: Table
    kind: str
    row: Callable[[ProjectedRecord], Row]


def _split_key(key: str) -> tuple[str | None, str]:
    namespace, _, name = key.rpartition("/")
    return namespace or None, name


def _position(record: ProjectedRecord) -> Row:
    return {
        "source_partition": record.partition,
        "source_offset": record.offset,
        "updated_ms": record.timestamp_ms,
    }


def _pod_row(_topic: str, record: ProjectedRecord) -> Row:
    value = record.value
    namespace, name = _split_key(record.key)
    metadata = value["metadata"]
    return {
        "key": record.key,
        "namespace": metadata.get("namespace") or namespace or "",
        "name": metadata.get("name") or name,
        "uid": metadata.get("uid"),
        "node_name": value.get("nodeName"),
        "phase": value.get("phase"),
        "manifest": value["manifest"],
        "deleted": False,
        **_position(record),
    }


def _pod_tombstone(_topic: str, record: ProjectedRecord) -> Row:
    namespace, name = _split_key(record.key)
    return {"key": record.key, "namespace": namespace or "", "name": name, "deleted": True, **_position(record)}


def _node_row(_topic: str, record: ProjectedRecord) -> Row:
    return {"name": record.key, "manifest": record.value["manifest"], "deleted": False, **_position(record)}


def _node_tombstone(_topic: str, record: ProjectedRecord) -> Row:
    return {"name": record.key, "deleted": True, **_position(record)}


def _object_row(topic: str, record: ProjectedRecord) -> Row:
    namespace, name = _split_key(record.key)
    metadata = record.value["metadata"]
    return {
        "topic": topic,
        "key": record.key,
        "kind": record.schema,
        "namespace": metadata.get("namespace") or namespace,
        "name": metadata.get("name") or name,
        "manifest": record.value["manifest"],
        "record": {field: v for field, v in record.value.items() if field != "manifest"},
        "deleted": False,
        **_position(record),
    }


def _object_tombstone(topic: str, record: ProjectedRecord) -> Row:
    namespace, name = _split_key(record.key)
    return {
        "topic": topic,
        "key": record.key,
        "namespace": namespace,
        "name": name,
        "deleted": True,
        **_position(record),
    }


def _causation(causation: Mapping[str, Any]) -> Row:
    return {
        "inbox_topic": causation["inboxTopic"],
        "inbox_partition": causation["inboxPartition"],
        "inbox_offset": causation["inboxOffset"],
        "source_topic": causation["sourceTopic"],
        "source_partition": causation["sourcePartition"],
        "source_offset": causation["sourceOffset"],
    }


def _topic_position(record: ProjectedRecord) -> Row:
    return {"topic_partition": record.partition, "topic_offset": record.offset}


def _decision_row(record: ProjectedRecord) -> Row:
    value = record.value
    pod = value["pod"]
    return {
        "decision_id": value["decisionId"],
        "pod_key": f"{pod['namespace']}/{pod['name']}",
        "pod_uid": pod.get("uid"),
        "domain": value["domain"],
        "result": value["result"],
        "node_name": value.get("nodeName"),
        "reason": value.get("reason"),
        "message": value.get("message", ""),
        "filter_results": list(value.get("filterResults", [])),
        "scores": list(value.get("scores", [])),
        "requests": dict(value.get("requests", {})),
        "labels": dict(value.get("labels") or {}),
        "annotations": dict(value.get("annotations") or {}),
        "timestamp_ms": value["timestamp"],
        **_causation(value["causation"]),
        **_topic_position(record),
    }


def _eviction_row(record: ProjectedRecord) -> Row:
    value = record.value
    pod = value["pod"]
    return {
        "decision_id": value["decisionId"],
        "node_name": value["nodeName"],
        "pod_key": f"{pod['namespace']}/{pod['name']}",
        "pod_uid": pod.get("uid"),
        "reason": value["reason"],
        "message": value.get("message", ""),
        "timestamp_ms": value["timestamp"],
        **_causation(value["causation"]),
        **_topic_position(record),
    }


def _node_resource_row(record: ProjectedRecord) -> Row:
    value = record.value
    return {
        "decision_id": value["decisionId"],
        "node_name": value["nodeName"],
        "capacity": dict(value.get("capacity", {})),
        "allocatable": dict(value.get("allocatable", {})),
        "annotations": dict(value.get("annotations", {})),
        "zones": [{"name": zone["name"], "resources": dict(zone["resources"])} for zone in value.get("zones", [])],
        "message": value.get("message", ""),
        "timestamp_ms": value["timestamp"],
        **_causation(value["causation"]),
        **_topic_position(record),
    }


def _quota_status_row(record: ProjectedRecord) -> Row:
    value = record.value
    return {
        "decision_id": value["decisionId"],
        "domain": value["domain"],
        "namespace": value.get("namespace"),
        "name": value["name"],
        "parent": value.get("parent"),
        **{field: dict(value.get(field, {})) for field in ("min", "max", "runtime", "used", "request")},
        "timestamp_ms": value["timestamp"],
        **_causation(value["causation"]),
        **_topic_position(record),
    }


def _ack_row(record: ProjectedRecord) -> Row:
    value = record.value
    return {
        "aggregate": value["aggregate"],
        "output_ids": list(value.get("outputIds", [])),
        "timestamp_ms": value["timestamp"],
        "event_id": value.get("eventId"),
        **_causation(value["causation"]),
    }


def _actuation_row(record: ProjectedRecord) -> Row:
    value = record.value
    return {
        "decision_id": value["decisionId"],
        "node_name": value["nodeName"],
        "sequence": value["sequence"],
        "target_kind": value["targetKind"],
        "target_id": value["targetId"],
        "mechanism": value["mechanism"],
        "values": dict(value.get("values", {})),
        "signature": value.get("signature"),
        "timestamp_ms": value["timestamp"],
        **_causation(value["causation"]),
        **_topic_position(record),
    }


def _actuation_ack_row(record: ProjectedRecord) -> Row:
    value = record.value
    return {
        "actuation_id": value["actuationId"],
        "sequence": value["sequence"],
        "node_name": value["nodeName"],
        "applied": value["applied"],
        "status": value.get("status"),
        "values": dict(value.get("values", {})),
        "error": value.get("error"),
        "timestamp_ms": value["timestamp"],
        **_topic_position(record),
    }


def _dead_letter_row(record: ProjectedRecord) -> Row:
    return _dead_letter_values(record.value)


def _dead_letter_values(value: Mapping[str, Any]) -> Row:
    return {
        "stage": value["stage"],
        "source_topic": value["sourceTopic"],
        "source_partition": value["sourcePartition"],
        "source_offset": value["sourceOffset"],
        "key": value.get("key"),
        "payload": value.get("payload"),
        "reason": value["reason"],
        "timestamp_ms": value["timestamp"],
        "left_out": {field: value[field] for field in LEFT_OUT if value.get(field) is not None} or None,
    }


LEFT_OUT = ("keySize", "keySha256", "payloadSize", "payloadSha256")
"""The DeadLetter fields that stand for a key or payload left out (``streams.deadletter``)."""


def _objects(*kinds: str) -> _LatestState:
    return _LatestState(LatestObject.__table__, frozenset(kinds), ("topic", "key"), _object_row, _object_tombstone)


_LATEST_STATE: Mapping[str, _LatestState] = {
    "pods": _LatestState(Pod.__table__, frozenset({"Pod"}), ("key",), _pod_row, _pod_tombstone),
    "nodes": _LatestState(Node.__table__, frozenset({"Node"}), ("name",), _node_row, _node_tombstone),
    "configs": _objects("ConfigMap", "KubeSchedulerConfiguration", "DeschedulerConfiguration"),
    "quotas": _objects("ElasticQuota", "ElasticQuotaProfile"),
    "reservations": _objects("Reservation"),
    "devices": _objects("Device"),
    "noderesourcetopologies": _objects("NodeResourceTopology"),
    "nodemetrics": _objects("NodeMetric"),
    "podgroups": _objects("PodGroup"),
    "poddisruptionbudgets": _objects("PodDisruptionBudget"),
    "podmigrationjobs": _objects("PodMigrationJob"),
    "persistentvolumes": _objects("PersistentVolume"),
    "persistentvolumeclaims": _objects("PersistentVolumeClaim"),
    "storageclasses": _objects("StorageClass"),
    "csinodes": _objects("CSINode"),
}

def _events(*specs: _Events) -> Mapping[str, _Events]:
    return {spec.kind: spec for spec in specs}


_EVENTS: Mapping[str, Mapping[str, _Events]] = {
    "decisions": _events(_Events(Decision.__table__, "SchedulingDecision", _decision_row),
                         _Events(Eviction.__table__, "Eviction", _eviction_row)),
    "noderesources": _events(_Events(NodeResource.__table__, "NodeResource", _node_resource_row)),
    "quotastatus": _events(_Events(QuotaStatus.__table__, "ElasticQuotaStatus", _quota_status_row)),
    "acks": _events(_Events(Ack.__table__, "Ack", _ack_row)),
    "actuations": _events(_Events(Actuation.__table__, "Actuation", _actuation_row)),
    "actuation-acks": _events(_Events(ActuationAck.__table__, "ActuationAck", _actuation_ack_row)),
    "deadletters": _events(_Events(DeadLetter.__table__, "DeadLetter", _dead_letter_row)),
}
"""Event topic -> the record kinds it carries -> their table (evictions share the decisions topic)."""

_INSERTS = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}


class Projector:
    """Writes batches of decoded records into the read model of `engine`.

    `topics` maps logical topic names to real ones (see state.topics); unspecified names keep
    their defaults.
    """

    def __init__(self, engine: Engine, topics: Mapping[str, str] | None = None) -> None:
        if engine.dialect.name not in _INSERTS:
            raise ValueError(f"read model supports {sorted(_INSERTS)}, not {engine.dialect.name!r}")
        self._engine = engine
        self._insert = _INSERTS[engine.dialect.name]
        self.topics = resolve_topics(topics)
        self._logical = {real: logical for logical, real in self.topics.items()}

    def apply(self, batch: Sequence[ProjectedRecord]) -> "Applied":
        """Project `batch`, in one transaction unless that fails (then record by record); return how
        many records were projected and the dead letters written for the rest. Applying the same
        batch again leaves the same rows."""
        prepared = [self._prepare(record) for record in batch]
        try:
            with self._engine.begin() as connection:
                self._write(connection, prepared)
        except DATABASE_UNAVAILABLE:
            raise
        except Exception as error:
            logger.warning("read model could not write a batch of %d records (%s: %s); writing them one by one",
                           len(prepared), type(error).__name__, error)
            prepared = [self._write_alone(item) for item in prepared]
        return Applied(sum(item.dead_letter is None for item in prepared),
                       tuple(item.dead_letter for item in prepared if item.dead_letter is not None))

    def _prepare(self, record: ProjectedRecord) -> "_Prepared":
        logical = self._logical.get(record.topic)
        reason = _reject_reason(logical, record)
        if reason is None:
            try:
                return _Prepared(record, logical, *self._row(logical, record))
            except Exception as error:
                reason = f"its row cannot be built: {type(error).__name__}: {error}"
        return _rejected(record, logical, reason)

    @staticmethod
    def _row(logical: str, record: ProjectedRecord) -> tuple[Table, Row, bool]:
        """The table, row and whether it is a latest-state upsert (else an event insert)."""
        if logical in _LATEST_STATE:
            spec = _LATEST_STATE[logical]
            build = spec.tombstone_row if record.is_tombstone else spec.row
            return spec.table, build(logical, record), True
        spec = _EVENTS[logical][record.schema]
        return spec.table, spec.row(record), False

    def _write(self, connection: Connection, prepared: Sequence["_Prepared"]) -> None:
        latest: dict[str, dict[tuple, _Prepared]] = {}
        events: dict[Table, dict[tuple, Row]] = {}
        for item in prepared:
            if item.latest:
                newest = latest.setdefault(item.logical, {})
                key = _primary_key(item.table, item.row)
                if key not in newest or newest[key].record.offset <= item.record.offset:
                    newest[key] = item
            else:
                events.setdefault(item.table, {}).setdefault(_primary_key(item.table, item.row), item.row)
        for logical, items in latest.items():
            for tombstones in (False, True):
                rows = [item.row for item in items.values() if item.record.is_tombstone == tombstones]
                if rows:
                    self._upsert_latest(connection, logical, rows)
        for table, rows in events.items():
            statement = self._insert(table).on_conflict_do_nothing(
                index_elements=[column.name for column in table.primary_key])
            connection.execute(statement, list(rows.values()))
        if prepared:
            note_last_record(connection, max(item.record.timestamp_ms for item in prepared))

    def _write_alone(self, item: "_Prepared") -> "_Prepared":
        """Write one prepared record in its own transaction; dead-letter it when that fails."""
        try:
            with self._engine.begin() as connection:
                self._write(connection, [item])
            return item
        except DATABASE_UNAVAILABLE:
            raise
        except Exception as error:
            if item.dead_letter is not None:
                raise
            rejected = _rejected(item.record, item.logical,
                                 f"the read model cannot store it: {type(error).__name__}: {error}")
            with self._engine.begin() as connection:
                self._write(connection, [rejected])
            return rejected

    def _upsert_latest(self, connection: Connection, logical: str, rows: list[Row]) -> None:
        spec = _LATEST_STATE[logical]
        statement = self._insert(spec.table)
        updated = [name for name in rows[0] if name not in spec.key_columns]
        statement = statement.on_conflict_do_update(
            index_elements=list(spec.key_columns),
            set_={name: statement.excluded[name] for name in updated},
            where=spec.table.c.source_offset <= statement.excluded.source_offset,
        )
        connection.execute(statement, rows)


@dataclass(frozen=True)
class Applied:
    """What one `Projector.apply` did: records projected, and the dead letters (DeadLetter record
    layout, ``streams.deadletter``) written for the others."""

    projected: int
    dead_letters: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class _Prepared:
    """A record with the row it becomes: its own (`dead_letter` None) or, when rejected, a dead-letter row."""

    record: ProjectedRecord
    logical: str | None
    table: Table
    row: Row
    latest: bool
    dead_letter: dict[str, Any] | None = None


def _rejected(record: ProjectedRecord, logical: str | None, reason: str) -> _Prepared:
    key = record.raw_key if record.raw_key is not None else (record.key.encode() if record.key is not None else None)
    letter = dead_letter_record(STAGE, record.topic, record.partition, record.offset, key, record.raw,
                                _printable(reason), record.timestamp_ms)
    logger.warning("read model dead-letters %s[%d]@%d: %s", record.topic, record.partition, record.offset, reason)
    return _Prepared(record, logical, DeadLetter.__table__, _dead_letter_values(letter), False, letter)


def _printable(text: str) -> str:
    """`text` without NUL characters, which PostgreSQL text columns refuse."""
    return text.replace("\x00", "\\x00")


def _primary_key(table: Table, row: Row) -> tuple:
    return tuple(row[column.name] for column in table.primary_key)


def _reject_reason(logical: str | None, record: ProjectedRecord) -> str | None:
    """Why the read model cannot represent `record`, or None when it can."""
    if record.problem is not None:
        return record.problem
    if logical in _LATEST_STATE:
        if record.key is None:
            return "key is not UTF-8" if record.raw_key is not None else "record without key"
        if record.is_tombstone:
            return None
        kinds = _LATEST_STATE[logical].kinds
    elif logical in _EVENTS:
        if record.is_tombstone:
            return "tombstone on an event topic"
        kinds = frozenset(_EVENTS[logical])
    else:
        return "topic is not projected"
    if record.value is None:
        return "value was not decoded"
    if record.schema not in kinds:
        return f"unexpected schema {record.schema!r}"
    return None
