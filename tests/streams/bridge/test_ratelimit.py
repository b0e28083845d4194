"""client-go's token bucket: ``burst`` requests at once, then one every 1/qps seconds, first come first served."""

import pytest

from streams.bridge.ratelimit import TokenBucket


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("case, qps, burst, steps, waits", [
    ("a burst goes at once, then 1/qps apart", 2.0, 3, [0, 0, 0, 0, 0], [0, 0, 0, 0.5, 1.0]),
    ("time refills the bucket", 2.0, 2, [0, 0, 1.0, 0], [0, 0, 0, 0]),
    ("the refill stops at burst", 10.0, 2, [0, 100.0, 0, 0], [0, 0, 0, 0.1]),
    ("a debt is paid by time", 1.0, 1, [0, 0, 0.5], [0, 1.0, 1.5]),
    ("qps 0: no limit", 0.0, 1, [0, 0, 0], [0, 0, 0]),
])
def test_reserve(case, qps, burst, steps, waits):
    clock = Clock()
    bucket = TokenBucket(qps, burst, clock)
    found = []
    for step in steps:
        clock.now += step
        found.append(round(bucket.reserve(), 6))
    assert found == waits
