"""The one merge rule (``document.overlay``, Koordinator's ``util.MergeCfg``) on every section's edge cases.

Each row is a case where the two rules this package had before disagreed (colocation and CPU
normalization overlaid typed fields, the node-QoS keys merged raw JSON); the expected value is
what ``json.Marshal`` of the newer strategy decoded into the older one gives in Go.
"""

from __future__ import annotations

import pytest

from streams.actuation import CPU_BURST
from streams.koordinator.annotations import ANNOTATION_COLOCATION_STRATEGY, ANNOTATION_CPU_BURST
from streams.nodeqos.plugins.cpuburst import CPUBurst
from streams.sloconfig.configmap import DEFAULT_CONFIG, parse_slo_config
from streams.sloconfig.cpunormalization import ModelRatio
from streams.sloconfig.document import ConfigError
from streams.sloconfig.nodeqos import SUPPRESS_CFS_QUOTA
from tests.streams.noderesource.support import configmap
from tests.streams.nodeqos.support import pod, qos_strategy, snapshot

SSD = {"name": "ssd", "nodeSelector": {"matchLabels": {"disk": "ssd"}}}
WINDOWS = {"metricAggregatePolicy": {"durations": ["1m0s"]}}


@pytest.mark.parametrize("node_policy", [
    pytest.param({}, id="empty-object"),
    pytest.param({"durations": None}, id="null-durations"),
    pytest.param({"durations": []}, id="empty-durations-omitempty"),
])
def test_node_metric_aggregate_policy_without_durations_keeps_the_cluster_windows(node_policy):
    config = parse_slo_config(configmap({**WINDOWS, "nodeConfigs": [{**SSD, "metricAggregatePolicy": node_policy}]}),
                              DEFAULT_CONFIG)
    assert config.colocation.for_node({"disk": "ssd"}).metric_aggregate_durations == ("1m0s",)


def test_annotation_metric_aggregate_policy_without_durations_keeps_the_node_windows():
    config = parse_slo_config(configmap(WINDOWS), DEFAULT_CONFIG)
    annotations = {ANNOTATION_COLOCATION_STRATEGY: '{"metricAggregatePolicy": {}, "cpuReclaimThresholdPercent": 70}'}
    strategy = config.colocation.for_node({}, annotations)
    assert (strategy.metric_aggregate_durations, strategy.cpu_reclaim_threshold_percent) == (("1m0s",), 70)


def test_node_ratio_model_entry_replaces_the_clusters_entry_whole_and_keeps_other_models():
    cluster = {"enable": True,
               "ratioModel": {"A": {"baseRatio": 1.5, "turboEnabledRatio": 1.65}, "B": {"baseRatio": 2}}}
    config = parse_slo_config(configmap(cpu_normalization={**cluster, "nodeConfigs": [
        {**SSD, "ratioModel": {"A": {"hyperThreadEnabledRatio": 1.2}}}]}), DEFAULT_CONFIG)
    assert dict(config.cpu_normalization.for_node({"disk": "ssd"}).ratio_model) == {
        "A": ModelRatio(hyper_thread_enabled_ratio=1.2), "B": ModelRatio(base_ratio=2.0)}


def test_node_strategy_empty_policy_string_keeps_the_clusters_policy():
    """``CPUSuppressPolicy`` is a string with ``omitempty``, not a pointer: ``""`` is not encoded."""
    config = {"clusterStrategy": {"cpuSuppressPolicy": SUPPRESS_CFS_QUOTA},
              "nodeStrategies": [{**SSD, "cpuSuppressPolicy": ""}]}
    assert qos_strategy({"disk": "ssd"}, resource_threshold_config=config).threshold.cpu_suppress_policy == \
        SUPPRESS_CFS_QUOTA


@pytest.mark.parametrize("data, reason", [
    pytest.param({"colocation-config": '{"enable": "true"}'},
                 "colocation-config.enable: cannot unmarshal string into Go value of type bool", id="colocation-bool"),
    pytest.param({"resource-threshold-config": '{"clusterStrategy": {"enable": 1}}'},
                 "clusterStrategy.enable: cannot unmarshal number into Go value of type bool", id="threshold-bool"),
    pytest.param({"cpu-normalization-config": '{"defaultRatio": "2"}'},
                 "defaultRatio: cannot unmarshal string into Go value of type float64", id="normalization-float"),
    pytest.param({"cpu-burst-config": '{"clusterStrategy": {"cpuBurstPercent": 9223372036854775808}}'},
                 "cannot unmarshal number 9223372036854775808 into Go value of type int64", id="int64-overflow"),
    pytest.param({"resource-qos-config": '{"nodeStrategies": {}}'}, "nodeStrategies must be a list",
                 id="node-strategies-not-a-list"),
])
def test_type_errors_read_as_gos_decoder_writes_them_in_every_section(data, reason):
    with pytest.raises(ConfigError, match=reason):
        parse_slo_config(configmap(**data), DEFAULT_CONFIG)


@pytest.mark.parametrize("annotation, burst", [
    pytest.param('{"cpuBurstPercent": 50}', "50000", id="merged-over-the-node"),
    pytest.param('{"policy": ""}', "80000", id="empty-policy-keeps-the-node-policy"),
    pytest.param('{"cpuBurstPercent": "200"}', None, id="string-for-int64-skips-the-pod"),
    pytest.param('{"cpuBurstPercent": 1.5}', None, id="float-for-int64-skips-the-pod"),
])
def test_pod_cpu_burst_annotation_uses_the_same_rule(annotation, burst):
    """Percents below 100, where the burst is not capped at the quota (``cpuburst``), so the merge shows."""
    strategy = qos_strategy(cpu_burst_config={"clusterStrategy": {"policy": "cpuBurstOnly", "cpuBurstPercent": 80}})
    pods = {"ns/ls": pod("LS", "u", limit_cpu=1000, annotations={ANNOTATION_CPU_BURST: annotation})}
    settings = CPUBurst().plan(snapshot(strategy, pods=pods)).settings
    assert [s.values[CPU_BURST] for s in settings] == ([] if burst is None else [burst])
