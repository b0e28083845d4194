"""Koordinator's quantity arithmetic (``pkg/util/resource_test.go``, ``plugins/util/util_test.go``)."""

import pytest

from streams.noderesource.quantities import (
    divide_milli, format_go_float, is_resource_diff, multiply, multiply_milli, scaled_value,
)
from streams.noderesource.resources import safety_margin
from tests.streams.noderesource.support import Gi, Mi, strategy


@pytest.mark.parametrize("old, new, expected", [
    pytest.param({"cpu": 1000}, {"cpu": 9000}, True,
                 id="TestIsResourceDiff/the_new_resource_has_big_enough_difference_with_the_old_one"),
    pytest.param({"cpu": 1000}, {"cpu": 2000}, False,
                 id="TestIsResourceDiff/the_new_resource_doesn't_have_big_enough_difference_with_the_old_one"),
    pytest.param({}, {"cpu": 2000}, True, id="TestIsResourceDiff/the_old_resource_doesn't_have_queryed_resource_type"),
    pytest.param({"cpu": 0}, {"cpu": 0}, False, id="TestIsResourceDiff/both_resources_are_zero"),
    pytest.param({}, {}, False, id="both_missing"),
])
def test_is_resource_diff(old, new, expected):
    assert is_resource_diff(old, new, "cpu", 2) is expected


@pytest.mark.parametrize("pair, divisor, expected", [
    pytest.param((1000, Gi), 0, (1000, Gi), id="Test_divideResourceList/do_not_panic_for_divide_by_zero"),
    pytest.param((1000, Gi), 2, (500, 512 * Mi), id="Test_divideResourceList/normal_case"),
    pytest.param((1000, Gi), 1, (1000, Gi), id="Test_divideResourceList/normal_case_1"),
    pytest.param((2000, 6 * Gi), 3, (667, 2 * Gi), id="Test_divideResourceList/normal_case_2"),
])
def test_divide_resource_list(pair, divisor, expected):
    assert (divide_milli(pair[0], divisor), divide_milli(pair[1], divisor)) == expected


def test_safety_margin():
    """Test_getNodeReservation/get_correct_reserved_node_resource_quantity: capacity 100 cores / 100Gi,
    reclaim 65 % -> margin 35 cores / 35Gi."""
    assert safety_margin(strategy(cpu_reclaim_threshold_percent=65, memory_reclaim_threshold_percent=65),
                         100_000, 100 * Gi) == (35_000, 35 * Gi)


@pytest.mark.parametrize("value, expected", [(33 * 10**9, 33), (15_300_000_000, 16), (-24 * 10**9, -24),
                                             (-24_500_000_000, -25), (0, 0), (1, 1)])
def test_scaled_value_rounds_away_from_zero(value, expected):
    assert scaled_value(value) == expected


@pytest.mark.parametrize("value, text", [(1.0, "1"), (0.65, "0.65"), (0.1, "0.1"), (1.5, "1.5"), (100.0, "100"),
                                         (1e6, "1e+06"), (0.0001, "0.0001"), (2.5e-05, "2.5e-05")])
def test_go_float_formatting(value, text):
    assert format_go_float(value) == text


def test_products_truncate_toward_zero_like_go():
    assert multiply_milli(100_000, 0.35) == 35_000
    assert multiply(62 * 10**9, 0.35) == 21_700_000_000
    assert multiply_milli(100_000, -0.5) == -50_000
