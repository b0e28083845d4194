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
    assert limits.KERNEL_MIN_QUOTA_US == 1000  # kernel / MilliCPUToQuota floor: a 10m limit
    assert limits.check_quota(1000, 100_000) == 1000
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


def test_memory_is_page_rounded_within_its_range():
    assert limits.check_memory(100_000_000) == 99_999_744
    assert limits.check_memory(64 << 20) == 64 << 20
    assert limits.check_memory(-1) == -1


@pytest.mark.parametrize("check, args", [
    (limits.check_memory, (-5,)), (limits.check_memory, (-2,)), (limits.check_memory, (1,)),
    (limits.check_memory, ((64 << 20) - 1,)), (limits.check_memory, (1 << 62,)), (limits.check_memory, (1 << 63,)),
    (limits.check_quota, (-5, 100_000)), (limits.check_quota, (0, 100_000)), (limits.check_quota, (999, 100_000)),
    (limits.check_quota, (100_000 * 4096 + 1, 100_000)), (limits.check_period, (999,)),
    (limits.check_period, (1_000_001,)), (limits.check_period, (-1,)), (limits.check_burst, (-1, -1)),
    (limits.check_burst, (50_001, 50_000)), (limits.check_burst, (limits.MAX_BURST_US + 1, -1)),
    (limits.check_shares, (1,)), (limits.check_shares, (262_145,)), (limits.check_shares, (-1,)),
    (limits.check_bvt, (-2,)), (limits.check_bvt, (3,)), (limits.shares_to_weight, (0,)),
    (limits.check_cpuset, (frozenset({2, 9}), frozenset({0, 1, 2, 3}))),
    (limits.check_cpuset, (frozenset({1}), frozenset({0, 1, 2, 3}))), (limits.check_cpuset, (frozenset(), None)),
], ids=lambda v: getattr(v, "__name__", None) or repr(v)[:30])
def test_out_of_range_is_refused_never_clamped(check, args):
    with pytest.raises(limits.ValueProblem):
        check(*args)


@pytest.mark.parametrize("name, value, low", [("l3", -1, 0), ("l3", 101, 0), ("mb", 9, 10), ("mb", 0, 1)])
def test_percents_out_of_range_are_refused(name, value, low):
    with pytest.raises(limits.ValueProblem):
        limits.check_percent(name, value, low)


@pytest.mark.parametrize("value, low, high", [(999_999, limits.MIN_RATE_BPS, limits.MAX_RATE_BPS),
                                               (limits.MAX_RATE_BPS + 1, limits.MIN_RATE_BPS, limits.MAX_RATE_BPS),
                                               (-1, limits.MIN_RATE_BPS, limits.MAX_RATE_BPS),
                                               (5_000_000, 6_000_000, 10_000_000)])
def test_rates_out_of_range_are_refused(value, low, high):
    with pytest.raises(limits.ValueProblem):
        limits.check_rate("rate", value, low, high)
