"""Cumulative kernel counters (CPU ticks, nanoseconds of CPU time) turned into rates.

Rate = (counter now - counter before) / (seconds elapsed x unit per second).
The first reading of a key gives no rate (as in koordlet, which ignores the
first collection), and neither does a counter that went backwards (a cgroup
re-created under the same path) or a clock that did not advance. Keys not seen
in a round are forgotten, so the table is bounded by what exists on the host.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable


class RateMeter:
    """Last (counter, time) per key; ``rate`` returns units per second."""

    __slots__ = ("_last", "_per_second")

    def __init__(self, per_second: float = 1.0) -> None:
        self._last: dict[Hashable, tuple[int, float]] = {}
        self._per_second = per_second
        """Counter units in one second of the resource: 1e9 for nanoseconds of CPU time (-> cores)."""

    def rate(self, key: Hashable, counter: int, now: float) -> float | None:
        previous = self._last.get(key)
        self._last[key] = (counter, now)
        if previous is None:
            return None
        last_counter, last_time = previous
        elapsed = now - last_time
        if counter < last_counter or elapsed <= 0:
            return None
        return (counter - last_counter) / (elapsed * self._per_second)

    def keep_only(self, keys: Iterable[Hashable]) -> None:
        """Forget every key not in ``keys``."""
        keep = set(keys)
        for key in [k for k in self._last if k not in keep]:
            del self._last[key]

    def __len__(self) -> int:
        return len(self._last)
