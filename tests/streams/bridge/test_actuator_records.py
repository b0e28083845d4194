"""The bridge's reader: a record that does not decode, or that the bridge does not act on, becomes a dead letter
with its reason; a tombstone is skipped."""

import asyncio

from streams import records
from streams.bridge.actuator import Actuator
from streams.schemas import codec
from tests.streams.fakeconsumer import message
from tests.streams.noderesource.support import configmap


class Producer:
    def __init__(self):
        self.sent = []

    async def send_and_wait(self, topic, value, key):
        self.sent.append((topic, codec.decode(value)[1], key))


def test_undecodable_and_foreign_records_become_dead_letters_in_order():
    producer, handled = Producer(), []
    actuator = Actuator(None, None, None, None, None, producer, "koord.deadletters")

    async def handle(schema, record):
        handled.append(schema)

    actuator.handle = handle
    messages = [message("koord.decisions", 0, b"garbage"), message("koord.decisions", 1, None),
                message("koord.decisions", 2, codec.encode("ConfigMap", configmap()))]
    asyncio.run(records.dispatch(messages, actuator._guarded, actuator._dead_letter))
    assert handled == [] and [(letter["sourceOffset"], key) for _, letter, key in producer.sent] == [
        (0, b"koord.decisions/0/0"), (2, b"koord.decisions/0/2")]
    assert producer.sent[0][1]["reason"].startswith("CodecError: ")
    assert producer.sent[1][1]["reason"] == ("ValueError: a ConfigMap record is not one the bridge acts on "
                                             "(SchedulingDecision, Eviction, NodeResource)")
