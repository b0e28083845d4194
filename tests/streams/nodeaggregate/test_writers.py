"""The node inbox's dedupe with the aggregates' own copies (``streams.outputs.WRITTEN_TO_INBOXES``): decisions
are keyed by pod, so two scheduling domains write to one decisions partition and copy to one node inbox
partition from independent producers; their copies can arrive out of offset order. The dedupe counts source
offsets per (source partition, writer) (``streams.events.Causation.seen_key``), so both are applied; one
writer's copy delivered twice is applied once; the router's forwards keep one count per source partition.

Each copy goes the live way: the envelope an aggregate writes (``routing.envelope``), signed for the node
inbox, read back by the node inbox's ``InboxReader`` and handled by the node core."""

from __future__ import annotations

import types

import pytest

from streams import routing
from streams.inbox import InboxReader, Rejected
from streams.nodeaggregate import statecodec
from streams.nodeaggregate.node import NodeState
from streams.nodeaggregate.partition import NodePartition
from streams.nodeaggregate.settings import DEFAULT_SETTINGS
from streams.partitioning import partition_for
from streams.schemas import codec
from streams.signing import Signer
from streams.topology import load_topology
from tests.streams.noderesource.support import NOW, decision, event, node_record

TOPOLOGY = load_topology()
SIGNER = Signer(b"k" * 32, "test")
READER = InboxReader.of(TOPOLOGY, "inbox-node", "inc", SIGNER)
NODE = "test-node1"
DECISIONS = TOPOLOGY.name("decisions")


def _copy(pod: str, offset: int, writer: tuple[str, int] | None, inbox_offset: int = 0):
    """The node inbox record of the decision binding ``pod`` at ``decisions[2]@offset``, as ``writer`` (an
    aggregate inbox partition; None: the router) wrote it, read back by the node inbox's reader."""
    value = codec.encode("SchedulingDecision", decision(pod, NODE, result="Scheduled"))
    envelope = routing.envelope(DECISIONS, 2, offset, NOW, f"test/{pod}", value, False, writer)
    key = NODE.encode()
    message = types.SimpleNamespace(
        topic=TOPOLOGY.name("inbox-node"), partition=partition_for(TOPOLOGY.spec("inbox-node").partitions, NODE),
        offset=inbox_offset, key=key, value=envelope, headers=[SIGNER.header("inbox-node", key, envelope)],
        timestamp=NOW)
    return READER.read(message)[1]


def _applied(*events) -> tuple[NodePartition, NodeState]:
    """The node partition after the node and ``events``, and the node's state as it was written."""
    partition = NodePartition(DEFAULT_SETTINGS)
    for ev in (event("Node", NODE, node_record(), ts=NOW), *events):
        partition.apply(ev)
    return partition, statecodec.load_state(partition.take_changes()[NODE])


def test_two_writers_copies_of_one_decisions_partition_out_of_offset_order_are_both_applied():
    """Domain 1's copy of offset 11 arrives before domain 0's of offset 10: the node runs both pods (with one
    count per source partition, the hops branch's, the later-arriving offset 10 was dropped as seen)."""
    later, earlier = _copy("b", 11, ("inbox-scheduling", 1)), _copy("a", 10, ("inbox-scheduling", 0))
    assert (later.causation.writer, earlier.causation.writer) == ("inbox-scheduling/1", "inbox-scheduling/0")
    _, state = _applied(later, earlier)
    assert {"test/a", "test/b"} <= set(state.pods)


def test_one_writers_copy_delivered_twice_is_applied_once():
    partition, state = _applied(_copy("a", 10, ("inbox-scheduling", 0)))
    assert "test/a" in state.pods
    assert state.sources[f"{DECISIONS}/2@inbox-scheduling/0"] == 10
    assert partition.apply(_copy("a", 10, ("inbox-scheduling", 0), inbox_offset=1)) == []
    assert partition.take_changes() == {}, "seen: the state is not written again"


def test_a_writers_copy_below_what_it_wrote_is_dropped_as_seen():
    """Per writer the order holds, so below its highest offset is a copy already applied."""
    _, state = _applied(_copy("b", 11, ("inbox-scheduling", 0)), _copy("a", 10, ("inbox-scheduling", 0)))
    assert "test/a" not in state.pods


def test_the_routers_forwards_keep_one_count_per_source_partition():
    """A forward (no writer) is counted apart from the copies: its offset 10 after a copy's 11 is applied, and a
    forward below a forward's offset is dropped as before."""
    forward = _copy("a", 10, None)
    assert forward.causation.writer == "" and forward.causation.seen_key == f"{DECISIONS}/2"
    _, state = _applied(_copy("b", 11, ("inbox-scheduling", 1)), forward, _copy("c", 9, None))
    assert "test/a" in state.pods and "test/c" not in state.pods


@pytest.mark.parametrize("writer, reason", [
    (("inbox-elsewhere", 0), "names the writer 'inbox-elsewhere', which is not an inbox of this topology"),
    (("inbox-scheduling", 10_000), "names the writer inbox-scheduling[10000], which cannot exist"),
    (("inbox-scheduling", -1), "names the writer inbox-scheduling[-1], which cannot exist"),
])
def test_the_reader_refuses_a_writer_that_is_not_an_inbox_partition_of_the_topology(writer, reason):
    with pytest.raises(Rejected, match=reason.replace("[", r"\[").replace("]", r"\]")):
        _copy("a", 10, writer)
