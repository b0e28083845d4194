"""Publishing to Kafka through outages: a bounded buffer, reconnects with backoff, oldest metrics dropped first.

Two buffers, drained state first:

- **state** (Node, Device, Pod, ActuationAck): the latest value per (topic,
  identity) - the record key unless the caller names another, as acks do, one
  per actuation; a newer value replaces a queued older one. Never dropped, and
  bounded by the number of distinct objects rather than by time.
- **metrics** (NodeMetric): a FIFO of at most ``max_buffered_metrics``
  records; when full, the oldest is dropped and counted
  (``koord_node_agent_dropped_records_total``).

The drain loop connects, sends a batch and waits for every delivery (acks=all)
before taking the next; a failed batch goes back to the front of its buffer
(delivery is at least once) and the producer is rebuilt after a backoff of
``initial * factor^n`` seconds, capped, with +-jitter. Encoding happens on
submit, so a bad object fails where it is made, not in the loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping

from aiokafka import AIOKafkaProducer

from node_agent import metrics
from streams import kafka, limits
from streams.objects import Document, to_record
from streams.schemas import codec
from streams.settings import Settings

log = logging.getLogger(__name__)

METRIC_KINDS = frozenset({"NodeMetric"})
"""Kinds whose records are samples of a time series, the only ones that may be dropped."""


@dataclasses.dataclass(frozen=True)
class Backoff:
    initial_s: float = 0.5
    maximum_s: float = 30.0
    factor: float = 2.0
    jitter: float = 0.2
    """Each delay is multiplied by a uniform factor in [1 - jitter, 1 + jitter]."""

    def delay(self, attempt: int, rng: random.Random) -> float:
        base = min(self.initial_s * self.factor ** attempt, self.maximum_s)
        return base * rng.uniform(1 - self.jitter, 1 + self.jitter)


@dataclasses.dataclass(frozen=True, slots=True)
class Outgoing:
    topic_id: str
    key: str
    value: bytes


def encode_manifest(manifest: dict, source: str = "<node-agent>") -> tuple[str, Outgoing]:
    """(kind, record) of a Kubernetes-form manifest, exactly as ``koord apply`` would encode it."""
    record = to_record(Document(source, 0, 1, manifest))
    return record.kind, Outgoing(record.topic, record.key, codec.encode(record.schema, record.record))


ProducerFactory = Callable[[], AIOKafkaProducer]


class Publisher:
    def __init__(self, bootstrap: str, topic_names: Mapping[str, str], *, max_buffered_metrics: int = 360,
                 batch_size: int = 500, send_timeout_s: float = 30.0, backoff: Backoff = Backoff(),
                 producer_factory: ProducerFactory | None = None, seed: int | None = None) -> None:
        self._connected_gauge = metrics.BROKER_CONNECTED.labels(bootstrap)
        self._names = dict(topic_names)
        self._state: OrderedDict[tuple[str, str], Outgoing] = OrderedDict()
        """(topic id, identity) -> the latest record."""
        self._metrics: deque[Outgoing] = deque()
        self._max_metrics = max_buffered_metrics
        self._batch_size = batch_size
        self._send_timeout_s = send_timeout_s
        self._backoff = backoff
        self._rng = random.Random(seed)
        self._factory = producer_factory or (lambda: AIOKafkaProducer(
            **kafka.client_settings(bootstrap), acks="all", linger_ms=5, request_timeout_ms=10_000,
            max_request_size=limits.PRODUCER_MAX_BYTES, enable_idempotence=not Settings.from_env().tansu))
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self.connected = False
        self.dropped = 0

    # Submitting never blocks and never raises for a full buffer.

    def submit_manifest(self, manifest: dict, source: str = "<node-agent>") -> None:
        kind, outgoing = encode_manifest(manifest, source)
        self.submit(outgoing, droppable=kind in METRIC_KINDS)

    def submit_record(self, topic_id: str, key: str, schema: str, record: dict, *, droppable: bool = False,
                      identity: str | None = None) -> None:
        self.submit(Outgoing(topic_id, key, codec.encode(schema, record)), droppable=droppable, identity=identity)

    def submit(self, outgoing: Outgoing, *, droppable: bool, identity: str | None = None) -> None:
        """Queue ``outgoing``; a state record replaces a queued one with the same topic and identity (default: key)."""
        if outgoing.topic_id not in self._names:
            raise KeyError(f"topic id {outgoing.topic_id!r} is not in the topology")
        if droppable:
            self._metrics.append(outgoing)
            self._trim()
        else:
            slot = (outgoing.topic_id, outgoing.key if identity is None else identity)
            self._state.pop(slot, None)
            self._state[slot] = outgoing
        self._gauges()
        self._idle.clear()
        self._wakeup.set()

    @property
    def connected(self) -> bool:
        """Whether the last connect or send succeeded (``koord_node_agent_broker_connected``)."""
        return self._connected

    @connected.setter
    def connected(self, value: bool) -> None:
        self._connected = value
        self._connected_gauge.set(int(value))

    @property
    def pending(self) -> int:
        return len(self._state) + len(self._metrics)

    def _trim(self) -> None:
        while len(self._metrics) > self._max_metrics:
            dropped = self._metrics.popleft()
            self.dropped += 1
            metrics.DROPPED.labels(dropped.topic_id).inc()

    def _gauges(self) -> None:
        metrics.BUFFERED.labels("state").set(len(self._state))
        metrics.BUFFERED.labels("metric").set(len(self._metrics))

    def _take(self) -> tuple[list[tuple[tuple[str, str], Outgoing]], list[Outgoing]]:
        state, samples = [], []
        while self._state and len(state) < self._batch_size:
            state.append(self._state.popitem(last=False))
        while self._metrics and len(state) + len(samples) < self._batch_size:
            samples.append(self._metrics.popleft())
        return state, samples

    def _put_back(self, state: list[tuple[tuple[str, str], Outgoing]], samples: list[Outgoing]) -> None:
        for slot, outgoing in reversed(state):
            if slot not in self._state:  # a newer value submitted meanwhile wins
                self._state[slot] = outgoing
                self._state.move_to_end(slot, last=False)
        self._metrics.extendleft(reversed(samples))
        self._trim()
        self._gauges()

    # The drain loop.

    async def run(self, stop: asyncio.Event) -> None:
        """Deliver until ``stop`` is set, then make one last attempt to flush what is buffered."""
        attempt = 0
        producer = None
        try:
            while not stop.is_set():
                if producer is None:
                    producer = await self._connect()
                    if producer is None:
                        await wait_or_stop(stop, self._backoff.delay(attempt, self._rng))
                        attempt += 1
                        continue
                    attempt = 0
                if not self.pending:
                    self._idle.set()
                    self._wakeup.clear()
                    await _wait_any(stop, self._wakeup)
                    continue
                if not await self._send_batch(producer):
                    await self._close(producer)
                    producer = None
                    await wait_or_stop(stop, self._backoff.delay(attempt, self._rng))
                    attempt += 1
            if producer is not None:
                while self.pending and await self._send_batch(producer):
                    pass
        finally:
            if producer is not None:
                await self._close(producer)

    async def flushed(self, timeout_s: float) -> bool:
        """Wait until everything submitted so far is delivered; False on timeout."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout_s)
        except asyncio.TimeoutError:
            return False
        return not self.pending

    async def _connect(self) -> AIOKafkaProducer | None:
        producer = self._factory()
        try:
            await asyncio.wait_for(producer.start(), self._send_timeout_s)
        except Exception as err:
            metrics.RECONNECTS.inc()
            log.warning("broker unreachable (%s); %d records buffered", err, self.pending)
            await self._close(producer)
            self.connected = False
            return None
        self.connected = True
        return producer

    async def _send_batch(self, producer: AIOKafkaProducer) -> bool:
        state, samples = self._take()
        batch = [outgoing for _, outgoing in state] + samples
        try:
            async def deliver() -> None:
                futures = [await producer.send(self._names[o.topic_id], key=o.key.encode(), value=o.value)
                           for o in batch]
                await asyncio.gather(*futures)
            await asyncio.wait_for(deliver(), self._send_timeout_s)
        except Exception as err:
            metrics.RECONNECTS.inc()
            log.warning("publishing %d records failed (%s); will retry", len(batch), err)
            self._put_back(state, samples)
            self.connected = False
            return False
        for outgoing in batch:
            metrics.PUBLISHED.labels(outgoing.topic_id).inc()
        self._gauges()
        return True

    @staticmethod
    async def _close(producer: AIOKafkaProducer) -> None:
        try:
            await asyncio.wait_for(producer.stop(), 5)
        except Exception:
            pass


RETRY_S = 5.0
"""Seconds a node-agent loop reading Kafka waits before it tries again after an error."""


async def wait_or_stop(stop: asyncio.Event, seconds: float) -> bool:
    """Sleep ``seconds`` unless ``stop`` is set first; True when it was."""
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except asyncio.TimeoutError:
        return False
    return True


async def _wait_any(*events: asyncio.Event) -> None:
    waiters = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
