"""Bounded time series of samples and Koordinator's window aggregations over them.

A ``RingBuffer`` holds the last ``capacity`` samples (a timestamp and a fixed
number of float columns, NaN for a missing value) in preallocated numpy arrays,
so memory stays flat however long the agent runs.

Aggregations (``pkg/koordlet/metriccache/util.go``) over the samples with
timestamp >= end - window, per column, NaNs left out::

    avg = mean
    pXX = sorted[max(int(float32(n) * 0.XX) - 1, 0)]

A window whose samples span less than half of it is in cold start and is
reported empty (``metricsInColdStart``).
"""

from __future__ import annotations

import numpy as np

PERCENTILES = (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99))
STATS = ("avg",) + tuple(name for name, _ in PERCENTILES)
COLD_START_RATIO = 0.5


class RingBuffer:
    __slots__ = ("_times", "_values", "_next", "_size")

    def __init__(self, capacity: int, columns: int) -> None:
        if capacity < 1 or columns < 1:
            raise ValueError("capacity and columns must be >= 1")
        self._times = np.full(capacity, np.nan)
        self._values = np.full((capacity, columns), np.nan)
        self._next = 0
        self._size = 0

    @property
    def capacity(self) -> int:
        return len(self._times)

    def __len__(self) -> int:
        return self._size

    def append(self, time: float, values) -> None:
        """Add a sample; ``values`` may hold None for a missing value."""
        self._times[self._next] = time
        self._values[self._next] = [np.nan if v is None else v for v in values]
        self._next = (self._next + 1) % len(self._times)
        self._size = min(self._size + 1, len(self._times))

    def window(self, end: float, seconds: float) -> tuple[np.ndarray, np.ndarray]:
        """(times, values) of the samples in [end - seconds, end], in no particular order."""
        times = self._times[: self._size] if self._size < len(self._times) else self._times
        values = self._values[: len(times)]
        mask = (times >= end - seconds) & (times <= end)
        return times[mask], values[mask]

    def mean(self, end: float, seconds: float) -> list[float | None]:
        """Mean of each column over the window; None for a column without a value."""
        _, values = self.window(end, seconds)
        return [_mean(values[:, c]) for c in range(values.shape[1])]

    def aggregate(self, end: float, seconds: float, cold_start_filter: bool = True) -> dict[str, list[float | None]] | None:
        """avg and percentiles of each column over the window; None during the window's cold start."""
        times, values = self.window(end, seconds)
        if len(times) == 0 or (cold_start_filter and times.max() - times.min() < seconds * COLD_START_RATIO):
            return None
        result: dict[str, list[float | None]] = {stat: [] for stat in STATS}
        for column in range(values.shape[1]):
            present = values[:, column]
            present = np.sort(present[~np.isnan(present)])
            result["avg"].append(_mean(present))
            for name, fraction in PERCENTILES:
                result[name].append(float(present[percentile_index(len(present), fraction)]) if len(present) else None)
        return result


def percentile_index(count: int, fraction: float) -> int:
    """Koordinator's index into the sorted samples: int(float32(n) * p) - 1, at least 0."""
    return max(int(np.float32(count) * np.float32(fraction)) - 1, 0)


def _mean(column: np.ndarray) -> float | None:
    present = column[~np.isnan(column)]
    return float(present.mean()) if len(present) else None
