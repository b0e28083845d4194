"""A piece of a Faust event's private state the agents set. Checked against faust-streaming 0.15.3
(``FAUST_VERSION``).

``Message.acked`` is the flag ``Event.ack`` and ``Consumer.ack`` test before acknowledging: :func:`mark_acked`
sets it without acknowledging, so Faust skips the message and never commits its offset.
"""

from __future__ import annotations


def mark_acked(message) -> None:
    """Make Faust treat ``message`` (a Faust message) as acknowledged already, so it never commits it."""
    message.acked = True
