"""Manifest building blocks: Go durations, metav1 times, quantities as resource.Quantity writes them."""

import pytest

from node_agent.report import Usage, device_manifest, go_duration, rfc3339


@pytest.mark.parametrize("seconds, expected", [(300, "5m0s"), (1800, "30m0s"), (3600, "1h0m0s"), (90.5, "1m30.5s"),
                                               (5, "5s")], ids=["5m", "30m", "1h", "fraction", "seconds"])
def test_go_duration(seconds, expected):
    assert go_duration(seconds) == expected


def test_rfc3339_whole_seconds_utc():
    assert rfc3339(1_700_000_000.9) == "2023-11-14T22:13:20Z"


@pytest.mark.parametrize("usage, expected", [
    (Usage(1.23456, 1024.9), {"cpu": "1234m", "memory": "1Ki"}),
    (Usage(2.0, None), {"cpu": "2"}),
    (Usage(-0.1, float("nan")), {"cpu": "0"}),
], ids=["truncated", "missing-memory", "negative-and-nan"])
def test_usage_resources(usage, expected):
    assert usage.resources() == expected


def test_no_device_no_device_object():
    assert device_manifest("n1", [], []) is None
