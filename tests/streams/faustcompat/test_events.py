"""``make_current`` sets the event Faust's table writes are routed by, and no stream's own current event;
``mark_acked`` makes Faust's acknowledgement of a message a no-op."""

from __future__ import annotations

import contextvars
import types

from faust.streams import current_event
from faust.types.tuples import Message

from streams.faustcompat.events import make_current, mark_acked


class Event:
    """A stand-in for a Faust event (Faust keeps a weak reference to it)."""


def test_the_event_made_current_is_faust_current_event():
    event = Event()

    def in_context():
        make_current(event)
        return current_event()

    assert contextvars.copy_context().run(in_context) is event


def test_a_message_marked_acked_is_not_acknowledged_again():
    message = Message("topic", 0, 7, timestamp=0.0, timestamp_type=0, headers=[], key=b"k", value=b"v",
                      checksum=None)
    consumer = types.SimpleNamespace()
    mark_acked(message)
    assert message.ack(consumer) is False
    assert message.acked is True
