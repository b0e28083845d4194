"""Tests of state.incarnation: a read model of another cluster incarnation is set aside, never written on."""

from pathlib import Path

import pytest
from sqlalchemy import select, update
from sqlalchemy.engine import make_url

from state.db import SCHEMA_VERSION, SchemaVersionError, create_all, open_database
from state.incarnation import adopt, difference, recorded
from state.models import Pod, SchemaVersion
from state.projection import Projector
from state.queries import get_pods
from streams.broker.incarnation import Incarnation

OLD = Incarnation("koord-old", (("koord.nodes", "11111111-0000-0000-0000-000000000000"),
                                ("koord.pods", "22222222-0000-0000-0000-000000000000")))
NEW = Incarnation("koord-new", (("koord.nodes", "33333333-0000-0000-0000-000000000000"),
                                ("koord.pods", "44444444-0000-0000-0000-000000000000")))


def test_a_new_read_model_records_the_incarnation_and_is_fresh(database_url):
    adoption = adopt(database_url, OLD, "127.0.0.1:9092")
    try:
        assert adoption.fresh and adoption.replaced is None
        found = recorded(adoption.engine)
        assert (found.incarnation, found.bootstrap, found.last_record_ms) == (OLD, "127.0.0.1:9092", None)
    finally:
        adoption.engine.dispose()
    again = adopt(database_url, OLD, "127.0.0.1:9092")
    again.engine.dispose()
    assert again.fresh and again.replaced is None, "nothing projected yet: still read from the beginning"


def test_the_same_incarnation_keeps_the_read_model_and_learns_new_topics(database_url, records):
    first = adopt(database_url, OLD, "b:1")
    Projector(first.engine).apply([records.pod("web", 7)])
    first.engine.dispose()
    with_new_topic = Incarnation(OLD.cluster_id, (*OLD.topic_ids, ("koord.quotas", "55555555-0000-0000-0000-000000000000")))

    again = adopt(database_url, with_new_topic, "b:2")
    try:
        assert not again.fresh and again.replaced is None
        assert [pod["metadata"]["name"] for pod in get_pods(again.engine)] == ["web"]
        found = recorded(again.engine)
        assert found.incarnation == with_new_topic and found.bootstrap == "b:1"
        assert found.last_record_ms == records.pod("web", 7).timestamp_ms
    finally:
        again.engine.dispose()


def test_another_incarnation_starts_a_clean_read_model_and_keeps_the_old_one_apart(database_url, records):
    first = adopt(database_url, OLD, "b:1")
    Projector(first.engine).apply([records.pod("web", 7)])
    first.engine.dispose()

    adoption = adopt(database_url, NEW, "b:2")
    try:
        assert adoption.fresh and adoption.replaced.incarnation == OLD
        assert "cluster id koord-old is now koord-new" in adoption.describe(NEW, "b:2")
        assert get_pods(adoption.engine) == []
        assert recorded(adoption.engine).incarnation == NEW
        if adoption.engine.dialect.name == "sqlite":
            kept = Path(adoption.kept_at)
            assert kept.name == f"koord.koord-old.{OLD.token()}.db"
            assert kept.parent == Path(make_url(database_url).database).parent
            old = open_database(f"sqlite:///{kept}")
            with old.connect() as connection:
                assert connection.scalars(select(Pod.key)).all() == ["default/web"]
            old.dispose()
        else:
            assert adoption.kept_at is None and "the old one was cleared" in adoption.describe(NEW, "b:2")
    finally:
        adoption.engine.dispose()


def test_difference_names_what_changed():
    assert difference(OLD, OLD) is None
    assert difference(OLD, NEW) == "cluster id koord-old is now koord-new"
    recreated = Incarnation(OLD.cluster_id, (OLD.topic_ids[0], ("koord.pods", "99999999-0000-0000-0000-000000000000")))
    assert difference(OLD, recreated) == "topics koord.pods were re-created or deleted"
    assert difference(OLD, Incarnation(OLD.cluster_id, OLD.topic_ids[:1])) == \
        "topics koord.pods were re-created or deleted"
    assert difference(Incarnation("c"), Incarnation("c", OLD.topic_ids)) is None, "topics without ids are no difference"


def test_a_sqlite_read_model_of_another_schema_version_is_set_aside_and_postgresql_refused(database_url, records):
    engine = open_database(database_url)
    create_all(engine)
    with engine.begin() as connection:
        connection.execute(update(SchemaVersion).values(version=SCHEMA_VERSION - 1))
    engine.dispose()

    if make_url(database_url).get_backend_name() != "sqlite":
        with pytest.raises(SchemaVersionError):
            adopt(database_url, OLD, "b:1")
        return
    adoption = adopt(database_url, OLD, "b:1")
    try:
        assert adoption.fresh and Path(adoption.kept_at).name == f"koord.schema-v{SCHEMA_VERSION - 1}.db"
        assert f"had schema version {SCHEMA_VERSION - 1}" in adoption.describe(OLD, "b:1")
        assert recorded(adoption.engine).incarnation == OLD
    finally:
        adoption.engine.dispose()
