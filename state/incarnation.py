"""Which cluster incarnation a read model was projected from, and starting a clean one on a change.

A read model is keyed by Kafka offsets and by event ids derived from them; both start again at 0 on
a new cluster (a new embedded broker) or on re-created topics, where new rows would collide with the
old ones and be dropped, while `koord get` kept showing the old cluster. So the read model records the
incarnation (``streams.broker.incarnation``) of the topics it projects, and the projection, on start,
compares it with the broker's: on a difference it starts a clean read model.

- SQLite (the embedded default, one file per KOORD_HOME): the old file (and its WAL) is renamed
  aside with the old cluster id and incarnation token in its name, then a new file is created, so
  nothing is lost and the old cluster can still be inspected with KOORD_DATABASE_URL.
- PostgreSQL (and SQLite in memory): every table is emptied in one transaction that also records the
  new incarnation, so a reader sees either the old read model or the new empty one, never a mix. A
  schema per incarnation would keep the old rows, but every reader would have to find the current
  schema and old ones would pile up unbounded; the read model holds nothing the topics do not, and an
  incarnation change on a durable cluster means its topics were deleted and re-created, which is an
  operator's action that database backups, not the read model, are for.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from pathlib import Path

from sqlalchemy import Engine, delete, insert, select, text, update
from sqlalchemy.engine import URL, make_url

from state.db import SchemaVersionError, create_all, open_database
from state.models import Base, SchemaVersion, SourceCluster
from streams.broker.incarnation import Incarnation

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Recorded:
    """The incarnation a read model records, where it was first projected from, and its newest record."""

    incarnation: Incarnation
    bootstrap: str
    last_record_ms: int | None

    def describe(self) -> str:
        last = "none yet" if self.last_record_ms is None else time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.last_record_ms / 1000))
        return f"cluster {self.incarnation.cluster_id} (projected from {self.bootstrap}, its last record {last})"


@dataclasses.dataclass(frozen=True)
class Adoption:
    """What `adopt` found: the engine to write with, whether the read model holds no record yet (new,
    started clean, or adopted by `koord up` just before: the projection then reads its topics from
    the beginning, whatever its consumer group committed), and when a clean one was started, why,
    the incarnation it replaced (None for a SQLite file of another schema version) and where the old
    one is kept (None on PostgreSQL, where it was cleared)."""

    engine: Engine
    fresh: bool
    replaced: Recorded | None = None
    kept_at: str | None = None
    reason: str | None = None

    def describe(self, current: Incarnation, bootstrap: str) -> str:
        """One line for the log, or '' when nothing was replaced."""
        if self.reason is None:
            return ""
        kept = f"the old one is kept at {self.kept_at}" if self.kept_at else "the old one was cleared"
        if self.replaced is None:
            return f"the read model {self.reason}; starting a clean read model, {kept}"
        return (f"the read model was of {self.replaced.describe()}, not of {current.describe()} at {bootstrap} "
                f"({self.reason}); starting a clean read model, {kept}")


def recorded(engine: Engine) -> Recorded | None:
    """The incarnation the read model of `engine` records, None when it records none (a new read model)."""
    with engine.connect() as connection:
        row = connection.execute(select(SourceCluster).where(SourceCluster.id == 1)).first()
    if row is None:
        return None
    return Recorded(Incarnation(row.cluster_id, tuple(sorted((row.topic_ids or {}).items()))), row.bootstrap,
                    row.last_record_ms)


def difference(old: Incarnation, new: Incarnation) -> str | None:
    """Why records of `new` cannot go on a read model of `old`, or None when they can.

    A topic `old` names without an id, or that only `new` names, is no difference: the read model
    holds nothing of it yet (it did not exist, or the broker gives no topic ids)."""
    if old.cluster_id != new.cluster_id:
        return f"cluster id {old.cluster_id} is now {new.cluster_id}"
    old_ids, new_ids = dict(old.topic_ids), dict(new.topic_ids)
    changed = sorted(name for name, topic_id in old_ids.items() if topic_id and new_ids.get(name) != topic_id)
    if changed:
        return f"topics {', '.join(changed)} were re-created or deleted"
    return None


def merged(old: Incarnation, new: Incarnation) -> Incarnation:
    """`old` with the ids of topics only `new` knows (topics created since the read model began)."""
    return Incarnation(old.cluster_id, tuple(sorted({**dict(new.topic_ids), **dict(old.topic_ids)}.items())))


def adopt(url: str | URL, current: Incarnation, bootstrap: str) -> Adoption:
    """Open the read model at `url` for projecting the topics of `current`: record `current` in a new
    read model, keep one of the same incarnation, start a clean one in place of one of another. A
    SQLite file of another schema version is set aside the same way (it holds nothing the topics do
    not); on PostgreSQL that stays a SchemaVersionError, as dropping tables is the operator's call."""
    engine = open_database(url)
    try:
        create_all(engine)
    except SchemaVersionError as error:
        path = _sqlite_file(engine.url)
        if path is None:
            engine.dispose()
            raise
        kept = _set_aside(engine, path, f"schema-v{error.found}")
        engine = open_database(url)
        create_all(engine)
        _record(engine, current, bootstrap, clear=False)
        found_text = "no schema version" if error.found is None else f"schema version {error.found}"
        return Adoption(engine, fresh=True, kept_at=str(kept),
                        reason=f"had {found_text}, this koordstream uses {error.expected}")
    found = recorded(engine)
    if found is None:
        _record(engine, current, bootstrap, clear=False)
        return Adoption(engine, fresh=True)
    reason = difference(found.incarnation, current)
    if reason is None:
        if merged(found.incarnation, current) != found.incarnation:
            with engine.begin() as connection:
                connection.execute(update(SourceCluster).where(SourceCluster.id == 1).values(
                    topic_ids=dict(merged(found.incarnation, current).topic_ids)))
        return Adoption(engine, fresh=found.last_record_ms is None)
    path = _sqlite_file(engine.url)
    if path is None:
        _record(engine, current, bootstrap, clear=True)
        return Adoption(engine, fresh=True, replaced=found, reason=reason)
    kept = _set_aside(engine, path, f"{found.incarnation.cluster_id}.{found.incarnation.token()}")
    engine = open_database(url)
    create_all(engine)
    _record(engine, current, bootstrap, clear=False)
    return Adoption(engine, fresh=True, replaced=found, kept_at=str(kept), reason=reason)


def note_last_record(connection, timestamp_ms: int) -> None:
    """Advance the recorded newest record time to `timestamp_ms` (inside the caller's transaction)."""
    connection.execute(update(SourceCluster).where(
        SourceCluster.id == 1,
        (SourceCluster.last_record_ms.is_(None)) | (SourceCluster.last_record_ms < timestamp_ms),
    ).values(last_record_ms=timestamp_ms))


def _record(engine: Engine, current: Incarnation, bootstrap: str, clear: bool) -> None:
    with engine.begin() as connection:
        if clear:
            for table in reversed(Base.metadata.sorted_tables):
                if table is not SchemaVersion.__table__:
                    connection.execute(delete(table))
        connection.execute(insert(SourceCluster).values(
            id=1, cluster_id=current.cluster_id, topic_ids=dict(current.topic_ids), bootstrap=bootstrap,
            recorded_ms=int(time.time() * 1000), last_record_ms=None))


def _sqlite_file(url: URL) -> Path | None:
    url = make_url(url)
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:" \
            or url.database.startswith("file:"):
        return None
    return Path(url.database)


def _set_aside(engine: Engine, path: Path, label: str) -> Path:
    """Rename the SQLite file at `path` (with its WAL and shared-memory files) to a name carrying
    `label` (what it was: its cluster id and incarnation token, or its schema version); return the
    new path."""
    with engine.connect() as connection:
        connection.execute(text("PRAGMA wal_checkpoint(TRUNCATE)"))
    engine.dispose()
    label = re.sub(r"[^A-Za-z0-9_.-]", "_", label)
    target = path.with_name(f"{path.stem}.{label}{path.suffix}")
    number = 1
    while target.exists():
        target = path.with_name(f"{path.stem}.{label}.{number}{path.suffix}")
        number += 1
    path.rename(target)
    for suffix in ("-wal", "-shm"):
        companion = path.with_name(path.name + suffix)
        if companion.exists():
            companion.rename(target.with_name(target.name + suffix))
    logger.info("read model %s set aside as %s", path, target)
    return target
