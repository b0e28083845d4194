"""The plugin registry: names, stage orders, and the framework stages each plugin implements."""

import pytest

from streams.noderesource import registry
from streams.noderesource.framework import (
    CalculatePlugin, NodeMetaCheckPlugin, NodeStatusCheckPlugin, PreparePlugin, PreUpdatePlugin,
)


def test_registry_names_match_the_plugins_and_orders_cover_them():
    plugins = registry.build()
    assert {name: plugin.name for name, plugin in plugins.items()} == {name: name for name in registry.REGISTRY}
    assert set(registry.CALCULATE_ORDER) == set(registry.PREPARE_ORDER) == set(registry.REGISTRY)
    assert registry.PREPARE_ORDER[0] == "CPUNormalization", "batch-cpu is amplified with this calculation's ratio"


@pytest.mark.parametrize("order, stage", [(registry.CALCULATE_ORDER, CalculatePlugin),
                                          (registry.PRE_UPDATE_ORDER, PreUpdatePlugin),
                                          (registry.PREPARE_ORDER, PreparePlugin),
                                          (registry.STATUS_CHECK_ORDER, NodeStatusCheckPlugin),
                                          (registry.META_CHECK_ORDER, NodeMetaCheckPlugin)])
def test_plugins_implement_their_stages(order, stage):
    plugins = registry.build()
    assert all(isinstance(plugins[name], stage) for name in order)


def test_unknown_or_repeated_plugins_raise():
    with pytest.raises(KeyError, match="unknown"):
        registry.build(("Nope",))
    with pytest.raises(KeyError, match="twice"):
        registry.build(("BatchResource", "BatchResource"))
