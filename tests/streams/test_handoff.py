"""``streams.handoff``: the router's decoded source record reaches one inbox reader of its worker, as decoding
its bytes would give it."""

from __future__ import annotations

import types

from streams import routing, validation
from streams.handoff import Handoff
from streams.inbox import InboxReader
from streams.objects import load_and_validate
from streams.schemas import codec
from streams.topology import load_topology
from tests.streams.replay.inbox import T0, node_metric, pod

TOPOLOGY = load_topology()
PARTITIONS = {inbox: TOPOLOGY.spec(inbox).partitions for inbox in routing.INBOXES}
SOURCE_IDS = {name: topic_id for topic_id, name in TOPOLOGY.names().items()}


def _source(manifest: str) -> types.SimpleNamespace:
    (record,) = load_and_validate("-", stdin_text=manifest)
    return types.SimpleNamespace(topic=f"koord.{record.topic}", partition=0, offset=7, key=record.key.encode(),
                                 value=codec.encode(record.schema, record.record), headers=[], timestamp=T0 / 1000)


def _routed(message, handoff: Handoff) -> tuple[list[tuple[str, types.SimpleNamespace]], dict]:
    """What the router does with ``message``: check, hand off, and one inbox record per route; and the record
    it decoded."""
    source_id = SOURCE_IDS[message.topic]
    key, kind, record, reason = validation.check_source(source_id, message, T0)
    assert reason is None
    targets = routing.routes(source_id, key, kind, record, PARTITIONS)
    handoff.put(message.value, kind, record, [(TOPOLOGY.name(target.inbox), target.partition or 0)
                                              for target in targets])
    envelope = routing.envelope(message.topic, 0, message.offset, T0, key, message.value, False)
    return [(target.inbox, types.SimpleNamespace(topic=TOPOLOGY.name(target.inbox), partition=target.partition or 0,
                                                  offset=0, key=target.key.encode(), value=envelope, timestamp=T0))
            for target in targets], record


def _holding_all() -> Handoff:
    """A handoff in a process that reads every inbox partition."""
    handoff = Handoff()
    handoff.hold((TOPOLOGY.name(inbox), partition) for inbox, count in PARTITIONS.items() for partition in range(count))
    return handoff


def _reader(inbox: str, handoff: Handoff) -> InboxReader:
    return InboxReader.of(TOPOLOGY, inbox, handoff=handoff)


def test_the_reader_takes_the_routers_record_once_and_it_equals_a_fresh_decode():
    handoff = _holding_all()
    message = _source(node_metric("n1", "2", T0))
    [(inbox, forwarded)], record = _routed(message, handoff)
    _, event = _reader(inbox, handoff).read(forwarded)
    assert event.record is record
    assert event.record == codec.decode(message.value)[1]
    assert len(handoff) == 0
    _, again = _reader(inbox, handoff).read(forwarded)
    assert again.record is not record and again.record == record


def test_a_record_routed_to_two_inboxes_is_handed_to_the_first_reader_only():
    handoff = _holding_all()
    message = _source("""apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
""")
    routed, record = _routed(message, handoff)
    assert sorted(inbox for inbox, _ in routed) == ["inbox-node", routing.ROUTING_INBOX]
    events = [_reader(inbox, handoff).read(forwarded)[1] for inbox, forwarded in routed]
    assert [event.record is record for event in events] == [True, False]
    assert events[0].record == events[1].record


def test_a_record_is_kept_only_for_an_inbox_partition_this_process_reads_and_while_there_is_room():
    nowhere = Handoff()
    nowhere.put(b"x", "Pod", {}, [("koord.inbox.node", 0)])
    assert len(nowhere) == 0
    bounded = Handoff(capacity=3)
    bounded.hold([("koord.inbox.node", 1)])
    bounded.put(b"elsewhere", "Pod", {}, [("koord.inbox.node", 0)])
    assert len(bounded) == 0
    for index in range(5):
        bounded.put(bytes([index]), "Pod", {"n": index}, [("koord.inbox.node", 0), ("koord.inbox.node", 1)])
    assert len(bounded) == 3
    assert bounded.take(bytes([4])) is None, "the reader comes to the first ones first: a full handoff keeps them"
    assert bounded.take(bytes([0])) == ("Pod", {"n": 0})
    bounded.put(bytes([5]), "Pod", {"n": 5}, [("koord.inbox.node", 1)])
    assert bounded.take(bytes([5])) == ("Pod", {"n": 5})
    bounded.hold([("koord.inbox.node", 0)])
    assert len(bounded) == 0, "a rebalance drops what was kept"


def test_a_pod_record_taken_from_the_handoff_reads_as_a_decoded_one():
    handoff = _holding_all()
    message = _source(pod("a"))
    [(inbox, forwarded)], record = _routed(message, handoff)
    _, taken = _reader(inbox, handoff).read(forwarded)
    _, decoded = _reader(inbox, None).read(forwarded)
    assert taken.record is record and taken == decoded
