"""The node-QoS keys of slo-controller-config: Koordinator's defaults, node strategies, rejections."""

from __future__ import annotations

import pytest

from streams.sloconfig.document import ConfigError
from streams.sloconfig.nodeqos import CPUBurstStrategy, ResourceThresholdStrategy, SystemStrategy
from tests.streams.nodeqos.support import qos_strategy


def test_defaults_are_koordinators():
    """``DefaultResourceThresholdStrategy``, ``DefaultResourceQOSStrategy``, ``DefaultCPUBurstStrategy``."""
    strategy = qos_strategy()
    assert strategy.threshold == ResourceThresholdStrategy(
        enable=False, cpu_suppress_threshold_percent=65, cpu_suppress_policy="cpuset",
        memory_evict_threshold_percent=70, cpu_evict_policy="evictByRealLimit")
    assert strategy.burst == CPUBurstStrategy("none", 1000, 300, -1, 50)
    assert strategy.system == SystemStrategy(0)
    qos = strategy.qos
    assert (qos.cpu_policy, qos.net_policy) == ("groupIdentity", "tc")
    assert [(c, qos.of(c).cpu.group_identity, qos.of(c).cpu.enable) for c in ("LSR", "LS", "BE", "SYSTEM")] == [
        ("LSR", 2, False), ("LS", 2, False), ("BE", -1, False), ("SYSTEM", 0, False)]
    assert [(qos.of(c).resctrl.cat_range_start_percent, qos.of(c).resctrl.cat_range_end_percent,
             qos.of(c).resctrl.mba_percent) for c in ("LSR", "LS", "BE")] == [(0, 100, 100), (0, 100, 100), (0, 30, 100)]
    assert qos.of("LSE") == qos.of("LSR")


def test_node_strategy_overlays_the_cluster_strategy_for_matching_nodes():
    config = {"clusterStrategy": {"enable": True, "cpuSuppressThresholdPercent": 60},
              "nodeStrategies": [{"name": "alios", "nodeSelector": {"matchLabels": {"kernel": "alios"}},
                                  "cpuSuppressPolicy": "cfsQuota"}]}
    alios = qos_strategy({"kernel": "alios"}, resource_threshold_config=config).threshold
    other = qos_strategy({"kernel": "other"}, resource_threshold_config=config).threshold
    assert (alios.enable, alios.cpu_suppress_threshold_percent, alios.cpu_suppress_policy) == (True, 60, "cfsQuota")
    assert (other.cpu_suppress_threshold_percent, other.cpu_suppress_policy) == (60, "cpuset")


def test_class_settings_merge_field_by_field():
    qos = qos_strategy(resource_qos_config={"clusterStrategy": {"beClass": {"cpuQOS": {"enable": True}}}}).qos
    assert (qos.of("BE").cpu.enable, qos.of("BE").cpu.group_identity, qos.of("BE").resctrl.cat_range_end_percent) == \
        (True, -1, 30)


@pytest.mark.parametrize("keys, reason", [
    pytest.param({"resource_threshold_config": {"clusterStrategy": {"cpuSuppressThresholdPercent": 101}}},
                 "cpuSuppressThresholdPercent must be in", id="threshold-over-100"),
    pytest.param({"resource_threshold_config": {"clusterStrategy": {"memoryEvictThresholdPercent": 70,
                                                                    "memoryEvictLowerPercent": 70}}},
                 "memoryEvictLowerPercent", id="lower-not-below-threshold"),
    pytest.param({"resource_threshold_config": {"clusterStrategy": {"enable": "yes"}}},
                 "clusterStrategy.enable: cannot unmarshal string into Go value of type bool",
                 id="wrong-type"),
    pytest.param({"resource_qos_config": {"clusterStrategy": {"lsClass": {"cpuQOS": {"groupIdentity": 3}}}}},
                 "groupIdentity must be in", id="bvt-out-of-range"),
    pytest.param({"cpu_burst_config": {"clusterStrategy": {"cfsQuotaBurstPercent": 50}}}, "cfsQuotaBurstPercent",
                 id="quota-burst-below-100"),
    pytest.param({"system_config": {"clusterStrategy": {"totalNetworkBandwidth": "lots"}}}, "totalNetworkBandwidth",
                 id="bandwidth-unparsable"),
    pytest.param({"resource_threshold_config": {"nodeStrategies": [{"nodeSelector": {"matchLabels": {"a": "b"}},
                                                                     "cpuEvictTimeWindowSeconds": 0}]}},
                 "cpuEvictTimeWindowSeconds", id="node-strategy-invalid"),
])
def test_invalid_configs_raise_config_error_with_the_reason(keys, reason):
    with pytest.raises(ConfigError, match=reason):
        qos_strategy(**keys)
