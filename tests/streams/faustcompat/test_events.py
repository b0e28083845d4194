"""``mark_acked`` makes Faust's acknowledgement of a message a no-op."""

from __future__ import annotations

import types

from faust.types.tuples import Message

from streams.faustcompat.events import mark_acked


def test_a_message_marked_acked_is_not_acknowledged_again():
    message = Message("topic", 0, 7, timestamp=0.0, timestamp_type=0, headers=[], key=b"k", value=b"v",
                      checksum=None)
    consumer = types.SimpleNamespace()
    mark_acked(message)
    assert message.ack(consumer) is False
    assert message.acked is True
