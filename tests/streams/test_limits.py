"""The record size limit: its figures, the size Kafka counts, and the check readers call."""

from __future__ import annotations

import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from streams import limits
from streams.schemas import codec

KAFKA_DEFAULT_MAX_MESSAGE_BYTES = 1_048_588
LONGEST_TOPIC = "t" * 249
"""Kafka refuses topic names over 249 characters."""


def _value_of_record_size(size: int, key: bytes | None = b"default/web", headers=()) -> bytes:
    """A value that makes the record exactly ``size`` bytes."""
    value = bytes(size - limits.record_size(key, b"", headers))
    while limits.record_size(key, value, headers) > size:
        value = value[:-1]
    assert limits.record_size(key, value, headers) == size
    return value


def test_the_figures_add_up():
    assert limits.RECORD_MAX_BYTES == limits.PRODUCER_MAX_BYTES - limits.ENVELOPE_RESERVE == 1_044_480
    assert limits.PRODUCER_MAX_BYTES <= KAFKA_DEFAULT_MAX_MESSAGE_BYTES


def test_record_size_bounds_the_batch_kafka_receives():
    key, value, headers = b"default/web", bytes(70_000), [("koord-ack", b"1")]
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 21)
    builder.append(0, timestamp=1_700_000_000_000, key=key, value=value, headers=headers)
    batch = len(builder.build())
    assert batch <= limits.record_size(key, value, headers) < batch + 32


def test_a_record_at_the_limit_fits_and_one_byte_more_does_not():
    value = _value_of_record_size(limits.RECORD_MAX_BYTES)
    assert limits.too_big(value, "default/web") is None
    assert limits.too_big(value + b"x", "default/web") == (
        f"record is {limits.RECORD_MAX_BYTES + 1:,} bytes, over the 1,044,480-byte limit of a record")


@pytest.mark.parametrize("headers", [[("koord-ack", b"1")], {"koord-ack": b"1"}, [(b"koord-ack", b"1")]],
                         ids=["list", "mapping", "bytes-names"])
def test_headers_count_towards_the_size(headers):
    value = _value_of_record_size(limits.RECORD_MAX_BYTES)
    assert limits.too_big(value, b"default/web", headers) is not None
    assert limits.too_big(_value_of_record_size(limits.RECORD_MAX_BYTES, headers=headers), b"default/web",
                          headers) is None


def test_a_key_over_its_limit_is_too_big_however_small_the_record():
    assert limits.too_big(b"v", "k" * limits.KEY_MAX_BYTES) is None
    assert limits.too_big(b"v", "k" * (limits.KEY_MAX_BYTES + 1)) == (
        "key is 1,025 bytes, over the 1,024-byte limit of a key")


def test_a_tombstone_is_measured_too():
    assert limits.too_big(None, "default/web") is None


def test_value_max_is_the_largest_value_beside_a_key_of_that_size():
    key = bytes(limits.KEY_MAX_BYTES)
    assert limits.too_big(bytes(limits.value_max()), key) is None
    assert limits.record_size(key, bytes(limits.value_max())) > limits.RECORD_MAX_BYTES - 8


def test_a_source_record_at_the_limit_still_fits_the_producer_once_the_router_wraps_it():
    """The InboxEvent the router forwards, with the longest key and topic name and the largest numbers,
    around the largest source record: over the record limit, within the producer's."""
    key = "k" * limits.KEY_MAX_BYTES
    payload = _value_of_record_size(limits.RECORD_MAX_BYTES, key.encode())
    envelope = codec.encode("InboxEvent", {
        "sourceTopic": LONGEST_TOPIC, "sourcePartition": 2**31 - 1, "sourceOffset": 2**63 - 1,
        "timestamp": 2**63 - 1, "key": key, "payload": payload, "ack": True})
    forwarded = limits.record_size(key, envelope)
    assert limits.RECORD_MAX_BYTES < forwarded <= limits.PRODUCER_MAX_BYTES
    assert forwarded - limits.RECORD_MAX_BYTES <= 293 + 2 * limits.KEY_MAX_BYTES
