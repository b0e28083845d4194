"""Properties of the codec on hostile bytes: decoding anything fails only with CodecError, and every valid
record of every schema survives an encode/decode round trip unchanged."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from streams.schemas import codec
from tests.streams.schemas.strategies import records

NAMES = st.sampled_from(codec.SCHEMAS)


def _decodes_or_codec_error(data: bytes) -> None:
    try:
        name, record = codec.decode(data)
    except codec.CodecError:
        return
    assert name in codec.SCHEMAS and isinstance(record, dict)


@given(st.binary(max_size=200))
def test_decoding_arbitrary_bytes_fails_only_with_codec_error(data):
    _decodes_or_codec_error(data)


@given(NAMES, st.binary(max_size=200))
def test_an_arbitrary_body_behind_a_known_header_fails_only_with_codec_error(name, body):
    _decodes_or_codec_error(codec.MARKER + codec.fingerprint(name) + body)


@given(NAMES.flatmap(lambda name: st.tuples(st.just(name), records(name))), st.data())
def test_truncated_or_bit_flipped_records_fail_only_with_codec_error(drawn, data):
    name, record = drawn
    encoded = codec.encode(name, record)
    cut = data.draw(st.integers(0, len(encoded) - 1), label="truncated to")
    _decodes_or_codec_error(encoded[:cut])
    bit = data.draw(st.integers(0, len(encoded) * 8 - 1), label="flipped bit")
    flipped = bytearray(encoded)
    flipped[bit // 8] ^= 1 << (bit % 8)
    _decodes_or_codec_error(bytes(flipped))


@given(NAMES.flatmap(lambda name: st.tuples(st.just(name), records(name))))
def test_every_valid_record_round_trips(drawn):
    name, record = drawn
    assert codec.decode(codec.encode(name, record)) == (name, record)


@given(NAMES, st.dictionaries(st.text(max_size=10), st.none() | st.integers() | st.text(max_size=5), max_size=4))
def test_encoding_a_record_of_the_wrong_shape_fails_only_with_codec_error(name, record):
    for encode in (codec.encode, codec.encode_own):
        try:
            encoded = encode(name, record)
        except codec.CodecError:
            continue
        assert codec.decode(encoded)[0] == name
