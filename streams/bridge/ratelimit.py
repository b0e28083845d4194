"""The client-side rate limit of the bridge's API requests: client-go's token bucket.

kube-scheduler's ``clientConnection.qps`` / ``burst`` (50 / 100 by default) set client-go's
``flowcontrol.NewTokenBucketRateLimiter``: a bucket of ``burst`` tokens refilled at ``qps`` a second, every
request takes one and waits for it when the bucket is empty. Tokens are reserved in arrival order, so
concurrent writers are served first come first served:

    tokens(t) = min(burst, tokens(t0) + qps * (t - t0)) - 1 ; wait = max(0, -tokens(t)) / qps

``qps`` 0 or less: no client-side limit (the API server's priority and fairness still applies).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class TokenBucket:
    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.qps, self.burst, self.clock = qps, max(1, burst), clock
        self.tokens, self.last = float(self.burst), clock()

    def reserve(self) -> float:
        """Take a token: seconds to wait before the request may go (0 when the bucket had one)."""
        if self.qps <= 0:
            return 0.0
        now = self.clock()
        self.tokens = min(float(self.burst), self.tokens + (now - self.last) * self.qps) - 1.0
        self.last = now
        return max(0.0, -self.tokens) / self.qps

    async def wait(self) -> None:
        if (delay := self.reserve()) > 0:
            await asyncio.sleep(delay)
