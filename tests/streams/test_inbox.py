"""``streams.inbox``: ``DeliveryOrder`` reports a record handed over after later ones within one consumer
generation; ``InboxReader`` checks every record, whoever wrote it; ``handle_guarded`` dead-letters an event
the core fails on."""

from __future__ import annotations

import types

import pytest

from streams.events import MAX_AHEAD_MS, decision_id
from streams.inbox import DeliveryOrder, InboxReader, Rejected, handle_guarded
from streams.metrics import INBOX_SKIPPED
from streams.schemas import codec
from streams.topology import load_topology
from tests.streams.replay.inbox import SCHEDULING_INBOX, pod, records


def _message(partition: int, offset: int, generation: int):
    return types.SimpleNamespace(topic="koord.inbox.scheduling", partition=partition, offset=offset,
                                 generation_id=generation)


def test_in_order_delivery_and_reading_again_after_a_seek_are_not_skips():
    order = DeliveryOrder("test-in-order")
    offsets = [0, 1, 2, 3, 1, 2, 3, 4]
    assert [order.check(_message(0, o, generation=5)) for o in offsets] == [0] * len(offsets)


def test_a_jump_forward_within_a_generation_is_counted_per_partition():
    order = DeliveryOrder("test-skip")
    before = INBOX_SKIPPED.labels("test-skip")._value.get()
    assert order.check(_message(0, 10, generation=5)) == 0
    assert order.check(_message(1, 3, generation=5)) == 0
    assert order.check(_message(0, 14, generation=5)) == 3
    assert order.check(_message(1, 4, generation=5)) == 0
    assert INBOX_SKIPPED.labels("test-skip")._value.get() - before == 3


def test_a_new_generation_may_start_anywhere():
    order = DeliveryOrder("test-generation")
    order.check(_message(0, 10, generation=5))
    assert order.check(_message(0, 40, generation=6)) == 0


# -- reading an inbox: every record checked, whoever wrote it --------------------------------------

SCHEDULING = InboxReader.of(load_topology(), "inbox-scheduling", incarnation="inc-1")


def _forged(**changes) -> types.SimpleNamespace:
    """A good inbox record of pod ``a`` with ``changes`` to its envelope (or ``key=`` to the record key)."""
    record = records(SCHEDULING_INBOX, "default", pod("a"))[0]
    name, envelope = codec.decode(record.value)
    key = changes.pop("record_key", record.key)
    return types.SimpleNamespace(**{**vars(record), "key": key,
                                    "value": codec.encode("InboxEvent", {**envelope, **changes})})


def test_a_good_record_reads_back_with_the_inbox_incarnation_in_its_causation():
    key, event = SCHEDULING.read(_forged())
    assert (key, event.kind, event.key) == ("default", "Pod", "default/a")
    assert event.causation.incarnation == "inc-1"
    other = SCHEDULING.__class__(**{**vars(SCHEDULING), "incarnation": "inc-2"}).read(_forged())[1]
    assert decision_id(event.causation, 0) != decision_id(other.causation, 0)


@pytest.mark.parametrize("changes, reason", [
    ({"record_key": None}, "inbox record has no key"),
    ({"record_key": b"\xff\xfe"}, "inbox record key is not UTF-8"),
    ({"sourceTopic": "koord.elsewhere"}, "not a source topic of this topology"),
    ({"sourcePartition": 99}, "cannot exist"),
    ({"sourceOffset": -1}, "cannot exist"),
    ({"key": ""}, "has no key"),
    ({"payload": b"junk"}, "undecodable forwarded record"),
    ({"key": "default/b"}, "does not name the object"),
])
def test_a_forged_or_broken_record_is_rejected_with_its_reason(changes, reason):
    with pytest.raises(Rejected, match=reason):
        SCHEDULING.read(_forged(**changes))


def test_a_pod_with_negative_requests_is_rejected_as_the_router_rejects_it():
    name, envelope = codec.decode(_forged().value)
    kind, record = codec.decode(envelope["payload"])
    record["requests"] = {**record["requests"], "cpu": -1000}
    with pytest.raises(Rejected, match="quantity must not be negative"):
        SCHEDULING.read(_forged(payload=codec.encode(kind, record)))


def test_a_record_in_an_inbox_the_router_never_sends_it_to_is_rejected():
    node_inbox = InboxReader.of(load_topology(), "inbox-node")
    record = types.SimpleNamespace(**{**vars(_forged()), "topic": "koord.inbox.node"})
    with pytest.raises(Rejected, match="never sends a Pod"):
        node_inbox.read(record)


def test_an_undecodable_envelope_is_rejected():
    with pytest.raises(Rejected, match="undecodable inbox record"):
        SCHEDULING.read(types.SimpleNamespace(**{**vars(_forged()), "value": b"\x00garbage"}))


def test_a_failing_handler_dead_letters_its_event_and_returns():
    _, event = SCHEDULING.read(_forged())

    def broken(_event):
        raise KeyError("missing")

    [(schema, record)] = handle_guarded("scheduling", event, broken)
    assert schema == "DeadLetter"
    assert record["reason"] == "the scheduling aggregate failed on this event: KeyError: 'missing'"
    assert (record["sourceTopic"], record["sourceOffset"]) == (SCHEDULING_INBOX, event.causation.inbox_offset)
    assert handle_guarded("scheduling", event, lambda e: [("X", {})]) == [("X", {})]


# -- event time: a record's time cannot lie far ahead of the clock ----------------------------------

def _timed(timestamp_ms: int, kind: str = "Pod", record: dict | None = None):
    from streams.events import Causation, InboxEvent

    return InboxEvent(Causation("koord.inbox.scheduling", 0, 0, "koord.pods", 0, 0), timestamp_ms, "a", kind, record)


def test_a_record_timed_a_month_ahead_is_refused_and_counted():
    from streams.events import MAX_AHEAD_MS
    from streams.inbox import from_the_future
    from streams.metrics import FUTURE_TIMES

    now = 1_700_000_000_000
    before = FUTURE_TIMES.labels("test-future", "refused")._value.get()
    assert from_the_future("test-future", _timed(now + 2 * MAX_AHEAD_MS), now) is None
    assert from_the_future("test-future", _timed(now - 10**9), now) is None
    assert "ms past the latest allowed" in from_the_future("test-future", _timed(now + 30 * 86_400_000), now)
    assert FUTURE_TIMES.labels("test-future", "refused")._value.get() - before == 1


def test_a_tick_whose_timestamp_lies_a_month_ahead_is_refused():
    from streams.inbox import from_the_future

    now = 1_700_000_000_000
    assert from_the_future("test-future", _timed(now, "Tick", {"timestamp": now}), now) is None
    ahead = _timed(now, "Tick", {"timestamp": now + 86_400_000})
    assert "the Tick's timestamp" in from_the_future("test-future", ahead, now)


def test_the_router_forwards_a_time_at_most_max_ahead_past_its_clock():
    from streams.events import MAX_AHEAD_MS, bounded_time

    assert bounded_time(1_000, 5_000) == 1_000
    assert bounded_time(5_000 + 30 * 86_400_000, 5_000) == 5_000 + MAX_AHEAD_MS


def test_an_event_timed_far_past_its_own_record_is_refused_by_the_reader_live_and_in_replay():
    """The bound is the inbox record's own timestamp, which the topic keeps, not a clock: the worker and a
    replay of the same inbox refuse the same records."""
    written = codec.decode(_forged().value)[1]["timestamp"]
    with pytest.raises(Rejected, match="past the latest allowed"):
        SCHEDULING.read(_forged(timestamp=written + 86_400_000))
    assert SCHEDULING.read(_forged(timestamp=written + MAX_AHEAD_MS))[1].timestamp_ms == written + MAX_AHEAD_MS
    assert SCHEDULING.read(_forged(timestamp=written + 86_400_000), written_ms=written + 86_400_000)[1]
