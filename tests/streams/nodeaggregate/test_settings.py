"""The node aggregate's settings: koordlet's feature gates with Koordinator's defaults, read from the environment."""

import dataclasses

import pytest

from streams.nodeaggregate.settings import FEATURE_GATES, NodeAggregateSettings
from streams.nodeqos import registry as qos_registry


def test_the_gates_koordlet_has_keep_koordlets_defaults():
    """``pkg/features/koordlet_features.go`` and ``runtimehooks/config.go``: BECPUSuppress, CPUBurst, RdtResctrl,
    GroupIdentity and CPUSetAllocator on."""
    assert {name: gate.default for name, gate in FEATURE_GATES.items() if gate.koordlet_default is not None} == {
        "BECPUSuppress": True, "CPUSetAllocator": True, "CPUBurst": True, "GroupIdentity": True, "RdtResctrl": True}
    assert all(gate.default == gate.koordlet_default for gate in FEATURE_GATES.values()
               if gate.koordlet_default is not None)


def test_by_default_every_strategy_runs_in_the_registry_order():
    settings = NodeAggregateSettings()
    assert tuple(strategy.name for strategy in settings.qos_strategies) == qos_registry.ORDER
    assert all(getattr(strategy, "enabled", True) for strategy in settings.qos_strategies)
    assert {gate.strategy for gate in FEATURE_GATES.values()} == {
        strategy.name for strategy in settings.qos_strategies if hasattr(strategy, "enabled")}


def test_the_environment_switches_gates_in_koordlets_form_and_the_others_keep_their_default():
    settings = NodeAggregateSettings.from_environment({"KOORD_FEATURE_GATES": "CPUBurst=false, RdtResctrl=true"})
    enabled = {strategy.name: getattr(strategy, "enabled", None) for strategy in settings.qos_strategies}
    assert settings.feature_gates["CPUBurst"] is False and enabled["CPUBurst"] is False
    assert enabled["Resctrl"] is True and enabled["CPUSuppress"] is True
    assert dataclasses.replace(settings, feature_gates={}).feature_gates == NodeAggregateSettings().feature_gates


@pytest.mark.parametrize("gates, message", [
    ("CPUBurst=maybe", "KOORD_FEATURE_GATES: feature gate CPUBurst must be true or false, not 'maybe'"),
    ("BEMemoryEvict=true", "KOORD_FEATURE_GATES: unknown feature gate 'BEMemoryEvict' \\(have: BECPUSuppress,"),
], ids=["not-a-boolean", "unknown"])
def test_bad_gates_name_the_variable(gates, message):
    with pytest.raises(ValueError, match=message):
        NodeAggregateSettings.from_environment({"KOORD_FEATURE_GATES": gates})


def test_the_signing_key_comes_from_the_actuation_key_and_never_shows():
    settings = NodeAggregateSettings.from_environment({"KOORD_ACTUATION_KEY": "hmac-key"})
    assert settings.signing_key == b"hmac-key" and "hmac-key" not in repr(settings)
    assert NodeAggregateSettings.from_environment({}).signing_key is None
