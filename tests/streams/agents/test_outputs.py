"""``send_outputs``: each record keyed by ``streams.outputs.output_key`` and sent to its schema's topic, the Ack
after an event's outputs when it asked for one, every send awaited, dead letters counted where they are sent."""

from __future__ import annotations

import asyncio

from streams.agents.outputs import send_outputs
from streams.deadletter import DEAD_LETTERS, dead_letter_record
from streams.events import Causation, InboxEvent, deletion
from streams.nodeaggregate.usage import summary
from streams.outputs import OUTPUT_TOPICS, ack
from streams.routing import ACK_HEADERS
from streams.schemas import codec

CAUSE = Causation("koord.inbox.node", 2, 40, "koord.nodemetrics", 1, 7)
NODE_RESOURCE = {"decisionId": "d-1", "nodeName": "n1", "capacity": {"cpu": 4000}, "allocatable": {"cpu": 4000},
                 "message": "", "causation": CAUSE.to_record(), "timestamp": 1, "annotations": {}, "zones": []}
LETTER = dead_letter_record("node", "koord.configs", 0, 3, b"koordinator-system/slo-controller-config", None,
                            "slo-controller-config rejected", 1)


class Batches:
    """Stand-in for ``streams.agents.transactions.Batches``: records what is queued, counts it delivered when
    ``deliver`` is awaited."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes, str, tuple]] = []
        self.records: list[dict] = []
        self.headers: list = []
        self.delivered = 0

    def add(self, topic, key, value, source, headers=None):
        schema, record = codec.decode(value) if value is not None else (None, None)
        self.sent.append((topic, key, schema, source))
        self.records.append(record)
        self.headers.append(headers)

    async def deliver(self):
        self.delivered = len(self.sent)


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
