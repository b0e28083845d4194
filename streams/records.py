"""Decoded records: what every plain Kafka reader does with a poll, written once.

The node agent, the simulator and the bridge read topics with an aiokafka
consumer and do the same with each record of a poll, in order: a tombstone is
skipped (or handed on as such), a value is decoded with ``streams.schemas.codec``,
one that does not decode goes to the reader's dead-letter path with the reason
(``dead_letter_of`` makes its DeadLetter) or is skipped, and a good one goes to the reader's handler. ``dispatch`` is
that (``in_order`` flattens one ``getmany``), ``decoded`` the same for a
synchronous reader; each reader keeps its own loop around it: where it starts
reading, how it retries, and when it commits. Faust-free, so the node agent
can use it.
"""

from __future__ import annotations

import dataclasses
import inspect
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from streams import deadletter
from streams.schemas import codec


@dataclasses.dataclass(frozen=True, slots=True)
class Decoded:
    message: Any
    """The consumed record (``topic``, ``partition``, ``offset``, ``key``, ``value``, ``timestamp``)."""
    schema: str | None
    """The record's schema name; None for a tombstone."""
    value: dict | None
    """The decoded value; None for a tombstone."""


Handler = Callable[[Decoded], Awaitable[None] | None]
BadHandler = Callable[[Any, str], Awaitable[None] | None]


def in_order(batches: Mapping[Any, Sequence]) -> list:
    """The records of one ``getmany``, partition after partition, each partition's in offset order."""
    return [message for messages in batches.values() for message in messages]


def decode(message: Any) -> Decoded | str:
    """The record decoded (schema and value None for a tombstone), or why it does not decode
    (``"CodecError: ..."``)."""
    if message.value is None:
        return Decoded(message, None, None)
    try:
        schema, value = codec.decode(message.value)
    except codec.CodecError as error:
        return f"{type(error).__name__}: {error}"
    return Decoded(message, schema, value)


def dead_letter_of(stage: str, message: Any, reason: str) -> dict:
    """The DeadLetter of one consumed record that ``reason`` says is bad (counted; ``streams.deadletter``)."""
    return deadletter.dead_letter(stage, message.topic, message.partition, message.offset, message.key,
                                  message.value, reason, int(time.time() * 1000))


def decoded(messages: Iterable, on_bad: Callable[[Any, str], None] | None = None,
            tombstones: bool = False) -> Iterator[Decoded]:
    """``dispatch`` for a synchronous reader (a replay of recorded records): the decoded records, in order."""
    for message in messages:
        item = decode(message)
        if isinstance(item, str):
            if on_bad is not None:
                on_bad(message, item)
        elif item.schema is not None or tombstones:
            yield item


async def dispatch(messages: Iterable, handle: Handler, on_bad: BadHandler | None = None,
                   tombstones: bool = False) -> None:
    """Hand each record of ``messages``, in order, decoded to ``handle``; one that does not decode goes to
    ``on_bad`` with the reason, or is skipped without it. Tombstones are skipped unless ``tombstones``.
    Either callback may be a coroutine function."""
    for message in messages:
        item = decode(message)
        if isinstance(item, str):
            if on_bad is not None:
                await _call(on_bad, message, item)
        elif item.schema is not None or tombstones:
            await _call(handle, item)


async def _call(callback: Callable[..., Awaitable[None] | None], *args: Any) -> None:
    result = callback(*args)
    if inspect.isawaitable(result):
        await result
