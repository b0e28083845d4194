"""Two pieces of a Faust event's private state the agents set. Checked against faust-streaming 0.15.3
(``FAUST_VERSION``).

- The current event is a context variable (``faust.streams._current_event``, a weak reference); a table
  write goes to the changelog partition of the current event. :func:`make_current` sets only that
  variable: ``Stream._set_current_event`` would also change the stream's own ``current_event``, which
  ``take_events`` reads while buffering the next batch.
- ``Message.acked`` is the flag ``Event.ack`` and ``Consumer.ack`` test before acknowledging:
  :func:`mark_acked` sets it without acknowledging, so Faust skips the message and never commits its
  offset.
"""

from __future__ import annotations

import weakref


def make_current(event) -> None:
    """Make ``event`` (a Faust event) Faust's current event in this context."""
    from faust.streams import _current_event

    _current_event.set(weakref.ref(event))


def mark_acked(message) -> None:
    """Make Faust treat ``message`` (a Faust message) as acknowledged already, so it never commits it."""
    message.acked = True
