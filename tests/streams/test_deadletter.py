"""Dead letters stay within the record size limit: what is too big to carry becomes its size and digest."""

from __future__ import annotations

import hashlib

import pytest

from streams import limits
from streams.deadletter import VALUE_MAX_BYTES, dead_letter_record
from streams.schemas import codec

TOPIC, PARTITION, OFFSET, TIMESTAMP = "koord.pods", 3, 41, 1_700_000_000_000
KEY = b"default/web"
LONGEST_KEY = bytes(limits.KEY_MAX_BYTES)


def _letter(payload: bytes | None, key: bytes | None = KEY, reason: str = "undecodable record") -> dict:
    return dead_letter_record("router", TOPIC, PARTITION, OFFSET, key, payload, reason, TIMESTAMP)


def _sent_size_reason(record: dict) -> str | None:
    """The size check of the DeadLetter as a shell sends it, keyed by the longest key a shell uses."""
    return limits.too_big(codec.encode("DeadLetter", record), LONGEST_KEY)


def test_a_small_bad_record_is_carried_whole():
    record = _letter(b"\xc3\x01garbage")
    assert record == {
        "sourceTopic": TOPIC, "sourcePartition": PARTITION, "sourceOffset": OFFSET, "key": KEY,
        "payload": b"\xc3\x01garbage", "reason": "undecodable record", "stage": "router", "timestamp": TIMESTAMP,
        "keySize": None, "keySha256": None, "payloadSize": None, "payloadSha256": None,
    }
    assert codec.decode(codec.encode("DeadLetter", record)) == ("DeadLetter", record)


def test_the_review_s_lost_1_01_mb_record_is_carried_whole_within_the_limit():
    record = _letter(bytes(1_010_000))
    assert (record["payload"], record["payloadSize"]) == (bytes(1_010_000), None)
    assert _sent_size_reason(record) is None


@pytest.mark.parametrize("size", [limits.RECORD_MAX_BYTES, 5_000_000], ids=["source-record-limit", "5MB"])
def test_an_oversized_payload_becomes_its_size_and_digest_beside_the_reference(size):
    payload = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    record = _letter(payload)
    assert (record["sourceTopic"], record["sourcePartition"], record["sourceOffset"]) == (TOPIC, PARTITION, OFFSET)
    assert (record["payload"], record["payloadSize"], record["payloadSha256"]) == (
        None, size, hashlib.sha256(payload).hexdigest())
    assert (record["key"], record["keySize"], record["reason"]) == (KEY, None, "undecodable record")
    assert _sent_size_reason(record) is None
    assert codec.decode(codec.encode("DeadLetter", record))[1] == record


def test_the_largest_payload_carried_still_fits_and_one_byte_more_is_left_out():
    carried = next(size for size in range(VALUE_MAX_BYTES, 0, -1) if _letter(bytes(size))["payload"] is not None)
    assert _sent_size_reason(_letter(bytes(carried))) is None
    assert _letter(bytes(carried + 1))["payloadSize"] == carried + 1
    assert carried > VALUE_MAX_BYTES - 256


def test_an_oversized_key_is_left_out_the_same_way():
    key = b"k" * 2_000_000
    record = _letter(b"\xc3\x01garbage", key=key)
    assert (record["key"], record["keySize"], record["keySha256"]) == (None, len(key), hashlib.sha256(key).hexdigest())
    assert record["payload"] == b"\xc3\x01garbage"
    assert _sent_size_reason(record) is None


def test_an_oversized_reason_is_cut_and_says_so():
    reason = "é" * 1_000_000
    record = _letter(b"x" * 10, reason=reason)
    assert record["reason"].endswith(" ... [cut from 2,000,000 bytes]")
    assert reason.startswith(record["reason"].removesuffix(" ... [cut from 2,000,000 bytes]"))
    assert record["payload"] is None and record["payloadSize"] == 10
    assert _sent_size_reason(record) is None


def test_a_tombstone_stays_a_tombstone():
    record = _letter(None)
    assert (record["payload"], record["payloadSize"], record["payloadSha256"]) == (None, None, None)
