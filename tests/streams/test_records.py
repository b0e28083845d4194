"""Decoded records: tombstones, undecodable values and good records of one poll, in order."""

import asyncio
from types import SimpleNamespace

from streams.records import Decoded, dead_letter_of, decoded, dispatch, in_order
from streams.schemas import codec
from tests.streams.noderesource.support import configmap


def message(offset, value, topic="t", key=b"k"):
    return SimpleNamespace(topic=topic, partition=0, offset=offset, key=key, value=value, timestamp=0)


GOOD = codec.encode("ConfigMap", configmap())
MESSAGES = [message(0, GOOD), message(1, None), message(2, b"garbage"), message(3, GOOD)]


def run(**options):
    seen = []
    asyncio.run(dispatch(MESSAGES, lambda item: seen.append(item), **options))
    return seen


def test_good_records_are_decoded_and_the_rest_skipped_by_default():
    seen = run()
    assert [(item.message.offset, item.schema) for item in seen] == [(0, "ConfigMap"), (3, "ConfigMap")]
    assert seen[0].value == codec.decode(GOOD)[1]


def test_tombstones_are_handed_on_when_asked_for():
    assert [(item.message.offset, item.schema, item.value) for item in run(tombstones=True)][1] == (1, None, None)


def test_a_record_that_does_not_decode_goes_to_its_dead_letter_path_with_the_reason_in_order():
    order = []

    async def bad(msg, reason):
        order.append((msg.offset, reason))

    asyncio.run(dispatch(MESSAGES, lambda item: order.append((item.message.offset, item.schema)), bad))
    try:
        codec.decode(b"garbage")
    except codec.CodecError as error:
        reason = f"CodecError: {error}"
    assert order == [(0, "ConfigMap"), (2, reason), (3, "ConfigMap")]


def test_one_poll_is_read_partition_after_partition():
    assert in_order({"p0": [1, 2], "p1": [3]}) == [1, 2, 3]
    assert Decoded(None, None, None).value is None


def test_a_synchronous_reader_gets_the_same_records():
    bad = []
    assert [item.message.offset for item in decoded(MESSAGES, lambda msg, reason: bad.append(msg.offset))] == [0, 3]
    assert bad == [2]
    assert [item.message.offset for item in decoded(MESSAGES, tombstones=True)] == [0, 1, 3]


def test_a_bad_record_becomes_a_dead_letter_with_its_coordinates_key_payload_and_reason():
    letter = dead_letter_of("reader", message(7, b"garbage", "pods", b"\xff"), "CodecError: no")
    assert {field: letter[field] for field in ("sourceTopic", "sourceOffset", "key", "payload", "reason", "stage")} \
        == {"sourceTopic": "pods", "sourceOffset": 7, "key": b"\xff", "payload": b"garbage",
            "reason": "CodecError: no", "stage": "reader"}
    assert codec.decode(codec.encode("DeadLetter", letter))[0] == "DeadLetter"
