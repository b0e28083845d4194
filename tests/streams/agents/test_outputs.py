"""``send_outputs``: each record keyed by ``streams.outputs.output_key`` and sent to its schema's topic, the Ack
after an event's outputs when it asked for one, every send awaited, dead letters counted where they are sent;
the outputs the pipeline reads again copied to their inboxes once delivered."""

from __future__ import annotations

import asyncio
import types

from streams.agents.outputs import Inboxes, send_outputs
from streams.deadletter import DEAD_LETTERS, dead_letter_record
from streams.events import Causation, InboxEvent, deletion
from streams.inbox import InboxReader
from streams.nodeaggregate.usage import summary
from streams.outputs import OUTPUT_TOPICS, ack
from streams.partitioning import partition_for
from streams.routing import ACK_HEADER, ACK_HEADERS
from streams.routing import INBOXES as INBOX_IDS
from streams.schemas import codec
from streams.signing import HEADER, Signer
from streams.topology import load_topology

CAUSE = Causation("koord.inbox.node", 2, 40, "koord.nodemetrics", 1, 7)
NODE_RESOURCE = {"decisionId": "d-1", "nodeName": "n1", "capacity": {"cpu": 4000}, "allocatable": {"cpu": 4000},
                 "message": "", "causation": CAUSE.to_record(), "timestamp": 1, "annotations": {}, "zones": []}
LETTER = dead_letter_record("node", "koord.configs", 0, 3, b"koordinator-system/slo-controller-config", None,
                            "slo-controller-config rejected", 1)


class Batches:
    """Stand-in for ``streams.agents.transactions.Batches``: records what is queued, counts it delivered when
    ``deliver`` is awaited and says each record landed in partition 0 at its place in the queue."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes, str, tuple]] = []
        self.records: list[dict] = []
        self.values: list = []
        self.headers: list = []
        self.partitions: list = []
        self.timestamps: list = []
        self.delivered = 0
        self.deliveries = 0

    def add(self, topic, key, value, source, partition=None, headers=None, timestamp_ms=None):
        schema, record = codec.decode(value) if value is not None else (None, None)
        self.sent.append((topic, key, schema, source))
        self.records.append(record)
        self.values.append(value)
        self.headers.append(headers)
        self.partitions.append(partition)
        self.timestamps.append(timestamp_ms)
        return len(self.sent) - self.delivered - 1

    async def deliver(self):
        positions = [(0, offset) for offset in range(self.delivered, len(self.sent))]
        self.delivered = len(self.sent)
        self.deliveries += 1
        return positions


def test_outputs_are_sent_keyed_to_their_topics_with_the_ack_last_and_dead_letters_counted():
    batches, topics = Batches(), {schema: f"topic-{topic_id}" for schema, topic_id in OUTPUT_TOPICS.items()}
    asked = InboxEvent(CAUSE, 1, "n1", "NodeMetric", None, ack=True)
    counted = DEAD_LETTERS.labels(stage="node", topic="koord.configs")._value.get()

    asyncio.run(send_outputs(batches, topics, "node", "inbox-node",
                             [(asked, [("NodeResource", NODE_RESOURCE), ("DeadLetter", LETTER)])]))

    assert [(topic, key, schema) for topic, key, schema, _ in batches.sent] == [
        ("topic-noderesources", b"n1", "NodeResource"), ("topic-deadletters", b"koord.configs/0/3", "DeadLetter"),
        ("topic-acks", b"koord.nodemetrics/1", "Ack")]
    assert {source for *_, source in batches.sent} == {("koord.inbox.node", 2)}, "the inbox partition read from"
    assert batches.records[-1]["outputIds"] == ["d-1"] and batches.delivered == 3
    assert DEAD_LETTERS.labels(stage="node", topic="koord.configs")._value.get() == counted + 1


def test_a_deletion_goes_to_its_schemas_topic_as_a_tombstone():
    batches, topics = Batches(), {schema: f"topic-{topic_id}" for schema, topic_id in OUTPUT_TOPICS.items()}
    event = InboxEvent(CAUSE, 1, "tick", "Tick", None)
    asyncio.run(send_outputs(batches, topics, "scheduling", "koord.inbox.scheduling",
                             [(event, [("Reservation", deletion("move-1"))])]))
    assert batches.sent == [("topic-reservations", b"move-1", None, ("koord.inbox.node", 2))]
    assert batches.records == [None]


def test_a_node_usage_asked_for_carries_the_ack_header_and_its_ack_names_it():
    """``koord apply --wait`` on a NodeMetric waits for the scheduling domain's Ack of the NodeUsage the node
    aggregate sent for it: the NodeUsage asks for an Ack when its cause did, and that Ack names it."""
    batches, topics = Batches(), {schema: f"topic-{topic_id}" for schema, topic_id in OUTPUT_TOPICS.items()}
    usage = summary("n1", {"nodeUsage": {"cpu": 1000}, "updateTime": 5}, CAUSE, 1)
    asked = InboxEvent(CAUSE, 1, "n1", "NodeMetric", None, ack=True)
    quiet = InboxEvent(Causation("koord.inbox.node", 2, 41, "koord.nodemetrics", 1, 8), 1, "n1", "NodeMetric", None)
    asyncio.run(send_outputs(batches, topics, "node", "inbox-node",
                             [(asked, [("NodeUsage", usage), ("NodeResource", NODE_RESOURCE)]),
                              (quiet, [("NodeUsage", usage)])]))
    assert [(schema, headers) for (_, _, schema, _), headers in zip(batches.sent, batches.headers)] == [
        ("NodeUsage", ACK_HEADERS), ("NodeResource", None), ("Ack", None), ("NodeUsage", None)]
    assert batches.records[2]["outputIds"] == [usage["decisionId"], "d-1"]

    forwarded = InboxEvent(Causation("koord.inbox.scheduling", 0, 9, "koord.nodeusages", 3, 4), 1, "n1",
                           "NodeUsage", usage, ack=True)
    assert ack("inbox-scheduling", forwarded, [])[1]["eventId"] == usage["decisionId"]
    assert ack("inbox-node", asked, [])[1]["eventId"] is None


class Topic:
    def __init__(self, name: str) -> None:
        self.name = name

    def get_topic_name(self) -> str:
        return self.name


TOPOLOGY = load_topology()
SIGNER = Signer(b"k" * 32, "test")
INBOXES = Inboxes({inbox: Topic(TOPOLOGY.name(inbox)) for inbox in INBOX_IDS},
                  {inbox: TOPOLOGY.spec(inbox).partitions for inbox in INBOX_IDS})


def _decision(result: str) -> dict:
    return {"decisionId": f"d-{result}", "pod": {"namespace": "ns", "name": "a", "uid": "u"}, "nodeName": "n1",
            "result": result, "causation": CAUSE.to_record(), "timestamp": 1}


def _read_copies(batches: Batches, inbox_id: str) -> list:
    """The copies queued for ``inbox_id``, read back by that inbox's reader as the aggregate reads them."""
    reader = InboxReader.of(TOPOLOGY, inbox_id, "inc", SIGNER)
    read = []
    for (topic, key, _, _), value, headers, partition in zip(batches.sent, batches.values, batches.headers,
                                                               batches.partitions):
        if topic.name == TOPOLOGY.name(inbox_id):
            placed = partition_for(TOPOLOGY.spec(inbox_id).partitions, key.decode()) if partition is None else partition
            message = types.SimpleNamespace(topic=topic.name, partition=placed, offset=0, key=key, value=value,
                                            headers=headers, timestamp=batches.timestamps[0])
            read.append(reader.read(message))
    return read


def test_the_outputs_the_pipeline_reads_again_are_copied_to_their_inboxes_as_the_router_copied_them():
    """A NodeUsage and a NodeResource go to the domain router's inbox keyed by node, a binding decision to the node
    inbox keyed by node, each naming the output's own topic, partition and offset as its source, signed for the
    inbox and read back by the inbox reader; the NodeUsage asked for carries the Ack request; the outputs carry
    their signature and nothing else; each copy names its writer, the inbox partition of the event that
    made it; a decision that binds nothing is copied nowhere."""
    batches = Batches()
    topics = {schema: Topic(TOPOLOGY.name(topic_id)) for schema, topic_id in OUTPUT_TOPICS.items()}
    usage = summary("n1", {"nodeUsage": {"cpu": 1000}, "updateTime": 5}, CAUSE, 1)
    asked = InboxEvent(CAUSE, 1, "n1", "NodeMetric", None, ack=True)
    asyncio.run(send_outputs(batches, topics, "node", "inbox-node",
                             [(asked, [("NodeUsage", usage), ("NodeResource", NODE_RESOURCE),
                                       ("SchedulingDecision", _decision("Scheduled")),
                                       ("SchedulingDecision", _decision("Unschedulable"))])],
                             SIGNER, INBOXES))

    assert batches.deliveries == 2, "the outputs delivered before their copies name their offsets"
    outputs = {schema: headers for (_, _, schema, _), headers in zip(batches.sent[:5], batches.headers)}
    assert {s: sorted(name for name, _ in outputs[s]) for s in ("NodeUsage", "NodeResource", "SchedulingDecision")} \
        == {"NodeUsage": [ACK_HEADER, HEADER], "NodeResource": [HEADER], "SchedulingDecision": [HEADER]}, \
        "signed (the usage asked for an Ack), and nothing more: no reader of their topics routes them"
    routed = _read_copies(batches, "inbox-routing")
    assert [(e.kind, e.key, e.ack) for _, e in routed] == [("NodeUsage", "n1", True), ("NodeResource", "n1", False)]
    assert [(e.causation.source_topic, e.causation.source_offset) for _, e in routed] == [
        ("koord.nodeusages", 0), ("koord.noderesources", 1)], "the output's own position"
    assert routed[0][1].record == usage and routed[0][1].timestamp_ms == batches.timestamps[0]
    assert {e.causation.writer for _, e in routed} == {"inbox-node/2"}, "the inbox partition of the event"
    node = _read_copies(batches, "inbox-node")
    assert [(key, e.kind, e.record["result"], e.causation.source_topic, e.causation.source_offset)
            for key, e in node] == [("n1", "SchedulingDecision", "Scheduled", "koord.decisions", 2)]
    assert {source for *_, source in batches.sent} == {("koord.inbox.node", 2)}, "one transaction: the event's"
