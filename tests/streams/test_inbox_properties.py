"""``InboxReader.read`` on hostile inbox records: whatever the key and value, it returns an event or raises
``Rejected`` (which the inbox reader dead-letters); any other exception would stop the aggregate. What it
returns is always an event the router could have written: a known source topic, a partition of it, a
non-negative offset, a record that passes ``validation.problems``, and a route that leads to this inbox (for
the scheduling inbox, to the domain router, which forwards under any domain's name)."""

from __future__ import annotations

import types

from hypothesis import given
from hypothesis import strategies as st

from streams import routing, validation
from streams.inbox import InboxReader, Rejected
from streams.events import InboxEvent
from streams.schemas import codec
from streams.topology import load_topology
from tests.streams.schemas.strategies import records

TOPOLOGY = load_topology()
INBOXES = routing.INBOXES
SOURCE_TOPICS = [TOPOLOGY.name(source_id) for source_id in routing.KIND_BY_SOURCE]
KEYS = st.none() | st.binary(max_size=12) | st.sampled_from([b"\xff\xfe", b"default", b"node-1", b"default/web"])
PAYLOADS = st.none() | st.binary(max_size=60) | st.sampled_from(codec.SCHEMAS).flatmap(
    lambda name: records(name).map(lambda record: codec.encode(name, record)))
ENVELOPES = st.builds(
    lambda envelope, topic, partition, offset, payload: {**envelope, "sourceTopic": topic, "sourcePartition": partition,
                                                         "sourceOffset": offset, "payload": payload},
    records("InboxEvent"), st.sampled_from(SOURCE_TOPICS) | st.text(max_size=20),
    st.integers(-1, 5) | st.integers(-(2**31), 2**31 - 1), st.integers(-1, 100) | st.integers(-(2**63), 2**63 - 1),
    PAYLOADS)


def _read(inbox_id: str, partition: int, key: bytes | None, value: bytes | None) -> InboxEvent | None:
    message = types.SimpleNamespace(topic=TOPOLOGY.name(inbox_id), partition=partition, offset=7, key=key, value=value,
                                    timestamp=2**62)
    try:
        inbox_key, event = InboxReader.of(TOPOLOGY, inbox_id).read(message)
    except Rejected as rejection:
        assert str(rejection)
        return None
    assert isinstance(event, InboxEvent) and isinstance(inbox_key, str)
    cause = event.causation
    source_id = {TOPOLOGY.name(s): s for s in routing.KIND_BY_SOURCE}[cause.source_topic]
    assert 0 <= cause.source_partition < TOPOLOGY.spec(source_id).partitions and cause.source_offset >= 0
    if event.record is not None:
        assert validation.problems(source_id, event.key, event.kind, event.record) == []
    partitions = {inbox: TOPOLOGY.spec(inbox).partitions for inbox in INBOXES}
    found = routing.routes(source_id, event.key, event.kind, event.record, partitions)
    if inbox_id == routing.SCHEDULING_INBOX:
        assert any(route.inbox == routing.ROUTING_INBOX for route in found)
    else:
        assert any(route.inbox == inbox_id and route.key == inbox_key and route.partition in (None, partition)
                   for route in found)
    return event


@given(st.sampled_from(INBOXES), st.integers(0, 3), KEYS, st.none() | st.binary(max_size=200))
def test_arbitrary_inbox_bytes_give_an_event_or_a_rejection(inbox_id, partition, key, value):
    _read(inbox_id, partition, key, value)


@given(st.sampled_from(INBOXES), st.integers(0, 3), KEYS, ENVELOPES)
def test_forged_envelopes_give_a_checked_event_or_a_rejection(inbox_id, partition, key, envelope):
    _read(inbox_id, partition, key, codec.encode("InboxEvent", envelope))


@given(st.none() | st.binary(max_size=40))
def test_any_key_is_text_or_a_reason(key):
    text, problem = validation.text_key(key)
    assert (text is None) != (problem is None)
    assert text is None or text.encode() == key


@given(records("Pod"), st.integers(0, 3), st.integers(0, 1000))
def test_a_forwarded_pod_is_read_exactly_when_the_router_would_have_let_it_through(pod, partition, offset):
    pod = {**pod, "metadata": {**pod["metadata"], "namespace": "default", "name": pod["metadata"]["name"] or "p"}}
    key = f"default/{pod['metadata']['name']}"
    envelope = {"sourceTopic": TOPOLOGY.name("pods"), "sourcePartition": partition, "sourceOffset": offset,
                "timestamp": 1, "key": key, "payload": codec.encode("Pod", pod), "ack": False}
    event = _read("inbox-scheduling", 0, routing.DEFAULT_DOMAIN.encode(), codec.encode("InboxEvent", envelope))
    assert (event is None) == bool(validation.problems("pods", key, "Pod", pod))
