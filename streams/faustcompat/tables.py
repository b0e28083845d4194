"""Two things Faust's tables offer no argument for. Checked against faust-streaming 0.15.3
(``FAUST_VERSION``).

- A table's changelog topic is built (``Collection._new_changelog_topic``) with the table's value
  serializer at construction, and ``app.Table`` takes none: :func:`raw_changelog` switches a table to
  raw bytes and builds its changelog topic again.
- Table writes go to the changelog through ``Collection.send_changelog``, which returns the delivery
  future nobody waits for: :func:`on_changelog_send` hands each one to a callback.
"""

from __future__ import annotations

from typing import Any, Callable


def raw_changelog(table) -> None:
    """Make ``table`` (a Faust table, before the app starts) keep and send its values as raw bytes."""
    table.value_serializer = "raw"
    table.changelog_topic = table._new_changelog_topic()


def on_changelog_send(table, callback: Callable[[Any], object]) -> None:
    """Call ``callback`` with the delivery future of every changelog write of ``table``."""
    send_changelog = table.send_changelog

    def tracked(*args, **kwargs):
        future = send_changelog(*args, **kwargs)
        callback(future)
        return future

    table.send_changelog = tracked
