"""Node CPU usage from ``/proc/stat`` deltas, as koordlet computes it.

Busy ticks = user + nice + system + irq + softirq (fields 1, 2, 3, 6, 7 of the
``cpu`` line; idle, iowait and steal are not usage), and::

    cores used = (busy ticks now - busy ticks before) / (seconds elapsed x USER_HZ)

(``pkg/koordlet/util/stat.go`` ``readTotalCPUStat``, ``GetPeriodTicks``.)
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from node_agent.counters import RateMeter
from node_agent.hostfs import parse_int, read_text

BUSY_FIELDS = (1, 2, 3, 6, 7)
USER_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def parse_busy_ticks(text: str | None) -> int | None:
    """Busy ticks of the aggregate ``cpu`` line; None when the line is missing or malformed."""
    if not text:
        return None
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            if len(fields) <= max(BUSY_FIELDS):
                return None
            values = [parse_int(fields[i]) for i in BUSY_FIELDS]
            if any(v is None or v < 0 for v in values):
                return None
            return sum(values)
    return None


class NodeCPU:
    """Cores the whole node used since the previous ``sample``."""

    def __init__(self, proc_root: Path, clock: Callable[[], float] = time.monotonic, hz: int = USER_HZ) -> None:
        self._path = proc_root / "stat"
        self._clock = clock
        self._meter = RateMeter(per_second=hz)

    def sample(self) -> float | None:
        ticks = parse_busy_ticks(read_text(self._path))
        if ticks is None:
            return None
        return self._meter.rate("node", ticks, self._clock())
