"""Faust's stream livelock ERROR on a stand-in consumer thread with Faust's own logging methods: a WARNING
naming the catch-up while the stream reading the partition takes events of its other topics, once per
partition and timeout; Faust's ERROR when that stream took nothing within the timeout. A transactional
commit stamps the commit time Faust's detector reads."""

from __future__ import annotations

import asyncio
from time import monotonic
from types import SimpleNamespace

import pytest
from faust.transport.drivers import aiokafka as driver
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread
from faust.types import TP

from streams.faustcompat.livelock import (install_catch_up_warnings, install_transactional_commit_times,
                                          stamp_transactional_commits, warn_on_catch_up)

TIMEOUT = 300.0
USAGES, DECISIONS, INBOX = TP("koord.nodeusages", 2), TP("koord.decisions", 0), TP("koord.inbox.node", 0)


class Log:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def error(self, msg, *args) -> None:
        self.lines.append(("ERROR", msg % args))

    def warning(self, msg, *args) -> None:
        self.lines.append(("WARNING", msg % args))


def _thread(inbound: dict) -> object:
    class Thread:
        _log_slow_processing_stream = AIOKafkaConsumerThread._log_slow_processing_stream
        _log_slow_processing = AIOKafkaConsumerThread._log_slow_processing
        _make_slow_processing_error = AIOKafkaConsumerThread._make_slow_processing_error

    warn_on_catch_up(Thread)
    thread = Thread()
    router = SimpleNamespace(topics=("koord.nodeusages", "koord.decisions"))
    node = SimpleNamespace(topics=("koord.inbox.node",))
    app = SimpleNamespace(monitor=SimpleNamespace(stream_inbound_time=inbound),
                          topics=SimpleNamespace(_topic_name_index={"koord.nodeusages": [router],
                                                                    "koord.decisions": [router],
                                                                    "koord.inbox.node": [node]}),
                          conf=SimpleNamespace(stream_processing_timeout=TIMEOUT))
    thread.consumer, thread.tp_stream_timeout_secs, thread.log = SimpleNamespace(app=app), TIMEOUT, Log()
    return thread


def test_a_partition_behind_its_streams_backlog_is_a_warning_once_per_timeout():
    thread = _thread({DECISIONS: monotonic() - 0.5})
    for _ in range(3):
        thread._log_slow_processing_stream(driver.SLOW_PROCESSING_STREAM_IDLE_SINCE_START, USAGES, "6 minutes ago")
    assert len(thread.log.lines) == 1
    level, line = thread.log.lines[0]
    assert level == "WARNING"
    assert line.startswith("TP(topic='koord.nodeusages', partition=2): no event of it has reached a stream since "
                           "the worker started 6 minutes ago, while the stream reading it took an event ")
    assert line.endswith("its records wait behind the backlog of the other partitions that stream reads "
                         "(a catch-up), it is not stuck")


def test_a_stopped_partition_behind_a_backlog_says_when_its_last_event_was():
    thread = _thread({DECISIONS: monotonic(), USAGES: monotonic() - 400})
    thread._log_slow_processing_stream(driver.SLOW_PROCESSING_STREAM_IDLE, USAGES, "6 minutes ago")
    assert [level for level, _ in thread.log.lines] == ["WARNING"]
    assert "its last event reached a stream 6 minutes ago" in thread.log.lines[0][1]


@pytest.mark.parametrize("inbound", [
    pytest.param({}, id="no-stream-took-anything"),
    pytest.param({DECISIONS: monotonic() - 2 * TIMEOUT}, id="its-stream-took-nothing-within-the-timeout"),
    pytest.param({INBOX: monotonic()}, id="only-another-stream-is-busy"),
])
def test_a_stream_that_takes_nothing_keeps_fausts_error(inbound):
    thread = _thread(inbound)
    thread._log_slow_processing_stream(driver.SLOW_PROCESSING_STREAM_IDLE_SINCE_START, USAGES, "6 minutes ago")
    [(level, line)] = thread.log.lines
    assert level == "ERROR"
    assert line.startswith("Stream has not started processing TP(topic='koord.nodeusages', partition=2) "
                           "(started 6 minutes ago).")


def _consumer(in_transaction: bool, did_commit: bool):
    class Consumer:
        async def _commit_offsets(self, offsets, start_new_transaction=True):
            return did_commit

        def assignment(self):
            return {USAGES, DECISIONS}

    stamp_transactional_commits(Consumer)
    consumer = Consumer()
    consumer.in_transaction, consumer._thread = in_transaction, SimpleNamespace(tp_last_committed_at={})
    return consumer


@pytest.mark.parametrize("in_transaction, did_commit, stamped", [
    pytest.param(True, True, {USAGES, DECISIONS}, id="transactional-commit-stamps-its-assigned-partitions"),
    pytest.param(True, False, set(), id="no-commit-no-stamp"),
    pytest.param(False, True, set(), id="faust-stamps-its-own-commits"),
])
def test_a_transactional_commit_stamps_the_commit_time(in_transaction, did_commit, stamped):
    consumer = _consumer(in_transaction, did_commit)
    before = monotonic()
    assert asyncio.run(consumer._commit_offsets({USAGES: 10, DECISIONS: 5, INBOX: 3})) is did_commit
    stamps = consumer._thread.tp_last_committed_at
    assert set(stamps) == stamped and all(at >= before for at in stamps.values())


def test_install_is_idempotent():
    from faust.transport.consumer import Consumer

    install_catch_up_warnings()
    install_transactional_commit_times()
    patched = (AIOKafkaConsumerThread._log_slow_processing_stream, Consumer._commit_offsets)
    install_catch_up_warnings()
    install_transactional_commit_times()
    assert (AIOKafkaConsumerThread._log_slow_processing_stream, Consumer._commit_offsets) == patched
