"""Whether the records ``koord apply`` or ``koord delete`` produced have come all the way through.

A record is through once the read model holds that version of its object (the source partition it
landed on, at its offset or later) and an Ack from every aggregate the router sent it to, with every
output those Acks list (``queries.acknowledged``); ``streams.routing`` says which aggregates, and how
many of their inbox partitions, a record goes to. Progress is read from the stream (source offsets and
Acks carried into the read model), never from consumer lag (``streams.broker.tansu_workarounds`` says
why).
"""

from __future__ import annotations

import collections
import dataclasses
import time
from typing import Callable

from sqlalchemy.engine import Engine

from state import queries
from streams import routing

POLL_S = 0.1
"""How often :func:`wait_until_through` reads the read model again."""


@dataclasses.dataclass(frozen=True)
class Produced:
    """One record the CLI produced and where it landed."""

    kind: str
    """The object's kind (``Pod``, ``Node``, ...)."""
    topic_id: str
    """Topology id of its source topic (``pods``, ``nodes``, ...)."""
    key: str
    record: dict | None
    """The record as produced; None for a deletion."""
    topic: str
    """The source topic's name."""
    partition: int
    offset: int


def is_through(engine: Engine, inbox_partitions: dict[str, int], produced: Produced) -> bool:
    """Whether ``produced`` is through; ``inbox_partitions`` is inbox id -> partition count."""
    progress = queries.object_progress(engine, produced.topic_id, produced.key)
    if progress is None or progress[0] != produced.partition or progress[1] < produced.offset:
        return False
    routes = routing.routes(produced.topic_id, produced.key, produced.kind, produced.record, inbox_partitions)
    expected = collections.Counter(route.inbox for route in routes)
    return queries.acknowledged(engine, produced.topic, produced.partition, produced.offset, dict(expected))


def wait_until_through(engine: Engine, inbox_partitions: dict[str, int], produced: list[Produced], deadline: float,
                       clock: Callable[[], float] = time.monotonic,
                       sleep: Callable[[float], None] = time.sleep) -> list[Produced]:
    """Read the read model every :data:`POLL_S` until every record is through or ``clock()`` is past
    ``deadline``; return the records not through (none when all are)."""
    pending = list(produced)
    while pending:
        pending = [item for item in pending if not is_through(engine, inbox_partitions, item)]
        if not pending or clock() > deadline:
            break
        sleep(POLL_S)
    return pending
