"""The bench harness names the broker it ran on; with KOORD_BROKER set it uses that one as it is. Its clock
stops at the first poll that finds a topic, and every topic before it, committed (``wait_caught_up``)."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import NewTopic
from aiokafka.structs import OffsetAndMetadata

from streams import kafka
from streams.bench import harness
from streams.broker import local
from streams.kafka import admin_client, produce
from streams.settings import Settings


@pytest.mark.parametrize("env, kind, described", [
    pytest.param({"KOORD_BROKER": "10.0.0.1:9092"}, "kafka", "KOORD_BROKER 10.0.0.1:9092 (kafka)",
                 id="kind-unset-means-kafka"),
    pytest.param({"KOORD_BROKER": "10.0.0.1:9092", "KOORD_BROKER_KIND": "tansu"}, "tansu",
                 "KOORD_BROKER 10.0.0.1:9092 (tansu)", id="kind-from-environment"),
])
def test_existing_broker_is_used_whatever_kind_was_asked(env, kind, described):
    with harness.running("tansu", Settings.from_env(env)) as running:
        assert (running.bootstrap, running.broker_kind, running.broker_origin) == ("10.0.0.1:9092", kind,
                                                                                   "KOORD_BROKER")
        assert running.describe() == described


@pytest.fixture(scope="module")
def broker(tmp_path_factory, broker_kind):
    started = local.start(broker_kind, tmp_path_factory.mktemp("harness"))
    try:
        yield started
    finally:
        started.stop()


async def _chain(bootstrap: str, name: str, records: int) -> tuple[TopicPartition, TopicPartition]:
    """Topics ``<name>-up`` and ``<name>-down`` of one partition, each holding ``records`` records."""
    up, down = TopicPartition(f"{name}-up", 0), TopicPartition(f"{name}-down", 0)
    async with admin_client(bootstrap) as admin:
        await admin.create_topics([NewTopic(tp.topic, 1, 1) for tp in (up, down)])
    await produce(bootstrap, [(tp.topic, "k", b"x") for tp in (up, down) for _ in range(records)])
    return up, down


async def _commit(bootstrap: str, group: str, offsets: dict[TopicPartition, int]) -> float:
    """Commit ``offsets`` for ``group``; returns the ``time.monotonic()`` just before."""
    consumer = AIOKafkaConsumer(**kafka.client_settings(bootstrap), group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign(list(offsets))
        before = time.monotonic()
        await consumer.commit({tp: OffsetAndMetadata(offset, "") for tp, offset in offsets.items()})
        return before
    finally:
        await consumer.stop()


def _wait_across(bootstrap: str, name: str, first: tuple[int, int], then: tuple[int, int]) -> tuple[float, dict]:
    """Over a chain of two topics of 3 records each, commit ``first`` (offsets of up and down), start
    ``wait_caught_up``, commit ``then`` 4 s later; returns when ``then`` was committed and what the wait returned.
    The wait's first poll comes well within the 4 s."""
    async def run():
        up, down = await _chain(bootstrap, name, 3)
        await _commit(bootstrap, name, dict(zip((up, down), first)))
        waiting = asyncio.ensure_future(harness.wait_caught_up(bootstrap, [up.topic, down.topic], name, timeout_s=60))
        await asyncio.sleep(4)
        assert not waiting.done()
        return await _commit(bootstrap, name, dict(zip((up, down), then))), await waiting

    return asyncio.run(run())


def test_each_topic_is_through_at_the_first_poll_that_finds_it_and_all_before_it_committed(broker):
    committed_up, through = _wait_across(broker.bootstrap, "order", (2, 3), (3, 3))
    assert through["order-down"] == through["order-up"] > committed_up


def test_an_upstream_topic_is_through_before_a_downstream_one_is(broker):
    committed_down, through = _wait_across(broker.bootstrap, "stages", (3, 2), (3, 3))
    assert through["stages-up"] < committed_down < through["stages-down"]


def test_a_group_whose_offsets_stop_moving_is_stalled(broker):
    async def run():
        up, down = await _chain(broker.bootstrap, "stalled", 2)
        await _commit(broker.bootstrap, "stalled", {up: 2, down: 1})
        await harness.wait_caught_up(broker.bootstrap, [up.topic, down.topic], "stalled", timeout_s=60, stall_s=1.0)

    with pytest.raises(TimeoutError, match=r"stalled stalled on stalled-up, stalled-down: its committed offsets "
                                           r"did not move for 1s \(1 records behind"):
        asyncio.run(run())


def test_each_topic_is_read_from_the_group_that_commits_it(broker):
    """With one worker per role, each topic of a chain is committed by the group of the role that reads it: the
    wait reads each topic's offsets from its own group, and is not through while one group is behind."""
    async def run():
        up, down = await _chain(broker.bootstrap, "roles", 2)
        groups = {up.topic: "roles-router", down.topic: "roles-node"}
        await _commit(broker.bootstrap, "roles-router", {up: 2})
        await _commit(broker.bootstrap, "roles-node", {down: 1})
        waiting = asyncio.ensure_future(harness.wait_caught_up(broker.bootstrap, [up.topic, down.topic],
                                                               groups.__getitem__, timeout_s=60))
        await asyncio.sleep(2)
        assert not waiting.done()
        committed = await _commit(broker.bootstrap, "roles-node", {down: 2})
        return committed, await waiting

    committed, through = asyncio.run(run())
    assert through["roles-up"] < committed < through["roles-down"]


def test_process_cpu_counts_a_busy_child_and_nothing_for_a_gone_one():
    """The per-event CPU figure reads the kernel's accounting of the worker: a child that spins for 0.3 s of
    CPU shows at least that much (clock ticks are 10 ms), a process that is gone shows 0."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c",
                              "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"
                              "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while harness.process_cpu_s(child.pid) < 0.3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert 0.3 <= harness.process_cpu_s(child.pid) < 30
    finally:
        child.communicate(b"")
    assert harness.process_cpu_s(child.pid) == 0.0
