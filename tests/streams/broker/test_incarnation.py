"""Incarnations on real brokers: a topic created anew, or a new embedded broker, is a new incarnation."""

import asyncio

import pytest

from streams.broker import incarnation as inc
from streams.broker import local
from streams.kafka import admin_client
from streams.topology import load_topology


@pytest.fixture(scope="module")
def broker(tmp_path_factory, broker_kind):
    started = local.start(broker_kind, tmp_path_factory.mktemp("incarnation"), load_topology(), 1)
    try:
        yield started
    finally:
        started.stop()


def _incarnation(bootstrap: str, topics: list[str]) -> inc.Incarnation:
    async def ask() -> inc.Incarnation:
        async with admin_client(bootstrap) as admin:
            return await inc.incarnation(admin, topics)

    return asyncio.run(ask())


def test_gives_the_cluster_id_and_topic_ids(broker):
    names = load_topology().names()
    found = _incarnation(broker.bootstrap, [names["pods"], names["decisions"], "no-such-topic"])
    assert found.cluster_id
    assert found.topic_id(names["pods"]) and found.topic_id(names["decisions"])
    assert found.topic_id(names["pods"]) != found.topic_id(names["decisions"])
    assert found.topic_id("no-such-topic") == ""
    assert _incarnation(broker.bootstrap, [names["pods"], names["decisions"]]) == found


async def _known(admin, topic: str) -> inc.Incarnation:
    """The incarnation once the new topic's metadata has reached the broker asked."""
    for _ in range(100):
        found = await inc.incarnation(admin, [topic])
        if found.topic_id(topic):
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"{topic} never showed a topic id")


def test_a_topic_created_anew_is_a_new_incarnation(broker):
    from aiokafka.admin import NewTopic

    async def recreate() -> None:
        async with admin_client(broker.bootstrap) as admin:
            await admin.create_topics([NewTopic("incarnation-probe", 1, 1)])
            before = await _known(admin, "incarnation-probe")
            await admin.delete_topics(["incarnation-probe"])
            for _ in range(100):
                await asyncio.sleep(0.2)
                answer = await admin.create_topics([NewTopic("incarnation-probe", 1, 1)])
                if answer.topic_errors[0][1] == 0:
                    break
            after = await _known(admin, "incarnation-probe")
            assert before.topic_id("incarnation-probe") and after.topic_id("incarnation-probe")
            assert before.token() != after.token()

    asyncio.run(recreate())


def test_token_is_stable_and_names_only_the_topics_asked():
    one = inc.Incarnation("c1", (("a", "id-a"), ("b", "id-b")))
    assert one.token(["a"]) == inc.Incarnation("c1", (("a", "id-a"),)).token(["a"])
    assert one.token(["a"]) != inc.Incarnation("c2", (("a", "id-a"),)).token(["a"])
    assert inc.Incarnation.from_record(one.to_record()) == one


def test_each_embedded_broker_has_its_own_cluster_id():
    assert inc.new_cluster_id() != inc.new_cluster_id()
