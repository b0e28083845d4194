"""Table recovery past a changelog record that cannot be decoded.

Faust decodes each changelog record before recovery sees it. One whose key or value the table's serializer
cannot read (not JSON, not UTF-8) makes the changelog channel throw instead of delivering an event:
recovery logs "Error in recovery" and waits for the next event, but its offset of that partition never
reaches the highwater, so a restarted worker stays in recovery for good. Anyone who can write a changelog
could stop every worker that way.

:func:`install_skip_undecodable` gives every table's changelog topic a :class:`SkippingSchema`: such a
record becomes an event keyed :data:`SKIPPED`, logged and counted (``koord_changelog_skipped_total``, by
table). Recovery takes its offset like any other event's, and ``apply_changelog_batch`` leaves it out of
the table. Every koordstream table is keyed by text, so a key that decodes to anything else (no key, a
number, a list) is skipped too. Checked against faust-streaming 0.15.3 (``FAUST_VERSION``).
"""

from __future__ import annotations

import logging

from prometheus_client import Counter

log = logging.getLogger(__name__)

CHANGELOG_SKIPPED = Counter(
    "koord_changelog_skipped", "Changelog records table recovery skipped because their key or value cannot be "
    "decoded (no table writes them: someone else did)", ["table"])

SKIPPED = object()
"""The key of the event a skipped changelog record becomes; never applied to a table."""


def install_skip_undecodable() -> None:
    """Make table recovery skip undecodable changelog records (idempotent)."""
    from faust.tables.base import Collection

    if not getattr(Collection, "_koord_skip_undecodable", False):
        skip_undecodable(Collection)


def skip_undecodable(cls: type) -> None:
    """Wrap ``_new_changelog_topic`` and ``apply_changelog_batch`` of ``cls``, a class with the interface of
    Faust's table ``Collection`` (``name``): its changelog topics decode with a :class:`SkippingSchema`, and
    the events of the records it skipped are not applied."""
    new_changelog_topic, apply_changelog_batch = cls._new_changelog_topic, cls.apply_changelog_batch

    def _new_changelog_topic(self, **kwargs):
        return new_changelog_topic(self, **kwargs).clone(schema=skipping_schema(self.name))

    def apply(self, batch) -> None:
        return apply_changelog_batch(self, [event for event in batch if event.key is not SKIPPED])

    cls._new_changelog_topic = _new_changelog_topic
    cls.apply_changelog_batch = apply
    cls._koord_skip_undecodable = True


def skipping_schema(table: str):
    """A Faust schema for the changelog of ``table`` whose decode never raises for a bad record: it returns
    an event keyed :data:`SKIPPED` instead."""
    from faust import Schema
    from faust.exceptions import DecodeError, KeyDecodeError

    class SkippingSchema(Schema):
        def loads_key(self, app, message, *, loads=None, serializer=None):
            key = super().loads_key(app, message, loads=loads, serializer=serializer)
            if not isinstance(key, str):
                raise KeyDecodeError(f"key is not text: {message.key[:64]!r}" if message.key is not None
                                     else "record has no key")
            return key

        def compile(self, app, **kwargs):
            decode = super().compile(app, **kwargs)

            async def skipping(message, *, propagate: bool = False):
                try:
                    return await decode(message, propagate=True)
                except DecodeError as error:
                    CHANGELOG_SKIPPED.labels(table).inc()
                    log.warning("table %s skips changelog record %s[%d]@%d: %s", table, message.topic,
                                message.partition, message.offset, error)
                    return app.create_event(SKIPPED, None, message.headers, message)

            return skipping

    return SkippingSchema()
