"""Table recovery read in bulk, not through Faust's per-record conductor.

Faust recovers a table by resuming its changelog partitions on the worker's consumer: every record goes
through the conductor, the changelog channel's queue and ``Recovery._slurp_changelogs`` one at a time (an
event, a queue hop, an await, the recovery bookkeeping), about 140 µs a record on this machine; a worker
of 10,000 nodes and 50,000 pods reads ~180,000 changelog records and took 26 s to do it.

:func:`install_bulk_recovery` wraps ``Recovery._seek_offsets``, which Faust calls for the active changelog
partitions once their highwaters and start offsets are known and before it decides whether any need
recovery. Before the seek, a consumer of its own (no group, the workers' isolation level) reads each
partition from the start offset Faust chose to its highwater with ``getmany``. Of each fetched chunk only
the records that decide the table are decoded: the last record of each key and the last removal before it
(a value a later one of its key replaces is never read). A record of a table with text keys and JSON or raw
values, as every koordstream table has, is decoded here as Faust decodes it (``want_str``, Faust's JSON
``loads``); any other (no key, a key that is not text, a value Faust would read as a model, anything that
fails) goes through the changelog topic's own decoder, which skips an undecodable one as
``streams.faustcompat.changelogs`` skips it, and then every record of its key is applied. The chunk is
applied with the table's ``apply_changelog_batch``, as Faust's recovery applies its buffers, and the
partition's recovery offset advances with it, so Faust then finds nothing left to read ("Recovery
complete") and the rest of its recovery (the seek, ``on_recovery_completed`` dropping keys of partitions no
longer assigned, standbys) runs as before. The worker logs ``bulk recovery read N changelog records in S s``.

A read that has not reached a highwater by :data:`BUDGET_SHARE` of ``broker_request_timeout`` (Faust
stops its recovery service when the seek outlasts that timeout), or that took no record for
:data:`STALL_S`, stops there: Faust's own recovery reads the rest from the offsets reached, and so it does
after a bulk read that failed (logged). The reader waits for a fetch as aiokafka does by default, on Tansu
too: Tansu serves a fetch whose wait is too short for the records asked for nothing of them
(``streams.broker.tansu_workarounds``). A rebalance during
the read cancels it the same way Faust cancels the seek; what was applied stays with its offsets, as
Faust's recovery keeps what it applied. Checked against faust-streaming 0.15.3 (``FAUST_VERSION``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any, Callable, NamedTuple

log = logging.getLogger(__name__)

BUDGET_SHARE = 0.5
"""The share of Faust's ``broker_request_timeout`` (its bound on the seek) the bulk read may take."""
STALL_S = 5.0
"""How long the read may take no record of a partition it still reads before it leaves the rest to Faust."""
FETCH_TIMEOUT_MS = 1000
"""How long one ``getmany`` waits for records."""
FETCHER_STEPS = 3
"""Event-loop turns given to aiokafka's fetcher after each ``getmany``: enough for it to send the next fetch
(wake, create the request's task, write it), so the broker reads the next records while these are decoded."""
MODEL_MARKER = "__faust"
"""The key of a JSON object Faust reconstructs as a model (``faust.models.base.Model._maybe_namespace``)."""


class ChangelogEvent(NamedTuple):
    """What ``apply_changelog_batch`` reads of a Faust event: the decoded key and value, and the record
    (its ``value``, None for a removed key, and its ``partition``)."""

    key: Any
    value: Any
    message: Any


def install_bulk_recovery(reader: Callable[[Any], Any]) -> None:
    """Make Faust's table recovery read active changelogs in bulk (idempotent). ``reader(app)`` is a new,
    not yet started aiokafka consumer without a group for the app's broker."""
    from faust.tables.recovery import Recovery

    if not getattr(Recovery, "_koord_bulk_recovery", False):
        bulk_recovery(Recovery, reader)


def bulk_recovery(cls: type, reader: Callable[[Any], Any]) -> None:
    """Wrap ``_seek_offsets`` of ``cls``, a class with the interface of Faust's ``Recovery`` (``app``,
    ``tp_to_table``, ``active_highwaters``): for the active partitions, :func:`read_changelogs` first."""
    seek_offsets = cls._seek_offsets

    async def _seek_offsets(self, consumer, tps, offsets, title):
        if title == "active":
            try:
                await read_changelogs(self.app, reader(self.app), self.tp_to_table, tps, offsets,
                                      self.active_highwaters)
            except Exception:
                log.exception("bulk recovery failed: Faust's recovery reads the rest of the changelogs")
        await seek_offsets(self, consumer, tps, offsets, title)

    cls._seek_offsets = _seek_offsets
    cls._koord_bulk_recovery = True


async def read_changelogs(app, consumer, tables: dict, tps, offsets, highwaters) -> None:
    """Read each of ``tps`` after ``offsets[tp]`` (the last offset applied, -1: none) up to ``highwaters[tp]``
    (its last offset) into its table ``tables[tp]`` through ``consumer`` (started and stopped here),
    advancing ``offsets[tp]`` with what was applied."""
    from aiokafka import TopicPartition

    pending = {TopicPartition(tp.topic, tp.partition): tp for tp in tps
               if tp in tables and highwaters.get(tp) is not None and highwaters[tp] > _last(offsets, tp)}
    if not pending:
        await consumer.stop()  # never started, but aiokafka logs an ERROR for a consumer it collects unstopped
        return
    started = time.monotonic()
    deadline = started + app.conf.broker_request_timeout * BUDGET_SHARE
    records, progressed = 0, started
    try:
        await consumer.start()
        consumer.assign(sorted(pending))
        for partition, tp in pending.items():
            consumer.seek(partition, _last(offsets, tp) + 1)
        while pending and time.monotonic() < min(deadline, progressed + STALL_S):
            fetched = await consumer.getmany(*pending, timeout_ms=FETCH_TIMEOUT_MS)
            for _ in range(FETCHER_STEPS):
                await asyncio.sleep(0)
            for partition, chunk in fetched.items():
                tp = pending[partition]
                chunk = [record for record in chunk if record.offset <= highwaters[tp]]
                if chunk:
                    records += len(chunk)
                    progressed = time.monotonic()
                    await _apply(tables[tp], chunk)
                    offsets[tp] = chunk[-1].offset
            for partition, tp in list(pending.items()):
                if await consumer.position(partition) > highwaters[tp]:
                    offsets[tp] = highwaters[tp]
                    del pending[partition]
    except BaseException:
        with contextlib.suppress(asyncio.CancelledError):  # aiokafka's stop after a failure raises it
            await consumer.stop()
        raise
    await consumer.stop()
    log.info("bulk recovery read %d changelog records in %.2f s%s", records, time.monotonic() - started,
             "; Faust's recovery reads the rest of " + ", ".join(
                 f"{tp.topic}[{tp.partition}] from offset {_last(offsets, tp) + 1} to {highwaters[tp]}"
                 for tp in sorted(pending.values())) if pending else "")


def _last(offsets, tp) -> int:
    """The last offset of ``tp`` applied, -1 for none (Faust's start offsets are one before the first)."""
    offset = offsets.get(tp)
    return -1 if offset is None else max(offset, -1)


async def _apply(table, chunk: list) -> None:
    """Decode the records of ``chunk`` (one partition's, in order) that decide the table, as the changelog
    channel decodes, and apply them."""
    decode = table.changelog_topic.decode
    events = []
    for record, decoded in _deciding(chunk, _json_values(table.changelog_topic.schema)):
        if decoded is None:
            event = await decode(record, propagate=True)
            decoded = event.key, event.value
        events.append(ChangelogEvent(decoded[0], decoded[1], record))
    table.apply_changelog_batch(events)


def _deciding(chunk: list, json_values: bool | None) -> list[tuple[Any, tuple | None]]:
    """The records of ``chunk`` that decide the table, in order, each with its (key, value) decoded here or
    None for the channel's decoder. Of a key (as bytes) whose last record decodes here, that record and the
    last removal before it (Faust's store removes a key a batch removed and left a false value,
    ``faust.stores.memory.Store.apply_changelog_batch``): the earlier values are replaced unread. Of any other
    key, every record: the channel may skip the last one, and then an earlier one decides."""
    if json_values is None:
        return [(record, None) for record in chunk]
    last, removed = {}, {}
    for index, record in enumerate(chunk):
        last[record.key] = index
        if record.value is None:
            removed[record.key] = index
    decoded = {index: _decoded(chunk[index], json_values) for index in last.values()}
    deciding = []
    for index, record in enumerate(chunk):
        final = last[record.key]
        if index == final:
            deciding.append((record, decoded[index]))
        elif decoded[final] is None or index == removed.get(record.key):
            deciding.append((record, _decoded(record, json_values)))
    return deciding


def _json_values(schema) -> bool | None:
    """For a changelog schema of text keys in JSON and values in JSON (True) or raw (False), as every
    koordstream table has, whether its values are JSON; None for any other."""
    if (schema.key_type is None and schema.value_type is None and schema.allow_empty
            and schema.key_serializer == "json" and schema.value_serializer in ("json", "raw")):
        return schema.value_serializer == "json"
    return None


def _decoded(record, json_values: bool) -> tuple[str, Any] | None:
    """(key, value) of ``record`` as Faust decodes a record of such a schema (``want_str``, then Faust's JSON
    ``loads``; a tombstone's value None), without an event; None for a record it would decode otherwise
    (no key, a key that is not text, a value with Faust's model marker ``__faust``) or not at all: the
    channel's decoder takes those, and skips the undecodable."""
    from faust.utils import json as faust_json

    if record.key is None:
        return None
    try:
        key = faust_json.loads(record.key.decode())
        value = record.value
        if json_values and value is not None:
            value = faust_json.loads(value.decode())
    except Exception:  # Faust's decoder skips what it cannot decode, whatever the error
        return None
    if type(key) is not str or (type(value) is dict and MODEL_MARKER in value):
        return None
    return key, value
