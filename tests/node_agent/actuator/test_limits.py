"""Safe ranges and conversions; the values taken from Koordinator are pinned here."""

import pytest

from node_agent.actuator import limits


@pytest.mark.parametrize("shares, weight", [(1000, 39), (1024, 39), (2, 1), (262144, 10000), (2000, 77),
                                            (50000, 1908)])
def test_shares_to_weight_is_koordinators_conversion(shares, weight):  # TV-4-7
    assert limits.shares_to_weight(shares) == weight


@pytest.mark.parametrize("weight, shares", [(1, 2), (10000, 262144)])
def test_weight_to_shares_ends(weight, shares):
    assert limits.weight_to_shares(weight) == shares


def test_floors_from_koordinator():
    assert limits.quota_floor_us(100_000) == 2000  # cpusuppress beMinQuota
    assert limits.quota_floor_us(10_000) == 1000  # kernel / MilliCPUToQuota floor
    assert limits.BE_MIN_CPUSET_CPUS == 2  # beMinCPUSetCores
    assert (limits.MIN_SHARES, limits.MAX_SHARES, limits.MIN_WEIGHT, limits.MAX_WEIGHT) == (2, 262144, 1, 10000)
    assert limits.MAX_BURST_US == 100 * 10 * 100_000
    assert (limits.MIN_BVT, limits.MAX_BVT) == (-1, 2)


@pytest.mark.parametrize("text, cpus", [("0-3,8,10-11", {0, 1, 2, 3, 8, 10, 11}), ("5", {5}), ("", set())])
def test_cpulist_round_trip(text, cpus):
    assert limits.parse_cpulist(text) == cpus
    assert limits.format_cpulist(frozenset(cpus)) == text


@pytest.mark.parametrize("text", ["a", "3-1", "0-", "1;2", "-1"])
def test_bad_cpulists(text):
    with pytest.raises(limits.ValueProblem):
        limits.parse_cpulist(text)


def test_memory_is_page_rounded_and_floored():
    assert limits.clamp_memory(100_000_000) == 99_999_744
    assert limits.clamp_memory(1) == 64 << 20
    assert limits.clamp_memory(-3) == limits.clamp_memory(1 << 63) == -1
