"""Counters to rates: first reading, counter reset and a stalled clock give no rate; keys are forgotten."""

from node_agent.counters import RateMeter


def test_rate_per_second_and_the_cases_without_one():
    meter = RateMeter(per_second=1e9)
    assert meter.rate("pod", 1_000_000_000, 10.0) is None
    assert meter.rate("pod", 3_000_000_000, 12.0) == 1.0
    assert meter.rate("pod", 5, 13.0) is None  # re-created cgroup
    assert meter.rate("pod", 10, 13.0) is None  # no time passed
    meter.rate("gone", 1, 1.0)
    meter.keep_only(["pod"])
    assert len(meter) == 1
