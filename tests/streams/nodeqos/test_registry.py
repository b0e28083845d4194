"""The node-QoS registry: every strategy once, in the documented order, each with valid default args."""

import pytest

from streams.nodeqos import registry
from streams.nodeqos.framework import Strategy


def test_every_registered_strategy_is_ordered_once_and_follows_the_protocol():
    assert sorted(registry.ORDER) == sorted(registry.REGISTRY)
    for strategy in registry.build():
        assert isinstance(strategy, Strategy)
        if hasattr(strategy, "args"):
            strategy.args.validate()


def test_build_passes_each_gated_strategy_its_gate():
    built = {strategy.name: strategy for strategy in registry.build(enabled={"CPUBurst": False})}
    assert built["CPUBurst"].enabled is False and built["CPUSuppress"].enabled is True


def test_unknown_and_repeated_names_raise():
    with pytest.raises(KeyError, match="unknown node-QoS strategies: Nope"):
        registry.build(("Nope",))
    with pytest.raises(KeyError, match="node-QoS strategies listed twice: CPUBurst"):
        registry.build(("CPUBurst", "CPUBurst"))
