"""``Signer.problem`` on hostile records: whatever the headers, key and value (and whatever secret signed them),
it returns a reason or None and never raises, since the readers call it before anything else and one
exception would stop them; and it returns None exactly for a record signed with its secret for its topic."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from streams.signing import HEADER, Signer

TOPICS = st.sampled_from(["inbox-scheduling", "inbox-node", "decisions", "noderesources"]) | st.text(max_size=12)
BYTES = st.none() | st.binary(max_size=64)
NAMES = st.sampled_from([HEADER, HEADER.encode(), "koord-ack", "KOORD-MAC", b"\xff\xfe"]) | st.text(max_size=10) | \
    st.binary(max_size=10)
HEADER_VALUES = st.none() | st.binary(max_size=40) | st.binary(min_size=32, max_size=32)
HEADERS = st.none() | st.lists(st.tuples(NAMES, HEADER_VALUES), max_size=4) | \
    st.dictionaries(st.text(max_size=10) | st.just(HEADER), HEADER_VALUES, max_size=3)
SECRETS = st.binary(max_size=48)
KEY_FILES = st.binary(min_size=32, max_size=32)
"""Secrets as a home's record.key holds them (HMAC pads a shorter key with zeros, so b"" and b"\\x00" sign alike)."""


@given(SECRETS, TOPICS, BYTES, BYTES, HEADERS)
def test_any_record_gives_a_reason_or_none_and_never_raises(secret, topic_id, key, value, headers):
    problem = Signer(secret, "test").problem(topic_id, key, value, headers)
    assert problem is None or (isinstance(problem, str) and HEADER in problem)


@given(SECRETS, TOPICS, BYTES, BYTES, st.lists(st.tuples(NAMES, HEADER_VALUES), max_size=3))
def test_a_record_signed_with_the_secret_for_its_topic_verifies_among_any_other_headers(secret, topic_id, key, value,
                                                                                        others):
    signer = Signer(secret, "test")
    others = [(name, header) for name, header in others if name not in (HEADER, HEADER.encode())]
    assert signer.problem(topic_id, key, value, [*others, signer.header(topic_id, key, value)]) is None


@given(KEY_FILES, KEY_FILES, TOPICS, TOPICS, BYTES, BYTES, BYTES, BYTES)
def test_a_signature_for_another_secret_topic_key_or_value_does_not_verify(secret, other_secret, topic_id, other_topic,
                                                                         key, other_key, value, other_value):
    signer = Signer(secret, "test")
    header = Signer(other_secret, "other").header(other_topic, other_key, other_value)
    same = (other_secret, other_topic, other_key, other_value) == (secret, topic_id, key, value)
    assert (signer.problem(topic_id, key, value, [header]) is None) == same
