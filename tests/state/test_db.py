"""Tests of state.db: opening, creating and version-checking the read model."""

import pytest
from sqlalchemy import inspect, text, update

from state.db import SCHEMA_VERSION, SchemaVersionError, create_all, open_database
from state.models import Base, SchemaVersion


def test_create_all_creates_tables_and_records_version(engine):
    create_all(engine)
    create_all(engine)

    with engine.connect() as connection:
        assert set(inspect(connection).get_table_names()) == set(Base.metadata.tables)
        assert connection.execute(text("SELECT id, version FROM schema_version")).all() == [(1, SCHEMA_VERSION)]


def test_other_schema_version_is_refused_with_rebuild_hint(engine):
    create_all(engine)
    with engine.begin() as connection:
        connection.execute(update(SchemaVersion).values(version=SCHEMA_VERSION + 1))

    with pytest.raises(SchemaVersionError, match="re-project") as raised:
        create_all(engine)

    assert (raised.value.found, raised.value.expected) == (SCHEMA_VERSION + 1, SCHEMA_VERSION)
    assert ("delete the SQLite file" if engine.dialect.name == "sqlite" else "drop the read-model tables") in str(
        raised.value
    )


def test_unversioned_tables_are_refused(engine):
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE pods (key VARCHAR PRIMARY KEY)"))

    with pytest.raises(SchemaVersionError, match="no schema version"):
        create_all(engine)


def test_sqlite_reads_while_a_write_is_open(tmp_path):
    url = f"sqlite:///{tmp_path / 'nested' / 'koord.db'}"
    writer, reader = open_database(url), open_database(url)
    create_all(writer)

    with writer.begin() as writing:
        writing.execute(text("INSERT INTO schema_version (id, version) VALUES (2, 0)"))
        with reader.connect() as reading:
            assert reading.execute(text("PRAGMA journal_mode")).scalar() == "wal"
            assert reading.execute(text("PRAGMA busy_timeout")).scalar() == 30_000
            assert reading.execute(text("SELECT count(*) FROM schema_version")).scalar() == 1
    writer.dispose()
    reader.dispose()



def test_concurrent_creators_all_end_with_one_complete_read_model(database_url):
    """The projection and a `koord get` may both open a fresh read model at once."""
    import threading

    from sqlalchemy import func, select

    from state.db import create_all, open_database
    from state.models import SchemaVersion

    errors = []

    def create():
        try:
            create_all(open_database(database_url))
        except Exception as error:  # noqa: BLE001 - collected and asserted below
            errors.append(error)

    threads = [threading.Thread(target=create) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with open_database(database_url).connect() as connection:
        assert connection.scalar(select(func.count()).select_from(SchemaVersion)) == 1
