"""Decoded records: what every plain Kafka reader does with a poll, written once.

The node agent, the simulator and the bridge read topics with an aiokafka
consumer and do the same with each record of a poll, in order: a tombstone is
skipped (or handed on as such), a value is decoded with ``streams.schemas.codec``,
one that does not decode goes to the reader's dead-letter path with the reason
(or is skipped), and a good one goes to the reader's handler. ``dispatch`` is
that (``in_order`` flattens one ``getmany``); each reader keeps its own loop
around it: where it starts reading, how it retries, and when it commits.
Faust-free, so the node agent can use it.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

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


async def dispatch(messages: Iterable, handle: Handler, on_bad: BadHandler | None = None,
                   tombstones: bool = False) -> None:
    """Hand each record of ``messages``, in order, decoded to ``handle``; one that does not decode goes to
    ``on_bad`` with the reason (``"CodecError: ..."``), or is skipped without it. Tombstones are skipped
    unless ``tombstones``. Either callback may be a coroutine function."""
    for message in messages:
        if message.value is None:
            if tombstones:
                await _call(handle, Decoded(message, None, None))
            continue
        try:
            schema, value = codec.decode(message.value)
        except codec.CodecError as error:
            if on_bad is not None:
                await _call(on_bad, message, f"{type(error).__name__}: {error}")
            continue
        await _call(handle, Decoded(message, schema, value))


async def _call(callback: Callable[..., Awaitable[None] | None], *args: Any) -> None:
    result = callback(*args)
    if inspect.isawaitable(result):
        await result
