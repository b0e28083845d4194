"""List+watch one API resource onto its source topic, resuming where the last acknowledged record left off.

The loop is client-go's reflector: list (paged) at a resourceVersion, then watch from it; a watch that
ends is resumed from the last version seen (bookmarks included); a 410 Gone, or a start without a
checkpoint, relists. Pods and Nodes are also relisted when the bridge starts, since the actuator needs
them in its view; that relist produces only what changed since the checkpoint, so it is a resume. What a
relist produces is decided against the checkpoint (``checkpoint``): objects at a new resourceVersion,
tombstones for keys that disappeared.

Added and modified objects are converted by ``convert`` and produced as ``koord apply`` produces them;
deleted ones as ``koord delete`` does (a tombstone on the key), except what koordstream published itself
(``convert.PUBLISHED_BY``). One the conversion refuses (invalid, or too big for the record limit or the
state budget) becomes a dead letter, is counted (``koord_bridge_refused``) and gets a Warning Event
(``KoordstreamRefused``) once the batch is produced; an Event that cannot be written is logged.

Watch events are handled in batches: the events that arrived while the last batch was being produced (at
most ``watch_batch``) are shown in the view in their order, sent together and awaited once, then
checkpointed in one transaction. The view is the watched cluster, so it shows a batch (or a relist) before
it is produced: a pod's decision can reach the actuator before the broker's acknowledgement of the pod's
record reaches this reflector, and must find the pod. The checkpoint is written only after the broker
acknowledged the batch, so a crash re-produces at most that batch (same resourceVersions) and loses
nothing. Any API server or broker failure is logged and retried with backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TypeVar

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError
from prometheus_client import Counter

from streams.bridge import convert
from streams.bridge.api import GONE, ApiError, KubeApi, TransportError
from streams.bridge.checkpoint import Checkpoint
from streams.bridge.config import BridgeConfig, backoff_delay
from streams.bridge.resources import WatchedResource
from streams.bridge.view import ClusterView
from streams.objects import ManifestError
from streams.schemas import codec

log = logging.getLogger(__name__)

OBJECTS = Counter("koord_bridge_objects", "Object changes the bridge produced", ["resource", "change"])
REFUSED = Counter("koord_bridge_refused", "Object changes the bridge dead-lettered instead of producing", ["resource"])
DELETED = "DELETED"
BOOKMARK = "BOOKMARK"
T = TypeVar("T")


class Reflector:
    def __init__(self, resource: WatchedResource, api: KubeApi, producer: AIOKafkaProducer, topics: dict[str, str],
                 checkpoint: Checkpoint, view: ClusterView, config: BridgeConfig) -> None:
        self.resource, self.api, self.producer, self.topics = resource, api, producer, topics
        self.checkpoint, self.view, self.config = checkpoint, view, config
        self.refused: list[tuple[dict, str]] = []
        """(object, reason) of the refusals of the batch being produced, reported once it is."""

    async def run(self) -> None:
        """Forever: (re)list when needed, watch, retry failures with backoff."""
        attempt = 0
        while True:
            try:
                version = self.checkpoint.cursor(self.resource.name)
                if version is None or self.view.needs_list(self.resource.kind):
                    version = await self.relist()
                async with contextlib.aclosing(batches(self.api.watch(self.resource, version),
                                                       self.config.watch_batch)) as watched:
                    async for events in watched:
                        attempt = 0
                        await self.apply(events)
            except ApiError as error:
                if error.code == GONE:
                    log.info("%s: %s; relisting", self.resource.name, error)
                    self.checkpoint.forget_cursor(self.resource.name)
                    continue
                attempt += 1
                log.error("%s (retry %d)", error, attempt)
                await asyncio.sleep(backoff_delay(attempt, self.config))
            except (TransportError, KafkaError, OSError) as error:
                attempt += 1
                log.warning("%s: %s: %s (retry %d)", self.resource.name, type(error).__name__, error, attempt)
                await asyncio.sleep(backoff_delay(attempt, self.config))

    async def relist(self) -> str:
        """List everything; produce what changed since the checkpoint and tombstones for what is gone."""
        objects, version = await self.api.list(self.resource, self.config.list_page)
        known = self.checkpoint.known(self.resource.name)
        changed = [obj for obj in objects if convert.mirrored(obj)
                   and known.get(convert.object_key(self.resource, obj)) != obj["metadata"].get("resourceVersion")]
        present = {convert.object_key(self.resource, obj) for obj in objects}
        gone = sorted(set(known) - present)
        sends = [self._record(obj) for obj in changed]
        sends += [(self.topics[convert.topic_id(self.resource)], key, None) for key in gone]
        self.view.replace(self.resource.kind, objects)
        await self._produce(sends)
        self.checkpoint.commit(self.resource.name, version,
                               {convert.object_key(self.resource, o): o["metadata"]["resourceVersion"] for o in changed},
                               gone)
        OBJECTS.labels(self.resource.name, "listed").inc(len(changed))
        OBJECTS.labels(self.resource.name, "deleted").inc(len(gone))
        log.info("%s: listed %d at resourceVersion %s: %d produced, %d tombstoned", self.resource.name,
                 len(objects), version, len(changed), len(gone))
        return version

    async def apply(self, events: list[tuple[str, dict]]) -> None:
        """Watch events, in order: show them in the view and produce them, then move the checkpoint past the
        last in one transaction."""
        sends: list[tuple[str, str, bytes | None]] = []
        versions: dict[str, str | None] = {}  # key -> version produced; None: tombstoned; a key's last event wins
        for change, obj in events:
            if change == BOOKMARK:
                continue
            self.view.observe(self.resource.kind, obj, deleted=change == DELETED)
            if not convert.mirrored(obj):
                continue
            key = convert.object_key(self.resource, obj)
            if change == DELETED:
                sends.append((self.topics[convert.topic_id(self.resource)], key, None))
                versions[key] = None
            else:
                sends.append(self._record(obj))
                versions[key] = obj["metadata"].get("resourceVersion")
        await self._produce(sends)
        self.checkpoint.commit(self.resource.name, events[-1][1]["metadata"].get("resourceVersion"),
                               {key: v for key, v in versions.items() if v is not None},
                               [key for key, v in versions.items() if v is None])
        for change, _ in events:
            if change != BOOKMARK:
                OBJECTS.labels(self.resource.name, change.lower()).inc()

    def _record(self, obj: dict) -> tuple[str, str, bytes]:
        """(topic, key, value) of an added or modified object; a dead letter when it cannot be converted."""
        try:
            record = convert.to_object_record(self.resource, obj)
        except ManifestError as error:
            log.warning("dead letter: %s: %s", convert.describe(self.resource, obj), error)
            REFUSED.labels(self.resource.name).inc()
            self.refused.append((obj, str(error)))
            topic = self.topics[convert.topic_id(self.resource)]
            letter = convert.dead_letter_record(self.resource, obj, str(error), topic)
            return self.topics["deadletters"], convert.object_key(self.resource, obj), codec.encode("DeadLetter", letter)
        return self.topics[record.topic], record.key, codec.encode(record.schema, record.record)

    async def _produce(self, sends: list[tuple[str, str, bytes | None]]) -> None:
        futures = [await self.producer.send(topic, key=key.encode(), value=value) for topic, key, value in sends]
        for future in futures:
            await future
        refused, self.refused = self.refused, []
        for obj, reason in refused:
            try:
                await self.api.refusal_event(self.resource.kind, self.resource.api_version, obj, reason)
            except (ApiError, TransportError) as error:
                log.warning("%s: no refusal event: %s", convert.describe(self.resource, obj), error)


async def batches(events: AsyncIterator[T], limit: int) -> AsyncIterator[list[T]]:
    """``events`` in lists: the first event waited for, then those that arrived meanwhile, at most ``limit``.
    A task reads ``events`` ahead (at most ``limit`` more); its error is raised after the events before it."""
    queue: asyncio.Queue = asyncio.Queue(limit)
    end = object()

    async def read() -> None:
        try:
            async for event in events:
                await queue.put(event)
        except Exception as error:
            await queue.put(_Failed(error))
        else:
            await queue.put(end)

    reader = asyncio.create_task(read())
    try:
        while True:
            batch = [await queue.get()]
            while len(batch) < limit and not queue.empty():
                batch.append(queue.get_nowait())
            stop = next((i for i, event in enumerate(batch) if event is end or isinstance(event, _Failed)), None)
            if stop is None:
                yield batch
                continue
            if stop:
                yield batch[:stop]
            if isinstance(batch[stop], _Failed):
                raise batch[stop].error
            return
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader


class _Failed:
    def __init__(self, error: Exception) -> None:
        self.error = error
