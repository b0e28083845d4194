"""Open the read-model database and create or verify its tables.

The schema is managed by `create_all` plus a version check instead of migrations (Alembic):
the read model holds nothing that is not on the Kafka topics, so when its layout changes the
cheapest correct upgrade is to drop it and re-project the topics. A migration chain would be code
to write and test for data that can always be rebuilt. SCHEMA_VERSION is bumped on every layout
change, and a database at another version is refused with instructions instead of being read
wrongly.

SQLite (the embedded default) runs in WAL mode with a busy timeout so `koord get` can read while
the projector writes; PostgreSQL is the production backend.
"""

import time
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, inspect, insert, select
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

from state.models import Base, SchemaVersion

SCHEMA_VERSION = 9
SQLITE_BUSY_TIMEOUT_MS = 30_000
"""How long a SQLite connection waits for a lock before failing: long enough to outlast one
projector batch, short enough that a stuck writer surfaces as an error."""


class SchemaVersionError(RuntimeError):
    """The database holds a read model of another schema version (or an unversioned one)."""

    def __init__(self, found: int | None, url: URL) -> None:
        self.found = found
        self.expected = SCHEMA_VERSION
        if url.get_backend_name() == "sqlite":
            remedy = f"delete the SQLite file {url.database!r}"
        else:
            remedy = "drop the read-model tables (or the schema holding them)"
        found_text = "no schema version" if found is None else f"schema version {found}"
        super().__init__(
            f"read model at {url.render_as_string(hide_password=True)} has {found_text}, "
            f"this koordstream expects version {SCHEMA_VERSION}. The read model is rebuilt from "
            f"the Kafka topics: {remedy} and restart the projector to re-project."
        )


def sqlite_url(path: str | Path) -> str:
    """The SQLAlchemy URL of a SQLite file."""
    return f"sqlite:///{Path(path)}"


def open_database(url: str | URL) -> Engine:
    """Return an Engine for `url`; for a SQLite file, create its folder and enable WAL."""
    url = make_url(url)
    if url.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True)
    if url.database and url.database != ":memory:" and not url.database.startswith("file:"):
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url)
    event.listen(engine, "connect", _configure_sqlite)
    return engine


def _configure_sqlite(dbapi_connection, _connection_record) -> None:
    """WAL lets readers run beside the writer; synchronous=NORMAL is safe under WAL and may lose
    only the last transactions on power loss, which re-projection restores."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


CREATE_ATTEMPTS = 30
CREATE_RETRY_S = 0.1


class _BeingCreated(Exception):
    """Tables exist without a version row: another process is creating the read model."""


def create_all(engine: Engine) -> None:
    """Create the tables and record SCHEMA_VERSION on an empty database; on a populated one,
    check the version. Raises SchemaVersionError when it differs or is missing.

    Several processes may start on the same empty database (the projection and a `koord get`):
    the one that loses the race gets an error or sees tables without a version row, waits and
    checks again, for up to CREATE_ATTEMPTS x CREATE_RETRY_S."""
    for _ in range(CREATE_ATTEMPTS - 1):
        try:
            return _create_or_check(engine, final=False)
        except (_BeingCreated, OperationalError, ProgrammingError, IntegrityError):
            time.sleep(CREATE_RETRY_S)
    _create_or_check(engine, final=True)


def _create_or_check(engine: Engine, final: bool) -> None:
    with engine.begin() as connection:
        existing = set(inspect(connection).get_table_names()) & set(Base.metadata.tables)
        if SchemaVersion.__tablename__ in existing:
            found = connection.scalar(select(SchemaVersion.version))
            if found is None and not final:
                raise _BeingCreated()
            if found != SCHEMA_VERSION:
                raise SchemaVersionError(found, engine.url)
            return
        if existing:
            if not final:
                raise _BeingCreated()
            raise SchemaVersionError(None, engine.url)
        Base.metadata.create_all(connection)
        connection.execute(insert(SchemaVersion).values(id=1, version=SCHEMA_VERSION))
