"""``streams.sources``: a source record read as the router reads it, by the router or by the domain router (the
pods), into the event a forward of it would carry."""

from __future__ import annotations

import types

import pytest

from streams import sources
from streams.events import MAX_AHEAD_MS
from streams.routing import ACK_HEADERS
from streams.schemas import codec
from tests.streams.test_validation_source import applied

NOW = 1_700_000_000_000


def message(value: bytes | None, timestamp_ms: int = NOW, headers=(), key: bytes = b"default/web"):
    """A Faust message of ``koord.pods`` partition 2 at offset 7 (Faust gives the timestamp in seconds)."""
    return types.SimpleNamespace(topic="koord.pods", partition=2, offset=7, key=key, value=value,
                                 timestamp=timestamp_ms / 1000, headers=list(headers))


def test_a_good_pod_reads_as_the_event_a_forward_would_carry_its_source_its_inbox():
    read = sources.read("pods", message(codec.encode("Pod", applied()), headers=ACK_HEADERS), NOW)
    assert (read.key, read.kind, read.record, read.timestamp_ms, read.ack) == (
        "default/web", "Pod", applied(), NOW, True)
    event = read.event(message(None))
    cause = event.causation
    assert cause.direct and (cause.inbox_topic, cause.inbox_partition, cause.inbox_offset) == ("koord.pods", 2, 7)
    assert cause.seen_key == "koord.pods/2", "the dedupe counts it as the router's forward of it"
    assert (event.key, event.kind, event.ack, event.timestamp_ms) == ("default/web", "Pod", True, NOW)


def test_a_tombstone_reads_as_a_deletion_without_an_ack():
    read = sources.read("pods", message(None), NOW)
    assert (read.kind, read.record, read.ack) == ("Pod", None, False)


def test_a_record_timed_past_the_clock_is_timed_at_most_max_ahead():
    read = sources.read("pods", message(codec.encode("Pod", applied()), NOW + 10 * MAX_AHEAD_MS), NOW)
    assert read.timestamp_ms == NOW + MAX_AHEAD_MS


def test_a_bad_record_is_refused_with_the_routers_reason():
    with pytest.raises(sources.Refused, match="undecodable record"):
        sources.read("pods", message(b"\x00garbage"), NOW)
    with pytest.raises(sources.Refused, match="no key"):
        sources.read("pods", message(codec.encode("Pod", applied()), key=None), NOW)


def test_a_check_that_fails_refuses_the_record_with_the_failure(monkeypatch):
    def broken(*args):
        raise KeyError("metadata")

    monkeypatch.setattr(sources.validation, "check_source", broken)
    with pytest.raises(sources.Refused, match="the router failed on this record: KeyError: 'metadata'"):
        sources.read("pods", message(codec.encode("Pod", applied())), NOW)
