"""The node agent's table layout: nodes by name, the slo-controller-config once per inbox partition."""

from __future__ import annotations

import pytest

from streams.agents.node import table_key
from streams.nodeaggregate.partition import CONFIG_KEY


@pytest.mark.parametrize("key, partition, expected", [
    pytest.param("n1", 3, "n1", id="node-by-name"),
    pytest.param(CONFIG_KEY, 0, f"{CONFIG_KEY}/0", id="config-of-partition-0"),
    pytest.param(CONFIG_KEY, 3, f"{CONFIG_KEY}/3", id="config-of-partition-3"),
])
def test_table_key(key, partition, expected):
    assert table_key(key, partition) == expected
