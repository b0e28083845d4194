"""Workload limits of migrations (``migration/util/util.go``) and the object limiter, in event time.

``max_migrating(replicas, value)`` (= ``GetMaxUnavailable``): with no value, 10 % of the replicas when
there are more than 10, 2 for 4-10, else 1; a value is an integer or a percentage of the replicas
(rounded down, 0 becomes 1); never more than the replicas.

The object limiter is a token bucket per workload (or namespace): each eviction of one of its pods takes
a token; tokens refill at ``maxMigrating / duration``, at most ``burst``. A job whose bucket has less
than one token waits. Koordinator's bucket runs on the wall clock; this one on event time.
"""

from __future__ import annotations

import dataclasses
import math


def _scaled(value: int | str, replicas: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return math.floor(int(value[:-1]) * replicas / 100)
    return int(value)


def max_migrating(replicas: int, value: int | str | None) -> int:
    result = 0
    if value is not None:
        result = _scaled(value, replicas) or 1
    if result == 0:
        default = "10%" if replicas > 10 else 2 if replicas >= 4 else 1
        result = _scaled(default, replicas)
    return min(result, replicas)


@dataclasses.dataclass
class TokenBucket:
    rate_per_ms: float
    burst: int
    tokens: float
    updated_ms: int

    def available(self, now_ms: int) -> float:
        return min(self.burst, self.tokens + (now_ms - self.updated_ms) * self.rate_per_ms)

    def take(self, now_ms: int) -> None:
        self.tokens = self.available(now_ms) - 1
        self.updated_ms = now_ms


def new_bucket(max_migrating_replicas: int, duration_ms: int, burst: int, now_ms: int) -> TokenBucket:
    """A bucket created at an eviction (Koordinator's ``trackEvictedPod``): full, then charged."""
    return TokenBucket(max_migrating_replicas / duration_ms, burst or 1, float(burst or 1), now_ms)
