"""A source record read: the router's check and the event it becomes, without Faust.

The router (``streams.agents.router``) forwards each good source record to its inboxes in an envelope
(``routing.envelope``); the domain router reads the pods itself (``routing.DOMAIN_ROUTER_SOURCES``) and applies
each good one as the event such an envelope would carry. Both read a record here, so it is refused, timed and
acknowledged alike whichever of them reads it: refused with the router's reasons (``validation.check_source``),
timed at most ``MAX_AHEAD_MS`` past the reader's clock, asking for an Ack when ``koord apply`` wrote it.
"""

from __future__ import annotations

import dataclasses
import logging

from streams import routing, validation
from streams.events import MAX_AHEAD_MS, Causation, InboxEvent, bounded_time
from streams.metrics import FUTURE_TIMES

STAGE = validation.ROUTER_STAGE
"""The stage a refused source record is dead-lettered under, whichever router read it."""
log = logging.getLogger(__name__)


class Refused(ValueError):
    """A source record no inbox gets; the message is the dead letter's reason."""


@dataclasses.dataclass(frozen=True)
class Source:
    """A good source record, as a forward of it would say it."""

    key: str
    kind: str
    record: dict | None
    timestamp_ms: int
    """Its time as forwarded (``streams.events.bounded_time``)."""
    ack: bool

    def event(self, message) -> InboxEvent:
        """The event of ``message`` read from its source topic itself: its source is its inbox
        (``Causation.direct``)."""
        cause = Causation(message.topic, message.partition, message.offset,
                          message.topic, message.partition, message.offset)
        return InboxEvent(cause, self.timestamp_ms, self.key, self.kind, self.record, self.ack)


def read(source_id: str, message, now_ms: int) -> Source:
    """``message`` (a Faust message of the source topic ``source_id``: its timestamp in seconds) checked at
    ``now_ms``; :class:`Refused` with the reason when no inbox may get it, also when the check itself fails."""
    try:
        key, kind, record, reason = validation.check_source(source_id, message, now_ms)
    except Exception as error:
        raise failed(message, error) from None
    if reason is not None:
        raise Refused(reason)
    timestamp_ms = int(message.timestamp * 1000)
    forwarded_ms = bounded_time(timestamp_ms, now_ms)
    if forwarded_ms < timestamp_ms:
        FUTURE_TIMES.labels(STAGE, "clamped").inc()
        log.warning("%s[%d]@%d is timed %d ms ahead of the router's clock; forwarded at %d ms ahead",
                    message.topic, message.partition, message.offset, timestamp_ms - now_ms, MAX_AHEAD_MS)
    return Source(key, kind, record, forwarded_ms, _has(message.headers, routing.ACK_HEADER))


def failed(message, error: Exception) -> Refused:
    """The refusal of ``message`` when a router's own code failed on it (logged with its traceback): a bug met by
    one record dead-letters that record and stops nothing."""
    log.exception("router failed on %s[%d]@%d; dead-lettered", message.topic, message.partition, message.offset)
    return Refused(f"the router failed on this record: {type(error).__name__}: {error}")


def _has(headers, header: str) -> bool:
    items = headers.items() if isinstance(headers, dict) else (headers or ())
    return any(name == header for name, _ in items)
