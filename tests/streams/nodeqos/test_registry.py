"""The node-QoS registry: every strategy once, in the documented order, each with valid default args."""

import pytest

from streams.nodeqos import registry
from streams.nodeqos.framework import Strategy


def test_every_registered_strategy_is_ordered_once_and_follows_the_protocol():
    assert sorted(registry.ORDER) == sorted(registry.REGISTRY)
    for strategy in registry.build():
        assert isinstance(strategy, Strategy)
        strategy.args.validate()


def test_duplicates_and_unknown_names_raise():
    with pytest.raises(ValueError, match="twice"):
        registry._registry([("A", object), ("A", object)])
    with pytest.raises(KeyError, match="unknown"):
        registry.build(("Nope",))
