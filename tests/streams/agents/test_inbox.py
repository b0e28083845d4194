"""``uncommitted_on_failure``: a batch the agent did not finish is not acknowledged by take_events.
``DeliveryOrder``: a record handed over after later ones within one consumer generation is reported."""

from __future__ import annotations

import types

import pytest

from streams.agents.inbox import DeliveryOrder, uncommitted_on_failure
from streams.metrics import INBOX_SKIPPED


def _events(n: int) -> list:
    return [types.SimpleNamespace(message=types.SimpleNamespace(acked=False)) for _ in range(n)]


def test_a_finished_batch_is_left_for_faust_to_acknowledge():
    events = _events(3)
    with uncommitted_on_failure(events):
        pass
    assert [e.message.acked for e in events] == [False] * 3


@pytest.mark.parametrize("error", [RuntimeError("delivery failed"), GeneratorExit()])
def test_a_failed_or_stopped_batch_is_marked_so_its_offsets_are_not_committed(error):
    events = _events(3)
    with pytest.raises(type(error)):
        with uncommitted_on_failure(events):
            raise error
    assert [e.message.acked for e in events] == [True] * 3


def _message(partition: int, offset: int, generation: int):
    return types.SimpleNamespace(topic="koord.inbox.scheduling", partition=partition, offset=offset,
                                 generation_id=generation)


def test_in_order_delivery_and_reading_again_after_a_seek_are_not_skips():
    order = DeliveryOrder("test-in-order")
    offsets = [0, 1, 2, 3, 1, 2, 3, 4]
    assert [order.check(_message(0, o, generation=5)) for o in offsets] == [0] * len(offsets)


def test_a_jump_forward_within_a_generation_is_counted_per_partition():
    order = DeliveryOrder("test-skip")
    before = INBOX_SKIPPED.labels("test-skip")._value.get()
    assert order.check(_message(0, 10, generation=5)) == 0
    assert order.check(_message(1, 3, generation=5)) == 0
    assert order.check(_message(0, 14, generation=5)) == 3
    assert order.check(_message(1, 4, generation=5)) == 0
    assert INBOX_SKIPPED.labels("test-skip")._value.get() - before == 3


def test_a_new_generation_may_start_anywhere():
    order = DeliveryOrder("test-generation")
    order.check(_message(0, 10, generation=5))
    assert order.check(_message(0, 40, generation=6)) == 0
