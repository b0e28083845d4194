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
                                             "(SchedulingDecision, Eviction, NodeResource, Reservation, "
                                             "PodMigrationJob, ElasticQuotaStatus, PodGroup)")


def test_a_decision_the_worker_did_not_sign_binds_nothing_and_is_a_dead_letter():
    """A forged decision on the embedded broker would bind a real pod to any node; the bridge acts only on
    what the worker signed (``streams.signing``)."""
    from streams.signing import Signer

    sign, producer, handled = Signer(b"b" * 32, "test"), Producer(), []
    actuator = Actuator(None, None, None, None, None, producer, "koord.deadletters", sign,
                        {"koord.decisions": "decisions"})

    async def handle(schema, record):
        handled.append(record["decisionId"])

    actuator.handle = handle
    decision = {"decisionId": "d-1", "pod": {"namespace": "default", "name": "web", "uid": None},
                "result": "Scheduled", "nodeName": "n1", "timestamp": 0,
                "causation": {"inboxTopic": "koord.inbox.scheduling", "inboxPartition": 0, "inboxOffset": 0,
                              "sourceTopic": "koord.pods", "sourcePartition": 0, "sourceOffset": 0}}
    value = codec.encode("SchedulingDecision", decision)
    forged = message("koord.decisions", 0, value, key=b"default/web")
    forged.headers = []
    signed = message("koord.decisions", 1, value, key=b"default/web")
    signed.headers = [sign.header("decisions", b"default/web", value)]
    asyncio.run(records.dispatch([forged, signed], actuator._guarded, actuator._dead_letter))
    assert handled == ["d-1"]
    assert [letter["reason"] for _, letter, _ in producer.sent] == [
        "ValueError: the record has no koord-mac header: only the pipeline writes decisions"]
