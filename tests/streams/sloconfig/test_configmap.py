"""slo-controller-config: Koordinator's defaults, parsing, validation and per-node strategies.

Ported cases come from ``pkg/util/sloconfig/colocation_config_test.go`` (ids: Go test / case name).
"""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
import yaml

from streams.koordinator.annotations import ANNOTATION_COLOCATION_STRATEGY
from streams.koordinator.labels import (
    LABEL_CPU_RECLAIM_RATIO, LABEL_MEMORY_RECLAIM_RATIO, LABEL_MID_STATIC_CPU_RESERVED_RATIO,
    LABEL_MID_STATIC_MEMORY_RESERVED_RATIO)
from streams.sloconfig.colocation import ColocationConfig, ColocationStrategy
from streams.sloconfig.configmap import DEFAULT_CONFIG, parse_slo_config
from streams.sloconfig.cpunormalization import ModelRatio
from streams.sloconfig.document import ConfigError, NodeConfig
from streams.sloconfig.nodeqos import ResourceQoSStrategy, SystemStrategy
from streams.sloconfig.selectors import LabelSelector, parse_selector
from tests.streams.noderesource.support import configmap
from tests.streams.objects.seeds import seed_block



def test_default_config_pins_koordinator_defaults():
    """``DefaultColocationStrategy()`` and ``DefaultCPUNormalizationCfg()``."""
    assert DEFAULT_CONFIG.colocation.strategy == ColocationStrategy(
        enable=False, metric_aggregate_duration_seconds=300, metric_report_interval_seconds=60,
        metric_aggregate_durations=("5m0s", "10m0s", "30m0s"), metric_memory_collect_policy="usageWithoutPageCache",
        cpu_reclaim_threshold_percent=60, cpu_calculate_policy="usage", memory_reclaim_threshold_percent=65,
        memory_calculate_policy="usage", degrade_time_minutes=15, update_time_threshold_seconds=300,
        resource_diff_threshold=0.1, mid_reclaim_mode=None, mid_cpu_threshold_percent=100,
        mid_memory_threshold_percent=100, mid_unallocated_percent=0, mid_static_cpu_reserved_percent=0,
        mid_static_memory_reserved_percent=0, batch_cpu_threshold_percent=None, batch_memory_threshold_percent=None)
    assert DEFAULT_CONFIG.colocation.node_configs == ()
    assert DEFAULT_CONFIG.cpu_normalization.strategy.enable is False
    assert dict(DEFAULT_CONFIG.cpu_normalization.strategy.ratio_model) == {}
    assert DEFAULT_CONFIG.cpu_normalization.strategy.default_ratio is None


def test_cluster_strategy_is_merged_over_the_defaults_and_node_configs_over_it():
    config = parse_slo_config(configmap({"enable": True, "cpuReclaimThresholdPercent": 65,
                                         "nodeConfigs": [{"name": "ssd", "nodeSelector": {"matchLabels": {"disk": "ssd"}},
                                                          "memoryCalculatePolicy": "request"}]}), DEFAULT_CONFIG)
    cluster = config.colocation.strategy
    assert (cluster.enable, cluster.cpu_reclaim_threshold_percent, cluster.memory_reclaim_threshold_percent) == \
        (True, 65, 65)
    assert config.colocation.for_node({"disk": "ssd"}, {}) == \
        dataclasses.replace(cluster, memory_calculate_policy="request")
    assert config.colocation.for_node({"disk": "hdd"}, {}) == cluster


def test_v14_article_cpu_normalization_example_loads():
    """The v1.4 article's ConfigMap (the Chinese copy keeps its YAML intact)."""
    manifest = yaml.safe_load(seed_block("002", 5).text)
    record = {"metadata": manifest["metadata"], "manifest": "{}", "data": manifest["data"]}
    config = parse_slo_config(record, DEFAULT_CONFIG)
    strategy = config.cpu_normalization.strategy
    assert strategy.enable is True
    assert dict(strategy.ratio_model) == {
        "Intel(R) Xeon(R) Platinum 8269CY CPU @ 2.50GHz": ModelRatio(1.29, 0.82, 1.52, 1.0),
        "Intel Xeon Platinum 8369B CPU @ 2.90GHz": ModelRatio(1.69, 1.06, 1.91, 1.20)}


def test_english_copy_of_the_v14_example_has_the_same_numbers_but_lost_its_braces():
    """The English copy (000) is a text rendering of the same ConfigMap with the braces and indentation
    stripped: not JSON, so Koordinator's webhook (and we) reject it as it stands."""
    english = seed_block("000", 5).text
    block = english[english.index("cpu-normalization-config: |"):english.index("# ...")]
    pairs = re.findall(r'"(\w+Ratio|enable)": ([\d.]+|true)', block)
    chinese = seed_block("002", 5).text
    assert pairs == re.findall(r'"(\w+Ratio|enable)": ([\d.]+|true)', chinese)
    flattened = block.split("|", 1)[1]
    with pytest.raises(ConfigError, match="cpu-normalization-config: not valid JSON"):
        parse_slo_config(configmap(**{"cpu-normalization-config": flattened}), DEFAULT_CONFIG)


@pytest.mark.parametrize("colocation, reason", [
    pytest.param({"cpuReclaimThresholdPercent": -1}, "cpuReclaimThresholdPercent must be 0 or greater",
                 id="negative_reclaim"),
    pytest.param({"cpuReclaimThresholdPercent": 60.5}, "cannot unmarshal number 60.5 into Go value of type int64",
                 id="float_for_int64"),
    pytest.param({"enable": "true"}, "cannot unmarshal string into Go value of type bool", id="string_for_bool"),
    pytest.param({"degradeTimeMinutes": 0}, "degradeTimeMinutes must be 1 or greater", id="zero_degrade_time"),
    pytest.param({"resourceDiffThreshold": 0}, "resourceDiffThreshold must be greater than 0", id="zero_diff"),
    pytest.param({"resourceDiffThreshold": 1.5}, "at most 1", id="diff_above_one"),
    pytest.param({"midCPUThresholdPercent": -1}, "midCPUThresholdPercent must be 0 or greater",
                 id="Test_IsColocationStrategyValid/midCPUThresholdPercent_less_than_0_strategy_is_invalid"),
    pytest.param({"midCPUThresholdPercent": 150}, "midCPUThresholdPercent must be 100 or less",
                 id="Test_IsColocationStrategyValid/midCPUThresholdPercent_more_than_100_strategy_is_invalid"),
    pytest.param({"midMemoryThresholdPercent": -20}, "midMemoryThresholdPercent must be 0 or greater",
                 id="Test_IsColocationStrategyValid/midMemoryThresholdPercent_less_than_0_strategy_is_invalid"),
    pytest.param({"midMemoryThresholdPercent": 101}, "midMemoryThresholdPercent must be 100 or less",
                 id="Test_IsColocationStrategyValid/midMemoryThresholdPercent_more_than_100_strategy_is_invalid"),
    pytest.param({"midUnallocatedPercent": -10}, "midUnallocatedPercent must be 0 or greater",
                 id="Test_IsColocationStrategyValid/midUnallocatedPercent_less_than_0_strategy_is_invalid"),
    pytest.param({"midUnallocatedPercent": 200}, "midUnallocatedPercent must be 100 or less",
                 id="Test_IsColocationStrategyValid/midUnallocatedPercent_more_than_100_strategy_is_invalid"),
    pytest.param({"batchCPUThresholdPercent": -1}, "batchCPUThresholdPercent must be 0 or greater",
                 id="Test_IsColocationStrategyValid/batchCPUThresholdPercent_less_than_0_strategy_is_invalid"),
    pytest.param({"nodeConfigs": [{"name": "a", "enable": True}]}, "nodeSelector must not be empty", id="no_selector"),
    pytest.param({"nodeConfigs": [{"name": "a", "nodeSelector": {}}]}, "nodeSelector must not be empty",
                 id="empty_selector"),
    pytest.param({"nodeConfigs": [{"name": "a", "nodeSelector": {"matchExpressions": [
        {"key": "xxx", "operator": "out", "values": ["yyy"]}]}}]}, "not a valid label selector operator",
                 id="bad_operator"),
    pytest.param({"nodeConfigs": [{"name": "a", "nodeSelector": {"matchLabels": {"aa": "true"}}},
                                  {"name": "b", "nodeSelector": {"matchLabels": {"aa": "true", "bb": "true"}}}]},
                 "node selectors overlap: a, b", id="overlapping_selectors"),
    pytest.param({"nodeConfigs": [{"name": "a", "nodeSelector": {"matchLabels": {"aa": "true"}},
                                   "midCPUThresholdPercent": 101}]}, "nodeConfigs\\[0\\]: midCPUThresholdPercent",
                 id="invalid_node_strategy"),
])
def test_invalid_colocation_config_is_rejected_with_the_reason(colocation, reason):
    with pytest.raises(ConfigError, match=reason):
        parse_slo_config(configmap(colocation), DEFAULT_CONFIG)


@pytest.mark.parametrize("fields, attributes", [
    pytest.param({"enable": True, "cpuReclaimThresholdPercent": 65, "memoryReclaimThresholdPercent": 65,
                  "degradeTimeMinutes": 15, "updateTimeThresholdSeconds": 300, "resourceDiffThreshold": 0.1},
                 {"enable": True, "cpu_reclaim_threshold_percent": 65}, id="default_strategy_is_valid"),
    pytest.param({"batchCPUThresholdPercent": 100, "batchMemoryThresholdPercent": 0},
                 {"batch_cpu_threshold_percent": 100, "batch_memory_threshold_percent": 0},
                 id="batch_thresholds_in_range_are_valid"),
])
def test_valid_strategies_from_koordinator_tests(fields, attributes):
    """Test_IsColocationStrategyValid: accepted, with the fields given and ``DefaultColocationStrategy()``'s
    elsewhere."""
    strategy = parse_slo_config(configmap(fields), DEFAULT_CONFIG).colocation.strategy
    assert strategy == dataclasses.replace(ColocationStrategy(), **attributes)


def test_node_qos_keys_are_parsed_and_must_parse():
    config = parse_slo_config(configmap(**{"resource-threshold-config": '{"clusterStrategy": {"enable": true}}',
                                           "resource-qos-config": "{}", "system-config": "{}",
                                           "cpu-burst-config": "{}"}), DEFAULT_CONFIG)
    assert config.qos.threshold.strategy.enable is True
    assert (config.qos.qos.strategy, config.qos.system.strategy) == (ResourceQoSStrategy(), SystemStrategy())
    assert dict(config.extra) == {"cpu-burst-config": {}}
    with pytest.raises(ConfigError, match="resource-qos-config: not valid JSON"):
        parse_slo_config(configmap(**{"resource-qos-config": "{"}), DEFAULT_CONFIG)


def test_other_configmaps_keep_the_previous_config_and_deletion_restores_defaults():
    previous = parse_slo_config(configmap({"enable": True}), DEFAULT_CONFIG)
    other = {**configmap({"enable": False}), "metadata": {"name": "something-else", "namespace": "koordinator-system"}}
    assert parse_slo_config(other, previous) is previous
    assert parse_slo_config(None, previous) is DEFAULT_CONFIG
    assert parse_slo_config(configmap(), previous).colocation == ColocationConfig()


def node_config(selector: LabelSelector, **fields) -> NodeConfig[ColocationStrategy]:
    return NodeConfig("", selector, dataclasses.replace(PARTIAL, **fields))


PARTIAL = ColocationStrategy(enable=False, cpu_reclaim_threshold_percent=65, memory_reclaim_threshold_percent=65,
                             degrade_time_minutes=15, update_time_threshold_seconds=300, resource_diff_threshold=0.1)
XXX_YYY = parse_selector({"matchLabels": {"xxx": "yyy"}}, "test")
DEFAULT = ColocationStrategy()


@pytest.mark.parametrize("config, labels, annotations, expected", [
    pytest.param(ColocationConfig(PARTIAL), {}, {}, PARTIAL,
                 id="Test_GetNodeColocationStrategy/get_cluster_strategy_for_empty_node_configs"),
    pytest.param(ColocationConfig(PARTIAL, (node_config(XXX_YYY, enable=True),)), {"xxx": "yyy"}, {},
                 dataclasses.replace(PARTIAL, enable=True), id="Test_GetNodeColocationStrategy/get_merged_node_strategy_1"),
    pytest.param(ColocationConfig(DEFAULT, (
        NodeConfig("", XXX_YYY, dataclasses.replace(DEFAULT, enable=False)),
        NodeConfig("", parse_selector({"matchLabels": {"xxx": "zzz"}}, "t"),
                             dataclasses.replace(DEFAULT, enable=True)))), {"xxx": "zzz"}, {},
        dataclasses.replace(DEFAULT, enable=True), id="Test_GetNodeColocationStrategy/get_merged_node_strategy_2"),
    pytest.param(ColocationConfig(PARTIAL, (
        node_config(parse_selector({"matchExpressions": [{"key": "xxx", "operator": "out", "values": ["yyy"]}]}, "t"),
                    enable=False),
        node_config(XXX_YYY, enable=True))), {"xxx": "yyy"}, {}, dataclasses.replace(PARTIAL, enable=True),
        id="Test_GetNodeColocationStrategy/get_merged_node_strategy_and_ignore_invalid_selector"),
    pytest.param(ColocationConfig(PARTIAL), {LABEL_CPU_RECLAIM_RATIO: "0.7", LABEL_MEMORY_RECLAIM_RATIO: "0.75",
                                             LABEL_MID_STATIC_CPU_RESERVED_RATIO: "0.1",
                                             LABEL_MID_STATIC_MEMORY_RESERVED_RATIO: "0.12"}, {},
                 dataclasses.replace(PARTIAL, cpu_reclaim_threshold_percent=70, memory_reclaim_threshold_percent=75,
                                     mid_static_cpu_reserved_percent=10, mid_static_memory_reserved_percent=12),
                 id="Test_GetNodeColocationStrategy/get_strategy_merged_with_node_ratios"),
    pytest.param(ColocationConfig(PARTIAL), {LABEL_CPU_RECLAIM_RATIO: "-1", LABEL_MEMORY_RECLAIM_RATIO: "invalidField"},
                 {}, PARTIAL, id="Test_GetNodeColocationStrategy/get_strategy_while_parse_node_reclaim_ratios_failed"),
    pytest.param(ColocationConfig(PARTIAL), {}, {ANNOTATION_COLOCATION_STRATEGY: json.dumps({
        "cpuReclaimThresholdPercent": 70, "memoryReclaimThresholdPercent": 75, "midStaticCPUReservedPercent": 10,
        "midStaticMemoryReservedPercent": 15})},
        dataclasses.replace(PARTIAL, cpu_reclaim_threshold_percent=70, memory_reclaim_threshold_percent=75,
                            mid_static_cpu_reserved_percent=10, mid_static_memory_reserved_percent=15),
        id="Test_GetNodeColocationStrategy/get_strategy_merged_with_node_strategy_on_annotations"),
    pytest.param(ColocationConfig(dataclasses.replace(PARTIAL, enable=True)), {},
                 {ANNOTATION_COLOCATION_STRATEGY: '{"enable": false}'}, PARTIAL,
                 id="Test_GetNodeColocationStrategy/get_strategy_disabled_by_node_strategy_on_annotations"),
    pytest.param(ColocationConfig(PARTIAL), {LABEL_CPU_RECLAIM_RATIO: "0.29"}, {ANNOTATION_COLOCATION_STRATEGY: "{"},
                 dataclasses.replace(PARTIAL, cpu_reclaim_threshold_percent=28),
                 id="unparsable_annotation_is_ignored;_int(0.29*100)_truncates_to_28_as_in_Go"),
])
def test_node_strategy(config, labels, annotations, expected):
    assert config.for_node(labels, annotations) == expected


def test_colocation_is_enabled_only_when_the_cluster_and_the_node_strategy_are():
    """``isColocationCfgDisabled``: cluster ``enable`` off disables every node, whatever its node config says."""
    on = ColocationStrategy(enable=True)
    assert ColocationConfig(on).enabled(on)
    assert not ColocationConfig(on).enabled(ColocationStrategy(enable=False))
    assert not ColocationConfig(ColocationStrategy(enable=False)).enabled(on)
