"""``uncommitted_on_failure``: a batch the agent did not finish is not acknowledged by take_events."""

from __future__ import annotations

import types

import pytest

from streams.agents.inbox import uncommitted_on_failure


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
