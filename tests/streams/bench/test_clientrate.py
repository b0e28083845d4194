"""The race's client rate: ``QPS/BURST`` or ``unthrottled``, as kube-scheduler's clientConnection takes it."""

from __future__ import annotations

import pytest

from streams.bench import clientrate
from streams.bench.clientrate import ClientRate


@pytest.mark.parametrize("text, rate, described, connection", [
    pytest.param("50/100", ClientRate(50.0, 100), "qps 50 / burst 100", {"qps": 50.0, "burst": 100}, id="default"),
    pytest.param("unthrottled", clientrate.UNTHROTTLED, "unthrottled", {"qps": -1.0, "burst": 0}, id="unthrottled"),
    pytest.param("2.5/5", ClientRate(2.5, 5), "qps 2.5 / burst 5", {"qps": 2.5, "burst": 5}, id="fractional"),
])
def test_a_client_rate_is_read_and_given_to_kube_scheduler(text, rate, described, connection):
    assert clientrate.parse(text) == rate
    assert rate.describe() == described
    assert clientrate.kube_scheduler_connection(rate) == connection


@pytest.mark.parametrize("text", ["50", "fast", "0/100", "50/0", "-1/10", "50/x"])
def test_a_bad_client_rate_names_the_field(text):
    with pytest.raises(ValueError, match="client rate"):
        clientrate.parse(text)


def test_the_bridge_takes_the_race_flags():
    """The race gives the bridge its rate by these ``koord bridge`` options."""
    from streams.cli.bridge import bridge

    options = {opt for param in bridge.params for opt in param.opts}
    assert {clientrate.BRIDGE_QPS, clientrate.BRIDGE_BURST} <= options
    assert clientrate.bridge_flags(ClientRate(50.0, 100)) == ["--kube-api-qps", "50", "--kube-api-burst", "100"]
    assert clientrate.bridge_flags(clientrate.UNTHROTTLED) == ["--kube-api-qps", "0"]
