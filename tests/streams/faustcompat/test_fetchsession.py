"""Fetch sessions (KIP-227) without a broker: what each request sends, how answers and errors move the session,
and the wire fields of the request aiokafka encodes. ``tests/integration/test_fetch_sessions.py`` consumes
through them on the real brokers."""

from __future__ import annotations

from aiokafka.protocol.fetch import FetchRequest, FetchRequest_v4, FetchRequest_v11, FetchResponse_v11

from streams.faustcompat.fetchsession import (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH, MAX_EPOCH,
                                              FetchSession, SessionFetchRequest)

MAX = 1 << 20
TOPICS = [("a", [(0, 10, MAX), (1, 20, MAX)]), ("b", [(0, 5, MAX)])]


def _established(session_id: int = 7) -> FetchSession:
    session = FetchSession()
    session.next_request(TOPICS)
    assert session.on_response(0, session_id)
    return session


def test_the_first_request_is_full_and_asks_for_a_session():
    session = FetchSession()
    assert session.next_request(TOPICS) == (0, 0, TOPICS, [])
    assert session.on_response(0, 7)
    assert (session.id, session.epoch) == (7, 1)


def test_an_incremental_request_sends_only_what_changed_and_forgets_what_left():
    session = _established()
    moved = [("a", [(0, 12, MAX)]), ("b", [(0, 5, MAX)]), ("c", [(3, 0, MAX)])]
    assert session.next_request(moved) == (7, 1, [("a", [(0, 12, MAX)]), ("c", [(3, 0, MAX)])], [("a", [1])])
    assert session.on_response(0, 7)
    assert session.epoch == 2
    assert session.next_request(moved) == (7, 2, [], [])


def test_a_request_without_answer_is_sent_again_from_what_the_broker_acknowledged():
    session = _established()
    session.next_request([("a", [(0, 11, MAX)])])
    assert session.next_request([("a", [(0, 11, MAX)])]) == (7, 1, [("a", [(0, 11, MAX)])], [("a", [1]), ("b", [0])])


def test_no_session_from_the_broker_keeps_the_requests_full():
    session = FetchSession()
    session.next_request(TOPICS)
    assert session.on_response(0, 0)
    assert session.next_request(TOPICS) == (0, 0, TOPICS, [])


def test_an_unknown_session_starts_a_new_one():
    session = _established()
    session.next_request(TOPICS)
    assert not session.on_response(FETCH_SESSION_ID_NOT_FOUND, 0)
    assert session.next_request(TOPICS) == (0, 0, TOPICS, [])


def test_a_wrong_epoch_closes_the_session_and_starts_a_new_one():
    session = _established()
    session.next_request(TOPICS)
    assert not session.on_response(INVALID_FETCH_SESSION_EPOCH, 0)
    assert session.next_request(TOPICS) == (7, 0, TOPICS, [])
    assert session.on_response(0, 9)
    assert (session.id, session.epoch) == (9, 1)


def test_the_epoch_wraps_to_one():
    session = _established()
    session.epoch = MAX_EPOCH
    session.next_request(TOPICS)
    assert session.on_response(0, 7)
    assert session.epoch == 1


def test_an_answer_without_a_request_is_ignored():
    session = _established()
    assert not session.on_response(0, 99)
    assert (session.id, session.epoch) == (7, 1)


def _request() -> FetchRequest:
    return FetchRequest(100, 1, 1 << 26, 0, TOPICS)


def test_the_request_on_the_wire_carries_the_session_and_only_the_changes():
    session = _established()
    request = SessionFetchRequest(FetchRequest(100, 1, 1 << 26, 0, [("a", [(0, 12, MAX)])]), session)
    struct = request.build(FetchRequest_v11)
    decoded = FetchRequest_v11.decode(struct.encode())
    assert (decoded.session_id, decoded.session_epoch) == (7, 1)
    assert decoded.topics == [("a", [(0, -1, 12, -1, MAX)])]
    assert decoded.forgotten_topics_data == [("a", [1]), ("b", [0])]
    assert request.topics == [("a", [(0, 12, MAX)])]


def test_decoding_the_response_acknowledges_the_request():
    session = FetchSession()
    request = SessionFetchRequest(_request(), session)
    struct = request.build(FetchRequest_v11)
    response = FetchResponse_v11(0, 0, 42, [])
    decoded = struct.RESPONSE_TYPE.decode(response.encode())
    assert decoded.session_id == 42 and request.acknowledged
    assert (session.id, session.epoch) == (42, 1)


def test_a_fetch_version_without_sessions_is_sent_full_and_sessionless():
    session = FetchSession()
    struct = SessionFetchRequest(_request(), session).build(FetchRequest_v4)
    assert struct.topics == TOPICS and not hasattr(struct, "session_id")
    assert (session.id, session.epoch) == (0, 0)

