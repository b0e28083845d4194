"""Bounded history and Koordinator's aggregations: avg, index-rule percentiles, cold start, flat memory."""

import math

import pytest

from node_agent.ringbuffer import RingBuffer, percentile_index


@pytest.mark.parametrize("count, fraction, expected", [
    (10, 0.5, 4), (10, 0.9, 8), (10, 0.99, 8), (100, 0.95, 94), (1, 0.99, 0), (0, 0.5, 0),
], ids=["p50-of-10", "p90-of-10", "p99-of-10", "p95-of-100", "one-sample", "no-sample"])
def test_percentile_index_follows_koordinator(count, fraction, expected):
    assert percentile_index(count, fraction) == expected


def test_aggregate_over_a_window_per_column():
    ring = RingBuffer(capacity=100, columns=2)
    for t in range(1, 11):
        ring.append(float(t), (float(t), None if t == 5 else 10.0 * t))
    stats = ring.aggregate(end=10.0, seconds=9.0)
    assert stats["avg"][0] == pytest.approx(5.5)
    assert stats["p50"][0] == 5.0 and stats["p90"][0] == 9.0 and stats["p99"][0] == 9.0
    assert stats["avg"][1] == pytest.approx(sum(10.0 * t for t in range(1, 11) if t != 5) / 9)


def test_window_in_cold_start_is_not_reported():
    ring = RingBuffer(capacity=10, columns=1)
    ring.append(0.0, (1.0,))
    ring.append(100.0, (1.0,))
    assert ring.aggregate(end=100.0, seconds=300.0) is None
    assert ring.aggregate(end=100.0, seconds=300.0, cold_start_filter=False)["avg"] == [1.0]


def test_capacity_bounds_memory_and_keeps_the_newest():
    ring = RingBuffer(capacity=5, columns=1)
    before = ring._values.nbytes
    for t in range(1000):
        ring.append(float(t), (float(t),))
    assert (len(ring), ring._values.nbytes) == (5, before)
    assert ring.mean(end=999.0, seconds=1e9) == [997.0]


def test_mean_of_a_column_without_values_is_none():
    ring = RingBuffer(capacity=3, columns=2)
    ring.append(1.0, (None, 2.0))
    assert ring.mean(1.0, 10.0) == [None, 2.0]
    assert not math.isnan(ring.mean(1.0, 10.0)[1])
