"""Incremental fetch sessions (KIP-227) for Faust's worker consumer on Kafka.

aiokafka 0.14 sends every Fetch as a full, sessionless request (session 0, epoch -1): every partition it
fetches is in the request, and every one comes back in the response, empty or not. The worker consumes
about 80 partitions (the source topics, the inboxes, the ticks). At a low rate each record costs a fetch
round trip, and encoding and decoding those 80 partitions in aiokafka's pure-Python protocol classes was
about a third of the worker's CPU at 50 pods/s.

In a fetch session the broker keeps the partitions and offsets of the requests it acknowledged: a request
lists only the partitions added or whose offset changed since then, and those removed as forgotten; a
response lists only the partitions with records, an error or a changed high watermark, log start offset or
last stable offset. :class:`FetchSession` follows Kafka's own client (``FetchSessionHandler``):

- epoch 0 asks for a new session with a full request (and closes the one named, if any); the response's
  session id is 0 when the broker made none (its cache was full, or it has no sessions), and the next
  request is full again;
- each acknowledged incremental request moves the epoch on by one (after 2**31 - 1 comes 1);
- ``FETCH_SESSION_ID_NOT_FOUND`` or ``INVALID_FETCH_SESSION_EPOCH`` (a request lost, an evicted session)
  starts over with a full request.

A request stands for the full request aiokafka built: what the broker holds after it is that request's
partitions, so the response is the full response less partitions with nothing new. aiokafka reads the
offsets it asked for from ``request.topics``, which stays the full list. Faust's livelock check reads when a
partition was last fetched (``TopicPartitionState.timestamp``, which aiokafka stamps on each partition of a
response): the wrapper stamps every partition of an acknowledged request, as a full response would have,
once a second at most.

:func:`install_fetch_sessions` wraps Faust's ``AIOKafkaConsumerThread._create_worker_consumer`` (checked
against faust-streaming 0.15.3) and the built consumer's ``Fetcher._proc_fetch_request``, an instance
lookup, as ``tansu_workarounds.pace_fetches`` does (aiokafka 0.14). Tansu keeps the full requests.
"""

from __future__ import annotations

import time
from collections import defaultdict

from aiokafka.protocol.fetch import FetchRequest
from aiokafka.structs import TopicPartition

from streams.broker.fetcher import ProcessFetch, wrap_fetch_requests
from streams.faustcompat.workerconsumer import wrap_worker_consumer

FETCH_SESSION_ID_NOT_FOUND = 70
INVALID_FETCH_SESSION_EPOCH = 71
MAX_EPOCH = 2**31 - 1
SESSION_VERSION = 7
"""The first Fetch version with sessions."""
STAMP_EVERY_MS = 1000
"""How often the fetched partitions' fetch time is stamped; Faust's check reads it in minutes."""

Topics = list[tuple[str, list[tuple[int, int, int]]]]
"""aiokafka's fetch list: per topic, (partition, offset, max bytes)."""


class FetchSession:
    """One consumer's fetch session with one broker: what the broker holds and the next request's epoch."""

    def __init__(self) -> None:
        self.id = 0
        """The broker's session id; 0: none."""
        self.epoch = 0
        """The next request's epoch; 0: a full request that asks for a new session (closing ``id``'s)."""
        self.held: dict[tuple[str, int], tuple[int, int]] = {}
        """The partitions the broker holds for the session, with their (offset, max bytes)."""
        self._pending: tuple[int, dict] | None = None

    def next_request(self, topics: Topics) -> tuple[int, int, Topics, list[tuple[str, list[int]]]]:
        """(session id, epoch, topics to send, forgotten topics) of the request that stands for fetching
        ``topics``."""
        wanted = {(topic, partition): (offset, max_bytes)
                  for topic, partitions in topics for partition, offset, max_bytes in partitions}
        self._pending = (self.epoch, wanted)
        if self.epoch == 0:
            return self.id, 0, topics, []
        held = self.held
        changed: dict[str, list] = defaultdict(list)
        for (topic, partition), (offset, max_bytes) in wanted.items():
            if held.get((topic, partition)) != (offset, max_bytes):
                changed[topic].append((partition, offset, max_bytes))
        forgotten: dict[str, list] = defaultdict(list)
        for topic, partition in held:
            if (topic, partition) not in wanted:
                forgotten[topic].append(partition)
        return self.id, self.epoch, list(changed.items()), list(forgotten.items())

    def on_response(self, error_code: int, session_id: int) -> bool:
        """Take the broker's answer to the last request; whether it was acknowledged."""
        if self._pending is None:
            return False
        epoch, wanted = self._pending
        self._pending = None
        if error_code in (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH):
            self.id = 0 if error_code == FETCH_SESSION_ID_NOT_FOUND else self.id
            self.epoch, self.held = 0, {}
            return False
        if epoch == 0:
            self.id, self.epoch = session_id, 1 if session_id else 0
        else:
            self.epoch = epoch + 1 if epoch < MAX_EPOCH else 1
        self.held = wanted if self.id else {}
        return True


class _Observed:
    """A Fetch response type whose decoding hands the session its answer (the connection decodes a
    response only while its request is awaited)."""

    def __init__(self, response_type, session: FetchSession, request: "SessionFetchRequest") -> None:
        self.response_type, self.session, self.request = response_type, session, request

    def decode(self, data):
        response = self.response_type.decode(data)
        self.request.acknowledged = self.session.on_response(response.error_code, response.session_id)
        return response


class SessionFetchRequest(FetchRequest):
    """aiokafka's full FetchRequest sent in ``session``: ``topics`` stays the full list."""

    def __init__(self, request: FetchRequest, session: FetchSession) -> None:
        super().__init__(request._max_wait_ms, request._min_bytes, request._max_bytes, request._isolation_level,
                         request._topics, request._rack_id)
        self.session = session
        self.acknowledged = False

    def build(self, request_struct_class):
        if request_struct_class.API_VERSION < SESSION_VERSION:
            return super().build(request_struct_class)
        full = self._topics
        session_id, epoch, self._topics, forgotten = self.session.next_request(full)
        try:
            struct = super().build(request_struct_class)
        finally:
            self._topics = full
        struct.session_id, struct.session_epoch, struct.forgotten_topics_data = session_id, epoch, forgotten
        struct.RESPONSE_TYPE = _Observed(request_struct_class.RESPONSE_TYPE, self.session, self)
        return struct


def use_fetch_sessions(consumer):
    """Make ``consumer`` (an aiokafka consumer, not yet started) fetch in sessions, one per broker
    (``consumer.koord_fetch_sessions``, by node id)."""
    sessions: dict[int, FetchSession] = {}
    consumer.koord_fetch_sessions = sessions

    def in_sessions(fetcher, process: ProcessFetch) -> ProcessFetch:
        stamped_ms = [0]

        async def _proc_fetch_request(assignment, node_id, request):
            request = SessionFetchRequest(request, sessions.setdefault(node_id, FetchSession()))
            found = await process(assignment, node_id, request)
            now_ms = int(time.time() * 1000)
            if request.acknowledged and assignment.active and now_ms - stamped_ms[0] >= STAMP_EVERY_MS:
                stamped_ms[0] = now_ms
                for topic, partitions in request.topics:
                    for partition, _, _ in partitions:
                        state = assignment.state_value(TopicPartition(topic, partition))
                        if state is not None:
                            state.timestamp = now_ms
            return found

        return _proc_fetch_request

    return wrap_fetch_requests(consumer, in_sessions)


def install_fetch_sessions(enabled: bool, cls: type | None = None) -> None:
    """Fetch in sessions with Faust's worker consumers built from now on when ``enabled`` (on Kafka; not on
    Tansu); ``cls``: a stand-in for Faust's ``AIOKafkaConsumerThread`` (``workerconsumer.wrap_worker_consumer``)."""
    if cls is None:
        from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread as cls
    wrap_worker_consumer(cls, "fetch_sessions", use_fetch_sessions, enabled)
