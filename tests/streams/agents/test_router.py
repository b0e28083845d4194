"""The router's check of a source record (``streams.validation.check_source``): a Tick is the time itself, so one
whose timestamp lies more than ``MAX_AHEAD_MS`` past the router's clock is refused and counted."""

from __future__ import annotations

import types

from streams.events import MAX_AHEAD_MS
from streams.metrics import FUTURE_TIMES
from streams.schemas import codec
from streams.validation import check_source

NOW = 1_700_000_000_000


def _tick(timestamp: int):
    return types.SimpleNamespace(key=b"tick", value=codec.encode("Tick", {"timestamp": timestamp}), headers=None)


def test_a_tick_within_max_ahead_of_the_clock_is_forwarded():
    assert check_source("ticks", _tick(NOW + MAX_AHEAD_MS), NOW)[3] is None


def test_a_tick_timed_a_day_ahead_is_refused_and_counted():
    before = FUTURE_TIMES.labels("router", "refused")._value.get()
    reason = check_source("ticks", _tick(NOW + 86_400_000), NOW)[3]
    assert "the Tick's timestamp" in reason
    assert FUTURE_TIMES.labels("router", "refused")._value.get() - before == 1
